//! An external system's membership ability, from its spec's `members`, `remove_member` and
//! `add_member` commands (with `wipe`): a node's view is what `members` prints on it; a removal
//! or an addition is the command run on the member the fault goes through; retiring is `stop`,
//! the layer unmounted, `wipe` and a marker `Kill::start` honours; a fresh member is the whole
//! setup again (`ExternalDb::fresh_start`) with `SHAKEDOWN_JOIN` naming the members it joins.
//!
//! The commands get the usual positional parameters of the node they run on, and what they act
//! on as environment variables: `SHAKEDOWN_TARGET` (node name), `SHAKEDOWN_TARGET_HOST`,
//! `SHAKEDOWN_TARGET_INDEX` (1-based, in the node list `$3`), and for `add_member` and a
//! joining node's `setup` / `start`, `SHAKEDOWN_JOIN` (`name=host` of the members it joins,
//! separated by spaces). Exit status 3 from `remove_member` / `add_member` = refused, nothing
//! changed; any other failure leaves open whether the change happened.
//!
//! Owns reading `members` output ([`view_from_lines`]) and the order of the steps. Does not own
//! deciding when a change is confirmed (the membership fault) nor the spec's parsing.

use super::db::ExternalDb;
use super::spec::CommandKind;
use crate::control::Remote;
use crate::db::{Abilities, DbError, Member, MemberView, Membership};
use crate::node::Node;

/// Environment variable: the node a membership command acts on.
pub const TARGET_ENV: &str = "SHAKEDOWN_TARGET";
/// Environment variable: that node's address.
pub const TARGET_HOST_ENV: &str = "SHAKEDOWN_TARGET_HOST";
/// Environment variable: that node's 1-based index in the node list.
pub const TARGET_INDEX_ENV: &str = "SHAKEDOWN_TARGET_INDEX";
/// Environment variable: the members a node joins (`name=host …`), for `add_member` and the
/// joining node's `setup` and `start`.
pub const JOIN_ENV: &str = "SHAKEDOWN_JOIN";

/// A word after a member in `members` output: it does not vote.
const LEARNER_WORD: &str = "learner";
/// A word after a member in `members` output: added, never started.
const UNSTARTED_WORD: &str = "unstarted";

/// Parse what `members` printed: one member per line, its node name or address, then optional
/// words `learner` / `unstarted`; blank lines and `#` comments are skipped. A member that is
/// none of `cluster`'s nodes keeps its word with no node. An error names the line.
pub fn view_from_lines(out: &str, cluster: &[Node]) -> Result<MemberView, String> {
    let mut members = Vec::new();
    for (i, line) in out.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let Some(who) = words.next() else { continue };
        let (mut learner, mut started) = (false, true);
        for w in words {
            match w {
                LEARNER_WORD => learner = true,
                UNSTARTED_WORD => started = false,
                other => {
                    return Err(format!(
                        "line {}: {other:?} after member {who:?}: expected `{LEARNER_WORD}` or `{UNSTARTED_WORD}`",
                        i + 1
                    ));
                }
            }
        }
        let node = cluster
            .iter()
            .find(|n| n.name == who)
            .or_else(|| cluster.iter().find(|n| n.host == who))
            .map(|n| n.name.clone());
        members.push(Member {
            node,
            id: who.to_string(),
            name: who.to_string(),
            learner,
            started,
        });
    }
    Ok(MemberView { members })
}

/// `name=host` of each node, separated by spaces (the form of `$3`).
fn node_list(nodes: &[Node]) -> String {
    nodes
        .iter()
        .map(|n| format!("{}={}", n.name, n.host))
        .collect::<Vec<_>>()
        .join(" ")
}

impl ExternalDb {
    /// The environment naming `target` for a membership command.
    fn target_env(target: &Node, cluster: &[Node]) -> Vec<(&'static str, String)> {
        let index = cluster
            .iter()
            .position(|n| n.name == target.name)
            .map(|i| (i + 1).to_string())
            .unwrap_or_default();
        vec![
            (TARGET_ENV, target.name.clone()),
            (TARGET_HOST_ENV, target.host.clone()),
            (TARGET_INDEX_ENV, index),
        ]
    }
}

