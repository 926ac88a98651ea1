//! The `power-loss` and `os-crash` faults (one mechanism, two names: a kernel crash loses the
//! page cache as a power failure does): SIGKILL the DB on the targets and order the
//! lose-unsynced layer under its data directory (`db::layer::DataLayer`) to drop every write
//! not fsynced; `power-on` / `reboot` start it again. Does not own the layer's scripts
//! (`db::layer`).

use super::cluster::{Cluster, HealLog};
use super::fault::{Fault, FaultError, JournalView, nodes_of};
use crate::faults::{Verb, verb};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The power faults, and the nodes whose power they cut, each with the verb that undoes that
/// cut (`power-on`, `reboot`): a node cut both ways owes both.
#[derive(Debug, Default)]
pub struct Power {
    powered_off: BTreeSet<(String, &'static str)>,
}

impl Power {
    /// Power failure (`f` = `power-loss`, undone by `undo` = `power-on`) or OS crash
    /// (`os-crash`, `reboot`) on the targets (`{"targets", "torn"}`): SIGKILL the DB, then order
    /// the lose-unsynced layer under its data directory to drop every write not fsynced. The
    /// completion value has each node's loss report (`lost`: files rolled back, writes dropped).
    fn cut(
        &mut self,
        cx: &mut Cluster,
        f: &'static str,
        undo: &'static str,
        value: &Value,
    ) -> Result<Value, String> {
        let db = cx.db();
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
        let idx = cx.choose_targets(targets)?;
        let names = cx.node_names(&idx);
        self.powered_off
            .extend(names.iter().map(|n| (n.clone(), undo)));
        let detail = json!({ "nodes": names, "torn": torn, "layer": layer });
        let reports = std::sync::Mutex::new(serde_json::Map::new());
        cx.journaled("inject", f, detail.clone(), Some(undo), |cx| {
            cx.on_nodes(&idx, |r, node| {
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

    /// Start the DB on every node (idempotent) after power losses and OS crases, journaled as
    /// `f` (`power-on` or `reboot`; `None`: the verb an outstanding cut owes); with the layer, a
    /// stale mount is remounted first (the system's `start`). Cuts owed another verb are
    /// journaled undone by it too, so `shakedown heal` finds none of them outstanding.
    fn power_on(&mut self, cx: &mut Cluster, f: Option<Verb>) -> Result<Vec<String>, String> {
        let owed: BTreeSet<&'static str> = self.powered_off.iter().map(|(_, u)| *u).collect();
        let f: &'static str = match f {
            Some(Verb::Reboot) => verb::REBOOT,
            Some(_) => verb::POWER_ON,
            None => owed.iter().next().copied().unwrap_or(verb::POWER_ON),
        };
        let db = cx.db();
        let Some(kill) = db.as_kill() else {
            return Ok(vec![]);
        };
        let cluster = cx.nodes().to_vec();
        let all = cx.all_idx();
        let off: BTreeSet<String> = self.powered_off.iter().map(|(n, _)| n.clone()).collect();
        cx.journaled("undo", f, json!({ "powered_off": off }), None, |cx| {
            cx.on_nodes(&all, |r, node| {
                kill.start(r, node, &cluster).map_err(|e| e.to_string())
            })
        })?;
        for other in owed.into_iter().filter(|v| *v != f) {
            cx.journaled(
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
}

impl Fault for Power {
    fn name(&self) -> &'static str {
        "power-loss"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::PowerLoss, Verb::PowerOn, Verb::OsCrash, Verb::Reboot]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        Ok(match v {
            Verb::PowerLoss => self.cut(cx, verb::POWER_LOSS, verb::POWER_ON, value)?,
            Verb::OsCrash => self.cut(cx, verb::OS_CRASH, verb::REBOOT, value)?,
            _ => json!({ "nodes": self.power_on(cx, Some(v))? }),
        })
    }

    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        if self.powered_off.is_empty() {
            return Ok(());
        }
        self.power_on(cx, None).map(|_| ())
    }

    fn heal_what(&self) -> &'static str {
        "power on"
    }

    fn active(&self) -> Option<String> {
        let lines: Vec<String> = [
            (verb::POWER_ON, verb::POWER_LOSS),
            (verb::REBOOT, verb::OS_CRASH),
        ]
        .into_iter()
        .filter_map(|(undo, kind)| {
            let nodes: Vec<&str> = self
                .powered_off
                .iter()
                .filter(|(_, u)| *u == undo)
                .map(|(n, _)| n.as_str())
                .collect();
            (!nodes.is_empty()).then(|| format!("{kind} {}", nodes.join(",")))
        })
        .collect();
        (!lines.is_empty()).then(|| lines.join(" "))
    }

    fn adopt(&mut self, outstanding: &[Value]) -> Vec<String> {
        let lost = nodes_of(outstanding, Verb::PowerLoss);
        let crashed = nodes_of(outstanding, Verb::OsCrash);
        self.powered_off
            .extend(lost.iter().map(|n| (n.clone(), verb::POWER_ON)));
        self.powered_off
            .extend(crashed.iter().map(|n| (n.clone(), verb::REBOOT)));
        let mut all: Vec<String> = lost.into_iter().chain(crashed).collect();
        all.sort();
        all.dedup();
        all
    }

    fn healed(&self, db_name: &str) -> String {
        format!(
            "restarted {db_name} (power lost per the journal; its lazyfs layer remounted first if stale)"
        )
    }

    /// Remount a stale layer (its process died with the controller's run) over its files
    /// before the DB starts again; the line says which cut each node had.
    fn heal_from_journal(&mut self, cx: &mut Cluster, j: &JournalView<'_>, log: &mut HealLog) {
        let powered_off = self.adopt(j.outstanding);
        if powered_off.is_empty() {
            return;
        }
        // The journal names the layer, whatever the heal's --db flags say.
        let layer: Option<crate::db::layer::DataLayer> = j
            .outstanding
            .iter()
            .filter(|r| r["f"] == verb::POWER_LOSS || r["f"] == verb::OS_CRASH)
            .find_map(|r| serde_json::from_value(r["detail"]["layer"].clone()).ok());
        if let Some(layer) = layer {
            let idx = cx.idx_of(&powered_off);
            cx.heal_step(
                log,
                "remount the lose-unsynced layer",
                |cx| {
                    cx.on_nodes(&idx, |r, _| {
                        layer.mount(r, false).map_err(|e| e.to_string())
                    })
                },
                |_| None,
            );
        }
        let crashed = nodes_of(j.outstanding, Verb::OsCrash);
        let db_name = j.db_name;
        cx.heal_step(
            log,
            "power on",
            |cx| self.heal(cx),
            |n| {
                powered_off.iter().any(|k| k == n).then(|| {
                    let what = if crashed.iter().any(|k| k == n) {
                        "OS crashed"
                    } else {
                        "power lost"
                    };
                    format!("restarted {db_name} ({what} per the journal; its lazyfs layer remounted first if stale)")
                })
            },
        );
    }
}
