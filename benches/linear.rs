//! Benchmarks of the linearizability checker on generated register histories.
//!
//! Owns two scenarios: (a) 1,000,000 operations over 100 keys with 10 processes per key, (b) one key
//! with 20 concurrent processes that crash often (info ops), 2,000 operations. Run with
//! `cargo bench --bench linear`; with `LINEAR_BENCH_ONCE=1` each scenario runs once and prints
//! verdict, time, ops/s and peak RSS (VmHWM) instead of a criterion statistics run
//! (`LINEAR_BENCH_ONCE=a|b|c` runs one scenario; `c` is a budget stress case with 40% crashes).

use criterion::{Criterion, criterion_group};
use shakedown::checker::Verdict;
use shakedown::checker::linear::histgen::{GenConfig, generate_register_history};
use shakedown::checker::linear::{LinearConfig, LinearResult, check_history};
use shakedown::history::History;
use shakedown::model::{RegisterConfig, RegisterModel};
use std::time::{Duration, Instant};

#[path = "common/mod.rs"]
mod common;
use common::peak_rss_kib;

fn big() -> GenConfig {
    GenConfig {
        keys: 100,
        processes_per_key: 10,
        ops: 1_000_000,
        info_probability: 0.01,
        seed: 1,
        ..GenConfig::default()
    }
}

fn crashy() -> GenConfig {
    GenConfig {
        keys: 1,
        processes_per_key: 20,
        ops: 2_000,
        info_probability: 0.1,
        seed: 2,
        ..GenConfig::default()
    }
}

fn config() -> LinearConfig {
    LinearConfig {
        time_limit: Some(Duration::from_secs(10)),
        ..LinearConfig::default()
    }
}

fn run(h: &History) -> LinearResult {
    check_history(
        &RegisterModel::cas_register(RegisterConfig::etcd()),
        h,
        &config(),
    )
}

fn once() {
    let which = std::env::var("LINEAR_BENCH_ONCE").unwrap_or_default();
    let scenarios = [
        ("a", "1M ops / 100 keys / 10 procs per key", big()),
        ("b", "1 key / 20 procs / crashes / 2k ops", crashy()),
        (
            "c",
            "budget stress: 1 key / 20 procs / 40% crashes / 2k ops",
            GenConfig {
                info_probability: 0.4,
                seed: 3,
                ..crashy()
            },
        ),
    ];
    for (id, name, g) in scenarios {
        if which != "1" && which != id {
            continue;
        }
        let t0 = Instant::now();
        let h = generate_register_history(&g);
        let gen_s = t0.elapsed().as_secs_f64();
        let rss_before = peak_rss_kib().unwrap_or(0);
        let t1 = Instant::now();
        let r = run(&h);
        let s = t1.elapsed().as_secs_f64();
        println!(
            "{id}: {name}: generated {} events in {gen_s:.2} s (peak RSS {} MiB); check {} in {s:.2} s = {:.0} ops/s; peak RSS {} MiB; max part cache {} entries / {} KiB",
            h.ops.len(),
            rss_before / 1024,
            r.verdict,
            g.ops as f64 / s,
            peak_rss_kib().unwrap_or(0) / 1024,
            r.parts.iter().map(|p| p.cache_entries).max().unwrap_or(0),
            r.parts.iter().map(|p| p.cache_bytes).max().unwrap_or(0) / 1024,
        );
        for p in r
            .parts
            .iter()
            .filter(|p| p.verdict != Verdict::Valid)
            .take(3)
        {
            println!("  {:?}: {} {:?}", p.key, p.verdict, p.reason);
        }
    }
}

fn bench_big(c: &mut Criterion) {
    let h = generate_register_history(&big());
    let mut g = c.benchmark_group("linear");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(30));
    g.bench_function("1M_ops_100_keys_10_procs", |b| b.iter(|| run(&h)));
    g.finish();
}

fn bench_crashy(c: &mut Criterion) {
    let h = generate_register_history(&crashy());
    let mut g = c.benchmark_group("linear");
    g.sample_size(10);
    g.bench_function("2k_ops_1_key_20_procs_crashes", |b| b.iter(|| run(&h)));
    g.finish();
}

criterion_group!(benches, bench_big, bench_crashy);

fn main() {
    if std::env::var_os("LINEAR_BENCH_ONCE").is_some() {
        once();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
