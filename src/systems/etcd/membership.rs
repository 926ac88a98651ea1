//! etcd's membership ability ([`Membership`]): a node's view (`etcdctl member list -w json`
//! through its own server), `member remove` / `member add` sent to another member, retiring a
//! removed node (its process stopped, its data wiped) and starting a fresh member that joins the
//! running cluster (`--initial-cluster-state existing`, through `db`'s one start command).
//!
//! Owns reading `member list` output into a [`MemberView`] ([`view_from_member_list`]: ids
//! decimal numbers as etcdctl writes them in JSON, or hex strings as `--hex` writes them; both
//! become the hex `member remove` takes). Does not own deciding when a change is confirmed,
//! pending changes or schedules (the membership fault), nor how etcd starts (`db`).

use super::db::{Bootstrap, Etcd, startup_failure};
use crate::control::{ExecOutput, Remote};
use crate::db::{DbError, Member, MemberView, Membership};
use crate::node::Node;
use crate::systems::lifecycle::Lifecycle;
use crate::systems::ready::NOT_RUNNING;
use serde_json::Value;

/// etcdctl's bounds for a membership request: connecting, and the request itself (a change
/// needs the leader and a committed entry; under a partition it times out, and may still
/// commit later).
const DIAL_TIMEOUT: &str = "--dial-timeout=2s";
const COMMAND_TIMEOUT: &str = "--command-timeout=5s";

/// At most this many characters of etcdctl's output go into an error.
const OUTPUT_CHARS: usize = 300;

/// etcd's answer to removing a member it does not have.
const NOT_FOUND: &str = "etcdserver: member not found";

impl Etcd {
    /// Run an etcdctl membership request against `node`'s own endpoint, on `node`, when its
    /// etcd runs; its stdout, or an error naming `node`, what was asked and etcd's words.
    fn member_request(
        &self,
        remote: &dyn Remote,
        node: &Node,
        what: &str,
        request: &[String],
    ) -> Result<String, DbError> {
        let mut args = vec![
            "--endpoints".to_string(),
            self.client_url(node),
            DIAL_TIMEOUT.into(),
            COMMAND_TIMEOUT.into(),
        ];
        args.extend(request.iter().cloned());
        let out = remote.exec(&self.etcdctl_if_running(args))?;
        if out.success() {
            return Ok(out.stdout);
        }
        let (node, message) = (node.name.clone(), format!("{what}: {}", failure(&out)));
        if definite_refusal(&out.stderr) {
            return Err(DbError::Refused { node, message });
        }
        Err(DbError::Other { node, message })
    }
}

/// etcd's errors for a membership request it checked and turned down before proposing it:
/// nothing changed (etcdserver's `ErrUnhealthy`, `ErrIDNotFound`, `ErrPeerURLexist`,
/// `ErrNotEnoughStartedMembers`, `ErrIDRemoved`, `ErrIDExists`, `ErrTooManyLearners`).
/// Timeouts, lost leaders and connection errors are not among them: the change may commit.
const REFUSALS: [&str; 7] = [
    "etcdserver: unhealthy cluster",
    NOT_FOUND,
    "etcdserver: Peer URLs already exists",
    "etcdserver: re-configuration failed due to not enough started members",
    "etcdserver: ID removed",
    "etcdserver: member ID already exist",
    "etcdserver: too many learner members in cluster",
];

/// Whether etcdctl's stderr says etcd turned the request down (see [`REFUSALS`]).
fn definite_refusal(stderr: &str) -> bool {
    said(stderr).is_some_and(|e| REFUSALS.iter().any(|r| e.contains(r)))
}

/// What etcdctl said in the end: its `Error: …` line (after its retry warnings, which are JSON
/// log lines), else its last non-empty line.
fn said(text: &str) -> Option<&str> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let last = lines.clone().next_back();
    lines.rfind(|l| l.starts_with("Error:")).or(last)
}

/// Why an etcdctl request failed, in etcd's words: not running (with its log's telling line),
/// else etcdctl's last word on stderr (or stdout), cut.
fn failure(out: &ExecOutput) -> String {
    if out.status == NOT_RUNNING {
        return format!("etcd is not running ({})", startup_failure(&out.stdout));
    }
    let words = said(&out.stderr)
        .or_else(|| said(&out.stdout))
        .unwrap_or("");
    let words: String = words.chars().take(OUTPUT_CHARS).collect();
    format!("etcdctl exited with status {}: {words}", out.status)
}

