//! Client protocol overhead: `cargo bench --bench protocol`.
//!
//! Owns only this measurement: N concurrent worker loops (like the interpreter's workers) call
//! `Client::invoke` back to back for a fixed time, once through the JSON-lines protocol with an
//! echo client process per worker (`ProtocolClient`; the echo client parses each request and
//! answers `ok` with its value, in Python by default), once with an in-process client that
//! answers at once (the built-in path minus any database). Prints ops/s and latency percentiles
//! of both, and the per-op overhead (protocol p50 − in-process p50). Knobs (environment):
//! `BENCH_CONCURRENCY` (default 10), `BENCH_SECONDS` (default 5 per phase), `BENCH_RATE` (ops/s
//! over all clients in the paced phase, default 5000), `BENCH_CLIENT` (the echo client command,
//! default `python3 echo.py` written by this bench). Two phases: back to back (throughput: every
//! client saturating the CPUs, so its latency is mostly queueing) and paced at `BENCH_RATE`
//! (latency: the per-op cost when the machine is not saturated). Targets from issue 10:
//! p50 overhead < 100 µs and > 5,000 ops/s with 10 clients on a 2-core machine.

use serde_json::{Value, json};
use shakedown::client::{Client, Completion};
use shakedown::node::Node;
use shakedown::systems::external::client::{Launch, ProtocolClient};
use shakedown::systems::external::protocol::Init;
use std::time::{Duration, Instant};

const ECHO_PY: &str = r#"import json, sys
sys.stdin.readline()
sys.stdout.write('{"type": "init_ok"}\n'); sys.stdout.flush()
for line in sys.stdin:
    req = json.loads(line)
    sys.stdout.write(json.dumps({"id": req["id"], "type": "ok", "value": req["value"], "version": 1}) + "\n")
    sys.stdout.flush()
"#;

/// Answers every op at once, in process.
struct InProcess;

#[async_trait::async_trait]
impl Client for InProcess {
    async fn invoke(&mut self, _f: &str, _key: Option<&str>, value: &Value) -> Completion {
        Completion::Ok {
            value: value.clone(),
            version: Some(1),
        }
    }
}

fn env_num(name: &str, default: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .map_err(|_| format!("{name} must be a non-negative integer, got {v:?}")),
        Err(_) => Ok(default),
    }
}

/// CPU time (user + system) of this process, or of its reaped children, in milliseconds.
fn cpu_ms(who: i32) -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return f64::NAN;
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// CPU time of every child process, reaped or not, in milliseconds: reaped children from
/// getrusage, live (or zombie) ones from /proc/PID/stat. Dropped clients are killed and reaped
/// in the background, so getrusage alone would miss whichever were not reaped yet.
fn children_cpu_ms() -> f64 {
    let me = std::process::id().to_string();
    // SAFETY: sysconf only reads a constant.
    let tick_ms = 1000.0 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let mut live = 0.0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the parenthesised command: state ppid … utime(14) stime(15).
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 12 && f[1] == me {
            let t = |i: usize| f[i].parse::<f64>().unwrap_or(0.0);
            live += (t(11) + t(12)) * tick_ms;
        }
    }
    cpu_ms(libc::RUSAGE_CHILDREN) + live
}

struct Stats {
    ops: u64,
    errors: u64,
    elapsed: Duration,
    latencies_ns: Vec<u64>,
}

impl Stats {
    fn pct_us(&self, p: f64) -> f64 {
        if self.latencies_ns.is_empty() {
            return f64::NAN;
        }
        let i = ((self.latencies_ns.len() - 1) as f64 * p).round() as usize;
        self.latencies_ns[i] as f64 / 1000.0
    }

    fn line(&self, label: &str) -> String {
        format!(
            "{label:<12} {:>9.0} ops/s  p50 {:>7.1} us  p90 {:>7.1} us  p99 {:>8.1} us  ({} ops, {} not ok)",
            self.ops as f64 / self.elapsed.as_secs_f64(),
            self.pct_us(0.5),
            self.pct_us(0.9),
            self.pct_us(0.99),
            self.ops,
            self.errors
        )
    }
}

