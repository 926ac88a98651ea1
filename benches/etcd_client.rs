//! Bare client loop benchmark: `cargo bench --bench etcd_client`.
//!
//! Owns only the command-line wrapper around `shakedown::client::etcd::bare_loop`: it starts a
//! throwaway single-node etcd on 127.0.0.1 (or uses `SHAKEDOWN_ETCD_ENDPOINTS`, comma-separated),
//! runs N concurrent clients doing a read/write/cas mix for a fixed time, and prints ops/s and
//! latency percentiles. Knobs (environment): `BENCH_CONCURRENCY` (default 10), `BENCH_SECONDS`
//! (default 10), `BENCH_DATA_DIR` (parent of the etcd data dir, default the system temp dir).
//! Does not own the measurement logic (that is `bare_loop`, reused by the `bench` subcommand).

use shakedown::client::etcd::{EtcdClient, EtcdClientConfig, OpMix, bare_loop};
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
    let stats = bare_loop(
        endpoints,
        concurrency,
        Duration::from_secs(seconds),
        OpMix::default(),
    )
    .await
    .map_err(|e| e.to_string())?;
    println!("{stats}");
    Ok(())
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("etcd_client bench: {e}");
        std::process::exit(1);
    }
}
