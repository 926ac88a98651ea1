//! Fault injection: network partitions (iptables in a chain the tool owns), process kills and
//! pauses through the `Db` abilities, power losses (`power`: kill + drop unsynced writes on the
//! lose-unsynced layer), data-file corruption (`corrupt`: bitflip / truncate with the DB
//! stopped), faulty disks (`disk`: errors and latency from the layer), and healing all of them.
//!
//! Pure part: grudges (node → nodes it must not hear from, in `grudge`) built by small
//! functions, target selection, and per-node outcomes of fault steps (`outcomes`), all
//! unit-tested and driven by a seeded RNG. Impure part: `Nemesis`, which applies
//! faults over `Remote`s and remembers what it did so `heal_all` can undo exactly that. The
//! controller's own SSH traffic is never dropped: rules match only the nodes' addresses.
//! Packet faults (loss, bandwidth, delay) are in `packet`; every fault is journaled before it is
//! applied. Targets `primaries` and the `primaries` partition shape ask the system for its current
//! leader(s) through the `Abilities::as_primaries` ability.

//! Clock faults (`bump-clock`, `strobe-clock`, `reset-clock`, `clock-offsets`) live in `clock`.

mod bandwidth;
pub mod clock;
pub mod cluster;
mod corrupt;
mod delay;
pub mod disk;
pub mod fault;
mod grudge;
pub mod heal;
mod kill;
pub mod leftovers;
mod loss;
mod membership;
mod outcomes;
pub mod packet;
mod partition;
mod pause;
pub mod power;
mod promote;
mod registry;
pub mod ssh_drop;
pub mod stall;
mod survey;

pub use cluster::Cluster;
pub use fault::{Fault, FaultError};
pub use grudge::*;
pub use outcomes::NodeOutcomes;

use crate::client::Completion;
use crate::control::{Cmd, Remote};
use crate::db::Abilities;
use crate::faults::{Targets, Verb};
use crate::node::Node;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Faults a journal (`faults.jsonl` records, in order) shows as possibly still in effect: every
/// inject that began — done, failed (it may have been partly applied) or cut off — and was not
/// followed by a completed undo of its `undo_with` op. An undo about one node (its detail names
/// a `node`: a membership change adds back one node per record) closes only the injects about
/// that node. Returns their `begin` records.
pub fn outstanding_faults(records: &[Value]) -> Vec<Value> {
    let mut open: Vec<Value> = Vec::new();
    let node_of = |r: &Value| r["detail"]["node"].as_str().map(str::to_string);
    for r in records {
        match (r["action"].as_str(), r["event"].as_str()) {
            // A one-shot fault (promote) has no undo: nothing stays outstanding.
            (Some("inject"), Some("begin")) if !r["undo_with"].is_null() => open.push(r.clone()),
            (Some("undo"), Some("done")) => {
                let node = node_of(r);
                open.retain(|o| {
                    let same_node = match (&node, node_of(o)) {
                        (Some(a), Some(b)) => *a == b,
                        _ => true,
                    };
                    !(o["undo_with"] == r["f"] && same_node)
                })
            }
            _ => {}
        }
    }
    open
}

/// Choose the nodes a fault hits. `Primaries` here knows no leader and chooses none: use
/// [`select_targets_with`].
pub fn select_targets(targets: Targets, nodes: &[String], rng: &mut ChaCha8Rng) -> Vec<String> {
    select_targets_with(targets, nodes, &[], rng)
}

/// Choose the nodes a fault hits, given the system's current primaries (for
/// `Targets::Primaries`: those of them that are cluster nodes, sorted; the RNG is not used).
pub fn select_targets_with(
    targets: Targets,
    nodes: &[String],
    primaries: &[String],
    rng: &mut ChaCha8Rng,
) -> Vec<String> {
    if matches!(targets, Targets::Primaries | Targets::PrimariesOrOne) {
        let mut v: Vec<String> = nodes
            .iter()
            .filter(|n| primaries.contains(n))
            .cloned()
            .collect();
        v.sort();
        if !v.is_empty() || targets == Targets::Primaries {
            return v;
        }
    }
    let mut shuffled = nodes.to_vec();
    shuffled.shuffle(rng);
    let n = nodes.len();
    let k = match targets {
        Targets::One | Targets::PrimariesOrOne => 1.min(n),
        Targets::Minority => (n.saturating_sub(1) / 2).max(1).min(n),
        Targets::Majority => n / 2 + 1,
        Targets::All => n,
        Targets::Primaries => 0,
    };
    shuffled.truncate(k.min(n));
    shuffled.sort();
    shuffled
}

/// Settings for the partitioner.
#[derive(Debug, Clone)]
pub struct PartitionConfig {
    /// Name of the iptables chain the tool owns (jumped to from INPUT).
    pub chain: String,
}

