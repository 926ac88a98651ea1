//! The `promote` fault: fail over by making a replica the primary (`promote`) through the
//! system's `Promote` ability. One-shot: journaled without an undo, nothing to heal; the
//! system's clients send writes to the promoted node from then on.
//!
//! Does not own how a system promotes (its `db::Promote`).

use super::cluster::Cluster;
use super::fault::{Fault, FaultError};
use crate::faults::{Verb, verb};
use serde_json::{Value, json};

/// The promote fault (it keeps no state).
#[derive(Debug, Default)]
pub struct Promote;

impl Promote {
    /// Promote `{"node": name}`, or a random replica.
    fn promote(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, String> {
        let db = cx.db();
        let promote = db
            .as_promote()
            .ok_or_else(|| format!("{} cannot promote a replica", db.name()))?;
        let candidates = promote.candidates(cx.nodes());
        let name = match value.get("node").and_then(Value::as_str) {
            Some(n) => n.to_string(),
            None => {
                if candidates.is_empty() {
                    return Err("no replica to promote".into());
                }
                let i = rand::RngExt::random_range(cx.rng(), 0..candidates.len());
                candidates[i].clone()
            }
        };
        let i = cx
            .index_of(&name)
            .ok_or_else(|| format!("promote: unknown node {name:?}"))?;
        if !candidates.contains(&name) {
            return Err(format!(
                "promote {name}: not a replica (replicas: {})",
                candidates.join(", ")
            ));
        }
        let detail = json!({ "node": name });
        let cluster = cx.nodes().to_vec();
        cx.journaled("inject", verb::PROMOTE, detail.clone(), None, |cx| {
            cx.on_nodes(&[i], |r, node| {
                promote
                    .promote(r, node, &cluster)
                    .map_err(|e| e.to_string())
            })
        })?;
        Ok(detail)
    }
}

impl Fault for Promote {
    fn name(&self) -> &'static str {
        "promote"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::Promote]
    }

    fn invoke(&mut self, cx: &mut Cluster, _: Verb, value: &Value) -> Result<Value, FaultError> {
        Ok(self.promote(cx, value)?)
    }

    fn heal(&mut self, _: &mut Cluster) -> Result<(), String> {
        Ok(())
    }

    fn heal_what(&self) -> &'static str {
        "promote"
    }

    fn active(&self) -> Option<String> {
        None
    }
}