impl Membership for Etcd {
    fn view(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<MemberView, DbError> {
        let request = ["member", "list", "-w", "json"].map(String::from);
        let out = self.member_request(remote, node, "etcd member list", &request)?;
        view_from_member_list(&out, cluster, |n| self.peer_url(n)).map_err(|e| DbError::Other {
            node: node.name.clone(),
            message: format!("etcd member list: {e}"),
        })
    }

    fn remove(
        &self,
        via_remote: &dyn Remote,
        via: &Node,
        target: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        let view = self.view(via_remote, via, cluster)?;
        let Some(member) = view.member(&target.name) else {
            return Ok(());
        };
        let request = ["member".to_string(), "remove".into(), member.id.clone()];
        let what = format!(
            "etcd member remove {} (member {}) through {}",
            target.name, member.id, via.name
        );
        match self.member_request(via_remote, via, &what, &request) {
            // Removed in the meantime (by an earlier request that committed late).
            Err(DbError::Refused { message, .. }) if message.contains(NOT_FOUND) => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Stop and wipe, and leave the marker that keeps `Kill::start` from starting it as a
    /// member of the first cluster (a kill's heal starts every node).
    fn retire(&self, remote: &dyn Remote, _node: &Node) -> Result<(), DbError> {
        self.stop_and_wipe(remote)?;
        self.mark_retired(remote)
    }

    fn add(
        &self,
        via_remote: &dyn Remote,
        via: &Node,
        target_remote: &dyn Remote,
        target: &Node,
        members: &[Node],
        _cluster: &[Node],
    ) -> Result<(), DbError> {
        let others: Vec<Node> = members
            .iter()
            .filter(|n| n.name != target.name)
            .cloned()
            .collect();
        let mut initial = others.clone();
        initial.push(target.clone());
        let view = self.view(via_remote, via, &initial)?;
        let join = join_check(&view, &others, target).map_err(|message| DbError::Other {
            node: target.name.clone(),
            message: format!("cannot join through {}: {message}", via.name),
        })?;
        // Empty data before the cluster counts it: a member that was not retired (cut off when
        // it was removed) is no member any more, and must not come back with its old state.
        self.stop_and_wipe(target_remote)?;
        if join == Join::Add {
            let request = [
                "member".to_string(),
                "add".into(),
                target.name.clone(),
                format!("--peer-urls={}", self.peer_url(target)),
            ];
            let what = format!("etcd member add {} through {}", target.name, via.name);
            self.member_request(via_remote, via, &what, &request)?;
        }
        self.start_fresh(target_remote, target, &Bootstrap::join(&initial))
    }
}

/// What joining `target` still needs, by `via`'s view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    /// `member add`, then the start.
    Add,
    /// The start alone: an earlier `member add` committed and the member never started.
    StartOnly,
}

/// Whether `target` can join a cluster whose other members are `others`, by `view`: etcd checks
/// that a joining member's `--initial-cluster` holds exactly the cluster's members, so the view
/// must list `others` and nobody else (`target` at most as added and never started).
fn join_check(view: &MemberView, others: &[Node], target: &Node) -> Result<Join, String> {
    let join = match view.member(&target.name) {
        None => Join::Add,
        Some(m) if !m.started => Join::StartOnly,
        Some(m) => {
            return Err(format!(
                "{} is a started member already (id {})",
                target.name, m.id
            ));
        }
    };
    let mut listed: Vec<String> = view
        .nodes()
        .into_iter()
        .filter(|n| *n != target.name)
        .collect();
    listed.sort();
    let mut asked: Vec<String> = others.iter().map(|n| n.name.clone()).collect();
    asked.sort();
    asked.dedup();
    if listed != asked || view.strangers() > 0 {
        let strangers = match view.strangers() {
            0 => String::new(),
            k => format!(" and {k} member(s) that are none of the nodes"),
        };
        return Err(format!(
            "the members are [{}]{strangers}, not the [{}] the join names",
            listed.join(", "),
            asked.join(", ")
        ));
    }
    Ok(join)
}

/// The membership in `etcdctl member list -w json` output. Member ids are decimal numbers (what
/// etcdctl writes in JSON; above 2^53, so read as u64, never as a float) or hex strings (with
/// `--hex`); both become lowercase hex, what `member remove` takes. A member without a name has
/// been added and never started; `isLearner` marks learners. Members are matched to `cluster`'s
/// nodes by name, else by peer URL (`peer_url` of a node: an unstarted member has no name).
pub fn view_from_member_list(
    json: &str,
    cluster: &[Node],
    peer_url: impl Fn(&Node) -> String,
) -> Result<MemberView, String> {
    let cut = |s: &str| s.trim().chars().take(OUTPUT_CHARS).collect::<String>();
    let v: Value =
        serde_json::from_str(json).map_err(|e| format!("not JSON ({e}): {}", cut(json)))?;
    let Some(list) = v.get("members").and_then(Value::as_array) else {
        return Err(format!("no members array: {}", cut(json)));
    };
    let members = list
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let id = m
                .get("ID")
                .ok_or_else(|| format!("member {} has no ID: {}", i + 1, cut(&m.to_string())))
                .and_then(|id| hex_id(id).map_err(|e| format!("member {}: {e}", i + 1)))?;
            let name = m.get("name").and_then(Value::as_str).unwrap_or_default();
            let peers: Vec<&str> = m
                .get("peerURLs")
                .and_then(Value::as_array)
                .map(|urls| urls.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let node = cluster
                .iter()
                .find(|n| !name.is_empty() && n.name == name)
                .or_else(|| cluster.iter().find(|n| peers.contains(&&*peer_url(n))))
                .map(|n| n.name.clone());
            Ok(Member {
                node,
                id,
                name: name.to_string(),
                learner: m.get("isLearner").and_then(Value::as_bool) == Some(true),
                started: !name.is_empty(),
            })
        })
        .collect::<Result<Vec<Member>, String>>()?;
    Ok(MemberView { members })
}

/// A member id as lowercase hex: from a JSON number (decimal, the full u64 range) or a hex
/// string (`--hex`).
fn hex_id(id: &Value) -> Result<String, String> {
    if let Some(n) = id.as_u64() {
        return Ok(format!("{n:x}"));
    }
    match id.as_str() {
        Some(s) if !s.is_empty() && s.len() <= 16 && s.chars().all(|c| c.is_ascii_hexdigit()) => {
            Ok(s.to_ascii_lowercase())
        }
        _ => Err(format!(
            "ID {id} is neither a 64-bit number nor a hex string"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes() -> Vec<Node> {
        (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.116.0.{i}"),
            })
            .collect()
    }

    fn view(json: &str) -> Result<MemberView, String> {
        let etcd = Etcd::default();
        view_from_member_list(json, &nodes(), |n| etcd.peer_url(n))
    }

    /// What etcdctl 3.4 prints for a cluster of three: ids as decimal JSON numbers, the first
    /// above 2^53 (a float would round it).
    const THREE: &str = r#"{"header":{"cluster_id":14841639068965178418,"member_id":10276657743932975437,"raft_term":2},"members":[{"ID":10276657743932975437,"name":"n1","peerURLs":["http://10.116.0.1:2380"],"clientURLs":["http://10.116.0.1:2379"]},{"ID":9372538179322589801,"name":"n2","peerURLs":["http://10.116.0.2:2380"],"clientURLs":["http://10.116.0.2:2379"]},{"ID":5,"name":"n3","peerURLs":["http://10.116.0.3:2380"],"clientURLs":["http://10.116.0.3:2379"]}]}"#;

    #[test]
    fn decimal_ids_become_the_hex_member_remove_takes() {
        let v = view(THREE).unwrap();
        let ids: Vec<&str> = v.members.iter().map(|m| m.id.as_str()).collect();
        // 10276657743932975437 = 0x8e9e05c52164694d (etcd's classic default member id).
        assert_eq!(ids, ["8e9e05c52164694d", "8211f1d0f64f3269", "5"]);
        assert_eq!(v.nodes(), ["n1", "n2", "n3"]);
        assert_eq!(v.voters(), ["n1", "n2", "n3"]);
        assert!(v.pending().is_empty());
        assert!(v.lists("n3") && !v.lists("n4"));
    }

    #[test]
    fn hex_string_ids_are_kept_lowercase() {
        let json = r#"{"members":[{"ID":"8E9E05C52164694D","name":"n1","peerURLs":["http://10.116.0.1:2380"]}]}"#;
        assert_eq!(view(json).unwrap().members[0].id, "8e9e05c52164694d");
    }

    #[test]
    fn an_unstarted_member_is_found_by_its_peer_url_and_a_learner_is_pending() {
        // `member add n3` committed, n3 not started yet: no name, no client URLs. n2 is a
        // learner (`member add --learner`), started.
        let json = r#"{"members":[{"ID":1,"name":"n1","peerURLs":["http://10.116.0.1:2380"],"clientURLs":["http://10.116.0.1:2379"]},{"ID":2,"name":"n2","peerURLs":["http://10.116.0.2:2380"],"clientURLs":["http://10.116.0.2:2379"],"isLearner":true},{"ID":3,"peerURLs":["http://10.116.0.3:2380"]}]}"#;
        let v = view(json).unwrap();
        let n3 = v.member("n3").unwrap();
        assert!(!n3.started && !n3.learner && n3.name.is_empty());
        assert!(v.member("n2").unwrap().learner);
        assert_eq!(v.nodes(), ["n1", "n2", "n3"]);
        assert_eq!(v.voters(), ["n1"]);
        assert_eq!(v.pending(), ["n2", "n3"]);
    }

    #[test]
    fn a_member_of_no_node_is_a_stranger() {
        let json = r#"{"members":[{"ID":1,"name":"n1","peerURLs":["http://10.116.0.1:2380"]},{"ID":7,"name":"other","peerURLs":["http://10.9.9.9:2380"]}]}"#;
        let v = view(json).unwrap();
        assert_eq!(v.nodes(), ["n1"]);
        assert_eq!(v.strangers(), 1);
        assert_eq!(v.members[1].node, None);
    }

    #[test]
    fn bad_output_is_an_error_in_words() {
        let e = view("Error: context deadline exceeded").unwrap_err();
        assert!(e.starts_with("not JSON"), "{e}");
        assert!(e.contains("context deadline exceeded"), "{e}");
        let e = view(r#"{"header":{}}"#).unwrap_err();
        assert!(e.contains("no members array"), "{e}");
        let e = view(r#"{"members":[{"name":"n1"}]}"#).unwrap_err();
        assert!(e.contains("member 1 has no ID"), "{e}");
        let e = view(r#"{"members":[{"ID":-4,"name":"n1"}]}"#).unwrap_err();
        assert!(
            e.contains("neither a 64-bit number nor a hex string"),
            "{e}"
        );
        let e = view(r#"{"members":[{"ID":"xyz","name":"n1"}]}"#).unwrap_err();
        assert!(e.contains("member 1: ID \"xyz\""), "{e}");
        assert_eq!(view(r#"{"members":[]}"#).unwrap(), MemberView::default());
    }

    #[test]
    fn a_join_needs_the_view_to_list_exactly_the_other_members() {
        let n = nodes();
        let two = r#"{"members":[{"ID":1,"name":"n1","peerURLs":["http://10.116.0.1:2380"]},{"ID":2,"name":"n2","peerURLs":["http://10.116.0.2:2380"]}]}"#;
        assert_eq!(
            join_check(&view(two).unwrap(), &n[..2], &n[2]),
            Ok(Join::Add)
        );
        // An add that committed earlier: only the start is left.
        let added = r#"{"members":[{"ID":1,"name":"n1","peerURLs":["http://10.116.0.1:2380"]},{"ID":2,"name":"n2","peerURLs":["http://10.116.0.2:2380"]},{"ID":3,"peerURLs":["http://10.116.0.3:2380"]}]}"#;
        assert_eq!(
            join_check(&view(added).unwrap(), &n[..2], &n[2]),
            Ok(Join::StartOnly)
        );
        let e = join_check(&view(THREE).unwrap(), &n[..2], &n[2]).unwrap_err();
        assert!(e.contains("n3 is a started member already (id 5)"), "{e}");
        let e = join_check(&view(two).unwrap(), &n[..1], &n[2]).unwrap_err();
        assert_eq!(e, "the members are [n1, n2], not the [n1] the join names");
    }

    #[test]
    fn only_etcds_own_refusals_are_definite() {
        // etcdctl 3.4's stderr: a retry warning (a JSON log line), then its error.
        let unhealthy = "{\"level\":\"warn\",\"msg\":\"retrying of unary invoker failed\",\"error\":\"rpc error: code = Unavailable desc = etcdserver: unhealthy cluster\"}\nError: etcdserver: unhealthy cluster\n";
        assert!(definite_refusal(unhealthy));
        assert_eq!(
            said(unhealthy),
            Some("Error: etcdserver: unhealthy cluster")
        );
        assert!(definite_refusal(
            "Error: etcdserver: Peer URLs already exists"
        ));
        for maybe in [
            "Error: context deadline exceeded",
            "Error: etcdserver: request timed out",
            "Error: etcdserver: leader changed",
            "",
        ] {
            assert!(!definite_refusal(maybe), "{maybe}");
        }
        let out = ExecOutput {
            status: 1,
            signal: None,
            stdout: String::new(),
            stderr: unhealthy.into(),
        };
        assert_eq!(
            failure(&out),
            "etcdctl exited with status 1: Error: etcdserver: unhealthy cluster"
        );
        let gone = ExecOutput {
            status: NOT_RUNNING,
            stdout: "last lines of /tmp/shakedown/etcd/etcd.log:\n{\"level\":\"info\",\"msg\":\"stopped\"}".into(),
            ..out
        };
        assert!(failure(&gone).starts_with("etcd is not running (last lines of"));
    }

    #[test]
    fn a_majority_is_the_quorum() {
        let etcd = Etcd::default();
        let q: Vec<usize> = (1..=5).map(|n| etcd.quorum(n)).collect();
        assert_eq!(q, [1, 2, 2, 3, 3]);
    }
}
