//! Benchmarks of the session-guarantee checker on generated versioned register histories.
//!
//! Owns two scenarios: (a) 1,000,000 linearizable operations over 100 keys and 50 client threads
//! with 1% crashes (valid), (b) the same shape with 5% injected stale reads (many violations, so the
//! witness path is exercised). Run with `cargo bench --bench session`; with `SESSION_BENCH_ONCE=1`
//! each scenario runs once and prints verdict, time, ops/s and peak RSS (VmHWM) instead of a
//! criterion statistics run (`SESSION_BENCH_ONCE=a|b` runs one scenario).

use criterion::{Criterion, criterion_group};
use shakedown::checker::session::histgen::{VersionedGenConfig, generate_versioned_history};
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

fn run(h: &History) -> SessionResult {
    check_sessions(h, &SessionConfig::default())
}

fn once() {
    let which = std::env::var("SESSION_BENCH_ONCE").unwrap_or_default();
    let scenarios = [
        (
            "a",
            "1M ops / 100 keys / 50 threads / linearizable",
            clean(),
        ),
        (
            "b",
            "1M ops / 100 keys / 50 threads / 5% stale reads",
            stale(),
        ),
    ];
    for (id, name, g) in scenarios {
        if which != "1" && which != id {
            continue;
        }
        let t0 = Instant::now();
        let h = generate_versioned_history(&g);
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
            g.ops as f64 / s,
            peak_rss_kib().unwrap_or(0) / 1024,
        );
        print!("{}", r.table());
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("session");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    for (name, cfg) in [
        ("1M_ops_linearizable", clean()),
        ("1M_ops_5pct_stale", stale()),
    ] {
        let h = generate_versioned_history(&cfg);
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
