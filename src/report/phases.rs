//! The end of a run as its history shows it: where the main workload stopped, the final heal,
//! the settle pause and the start of the final reads.
//!
//! Owns finding those times from the history alone (pure, no IO). The runner writes no phase
//! markers, but its phases leave a fixed shape: the main phase drains every client op before it
//! ends, the final heal records only nemesis ops (the stop op of every fault kind), the settle
//! records nothing, and the final reads record only client ops: one `read` of every key, a key
//! read again only after its read failed. So a history that ends with a block of nemesis ops
//! followed by such reads and nothing else shows a final heal and final reads; one cut short
//! (interrupted, killed), run without a nemesis, or whose workload simply went on after its last
//! fault shows none. Does not own
//! the phases themselves (`runner`), outage detection (`report::recovery`, which ends outages
//! where the workload stopped instead of running them across the settle) or drawing (`plots`,
//! which draws the span as a neutral band).

use crate::history::{History, OpType, Process};
use std::collections::HashSet;

/// The final heal, settle and final reads of a run (times in ns since the run started).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FinalPhase {
    /// The main workload's last client record (its last op's completion): it stopped here.
    pub workload_end_ns: u64,
    /// The final heal's first nemesis record.
    pub heal_start_ns: u64,
    /// The final heal's last nemesis record: the cluster settles from here.
    pub heal_end_ns: u64,
    /// The first final read's invocation.
    pub reads_start_ns: u64,
}

impl FinalPhase {
    /// The span without client ops, from where the workload stopped to the final reads, in s.
    pub fn quiet_span_s(&self) -> (f64, f64) {
        (
            self.workload_end_ns as f64 / 1e9,
            self.reads_start_ns as f64 / 1e9,
        )
    }
}

/// The final heal and reads of `history` (see the module doc); `None` when the history does not
/// end with nemesis ops followed by client ops, or has no client op before them.
pub fn final_phase(history: &History) -> Option<FinalPhase> {
    let ops = &history.ops;
    let last_nemesis = ops.iter().rposition(|o| o.process == Process::Nemesis)?;
    let tail = &ops[last_nemesis + 1..];
    let reads = tail.first()?;
    if reads.op_type != OpType::Invoke || !final_reads_only(tail) {
        return None;
    }
    let heal_start = ops[..=last_nemesis]
        .iter()
        .rposition(|o| o.process != Process::Nemesis)
        .map_or(0, |i| i + 1);
    let workload_end = ops[..heal_start]
        .iter()
        .rev()
        .find(|o| matches!(o.process, Process::Client(_)))?;
    Some(FinalPhase {
        workload_end_ns: workload_end.time_ns,
        heal_start_ns: ops[heal_start].time_ns,
        heal_end_ns: ops[last_nemesis].time_ns,
        reads_start_ns: reads.time_ns,
    })
}

