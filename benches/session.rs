//! Benchmarks of the session-guarantee checker on generated versioned register and list-append
//! histories, and of the set checker (`checker::set`) on a generated set history.
//!
//! Owns four scenarios: (a) 1,000,000 linearizable operations over 100 keys and 50 client threads
//! with 1% crashes (valid), (b) the same shape with 5% injected stale reads (many violations, so the
//! witness path is exercised), (c) 1,000,000 linearizable list-append operations over 20,000 keys, 10
//! in use at a time (about 25 appends per key, reads return whole lists; versions recovered from
//! the lists), (d) (c)
//! with 5% stale prefix reads, (set) 1,000,000 set operations (adds : reads = 10 : 1, 10 threads,
//! a fresh key every 200 ops, 1% indeterminate adds, 0.1% of acknowledged adds lost, a final read
//! of every key) through the set checker. Run with `cargo bench --bench session`; with
//! `SESSION_BENCH_ONCE=1` each scenario runs once and prints verdict, time, ops/s and peak RSS
//! (VmHWM) instead of a criterion statistics run (`SESSION_BENCH_ONCE=a|b|c|d|set` runs one).

use criterion::{Criterion, criterion_group};
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use shakedown::checker::Checker;
use shakedown::checker::session::histgen::{
    ListAppendGenConfig, VersionedGenConfig, generate_list_append_history,
    generate_versioned_history,
};
use shakedown::checker::session::{SessionConfig, SessionResult, check_sessions};
use shakedown::checker::set::SetChecker;
use shakedown::history::{History, Op, OpType, Process};
use std::time::{Duration, Instant};

#[path = "common/mod.rs"]
mod common;
use common::peak_rss_kib;

fn clean() -> VersionedGenConfig {
    VersionedGenConfig {
        keys: 100,
        threads: 50,
        ops: 1_000_000,
        info_probability: 0.01,
        stale_read_probability: 0.0,
        value_range: 100,
        seed: 1,
        ..VersionedGenConfig::default()
    }
}

fn stale() -> VersionedGenConfig {
    VersionedGenConfig {
        stale_read_probability: 0.05,
        seed: 2,
        ..clean()
    }
}

fn list_append() -> ListAppendGenConfig {
    ListAppendGenConfig {
        keys: 20_000,
        active_keys: 10,
        threads: 50,
        ops: 1_000_000,
        append_probability: 0.5,
        info_probability: 0.01,
        stale_read_probability: 0.0,
        seed: 3,
        ..ListAppendGenConfig::default()
    }
}

fn list_append_stale() -> ListAppendGenConfig {
    ListAppendGenConfig {
        stale_read_probability: 0.05,
        seed: 4,
        ..list_append()
    }
}

/// A scenario's history generator.
enum Gen {
    Versioned(VersionedGenConfig),
    ListAppend(ListAppendGenConfig),
}

impl Gen {
    fn generate(&self) -> History {
        match self {
            Gen::Versioned(c) => generate_versioned_history(c),
            Gen::ListAppend(c) => generate_list_append_history(c),
        }
    }

    fn ops(&self) -> usize {
        match self {
            Gen::Versioned(c) => c.ops,
            Gen::ListAppend(c) => c.ops,
        }
    }
}

fn scenarios() -> [(&'static str, &'static str, Gen); 4] {
    [
        (
            "a",
            "1M ops / 100 keys / 50 threads / linearizable",
            Gen::Versioned(clean()),
        ),
        (
            "b",
            "1M ops / 100 keys / 50 threads / 5% stale reads",
            Gen::Versioned(stale()),
        ),
        (
            "c",
            "1M list-append ops / 20k keys / 50 threads / linearizable",
            Gen::ListAppend(list_append()),
        ),
        (
            "d",
            "1M list-append ops / 20k keys / 50 threads / 5% stale prefixes",
            Gen::ListAppend(list_append_stale()),
        ),
    ]
}