impl Default for PartitionConfig {
    fn default() -> Self {
        PartitionConfig {
            chain: "SHAKEDOWN".into(),
        }
    }
}

const SETUP_CHAIN: &str = r#"set -e
c="$1"
iptables -w -N "$c" 2>/dev/null || true
iptables -w -C INPUT -j "$c" 2>/dev/null || iptables -w -I INPUT 1 -j "$c"
iptables -w -F "$c"
"#;

const TEARDOWN_CHAIN: &str = r#"c="$1"
iptables -w -F "$c" 2>/dev/null || true
while iptables -w -D INPUT -j "$c" 2>/dev/null; do :; done
iptables -w -X "$c" 2>/dev/null || true
"#;

/// Everything a fault needs to reach the cluster.
pub struct NemesisConfig {
    /// Cluster nodes, in the same order as `remotes`.
    pub nodes: Vec<Node>,
    /// One remote per node.
    pub remotes: Vec<Arc<dyn Remote>>,
    /// What the faults need from the system under test (its abilities and data directory),
    /// not its lifecycle: a `Db` coerces to it.
    pub db: Arc<dyn Abilities>,
    /// Partition settings.
    pub partition: PartitionConfig,
    /// Seeded RNG for target choice.
    pub rng: ChaCha8Rng,
    /// Where fault records go (the run's `faults.jsonl`); `None` records nothing.
    pub journal: Option<JournalSink>,
    /// The shakedown binary as the nodes see it, for faults that run it there (the NFQUEUE
    /// delayer); `None` where no such fault can be served.
    pub helper_exe: Option<String>,
}

/// Receives one JSON record per fault step: `{"time", "action": "inject"|"undo", "f", "detail",
/// "undo_with", "event": "begin"|"done"|"failed", "error"}`. An inject is recorded *before* it is
/// applied, with the op that undoes it.
pub type JournalSink = crate::store::JsonlSink;

/// Why the system's primaries are not known ([`Nemesis::primaries`]). A fault aimed at
/// `primaries` fails with it; `primaries-or-one` takes one random node instead, whichever it is.
#[derive(Debug, thiserror::Error)]
pub enum PrimariesError {
    /// The system has no `Primaries` ability.
    #[error("{system} cannot tell its primaries")]
    NotServed {
        /// The system's name.
        system: String,
    },
    /// It has one, and asking it failed.
    #[error(transparent)]
    Asked(#[from] crate::db::DbError),
}

/// Applies and heals faults: the cluster they act on and every registered fault
/// (`registry::registry`), each remembering what it has in effect.
pub struct Nemesis {
    cx: Cluster,
    faults: Vec<Box<dyn Fault>>,
}

impl Nemesis {
    /// A nemesis over the given cluster. Call `setup` before use.
    pub fn new(cfg: NemesisConfig) -> Nemesis {
        Nemesis {
            cx: Cluster::new(cfg),
            faults: registry::registry(),
        }
    }

    /// Share `board` with the membership fault: the nodes it retires are marked out on it
    /// until it adds them back, so client threads can follow.
    pub fn follow_members(&mut self, board: crate::members::MemberBoard) {
        self.cx.set_members(board);
    }

    /// The per-node outcomes recorded since the last call (and forget them).
    pub fn take_outcomes(&self) -> NodeOutcomes {
        self.cx.take_outcomes()
    }

    /// Create the tool's iptables chain on every node (flushed, jumped to from INPUT).
    pub fn setup(&mut self) -> Result<(), String> {
        let chain = self.cx.cfg.partition.chain.clone();
        self.cx.run_on(&self.cx.all_idx(), |_| {
            Cmd::script(SETUP_CHAIN, [chain.as_str()]).sudo(true)
        })
    }

    /// Remove the chain and its jump from every node.
    pub fn teardown(&mut self) -> Result<(), String> {
        let chain = self.cx.cfg.partition.chain.clone();
        self.cx.run_on(&self.cx.all_idx(), |_| {
            Cmd::script(TEARDOWN_CHAIN, [chain.as_str()]).sudo(true)
        })
    }

    /// The system's current primaries (asked of it), as node names.
    pub fn primaries(&self) -> Result<Vec<String>, PrimariesError> {
        self.cx.primaries()
    }

