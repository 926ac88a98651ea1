//! Benchmarks of the linearizability checker on generated register histories and the Knossos corpus.
//!
//! Owns the scenarios: (a) 1,000,000 operations over 100 keys with 10 processes per key, (b) one key
//! with 20 concurrent processes that crash often (info ops), 2,000 operations, (c) a budget stress
//! case with 40% crashes, (d) many crashed writers: 40 one-key histories of 200 ops by 5
//! threads where every write of ops 100..160 crashes (about 30 pending ops per key, like a run's
//! key when the PostgreSQL primary is killed), (e) Jepsen-etcd-shaped invalid histories: 60 one-key histories of
//! 60–200 ops by 10 threads, 10% `info` (reads time out too; a crashed thread continues as a new process, so 15–35 processes), one read made stale (it returns the value before the last write that completed before it); verdict
//! and witness times separately, (k) the Knossos corpus's bad histories (tests/data/knossos),
//! (v) Porcupine-`kv/c50-bad`-shaped histories (`histgen::kv`: 50 clients, 10 keys, 12,000
//! get/put/append ops; 1 key made illegal early in its history, and 1, 3 and 10 keys anywhere; and 100 of 100 keys)
//! checked the verdict-first way (the default),
//! and (w) the same with every key decided (`--all-keys`): time to the first invalid key, verdict
//! and total time, keys left undecided and why, peak RSS (VmHWM; it only grows, so run one
//! scenario per process for memory: `LINEAR_BENCH_ONCE=v` or `w`).
//! Run with `cargo bench --bench linear`; with `LINEAR_BENCH_ONCE=1` each scenario runs once and
//! prints verdict, times and peak RSS (VmHWM) instead of a criterion statistics run
//! (`LINEAR_BENCH_ONCE=a|b|c|d|e|k|r|v|w` runs one scenario, (r) the final check reusing live
//! verdicts, see [`reuse_scenario`]; `s` runs the soak, (s) below, alone). `LINEAR_BENCH_DUMP=DIR` also writes the
//! histories of every scenario but (k) as JSONL files ((v): Porcupine kv lines), to check them
//! with another build of `shakedown check`.
//! (s) is the 10M-op soak (`LINEAR_BENCH_ONCE=s`, `SOAK_OPS` to change its size; the JSONL file
//! is kept in `LINEAR_BENCH_DUMP` or the temp directory and reused; past 20M ops only the
//! streamed check runs): see [`soak`].

use criterion::{Criterion, criterion_group};
use shakedown::checker::Verdict;
use shakedown::checker::linear::histgen::kv::{KvGenConfig, generate_kv_history, write_porcupine};
use shakedown::checker::linear::histgen::{GenConfig, corrupt_read, generate_register_history};
use shakedown::checker::linear::{Decide, LinearConfig, LinearResult, check_history};
use shakedown::history::History;
use shakedown::model::{KvModel, MutexModel, RegisterConfig, RegisterModel};
use std::path::Path;
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

/// Scenario (d): crashed writers on one key: 5 threads, 200 ops, 2% crashes, and every write
/// of ops 100..160 crashes (the primary is down; reads go on).
fn crashed_writers(seed: u64) -> History {
    generate_register_history(&GenConfig {
        keys: 1,
        processes_per_key: 5,
        ops: 200,
        info_probability: 0.02,
        value_range: 6,
        seed,
        write_outage: Some((100, 160)),
        ..GenConfig::default()
    })
}

/// Scenario (e): an etcd-shaped history with one corrupted read, if that made it invalid.
fn etcd_shaped_invalid(seed: u64) -> Option<History> {
    let g = GenConfig {
        keys: 1,
        processes_per_key: 10,
        ops: 60 + (seed as usize * 37) % 141,
        info_probability: 0.1,
        value_range: 5,
        seed,
        ..GenConfig::default()
    };
    let mut h = generate_register_history(&g);
    // A read late in the history, where the witness has the most to cut.
    let reads = h
        .ops
        .iter()
        .filter(|o| o.f == "read" && o.op_type == shakedown::history::OpType::Ok)
        .count();
    corrupt_read(&mut h, reads.saturating_sub(1 + (seed as usize % 5)))?;
    let r = check_history(&cas(), &h, &no_witness());
    (r.verdict == Verdict::Invalid).then_some(h)
}

