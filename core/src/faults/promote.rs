//! The `promote` fault's schedule entry ([`PromoteSpec`]): fail over by making a replica (a
//! named node, or one at random) the primary. One-shot: no stop op.
//!
//! Pure: no IO. Does not own asking a system to promote (`nemesis::promote`, `db::Promote`).

use super::Verb;
use super::def::{FaultDef, Needs, Ops};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The `promote` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const KIND: super::FaultKind = super::FaultKind {
    name: "promote",
    start_verbs: &[super::verb::PROMOTE],
    stop_verbs: &[],
    label: "failover (promote)",
    color_rgb: (20, 40, 130),
};

/// Fail over: promote a replica (PostgreSQL) to primary. One-shot: no stop op; the old
/// primary is not fenced, and clients send writes to the promoted node.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromoteSpec {
    /// The node to promote; default a random replica.
    #[serde(default)]
    pub node: Option<String>,
}

impl FaultDef for PromoteSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &KIND
    }
    fn ops(&self) -> Ops {
        let value = self
            .node
            .as_ref()
            .map_or(json!({}), |n| json!({ "node": n }));
        // One-shot: no stop op.
        Ops::new(Verb::Promote, value, None)
    }
    fn keys(&self) -> &'static [&'static str] {
        &["node"]
    }
    fn needs(&self) -> Needs {
        Needs {
            promote: true,
            ..Needs::default()
        }
    }
    fn chaos_refusal(&self) -> Option<&'static str> {
        Some("a failover cannot be undone by heal; chaos injects only faults it can undo")
    }
}
