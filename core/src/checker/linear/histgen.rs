//! Generated register histories with a known linearization, for property tests and benchmarks.
//!
//! Owns a deterministic (seeded) simulator: per key, several processes issue read/write/cas ops; each
//! op gets a random interval and a linearization point strictly inside it; the ops are applied to a
//! sequential register in linearization-point order to decide outputs, so the resulting history is
//! linearizable by construction (under `RegisterConfig::etcd` semantics). Crashed ops complete with
//! `info`, may or may not take effect, and move their thread to a fresh process id. A cas whose
//! compare fails completes `fail` with `error: "cas-mismatch"`. Does not own checking. Submodule
//! `kv`: Porcupine-shaped key-value histories (get/put/append), some keys made illegal.

pub mod kv;

use crate::history::{History, Op, OpType, Process};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// Shape of a generated history.
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// Number of independent keys; with 1, ops carry no key (a single-register history).
    pub keys: usize,
    /// Concurrent client threads per key.
    pub processes_per_key: usize,
    /// Total number of operations (each is an invoke plus at most one completion).
    pub ops: usize,
    /// Probability that an op crashes (completes `info`).
    pub info_probability: f64,
    /// Written values are drawn from `0..value_range`.
    pub value_range: i64,
    /// Upper bound of each random delay (invoke→linearization point, point→completion, gaps), ns.
    pub max_delay_ns: u64,
    /// RNG seed.
    pub seed: u64,
    /// Ops numbered in this range (`from..to`, in generation order) that write (write, cas) all
    /// crash, as when the primary that takes the writes is down and reads go to a replica.
    pub write_outage: Option<(usize, usize)>,
    /// When positive, each of the `keys` slots moves to a fresh key after this many of its ops,
    /// as the register workload does (`ops_per_key`): a long history then has many short keys,
    /// `keys` of them in use at a time. 0: the same `keys` keys throughout.
    pub rotate_every: usize,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            keys: 1,
            processes_per_key: 5,
            ops: 100,
            info_probability: 0.05,
            value_range: 5,
            max_delay_ns: 1_000_000,
            seed: 0,
            write_outage: None,
            rotate_every: 0,
        }
    }
}

struct GenOp {
    key: usize,
    process: u64,
    f: &'static str,
    arg: (i64, i64),
    invoke_ns: u64,
    lin_ns: u64,
    ret_ns: u64,
    crashed: bool,
    takes_effect: bool,
}

/// Generate a linearizable read/write/cas history (see the module doc).
pub fn generate_register_history(cfg: &GenConfig) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let keys = cfg.keys.max(1);
    let procs = cfg.processes_per_key.max(1);
    let delay = cfg.max_delay_ns.max(2);
    let range = cfg.value_range.max(1);
    let mut next_process = (keys * procs) as u64;
    // Per key, per thread: (current process id, time cursor).
    let mut threads: Vec<Vec<(u64, u64)>> = (0..keys)
        .map(|k| {
            (0..procs)
                .map(|t| ((k * procs + t) as u64, rng.random_range(0..delay)))
                .collect()
        })
        .collect();
    let mut gen_ops: Vec<GenOp> = Vec::with_capacity(cfg.ops);
    // A slot's threads stay; with rotation its key changes every `rotate_every` of its ops.
    let key_of = |i: usize| match cfg.rotate_every {
        0 => i % keys,
        every => i % keys + keys * (i / (keys * every)),
    };
    for i in 0..cfg.ops {
        let slot = i % keys;
        let key = key_of(i);
        let t = rng.random_range(0..procs);
        let (process, cursor) = threads[slot][t];
        let invoke_ns = cursor;
        let lin_ns = invoke_ns + rng.random_range(1..delay);
        let ret_ns = lin_ns + rng.random_range(1..delay);
        let crashed = rng.random_bool(cfg.info_probability.clamp(0.0, 1.0));
        let (f, arg) = match rng.random_range(0..10) {
            0..4 => ("read", (0, 0)),
            4..7 => ("write", (rng.random_range(0..range), 0)),
            _ => (
                "cas",
                (rng.random_range(0..range), rng.random_range(0..range)),
            ),
        };
        let crashed = crashed
            || (f != "read"
                && cfg
                    .write_outage
                    .is_some_and(|(from, to)| (from..to).contains(&i)));
        let takes_effect = !crashed || rng.random_bool(0.5);
        gen_ops.push(GenOp {
            key,
            process,
            f,
            arg,
            invoke_ns,
            lin_ns,
            ret_ns,
            crashed,
            takes_effect,
        });
        let gap = rng.random_range(1..delay);
        let new_process = if crashed {
            next_process += 1;
            next_process - 1
        } else {
            process
        };
        threads[slot][t] = (new_process, ret_ns + gap);
    }
    // Decide outputs by applying ops in linearization-point order.
    let mut order: Vec<usize> = (0..gen_ops.len()).collect();
    order.sort_by_key(|&i| (gen_ops[i].lin_ns, i));
    let key_count = match cfg.rotate_every {
        0 => keys,
        every => keys * ((cfg.ops.max(1) - 1) / (keys * every) + 1),
    };
    let mut regs: Vec<Option<i64>> = vec![None; key_count];
    // Per op: (completion type, completion value, error).
    let mut outputs: Vec<(OpType, Value, Option<&'static str>)> =
        vec![(OpType::Ok, Value::Null, None); gen_ops.len()];
    for &i in &order {
        let o = &gen_ops[i];
        let reg = &mut regs[o.key];
        let out = match o.f {
            "read" => (OpType::Ok, reg.map_or(Value::Null, |v| json!(v)), None),
            "write" => {
                if o.takes_effect {
                    *reg = Some(o.arg.0);
                }
                (OpType::Ok, json!(o.arg.0), None)
            }
            _ => {
                if *reg == Some(o.arg.0) {
                    if o.takes_effect {
                        *reg = Some(o.arg.1);
                    }
                    (OpType::Ok, json!([o.arg.0, o.arg.1]), None)
                } else {
                    (
                        OpType::Fail,
                        json!([o.arg.0, o.arg.1]),
                        Some("cas-mismatch"),
                    )
                }
            }
        };
        outputs[i] = if o.crashed {
            let v = if o.f == "read" { Value::Null } else { out.1 };
            (OpType::Info, v, Some("timeout"))
        } else {
            out
        };
    }
    // Emit invoke and completion events in time order.
    let mut events: Vec<(u64, usize, bool)> = Vec::with_capacity(gen_ops.len() * 2);
    for (i, o) in gen_ops.iter().enumerate() {
        events.push((o.invoke_ns, i, false));
        events.push((o.ret_ns, i, true));
    }
    events.sort_unstable_by_key(|&(t, i, done)| (t, done, i));
    let mut ops = Vec::with_capacity(events.len());
    for (t, i, done) in events {
        let o = &gen_ops[i];
        let mut op = if done {
            let (ty, v, err) = &outputs[i];
            let mut op = Op::new(*ty, Process::Client(o.process), o.f, v.clone());
            op.error = err.map(str::to_string);
            op
        } else {
            let v = match o.f {
                "read" => Value::Null,
                "write" => json!(o.arg.0),
                _ => json!([o.arg.0, o.arg.1]),
            };
            Op::new(OpType::Invoke, Process::Client(o.process), o.f, v)
        };
        op.time_ns = t;
        if keys > 1 || cfg.rotate_every > 0 {
            op.key = Some(format!("k{}", o.key).into());
        }
        ops.push(op);
    }
    History::from_ops(ops)
}

