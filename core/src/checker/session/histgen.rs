//! Seeded generators of linearizable histories, optionally with injected stale reads, for the
//! session checker's tests and benchmarks: versioned register histories (etcd-like: one global
//! revision counter, each successful write/cas creates the next revision and that becomes the
//! key's version) and list-append histories (no versions). Client threads pick a random key per
//! op, so a session spans keys. Owns generation only.

use crate::history::{History, Op, OpType, Process};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// Shape of a generated history.
#[derive(Debug, Clone)]
pub struct VersionedGenConfig {
    /// Number of keys (ops carry keys `k0`, `k1`, …).
    pub keys: usize,
    /// Concurrent client threads.
    pub threads: usize,
    /// Total operations (each is an invoke plus one completion).
    pub ops: usize,
    /// Probability that an op crashes (completes `info`; its effect is random).
    pub info_probability: f64,
    /// Probability that an ok read returns a random older version of its key instead of the
    /// current one (0 keeps the history linearizable).
    pub stale_read_probability: f64,
    /// Written values are drawn from `0..value_range`.
    pub value_range: i64,
    /// Upper bound of each random delay, ns.
    pub max_delay_ns: u64,
    /// RNG seed.
    pub seed: u64,
}

impl Default for VersionedGenConfig {
    fn default() -> Self {
        VersionedGenConfig {
            keys: 3,
            threads: 5,
            ops: 200,
            info_probability: 0.05,
            stale_read_probability: 0.0,
            value_range: 5,
            max_delay_ns: 1_000_000,
            seed: 0,
        }
    }
}

