//! Generated list-append and rw-register transaction histories for property tests and
//! benchmarks.
//!
//! Owns a deterministic (seeded) simulator: processes issue transactions of 1..=`max_mops`
//! micro-ops (appends of per-key unique elements, reads) over `keys` keys; each transaction gets
//! an interval and a commit point strictly inside it, and transactions are applied in
//! commit-point order, so the history is strict-serializable by construction — unless
//! `stale_probability` makes a read see a random prefix of the list instead (an anomaly of some
//! kind). With `rw_register`, the appends are register writes (`["w", k, v]`, values unique per
//! key) and a read returns the last value of that list (nil when empty), so a stale read returns
//! an older value. Crashed transactions complete `info` and take effect or not; failed ones never do.
//! With `final_read`, one last transaction reads every key after everything else. With
//! `max_writes_per_key`, keys retire after that many appends and fresh ones take their place.
//! Does not own checking.

use crate::history::{History, Op, OpType, Process};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// Shape of a generated history.
#[derive(Debug, Clone)]
pub struct TxnGenConfig {
    /// Number of transactions (without the final read).
    pub txns: usize,
    /// Keys `0..keys`.
    pub keys: usize,
    /// Concurrent processes.
    pub processes: usize,
    /// Micro-ops per transaction: 1..=max_mops.
    pub max_mops: usize,
    /// Probability that a read sees a random prefix of the list rather than all of it.
    pub stale_probability: f64,
    /// Probability that a transaction completes `info` (then takes effect half the time).
    pub info_probability: f64,
    /// Probability that a transaction completes `fail` (and takes no effect).
    pub fail_probability: f64,
    /// One last transaction reads every key.
    pub final_read: bool,
    /// Retire a key after this many appends and use a fresh one in its place, so `keys` are
    /// active at a time and reads stay short (Jepsen's `:max-writes-per-key`); 0 = never.
    pub max_writes_per_key: usize,
    /// Register writes and single-value reads instead of appends and list reads.
    pub rw_register: bool,
    /// RNG seed.
    pub seed: u64,
}

impl Default for TxnGenConfig {
    fn default() -> Self {
        TxnGenConfig {
            txns: 100,
            keys: 10,
            processes: 5,
            max_mops: 4,
            stale_probability: 0.0,
            info_probability: 0.0,
            fail_probability: 0.0,
            final_read: false,
            max_writes_per_key: 0,
            rw_register: false,
            seed: 0,
        }
    }
}

struct Gen {
    process: u64,
    invoke_ns: u64,
    commit_ns: u64,
    complete_ns: u64,
    /// (is_append, key, element or read list).
    mops: Vec<(bool, usize, Value)>,
    outcome: OpType,
    applies: bool,
}

