//! Bare client loop benchmark: `cargo bench --bench etcd_client`.
//!
//! Owns only the command-line wrapper around `shakedown::systems::etcd::bare_loop`: it starts a
//! throwaway single-node etcd on 127.0.0.1 (or uses `SHAKEDOWN_ETCD_ENDPOINTS`, comma-separated),
//! runs N concurrent clients doing a read/write/cas mix for a fixed time, and prints ops/s and
//! latency percentiles. Knobs (environment): `BENCH_CONCURRENCY` (default 10), `BENCH_SECONDS`
//! (default 10), `BENCH_DATA_DIR` (parent of the etcd data dir, default the system temp dir).
//! Does not own the measurement logic (that is `bare_loop`, reused by the `bench` subcommand).

use shakedown::systems::etcd::bare_loop::{OpMix, bare_loop};
use shakedown::systems::etcd::client::{EtcdClient, EtcdClientConfig};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A throwaway etcd, killed by PID on drop.
struct LocalEtcd {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for LocalEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))
}

fn env_num(name: &str, default: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .map_err(|_| format!("{name} must be a non-negative integer, got {v:?}")),
        Err(_) => Ok(default),
    }
}

/// CPU time (user + system) of this process so far, in milliseconds.
fn self_cpu_ms() -> Option<f64> {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    Some(ms(usage.ru_utime) + ms(usage.ru_stime))
}

/// CPU time (user + system) of another process so far, from /proc/PID/stat, in milliseconds.
fn proc_cpu_ms(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks * 1000.0 / hz as f64)
}

async fn start_etcd() -> Result<(LocalEtcd, String), String> {
    let dir = match std::env::var("BENCH_DATA_DIR") {
        Ok(parent) => tempfile::tempdir_in(&parent),
        Err(_) => tempfile::tempdir(),
    }
    .map_err(|e| format!("cannot create etcd data dir: {e}"))?;
    let (cp, pp) = (free_port()?, free_port()?);
    let endpoint = format!("http://127.0.0.1:{cp}");
    let peer = format!("http://127.0.0.1:{pp}");
    let child = Command::new("etcd")
        .args(["--name", "bench", "--data-dir"])
        .arg(dir.path().join("data"))
        .args(["--listen-client-urls", &endpoint])
        .args(["--advertise-client-urls", &endpoint])
        .args(["--listen-peer-urls", &peer])
        .args(["--initial-advertise-peer-urls", &peer])
        .args(["--initial-cluster", &format!("bench={peer}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start etcd: {e}"))?;
    eprintln!("etcd data dir: {}", dir.path().display());
    let etcd = LocalEtcd { child, _dir: dir };
    EtcdClient::new(EtcdClientConfig {
        endpoint: endpoint.clone(),
        ..EtcdClientConfig::default()
    })
    .map_err(|e| e.to_string())?
    .wait_healthy(20_000)
    .await
    .map_err(|e| e.to_string())?;
    Ok((etcd, endpoint))
}

async fn run() -> Result<(), String> {
    let concurrency = env_num("BENCH_CONCURRENCY", 10)? as usize;
    let seconds = env_num("BENCH_SECONDS", 10)?;
    let (_etcd, endpoints) = match std::env::var("SHAKEDOWN_ETCD_ENDPOINTS") {
        Ok(list) => (None, list.split(',').map(str::to_string).collect()),
        Err(_) => {
            let (etcd, endpoint) = start_etcd().await?;
            (Some(etcd), vec![endpoint])
        }
    };
    eprintln!(
        "bare loop: {concurrency} clients, {seconds} s, endpoints {endpoints:?}, mix read:write:cas 1:1:1"
    );
    let etcd_cpu_before = _etcd.as_ref().and_then(|e| proc_cpu_ms(e.child.id()));
    let self_cpu_before = self_cpu_ms();
    let stats = bare_loop(
        endpoints,
        concurrency,
        Duration::from_secs(seconds),
        OpMix::default(),
    )
    .await
    .map_err(|e| e.to_string())?;
    println!("{stats}");
    let per_op = |ms: f64| ms * 1000.0 / stats.ops.max(1) as f64;
    if let Some(before) = self_cpu_before
        && let Some(after) = self_cpu_ms()
    {
        println!("client CPU: {:.1} us/op", per_op(after - before));
    }
    if let Some(before) = etcd_cpu_before
        && let Some(after) = _etcd.as_ref().and_then(|e| proc_cpu_ms(e.child.id()))
    {
        println!("etcd CPU:   {:.1} us/op", per_op(after - before));
    }
    Ok(())
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("etcd_client bench: {e}");
        std::process::exit(1);
    }
}