/// Scenario (v): a `kv/c50-bad`-shaped history with `illegal` keys made illegal anywhere in their
/// history; clients pause up to 1 ms between ops (without a pause, 10 appends in flight on one
/// key make even a legal key's search outgrow a 1 GiB budget; with 2 ms, every key is decided in
/// about a second).
fn c50_bad_like(illegal: usize) -> KvGenConfig {
    KvGenConfig {
        clients: 50,
        keys: 10,
        ops: 12_000,
        illegal_keys: illegal,
        max_think_ns: 1_000_000,
        seed: 29,
        ..KvGenConfig::default()
    }
}

/// Scenarios (v) and (w): the c50-bad-like histories checked the verdict-first way or deciding
/// every key, under the default 1 GiB memory budget and a 60 s time limit.
fn kv_scenario(id: &str, decide: Decide, dump_dir: Option<&Path>) {
    // (where, illegal keys, keys): the last has 100 keys of 1,200 ops each, all illegal.
    let cases = [
        ("early", 1, 10, (0.0, 0.05)),
        ("anywhere", 1, 10, (0.0, 1.0)),
        ("anywhere", 3, 10, (0.0, 1.0)),
        ("anywhere", 10, 10, (0.0, 1.0)),
        ("anywhere", 100, 100, (0.0, 1.0)),
    ];
    for (place, illegal, keys, window) in cases {
        let g = generate_kv_history(&KvGenConfig {
            illegal_window: window,
            keys,
            ops: 1_200 * keys,
            ..c50_bad_like(illegal)
        });
        if let Some(dir) = dump_dir {
            std::fs::create_dir_all(dir).expect("dump dir");
            std::fs::write(
                dir.join(format!("c50-bad-like-{illegal}-of-{keys}-{place}.txt")),
                write_porcupine(&g.history),
            )
            .expect("dump write");
        }
        let cfg = LinearConfig {
            time_limit: Some(Duration::from_secs(60)),
            decide,
            ..LinearConfig::default()
        };
        let t = Instant::now();
        let r = check_history(&KvModel::porcupine(), &g.history, &cfg);
        let total = t.elapsed().as_secs_f64() * 1e3;
        let u = &r.undecided;
        println!(
            "{id}: c50-bad-like, {illegal} of {keys} keys illegal ({}, {place}): {}; first invalid key at {} ms, verdict phase {} ms, total {total:.0} ms; {} invalid, {} valid, undecided: {} settled / {} memory / {} time limit; peak RSS {} MiB",
            if g.illegal.len() > 10 {
                format!("{} …", g.illegal[..10].join(" "))
            } else {
                g.illegal.join(" ")
            },
            r.verdict,
            r.first_invalid_ms
                .map_or("-".to_string(), |ms| ms.to_string()),
            r.verdict_time_ms,
            r.parts
                .iter()
                .filter(|p| p.verdict == Verdict::Invalid)
                .count(),
            r.parts
                .iter()
                .filter(|p| p.verdict == Verdict::Valid)
                .count(),
            u.settled,
            u.memory,
            u.time_limit,
            peak_rss_kib().unwrap_or(0) / 1024,
        );
    }
}

fn cas() -> RegisterModel {
    RegisterModel::cas_register(RegisterConfig::etcd())
}

fn config() -> LinearConfig {
    LinearConfig {
        time_limit: Some(Duration::from_secs(10)),
        ..LinearConfig::default()
    }
}

fn no_witness() -> LinearConfig {
    LinearConfig {
        witness: shakedown::checker::linear::WitnessMode::None,
        ..config()
    }
}

fn run(h: &History) -> LinearResult {
    check_history(&cas(), h, &config())
}