    /// Perform one nemesis op. Unknown ops and failures are reported, never panicked on.
    ///
    /// A fault that took effect on some nodes and failed on others completes with the error
    /// and the value `{"applied": [..], "failed": {node: why}}`. It is carried by
    /// `Completion::Fail` (the variant with both an error and a value); the interpreter records
    /// every nemesis completion as `info`, so the history says "info, partly applied". A fault
    /// that refused before touching any node ([`FaultError::Refused`]) fails with
    /// `{"refused": true, "asked": value}`; [`FaultError::Unknown`] with the value the fault
    /// gives; any other error leaves the outcome unknown (`Completion::Info`).
    pub fn invoke(&mut self, f: &str, value: &Value) -> Completion {
        self.cx.take_outcomes();
        let verb = Verb::parse(f);
        let result = match verb {
            Some(Verb::DbStatus) => Ok(self.db_status()),
            Some(v) => match self.faults.iter_mut().find(|x| x.verbs().contains(&v)) {
                Some(fault) => fault.invoke(&mut self.cx, v, value),
                // Client-side (stalls, served by the runner) or journal-only (NTP) verbs.
                None => Err(FaultError::Failed(format!("unknown nemesis op {f:?}"))),
            },
            None => Err(FaultError::Failed(format!("unknown nemesis op {f:?}"))),
        };
        let outcomes = self.cx.take_outcomes();
        match result {
            Ok(value) => Completion::Ok {
                value,
                version: None,
            },
            // The fault says what is known itself.
            Err(FaultError::Unknown { error, value }) => Completion::Fail { error, value },
            Err(e) if !outcomes.applied.is_empty() => Completion::Fail {
                error: e.to_string(),
                value: outcomes.to_json(),
            },
            // Nothing was applied anywhere: a definite failure, not an unknown outcome; the
            // value says so (`faults::REFUSED_KEY`: nemesis completions are all `info`).
            Err(FaultError::Refused(error)) => Completion::Fail {
                error,
                value: serde_json::json!({ crate::faults::REFUSED_KEY: true, "asked": value }),
            },
            Err(e) => Completion::Info {
                error: e.to_string(),
            },
        }
    }

    /// Undo every fault, in the registry's order: packet faults and partitions first, then
    /// paused and killed processes, power cuts, disks and files, clocks (and the NTP daemons),
    /// SSH. Tries all even if one fails; returns the errors, each named by its heal.
    pub fn heal_all(&mut self) -> Vec<String> {
        let mut errs = Vec::new();
        for fault in &mut self.faults {
            if let Err(e) = fault.heal(&mut self.cx) {
                errs.push(format!("{}: {e}", fault.heal_what()));
            }
        }
        errs
    }

    /// Take over what a journal's outstanding records (`outstanding_faults`) say an earlier
    /// controller left in effect, so `heal_all` and the undo verbs undo it.
    pub fn adopt(&mut self, outstanding: &[Value]) {
        for fault in &mut self.faults {
            fault.adopt(outstanding);
        }
    }

    /// Names of faults currently active, for the progress display.
    pub fn active(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        // Display order: the vocabulary's (partition, kill, pause, clock, …).
        for kind in &crate::faults::KINDS {
            for fault in self.faults.iter().filter(|f| f.name() == kind.name) {
                v.extend(fault.active());
            }
        }
        v
    }