/// Generate a list-append or rw-register transaction history (see the module doc).
pub fn generate_txn_history(cfg: &TxnGenConfig) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let keys = cfg.keys.max(1);
    let procs = cfg.processes.max(1);
    let mut cursor: Vec<(u64, u64)> = (0..procs as u64).map(|p| (p, 0)).collect();
    let mut next_process = procs as u64;
    let mut next_elem = vec![1i64; keys];
    // The key each active slot stands for (slot = key until keys retire).
    let mut slots: Vec<usize> = (0..keys).collect();
    let mut gens: Vec<Gen> = Vec::with_capacity(cfg.txns + 1);
    for _ in 0..cfg.txns {
        let t = rng.random_range(0..procs);
        let invoke_ns = cursor[t].1 + rng.random_range(1..1_000u64);
        let commit_ns = invoke_ns + rng.random_range(1..1_000u64);
        let complete_ns = commit_ns + rng.random_range(1..1_000u64);
        let n = rng.random_range(1..=cfg.max_mops.max(1));
        let mops = (0..n)
            .map(|_| {
                let slot = rng.random_range(0..keys);
                let k = slots[slot];
                if rng.random_bool(0.5) {
                    let e = next_elem[k];
                    next_elem[k] += 1;
                    if cfg.max_writes_per_key > 0 && e as usize >= cfg.max_writes_per_key {
                        slots[slot] = next_elem.len();
                        next_elem.push(1);
                    }
                    (true, k, json!(e))
                } else {
                    (false, k, Value::Null)
                }
            })
            .collect();
        let roll: f64 = rng.random();
        let (outcome, applies) = if roll < cfg.fail_probability {
            (OpType::Fail, false)
        } else if roll < cfg.fail_probability + cfg.info_probability {
            (OpType::Info, rng.random_bool(0.5))
        } else {
            (OpType::Ok, true)
        };
        gens.push(Gen {
            process: cursor[t].0,
            invoke_ns,
            commit_ns,
            complete_ns,
            mops,
            outcome,
            applies,
        });
        cursor[t].1 = complete_ns;
        if outcome == OpType::Info {
            cursor[t].0 = next_process;
            next_process += 1;
        }
    }
    let keys = next_elem.len();
    if cfg.final_read {
        let end = cursor.iter().map(|c| c.1).max().unwrap_or(0) + 1;
        gens.push(Gen {
            process: next_process,
            invoke_ns: end,
            commit_ns: end + 1,
            complete_ns: end + 2,
            mops: (0..keys).map(|k| (false, k, Value::Null)).collect(),
            outcome: OpType::Ok,
            applies: true,
        });
    }
    let final_index = cfg.final_read.then_some(gens.len() - 1);
    // Apply in commit order; fill reads.
    let mut order: Vec<usize> = (0..gens.len()).collect();
    order.sort_by_key(|&i| gens[i].commit_ns);
    let mut state: Vec<Vec<i64>> = vec![Vec::new(); keys];
    for i in order {
        let g = &mut gens[i];
        if !g.applies {
            continue;
        }
        // Copy-on-write of the keys this transaction touches.
        let mut local: Vec<(usize, Vec<i64>)> = Vec::new();
        for (append, k, v) in g.mops.iter_mut() {
            let slot = match local.iter().position(|(key, _)| key == k) {
                Some(p) => p,
                None => {
                    local.push((*k, state[*k].clone()));
                    local.len() - 1
                }
            };
            if *append {
                local[slot].1.push(v.as_i64().unwrap_or(0));
            } else {
                let list = &local[slot].1;
                let stale = Some(i) != final_index
                    && rng.random_bool(cfg.stale_probability.clamp(0.0, 1.0));
                let len = if stale {
                    rng.random_range(0..=list.len())
                } else {
                    list.len()
                };
                *v = if cfg.rw_register {
                    list[..len].last().map_or(Value::Null, |x| json!(x))
                } else {
                    json!(list[..len])
                };
            }
        }
        for (k, list) in local {
            state[k] = list;
        }
    }
    // Events in time order.
    let mut events: Vec<(u64, usize, bool)> = Vec::with_capacity(gens.len() * 2);
    for (i, g) in gens.iter().enumerate() {
        events.push((g.invoke_ns, i, true));
        events.push((g.complete_ns, i, false));
    }
    events.sort_unstable();
    let ops = events
        .into_iter()
        .map(|(time_ns, i, invoke)| {
            let g = &gens[i];
            let value = |reads: bool| {
                Value::Array(
                    g.mops
                        .iter()
                        .map(|(append, k, v)| {
                            if *append && cfg.rw_register {
                                json!(["w", k, v])
                            } else if *append {
                                json!(["append", k, v])
                            } else if reads {
                                json!(["r", k, v])
                            } else {
                                json!(["r", k, null])
                            }
                        })
                        .collect(),
                )
            };
            let (op_type, v) = if invoke {
                (OpType::Invoke, value(false))
            } else {
                (g.outcome, value(g.outcome == OpType::Ok))
            };
            let mut op = Op::new(op_type, Process::Client(g.process), "txn", v);
            op.time_ns = time_ns;
            op
        })
        .collect();
    History::from_ops(ops)
}
