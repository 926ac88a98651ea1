//! Per-node outcomes of fault steps: which nodes a step (or all steps of one nemesis op) took
//! effect on and which it failed on, and why.
//!
//! Owns `NodeOutcomes` (merge rule: a node that failed any step is failed), its JSON form
//! (`{"applied": [..], "failed": {node: why}}`, keys from `faults`) used in partly applied op
//! values and fault-journal records, and stripping the "node <name>: " prefix of per-node
//! errors. Pure: no IO. Does not own running the steps (`Nemesis::on_nodes`).

use crate::faults as kinds;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Per-node outcome of a fault step, or of all steps of one nemesis op merged: a node is
/// `failed` if any step failed on it, else `applied` if a step succeeded on it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NodeOutcomes {
    /// Nodes where every step succeeded.
    pub applied: BTreeSet<String>,
    /// Nodes where a step failed → why (the first failure, without the node name prefix).
    pub failed: BTreeMap<String, String>,
}

impl NodeOutcomes {
    /// Record one node's result of one step.
    pub fn record(&mut self, node: &str, result: Result<(), String>) {
        match result {
            Ok(()) => {
                if !self.failed.contains_key(node) {
                    self.applied.insert(node.to_string());
                }
            }
            Err(e) => {
                self.applied.remove(node);
                self.failed.entry(node.to_string()).or_insert(e);
            }
        }
    }

    /// Merge another step's outcomes into these.
    pub fn merge(&mut self, other: NodeOutcomes) {
        for n in other.applied {
            self.record(&n, Ok(()));
        }
        for (n, e) in other.failed {
            self.record(&n, Err(e));
        }
    }

    /// No node was touched.
    pub fn is_empty(&self) -> bool {
        self.applied.is_empty() && self.failed.is_empty()
    }

    /// Applied on some nodes and failed on others.
    pub fn is_partial(&self) -> bool {
        !self.applied.is_empty() && !self.failed.is_empty()
    }

    /// `{"applied": [..], "failed": {node: why}}`, the value of a partly applied nemesis op and
    /// the per-node part of a journal record.
    pub fn to_json(&self) -> Value {
        json!({ kinds::APPLIED_KEY: self.applied, kinds::FAILED_KEY: self.failed })
    }

    /// Read `applied`/`failed` back from a journal record or op value (absent → empty).
    pub fn from_json(v: &Value) -> NodeOutcomes {
        let applied = v[kinds::APPLIED_KEY]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect();
        let failed = v[kinds::FAILED_KEY]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(n, e)| (n.clone(), e.as_str().unwrap_or("failed").to_string()))
            .collect();
        NodeOutcomes { applied, failed }
    }
}

/// `e` without a leading "node <name>: " (errors of `control` and `db` name their node; a
/// per-node map already does).
pub(super) fn strip_node_prefix(name: &str, e: String) -> String {
    match e.strip_prefix(&format!("node {name}: ")) {
        Some(rest) => rest.to_string(),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_outcomes_merge_failure_wins_and_round_trip_through_json() {
        let mut a = NodeOutcomes::default();
        a.record("n1", Ok(()));
        a.record("n2", Ok(()));
        let mut b = NodeOutcomes::default();
        b.record("n2", Err("refused".into()));
        b.record("n3", Ok(()));
        a.merge(b);
        // A node that failed any step is failed; a later success does not undo that.
        a.record("n2", Ok(()));
        assert_eq!(
            a.applied,
            BTreeSet::from(["n1".to_string(), "n3".to_string()])
        );
        assert_eq!(a.failed["n2"], "refused");
        assert!(a.is_partial() && !a.is_empty());
        let v = a.to_json();
        assert_eq!(
            v,
            json!({"applied": ["n1", "n3"], "failed": {"n2": "refused"}})
        );
        assert!(kinds::applied_somewhere(&v));
        assert!(!kinds::applied_somewhere(&json!({"applied": []})));
        assert!(!kinds::applied_somewhere(&json!("healed")));
        assert_eq!(NodeOutcomes::from_json(&v), a);
        assert_eq!(
            NodeOutcomes::from_json(&json!(null)),
            NodeOutcomes::default()
        );
        assert_eq!(strip_node_prefix("n2", "node n2: x".into()), "x");
        assert_eq!(strip_node_prefix("n2", "node n3: x".into()), "node n3: x");
    }
}
