//! The `pause` fault: SIGSTOP the database on the targets (`pause`) through the system's `Pause`
//! ability, SIGCONT it on every node (`resume`). Remembers the nodes it paused.
//!
//! Does not own how a system pauses its server (its `db::Pause`) or choosing targets
//! (`cluster`).

use super::cluster::{Cluster, HealLog};
use super::fault::{Fault, FaultError, JournalView, active_line, nodes_of};
use crate::faults::{Verb, verb};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The pause fault and the nodes it paused.
#[derive(Debug, Default)]
pub struct Pause {
    paused: BTreeSet<String>,
}

impl Pause {
    fn pause(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, String> {
        let db = cx.db();
        let pause = db
            .as_pause()
            .ok_or_else(|| format!("{} cannot be paused", db.name()))?;
        let idx = cx.targets(value)?;
        let names = cx.node_names(&idx);
        self.paused.extend(names.iter().cloned());
        let detail = json!({ "nodes": names });
        cx.journaled(
            "inject",
            verb::PAUSE,
            detail.clone(),
            Some(verb::RESUME),
            |cx| {
                cx.on_nodes(&idx, |r, node| {
                    pause.pause(r, node).map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(detail)
    }

    /// Resume the system on every node (idempotent).
    fn resume_all(&mut self, cx: &mut Cluster) -> Result<Vec<String>, String> {
        let db = cx.db();
        let Some(pause) = db.as_pause() else {
            return Ok(vec![]);
        };
        let (all, paused) = (cx.all_idx(), self.paused.clone());
        cx.journaled(
            "undo",
            verb::RESUME,
            json!({ "paused": paused }),
            None,
            |cx| {
                cx.on_nodes(&all, |r, node| {
                    pause.resume(r, node).map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(std::mem::take(&mut self.paused).into_iter().collect())
    }
}

impl Fault for Pause {
    fn name(&self) -> &'static str {
        "pause"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::Pause, Verb::Resume]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        Ok(match v {
            Verb::Pause => self.pause(cx, value)?,
            _ => json!({ "nodes": self.resume_all(cx)? }),
        })
    }

    /// Always: SIGCONT is harmless where nothing is stopped.
    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        self.resume_all(cx).map(|_| ())
    }

    fn heal_what(&self) -> &'static str {
        "resume"
    }

    fn active(&self) -> Option<String> {
        active_line("paused", &self.paused)
    }

    fn adopt(&mut self, outstanding: &[Value]) -> Vec<String> {
        let nodes = nodes_of(outstanding, Verb::Pause);
        self.paused.extend(nodes.iter().cloned());
        nodes
    }

    fn healed(&self, db_name: &str) -> String {
        format!("resumed {db_name} (SIGCONT; paused per the journal)")
    }

    /// A resume goes to every node, journal or not (a process stopped by a controller that
    /// died before journaling it is still stopped).
    fn heal_from_journal(&mut self, cx: &mut Cluster, j: &JournalView<'_>, log: &mut HealLog) {
        let paused = self.adopt(j.outstanding);
        let text = self.healed(j.db_name);
        cx.heal_step(
            log,
            verb::RESUME,
            |cx| self.heal(cx),
            |n| paused.iter().any(|p| p == n).then(|| text.clone()),
        );
    }
}
