//! Benchmark of the report plots on a generated 1,000,000-operation history with nemesis faults.
//!
//! Owns one scenario: `generate_register_history` with 1,000,000 client operations (2,000,000
//! events: invoke + completion) over 100 keys with 10 processes per key and 5% crashed (info) ops and
//! delays up to 100 ms (so the run spans minutes),
//! plus nemesis pairs of every fault kind (partition, kill, pause, clock, loss, bandwidth, delay,
//! promote) spread over the run, `clock-offsets` measurements every second, and a results value
//! with a linearizability witness (20 minimized ops), 100 session violations and stale-read
//! stats, plus a time histogram of 200,000 monotonic-reads violations (the anomaly timeline
//! draws them as density). Renders every chart of a run page in SVG and PNG: latency-raw,
//! latency-quantiles and throughput (1 s windows), clock offsets, anomaly timeline, stale reads;
//! and times `report::recovery::analyse` (recovery and unavailability per fault) alone. Run with
//! `cargo bench --bench plots`; with `PLOTS_BENCH_ONCE=1` it renders once and prints the time of
//! each chart, the total, the SVG/PNG sizes and the recovery analysis instead of a criterion
//! statistics run (`PLOTS_BENCH_OUT=dir` also writes the files there). With
//! `PLOTS_BENCH_STREAM=N` it renders the latency and throughput charts of an N-op run streamed
//! op by op, never held in memory (see `stream`): `PLOTS_BENCH_STREAM=100000000 cargo bench
//! --bench plots` is the 100M-op case.

use criterion::{Criterion, criterion_group};
use serde_json::json;
use shakedown::checker::linear::histgen::{GenConfig, generate_register_history};
use shakedown::checker::session::TimeHistogram;
use shakedown::history::{History, Op, OpType, Process};
use shakedown::report::anomalies::{anomaly_density, anomaly_marks, stale_reads};
use shakedown::report::{Figure, Formats, plots, recovery};
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
        (
            0.12,
            "bump-clock",
            json!({"nodes": ["n4"], "delta_ms": 500}),
            json!({"nodes": ["n4"], "delta_ms": 500}),
        ),
        (0.20, "reset-clock", json!(null), json!({"nodes": ["n4"]})),
        (
            0.30,
            "start-loss",
            json!({"nodes": ["n1"], "probability": 0.3}),
            json!({"nodes": ["n1"], "probability": 0.3}),
        ),
        (0.40, "stop-loss", json!(null), json!(null)),
        (
            0.45,
            "start-bandwidth",
            json!({"nodes": ["n2"], "rate_kbit": 100}),
            json!({"nodes": ["n2"], "rate_kbit": 100}),
        ),
        (0.55, "stop-bandwidth", json!(null), json!(null)),
        (
            0.62,
            "start-delay",
            json!({"nodes": ["n5"], "delay_ms": 50, "jitter_ms": 10}),
            json!({"nodes": ["n5"], "delay_ms": 50, "jitter_ms": 10}),
        ),
        (0.75, "stop-delay", json!(null), json!(null)),
        (
            0.77,
            "promote",
            json!({"node": "n3"}),
            json!({"node": "n3"}),
        ),
    ];
    // One clock-offsets measurement per second (invocation, then completion with the offsets).
    let mut t = 500_000_000u64;
    while t < end_ns {
        let bumped = t > at(0.12) && t < at(0.20);
        let offsets = json!({"offsets_ms": {
            "n1": 0.2, "n2": -0.4, "n3": 1.1, "n4": if bumped { 500.3 } else { 0.3 }, "n5": -0.1
        }});
        ops.push(nem(t, "clock-offsets", json!(null)));
        ops.push(nem(t + 1_000_000, "clock-offsets", offsets));
        t += 1_000_000_000;
    }
    for (frac, f, inv, done) in pairs {
        ops.push(nem(at(frac), f, inv));
        ops.push(nem(at(frac) + 20_000_000.min(end_ns / 100), f, done));
    }
    ops.sort_by_key(|o| o.time_ns);
    History::from_ops(ops)
}