/// A set history of `ops` operations (see the module doc), with the final reads after them.
fn generate_set_history(ops: usize, seed: u64) -> History {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let threads = 10u64;
    let ops_per_key = 200;
    let mut out: Vec<Op> = Vec::with_capacity(2 * ops + 20_000);
    let mut t = 0u64;
    let mut procs: Vec<u64> = (0..threads).collect();
    // The set each key holds (what reads return): acknowledged adds, minus the lost ones.
    let mut sets: Vec<Vec<i64>> = Vec::new();
    let push = |out: &mut Vec<Op>, ty, p, f: &str, key: usize, v: Value, t: u64| {
        let mut o = Op::new(ty, Process::Client(p), f, v);
        o.key = Some(key.to_string().into());
        o.time_ns = t;
        o.index = out.len() as u64;
        out.push(o);
    };
    let mut element = 0i64;
    for i in 0..ops {
        let key = i / ops_per_key;
        if sets.len() <= key {
            sets.push(Vec::new());
        }
        let thread = (i as u64) % threads;
        let p = procs[thread as usize];
        t += 1000;
        if rng.random_range(0..11) < 10 {
            let e = element;
            element += 1;
            push(&mut out, OpType::Invoke, p, "add", key, json!(e), t);
            let r = rng.random_range(0..1000);
            let ty = if r < 10 { OpType::Info } else { OpType::Ok };
            if ty == OpType::Info {
                procs[thread as usize] += threads;
            }
            // Info adds land half the time; acknowledged ones except 0.1%.
            if (ty == OpType::Ok && r >= 11) || (ty == OpType::Info && r % 2 == 0) {
                sets[key].push(e);
            }
            push(&mut out, ty, p, "add", key, json!(e), t + 500);
        } else {
            push(&mut out, OpType::Invoke, p, "read", key, Value::Null, t);
            let v = json!(sets[key]);
            push(&mut out, OpType::Ok, p, "read", key, v, t + 500);
        }
    }
    for (key, set) in sets.iter().enumerate() {
        t += 1000;
        push(&mut out, OpType::Invoke, 0, "read", key, Value::Null, t);
        push(&mut out, OpType::Ok, 0, "read", key, json!(set), t + 500);
    }
    History::from_ops(out)
}

fn set_once() {
    let t0 = Instant::now();
    let h = generate_set_history(1_000_000, 5);
    let gen_s = t0.elapsed().as_secs_f64();
    let rss_before = peak_rss_kib().unwrap_or(0);
    let t1 = Instant::now();
    let r = SetChecker.check(&h);
    let s = t1.elapsed().as_secs_f64();
    println!(
        "set: 1M set ops / 10 threads / 200 ops per key: generated {} events in {gen_s:.2} s (peak RSS {} MiB); check {} in {s:.2} s = {:.0} ops/s; peak RSS {} MiB",
        h.ops.len(),
        rss_before / 1024,
        r.verdict,
        1e6 / s,
        peak_rss_kib().unwrap_or(0) / 1024,
    );
    println!("{}", r.summary);
}

fn run(h: &History) -> SessionResult {
    check_sessions(h, &SessionConfig::default())
}

fn once() {
    let which = std::env::var("SESSION_BENCH_ONCE").unwrap_or_default();
    if which == "1" || which == "set" {
        set_once();
    }
    for (id, name, g) in scenarios() {
        if which != "1" && which != id {
            continue;
        }
        let t0 = Instant::now();
        let h = g.generate();
        let gen_s = t0.elapsed().as_secs_f64();
        let rss_before = peak_rss_kib().unwrap_or(0);
        let t1 = Instant::now();
        let r = run(&h);
        let s = t1.elapsed().as_secs_f64();
        println!(
            "{id}: {name}: generated {} events in {gen_s:.2} s (peak RSS {} MiB); check {} in {s:.2} s = {:.0} ops/s; peak RSS {} MiB",
            h.ops.len(),
            rss_before / 1024,
            r.verdict,
            g.ops() as f64 / s,
            peak_rss_kib().unwrap_or(0) / 1024,
        );
        println!("version source: {}", r.version_source.name());
        print!("{}", r.table());
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("session");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    let names = [
        "1M_ops_linearizable",
        "1M_ops_5pct_stale",
        "1M_list_append_linearizable",
        "1M_list_append_5pct_stale",
    ];
    for (name, (_, _, gen_cfg)) in names.into_iter().zip(scenarios()) {
        let h = gen_cfg.generate();
        g.bench_function(name, |b| b.iter(|| run(&h)));
    }
    let h = generate_set_history(1_000_000, 5);
    g.bench_function("1M_set_ops_set_checker", |b| {
        b.iter(|| SetChecker.check(&h))
    });
    g.finish();
}

criterion_group!(benches, bench);

fn main() {
    if std::env::var_os("SESSION_BENCH_ONCE").is_some() {
        once();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
