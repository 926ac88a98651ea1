//! Benchmarks of the transactional checker (`checker::txn`) on generated list-append and
//! rw-register transaction histories.
//!
//! Owns four scenarios, each 100,000 transactions of 1–4 micro-ops over 1,000 keys from 50
//! processes, 1% indeterminate and 1% failed transactions, and a final read of every key:
//! (a) list-append, strict-serializable by construction (valid: the whole graph is built and
//! found acyclic), (b) the same with 1% stale prefix reads (thousands of anomalies: the cycle
//! search and the explanations run), (c) rw-register with 1% stale reads (older values), version
//! orders from the initial state only (Elle's default), (d) rw-register strict-serializable by
//! construction with wfr-keys, sequential-keys and linearizable-keys assumed (every version-order
//! source used; valid). Run with `cargo bench --bench txn`; with `TXN_BENCH_ONCE=1` each scenario
//! runs once and prints verdict, time, transactions/s, graph size and peak RSS (VmHWM) instead of a
//! criterion statistics run (`TXN_BENCH_ONCE=a|b|c|d|e|f` runs one). Once-only, (e) and (f) are
//! (a) and (b) at 1,000,000 transactions with keys retired after 32 appends: the size
//! (target < 15 s, < 4 GiB); (g) and (h) are (a) and (e) as completions only (the invokes dropped,
//! as Elle's tests and elle-cli inputs write histories), which must check as fast.

use criterion::{Criterion, criterion_group};
use shakedown::checker::txn::histgen::{TxnGenConfig, generate_txn_history};
use shakedown::checker::txn::register::Assume;
use shakedown::checker::txn::{TxnConfig, check};
use shakedown::history::{History, OpType};
use std::time::{Duration, Instant};

#[path = "common/mod.rs"]
mod common;
use common::peak_rss_kib;

fn clean() -> TxnGenConfig {
    TxnGenConfig {
        txns: 100_000,
        keys: 1_000,
        processes: 50,
        max_mops: 4,
        info_probability: 0.01,
        fail_probability: 0.01,
        final_read: true,
        seed: 1,
        ..TxnGenConfig::default()
    }
}

fn stale() -> TxnGenConfig {
    TxnGenConfig {
        stale_probability: 0.01,
        seed: 2,
        ..clean()
    }
}

fn register() -> TxnGenConfig {
    TxnGenConfig {
        rw_register: true,
        seed: 3,
        ..stale()
    }
}

fn register_clean() -> TxnGenConfig {
    TxnGenConfig {
        rw_register: true,
        seed: 4,
        ..clean()
    }
}

const ALL: Assume = Assume {
    writes_follow_reads: true,
    sequential_keys: true,
    linearizable_keys: true,
};

/// The size: 1M list-append transactions, 1,000 keys active at a time, each retired after
/// 32 appends (Jepsen's list-append default; with 1,000 keys for all 1M transactions every read
/// would return ~600 elements, a history of ~800M elements) (`TXN_BENCH_TXNS` sets another size,
/// to see how time and memory grow).
fn million(base: TxnGenConfig) -> TxnGenConfig {
    let txns = std::env::var("TXN_BENCH_TXNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    TxnGenConfig {
        txns,
        max_writes_per_key: 32,
        ..base
    }
}