/// Results of a run with anomalies: a linearizability witness with 20 minimized ops, 100
/// session violations spread over the history, stale-read stats.
fn results(h: &History) -> serde_json::Value {
    let n = h.ops.len() as u64;
    let t = |i: u64| h.ops[i as usize].time_ns as f64 / 1e9;
    let wop = |i: u64| {
        json!({"index": i, "completion_index": i + 1, "process": "3", "f": "read", "key": "7",
               "value": 2, "outcome": "ok", "invoke_time_s": t(i), "complete_time_s": t(i + 1)})
    };
    let minimized: Vec<_> = (0..20).map(|k| wop(n / 3 + k * 50)).collect();
    let witnesses: Vec<_> = (0..100u64)
        .map(|k| {
            json!({"guarantee": "monotonic-reads", "key": "7", "session": 3, "process": 3,
                   "earlier_index": k * (n / 100), "later_index": k * (n / 100) + 40,
                   "earlier_version": 12, "later_version": 9, "witness": "read 12 then 9"})
        })
        .collect();
    // 200,000 violations spread over the run, as the session checker's time histogram.
    let end_ns = h.ops.last().map_or(0, |o| o.time_ns);
    let times: Vec<u64> = (0..200_000u64)
        .map(|k| (k * k) % 200_000 * (end_ns / 200_000))
        .collect();
    let timeline = TimeHistogram::of(&times, end_ns);
    json!({"valid": "invalid", "checkers": [
        {"checker": "linearizable", "verdict": "invalid", "summary": "",
         "details": {"parts": [{"key": "7", "witness": {"op": wop(n / 3 + 1200), "minimized": minimized}}]}},
        {"checker": "session", "verdict": "invalid", "summary": "",
         "details": {"guarantees": [{"guarantee": "monotonic-reads", "violations": 200000,
                                     "witnesses": witnesses, "timeline": timeline}],
                     "stale": {"reads_measured": 400000, "stale_reads": 5000,
                               "versions_behind": {"p50": 0, "p90": 0, "p99": 2, "max": 9},
                               "ms_behind": {"p50": 0.0, "p90": 0.0, "p99": 40.0, "max": 120.0},
                               "stale_versions_behind": {"p50": 1, "p90": 3, "p99": 6, "max": 9},
                               "stale_ms_behind": {"p50": 8.0, "p90": 30.0, "p99": 90.0, "max": 120.0}}}}
    ]})
}

type Chart = (
    &'static str,
    fn(&History, &serde_json::Value) -> Option<Figure>,
);

