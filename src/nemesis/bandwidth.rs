//! The `bandwidth` fault: limit the targets' egress bandwidth (`start-bandwidth`, a tc tbf
//! qdisc under the tool's handle `packet::TC_HANDLE`), and remove it from every node
//! (`stop-bandwidth`).
//!
//! Owns the ops' values; the node commands are `packet`'s, the parameters `faults::packet`'s.

use super::cluster::{Cluster, HealLog};
use super::fault::{Fault, FaultError, JournalView, active_line};
use super::packet;
use crate::faults::packet::BandwidthParams;
use crate::faults::{Verb, verb};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The bandwidth fault and the nodes it shaped.
#[derive(Debug, Default)]
pub struct Bandwidth {
    shaped: BTreeSet<String>,
}

impl Bandwidth {
    fn start(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, String> {
        let p = BandwidthParams::from_value(value)?;
        let idx = cx.choose_targets(p.targets)?;
        let names = cx.node_names(&idx);
        self.shaped.extend(names.iter().cloned());
        let detail = json!({ "nodes": names, "rate_kbit": p.rate_kbit });
        cx.journaled(
            "inject",
            verb::START_BANDWIDTH,
            detail.clone(),
            Some(verb::STOP_BANDWIDTH),
            |cx| {
                cx.on_nodes(&idx, |r, node| {
                    packet::start_bandwidth(r, &node.host, p.rate_kbit).map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(detail)
    }

    /// Remove the tool's tbf on every node.
    fn stop(&mut self, cx: &mut Cluster) -> Result<Value, String> {
        let all = cx.all_idx();
        let active = self.shaped.clone();
        cx.journaled(
            "undo",
            verb::STOP_BANDWIDTH,
            json!({ "nodes": active }),
            None,
            |cx| {
                cx.on_nodes(&all, |r, node| {
                    packet::clear_qdisc(r, &node.host, Some("tbf"))
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            },
        )?;
        self.shaped.clear();
        Ok(json!({ "nodes": active }))
    }
}

impl Fault for Bandwidth {
    fn name(&self) -> &'static str {
        "bandwidth"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::StartBandwidth, Verb::StopBandwidth]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        Ok(match v {
            Verb::StartBandwidth => self.start(cx, value)?,
            _ => self.stop(cx)?,
        })
    }

    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        if self.shaped.is_empty() {
            return Ok(());
        }
        self.stop(cx).map(|_| ())
    }

    fn heal_what(&self) -> &'static str {
        "stop bandwidth"
    }

    fn active(&self) -> Option<String> {
        active_line("bandwidth", &self.shaped)
    }

    /// Every node, journal or not; the line names the tbf the survey found.
    fn heal_from_journal(&mut self, cx: &mut Cluster, j: &JournalView<'_>, log: &mut HealLog) {
        cx.heal_step(
            log,
            "remove the bandwidth limit",
            |cx| self.stop(cx).map(|_| ()),
            |n| {
                j.found(n)
                    .qdisc
                    .filter(|k| k == "tbf")
                    .map(|k| format!("removed tc qdisc {k} ({})", packet::TC_HANDLE))
            },
        );
    }
}
