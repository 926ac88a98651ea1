//! The `power-loss` and `os-crash` faults (one mechanism, two names: a kernel crash loses the
//! page cache as a power failure does): SIGKILL the DB on the targets and order the
//! lose-unsynced layer under its data directory (`db::layer::DataLayer`) to drop every write
//! not fsynced; `power-on` / `reboot` start it again. Does not own the layer's scripts
//! (`db::layer`).

use crate::faults::verb;
use serde_json::{Value, json};
use std::collections::BTreeSet;

impl super::Nemesis {
    /// Power failure (`f` = `power-loss`, undone by `undo` = `power-on`) or OS crash
    /// (`os-crash`, `reboot`) on the targets (`{"targets", "torn"}`): SIGKILL the DB, then order
    /// the lose-unsynced layer under its data directory to drop every write not fsynced. The
    /// completion value has each node's loss report (`lost`: files rolled back, writes dropped).
    pub(super) fn power_loss(
        &mut self,
        f: &'static str,
        undo: &'static str,
        value: &Value,
    ) -> Result<Value, String> {
        let db = self.cfg.db.clone();
        let kill = db
            .as_kill()
            .ok_or_else(|| format!("{} cannot be killed", db.name()))?;
        let layer = db.data_layer().ok_or_else(|| {
            format!(
                "{}'s data directory is not on the lose-unsynced layer in this run",
                db.name()
            )
        })?;
        let targets = crate::faults::Targets::of_value(&value["targets"])?;
        let torn = value["torn"].as_bool().unwrap_or(false);
        let idx = self.choose_targets(targets)?;
        let names = self.node_names(&idx);
        self.powered_off
            .extend(names.iter().map(|n| (n.clone(), undo)));
        let detail = json!({ "nodes": names, "torn": torn, "layer": layer });
        let reports = std::sync::Mutex::new(serde_json::Map::new());
        self.journaled("inject", f, detail.clone(), Some(undo), |n| {
            n.on_nodes(&idx, |r, node| {
                kill.kill(r, node).map_err(|e| e.to_string())?;
                let lost = layer.lose(r, torn).map_err(|e| e.to_string())?;
                reports
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(node.name.clone(), lost);
                Ok(())
            })
        })?;
        let mut out = detail;
        out["lost"] = Value::Object(reports.into_inner().unwrap_or_else(|p| p.into_inner()));
        Ok(out)
    }

    /// Start the DB on every node (idempotent) after power losses and OS crashes; with the
    /// layer, a stale mount is remounted first (the system's `start`).
    pub fn power_on(&mut self) -> Result<Vec<String>, String> {
        self.power_on_as(None)
    }

    /// [`Self::power_on`] journaled as `f` (`power-on` or `reboot`; `None`: the verb an
    /// outstanding cut owes). Cuts owed another verb are journaled undone by it too, so
    /// `shakedown heal` finds none of them outstanding.
    pub(super) fn power_on_as(&mut self, f: Option<&str>) -> Result<Vec<String>, String> {
        let owed: BTreeSet<&'static str> = self.powered_off.iter().map(|(_, u)| *u).collect();
        let f: &'static str = match f {
            Some(v) if v == verb::REBOOT => verb::REBOOT,
            Some(_) => verb::POWER_ON,
            None => owed.iter().next().copied().unwrap_or(verb::POWER_ON),
        };
        let db = self.cfg.db.clone();
        let Some(kill) = db.as_kill() else {
            return Ok(vec![]);
        };
        let cluster = self.cfg.nodes.clone();
        let all = self.all_idx();
        let off: BTreeSet<String> = self.powered_off.iter().map(|(n, _)| n.clone()).collect();
        self.journaled("undo", f, json!({ "powered_off": off }), None, |n| {
            n.on_nodes(&all, |r, node| {
                kill.start(r, node, &cluster).map_err(|e| e.to_string())
            })
        })?;
        for other in owed.into_iter().filter(|v| *v != f) {
            self.journaled(
                "undo",
                other,
                json!({ "powered_off": off, "by": f }),
                None,
                |_| Ok(()),
            )?;
        }
        self.powered_off.clear();
        Ok(off.into_iter().collect())
    }

    /// Remember nodes whose power an earlier controller cut (from its journal), with the verb
    /// that undoes the cut (`power-on`, `reboot`).
    pub fn adopt_powered_off(
        &mut self,
        nodes: impl IntoIterator<Item = String>,
        undo: &'static str,
    ) {
        self.powered_off
            .extend(nodes.into_iter().map(|n| (n, undo)));
    }
}
