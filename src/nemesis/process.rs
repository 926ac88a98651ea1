//! The process faults of [`Nemesis`]: `kill` / `start`, `pause` / `resume`, `promote` through the
//! system's abilities (`db::Kill`, `Pause`, `Promote`), the end-of-run `db-status`, and the nodes
//! an earlier controller killed. Does not own how a system kills or starts its server (its `Db`)
//! or choosing targets (`nemesis`).

use super::Nemesis;
use crate::faults::verb;
use serde_json::{Value, json};
use std::collections::BTreeMap;

impl Nemesis {
    pub(super) fn kill(&mut self, value: &Value) -> Result<Value, String> {
        let db = self.cfg.db.clone();
        let kill = db
            .as_kill()
            .ok_or_else(|| format!("{} cannot be killed", db.name()))?;
        let idx = self.targets(value)?;
        let names = self.node_names(&idx);
        self.killed.extend(names.iter().cloned());
        let detail = json!({ "nodes": names });
        self.journaled(
            "inject",
            verb::KILL,
            detail.clone(),
            Some(verb::START),
            |n| {
                n.on_nodes(&idx, |r, node| {
                    kill.kill(r, node).map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(detail)
    }

    /// Fail over: promote `{"node": name}`, or a random replica. One-shot (journaled without an
    /// undo); the system's clients send writes to the promoted node from then on.
    pub(super) fn promote(&mut self, value: &Value) -> Result<Value, String> {
        let db = self.cfg.db.clone();
        let promote = db
            .as_promote()
            .ok_or_else(|| format!("{} cannot promote a replica", db.name()))?;
        let candidates = promote.candidates(&self.cfg.nodes);
        let name = match value.get("node").and_then(Value::as_str) {
            Some(n) => n.to_string(),
            None => {
                if candidates.is_empty() {
                    return Err("no replica to promote".into());
                }
                let i = rand::RngExt::random_range(&mut self.cfg.rng, 0..candidates.len());
                candidates[i].clone()
            }
        };
        let i = self
            .index_of(&name)
            .ok_or_else(|| format!("promote: unknown node {name:?}"))?;
        if !candidates.contains(&name) {
            return Err(format!(
                "promote {name}: not a replica (replicas: {})",
                candidates.join(", ")
            ));
        }
        let detail = json!({ "node": name });
        let cluster = self.cfg.nodes.clone();
        self.journaled("inject", verb::PROMOTE, detail.clone(), None, |n| {
            n.on_nodes(&[i], |r, node| {
                promote
                    .promote(r, node, &cluster)
                    .map_err(|e| e.to_string())
            })
        })?;
        Ok(detail)
    }

    /// Start the system on every node where the nemesis killed it (idempotent on all nodes).
    pub fn start_all(&mut self) -> Result<Vec<String>, String> {
        let db = self.cfg.db.clone();
        let Some(kill) = db.as_kill() else {
            return Ok(vec![]);
        };
        let cluster = self.cfg.nodes.clone();
        let (all, killed) = (self.all_idx(), self.killed.clone());
        self.journaled(
            "undo",
            verb::START,
            json!({ "killed": killed }),
            None,
            |n| {
                n.on_nodes(&all, |r, node| {
                    kill.start(r, node, &cluster).map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(std::mem::take(&mut self.killed).into_iter().collect())
    }

    pub(super) fn pause(&mut self, value: &Value) -> Result<Value, String> {
        let db = self.cfg.db.clone();
        let pause = db
            .as_pause()
            .ok_or_else(|| format!("{} cannot be paused", db.name()))?;
        let idx = self.targets(value)?;
        let names = self.node_names(&idx);
        self.paused.extend(names.iter().cloned());
        let detail = json!({ "nodes": names });
        self.journaled(
            "inject",
            verb::PAUSE,
            detail.clone(),
            Some(verb::RESUME),
            |n| {
                n.on_nodes(&idx, |r, node| {
                    pause.pause(r, node).map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(detail)
    }

    /// Resume the system on every node (idempotent).
    pub fn resume_all(&mut self) -> Result<Vec<String>, String> {
        let db = self.cfg.db.clone();
        let Some(pause) = db.as_pause() else {
            return Ok(vec![]);
        };
        let (all, paused) = (self.all_idx(), self.paused.clone());
        self.journaled(
            "undo",
            verb::RESUME,
            json!({ "paused": paused }),
            None,
            |n| {
                n.on_nodes(&all, |r, node| {
                    pause.resume(r, node).map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(std::mem::take(&mut self.paused).into_iter().collect())
    }

    /// `db-status`: whether each node's database runs now — `{"running": [..], "stopped":
    /// [..], "unknown": {node: why}}` (unknown: the system cannot tell, or the node did not
    /// answer). A measurement: it changes nothing and always completes ok.
    pub(super) fn db_status(&mut self) -> Value {
        let all = self.all_idx();
        let seen: std::sync::Mutex<BTreeMap<String, Result<bool, String>>> =
            std::sync::Mutex::new(BTreeMap::new());
        let db = self.cfg.db.clone();
        let _ = self.on_nodes(&all, |r, node| {
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
        self.take_outcomes();
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

    /// Remember nodes killed by an earlier controller (from its journal), so `start_all` records
    /// them.
    pub fn adopt_killed(&mut self, nodes: impl IntoIterator<Item = String>) {
        self.killed.extend(nodes);
    }
}
