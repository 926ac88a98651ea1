//! `shakedown heal` node by node: undo every fault the tool can find on every node it reaches
//! (power losses: restart the DB, remounting a stale lose-unsynced layer first; corrupted files:
//! restart the DB on them),
//! say per node what was actually undone, and name what is left.
//!
//! Owns the sequence of `heal` (survey, partition and loss rules, tc qdiscs, chain, pause, kill,
//! clocks, NTP, ssh-drop), the per-node report ([`HealReport`]) and its wording. A node that
//! cannot be reached is a node whose every step failed (its remote is a
//! `control::Unreachable`), so its undo records in the journal are `failed` and the faults stay
//! outstanding for the next heal. Does not own the undo verbs themselves (the rest of
//! `nemesis`), connecting (`control`) or exit codes (`app`).

use super::{Nemesis, NodeOutcomes, clock, packet};
use crate::control::Cmd;
use crate::faults::verb;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// What `heal` did and did not do.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HealReport {
    /// Lines for people: what the journal asked for, then one line per node.
    pub lines: Vec<String>,
    /// What was left undone, one entry per node and cause; empty = everything healed.
    pub left: Vec<String>,
}

impl HealReport {
    /// Everything the tool could find was undone on every node.
    pub fn complete(&self) -> bool {
        self.left.is_empty()
    }
}

/// Reads, per node, what of the tool's is there before healing: the chain's rules (loss rules
/// counted apart), the delay's queue rules and delayer, and the tool's root qdisc. `$1` chain,
/// `$2` loss comment, `$3` node address, `$4` tc handle, `$5` delay rule comment, `$6` the
/// delayer's files prefix. Prints `chain absent` or `chain <rules> <loss rules>`, `delay <queue
/// rules> <delayer running: 0|1>`, then `qdisc <kind>`.
const SURVEY: &str = concat!(
    packet::iface_sh!(),
    r#"c="$1"; k="$2"; a="$3"; h="$4"; dk="$5"; f="$6"
if r=$(iptables -w -S "$c" 2>/dev/null); then
  all=$(printf '%s\n' "$r" | grep -c '^-A ')
  loss=$(printf '%s\n' "$r" | grep -c -- "--comment $k")
  echo "chain $all $loss"
else
  echo "chain absent"
fi
q=$(iptables -w -S OUTPUT 2>/dev/null | grep -c -F -- "--comment $dk")
pid=$(cat "$f.pid" 2>/dev/null || true)
run=0
if [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q netdelay; then run=1; fi
echo "delay $q $run"
i=$(iface_of "$a")
[ -n "$i" ] || exit 0
tc qdisc show dev "$i" | while read -r q kind handle where _; do
  [ "$q" = qdisc ] && [ "$handle" = "$h" ] && [ "$where" = root ] && echo "qdisc $kind"
done
exit 0
"#
);

/// What the survey found on one node.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Found {
    /// `Some((partition rules, loss rules))` when the chain exists.
    chain: Option<(usize, usize)>,
    /// Kind of the tool's root qdisc, if any.
    qdisc: Option<String>,
    /// The delay's queue rules, and whether its delayer runs.
    delay: (usize, bool),
}

fn parse_survey(out: &str) -> Found {
    let mut found = Found::default();
    for line in out.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["chain", all, loss] => {
                let all: usize = all.parse().unwrap_or(0);
                let loss: usize = loss.parse().unwrap_or(0);
                found.chain = Some((all.saturating_sub(loss), loss));
            }
            ["qdisc", kind] => found.qdisc = Some((*kind).to_string()),
            ["delay", rules, running] => {
                found.delay = (rules.parse().unwrap_or(0), *running == "1");
            }
            _ => {}
        }
    }
    found
}

/// Nodes named by outstanding records of verb `f` (`detail.nodes`, or the keys of
/// `detail.services` / `detail.grudge`).
fn nodes_of(outstanding: &[Value], f: &str) -> Vec<String> {
    let mut v: Vec<String> = outstanding
        .iter()
        .filter(|r| r["f"] == f)
        .flat_map(|r| describe_nodes(&r["detail"]))
        .collect();
    v.sort();
    v.dedup();
    v
}