/// Make a generated history wrong in the way real bugs are, with a *stale read*: the ok read at
/// `pick` (an index into the ok reads, modulo their count) returns the value of the ok write
/// before the last ok write that completed before the read was invoked, as a lagging replica
/// would. Returns the history position changed, or `None` when no read has two such writes with
/// different values. The result is usually, not always, non-linearizable (another interleaving may
/// explain the old value).
pub fn corrupt_read(h: &mut History, pick: usize) -> Option<usize> {
    let pairs = h.pairs().ok()?;
    let mut invoke_of = vec![None; h.ops.len()];
    for (i, p) in pairs.iter().enumerate() {
        if let Some(j) = p {
            invoke_of[*j] = Some(i);
        }
    }
    let reads: Vec<usize> = h
        .ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.op_type == OpType::Ok && o.f == "read")
        .map(|(i, _)| i)
        .collect();
    for k in 0..reads.len() {
        let at = reads[(pick + k) % reads.len()];
        let invoked = invoke_of[at]?;
        // Ok writes of the same key completed before the read was invoked, latest first.
        let mut writes = h.ops[..invoked]
            .iter()
            .rev()
            .filter(|o| o.op_type == OpType::Ok && o.f == "write" && o.key == h.ops[at].key);
        let (Some(last), Some(before)) = (writes.next(), writes.next()) else {
            continue;
        };
        if last.value != before.value && h.ops[at].value != before.value {
            h.ops[at].value = before.value.clone();
            return Some(at);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_is_deterministic_well_formed_and_shaped() {
        let cfg = GenConfig {
            keys: 3,
            processes_per_key: 4,
            ops: 300,
            info_probability: 0.2,
            seed: 9,
            ..GenConfig::default()
        };
        let a = generate_register_history(&cfg);
        let b = generate_register_history(&cfg);
        assert_eq!(a.ops, b.ops);
        assert_eq!(a.ops.len(), 600);
        let pairs = a.pairs().expect("well-formed");
        assert_eq!(pairs.iter().filter(|p| p.is_some()).count(), 300);
        assert!(a.ops.iter().any(|o| o.op_type == OpType::Info));
        assert!(
            a.ops
                .iter()
                .any(|o| o.error.as_deref() == Some("cas-mismatch"))
        );
        assert_eq!(
            a.ops
                .iter()
                .filter_map(|o| o.key.clone())
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            3
        );
        assert!(a.ops.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    }

    #[test]
    fn rotating_slots_move_to_fresh_keys_and_stay_linearizable() {
        let cfg = GenConfig {
            keys: 3,
            processes_per_key: 4,
            ops: 310,
            info_probability: 0.05,
            seed: 4,
            rotate_every: 10,
            ..GenConfig::default()
        };
        let h = generate_register_history(&cfg);
        let mut per_key = std::collections::BTreeMap::<String, usize>::new();
        for o in h.ops.iter().filter(|o| o.op_type == OpType::Invoke) {
            *per_key
                .entry(o.key.clone().expect("keyed").into())
                .or_default() += 1;
        }
        // 310 ops, 3 slots, 10 ops per key: 10 full rounds of 3 keys, then 10 ops over 3 more.
        assert_eq!(per_key.len(), 33);
        assert!(per_key.values().all(|&n| n <= 10), "{per_key:?}");
        let model = crate::model::RegisterModel::cas_register(crate::model::RegisterConfig::etcd());
        let r = crate::checker::linear::check_history(
            &model,
            &h,
            &crate::checker::linear::LinearConfig::default(),
        );
        assert_eq!(r.verdict, crate::checker::Verdict::Valid);
    }
}
