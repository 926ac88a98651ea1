//! The disk faults' node side (`start-disk-fault` / `stop-disk-fault`): tell the lose-unsynced
//! layer under each target's data directory to fail or slow its writes and fsyncs (`inject`),
//! and to stop (`clear`). The layer is mounted for the whole run when the schedule has a disk
//! fault (`spec::FaultSpec::needs_data_layer`); the database keeps running through the fault
//! and sees the errors as a real faulty device would show them.
//!
//! Owns the script and the fault's state. The fault's shape and validation are pure
//! (`faults::disk`); what the layer does with it is `lazyfs::inject`.

use super::cluster::Cluster;
use super::fault::{Fault, FaultError, active_line, nodes_of};
use crate::control::{Cmd, Remote};
use crate::db::layer::DataLayer;
use crate::faults::disk::DiskFault;
use crate::faults::{Verb, verb};
use rand::RngExt;
use serde_json::{Value, json};
use std::collections::BTreeSet;

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

/// The disk fault, the nodes whose layer it made faulty, and the layer a journal named (when
/// healing for an earlier controller).
#[derive(Debug, Default)]
pub struct Disk {
    disk_faulted: BTreeSet<String>,
    journal_layer: Option<DataLayer>,
}

impl Disk {
    /// `start-disk-fault` (`{"targets", …DiskFault}`): the targets' layers start failing or
    /// slowing operations. The completion says, per node, what the layer took.
    fn start(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, String> {
        let db = cx.db();
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
        fault.seed = cx.rng().random();
        let targets = crate::faults::Targets::of_value(&value["targets"])?;
        let idx = cx.choose_targets(targets)?;
        let names = cx.node_names(&idx);
        self.disk_faulted.extend(names.iter().cloned());
        let command = format!(
            "inject {}",
            serde_json::to_string(&fault).map_err(|e| e.to_string())?
        );
        let detail = json!({ "nodes": names, "fault": fault, "layer": layer });
        cx.journaled(
            "inject",
            verb::START_DISK_FAULT,
            detail.clone(),
            Some(verb::STOP_DISK_FAULT),
            |cx| cx.on_nodes(&idx, |r, _| ctl(r, &layer, &[command.as_str()]).map(|_| ())),
        )?;
        Ok(json!({ "nodes": detail["nodes"], "fault": fault.describe() }))
    }

    /// `stop-disk-fault`: every layer this fault made faulty works normally again, and the
    /// database starts on those nodes if an error made it exit (`Kill::start` is idempotent).
    /// The layer is the journal's when one was adopted, else this run's.
    fn stop(&mut self, cx: &mut Cluster) -> Result<Vec<String>, String> {
        let Some(layer) = self.journal_layer.clone().or_else(|| cx.db().data_layer()) else {
            return Ok(std::mem::take(&mut self.disk_faulted).into_iter().collect());
        };
        let db = cx.db();
        let kill = db.as_kill();
        let cluster = cx.nodes().to_vec();
        let idx = cx.idx_of(&self.disk_faulted);
        cx.journaled(
            "undo",
            verb::STOP_DISK_FAULT,
            json!({ "nodes": self.disk_faulted }),
            None,
            |cx| {
                cx.on_nodes(&idx, |r, node| {
                    clear(r, &layer)?;
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
}

impl Fault for Disk {
    fn name(&self) -> &'static str {
        "disk"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::StartDiskFault, Verb::StopDiskFault]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        Ok(match v {
            Verb::StartDiskFault => self.start(cx, value)?,
            _ => json!({ "nodes": self.stop(cx)? }),
        })
    }

    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        if self.disk_faulted.is_empty() {
            return Ok(());
        }
        self.stop(cx).map(|_| ())
    }

    fn heal_what(&self) -> &'static str {
        "stop disk fault"
    }

    fn active(&self) -> Option<String> {
        active_line("disk fault", &self.disk_faulted)
    }

    /// The journal names the layer, whatever the heal's --db flags say; without it nothing
    /// can be cleared, and nothing is adopted.
    fn adopt(&mut self, outstanding: &[Value]) -> Vec<String> {
        let layer: Option<DataLayer> = outstanding
            .iter()
            .filter(|r| r["f"] == verb::START_DISK_FAULT)
            .find_map(|r| serde_json::from_value(r["detail"]["layer"].clone()).ok());
        let Some(layer) = layer else {
            return Vec::new();
        };
        self.journal_layer = Some(layer);
        let nodes = nodes_of(outstanding, Verb::StartDiskFault);
        self.disk_faulted.extend(nodes.iter().cloned());
        nodes
    }

    fn healed(&self, _: &str) -> String {
        "cleared the disk fault of its lazyfs layer (per the journal)".to_string()
    }
}
