//! The packet faults on the nemesis — `start-loss` / `stop-loss` (iptables `statistic` drops of
//! packets from the other nodes), `start-bandwidth` / `stop-bandwidth` (tc tbf), and the delay:
//! `start-delay` holds the targets' outgoing packets for the
//! fault's delay ± jitter (with a `reorder` fraction sent at once), served by the kernel's netem
//! where the node has it and by the tool's NFQUEUE delayer where it does not (`backend`:
//! `auto`, `netem`, `nfqueue`); `stop-delay` removes both kinds from every node.
//!
//! Owns these ops' values, and [`Nemesis::heal_packets`]. For the delay: the start's completion names the backend that served each node
//! (`backend`, one name when all agree, else per node), the stop's carries each delayer's own
//! summary (packets delayed, how late they went out). Does not own the node commands
//! (`packet`), the delayer program (`crate::netdelay`) or the parameters (`faults::packet`).

use super::{Nemesis, packet};
use crate::faults::packet::{BandwidthParams, DelayParams, LossParams};
use crate::faults::verb;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

impl Nemesis {
    pub(super) fn start_delay(&mut self, value: &Value) -> Result<Value, String> {
        let p = DelayParams::from_value(value)?;
        let idx = self.choose_targets(p.targets)?;
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
        if p.duplicate > 0.0 {
            detail["duplicate"] = json!(p.duplicate);
        }
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

    pub(super) fn start_loss(&mut self, value: &Value) -> Result<Value, String> {
        let p = LossParams::from_value(value)?;
        let idx = self.choose_targets(p.targets)?;
        let names = self.node_names(&idx);
        let chain = self.cfg.partition.chain.clone();
        // Each target drops packets from every other node's address (never the controller's).
        let peers: BTreeMap<String, Vec<String>> = names
            .iter()
            .map(|me| {
                let others: BTreeSet<String> =
                    self.names().into_iter().filter(|n| n != me).collect();
                (me.clone(), self.hosts_of(&others))
            })
            .collect();
        self.lossy.extend(names.iter().cloned());
        let detail = json!({ "nodes": names, "probability": p.probability });
        self.journaled(
            "inject",
            verb::START_LOSS,
            detail.clone(),
            Some(verb::STOP_LOSS),
            |n| {
                n.on_nodes(&idx, |r, node| {
                    packet::start_loss(r, &chain, &peers[&node.name], p.probability)
                        .map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(detail)
    }

    pub(super) fn stop_loss(&mut self) -> Result<Value, String> {
        let chain = self.cfg.partition.chain.clone();
        let (all, lossy) = (self.all_idx(), self.lossy.clone());
        self.journaled(
            "undo",
            verb::STOP_LOSS,
            json!({ "nodes": lossy }),
            None,
            |n| {
                n.on_nodes(&all, |r, _| {
                    packet::stop_loss(r, &chain)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            },
        )?;
        self.lossy.clear();
        Ok(json!({ "nodes": lossy }))
    }

    pub(super) fn start_bandwidth(&mut self, value: &Value) -> Result<Value, String> {
        let p = BandwidthParams::from_value(value)?;
        let idx = self.choose_targets(p.targets)?;
        let names = self.node_names(&idx);
        self.shaped.extend(names.iter().cloned());
        let detail = json!({ "nodes": names, "rate_kbit": p.rate_kbit });
        self.journaled(
            "inject",
            verb::START_BANDWIDTH,
            detail.clone(),
            Some(verb::STOP_BANDWIDTH),
            |n| {
                n.on_nodes(&idx, |r, node| {
                    packet::start_bandwidth(r, &node.host, p.rate_kbit).map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(detail)
    }

    /// Undo `bandwidth` (the tool's tbf) on every node.
    pub(super) fn stop_bandwidth(&mut self) -> Result<Value, String> {
        let all = self.all_idx();
        let active = self.shaped.clone();
        self.journaled(
            "undo",
            verb::STOP_BANDWIDTH,
            json!({ "nodes": active }),
            None,
            |n| {
                n.on_nodes(&all, |r, node| {
                    packet::clear_qdisc(r, &node.host, Some("tbf"))
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            },
        )?;
        self.shaped.clear();
        Ok(json!({ "nodes": active }))
    }

    /// Undo every packet fault on every node, whether or not this nemesis applied it (for a
    /// controller recovering from a crashed one): loss rules, the tool's tbf and netem qdiscs.
    pub fn heal_packets(&mut self) -> Result<(), String> {
        let mut errs = Vec::new();
        for r in [
            self.stop_loss().map(|_| ()),
            self.stop_bandwidth().map(|_| ()),
            self.stop_delay().map(|_| ()),
        ] {
            if let Err(e) = r {
                errs.push(e);
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }
}
