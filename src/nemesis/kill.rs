//! The `kill` fault: SIGKILL the database on the targets (`kill`) through the system's `Kill`
//! ability, start it again on every node (`start`). Remembers the nodes it killed so a heal
//! (and `shakedown heal`, from the journal) restarts and records them.
//!
//! Does not own how a system kills or starts its server (its `db::Kill`) or choosing targets
//! (`cluster`).

use super::cluster::Cluster;
use super::fault::{Fault, FaultError, active_line, nodes_of};
use crate::faults::{Verb, verb};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The kill fault and the nodes it killed.
#[derive(Debug, Default)]
pub struct Kill {
    killed: BTreeSet<String>,
}

impl Kill {
    fn kill(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, String> {
        let db = cx.db();
        let kill = db
            .as_kill()
            .ok_or_else(|| format!("{} cannot be killed", db.name()))?;
        let idx = cx.targets(value)?;
        let names = cx.node_names(&idx);
        self.killed.extend(names.iter().cloned());
        let detail = json!({ "nodes": names });
        cx.journaled(
            "inject",
            verb::KILL,
            detail.clone(),
            Some(verb::START),
            |cx| {
                cx.on_nodes(&idx, |r, node| {
                    kill.kill(r, node).map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(detail)
    }

    /// Start the system on every node where the nemesis killed it (idempotent on all nodes).
    fn start_all(&mut self, cx: &mut Cluster) -> Result<Vec<String>, String> {
        let db = cx.db();
        let Some(kill) = db.as_kill() else {
            return Ok(vec![]);
        };
        let cluster = cx.nodes().to_vec();
        let (all, killed) = (cx.all_idx(), self.killed.clone());
        cx.journaled(
            "undo",
            verb::START,
            json!({ "killed": killed }),
            None,
            |cx| {
                cx.on_nodes(&all, |r, node| {
                    kill.start(r, node, &cluster).map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(std::mem::take(&mut self.killed).into_iter().collect())
    }
}

impl Fault for Kill {
    fn name(&self) -> &'static str {
        "kill"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::Kill, Verb::Start]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        Ok(match v {
            Verb::Kill => self.kill(cx, value)?,
            _ => json!({ "nodes": self.start_all(cx)? }),
        })
    }

    /// Always: a start on every node is harmless, and a node killed outside the journal's view
    /// comes back.
    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        self.start_all(cx).map(|_| ())
    }

    fn heal_what(&self) -> &'static str {
        "restart"
    }

    fn active(&self) -> Option<String> {
        active_line("killed", &self.killed)
    }

    fn adopt(&mut self, outstanding: &[Value]) -> Vec<String> {
        let nodes = nodes_of(outstanding, Verb::Kill);
        self.killed.extend(nodes.iter().cloned());
        nodes
    }

    fn healed(&self, db_name: &str) -> String {
        format!("restarted {db_name} (killed per the journal)")
    }
}
