//! The cluster as every fault sees it ([`Cluster`]): its nodes and remotes, the system's
//! abilities, the seeded RNG, target selection, running a step on many nodes at once with each
//! node's outcome recorded, and the fault journal (every step recorded `begin` before it runs,
//! then `done` or `failed`).
//!
//! Owns the mechanics faults share; does not own any fault (each is its own module implementing
//! `nemesis::fault::Fault`), the iptables chain set-up (`Nemesis`) or what a heal says per node
//! (`heal`, which drives [`Cluster::heal_step`]).

use super::outcomes::{NodeOutcomes, strip_node_prefix};
use super::{NemesisConfig, PrimariesError, select_targets_with};
use crate::control::{Cmd, Remote};
use crate::faults::Targets;
use crate::node::Node;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Per node: what a heal did (in order) and what failed.
#[derive(Default)]
pub struct NodeLog {
    /// What was undone, in words.
    pub done: Vec<String>,
    /// "step: why" for each step that failed there.
    pub failed: Vec<String>,
}

/// Node name (empty: no node to blame) → what `shakedown heal` did there.
pub type HealLog = BTreeMap<String, NodeLog>;

/// The cluster a fault acts on, and the means every fault shares.
pub struct Cluster {
    pub(super) cfg: NemesisConfig,
    /// What the steps of the current op did on each node (reset at the start of an op).
    outcomes: std::sync::Mutex<NodeOutcomes>,
    /// Which nodes a membership change retired, for the clients to follow.
    members: crate::members::MemberBoard,
}

impl Cluster {
    pub(super) fn new(cfg: NemesisConfig) -> Cluster {
        Cluster {
            cfg,
            outcomes: std::sync::Mutex::new(NodeOutcomes::default()),
            members: crate::members::MemberBoard::new(),
        }
    }

    /// The board of nodes out of the cluster (written by the membership fault).
    pub fn members(&self) -> &crate::members::MemberBoard {
        &self.members
    }

    pub(super) fn set_members(&mut self, board: crate::members::MemberBoard) {
        self.members = board;
    }

    /// The system's abilities.
    pub fn db(&self) -> std::sync::Arc<dyn crate::db::Abilities> {
        self.cfg.db.clone()
    }

    /// The cluster's nodes, in order.
    pub fn nodes(&self) -> &[Node] {
        &self.cfg.nodes
    }

    /// The seeded RNG faults draw from.
    pub fn rng(&mut self) -> &mut rand_chacha::ChaCha8Rng {
        &mut self.cfg.rng
    }

    pub(super) fn lock_outcomes(&self) -> std::sync::MutexGuard<'_, NodeOutcomes> {
        self.outcomes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The per-node outcomes recorded since the last call (and forget them).
    pub fn take_outcomes(&self) -> NodeOutcomes {
        std::mem::take(&mut *self.lock_outcomes())
    }

    /// Every node's name, in order.
    pub fn names(&self) -> Vec<String> {
        self.cfg.nodes.iter().map(|n| n.name.clone()).collect()
    }

