//! Generated key-value histories in the shape of Porcupine's kv test data (`kv/c50-bad` and kin):
//! `get` / `put` / `append` on string values, many clients each working on every key, a few keys
//! made illegal. For tests and benchmarks of the checker on invalid multi-key histories.
//!
//! Owns a deterministic (seeded) simulator and its Porcupine-line writer. Every client runs one op at
//! a time and always picks the next op after the client whose op ends first, so all clients stay
//! busy all the time, as Porcupine's test clients were; each op gets a random interval and a
//! linearization point inside it, and outputs are decided by applying the ops to per-key strings in
//! linearization-point order, so the history is linearizable by construction. Appended values are
//! unique (`x CLIENT SEQ y`, as Porcupine's), so append order shows in every later `get`.
//!
//! A key is made illegal with a *lost append*: one ok `get` returns its value without the last
//! append that completed before the get was invoked, as a replica lagging one append behind would.
//! The get is only chosen when no `put` of that key (completed or not) could be linearized between
//! that append and the get, so the key is invalid under every linearization, not usually. Does not
//! own checking, nor the register histories (`histgen`).

use crate::history::{History, Op, OpType, Process};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

/// Shape of a generated kv history.
#[derive(Debug, Clone)]
pub struct KvGenConfig {
    /// Concurrent clients; each works on every key.
    pub clients: usize,
    /// Keys, named `"0"`, `"1"`, ….
    pub keys: usize,
    /// Total ops (each an invoke and, unless it crashed, its completion).
    pub ops: usize,
    /// Keys made illegal (at most `keys`; fewer when a key has no get that can be made illegal).
    pub illegal_keys: usize,
    /// Where in an illegal key's history its lost append goes, as a range of fractions of the
    /// gets that qualify (`0.0..1.0`: anywhere). Early ones are quick to convict; a late one
    /// needs the search to exhaust most of the key first.
    pub illegal_window: (f64, f64),
    /// Probability that an op never completes (its client continues as a new process, as a
    /// crashed Jepsen client does); it takes effect or not, half and half.
    pub crash_probability: f64,
    /// Upper bound of each random delay (invoke → linearization point, point → completion), ns.
    pub max_delay_ns: u64,
    /// Upper bound of a client's random pause between one op's completion and its next invoke,
    /// ns. With none, every client always has an op in flight: about `clients / keys` ops per
    /// key at once, up to twice that in bursts, whose appends the search must try in every order.
    pub max_think_ns: u64,
    /// RNG seed.
    pub seed: u64,
}

impl Default for KvGenConfig {
    /// Porcupine's `kv/c50-bad` shape: 50 clients, 10 keys, about 12,000 ops, 3 keys illegal,
    /// clients always busy.
    fn default() -> Self {
        KvGenConfig {
            clients: 50,
            keys: 10,
            ops: 12_000,
            illegal_keys: 3,
            illegal_window: (0.0, 1.0),
            crash_probability: 0.0,
            max_delay_ns: 1_000_000,
            max_think_ns: 0,
            seed: 0,
        }
    }
}

/// A generated kv history and the keys made illegal.
#[derive(Debug, Clone)]
pub struct KvHistory {
    /// The history (keys in `Op::key`, positions in time order).
    pub history: History,
    /// The keys made illegal, in key order.
    pub illegal: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum F {
    Get,
    Put,
    Append,
}

impl F {
    fn name(self) -> &'static str {
        match self {
            F::Get => "get",
            F::Put => "put",
            F::Append => "append",
        }
    }
}

struct GenOp {
    key: usize,
    process: u64,
    f: F,
    arg: String,
    invoke_ns: u64,
    lin_ns: u64,
    ret_ns: u64,
    crashed: bool,
    takes_effect: bool,
    /// A get's output.
    output: String,
}

