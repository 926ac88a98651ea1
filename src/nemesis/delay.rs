//! The `delay` fault on the nemesis: `start-delay` holds the targets' outgoing packets for the
//! fault's delay ± jitter (with a `reorder` fraction sent at once), served by the kernel's netem
//! where the node has it and by the tool's NFQUEUE delayer where it does not (`backend`:
//! `auto`, `netem`, `nfqueue`); `stop-delay` removes both kinds from every node.
//!
//! Owns the two ops' values: the start's completion names the backend that served each node
//! (`backend`, one name when all agree, else per node), the stop's carries each delayer's own
//! summary (packets delayed, how late they went out). Does not own the node commands
//! (`packet`), the delayer program (`crate::netdelay`) or the parameters (`faults::packet`).

use super::{Nemesis, packet};
use crate::faults::packet::DelayParams;
use crate::faults::verb;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;

impl Nemesis {
    pub(super) fn start_delay(&mut self, value: &Value) -> Result<Value, String> {
        let p = DelayParams::from_value(value)?;
        let idx = self.targets_named(&p.targets)?;
        let names = self.node_names(&idx);
        self.delayed.extend(names.iter().cloned());
        let seed: u64 = rand::RngExt::random(&mut self.cfg.rng);
        let mut detail = json!({
            "nodes": names,
            "delay_ms": p.delay_ms,
            "jitter_ms": p.jitter_ms,
            "reorder": p.reorder,
            "backend": p.backend.name(),
            "seed": seed,
        });
        let exe = self.cfg.helper_exe.clone();
        let served: Mutex<BTreeMap<String, &'static str>> = Mutex::new(BTreeMap::new());
        let result = self.journaled(
            "inject",
            verb::START_DELAY,
            detail.clone(),
            Some(verb::STOP_DELAY),
            |n| {
                n.on_nodes(&idx, |r, node| {
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
            Err(e) if e.contains(packet::NETEM_UNAVAILABLE) => Err(format!(
                "{} (tried on {}: tc says the qdisc kind netem is unknown); use backend = \"auto\" or \"nfqueue\" for the tool's own delayer, or load the sch_netem module",
                packet::NETEM_UNAVAILABLE,
                names.join(", ")
            )),
            Err(e) => Err(e),
            Ok(()) => {
                let served = served.into_inner().unwrap_or_else(|e| e.into_inner());
                let kinds: std::collections::BTreeSet<&str> = served.values().copied().collect();
                detail["backend"] = match kinds.iter().next() {
                    Some(one) if kinds.len() == 1 => json!(one),
                    _ => json!(served),
                };
                Ok(detail)
            }
        }
    }

    /// Undo every delay (netem qdisc, queue rule, delayer) on every node.
    pub(super) fn stop_delay(&mut self) -> Result<Value, String> {
        let all = self.all_idx();
        let active = self.delayed.clone();
        let summaries: Mutex<BTreeMap<String, Value>> = Mutex::new(BTreeMap::new());
        self.journaled(
            "undo",
            verb::STOP_DELAY,
            json!({ "nodes": active }),
            None,
            |n| {
                n.on_nodes(&all, |r, node| {
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