fn dump(dir: Option<&Path>, name: &str, h: &History) {
    let Some(dir) = dir else { return };
    let text: String = h
        .ops
        .iter()
        .map(|o| serde_json::to_string(o).expect("op serializes") + "\n")
        .collect();
    std::fs::create_dir_all(dir).expect("dump dir");
    std::fs::write(dir.join(name), text).expect("dump write");
}

/// Median and maximum of `v` (milliseconds as f64).
fn med_max(v: &mut [f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() - 1])
}

/// Verdict and witness time of every invalid part of `r`, in ms (sub-ms resolution from the
/// caller's own clock when there is one part).
fn report_invalid(label: &str, results: &[(LinearResult, f64)]) {
    let mut verdict_ms: Vec<f64> = Vec::new();
    let mut witness_ms: Vec<f64> = Vec::new();
    let mut sizes: Vec<f64> = Vec::new();
    let mut searches: Vec<f64> = Vec::new();
    let (mut complete, mut invalid) = (0, 0);
    for (r, total_ms) in results {
        if r.verdict != Verdict::Invalid {
            continue;
        }
        invalid += 1;
        let w = r
            .parts
            .iter()
            .find_map(|p| p.witness.as_ref())
            .expect("witness");
        verdict_ms.push(r.verdict_time_ms as f64);
        witness_ms.push(total_ms - r.verdict_time_ms as f64);
        if w.minimized_complete {
            complete += 1;
        }
        sizes.push(w.minimized.as_ref().map_or(0, |m| m.len()) as f64);
        searches.push(w.minimize_searches as f64);
    }
    let (vm, vx) = med_max(&mut verdict_ms);
    let (wm, wx) = med_max(&mut witness_ms);
    let (sm, sx) = med_max(&mut sizes);
    let (qm, qx) = med_max(&mut searches);
    println!(
        "{label}: {invalid} of {} invalid; verdict median {vm:.1} ms max {vx:.1} ms; witness median {wm:.1} ms max {wx:.1} ms; 1-minimal {complete} of {invalid}; essential ops median {sm} max {sx}; minimization searches median {qm} max {qx}",
        results.len()
    );
}

