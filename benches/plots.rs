//! Benchmark of the report plots on a generated 1,000,000-operation history with nemesis faults.
//!
//! Owns one scenario: `generate_register_history` with 1,000,000 client operations (2,000,000
//! events: invoke + completion) over 100 keys with 10 processes per key and 5% crashed (info) ops and
//! delays up to 100 ms (so the run spans minutes),
//! plus partition, kill and pause nemesis pairs spread over the run. Renders the three charts
//! (latency-raw, latency-quantiles with 1 s windows, throughput with 1 s windows). Run with
//! `cargo bench --bench plots`; with `PLOTS_BENCH_ONCE=1` it renders once and prints the time of
//! each chart, the total and the SVG sizes instead of a criterion statistics run
//! (`PLOTS_BENCH_OUT=dir` also writes the SVGs there).

use criterion::{Criterion, criterion_group};
use serde_json::json;
use shakedown::checker::linear::histgen::{GenConfig, generate_register_history};
use shakedown::history::{History, Op, OpType, Process};
use shakedown::report::{latency_quantiles_svg, latency_raw_svg, throughput_svg};
use std::time::{Duration, Instant};

fn big() -> History {
    let h = generate_register_history(&GenConfig {
        keys: 100,
        processes_per_key: 10,
        ops: 1_000_000,
        info_probability: 0.05,
        max_delay_ns: 100_000_000,
        seed: 7,
        ..GenConfig::default()
    });
    let end_ns = h.ops.iter().map(|o| o.time_ns).max().unwrap_or(0);
    let mut ops = h.ops;
    let nem = |t: u64, f: &str, v: serde_json::Value| {
        let mut op = Op::new(OpType::Info, Process::Nemesis, f, v);
        op.time_ns = t;
        op
    };
    let at = |frac: f64| (end_ns as f64 * frac) as u64;
    let pairs = [
        (
            0.10,
            "start-partition",
            json!("one"),
            json!({"grudge": {"n1": ["n5"], "n2": ["n5"], "n3": ["n5"], "n4": ["n5"], "n5": ["n1", "n2", "n3", "n4"]}}),
        ),
        (0.25, "stop-partition", json!(null), json!("healed")),
        (0.35, "kill", json!("one"), json!({"nodes": ["n2"]})),
        (0.50, "start", json!("all"), json!({"nodes": ["n2"]})),
        (0.60, "pause", json!("one"), json!({"nodes": ["n3"]})),
        (0.70, "resume", json!("all"), json!({"nodes": ["n3"]})),
        (
            0.80,
            "start-partition",
            json!("majority"),
            json!({"grudge": {"n1": ["n3", "n4", "n5"], "n2": ["n3", "n4", "n5"], "n3": ["n1", "n2"], "n4": ["n1", "n2"], "n5": ["n1", "n2"]}}),
        ),
    ];
    for (frac, f, inv, done) in pairs {
        ops.push(nem(at(frac), f, inv));
        ops.push(nem(at(frac) + 20_000_000.min(end_ns / 100), f, done));
    }
    ops.sort_by_key(|o| o.time_ns);
    History::from_ops(ops)
}

type Chart = (&'static str, fn(&History) -> String);

fn charts() -> [Chart; 3] {
    [
        ("latency-raw", |h| latency_raw_svg(h)),
        ("latency-quantiles", |h| latency_quantiles_svg(h, 1.0)),
        ("throughput", |h| throughput_svg(h, 1.0)),
    ]
}

fn once() {
    let t0 = Instant::now();
    let h = big();
    let end_s = h.ops.iter().map(|o| o.time_ns).max().unwrap_or(0) as f64 / 1e9;
    println!(
        "generated {} events spanning {end_s:.1} s in {:.2} s",
        h.ops.len(),
        t0.elapsed().as_secs_f64()
    );
    let out_dir = std::env::var_os("PLOTS_BENCH_OUT");
    let total = Instant::now();
    for (name, render) in charts() {
        let t = Instant::now();
        let svg = render(&h);
        println!(
            "{name}: {:.3} s, {} KiB",
            t.elapsed().as_secs_f64(),
            svg.len() / 1024
        );
        if let Some(dir) = &out_dir {
            let path = std::path::Path::new(dir).join(format!("{name}.svg"));
            if let Err(e) = std::fs::write(&path, svg) {
                eprintln!("{}: {e}", path.display());
            }
        }
    }
    println!("total: {:.3} s", total.elapsed().as_secs_f64());
}

fn bench_all(c: &mut Criterion) {
    let h = big();
    let mut g = c.benchmark_group("plots");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("three_charts_1M_ops", |b| {
        b.iter(|| charts().map(|(_, render)| render(&h).len()))
    });
    g.finish();
}

criterion_group!(benches, bench_all);

fn main() {
    if std::env::var_os("PLOTS_BENCH_ONCE").is_some() {
        once();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