struct G {
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

/// Generate a history (see the module doc).
pub fn generate_versioned_history(cfg: &VersionedGenConfig) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let keys = cfg.keys.max(1);
    let threads = cfg.threads.max(1);
    let delay = cfg.max_delay_ns.max(2);
    let range = cfg.value_range.max(1);
    let mut cursor: Vec<(u64, u64)> = (0..threads)
        .map(|t| (t as u64, rng.random_range(0..delay)))
        .collect();
    let mut gs: Vec<G> = Vec::with_capacity(cfg.ops);
    for _ in 0..cfg.ops {
        let t = rng.random_range(0..threads);
        let (process, at) = cursor[t];
        let lin_ns = at + rng.random_range(1..delay);
        let ret_ns = lin_ns + rng.random_range(1..delay);
        let crashed = rng.random_bool(cfg.info_probability.clamp(0.0, 1.0));
        let (f, arg) = match rng.random_range(0..10) {
            0..5 => ("read", (0, 0)),
            5..8 => ("write", (rng.random_range(0..range), 0)),
            _ => (
                "cas",
                (rng.random_range(0..range), rng.random_range(0..range)),
            ),
        };
        gs.push(G {
            key: rng.random_range(0..keys),
            process,
            f,
            arg,
            invoke_ns: at,
            lin_ns,
            ret_ns,
            crashed,
            takes_effect: !crashed || rng.random_bool(0.5),
        });
        let next = if crashed {
            process + threads as u64
        } else {
            process
        };
        cursor[t] = (next, ret_ns + rng.random_range(1..delay));
    }
    let mut order: Vec<usize> = (0..gs.len()).collect();
    order.sort_unstable_by_key(|&i| (gs[i].lin_ns, i));
    // Per key: every (value, version) state it has had, oldest first; (null, 0) = absent.
    let mut states: Vec<Vec<(Value, i64)>> = vec![vec![(Value::Null, 0)]; keys];
    let mut revision = 0i64;
    let mut out: Vec<(OpType, Value, Option<i64>, Option<&'static str>)> =
        vec![(OpType::Ok, Value::Null, None, None); gs.len()];
    let stale_p = cfg.stale_read_probability.clamp(0.0, 1.0);
    for &i in &order {
        let g = &gs[i];
        let st = &mut states[g.key];
        let (cur_val, cur_ver) = st[st.len() - 1].clone();
        let o = match g.f {
            "read" => {
                let (val, ver) = if stale_p > 0.0 && st.len() > 1 && rng.random_bool(stale_p) {
                    st[rng.random_range(0..st.len() - 1)].clone()
                } else {
                    (cur_val, cur_ver)
                };
                (OpType::Ok, val, (ver > 0).then_some(ver), None)
            }
            "write" => {
                let mut ver = None;
                if g.takes_effect {
                    revision += 1;
                    st.push((json!(g.arg.0), revision));
                    ver = Some(revision);
                }
                (OpType::Ok, json!(g.arg.0), ver, None)
            }
            _ => {
                if cur_val == json!(g.arg.0) {
                    let mut ver = None;
                    if g.takes_effect {
                        revision += 1;
                        st.push((json!(g.arg.1), revision));
                        ver = Some(revision);
                    }
                    (OpType::Ok, json!([g.arg.0, g.arg.1]), ver, None)
                } else {
                    (
                        OpType::Fail,
                        json!([g.arg.0, g.arg.1]),
                        None,
                        Some("cas-mismatch"),
                    )
                }
            }
        };
        out[i] = if g.crashed {
            let v = if g.f == "read" { Value::Null } else { o.1 };
            (OpType::Info, v, None, Some("timeout"))
        } else {
            o
        };
    }
    let mut events: Vec<(u64, usize, bool)> = Vec::with_capacity(gs.len() * 2);
    for (i, g) in gs.iter().enumerate() {
        events.push((g.invoke_ns, i, false));
        events.push((g.ret_ns, i, true));
    }
    events.sort_unstable_by_key(|&(t, i, done)| (t, done, i));
    let mut ops = Vec::with_capacity(events.len());
    for (t, i, done) in events {
        let g = &gs[i];
        let mut op = if done {
            let (ty, v, ver, err) = &out[i];
            let mut op = Op::new(*ty, Process::Client(g.process), g.f, v.clone());
            op.version = *ver;
            op.error = err.map(str::to_string);
            op
        } else {
            let v = match g.f {
                "read" => Value::Null,
                "write" => json!(g.arg.0),
                _ => json!([g.arg.0, g.arg.1]),
            };
            Op::new(OpType::Invoke, Process::Client(g.process), g.f, v)
        };
        op.time_ns = t;
        op.key = Some(format!("k{}", g.key).into());
        op.node = Some(format!("n{}", g.process % threads as u64 % 5 + 1).into());
        ops.push(op);
    }
    History::from_ops(ops)
}

/// Shape of a generated list-append history.
#[derive(Debug, Clone)]
pub struct ListAppendGenConfig {
    /// Number of keys (ops carry keys `k0`, `k1`, …).
    pub keys: usize,
    /// Keys in use at any moment (0 = all): op `i` picks uniformly among
    /// `active_keys` keys starting at `i · keys / ops`, so the key space is walked over time
    /// and lists stay short while sessions still revisit keys.
    pub active_keys: usize,
    /// Concurrent client threads.
    pub threads: usize,
    /// Total operations (each is an invoke plus one completion).
    pub ops: usize,
    /// Probability that an op is an append (else a read).
    pub append_probability: f64,
    /// Probability that an op crashes (completes `info`; an append's effect is random).
    pub info_probability: f64,
    /// Probability that an ok read returns a random shorter prefix of its key's list instead
    /// of the whole list (0 keeps the history linearizable).
    pub stale_read_probability: f64,
    /// Upper bound of each random delay, ns.
    pub max_delay_ns: u64,
    /// RNG seed.
    pub seed: u64,
}

impl Default for ListAppendGenConfig {
    fn default() -> Self {
        ListAppendGenConfig {
            keys: 3,
            active_keys: 0,
            threads: 5,
            ops: 200,
            append_probability: 0.5,
            info_probability: 0.05,
            stale_read_probability: 0.0,
            max_delay_ns: 1_000_000,
            seed: 0,
        }
    }
}

/// (key, process, append element or 0 for a read, invoke ns, linearization ns, return ns,
/// crashed, takes effect)
type LaOp = (usize, u64, i64, u64, u64, u64, bool, bool);

/// Generate a list-append history: appends of per-key unique integers (1, 2, … in invoke
/// order), reads returning the key's whole list at their linearization point (or, with
/// `stale_read_probability`, a shorter prefix). No op carries a system version.
pub fn generate_list_append_history(cfg: &ListAppendGenConfig) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let keys = cfg.keys.max(1);
    let threads = cfg.threads.max(1);
    let delay = cfg.max_delay_ns.max(2);
    let mut next_elem = vec![1i64; keys];
    let mut cursor: Vec<(u64, u64)> = (0..threads)
        .map(|t| (t as u64, rng.random_range(0..delay)))
        .collect();
    let mut gs: Vec<LaOp> = Vec::with_capacity(cfg.ops);
    let ops_total = cfg.ops.max(1);
    for op_i in 0..cfg.ops {
        let t = rng.random_range(0..threads);
        let (process, at) = cursor[t];
        let lin_ns = at + rng.random_range(1..delay);
        let ret_ns = lin_ns + rng.random_range(1..delay);
        let crashed = rng.random_bool(cfg.info_probability.clamp(0.0, 1.0));
        let key = if cfg.active_keys == 0 || cfg.active_keys >= keys {
            rng.random_range(0..keys)
        } else {
            let base = (op_i as u128 * keys as u128 / ops_total as u128) as usize;
            (base + rng.random_range(0..cfg.active_keys)).min(keys - 1)
        };
        let elem = if rng.random_bool(cfg.append_probability.clamp(0.0, 1.0)) {
            next_elem[key] += 1;
            next_elem[key] - 1
        } else {
            0
        };
        let effect = !crashed || rng.random_bool(0.5);
        gs.push((key, process, elem, at, lin_ns, ret_ns, crashed, effect));
        let next = if crashed {
            process + threads as u64
        } else {
            process
        };
        cursor[t] = (next, ret_ns + rng.random_range(1..delay));
    }
    let mut order: Vec<usize> = (0..gs.len()).collect();
    order.sort_unstable_by_key(|&i| (gs[i].4, i));
    let mut lists: Vec<Vec<i64>> = vec![Vec::new(); keys];
    let mut reads: Vec<Value> = vec![Value::Null; gs.len()];
    let stale_p = cfg.stale_read_probability.clamp(0.0, 1.0);
    for &i in &order {
        let (key, _, elem, _, _, _, _, effect) = gs[i];
        let l = &mut lists[key];
        if elem != 0 {
            if effect {
                l.push(elem);
            }
        } else {
            let len = if stale_p > 0.0 && !l.is_empty() && rng.random_bool(stale_p) {
                rng.random_range(0..l.len())
            } else {
                l.len()
            };
            reads[i] = json!(l[..len]);
        }
    }
    let mut events: Vec<(u64, usize, bool)> = Vec::with_capacity(gs.len() * 2);
    for (i, g) in gs.iter().enumerate() {
        events.push((g.3, i, false));
        events.push((g.5, i, true));
    }
    events.sort_unstable_by_key(|&(t, i, done)| (t, done, i));
    let mut ops = Vec::with_capacity(events.len());
    for (t, i, done) in events {
        let (key, process, elem, _, _, _, crashed, _) = gs[i];
        let f = if elem != 0 { "append" } else { "read" };
        let mut op = match (done, crashed, elem != 0) {
            (false, _, true) => Op::new(OpType::Invoke, Process::Client(process), f, json!(elem)),
            (false, _, false) => Op::new(OpType::Invoke, Process::Client(process), f, Value::Null),
            (true, true, _) => {
                let v = if elem != 0 { json!(elem) } else { Value::Null };
                let mut op = Op::new(OpType::Info, Process::Client(process), f, v);
                op.error = Some("timeout".to_string());
                op
            }
            (true, false, true) => Op::new(OpType::Ok, Process::Client(process), f, json!(elem)),
            (true, false, false) => {
                Op::new(OpType::Ok, Process::Client(process), f, reads[i].clone())
            }
        };
        op.time_ns = t;
        op.key = Some(format!("k{key}").into());
        op.node = Some(format!("n{}", process % threads as u64 % 5 + 1).into());
        ops.push(op);
    }
    History::from_ops(ops)
}