/// Generate a kv history (see the module doc).
pub fn generate_kv_history(cfg: &KvGenConfig) -> KvHistory {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let clients = cfg.clients.max(1);
    let keys = cfg.keys.max(1);
    let delay = cfg.max_delay_ns.max(2);
    // Per client: (process id, time its next op is invoked, ops issued).
    let mut threads: Vec<(u64, u64, u64)> = (0..clients)
        .map(|c| (c as u64, rng.random_range(0..delay), 0))
        .collect();
    let mut next_process = clients as u64;
    let mut ops: Vec<GenOp> = Vec::with_capacity(cfg.ops);
    for _ in 0..cfg.ops {
        let c = (0..clients).min_by_key(|&c| (threads[c].1, c)).unwrap_or(0);
        let (process, invoke_ns, seq) = threads[c];
        let lin_ns = invoke_ns + rng.random_range(1..delay);
        let ret_ns = lin_ns + rng.random_range(1..delay);
        let f = match rng.random_range(0..20) {
            0..9 => F::Get,
            9..11 => F::Put,
            _ => F::Append,
        };
        let crashed = rng.random_bool(cfg.crash_probability.clamp(0.0, 1.0));
        ops.push(GenOp {
            key: rng.random_range(0..keys),
            process,
            f,
            arg: format!("x {c} {seq} y"),
            invoke_ns,
            lin_ns,
            ret_ns,
            crashed,
            takes_effect: !crashed || rng.random_bool(0.5),
            output: String::new(),
        });
        let process = if crashed {
            next_process += 1;
            next_process - 1
        } else {
            process
        };
        let think = rng.random_range(0..=cfg.max_think_ns);
        threads[c] = (process, ret_ns + 1 + think, seq + 1);
    }
    let mut order: Vec<usize> = (0..ops.len()).collect();
    order.sort_by_key(|&i| (ops[i].lin_ns, i));
    let mut values: Vec<String> = vec![String::new(); keys];
    for &i in &order {
        let o = &mut ops[i];
        let v = &mut values[o.key];
        match o.f {
            F::Get => o.output = v.clone(),
            F::Put if o.takes_effect => *v = o.arg.clone(),
            F::Append if o.takes_effect => v.push_str(&o.arg),
            _ => {}
        }
    }
    let mut illegal = Vec::new();
    let mut key_order: Vec<usize> = (0..keys).collect();
    for i in (1..keys).rev() {
        key_order.swap(i, rng.random_range(0..=i));
    }
    for &k in &key_order {
        if illegal.len() >= cfg.illegal_keys {
            break;
        }
        if lose_an_append(&mut ops, k, cfg.illegal_window, &mut rng) {
            illegal.push(k);
        }
    }
    illegal.sort_unstable();
    KvHistory {
        history: emit(&ops),
        illegal: illegal.iter().map(|k| k.to_string()).collect(),
    }
}

/// Make one ok get of key `k` miss the last append that completed before it was invoked (see the
/// module doc); false when no get of `k` qualifies.
fn lose_an_append(ops: &mut [GenOp], k: usize, window: (f64, f64), rng: &mut ChaCha8Rng) -> bool {
    let on_key: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].key == k).collect();
    let mut candidates: Vec<(usize, usize)> = Vec::new();
    for &g in &on_key {
        let get = &ops[g];
        if get.f != F::Get || get.crashed {
            continue;
        }
        let Some(&x) = on_key
            .iter()
            .filter(|&&a| ops[a].f == F::Append && !ops[a].crashed && ops[a].ret_ns < get.invoke_ns)
            .max_by_key(|&&a| (ops[a].ret_ns, a))
        else {
            continue;
        };
        // A put could sit between the append and the get if its interval (to +infinity when it
        // never completed) meets [append invoke, get return].
        let put_between = on_key.iter().any(|&p| {
            let p = &ops[p];
            p.f == F::Put && p.invoke_ns < get.ret_ns && (p.crashed || p.ret_ns > ops[x].invoke_ns)
        });
        if !put_between && get.output.contains(&ops[x].arg) {
            candidates.push((g, x));
        }
    }
    if candidates.is_empty() {
        return false;
    }
    let n = candidates.len();
    let at = |f: f64| ((f.clamp(0.0, 1.0) * n as f64) as usize).min(n - 1);
    let (from, to) = (at(window.0), at(window.1).max(at(window.0)));
    let (g, x) = candidates[rng.random_range(from..=to)];
    let token = ops[x].arg.clone();
    ops[g].output = ops[g].output.replacen(&token, "", 1);
    true
}

