//! Whether each database process saw its node's clock: from the history's `clock-offsets`
//! measurements that carry the process's own reading (`db_offsets_ms`, where the system reports
//! its time), the nodes whose database disagreed with the node's `date` by more than the two
//! readings' error bounds, in at least two readings. A clock fault such a process did not see
//! was a no-op for it (the sandbox's clock patch missed it, or a program reads time another
//! way); the run page says so beside the faults. Pure: reads a history, draws nothing.

use crate::faults::verb::CLOCK_OFFSETS;
use crate::history::{History, Process};
use serde_json::Value;
use std::collections::BTreeMap;

/// Slack added to the readings' own error bounds, in ms (scheduling on the node between the
/// `date` reading and the process's).
const SLACK_MS: f64 = 250.0;
/// Readings that must disagree before a node is named (one could catch a step in flight).
const MIN_READINGS: usize = 2;

/// A node whose database process's clock disagreed with its node's.
#[derive(Debug, Clone, PartialEq)]
pub struct Unseen {
    /// Node name.
    pub node: String,
    /// What was read (`etcd's HTTP Date header`).
    pub source: String,
    /// Readings that disagreed, of those taken with a process reading.
    pub disagreed: usize,
    /// Readings taken with a process reading.
    pub readings: usize,
    /// The largest disagreement seen, database minus node, in ms.
    pub worst_ms: f64,
    /// The node's offset at that reading, in ms.
    pub node_ms: f64,
}

/// The nodes whose database process disagreed with the node's clock, by node name.
pub fn unseen_clocks(history: &History) -> Vec<Unseen> {
    let mut per_node: BTreeMap<String, Unseen> = BTreeMap::new();
    for op in history
        .ops
        .iter()
        .filter(|o| o.process == Process::Nemesis && o.f == CLOCK_OFFSETS)
    {
        let v = &op.value;
        let (Some(db), Some(date)) = (
            v.get("db_offsets_ms").and_then(Value::as_object),
            v.get("offsets_ms").and_then(Value::as_object),
        ) else {
            continue;
        };
        let resolution = v["db_clock"]["resolution_ms"].as_f64().unwrap_or(1000.0);
        let source = v["db_clock"]["source"].as_str().unwrap_or("the database");
        for (node, db_ms) in db {
            let (Some(db_ms), Some(node_ms)) =
                (db_ms.as_f64(), date.get(node).and_then(Value::as_f64))
            else {
                continue;
            };
            let rtt = |field: &str| v[field][node].as_f64().unwrap_or(0.0);
            let bound = resolution / 2.0 + (rtt("rtt_ms") + rtt("db_rtt_ms")) / 2.0 + SLACK_MS;
            let e = per_node.entry(node.clone()).or_insert_with(|| Unseen {
                node: node.clone(),
                source: source.to_string(),
                disagreed: 0,
                readings: 0,
                worst_ms: 0.0,
                node_ms: 0.0,
            });
            e.readings += 1;
            let off = db_ms - node_ms;
            if off.abs() > bound {
                e.disagreed += 1;
                if off.abs() > e.worst_ms.abs() {
                    e.worst_ms = off;
                    e.node_ms = node_ms;
                }
            }
        }
    }
    per_node
        .into_values()
        .filter(|u| u.disagreed >= MIN_READINGS)
        .collect()
}

/// One sentence for a person about `u`.
pub fn describe(u: &Unseen) -> String {
    format!(
        "{}'s database read a clock {:+.1} s from its node's (node {:+.1} s from the controller; {}; {} of {} readings disagreed): clock faults on {} did not reach it",
        u.node,
        u.worst_ms / 1e3,
        u.node_ms / 1e3,
        u.source,
        u.disagreed,
        u.readings,
        u.node
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, OpType};
    use serde_json::json;

    fn reading(t_s: u64, n1: (f64, f64), n2: (f64, f64)) -> Op {
        let mut o = Op::new(
            OpType::Info,
            Process::Nemesis,
            CLOCK_OFFSETS,
            json!({"offsets_ms": {"n1": n1.0, "n2": n2.0}, "rtt_ms": {"n1": 2.0, "n2": 2.0},
                   "db_offsets_ms": {"n1": n1.1, "n2": n2.1}, "db_rtt_ms": {"n1": 3.0, "n2": 3.0},
                   "db_clock": {"source": "etcd's HTTP Date header", "resolution_ms": 1000.0}}),
        );
        o.time_ns = t_s * 1_000_000_000;
        o
    }

    #[test]
    fn a_database_that_misses_its_nodes_step_twice_is_named_and_resolution_is_forgiven() {
        let h = History {
            ops: vec![
                reading(1, (0.0, 480.0), (1.0, -400.0)),
                reading(2, (47_000.0, 46_600.0), (2.0, 30.0)),
                reading(3, (47_000.0, 120.0), (1.0, 20.0)),
                reading(4, (47_000.0, 300.0), (1.0, 3_000.0)),
            ],
            ..History::default()
        };
        let unseen = unseen_clocks(&h);
        assert_eq!(unseen.len(), 1, "{unseen:?}");
        let u = &unseen[0];
        assert_eq!((u.node.as_str(), u.disagreed, u.readings), ("n1", 2, 4));
        assert_eq!(u.worst_ms, -46_880.0);
        let text = describe(u);
        assert!(
            text.contains("n1's database read a clock -46.9 s"),
            "{text}"
        );
        // n2 disagreed once only (a step in flight): not named.
        // Histories without process readings name nobody.
        let mut plain = reading(1, (5.0, 5.0), (5.0, 5.0));
        plain.value = json!({"offsets_ms": {"n1": 47000.0}});
        let h = History {
            ops: vec![plain.clone(), plain],
            ..History::default()
        };
        assert!(unseen_clocks(&h).is_empty());
    }
}
