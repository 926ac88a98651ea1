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

use super::cluster::HealLog;
use super::fault::{JournalView, describe_nodes};
use super::survey::{Found, SURVEY, parse_survey};
use super::{Nemesis, packet};
use crate::control::Cmd;
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

/// A fault journal read for `heal`: its records, and what could not be read, in words.
#[derive(Debug, Default)]
pub struct JournalRead {
    /// Every line that is a JSON value, in order.
    pub records: Vec<Value>,
    /// A last line cut short (a controller killed while writing it): skipped, said.
    pub notes: Vec<String>,
    /// Any other line that is not JSON: a fault it recorded may be missed, so the heal
    /// cannot say everything was undone.
    pub unreadable: Vec<String>,
}

/// Read the fault journal `text` (from the file `name`) line by line: blank lines are nothing;
/// a last line that is not JSON is a torn write; any other is named by line with its cause.
pub fn read_journal(name: &str, text: &str) -> JournalRead {
    let mut read = JournalRead::default();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(v) => read.records.push(v),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => read.notes.push(format!(
                "{name}:{}: the last record is cut short (the controller was killed while \
                 writing it); skipped",
                i + 1
            )),
            Err(e) => read.unreadable.push(format!(
                "{name}:{}: not a journal record ({e}); a fault it recorded may not have been \
                 healed: check the nodes by hand",
                i + 1
            )),
        }
    }
    read
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

impl Nemesis {
    /// Read what of the tool's is on each node before healing ([`SURVEY`]).
    fn survey(&mut self, log: &mut HealLog) -> BTreeMap<String, Found> {
        let found = std::sync::Mutex::new(BTreeMap::<String, Found>::new());
        let chain = self.cx.cfg.partition.chain.clone();
        let all = self.cx.all_idx();
        self.cx.heal_step(
            log,
            "inspect",
            |cx| {
                cx.on_nodes(&all, |r, node| {
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
        found.into_inner().unwrap_or_else(|p| p.into_inner())
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
        let db_name = self.cx.db().name().to_string();
        let nodes = self.cx.nodes().to_vec();
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

        let mut log = HealLog::new();
        let found = self.survey(&mut log);
        let view = JournalView {
            outstanding,
            found: &found,
            db_name: &db_name,
        };
        for fault in &mut self.faults {
            fault.heal_from_journal(&mut self.cx, &view, &mut log);
        }
        let chain = self.cx.cfg.partition.chain.clone();
        self.cx.heal_step(
            &mut log,
            "remove the iptables chain",
            |cx| {
                cx.run_on(&cx.all_idx(), |_| {
                    Cmd::script(super::TEARDOWN_CHAIN, [chain.as_str()]).sudo(true)
                })
            },
            |n| {
                view.found(n)
                    .chain
                    .map(|_| format!("removed iptables chain {chain}"))
            },
        );

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
    #[test]
    fn a_torn_last_journal_line_is_a_note_and_a_corrupt_one_is_left() {
        let text = "{\"f\":\"kill\"}\n\nnot json\n{\"f\":\"pause\"}\n{\"f\":\"par";
        let read = super::read_journal("faults.jsonl", text);
        assert_eq!(read.records.len(), 2);
        assert_eq!(read.unreadable.len(), 1, "{:?}", read.unreadable);
        assert!(read.unreadable[0].starts_with("faults.jsonl:3: not a journal record"));
        assert_eq!(read.notes.len(), 1);
        assert!(read.notes[0].starts_with("faults.jsonl:5: the last record is cut short"));
        // A complete last line that is not JSON is not a torn write.
        let read = super::read_journal("j", "{}\nnot json\n");
        assert_eq!((read.notes.len(), read.unreadable.len()), (0, 1));
    }

    use super::*;
    use crate::nemesis::fault::nodes_of;
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
        assert_eq!(
            nodes_of(&open, crate::faults::Verb::Kill),
            ["n1", "n2", "n4"]
        );
        assert!(nodes_of(&open, crate::faults::Verb::Pause).is_empty());
    }
}