    /// The index of the node named `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.cfg.nodes.iter().position(|n| n.name == name)
    }

    /// The names of the nodes at `idx`.
    pub fn node_names(&self, idx: &[usize]) -> Vec<String> {
        idx.iter()
            .map(|&i| self.cfg.nodes[i].name.clone())
            .collect()
    }

    /// Every node's index.
    pub fn all_idx(&self) -> Vec<usize> {
        (0..self.cfg.nodes.len()).collect()
    }

    /// The indices of the named nodes that are in the cluster.
    pub fn idx_of<'a>(&self, names: impl IntoIterator<Item = &'a String>) -> Vec<usize> {
        names.into_iter().filter_map(|n| self.index_of(n)).collect()
    }

    /// The addresses of the named nodes, in node order.
    pub fn hosts_of(&self, names: &BTreeSet<String>) -> Vec<String> {
        self.cfg
            .nodes
            .iter()
            .filter(|n| names.contains(&n.name))
            .map(|n| n.host.clone())
            .collect()
    }

    /// Run `f` on the given node indices in parallel, at most `control::fanout::FAN_OUT` at
    /// once (1,000 targets go out on 32 threads, each taking the next node when done); every
    /// node is tried whatever happens on the others. Each node's result is recorded (see
    /// `take_outcomes`); the errors come back as one "node: error; node: error" string.
    pub fn on_nodes<F>(&self, idx: &[usize], f: F) -> Result<(), String>
    where
        F: Fn(&dyn Remote, &Node) -> Result<(), String> + Sync,
    {
        use crate::control::fanout;
        let (nodes, remotes) = (&self.cfg.nodes, &self.cfg.remotes);
        let results: Vec<(String, Result<(), String>)> = fanout::each(idx, fanout::FAN_OUT, |&i| {
            let node = &nodes[i];
            f(remotes[i].as_ref(), node).map_err(|e| strip_node_prefix(&node.name, e))
        })
        .into_iter()
        .zip(idx)
        .map(|(r, &i)| {
            let r = r.unwrap_or_else(|p| {
                Err(format!(
                    "fault thread panicked: {}",
                    fanout::panic_words(p.as_ref())
                ))
            });
            (nodes[i].name.clone(), r)
        })
        .collect();
        let mut outcomes = self.lock_outcomes();
        let mut errs = Vec::new();
        for (name, r) in results {
            if let Err(e) = &r {
                errs.push(format!("{name}: {e}"));
            }
            outcomes.record(&name, r);
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }

    /// [`Cluster::on_nodes`] for a reading that is no step of the op (views, status): the
    /// per-node outcomes recorded so far stay as they were.
    pub fn read_nodes<F>(&self, idx: &[usize], f: F) -> Result<(), String>
    where
        F: Fn(&dyn Remote, &Node) -> Result<(), String> + Sync,
    {
        let before = self.take_outcomes();
        let result = self.on_nodes(idx, f);
        *self.lock_outcomes() = before;
        result
    }

    /// Run the command built for each node on the given nodes in parallel.
    pub fn run_on(&self, idx: &[usize], cmd: impl Fn(&Node) -> Cmd + Sync) -> Result<(), String> {
        self.on_nodes(idx, |r, n| {
            r.exec_ok(&cmd(n)).map(|_| ()).map_err(|e| e.to_string())
        })
    }

    /// Record `begin`, run `step`, record `done` or `failed` (`action`: `inject` or `undo`;
    /// `undo_with`: the verb that undoes an inject, `None` for undos and one-shot faults).
    pub fn journaled<T>(
        &mut self,
        action: &str,
        f: &str,
        detail: Value,
        undo_with: Option<&str>,
        step: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut record = json!({
            "time": chrono::Utc::now().to_rfc3339(),
            "action": action,
            "f": f,
            "detail": detail,
            "undo_with": undo_with,
            "event": "begin",
        });
        if let Some(sink) = self.cfg.journal.as_mut() {
            sink(&record);
        }
        // This step's own per-node outcomes go into its record; the op's keep accumulating.
        let before = self.take_outcomes();
        let result = step(self);
        let mine = self.take_outcomes();
        {
            let mut all = self.lock_outcomes();
            *all = before;
            all.merge(mine.clone());
        }
        if let Some(sink) = self.cfg.journal.as_mut() {
            record["time"] = chrono::Utc::now().to_rfc3339().into();
            if !mine.is_empty() {
                record[crate::faults::APPLIED_KEY] = json!(mine.applied);
                record[crate::faults::FAILED_KEY] = json!(mine.failed);
            }
            match &result {
                Ok(_) => record["event"] = "done".into(),
                Err(e) => {
                    record["event"] = "failed".into();
                    record["error"] = e.clone().into();
                }
            }
            sink(&record);
        }
        result
    }

    /// The nodes an op value naming targets hits (null: one node); any other value is an
    /// error naming it, never a fallback.
    pub fn targets(&mut self, value: &Value) -> Result<Vec<usize>, String> {
        self.choose_targets(Targets::of_value(value)?)
    }

    /// The system's current primaries (asked of it), as node names.
    pub fn primaries(&self) -> Result<Vec<String>, PrimariesError> {
        let db = self.cfg.db.clone();
        let p = db.as_primaries().ok_or_else(|| PrimariesError::NotServed {
            system: db.name().to_string(),
        })?;
        Ok(p.primaries(&self.cfg.remotes, &self.cfg.nodes)?)
    }

    /// The nodes `t` picks now (asking the system for its primaries where `t` names them).
    pub fn choose_targets(&mut self, t: Targets) -> Result<Vec<usize>, String> {
        let primaries = match t {
            Targets::Primaries => self.primaries().map_err(|e| e.to_string())?,
            // No primaries ability, or no answer: one random node instead.
            Targets::PrimariesOrOne => self.primaries().unwrap_or_default(),
            _ => Vec::new(),
        };
        let names = self.names();
        let chosen = select_targets_with(t, &names, &primaries, &mut self.cfg.rng);
        if chosen.is_empty() {
            return Err(format!("targets {:?} chose no node", t.as_str()));
        }
        Ok(chosen.iter().filter_map(|n| self.index_of(n)).collect())
    }

    /// Run one heal step of `shakedown heal`, then log what it did per node: `done(node)` says
    /// what success means there (`None`: nothing worth saying), failures are logged as
    /// "`what`: why".
    pub fn heal_step(
        &mut self,
        log: &mut HealLog,
        what: &str,
        step: impl FnOnce(&mut Cluster) -> Result<(), String>,
        done: impl Fn(&str) -> Option<String>,
    ) {
        self.take_outcomes();
        let result = step(self);
        let outcomes: NodeOutcomes = self.take_outcomes();
        for n in &outcomes.applied {
            if let Some(text) = done(n) {
                log.entry(n.clone()).or_default().done.push(text);
            }
        }
        for (n, why) in &outcomes.failed {
            log.entry(n.clone())
                .or_default()
                .failed
                .push(format!("{what}: {why}"));
        }
        if let Err(e) = result
            && outcomes.failed.is_empty()
        {
            // A failure no node was blamed for (e.g. the journal could not be written).
            log.entry(String::new())
                .or_default()
                .failed
                .push(format!("{what}: {e}"));
        }
    }
}
