//! What a fault is to the nemesis: the [`Fault`] trait every fault module implements (perform
//! its verbs on the cluster, undo all it has in effect, say what is in effect, take over what
//! an earlier controller's journal left in effect and heal it node by node), and the helpers
//! they share for journal records and progress lines.
//!
//! Adding a fault: its pure definition in the core (`faults::<name>`: kind row, schedule entry,
//! op value; one line in `spec::fault`'s list), then its action here — a module beside this one
//! implementing [`Fault`] with its state, one line in `registry::registry` (ARCHITECTURE.md,
//! "Adding a fault"). Does not own the mechanics faults share (`cluster::Cluster`) nor a fault's
//! parameters and needs (`faults::<name>`).
//! The client-side stall (`stall`) is served by the runner, not here.

use super::cluster::{Cluster, HealLog};
use super::survey::Found;
use crate::faults::Verb;
use serde_json::Value;
use std::collections::BTreeMap;

/// What `shakedown heal` knows before it undoes anything: the journal's outstanding inject
/// records (`outstanding_faults`), what the survey found on each node, the system's name.
pub struct JournalView<'a> {
    /// The journal's faults possibly still in effect (their `begin` records).
    pub outstanding: &'a [Value],
    /// Per node, the tool's rules and qdiscs found there before healing.
    pub found: &'a BTreeMap<String, Found>,
    /// The system's name, for the per-node lines.
    pub db_name: &'a str,
}

impl JournalView<'_> {
    /// The survey of node `n` (empty when it was not reached).
    pub fn found(&self, n: &str) -> Found {
        self.found.get(n).cloned().unwrap_or_default()
    }
}

/// Why a fault op did not complete, as the history records it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultError {
    /// Nothing was touched on any node (a bad value, no primaries known, a kernel without the
    /// qdisc, a node without the sandbox's sshd supervisor): the op failed, definitely.
    #[error("{0}")]
    Refused(String),
    /// A step ran and failed, or its outcome is not known: the fault may be in effect
    /// (partly, where the nodes' outcomes say so).
    #[error("{0}")]
    Failed(String),
    /// The step ran and whether it took effect is not known yet (a membership change the views
    /// have not confirmed): the completion carries `value`, what is known (the node, the views).
    #[error("{error}")]
    Unknown {
        /// Why it is not known.
        error: String,
        /// What is known, the completion's value.
        value: Value,
    },
}

impl From<String> for FaultError {
    fn from(e: String) -> FaultError {
        FaultError::Failed(e)
    }
}

/// One fault: performs its verbs, remembers what it put in effect, and undoes it.
pub trait Fault: Send {
    /// Its package name (`faults::KINDS`), for messages.
    fn name(&self) -> &'static str;

    /// The verbs it performs (`Nemesis::invoke` hands it exactly these).
    fn verbs(&self) -> &'static [Verb];

    /// Perform `verb` with its op value; the completion value, or why not.
    fn invoke(&mut self, cx: &mut Cluster, verb: Verb, value: &Value) -> Result<Value, FaultError>;

    /// Undo everything it has in effect (end of run, after an error); nothing in effect: no-op.
    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String>;

    /// Its heal in words, as errors name it ("stop loss").
    fn heal_what(&self) -> &'static str;

    /// What it has in effect now, for the progress line ("paused n2"); `None`: nothing.
    fn active(&self) -> Option<String>;

    /// Take over what a journal's outstanding records of this fault say is still in effect, so
    /// that [`Fault::heal`] undoes it; the nodes they name. By default nothing: a fault whose
    /// heal finds its work on the nodes (rules, qdiscs) or that has none (promote).
    fn adopt(&mut self, _outstanding: &[Value]) -> Vec<String> {
        Vec::new()
    }

    /// What its heal did on a node it adopted, for `shakedown heal`'s line ("restarted etcd
    /// (killed per the journal)"); unused when it adopts nothing.
    fn healed(&self, _db_name: &str) -> String {
        String::new()
    }

    /// `shakedown heal`: adopt the journal's records and heal, logging per node. By default a
    /// fault no record names is left alone.
    fn heal_from_journal(&mut self, cx: &mut Cluster, j: &JournalView<'_>, log: &mut HealLog) {
        let nodes = self.adopt(j.outstanding);
        if nodes.is_empty() {
            return;
        }
        let (what, text) = (self.heal_what(), self.healed(j.db_name));
        cx.heal_step(
            log,
            what,
            |cx| self.heal(cx),
            |n| nodes.iter().any(|k| k == n).then(|| text.clone()),
        );
    }
}

/// The nodes named by the journal's outstanding records of verb `f` (`detail.nodes`,
/// `detail.node`, or the keys of `detail.services` / `detail.grudge`), sorted, once each.
pub fn nodes_of(outstanding: &[Value], f: Verb) -> Vec<String> {
    let mut v: Vec<String> = outstanding
        .iter()
        .filter(|r| r["f"] == f.as_str())
        .flat_map(|r| describe_nodes(&r["detail"]))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The nodes a journal record's detail names.
pub fn describe_nodes(detail: &Value) -> Vec<String> {
    if let Some(a) = detail["nodes"].as_array() {
        return a
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect();
    }
    if let Some(n) = detail["node"].as_str() {
        return vec![n.to_string()];
    }
    for key in ["grudge", "services"] {
        if let Some(m) = detail[key].as_object() {
            return m.keys().cloned().collect();
        }
    }
    Vec::new()
}

/// "`label` n1,n2" for a progress line; `None` for no nodes.
pub fn active_line<'a>(label: &str, nodes: impl IntoIterator<Item = &'a String>) -> Option<String> {
    let nodes: Vec<&str> = nodes.into_iter().map(String::as_str).collect();
    (!nodes.is_empty()).then(|| format!("{label} {}", nodes.join(",")))
}
