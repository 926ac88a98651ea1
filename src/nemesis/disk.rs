//! The disk faults' node side (`start-disk-fault` / `stop-disk-fault`): tell the lose-unsynced
//! layer under each target's data directory to fail or slow its writes and fsyncs (`inject`),
//! and to stop (`clear`). The layer is mounted for the whole run when the schedule has a disk
//! fault (`spec::FaultSpec::needs_data_layer`); the database keeps running through the fault
//! and sees the errors as a real faulty device would show them.
//!
//! Owns the script and the `Nemesis` methods. The fault's shape and validation are pure
//! (`faults::disk`); what the layer does with it is `lazyfs::inject`.

use super::Nemesis;
use crate::control::{Cmd, Remote};
use crate::db::layer::DataLayer;
use crate::faults::disk::DiskFault;
use crate::faults::verb;
use rand::RngExt;
use serde_json::{Value, json};

/// Send one command (`$3…`, joined by the layer's CLI) to the layer on data dir `$2` with the
/// binary `$1`. A layer that is not running is not faulty: `clear` then succeeds.
const CTL_SCRIPT: &str = r#"exe="$1"; d="$2"; shift 2
if [ "$1" = clear ] && ! [ -S "$d.lazyfs.sock" ]; then echo '{"cleared":"no layer"}'; exit 0; fi
"$exe" lazyfs ctl --control "$d.lazyfs.sock" "$@"
"#;

fn ctl(remote: &dyn Remote, layer: &DataLayer, words: &[&str]) -> Result<Value, String> {
    let args = [layer.exe.as_str(), layer.data_dir.as_str()]
        .into_iter()
        .chain(words.iter().copied());
    let out = remote
        .exec_ok(&Cmd::script(CTL_SCRIPT, args).sudo(true))
        .map_err(|e| {
            format!(
                "telling the lazyfs layer on {} to {}: {e}",
                layer.data_dir, words[0]
            )
        })?;
    Ok(serde_json::from_str(out.trim()).unwrap_or_else(|_| out.trim().into()))
}

/// Clear the disk fault of the layer on `layer.data_dir`.
fn clear(remote: &dyn Remote, layer: &DataLayer) -> Result<Value, String> {
    ctl(remote, layer, &["clear"])
}

impl Nemesis {
    /// `start-disk-fault` (`{"targets", …DiskFault}`): the targets' layers start failing or
    /// slowing operations. The completion says, per node, what the layer took.
    pub(super) fn start_disk_fault(&mut self, value: &Value) -> Result<Value, String> {
        let db = self.cfg.db.clone();
        let layer = db.data_layer().ok_or_else(|| {
            format!(
                "{}'s data directory is not on the lose-unsynced layer in this run",
                db.name()
            )
        })?;
        let mut fault = DiskFault::from_value(&{
            let mut v = value.clone();
            if let Some(m) = v.as_object_mut() {
                m.remove("targets");
            }
            v
        })?;
        fault.seed = self.cfg.rng.random();
        let targets = crate::faults::Targets::of_value(&value["targets"])?;
        let idx = self.choose_targets(targets)?;
        let names = self.node_names(&idx);
        self.disk_faulted.extend(names.iter().cloned());
        let command = format!(
            "inject {}",
            serde_json::to_string(&fault).map_err(|e| e.to_string())?
        );
        let detail = json!({ "nodes": names, "fault": fault, "layer": layer });
        self.journaled(
            "inject",
            verb::START_DISK_FAULT,
            detail.clone(),
            Some(verb::STOP_DISK_FAULT),
            |n| n.on_nodes(&idx, |r, _| ctl(r, &layer, &[command.as_str()]).map(|_| ())),
        )?;
        Ok(json!({ "nodes": detail["nodes"], "fault": fault.describe() }))
    }

    /// `stop-disk-fault`: every layer this nemesis made faulty works normally again, and the
    /// database starts on those nodes if an error made it exit (`Kill::start` is idempotent).
    pub(super) fn stop_disk_fault(&mut self) -> Result<Vec<String>, String> {
        match self.cfg.db.data_layer() {
            Some(layer) => self.stop_disk_fault_on(&layer),
            None => Ok(std::mem::take(&mut self.disk_faulted).into_iter().collect()),
        }
    }

    /// `stop-disk-fault` through the layer `layer` names (from the journal when healing).
    pub(super) fn stop_disk_fault_on(&mut self, layer: &DataLayer) -> Result<Vec<String>, String> {
        let db = self.cfg.db.clone();
        let kill = db.as_kill();
        let cluster = self.cfg.nodes.clone();
        let idx: Vec<usize> = self
            .disk_faulted
            .iter()
            .filter_map(|n| self.index_of(n))
            .collect();
        self.journaled(
            "undo",
            verb::STOP_DISK_FAULT,
            json!({ "nodes": self.disk_faulted }),
            None,
            |n| {
                n.on_nodes(&idx, |r, node| {
                    clear(r, layer)?;
                    // A database that crashed on an error starts again on the healed disk.
                    match &kill {
                        Some(k) => k.start(r, node, &cluster).map_err(|e| e.to_string()),
                        None => Ok(()),
                    }
                })
            },
        )?;
        Ok(std::mem::take(&mut self.disk_faulted).into_iter().collect())
    }

    /// Remember nodes whose layer an earlier controller made faulty (from its journal).
    pub fn adopt_disk_faulted(&mut self, nodes: impl IntoIterator<Item = String>) {
        self.disk_faulted.extend(nodes);
    }

    /// Whether some node's layer is faulty.
    pub(super) fn has_disk_fault(&self) -> bool {
        !self.disk_faulted.is_empty()
    }
}