/// Drive `clients` concurrently for `duration`, a write per op, timing every invoke; at
/// `rate` ops/s over all clients (each client at its share), or back to back when 0.
async fn drive(clients: Vec<Box<dyn Client>>, duration: Duration, rate: f64) -> Stats {
    let start = Instant::now();
    let deadline = start + duration;
    // Paced: one OS thread hands out permits round robin, `1 / rate` apart, with sub-millisecond
    // sleeps. tokio's timers tick in whole milliseconds, so per-client intervals staggered by
    // fractions of a millisecond would fire in bunches and measure queueing on the CPUs, not the
    // protocol. A permit for a client still busy with its last op is dropped.
    let mut permits = Vec::new();
    let mut receivers = Vec::new();
    for _ in 0..clients.len() {
        let (tx, rx) = tokio::sync::mpsc::channel::<()>(1);
        permits.push(tx);
        receivers.push(rx);
    }
    if rate > 0.0 {
        let gap = Duration::from_secs_f64(1.0 / rate);
        std::thread::spawn(move || {
            let mut next = Instant::now();
            for k in 0usize.. {
                next += gap;
                let now = Instant::now();
                if next > deadline {
                    break;
                }
                if next > now {
                    std::thread::sleep(next - now);
                }
                let _ = permits[k % permits.len()].try_send(());
            }
        });
    }
    let tasks: Vec<_> = clients
        .into_iter()
        .zip(receivers)
        .enumerate()
        .map(|(t, (mut c, mut permit))| {
            tokio::spawn(async move {
                let (mut lat, mut errors, mut i) = (Vec::new(), 0u64, 0i64);
                let key = t.to_string();
                while Instant::now() < deadline {
                    if rate > 0.0 {
                        // Permits stop at the deadline; do not wait past it for one.
                        let left = deadline.saturating_duration_since(Instant::now());
                        match tokio::time::timeout(left, permit.recv()).await {
                            Ok(Some(())) => {}
                            _ => break,
                        }
                    }
                    let v = json!(i);
                    let began = Instant::now();
                    let done = c.invoke("write", Some(&key), &v).await;
                    lat.push(began.elapsed().as_nanos() as u64);
                    if !matches!(done, Completion::Ok { .. }) {
                        errors += 1;
                    }
                    i += 1;
                }
                c.close().await;
                (lat, errors)
            })
        })
        .collect();
    let mut latencies_ns = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (lat, e) = t.await.expect("worker task");
        latencies_ns.extend(lat);
        errors += e;
    }
    let elapsed = start.elapsed();
    latencies_ns.sort_unstable();
    Stats {
        ops: latencies_ns.len() as u64,
        errors,
        elapsed,
        latencies_ns,
    }
}

async fn run() -> Result<(), String> {
    let concurrency = env_num("BENCH_CONCURRENCY", 10)? as usize;
    let seconds = env_num("BENCH_SECONDS", 5)?;
    let dir = tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?;
    std::fs::write(dir.path().join("echo.py"), ECHO_PY)
        .map_err(|e| format!("cannot write echo.py: {e}"))?;
    let argv: Vec<String> = match std::env::var("BENCH_CLIENT") {
        Ok(cmd) => cmd.split_whitespace().map(String::from).collect(),
        Err(_) => vec!["python3".into(), "echo.py".into()],
    };
    if argv.is_empty() {
        return Err("BENCH_CLIENT is empty".into());
    }
    let node = Node {
        name: "n1".into(),
        host: "127.0.0.1".into(),
    };
    let make = |t: usize| -> Box<dyn Client> {
        Box::new(ProtocolClient::new(Launch {
            argv: argv.clone(),
            cwd: dir.path().to_path_buf(),
            init: Init {
                thread: t,
                node: node.name.clone(),
                nodes: vec![node.clone()],
                options: Default::default(),
                timeout_ms: 5000,
                seed: t as u64,
                workload: "register".into(),
            },
            timeout_ms: 5000,
            init_timeout_ms: 10_000,
            stderr_log: None,
            pids: None,
        }))
    };
    let rate = env_num("BENCH_RATE", 5000)? as f64;
    let duration = Duration::from_secs(seconds);
    eprintln!(
        "{concurrency} clients, {seconds} s per phase, client {argv:?}; phase 1 back to back \
         (throughput), phase 2 at {rate} ops/s over all clients (latency)"
    );
    let inproc = |rate| {
        drive(
            (0..concurrency)
                .map(|_| Box::new(InProcess) as Box<dyn Client>)
                .collect(),
            duration,
            rate,
        )
    };
    for (phase, rate) in [("back to back", 0.0), ("paced", rate)] {
        // Warm up: start the processes (and Python's imports) outside the measurement.
        let mut warm: Vec<Box<dyn Client>> = (0..concurrency).map(make).collect();
        for c in &mut warm {
            c.invoke("write", Some("warm"), &json!(0)).await;
        }
        let (own0, kids0) = (cpu_ms(libc::RUSAGE_SELF), children_cpu_ms());
        let protocol = drive(warm, duration, rate).await;
        let (own1, kids1) = (cpu_ms(libc::RUSAGE_SELF), children_cpu_ms());
        let inproc_own0 = cpu_ms(libc::RUSAGE_SELF);
        let inproc = inproc(rate).await;
        let inproc_own1 = cpu_ms(libc::RUSAGE_SELF);
        let per_op = |ms: f64, ops: u64| ms * 1000.0 / ops.max(1) as f64;
        println!(
            "-- {phase}{}",
            if rate > 0.0 {
                format!(" at {rate} ops/s")
            } else {
                String::new()
            }
        );
        println!("{}", protocol.line("protocol"));
        println!("{}", inproc.line("in-process"));
        println!(
            "overhead     p50 {:.1} us/op, p99 {:.1} us/op (protocol − in-process)",
            protocol.pct_us(0.5) - inproc.pct_us(0.5),
            protocol.pct_us(0.99) - inproc.pct_us(0.99)
        );
        println!(
            "CPU          controller {:.1} us/op with the protocol, {:.2} us/op in process; \
             client processes {:.1} us/op",
            per_op(own1 - own0, protocol.ops),
            per_op(inproc_own1 - inproc_own0, inproc.ops),
            per_op(kids1 - kids0, protocol.ops)
        );
        if protocol.errors > 0 {
            return Err(format!(
                "{} protocol ops did not come back ok",
                protocol.errors
            ));
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("protocol bench: {e}");
        std::process::exit(1);
    }
}