/// Resident set size of this process now (VmRSS), in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_string();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// Scenario (s), the soak: `SOAK_OPS` (default 10,000,000) register ops in the register
/// workload's shape — 100 key slots of 10 threads each, every slot moving to a fresh key after
/// 200 of its ops, 1 % of ops crashing (`info`, the thread continues as a new process) — written
/// as JSONL in chunks of 1M ops (each chunk's keys, processes and times after the last's), then
/// checked: end to end by `shakedown check --stream never FILE` (whole) and `--stream always`
/// (streamed) in child processes under `/usr/bin/time` (wall time, ops/s, peak RSS), then stage
/// by stage in this process (parse, pairing, search; RSS after each).
fn soak(dir: &Path) {
    use std::io::Write;
    let ops: usize = std::env::var("SOAK_OPS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(10_000_000);
    let file = dir.join(format!("soak-{ops}.jsonl"));
    if !file.exists() {
        std::fs::create_dir_all(dir).expect("soak dir");
        let t = Instant::now();
        let mut out = std::io::BufWriter::new(std::fs::File::create(&file).expect("soak file"));
        let chunk = 1_000_000usize;
        let (mut index, mut t_off) = (0u64, 0u64);
        for c in 0..ops.div_ceil(chunk) {
            let g = GenConfig {
                keys: 100,
                processes_per_key: 10,
                ops: chunk.min(ops - c * chunk),
                info_probability: 0.01,
                seed: 1000 + c as u64,
                rotate_every: 200,
                ..GenConfig::default()
            };
            let h = generate_register_history(&g);
            let mut last = 0;
            for mut o in h.ops {
                o.index = index;
                index += 1;
                o.time_ns += t_off;
                last = o.time_ns;
                o.key = o.key.map(|k| format!("c{c}{k}").into());
                if let shakedown::history::Process::Client(p) = o.process {
                    o.process = shakedown::history::Process::Client(p + c as u64 * 10_000_000);
                }
                serde_json::to_writer(&mut out, &o).expect("op serializes");
                out.write_all(b"\n").expect("soak write");
            }
            t_off = last + 1_000;
        }
        out.flush().expect("soak write");
        println!(
            "s: wrote {} ({} MiB, {index} events) in {:.1} s",
            file.display(),
            std::fs::metadata(&file).map_or(0, |m| m.len()) >> 20,
            t.elapsed().as_secs_f64()
        );
    }
    // End to end first, while this process is small: the whole check, then the streamed one.
    // Past 20M ops the whole history does not fit this machine's memory (3.9 GiB per 10M ops):
    // only the streamed check runs, and nothing is read into this process.
    let fits = ops <= 20_000_000;
    let modes: &[&str] = if fits {
        &["never", "always"]
    } else {
        &["always"]
    };
    for &stream in modes {
        let t = Instant::now();
        let out = std::process::Command::new("/usr/bin/time")
            .args(["-f", "%M"])
            .arg(env!("CARGO_BIN_EXE_shakedown"))
            .args(["check", "--stream", stream])
            .arg(&file)
            .stdout(std::process::Stdio::null())
            .output()
            .expect("/usr/bin/time runs shakedown check");
        let wall = t.elapsed().as_secs_f64();
        let peak_kib: u64 = String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0);
        println!(
            "s: `shakedown check --stream {stream}` of {ops} ops: exit {:?} in {wall:.1} s ({:.0} ops/s), peak RSS {} MiB",
            out.status.code(),
            ops as f64 / wall,
            peak_kib / 1024
        );
    }
    if !fits {
        println!("s: {ops} ops: the whole check and the in-process stages are left out (too big)");
        return;
    }
    let base = rss_kib();
    let t = Instant::now();
    let h = History::read_file(&file).expect("soak history reads back");
    let parse_s = t.elapsed().as_secs_f64();
    let hist_kib = rss_kib().saturating_sub(base);
    let t = Instant::now();
    let pairs = h.pairs().expect("soak history pairs");
    let pairs_s = t.elapsed().as_secs_f64();
    drop(pairs);
    let t = Instant::now();
    let r = run(&h);
    let check_s = t.elapsed().as_secs_f64();
    println!(
        "s: in process: parse {parse_s:.1} s (history {} MiB = {} B per event), pairing {pairs_s:.1} s, linearizability {} in {check_s:.1} s ({} keys); peak RSS {} MiB",
        hist_kib / 1024,
        hist_kib * 1024 / h.ops.len().max(1) as u64,
        r.verdict,
        r.parts.len(),
        peak_rss_kib().unwrap_or(0) / 1024
    );
}

