//! The `delay` fault: `start-delay` holds the targets' outgoing packets for the fault's delay ±
//! jitter (with a `reorder` fraction sent at once, a `duplicate` fraction sent twice), served by
//! the kernel's netem where the node has it and by the tool's NFQUEUE delayer where it does not
//! (`backend`: `auto`, `netem`, `nfqueue`); `stop-delay` removes both kinds from every node.
//!
//! Owns these ops' values: the start's completion names the backend that served each node
//! (`backend`, one name when all agree, else per node), the stop's carries each delayer's own
//! summary (packets delayed, how late they went out). A kernel without netem asked for netem
//! on every target is a refusal (nothing was touched). Does not own the node commands
//! (`packet`), the delayer program (`crate::netdelay`) or the parameters (`faults::packet`).

use super::cluster::{Cluster, HealLog};
use super::fault::{Fault, FaultError, JournalView, active_line};
use super::packet;
use crate::faults::packet::DelayParams;
use crate::faults::{Verb, verb};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// The delay fault and the nodes it delays.
#[derive(Debug, Default)]
pub struct Delay {
    delayed: BTreeSet<String>,
}

impl Delay {
    fn start(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, FaultError> {
        let p = DelayParams::from_value(value)?;
        let idx = cx.choose_targets(p.targets)?;
        let names = cx.node_names(&idx);
        self.delayed.extend(names.iter().cloned());
        let seed: u64 = rand::RngExt::random(cx.rng());
        let mut detail = json!({
            "nodes": names,
            "delay_ms": p.delay_ms,
            "jitter_ms": p.jitter_ms,
            "reorder": p.reorder,
            "backend": p.backend.name(),
            "seed": seed,
        });
        if p.duplicate > 0.0 {
            detail["duplicate"] = json!(p.duplicate);
        }
        let exe = cx.cfg.helper_exe.clone();
        let served: Mutex<BTreeMap<String, &'static str>> = Mutex::new(BTreeMap::new());
        let result = cx.journaled(
            "inject",
            verb::START_DELAY,
            detail.clone(),
            Some(verb::STOP_DELAY),
            |cx| {
                cx.on_nodes(&idx, |r, node| {
                    let b = packet::start_delay(r, &node.host, &p, exe.as_deref(), seed)
                        .map_err(|e| e.to_string())?;
                    served
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(node.name.clone(), b.name());
                    Ok(())
                })
            },
        );
        match result {
            // Say it once, up front, not buried in one message per node.
            Err(e) if e.contains(packet::NETEM_UNAVAILABLE) => Err(FaultError::Refused(format!(
                "{} (tried on {}: tc says the qdisc kind netem is unknown); use backend = \"auto\" or \"nfqueue\" for the tool's own delayer, or load the sch_netem module",
                packet::NETEM_UNAVAILABLE,
                names.join(", ")
            ))),
            Err(e) => Err(e.into()),
            Ok(()) => {
                let served = served.into_inner().unwrap_or_else(|e| e.into_inner());
                let kinds: BTreeSet<&str> = served.values().copied().collect();
                detail["backend"] = match kinds.iter().next() {
                    Some(one) if kinds.len() == 1 => json!(one),
                    _ => json!(served),
                };
                Ok(detail)
            }
        }
    }

    /// Undo every delay (netem qdisc, queue rule, delayer) on every node.
    fn stop(&mut self, cx: &mut Cluster) -> Result<Value, String> {
        let all = cx.all_idx();
        let active = self.delayed.clone();
        let summaries: Mutex<BTreeMap<String, Value>> = Mutex::new(BTreeMap::new());
        cx.journaled(
            "undo",
            verb::STOP_DELAY,
            json!({ "nodes": active }),
            None,
            |cx| {
                cx.on_nodes(&all, |r, node| {
                    let removed = packet::stop_delay(r, &node.host).map_err(|e| e.to_string())?;
                    if let Some(s) = removed.delayer {
                        summaries
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(node.name.clone(), s);
                    }
                    Ok(())
                })
            },
        )?;
        self.delayed.clear();
        let summaries = summaries.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut v = json!({ "nodes": active });
        if !summaries.is_empty() {
            v["delayer"] = json!(summaries);
        }
        Ok(v)
    }
}

impl Fault for Delay {
    fn name(&self) -> &'static str {
        "delay"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::StartDelay, Verb::StopDelay]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        match v {
            Verb::StartDelay => self.start(cx, value),
            _ => Ok(self.stop(cx)?),
        }
    }

    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        if self.delayed.is_empty() {
            return Ok(());
        }
        self.stop(cx).map(|_| ())
    }

    fn heal_what(&self) -> &'static str {
        "stop delay"
    }

    fn active(&self) -> Option<String> {
        active_line("delay", &self.delayed)
    }

    /// Every node, journal or not; the line names what the survey found.
    fn heal_from_journal(&mut self, cx: &mut Cluster, j: &JournalView<'_>, log: &mut HealLog) {
        cx.heal_step(
            log,
            "remove the delay",
            |cx| self.stop(cx).map(|_| ()),
            |n| {
                let f = j.found(n);
                let mut parts = Vec::new();
                if let Some(kind) = f.qdisc.filter(|k| k != "tbf") {
                    parts.push(format!("removed tc qdisc {kind} ({})", packet::TC_HANDLE));
                }
                match f.delay {
                    (0, false) => {}
                    (rules, running) => parts.push(format!(
                        "removed {rules} delay queue rule(s){}",
                        if running {
                            " and stopped the packet delayer"
                        } else {
                            ""
                        }
                    )),
                }
                (!parts.is_empty()).then(|| parts.join(", "))
            },
        );
    }
}