/// Invoke and completion events in time order.
fn emit(ops: &[GenOp]) -> History {
    let mut events: Vec<(u64, usize, bool)> = Vec::with_capacity(ops.len() * 2);
    for (i, o) in ops.iter().enumerate() {
        events.push((o.invoke_ns, i, false));
        if !o.crashed {
            events.push((o.ret_ns, i, true));
        }
    }
    events.sort_unstable_by_key(|&(t, i, done)| (t, done, i));
    let out = events
        .into_iter()
        .map(|(t, i, done)| {
            let o = &ops[i];
            let value = match (o.f, done) {
                (F::Get, false) => Value::Null,
                (F::Get, true) => Value::String(o.output.clone()),
                _ => Value::String(o.arg.clone()),
            };
            let ty = if done { OpType::Ok } else { OpType::Invoke };
            let mut op = Op::new(ty, Process::Client(o.process), o.f.name(), value);
            op.key = Some(o.key.to_string().into());
            op.time_ns = t;
            op
        })
        .collect();
    History::from_ops(out)
}

/// The history as Porcupine's kv test data writes it: one EDN op map per line
/// (`{:process 0, :type :invoke, :f :put, :key "1", :value "x 0 0 y"}`), which `shakedown check`
/// reads as `--format porcupine`. Ops without a key are written with key `""`.
pub fn write_porcupine(history: &History) -> String {
    let mut out = String::new();
    for o in &history.ops {
        let value = match &o.value {
            Value::Null => "nil".to_string(),
            v => v.to_string(),
        };
        let key = Value::String(o.key.clone().map(String::from).unwrap_or_default());
        out.push_str(&format!(
            "{{:process {}, :type :{}, :f :{}, :key {key}, :value {value}}}\n",
            o.process,
            match o.op_type {
                OpType::Invoke => "invoke",
                OpType::Ok => "ok",
                OpType::Fail => "fail",
                OpType::Info => "info",
            },
            o.f
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::Verdict;
    use crate::checker::linear::{Decide, LinearConfig, check_history};
    use crate::model::KvModel;

    fn small(seed: u64, illegal_keys: usize) -> KvGenConfig {
        KvGenConfig {
            clients: 6,
            keys: 4,
            ops: 400,
            illegal_keys,
            crash_probability: 0.02,
            seed,
            ..KvGenConfig::default()
        }
    }

    #[test]
    fn deterministic_well_formed_and_shaped() {
        let a = generate_kv_history(&small(3, 2));
        let b = generate_kv_history(&small(3, 2));
        assert_eq!(a.history.ops, b.history.ops);
        assert_eq!(a.illegal, b.illegal);
        assert_eq!(a.illegal.len(), 2);
        a.history.pairs().expect("well-formed");
        let fs: std::collections::BTreeSet<&str> =
            a.history.ops.iter().map(|o| o.f.as_str()).collect();
        assert_eq!(fs, ["append", "get", "put"].into());
        assert!(
            a.history
                .ops
                .windows(2)
                .all(|w| w[0].time_ns <= w[1].time_ns)
        );
        let text = write_porcupine(&a.history);
        let back = crate::import::read_porcupine(&text, "gen").expect("reads back");
        assert_eq!(back.ops.len(), a.history.ops.len());
        assert_eq!(back.ops[5].value, a.history.ops[5].value);
    }

    /// Legal histories check valid; every key made illegal is invalid and no other key is.
    #[test]
    fn the_keys_made_illegal_and_only_they_are_invalid() {
        let cfg = LinearConfig {
            decide: Decide::AllKeys,
            ..LinearConfig::default()
        };
        for seed in 0..6 {
            let g = generate_kv_history(&small(seed, (seed % 3) as usize));
            let r = check_history(&KvModel::porcupine(), &g.history, &cfg);
            let invalid: Vec<String> = r
                .parts
                .iter()
                .filter(|p| p.verdict == Verdict::Invalid)
                .filter_map(|p| p.key.clone())
                .collect();
            let mut invalid = invalid;
            invalid.sort();
            assert_eq!(invalid, g.illegal, "seed {seed}: {}", r.explain());
            assert!(
                r.parts.iter().all(|p| p.verdict != Verdict::Unknown),
                "seed {seed}: {}",
                r.explain()
            );
        }
    }
}
