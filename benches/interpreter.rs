//! The scheduler's own cost per op: the interpreter (register workload, unlimited rate, history
//! written to a real file as a run does) driving in-process clients that answer at once, so
//! everything measured is generator, history and scheduling work.
//!
//! Owns only this measurement. `shakedown bench --db etcd|redis` measures the same loop against
//! real servers; this one isolates the controller. Env: BENCH_SECONDS (default 3), BENCH_THREADS
//! (default 10), BENCH_LIVE=1 (live checking of retired keys beside it, as a run does:
//! `runner::live` tails the same history file on its own nice-19 thread; the owner thread's CPU
//! per op is printed apart from the whole process's).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use shakedown::client::{Client, Completion};
use shakedown::generator;
use shakedown::history::HistoryWriter;
use shakedown::interpreter::{Interpreter, Stats, Worker};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

struct Instant0;

#[async_trait::async_trait]
impl Client for Instant0 {
    async fn invoke(&mut self, f: &str, _key: Option<&str>, value: &Value) -> Completion {
        Completion::Ok {
            value: if f == "read" { json!(1) } else { value.clone() },
            version: None,
        }
    }
}

fn cpu_ms() -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return f64::NAN;
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// CPU time of the calling thread, in ms.
fn thread_cpu_ms() -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return f64::NAN;
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let seconds = env_num("BENCH_SECONDS", 3);
    let threads = env_num("BENCH_THREADS", 10) as usize;
    let dir = std::env::temp_dir().join(format!("shakedown-interp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("history.jsonl");
    // The sink a run's history uses (`mapped`: written through a shared mapping).
    let file = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(false)
        .open(&path)
        .expect("history file");
    let file = shakedown::mapped::HistoryFile::new(file).expect("history sink");
    let workers = (0..threads)
        .map(|i| Worker {
            client: Box::new(Instant0) as Box<dyn Client>,
            node: Some(format!("n{}", i % 5 + 1)),
            timeout: Duration::from_secs(1),
        })
        .collect();
    let nodes = (1..=5).map(|i| format!("n{i}")).collect();
    let stats = Arc::new(Stats::default());
    let interp = Interpreter::new(
        Instant::now(),
        HistoryWriter::new(file),
        workers,
        None,
        nodes,
        ChaCha8Rng::seed_from_u64(1),
        stats,
    );
    let w = generator::register_workload(generator::RegisterConfig {
        threads_per_key: 5,
        ..Default::default()
    })
    .expect("register workload");
    let g = Box::new(generator::time_limit(seconds * 1_000_000_000, w));
    let live = (env_num("BENCH_LIVE", 0) == 1).then(|| {
        shakedown::runner::live::LiveChecker::start(
            shakedown::runner::live::LiveConfig {
                model: "cas-register",
                concurrency: threads,
                time_limit: Duration::from_secs(10),
                witness: shakedown::checker::linear::WitnessMode::Fast,
                memory_bytes: 1 << 28,
            },
            shakedown::store::RunDir::open(&dir),
            std::time::Instant::now(),
        )
        .expect("live checker")
    });
    let (cpu0, own0, t0) = (cpu_ms(), thread_cpu_ms(), std::time::Instant::now());
    // As the commands do: one thread (`app::runtime`), the owner a task of it.
    let (mut interp, phase) = interp.run_phase_on_worker(Some(g), None).await;
    phase.expect("run phase");
    interp.flush().expect("flush");
    let (cpu1, own1, elapsed) = (cpu_ms(), thread_cpu_ms(), t0.elapsed());
    let ops = interp.ops_written() / 2;
    interp.close().await.expect("close");
    println!(
        "interpreter, {threads} in-process clients, {seconds} s{}: {:.0} ops/s, {:.2} us CPU/op \
         ({:.2} us on the owner thread; {ops} ops, {} history bytes)",
        if live.is_some() {
            ", live checking"
        } else {
            ""
        },
        ops as f64 / elapsed.as_secs_f64(),
        (cpu1 - cpu0) * 1000.0 / ops.max(1) as f64,
        (own1 - own0) * 1000.0 / ops.max(1) as f64,
        std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
    );
    if let Some(l) = live {
        let r = l.join();
        println!(
            "live checking: {} keys checked ({} invalid, {} unknown), {} keys open at the end",
            r.checked, r.invalid, r.unknown, r.open_keys
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