fn describe_nodes(detail: &Value) -> Vec<String> {
    if let Some(a) = detail["nodes"].as_array() {
        return a
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect();
    }
    if let Some(n) = detail["node"].as_str() {
        return vec![n.to_string()];
    }
    for key in ["grudge", "services"] {
        if let Some(m) = detail[key].as_object() {
            return m.keys().cloned().collect();
        }
    }
    Vec::new()
}

/// One journal record as "kill on n2, n4".
fn describe_record(r: &Value) -> String {
    let f = r["f"].as_str().unwrap_or("?");
    let nodes = describe_nodes(&r["detail"]);
    if nodes.is_empty() {
        f.to_string()
    } else {
        format!("{f} on {}", nodes.join(", "))
    }
}

/// Per node: what was done (in order) and what failed.
#[derive(Default)]
struct NodeLog {
    done: Vec<String>,
    failed: Vec<String>,
}

impl Nemesis {
    /// Run one heal step, then log what it did per node: `done(node)` says what success means
    /// there (`None`: nothing worth saying), failures are logged as "`what`: why".
    fn heal_step(
        &mut self,
        log: &mut BTreeMap<String, NodeLog>,
        what: &str,
        step: impl FnOnce(&mut Nemesis) -> Result<(), String>,
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

    /// Heal every node this nemesis knows (see the module doc). `unreachable` maps the nodes
    /// whose remote is a stand-in to why they were not reached; `outstanding` are the journal's
    /// open inject records (`outstanding_faults`), `journal` its path (for the report).
    pub fn heal_nodes(
        &mut self,
        unreachable: &BTreeMap<String, String>,
        outstanding: &[Value],
        journal: Option<&Path>,
    ) -> HealReport {
        let mut report = HealReport::default();
        let db_name = self.cfg.db.name().to_string();
        let chain = self.cfg.partition.chain.clone();
        match journal {
            Some(path) if outstanding.is_empty() => report.lines.push(format!(
                "journal {}: every fault it records was undone already",
                path.display()
            )),
            Some(path) => report.lines.push(format!(
                "journal {}: in effect when its run stopped: {}",
                path.display(),
                outstanding
                    .iter()
                    .map(describe_record)
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            None => report.lines.push(
                "no journal given: undoing what can be found on the nodes (the tool's iptables chain, tc qdiscs and packet delayer); a killed DB or a stepped clock is only known from a journal"
                    .to_string(),
            ),
        }

        let mut log: BTreeMap<String, NodeLog> = BTreeMap::new();
        let found = std::sync::Mutex::new(BTreeMap::<String, Found>::new());
        let nodes = self.cfg.nodes.clone();
        let all = self.all_idx();
        self.heal_step(
            &mut log,
            "inspect",
            |n| {
                n.on_nodes(&all, |r, node| {
                    let out = r
                        .exec_ok(
                            &Cmd::script(
                                SURVEY,
                                [
                                    chain.as_str(),
                                    packet::LOSS_COMMENT,
                                    node.host.as_str(),
                                    packet::TC_HANDLE,
                                    packet::DELAY_COMMENT,
                                    packet::DELAYER_FILES,
                                ],
                            )
                            .sudo(true),
                        )
                        .map_err(|e| e.to_string())?;
                    found
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(node.name.clone(), parse_survey(&out));
                    Ok(())
                })
            },
            |_| None,
        );
        let found = found.into_inner().unwrap_or_else(|p| p.into_inner());
        let get = |n: &str| found.get(n).cloned().unwrap_or_default();

        self.heal_step(
            &mut log,
            "remove partition rules",
            |n| n.heal_partition(),
            |n| match get(n).chain {
                Some((rules, _)) if rules > 0 => Some(format!("removed {rules} partition rule(s)")),
                _ => None,
            },
        );
        self.heal_step(
            &mut log,
            "remove packet faults",
            |n| n.heal_packets(),
            |n| {
                let f = get(n);
                let mut parts = Vec::new();
                if let Some((_, loss)) = f.chain
                    && loss > 0
                {
                    parts.push(format!("removed {loss} loss rule(s)"));
                }
                if let Some(kind) = f.qdisc {
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
        self.heal_step(
            &mut log,
            "remove the iptables chain",
            |n| n.teardown(),
            |n| {
                get(n)
                    .chain
                    .map(|_| format!("removed iptables chain {chain}"))
            },
        );

        let paused = nodes_of(outstanding, verb::PAUSE);
        self.heal_step(
            &mut log,
            verb::RESUME,
            |n| n.resume_all().map(|_| ()),
            |n| {
                paused
                    .iter()
                    .any(|p| p == n)
                    .then(|| format!("resumed {db_name} (SIGCONT; paused per the journal)"))
            },
        );

        let killed = nodes_of(outstanding, verb::KILL);
        if !killed.is_empty() {
            self.adopt_killed(killed.clone());
            self.heal_step(
                &mut log,
                "restart",
                |n| n.start_all().map(|_| ()),
                |n| {
                    killed
                        .iter()
                        .any(|k| k == n)
                        .then(|| format!("restarted {db_name} (killed per the journal)"))
                },
            );
        }

        let disk_faulted = nodes_of(outstanding, verb::START_DISK_FAULT);
        if !disk_faulted.is_empty() {
            // The journal names the layer, whatever the heal's --db flags say.
            let layer: Option<crate::db::layer::DataLayer> = outstanding
                .iter()
                .filter(|r| r["f"] == verb::START_DISK_FAULT)
                .find_map(|r| serde_json::from_value(r["detail"]["layer"].clone()).ok());
            if let Some(layer) = layer {
                self.adopt_disk_faulted(disk_faulted.clone());
                self.heal_step(
                    &mut log,
                    verb::STOP_DISK_FAULT,
                    |n| n.stop_disk_fault_on(&layer).map(|_| ()),
                    |n| {
                        disk_faulted.iter().any(|k| k == n).then(|| {
                            "cleared the disk fault of its lazyfs layer (per the journal)"
                                .to_string()
                        })
                    },
                );
            }
        }

        let mut corrupted = nodes_of(outstanding, verb::BITFLIP);
        corrupted.extend(nodes_of(outstanding, verb::TRUNCATE));
        corrupted.sort();
        corrupted.dedup();
        if !corrupted.is_empty() {
            self.adopt_corrupted(corrupted.clone());
            self.heal_step(
                &mut log,
                "restart after corruption",
                |n| n.start_corrupted().map(|_| ()),
                |n| {
                    corrupted.iter().any(|k| k == n).then(|| {
                        format!("restarted {db_name} (stopped to corrupt a data file per the journal; the damage stays)")
                    })
                },
            );
        }

        let cut_verbs = [verb::POWER_LOSS, verb::OS_CRASH];
        let mut powered_off: Vec<String> = cut_verbs
            .iter()
            .flat_map(|f| nodes_of(outstanding, f))
            .collect();
        powered_off.sort();
        powered_off.dedup();
        if !powered_off.is_empty() {
            // The journal names the layer: a stale mount (its process died with the
            // controller's run) is remounted over its files before the DB starts again.
            let layer: Option<crate::db::layer::DataLayer> = outstanding
                .iter()
                .filter(|r| cut_verbs.iter().any(|f| r["f"] == *f))
                .find_map(|r| serde_json::from_value(r["detail"]["layer"].clone()).ok());
            if let Some(layer) = layer {
                let idx: Vec<usize> = powered_off
                    .iter()
                    .filter_map(|n| self.index_of(n))
                    .collect();
                self.heal_step(
                    &mut log,
                    "remount the lose-unsynced layer",
                    |n| {
                        n.on_nodes(&idx, |r, _| {
                            layer.mount(r, false).map_err(|e| e.to_string())
                        })
                    },
                    |_| None,
                );
            }
            let crashed = nodes_of(outstanding, verb::OS_CRASH);
            self.adopt_powered_off(nodes_of(outstanding, verb::POWER_LOSS), verb::POWER_ON);
            self.adopt_powered_off(crashed.clone(), verb::REBOOT);
            self.heal_step(
                &mut log,
                "power on",
                |n| n.power_on().map(|_| ()),
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

        let (clocked, ntp) = clock::journal_clock_leftovers(outstanding);
        if !clocked.is_empty() {
            self.adopt_clocked(clocked.iter().cloned());
            self.heal_step(
                &mut log,
                "reset the clock",
                |n| n.reset_clocks(&Value::Null).map(|_| ()),
                |_| Some("reset the clock to the controller's".to_string()),
            );
        }
        if !ntp.is_empty() {
            let services = ntp.clone();
            self.adopt_ntp_stopped(ntp);
            self.heal_step(
                &mut log,
                "start NTP",
                |n| n.restore_ntp().map(|_| ()),
                |n| {
                    services
                        .get(n)
                        .map(|s| format!("started NTP again ({})", s.join(" ")))
                },
            );
        }
        let dropped = nodes_of(outstanding, verb::START_SSH_DROP);
        if !dropped.is_empty() {
            // The hold may still be running (the controller died mid-drop): wait at most its
            // full length plus the grace.
            let hold_ms = outstanding
                .iter()
                .filter(|r| r["f"] == verb::START_SSH_DROP)
                .filter_map(|r| r["detail"]["duration_ms"].as_u64())
                .max()
                .unwrap_or(0);
            let value = serde_json::json!({ "nodes": dropped, "duration_ms": hold_ms });
            self.heal_step(
                &mut log,
                "wait for sshd",
                |n| n.restore_ssh(&value).map(|_| ()),
                |_| Some("sshd answers again".to_string()),
            );
        }

        // Per node, in node order; unreachable nodes once, with why.
        for node in &nodes {
            let name = &node.name;
            let entry = log.remove(name).unwrap_or_default();
            if let Some(why) = unreachable.get(name) {
                report.lines.push(format!(
                    "{name}: NOT REACHED ({why}): nothing was undone there"
                ));
                report.left.push(format!(
                    "{name}: not reached ({why}); run heal again when it answers"
                ));
                continue;
            }
            let mut line = if entry.done.is_empty() {
                format!("{name}: nothing of the tool's was in effect")
            } else {
                format!("{name}: {}", entry.done.join("; "))
            };
            if !entry.failed.is_empty() {
                line.push_str(&format!("; FAILED: {}", entry.failed.join("; ")));
                for f in &entry.failed {
                    report.left.push(format!("{name}: {f}"));
                }
            }
            report.lines.push(line);
        }
        for (name, entry) in log {
            for f in entry.failed {
                let who = if name.is_empty() { "heal" } else { &name };
                report.left.push(format!("{who}: {f}"));
            }
        }
        if let Some(path) = journal {
            let still = std::fs::read_to_string(path)
                .map(|t| {
                    let records: Vec<Value> = t
                        .lines()
                        .filter_map(|l| serde_json::from_str(l).ok())
                        .collect();
                    super::outstanding_faults(&records)
                })
                .unwrap_or_default();
            if !still.is_empty() {
                report.lines.push(format!(
                    "journal {}: still in effect: {}",
                    path.display(),
                    still
                        .iter()
                        .map(describe_record)
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::control::{ExecError, ExecOutput, Remote, Unreachable};
    use crate::node::Node;
    use rand::SeedableRng;
    use std::sync::{Arc, Mutex};

    /// A reachable node where every command succeeds; the survey finds a chain with `rules`
    /// partition rules when `rules` is set.
    struct Fine {
        name: String,
        rules: Option<usize>,
    }

    impl Remote for Fine {
        fn node(&self) -> &str {
            &self.name
        }
        fn exec(&self, cmd: &Cmd) -> Result<ExecOutput, ExecError> {
            let stdout = match self.rules {
                Some(n) if cmd.to_shell().contains("chain absent") => format!("chain {n} 0\n"),
                _ => String::new(),
            };
            Ok(ExecOutput {
                status: 0,
                signal: None,
                stdout,
                stderr: String::new(),
            })
        }
        fn upload(&self, _: &[u8], _: &str, _: u32) -> Result<(), ExecError> {
            Ok(())
        }
        fn download(&self, _: &str, _: &Path) -> Result<(), ExecError> {
            Ok(())
        }
    }

    /// Nodes n1..n3; n3 unreachable. Returns the nemesis and its journal.
    fn cluster() -> (Nemesis, Arc<Mutex<Vec<Value>>>, String) {
        let nodes: Vec<Node> = (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.0.0.{i}"),
            })
            .collect();
        let down = ExecError::Connect {
            node: "n3".into(),
            addr: "10.0.0.3:22".into(),
            reason: "connection refused".into(),
        };
        let why = Unreachable::new(&down).reason().to_string();
        let remotes: Vec<Arc<dyn Remote>> = vec![
            Arc::new(Fine {
                name: "n1".into(),
                rules: Some(2),
            }),
            Arc::new(Fine {
                name: "n2".into(),
                rules: None,
            }),
            Arc::new(Unreachable::new(&down)),
        ];
        let journal: Arc<Mutex<Vec<Value>>> = Default::default();
        let sink = journal.clone();
        let n = Nemesis::new(super::super::NemesisConfig {
            helper_exe: None,
            nodes,
            remotes,
            db: Arc::new(crate::systems::etcd::Etcd::new(Default::default())),
            partition: Default::default(),
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(3),
            journal: Some(Box::new(move |r: &Value| {
                sink.lock().unwrap().push(r.clone())
            })),
        });
        (n, journal, why)
    }

    #[test]
    fn a_power_on_after_an_os_crash_and_a_power_loss_journals_both_undone() {
        let nodes: Vec<Node> = (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.0.0.{i}"),
            })
            .collect();
        let remotes: Vec<Arc<dyn Remote>> = nodes
            .iter()
            .map(|n| {
                Arc::new(Fine {
                    name: n.name.clone(),
                    rules: None,
                }) as Arc<dyn Remote>
            })
            .collect();
        let journal: Arc<Mutex<Vec<Value>>> = Default::default();
        let sink = journal.clone();
        let etcd = crate::systems::etcd::EtcdConfig {
            lazyfs: Some("/opt/shakedown".into()),
            ..Default::default()
        };
        let mut n = Nemesis::new(super::super::NemesisConfig {
            helper_exe: None,
            nodes,
            remotes,
            db: Arc::new(crate::systems::etcd::Etcd::new(etcd)),
            partition: Default::default(),
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(3),
            journal: Some(Box::new(move |r: &Value| {
                sink.lock().unwrap().push(r.clone())
            })),
        });
        let crash = n.invoke("os-crash", &json!({"targets": "one", "torn": false}));
        let crate::client::Completion::Ok { value, .. } = crash else {
            panic!("os-crash: {crash:?}");
        };
        assert_eq!(value["nodes"].as_array().map(Vec::len), Some(1), "{value}");
        assert_eq!(value["layer"]["exe"], "/opt/shakedown");
        let cut = n.invoke("power-loss", &json!({"targets": "all", "torn": false}));
        assert!(
            matches!(cut, crate::client::Completion::Ok { .. }),
            "{cut:?}"
        );
        let active = n.active().join(" ");
        assert!(
            active.contains("power-loss") && active.contains("os-crash"),
            "{active}"
        );
        let open: Vec<Value> = super::super::outstanding_faults(&journal.lock().unwrap());
        let undo: Vec<&Value> = open.iter().map(|r| &r["undo_with"]).collect();
        assert_eq!(undo, [&json!("reboot"), &json!("power-on")]);
        // One reboot starts every node and leaves neither cut outstanding.
        let on = n.invoke("reboot", &Value::Null);
        let crate::client::Completion::Ok { value, .. } = on else {
            panic!("reboot: {on:?}");
        };
        assert_eq!(value["nodes"], json!(["n1", "n2", "n3"]));
        let records = journal.lock().unwrap().clone();
        assert!(
            super::super::outstanding_faults(&records).is_empty(),
            "{records:?}"
        );
        assert!(n.active().is_empty());
    }

    #[test]
    fn a_fault_applies_on_the_reachable_nodes_and_names_the_unreachable_one() {
        let (mut n, journal, why) = cluster();
        assert_eq!(why, "cannot connect to 10.0.0.3:22: connection refused");
        let c = n.invoke("start-partition", &json!("one"));
        let crate::client::Completion::Fail { error, value } = c else {
            panic!("expected a partly applied completion, got {c:?}");
        };
        assert_eq!(
            value,
            json!({"applied": ["n1", "n2"], "failed": {"n3": format!("not reached: {why}")}})
        );
        assert_eq!(error, format!("n3: not reached: {why}"));
        let records = journal.lock().unwrap().clone();
        let last = records.last().unwrap();
        assert_eq!(
            (&last["action"], &last["event"]),
            (&json!("inject"), &json!("failed"))
        );
        assert_eq!(last["applied"], json!(["n1", "n2"]));
        assert!(
            last["failed"]["n3"]
                .as_str()
                .unwrap()
                .contains("not reached")
        );
        // Still outstanding: a later heal must undo it.
        assert_eq!(super::super::outstanding_faults(&records).len(), 1);
        // A fault only on reachable nodes is a plain success.
        let c = n.invoke("stop-partition", &Value::Null);
        assert!(
            matches!(&c, crate::client::Completion::Fail { value, .. } if value["failed"]["n3"].is_string()),
            "{c:?}"
        );
    }

    #[test]
    fn heal_with_one_node_unreachable_heals_the_others_and_names_it() {
        let (mut n, journal, why) = cluster();
        let open = vec![
            json!({"action": "inject", "event": "begin", "f": "pause", "undo_with": "resume", "detail": {"nodes": ["n2"]}}),
        ];
        let mut unreachable = BTreeMap::new();
        unreachable.insert("n3".to_string(), why.clone());
        let report = n.heal_nodes(&unreachable, &open, None);
        let text = report.lines.join("\n");
        assert!(
            text.contains("n1: removed 2 partition rule(s); removed iptables chain SHAKEDOWN"),
            "{text}"
        );
        assert!(
            text.contains("n2: resumed etcd (SIGCONT; paused per the journal)"),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "n3: NOT REACHED ({why}): nothing was undone there"
            )),
            "{text}"
        );
        assert!(!text.contains("not undone"), "{text}");
        assert!(!report.complete());
        assert_eq!(report.left.len(), 1, "{:?}", report.left);
        assert!(
            report.left[0].starts_with("n3: not reached"),
            "{:?}",
            report.left
        );
        // The journal says the undos failed on n3 (so the faults stay outstanding there).
        let records = journal.lock().unwrap().clone();
        let resume = records
            .iter()
            .find(|r| r["f"] == "resume" && r["event"] != "begin")
            .unwrap();
        assert_eq!(resume["event"], "failed");
        assert_eq!(resume["applied"], json!(["n1", "n2"]));
        assert!(resume["failed"]["n3"].is_string());
    }

    #[test]
    fn survey_output_is_parsed() {
        assert_eq!(
            parse_survey("chain 5 2\ndelay 0 0\nqdisc netem\n"),
            Found {
                chain: Some((3, 2)),
                qdisc: Some("netem".into()),
                delay: (0, false),
            }
        );
        assert_eq!(parse_survey("chain absent\ndelay 1 1\n").delay, (1, true));
        assert_eq!(parse_survey("chain absent\n"), Found::default());
        assert_eq!(parse_survey(""), Found::default());
    }

    #[test]
    fn records_are_described_by_their_nodes() {
        let open = vec![
            json!({"f": "kill", "detail": {"nodes": ["n2", "n4"]}}),
            json!({"f": "start-partition", "detail": {"grudge": {"n1": ["n2"], "n2": ["n1"]}}}),
            json!({"f": "stop-ntp", "detail": {"services": {"n3": ["chrony"]}}}),
            json!({"f": "kill", "detail": {"nodes": ["n1", "n2"]}}),
        ];
        let d: Vec<String> = open.iter().map(describe_record).collect();
        assert_eq!(
            d,
            [
                "kill on n2, n4",
                "start-partition on n1, n2",
                "stop-ntp on n3",
                "kill on n1, n2"
            ]
        );
        assert_eq!(nodes_of(&open, "kill"), ["n1", "n2", "n4"]);
        assert!(nodes_of(&open, "pause").is_empty());
    }
}