fn once() {
    let which = std::env::var("LINEAR_BENCH_ONCE").unwrap_or_default();
    let dump_dir = std::env::var_os("LINEAR_BENCH_DUMP").map(std::path::PathBuf::from);
    let want = |id: &str| which == "1" || which == id;
    if which == "s" {
        // Not part of "1": minutes and gigabytes.
        let dir = dump_dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("shakedown-soak"));
        soak(&dir);
        return;
    }
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
        if !want(id) {
            continue;
        }
        let t0 = Instant::now();
        let h = generate_register_history(&g);
        let gen_s = t0.elapsed().as_secs_f64();
        dump(dump_dir.as_deref(), &format!("{id}.jsonl"), &h);
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
    if want("d") {
        let (mut unknown, mut invalid) = (0, 0);
        let mut ms: Vec<f64> = Vec::new();
        let mut entries = 0usize;
        let mut pending: Vec<f64> = Vec::new();
        for seed in 100..140 {
            let h = crashed_writers(seed);
            dump(dump_dir.as_deref(), &format!("d-{seed}.jsonl"), &h);
            let t = Instant::now();
            let r = run(&h);
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            unknown += (r.verdict == Verdict::Unknown) as usize;
            invalid += (r.verdict == Verdict::Invalid) as usize;
            entries = entries.max(r.parts.iter().map(|p| p.cache_entries).max().unwrap_or(0));
            pending.push(r.parts.iter().map(|p| p.pending_count).sum::<usize>() as f64);
        }
        let real = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/histories/postgres-crashed-writers.jsonl");
        if let Ok(h) = History::read_file(&real) {
            let t = Instant::now();
            let r = run(&h);
            println!(
                "d: PostgreSQL key with 30 crashed writers (tests/data/histories/postgres-crashed-writers.jsonl): {} in {:.1} ms, {} configurations",
                r.verdict,
                t.elapsed().as_secs_f64() * 1e3,
                r.parts.iter().map(|p| p.cache_entries).sum::<usize>()
            );
        }
        let (m, x) = med_max(&mut ms);
        let (pm, px) = med_max(&mut pending);
        println!(
            "d: crashed writers: 40 histories / 1 key / 5 threads / 200 ops / writes of ops 100..160 crash (pending ops median {pm} max {px}): {unknown} unknown, {invalid} invalid; check median {m:.1} ms max {x:.1} ms; max cache {entries} entries; peak RSS {} MiB",
            peak_rss_kib().unwrap_or(0) / 1024
        );
    }
    if want("e") {
        let mut results = Vec::new();
        for seed in 0..80u64 {
            let Some(h) = etcd_shaped_invalid(seed) else {
                continue;
            };
            dump(dump_dir.as_deref(), &format!("e-{seed}.jsonl"), &h);
            let t = Instant::now();
            let r = run(&h);
            let total = t.elapsed().as_secs_f64() * 1e3;
            results.push((r, total));
            if results.len() == 60 {
                break;
            }
        }
        report_invalid(
            "e: etcd-shaped invalid (60–200 ops, 10 threads, 10% info)",
            &results,
        );
    }
    if want("v") {
        kv_scenario("v", Decide::default(), dump_dir.as_deref());
    }
    if want("w") {
        kv_scenario("w", Decide::AllKeys, None);
    }
    if want("r") {
        reuse_scenario();
    }
    if want("k") {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/knossos");
        for sub in ["cas-register/bad", "mutex/bad"] {
            let mut files: Vec<_> = std::fs::read_dir(dir.join(sub))
                .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default();
            files.retain(|p: &std::path::PathBuf| p.extension().is_some_and(|x| x == "edn"));
            files.sort();
            for f in files {
                let h = shakedown::edn::read_file(&f, Default::default()).expect("corpus reads");
                let t = Instant::now();
                let r = if sub.starts_with("mutex") {
                    check_history(&MutexModel, &h, &config())
                } else {
                    check_history(
                        &RegisterModel::cas_register(RegisterConfig::knossos()),
                        &h,
                        &config(),
                    )
                };
                let total = t.elapsed().as_secs_f64() * 1e3;
                let w = r.parts.iter().find_map(|p| p.witness.as_ref());
                println!(
                    "k: {}: {} ops, {}: verdict {} ms, witness {:.1} ms ({} essential ops, 1-minimal {}, {} searches)",
                    f.file_name().unwrap_or_default().to_string_lossy(),
                    r.op_count,
                    r.verdict,
                    r.verdict_time_ms,
                    total - r.verdict_time_ms as f64,
                    w.and_then(|w| w.minimized.as_ref()).map_or(0, |m| m.len()),
                    w.is_some_and(|w| w.minimized_complete),
                    w.map_or(0, |w| w.minimize_searches),
                );
            }
        }
    }
}

