//! Benchmarks of the session-guarantee checker on generated versioned register and list-append
//! histories.
//!
//! Owns four scenarios: (a) 1,000,000 linearizable operations over 100 keys and 50 client threads
//! with 1% crashes (valid), (b) the same shape with 5% injected stale reads (many violations, so the
//! witness path is exercised), (c) 1,000,000 linearizable list-append operations over 20,000 keys, 10
//! in use at a time (about 25 appends per key, reads return whole lists; versions recovered from
//! the lists), (d) (c)
//! with 5% stale prefix reads. Run with `cargo bench --bench session`; with `SESSION_BENCH_ONCE=1`
//! each scenario runs once and prints verdict, time, ops/s and peak RSS (VmHWM) instead of a
//! criterion statistics run (`SESSION_BENCH_ONCE=a|b|c|d` runs one scenario).

use criterion::{Criterion, criterion_group};
use shakedown::checker::session::histgen::{
    ListAppendGenConfig, VersionedGenConfig, generate_list_append_history,
    generate_versioned_history,
};
use shakedown::checker::session::{SessionConfig, SessionResult, check_sessions};
use shakedown::history::History;
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

fn run(h: &History) -> SessionResult {
    check_sessions(h, &SessionConfig::default())
}

fn once() {
    let which = std::env::var("SESSION_BENCH_ONCE").unwrap_or_default();
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
