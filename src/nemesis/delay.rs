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
use std::sync::atomic::{AtomicBool, Ordering};

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
        // A node whose kernel has no netem (`PacketError::NetemUnavailable`), decided from the
        // error's kind, not its words.
        let no_netem = AtomicBool::new(false);
        let result = cx.journaled(
            "inject",
            verb::START_DELAY,
            detail.clone(),
            Some(verb::STOP_DELAY),
            |cx| {
                cx.on_nodes(&idx, |r, node| {
                    let b = packet::start_delay(r, &node.host, &p, exe.as_deref(), seed).map_err(
                        |e| {
                            if matches!(e, packet::PacketError::NetemUnavailable { .. }) {
                                no_netem.store(true, Ordering::Relaxed);
                            }
                            e.to_string()
                        },
                    )?;
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
            Err(_) if no_netem.load(Ordering::Relaxed) => Err(FaultError::Refused(format!(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Completion;
    use crate::control::canned::{Canned, output};
    use crate::control::{ExecOutput, Remote};
    use crate::db::Abilities;
    use crate::nemesis::{Nemesis, NemesisConfig};
    use crate::node::Node;
    use rand::SeedableRng;
    use std::sync::Arc;

    struct NoAbilities;
    impl Abilities for NoAbilities {
        fn name(&self) -> &str {
            "memdb"
        }
    }

    fn start_delay_where_tc_says(stderr: &'static str) -> Completion {
        let nodes: Vec<Node> = (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.0.0.{i}"),
            })
            .collect();
        let remotes: Vec<Arc<dyn Remote>> = nodes
            .iter()
            .map(|n| {
                // Every command exits 2 with `stderr`, as tc does when it refuses.
                Arc::new(Canned::new(n.name.clone(), move |_| ExecOutput {
                    stderr: stderr.to_string(),
                    ..output(2, "")
                })) as Arc<dyn Remote>
            })
            .collect();
        let mut n = Nemesis::new(NemesisConfig {
            helper_exe: None,
            nodes,
            remotes,
            db: Arc::new(NoAbilities),
            partition: Default::default(),
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(1),
            journal: None,
        });
        n.invoke(
            verb::START_DELAY,
            &json!({"delay_ms": 50, "backend": "netem", "targets": "all"}),
        )
    }

    #[test]
    fn a_kernel_without_netem_is_a_refusal_said_once_and_other_tc_errors_are_unknown() {
        match start_delay_where_tc_says("Error: Specified qdisc kind is unknown.\n") {
            Completion::Fail { error, value } => {
                assert!(error.starts_with(packet::NETEM_UNAVAILABLE), "{error}");
                assert!(error.contains("tried on n1, n2, n3"), "{error}");
                assert_eq!(value[crate::faults::REFUSED_KEY], true, "{value}");
            }
            other => panic!("not a refusal: {other:?}"),
        }
        match start_delay_where_tc_says("RTNETLINK answers: Operation not permitted\n") {
            Completion::Info { error } => {
                assert!(!error.contains(packet::NETEM_UNAVAILABLE), "{error}")
            }
            other => panic!("not unknown: {other:?}"),
        }
    }
}