/// Scenario (r): the end-of-run check of a run whose keys were all checked live and then got a
/// final read each (the value their live linearization ends in), reusing the live verdicts
/// (`runner::live::Reuse`: the live linearization stands in for each key's live ops) against a
/// whole search of the same history. 100 keys of 2,000 ops, 20 processes per key, 10 % crashes.
fn reuse_scenario() {
    use shakedown::history::{Op, OpType, Process};
    use shakedown::runner::live::{LiveConfig, LiveRecord, Reuse, check_batch};
    let h = generate_register_history(&GenConfig {
        keys: 10,
        processes_per_key: 20,
        ops: 200_000,
        info_probability: 0.1,
        rotate_every: 2_000,
        seed: 11,
        ..GenConfig::default()
    });
    let cfg = LiveConfig {
        model: "cas-register",
        concurrency: 100,
        time_limit: Duration::from_secs(120),
        witness: shakedown::checker::linear::WitnessMode::Fast,
        memory_bytes: 1 << 30,
    };
    let t = Instant::now();
    let (live, ..) = check_batch(&cfg, h.ops.clone()).expect("the model is known");
    let live_s = t.elapsed().as_secs_f64();
    // The record live checking keeps, and each valid key's end value.
    let completions = h.completions().expect("pairs");
    let mut record = LiveRecord::default();
    let mut ops = h.ops.clone();
    for part in live.parts {
        if part.verdict != Verdict::Valid {
            record.invalid_parts.push(part);
            continue;
        }
        let key = part.key.clone().unwrap_or_default();
        let mut end = serde_json::Value::Null;
        for &p in part.linearization.as_deref().unwrap_or_default() {
            let (inv, done) = (&h.ops[p as usize], completions.of(p as usize));
            let failed = done.is_some_and(|c| h.ops[c].op_type == OpType::Fail);
            match inv.f.as_str() {
                "write" => end = inv.value.clone(),
                "cas" if !failed => end = inv.value[1].clone(),
                _ => {}
            }
        }
        let n = h
            .ops
            .iter()
            .filter(|o| o.key.as_deref() == Some(&key))
            .count();
        record.valid_parts.push((part, n));
        let process = Process::Client(1_000_000 + record.valid_parts.len() as u64);
        for (ty, v) in [(OpType::Invoke, serde_json::Value::Null), (OpType::Ok, end)] {
            let mut o = Op::new(ty, process, "read", v);
            o.key = Some(key.as_str().into());
            ops.push(o);
        }
    }
    let whole = History::from_ops(ops);
    let options = shakedown::model::ModelOptions::preset(shakedown::model::SemanticsPreset::Etcd);
    let check = |hist: &History| {
        shakedown::checker::compose::check_linear_with(
            "cas-register",
            hist,
            &options,
            LinearConfig::default(),
        )
        .expect("the model is known")
    };
    let t = Instant::now();
    let mut reuse = Reuse::of(&record, &whole);
    let once = |reuse: &Reuse| {
        let (rest, orig) = reuse.remaining(&whole);
        reuse.merge(check(&rest), &orig, &whole, true)
    };
    let mut merged = once(&reuse);
    if let Some(again) = reuse.settle(&mut merged) {
        merged = once(&again);
    }
    let reused_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let full = check(&whole);
    let full_s = t.elapsed().as_secs_f64();
    println!(
        "r: {} keys checked live in {live_s:.2} s; final check reusing them: {} ({} keys confirmed \
         with their final read) in {reused_s:.3} s; whole search: {} in {full_s:.2} s",
        record.valid_parts.len() + record.invalid_parts.len(),
        merged.verdict,
        reuse.confirmed,
        full.verdict,
    );
    assert_eq!(merged.verdict, full.verdict);
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

fn bench_witness(c: &mut Criterion) {
    let hs: Vec<History> = (0..40).filter_map(etcd_shaped_invalid).take(20).collect();
    let mut g = c.benchmark_group("linear");
    g.sample_size(10);
    g.bench_function("20_etcd_shaped_invalid_with_witnesses", |b| {
        b.iter(|| hs.iter().map(run).count())
    });
    g.finish();
}

criterion_group!(benches, bench_big, bench_crashy, bench_witness);

fn main() {
    if std::env::var_os("LINEAR_BENCH_ONCE").is_some() {
        once();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