/// Every chart of a run page, in SVG and PNG.
fn charts() -> [Chart; 6] {
    const F: Formats = Formats::SvgAndPng;
    [
        ("latency-raw", |h, _| Some(plots::latency_raw(h, F))),
        ("latency-quantiles", |h, _| {
            Some(plots::latency_quantiles(h, 1.0, F))
        }),
        ("throughput", |h, _| Some(plots::throughput(h, 1.0, F))),
        ("clock-offsets", |h, _| plots::clock_offsets(h, F)),
        ("anomalies", |h, r| {
            plots::anomaly_timeline(h, &anomaly_marks(h, r), &anomaly_density(r), F)
        }),
        ("stale-reads", |_, r| {
            stale_reads(r).and_then(|s| plots::stale_reads(&s, F))
        }),
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
    let r = results(&h);
    let out_dir = std::env::var_os("PLOTS_BENCH_OUT");
    let total = Instant::now();
    for (name, render) in charts() {
        let t = Instant::now();
        let Some(fig) = render(&h, &r) else {
            println!("{name}: no data (bench setup is wrong)");
            std::process::exit(1);
        };
        let png = match fig.png {
            Some(Ok(p)) => p,
            other => {
                println!("{name}: png failed: {other:?}");
                std::process::exit(1);
            }
        };
        println!(
            "{name}: {:.3} s, svg {} KiB, png {} KiB",
            t.elapsed().as_secs_f64(),
            fig.svg.len() / 1024,
            png.len() / 1024
        );
        if let Some(dir) = &out_dir {
            for (ext, bytes) in [("svg", fig.svg.as_bytes()), ("png", png.as_slice())] {
                let path = std::path::Path::new(dir).join(format!("{name}.{ext}"));
                if let Err(e) = std::fs::write(&path, bytes) {
                    eprintln!("{}: {e}", path.display());
                }
            }
        }
    }
    println!(
        "total (6 charts one by one, SVG + PNG): {:.3} s",
        total.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let rec = recovery::analyse(&h, &Default::default());
    println!(
        "recovery::analyse: {:.3} s ({} faults, {} outages); {}",
        t.elapsed().as_secs_f64(),
        rec.faults.len(),
        rec.outages_total,
        rec.summary_line().unwrap_or_default()
    );
    // What a run does: render_figures pairs the ops once for the three charts that use them.
    let t = Instant::now();
    let figs = shakedown::report::render_figures(&h, Some(&r), Formats::SvgAndPng);
    println!(
        "render_figures (what a run writes, {} charts, SVG + PNG): {:.3} s",
        figs.len(),
        t.elapsed().as_secs_f64()
    );
}

/// `PLOTS_BENCH_STREAM=N`: the latency and throughput charts of an N-op run that is never held
/// in memory: ops generated one by one (50 clients at 1,000 ops/s in all, latency 1–6 ms with
/// a tail to seconds, 1 % crashed, 0.5 % failed, one in a million 30 s), paired and folded by
/// `SampleBuilder` as a streamed report would, then drawn (SVG + PNG). Prints the fold's rate,
/// each chart's time and size, and the process's peak RSS.
fn stream(n: u64) {
    let t0 = Instant::now();
    let mut b = plots::SampleBuilder::default();
    let mut op = Op::new(OpType::Invoke, Process::Client(0), "read", json!(null));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let clients = 50u64;
    for i in 0..n {
        let p = i % clients;
        // 1,000 ops/s in all: client p invokes every 50 ms.
        let t = i * 1_000_000;
        let r = rnd();
        let lat_us = match r % 1_000_000 {
            0 => 30_000_000,
            1..=999 => 100_000 + (r >> 24) % 2_000_000,
            _ => 1_000 + (r >> 20) % 5_000,
        };
        op.op_type = OpType::Invoke;
        op.process = Process::Client(p);
        op.time_ns = t;
        b.push(&op);
        op.op_type = match (r >> 40) % 200 {
            0 | 1 => OpType::Info,
            2 => OpType::Fail,
            _ => OpType::Ok,
        };
        op.time_ns = t + lat_us * 1_000;
        b.push(&op);
    }
    let samples = b.finish();
    let fold = t0.elapsed().as_secs_f64();
    println!(
        "folded {n} ops ({} events) in {fold:.2} s: {:.0} ops/s, dense: {}",
        2 * n,
        n as f64 / fold,
        samples.dense()
    );
    let end_ns = n * 1_000_000;
    let faults = {
        let nem = |t: u64, f: &str, v: serde_json::Value| {
            let mut op = Op::new(OpType::Info, Process::Nemesis, f, v);
            op.time_ns = t;
            op
        };
        let mut ops = Vec::new();
        for k in 1..10u64 {
            let t = end_ns / 10 * k;
            ops.push(nem(t, "kill", json!({"nodes": ["n2"]})));
            ops.push(nem(t + end_ns / 40, "start", json!({"nodes": ["n2"]})));
        }
        plots::fault_intervals(&History::from_ops(ops))
    };
    let p = plots::prepare_parts(samples, faults, Vec::new(), None);
    const F: Formats = Formats::SvgAndPng;
    let total = Instant::now();
    let mut page = 0;
    for (name, fig) in [
        ("latency-raw", plots::latency_raw_prepared(&p, F)),
        (
            "latency-quantiles",
            plots::latency_quantiles_prepared(&p, 1.0, F),
        ),
        ("throughput", plots::throughput_prepared(&p, 1.0, F)),
    ] {
        let png = fig.png.and_then(Result::ok).unwrap_or_default();
        page += fig.svg.len();
        println!(
            "{name}: svg {} KiB, png {} KiB",
            fig.svg.len() / 1024,
            png.len() / 1024
        );
        if let Some(dir) = std::env::var_os("PLOTS_BENCH_OUT") {
            for (ext, bytes) in [("svg", fig.svg.as_bytes()), ("png", png.as_slice())] {
                let path = std::path::Path::new(&dir).join(format!("{name}-{n}.{ext}"));
                if let Err(e) = std::fs::write(&path, bytes) {
                    eprintln!("{}: {e}", path.display());
                }
            }
        }
    }
    println!(
        "3 charts rendered (SVG + PNG) in {:.2} s; their SVGs (what the page embeds): {} KiB",
        total.elapsed().as_secs_f64(),
        page / 1024
    );
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if let Some(hwm) = status.lines().find(|l| l.starts_with("VmHWM")) {
        println!("peak RSS: {}", hwm.trim_start_matches("VmHWM:").trim());
    }
}

fn bench_all(c: &mut Criterion) {
    let h = big();
    let mut g = c.benchmark_group("plots");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    let r = results(&h);
    g.bench_function("all_charts_svg_png_1M_ops", |b| {
        b.iter(|| charts().map(|(_, render)| render(&h, &r).map(|f| f.svg.len())))
    });
    g.bench_function("recovery_analyse_1M_ops", |b| {
        b.iter(|| recovery::analyse(&h, &Default::default()).outages_total)
    });
    g.finish();
}

criterion_group!(benches, bench_all);

fn main() {
    if let Some(n) = std::env::var("PLOTS_BENCH_STREAM")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        stream(n);
        return;
    }
    if std::env::var_os("PLOTS_BENCH_ONCE").is_some() {
        once();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