impl Membership for ExternalDb {
    fn view(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<MemberView, DbError> {
        let out = self
            .run(remote, CommandKind::Members, node, cluster)?
            .map(|o| o.stdout)
            .unwrap_or_default();
        view_from_lines(&out, cluster).map_err(|e| DbError::Other {
            node: node.name.clone(),
            message: format!(
                "{} `members` printed something unreadable: {e}",
                self.name()
            ),
        })
    }

    fn remove(
        &self,
        via_remote: &dyn Remote,
        via: &Node,
        target: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        if self
            .view(via_remote, via, cluster)?
            .member(&target.name)
            .is_none()
        {
            // Removed already (an earlier request that committed late).
            return Ok(());
        }
        let env = Self::target_env(target, cluster);
        self.run_with(via_remote, CommandKind::RemoveMember, via, cluster, &env)?;
        Ok(())
    }

    fn retire(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError> {
        let cluster = self.known_cluster();
        self.run(remote, CommandKind::Stop, node, &cluster)?;
        if let Some(dir) = self.data_dir() {
            crate::db::layer::unmount(remote, &dir)?;
        }
        self.run(remote, CommandKind::Wipe, node, &cluster)?;
        self.mark_retired(remote, true)
    }

    fn add(
        &self,
        via_remote: &dyn Remote,
        via: &Node,
        target_remote: &dyn Remote,
        target: &Node,
        members: &[Node],
        cluster: &[Node],
    ) -> Result<(), DbError> {
        let listed = self
            .view(via_remote, via, cluster)?
            .member(&target.name)
            .is_some();
        let mut env = Self::target_env(target, cluster);
        env.push((JOIN_ENV, node_list(members)));
        if !listed {
            self.run_with(via_remote, CommandKind::AddMember, via, cluster, &env)?;
        }
        self.fresh_start(target_remote, target, cluster, &env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::canned::{Canned, output};
    use crate::systems::external::spec::{ExternalConfig, parse};
    use std::path::Path;
    use std::sync::Arc;

    /// A node that answers like a shell running the toy spec: `members` prints n1 and n3, a
    /// command whose script mentions `exit-three` exits 3; it records every command line.
    fn node(name: &str) -> Canned {
        Canned::new(name, |cmd| {
            let line = cmd.to_shell();
            let status = if line.contains("exit-three") { 3 } else { 0 };
            let stdout = if line.contains("list-members") {
                "n1\nn3\n"
            } else {
                ""
            };
            output(status, stdout)
        })
    }

    fn db(add: &str) -> ExternalDb {
        let text = format!(
            "name = \"toy\"\n[commands]\nstart = \"start-it\"\nstop = \"true\"\nready = \"true\"\nwipe = \"true\"\nsetup = \"setup-it\"\nmembers = \"list-members\"\nremove_member = \"exit-three\"\nadd_member = \"{add}\"\n[client]\ncommand = [\"c\"]\n"
        );
        let spec = parse(&text, Path::new("toy.toml")).unwrap();
        ExternalDb::new(Arc::new(ExternalConfig {
            arg: "toy.toml".into(),
            spec,
            options: Default::default(),
            lazyfs: None,
        }))
    }

    /// Adding n2 back to {n1, n3}: the target's index and `$2` come from the whole cluster (a
    /// ZooKeeper server id), not from the members it joins; the join lists those members.
    #[test]
    fn an_add_names_the_target_by_its_place_in_the_whole_cluster() {
        let d = db("add-it");
        let n = nodes();
        let (via, target) = (node("n1"), node("n2"));
        d.add(
            &via,
            &n[0],
            &target,
            &n[1],
            &[n[0].clone(), n[2].clone()],
            &n,
        )
        .unwrap();
        let asked = via.asked();
        let add = asked.iter().find(|l| l.contains("add-it")).unwrap();
        assert!(add.contains("'SHAKEDOWN_TARGET_INDEX=2'"), "{add}");
        assert!(
            add.contains("'SHAKEDOWN_JOIN=n1=10.9.0.1 n3=10.9.0.3'"),
            "{add}"
        );
        let ran = target.asked();
        let setup = ran.iter().find(|l| l.contains("setup-it")).unwrap();
        assert!(setup.contains("toy-setup n2 2 "), "{setup}");
        assert!(ran.iter().any(|l| l.contains("start-it")), "{ran:?}");
    }

    /// Exit 3 from a membership change is a refusal (nothing changed); from another command it
    /// is an ordinary failure.
    #[test]
    fn exit_three_refuses_only_a_membership_change() {
        let d = db("exit-three");
        let n = nodes();
        let r = node("n1");
        let e = d.remove(&r, &n[0], &n[2], &n).unwrap_err();
        assert!(matches!(e, DbError::Refused { .. }), "{e}");
        let spec = parse(
            "name = \"toy\"\n[commands]\nstart = \"exit-three\"\nstop = \"true\"\nready = \"true\"\n[client]\ncommand = [\"c\"]\n",
            Path::new("toy.toml"),
        )
        .unwrap();
        let plain = ExternalDb::new(Arc::new(ExternalConfig {
            arg: "toy.toml".into(),
            spec,
            options: Default::default(),
            lazyfs: None,
        }));
        let e = plain.run(&r, CommandKind::Start, &n[0], &n).unwrap_err();
        assert!(matches!(e, DbError::Other { .. }), "{e}");
    }

    fn nodes() -> Vec<Node> {
        (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.9.0.{i}"),
            })
            .collect()
    }

    #[test]
    fn members_output_maps_names_and_addresses_to_nodes() {
        let v = view_from_lines(
            "# ensemble\nn1\n10.9.0.2 learner\n\n10.9.0.3 unstarted\n10.9.9.9\n",
            &nodes(),
        )
        .unwrap();
        let got: Vec<(Option<&str>, bool, bool)> = v
            .members
            .iter()
            .map(|m| (m.node.as_deref(), m.learner, m.started))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some("n1"), false, true),
                (Some("n2"), true, true),
                (Some("n3"), false, false),
                (None, false, true),
            ]
        );
    }

    #[test]
    fn an_unknown_word_names_its_line() {
        let e = view_from_lines("n1\nn2 observer\n", &nodes()).unwrap_err();
        assert!(e.contains("line 2") && e.contains("observer"), "{e}");
    }
}