    /// `db-status`: whether each node's database runs now — `{"running": [..], "stopped":
    /// [..], "unknown": {node: why}}` (unknown: the system cannot tell, or the node did not
    /// answer). A measurement: it changes nothing and always completes ok.
    fn db_status(&mut self) -> Value {
        let all = self.cx.all_idx();
        let seen: std::sync::Mutex<BTreeMap<String, Result<bool, String>>> =
            std::sync::Mutex::new(BTreeMap::new());
        let db = self.cx.db();
        let _ = self.cx.read_nodes(&all, |r, node| {
            let state = match db.as_kill().and_then(|k| k.running(r, node)) {
                None => Err(format!("{} cannot tell whether it runs", db.name())),
                Some(Ok(up)) => Ok(up),
                Some(Err(e)) => Err(e.to_string()),
            };
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(node.name.clone(), state);
            Ok(())
        });
        let seen = seen.into_inner().unwrap_or_else(|e| e.into_inner());
        let names = |want: bool| -> Vec<&String> {
            seen.iter()
                .filter(|(_, s)| s.as_ref().is_ok_and(|up| *up == want))
                .map(|(n, _)| n)
                .collect()
        };
        let unknown: BTreeMap<&String, &String> = seen
            .iter()
            .filter_map(|(n, s)| s.as_ref().err().map(|e| (n, e)))
            .collect();
        json!({ "running": names(true), "stopped": names(false), "unknown": unknown })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::collections::BTreeSet;

    fn nodes(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    /// Who can hear whom under a grudge: `hears(g, a, b)` = a accepts packets from b.
    fn hears(g: &Grudge, a: &str, b: &str) -> bool {
        g.get(a).is_none_or(|s| !s.contains(b))
    }

    #[test]
    fn outstanding_faults_are_injects_without_a_later_undo() {
        let rec = |action: &str, event: &str, f: &str, undo: Option<&str>| json!({ "action": action, "event": event, "f": f, "undo_with": undo });
        let journal = vec![
            rec("inject", "begin", "kill", Some("start")),
            rec("inject", "done", "kill", Some("start")),
            rec("undo", "begin", "start", None),
            rec("undo", "done", "start", None),
            rec("inject", "begin", "start-partition", Some("stop-partition")),
            rec("inject", "done", "start-partition", Some("stop-partition")),
            rec("undo", "begin", "stop-partition", None),
            rec("undo", "failed", "stop-partition", None),
            rec("inject", "begin", "pause", Some("resume")),
            // One-shot (promote): nothing to undo, never outstanding.
            rec("inject", "begin", "promote", None),
            rec("inject", "done", "promote", None),
        ];
        let open = outstanding_faults(&journal);
        let fs: Vec<&str> = open.iter().map(|r| r["f"].as_str().unwrap()).collect();
        assert_eq!(fs, vec!["start-partition", "pause"]);
        assert!(outstanding_faults(&journal[..4]).is_empty());
        // Two removals, one node added back before the controller died: the other stays open.
        let node = |action: &str, event: &str, f: &str, undo: Option<&str>, n: &str| {
            let mut r = rec(action, event, f, undo);
            r["detail"] = json!({ "node": n });
            r
        };
        let membership = vec![
            node(
                "inject",
                "begin",
                "shrink-cluster",
                Some("grow-cluster"),
                "n1",
            ),
            node(
                "inject",
                "done",
                "shrink-cluster",
                Some("grow-cluster"),
                "n1",
            ),
            node(
                "inject",
                "begin",
                "shrink-cluster",
                Some("grow-cluster"),
                "n3",
            ),
            node(
                "inject",
                "done",
                "shrink-cluster",
                Some("grow-cluster"),
                "n3",
            ),
            node("undo", "begin", "grow-cluster", None, "n1"),
            node("undo", "done", "grow-cluster", None, "n1"),
        ];
        let open = outstanding_faults(&membership);
        assert_eq!(open.len(), 1, "{open:?}");
        assert_eq!(open[0]["detail"]["node"], "n3");
    }

    #[test]
    fn primaries_targets_and_shape_use_the_leaders_given() {
        let n = nodes(5);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let leaders = vec!["n3".to_string(), "n9".to_string()];
        assert_eq!(
            select_targets_with(Targets::Primaries, &n, &leaders, &mut rng),
            vec!["n3"]
        );
        assert!(select_targets(Targets::Primaries, &n, &mut rng).is_empty());
        assert_eq!(Targets::parse("primaries"), Some(Targets::Primaries));
        // primaries-or-one: the primaries when known, else one random node.
        assert_eq!(
            select_targets_with(Targets::PrimariesOrOne, &n, &leaders, &mut rng),
            select_targets_with(Targets::Primaries, &n, &leaders, &mut rng)
        );
        assert_eq!(
            select_targets_with(Targets::PrimariesOrOne, &n, &[], &mut rng).len(),
            1
        );
        assert_eq!(
            Targets::parse("primaries-or-one"),
            Some(Targets::PrimariesOrOne)
        );
        for name in crate::faults::TARGET_NAMES {
            assert!(Targets::parse(name).is_some(), "{name}");
        }
        // Other targets ignore the primaries.
        assert_eq!(
            select_targets_with(Targets::Majority, &n, &leaders, &mut rng).len(),
            3
        );
        let g = grudge_for_with("primaries", &n, &["n2".to_string()], &mut rng).unwrap();
        assert_eq!(g["n2"].len(), 4, "{g:?}");
        for other in ["n1", "n3", "n4", "n5"] {
            assert_eq!(g[other], BTreeSet::from(["n2".to_string()]), "{g:?}");
        }
        // Two leaders (a deposed one that has not noticed) are cut off together.
        let g = isolate_nodes(&["n1".to_string(), "n4".to_string()], &n);
        assert!(hears(&g, "n1", "n4") && hears(&g, "n4", "n1"));
        assert!(!hears(&g, "n1", "n2") && !hears(&g, "n5", "n4"));
        // No leader known, or everyone a leader: nothing to cut.
        assert!(grudge_for("primaries", &n, &mut rng).unwrap().is_empty());
        assert!(isolate_nodes(&n, &n).is_empty());
    }

    #[test]
    fn target_sizes() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = nodes(5);
        assert_eq!(select_targets(Targets::One, &n, &mut rng).len(), 1);
        assert_eq!(select_targets(Targets::Minority, &n, &mut rng).len(), 2);
        assert_eq!(select_targets(Targets::Majority, &n, &mut rng).len(), 3);
        assert_eq!(select_targets(Targets::All, &n, &mut rng).len(), 5);
        assert_eq!(
            select_targets(Targets::Minority, &nodes(1), &mut rng).len(),
            1
        );
        assert!(Targets::parse("most").is_none());
    }
}