fn scenarios() -> [(&'static str, &'static str, TxnGenConfig, Assume); 8] {
    [
        (
            "a",
            "100k txns / 1-4 micro-ops / 1k keys / 50 processes / strict-serializable",
            clean(),
            Assume::default(),
        ),
        (
            "b",
            "100k txns / 1-4 micro-ops / 1k keys / 50 processes / 1% stale reads",
            stale(),
            Assume::default(),
        ),
        (
            "c",
            "rw-register 100k txns / 1-4 micro-ops / 1k keys / 50 processes / 1% stale reads / initial state",
            register(),
            Assume::default(),
        ),
        (
            "d",
            "rw-register 100k txns / 1-4 micro-ops / 1k keys / 50 processes / strict-serializable / all assumptions",
            register_clean(),
            ALL,
        ),
        (
            "e",
            "1M txns / 1-4 micro-ops / 1k keys / 50 processes / strict-serializable",
            million(clean()),
            Assume::default(),
        ),
        (
            "f",
            "1M txns / 1-4 micro-ops / 1k keys / 50 processes / 1% stale reads",
            million(stale()),
            Assume::default(),
        ),
        (
            "g",
            "completions only: 100k txns / 1-4 micro-ops / 1k keys / 50 processes / strict-serializable",
            clean(),
            Assume::default(),
        ),
        (
            "h",
            "completions only: 1M txns / 1-4 micro-ops / 1k keys / 50 processes / strict-serializable",
            million(clean()),
            Assume::default(),
        ),
    ]
}

/// Scenarios checked as completions only.
const COMPLETIONS_ONLY: [&str; 2] = ["g", "h"];

/// `h` without its client invokes, read back as a completion-only history is (invokes
/// synthesized from the completions).
fn completions_only(h: History) -> History {
    let mut bare = History::from_ops(
        h.ops
            .into_iter()
            .filter(|o| !(o.is_client() && o.op_type == OpType::Invoke))
            .collect(),
    );
    bare.synthesize_invokes();
    bare
}

fn config(assume: Assume) -> TxnConfig {
    TxnConfig {
        assume,
        ..TxnConfig::default()
    }
}

fn once() {
    let which = std::env::var("TXN_BENCH_ONCE").unwrap_or_default();
    for (id, name, cfg, assume) in scenarios() {
        if which != "1" && which != id {
            continue;
        }
        let t0 = Instant::now();
        let mut h = generate_txn_history(&cfg);
        if COMPLETIONS_ONLY.contains(&id) {
            h = completions_only(h);
        }
        let gen_s = t0.elapsed().as_secs_f64();
        let rss_before = peak_rss_kib().unwrap_or(0);
        let t1 = Instant::now();
        let r = check(&h, &config(assume)).expect("generated history is a txn history");
        let s = t1.elapsed().as_secs_f64();
        println!(
            "{id}: {name}: generated {} events in {gen_s:.2} s (peak RSS {} MiB); check {} in {s:.2} s = {:.0} txns/s; {} edges, {} cyclic components; peak RSS {} MiB",
            h.ops.len(),
            rss_before / 1024,
            r.verdict,
            cfg.txns as f64 / s,
            r.edges,
            r.components,
            peak_rss_kib().unwrap_or(0) / 1024,
        );
        println!("{}", r.summary());
        // Where the time goes.
        let t = Instant::now();
        let txns = shakedown::checker::txn::parse::read_txns(&h).unwrap();
        let parse_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let inferred = if cfg.rw_register {
            shakedown::checker::txn::register::infer(&txns, assume)
                .unwrap()
                .0
        } else {
            shakedown::checker::txn::infer::infer(&txns).unwrap()
        };
        let infer_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let c = shakedown::checker::txn::cycles::search(&inferred.graph, Duration::from_secs(60));
        println!(
            "  phases: parse {parse_s:.2} s, infer {infer_s:.2} s, cycle search {:.2} s ({} cycles, {} components left unsearched)",
            t.elapsed().as_secs_f64(),
            c.cycles.len(),
            c.unsearched.len()
        );
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("txn");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(30));
    for (name, (_, _, cfg, assume)) in [
        "100k_txns_valid",
        "100k_txns_1pct_stale",
        "rw_register_100k_txns_1pct_stale",
        "rw_register_100k_txns_valid_all_assumptions",
    ]
    .into_iter()
    .zip(scenarios().into_iter().take(4))
    {
        let h = generate_txn_history(&cfg);
        g.bench_function(name, |b| b.iter(|| check(&h, &config(assume))));
    }
    g.finish();
}

criterion_group!(benches, bench);

fn main() {
    if std::env::var_os("TXN_BENCH_ONCE").is_some() {
        once();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