/// Whether `tail` (the ops after the last nemesis op) is final reads: client `read`s of keys,
/// a key invoked again only when no read of it has completed `ok`.
fn final_reads_only(tail: &[crate::history::Op]) -> bool {
    let mut read_ok: HashSet<&str> = HashSet::new();
    for op in tail {
        let (Process::Client(_), Some(key)) = (op.process, op.key.as_deref()) else {
            return false;
        };
        if op.f != "read" {
            return false;
        }
        match op.op_type {
            OpType::Invoke if read_ok.contains(key) => return false,
            OpType::Ok => {
                read_ok.insert(key);
            }
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Op;
    use serde_json::Value;

    const S: u64 = 1_000_000_000;

    fn op(t: OpType, p: Process, f: &str, time_ns: u64) -> Op {
        let mut o = Op::new(t, p, f, Value::Null);
        o.time_ns = time_ns;
        o
    }

    fn client(t: OpType, time_ns: u64) -> Op {
        keyed(t, "k0", time_ns)
    }

    fn keyed(t: OpType, key: &str, time_ns: u64) -> Op {
        let mut o = op(t, Process::Client(0), "read", time_ns);
        o.key = Some(key.into());
        o
    }

    fn nemesis(f: &str, time_ns: u64) -> Op {
        op(OpType::Info, Process::Nemesis, f, time_ns)
    }

    #[test]
    fn a_run_ending_in_heal_settle_and_final_reads_shows_all_four_times() {
        let h = History::from_ops(vec![
            nemesis("kill", 5 * S),
            nemesis("kill", 5 * S + 10),
            client(OpType::Invoke, 59 * S),
            client(OpType::Info, 60 * S),
            nemesis("start", 60 * S + 100),
            nemesis("start", 61 * S),
            nemesis("resume", 61 * S + 10),
            nemesis("resume", 61 * S + 20),
            client(OpType::Invoke, 64 * S),
            client(OpType::Ok, 64 * S + 5),
        ]);
        let p = final_phase(&h).unwrap();
        assert_eq!(
            p,
            FinalPhase {
                workload_end_ns: 60 * S,
                heal_start_ns: 60 * S + 100,
                heal_end_ns: 61 * S + 20,
                reads_start_ns: 64 * S,
            }
        );
        assert_eq!(p.quiet_span_s(), (60.0, 64.0));
    }

    #[test]
    fn no_final_phase_without_a_nemesis_final_reads_or_a_workload_before_the_heal() {
        // No nemesis at all.
        let plain = History::from_ops(vec![client(OpType::Invoke, S), client(OpType::Ok, 2 * S)]);
        assert_eq!(final_phase(&plain), None);
        // Interrupted: the history ends with the heal.
        let interrupted = History::from_ops(vec![
            client(OpType::Invoke, S),
            client(OpType::Ok, 2 * S),
            nemesis("stop-partition", 3 * S),
            nemesis("stop-partition", 3 * S + 1),
        ]);
        assert_eq!(final_phase(&interrupted), None);
        // Nothing but the nemesis before the reads.
        let no_workload = History::from_ops(vec![
            nemesis("stop-partition", 3 * S),
            nemesis("stop-partition", 3 * S + 1),
            client(OpType::Invoke, 4 * S),
        ]);
        assert_eq!(final_phase(&no_workload), None);
        // A stray completion after the nemesis is not a final read.
        let stray = History::from_ops(vec![
            client(OpType::Invoke, S),
            nemesis("kill", 2 * S),
            nemesis("kill", 2 * S + 1),
            client(OpType::Ok, 3 * S),
        ]);
        assert_eq!(final_phase(&stray), None);
        assert_eq!(final_phase(&History::default()), None);
        // The workload went on after the last fault: a key read again after an ok read, or a
        // write, is no final read.
        let went_on = |later: Op| {
            History::from_ops(vec![
                client(OpType::Invoke, S),
                client(OpType::Ok, S + 1),
                nemesis("stop-partition", 2 * S),
                nemesis("stop-partition", 2 * S + 1),
                keyed(OpType::Invoke, "k1", 3 * S),
                keyed(OpType::Ok, "k1", 3 * S + 1),
                later,
            ])
        };
        assert_eq!(
            final_phase(&went_on(keyed(OpType::Invoke, "k1", 4 * S))),
            None
        );
        let mut write = keyed(OpType::Invoke, "k2", 4 * S);
        write.f = "write".into();
        assert_eq!(final_phase(&went_on(write)), None);
        let mut unkeyed = keyed(OpType::Invoke, "k2", 4 * S);
        unkeyed.key = None;
        assert_eq!(final_phase(&went_on(unkeyed)), None);
        // Another key, or a retry of a read that failed, is.
        assert!(final_phase(&went_on(keyed(OpType::Invoke, "k2", 4 * S))).is_some());
        let retry = History::from_ops(vec![
            client(OpType::Invoke, S),
            client(OpType::Ok, S + 1),
            nemesis("stop-partition", 2 * S),
            nemesis("stop-partition", 2 * S + 1),
            keyed(OpType::Invoke, "k1", 3 * S),
            keyed(OpType::Info, "k1", 4 * S),
            keyed(OpType::Invoke, "k1", 5 * S),
            keyed(OpType::Ok, "k1", 5 * S + 1),
        ]);
        assert!(final_phase(&retry).is_some());
    }
}
