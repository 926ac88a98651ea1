//! The NFQUEUE delayer's capacity and accuracy (issue 30's "packets/s it can delay without drops
//! on this machine, and how accurate the delay is"): on a sandbox (`sdnfq`, 10.106.0.0/24; needs
//! root), node n1's egress is delayed by `NFQ_DELAY_MS` (default 50, no jitter) and n2 sends it
//! UDP datagrams at a series of rates; n1 echoes each at once, so each echo's round trip minus the
//! undelayed round trip is the delay it got. Per rate: datagrams sent, echoes lost, echoes that
//! came back undelayed (the kernel queue overflowed: fail-open), and the delay error's p50 / p99 /
//! max. Then the delayer's own summary (how late it released packets after their due time).
//!
//! Owns only this measurement (`cargo bench --bench netdelay`). Env: NFQ_RATES (comma-separated
//! datagrams/s, default 1000,5000,20000,50000), NFQ_SECONDS per rate (default 3), NFQ_BACKEND
//! (default nfqueue).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use shakedown::client::Completion;
use shakedown::control::SshConfig;
use shakedown::db::Db;
use shakedown::nemesis::{Nemesis, NemesisConfig, PartitionConfig};
use shakedown::node::Node;
use shakedown::sandbox::{self, SandboxConfig};
use shakedown::systems::etcd::Etcd;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

const NAME: &str = "sdnfq";
const SUBNET: &str = "10.106.0.0/24";

fn cli(args: &[&str]) -> std::process::Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--sandbox-name", NAME, "--sandbox-subnet", SUBNET]);
    Command::new(env!("CARGO_BIN_EXE_shakedown"))
        .args(&all)
        .output()
        .expect("run shakedown")
}

/// Run `f` on a thread that joined `node`'s network namespace.
fn in_netns<T: Send + 'static>(node: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/run/netns/sd-{NAME}-{node}");
    std::thread::spawn(move || {
        let ns = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on a valid namespace fd; affects only this thread.
        let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}");
        f()
    })
    .join()
    .expect("netns thread")
}

struct Down;
impl Drop for Down {
    fn drop(&mut self) {
        let _ = cli(&["sandbox", "down"]);
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// Send `rate` datagrams/s from `from` to the echo server for `secs`; the round trips in ms of
/// the echoes that came back, and how many were sent.
/// (The sender spins between datagrams, so one core is busy sending.)
fn echo_rtts(from: &Node, to: SocketAddrV4, rate: u64, secs: f64) -> (Vec<f64>, u64) {
    let host = from.host.clone();
    let sock = in_netns(&from.name, move || {
        UdpSocket::bind(format!("{host}:0")).expect("bind client")
    });
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let bytes: libc::c_int = 64 << 20;
    // SAFETY: a valid socket and a c_int option value.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &bytes as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    let rx = sock.try_clone().unwrap();
    let t0 = Instant::now();
    let receiver = std::thread::spawn(move || {
        let mut rtts = Vec::new();
        let mut buf = [0u8; 64];
        let mut idle = 0;
        loop {
            match rx.recv_from(&mut buf) {
                Ok((n, _)) if n >= 8 => {
                    let sent_ns = u64::from_be_bytes(buf[..8].try_into().unwrap());
                    let now_ns = t0.elapsed().as_nanos() as u64;
                    rtts.push((now_ns.saturating_sub(sent_ns)) as f64 / 1e6);
                    idle = 0;
                }
                Ok(_) => {}
                Err(_) => {
                    idle += 1;
                    if idle > 10 {
                        return rtts;
                    }
                }
            }
        }
    });
    let total = (rate as f64 * secs) as u64;
    let gap = Duration::from_secs_f64(1.0 / rate as f64);
    for i in 0..total {
        let due = t0 + gap * i as u32;
        while Instant::now() < due {
            std::hint::spin_loop();
        }
        let ns = t0.elapsed().as_nanos() as u64;
        let _ = sock.send_to(&ns.to_be_bytes(), to);
    }
    (receiver.join().unwrap(), total)
}

fn main() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("netdelay bench: needs root (a sandbox and NFQUEUE); skipped");
        return;
    }
    let delay_ms: u64 = std::env::var("NFQ_DELAY_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let secs: f64 = std::env::var("NFQ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let rates: Vec<u64> = std::env::var("NFQ_RATES")
        .unwrap_or_else(|_| "1000,5000,20000,50000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let backend = std::env::var("NFQ_BACKEND").unwrap_or_else(|_| "nfqueue".into());

    let up = cli(&["sandbox", "up"]);
    assert!(
        up.status.success(),
        "sandbox up: {}",
        String::from_utf8_lossy(&up.stderr)
    );
    let _down = Down;
    let cfg = SandboxConfig {
        name: NAME.into(),
        subnet: SUBNET.into(),
        nodes: 5,
        ..Default::default()
    };
    let info = sandbox::load(&cfg.state_dir()).expect("sandbox state");
    let ssh = SshConfig {
        private_key: Some(info.private_key.clone()),
        known_hosts: Some(info.known_hosts.clone()),
        ..SshConfig::default()
    };
    let nodes: Vec<Node> = info
        .nodes
        .iter()
        .map(|n| Node {
            name: n.name.clone(),
            host: n.address.to_string(),
        })
        .collect();
    let remotes = shakedown::runner::connect(&nodes, &ssh).expect("connect");
    let db: Arc<dyn Db> = Arc::new(Etcd::default());
    let mut nem = Nemesis::new(NemesisConfig {
        helper_exe: Some(env!("CARGO_BIN_EXE_shakedown").to_string()),
        nodes: nodes.clone(),
        remotes,
        db,
        partition: PartitionConfig::default(),
        rng: ChaCha8Rng::seed_from_u64(1),
        journal: None,
    });
    nem.setup().expect("chain");

    // The echo server on n1 (the node whose egress is delayed).
    let server_addr: SocketAddrV4 = format!("{}:47010", nodes[0].host).parse().unwrap();
    let server = in_netns(&nodes[0].name, move || {
        UdpSocket::bind(server_addr).expect("bind echo")
    });
    // Held packets stay charged to the socket that sent them: without a large send buffer the
    // echo socket, not the delayer, would limit the packets in flight (~256 of them).
    for (fd, opt) in [
        (server.as_raw_fd(), libc::SO_SNDBUFFORCE),
        (server.as_raw_fd(), libc::SO_RCVBUFFORCE),
    ] {
        let bytes: libc::c_int = 64 << 20;
        // SAFETY: a valid socket and a c_int option value.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                &bytes as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        while let Ok((n, from)) = server.recv_from(&mut buf) {
            let _ = server.send_to(&buf[..n], from);
        }
    });
    let (base, _) = echo_rtts(&nodes[1], server_addr, 1000, 1.0);
    let mut base_sorted = base.clone();
    base_sorted.sort_by(f64::total_cmp);
    let base_ms = quantile(&base_sorted, 0.5);
    println!(
        "undelayed UDP round trip n2→n1→n2: p50 {:.3} ms, p99 {:.3} ms",
        base_ms,
        quantile(&base_sorted, 0.99)
    );

    println!(
        "{:>8} {:>8} {:>7} {:>10} {:>10} {:>10} {:>10}   ({backend}, delay {delay_ms} ms, {secs} s per rate)",
        "rate/s", "sent", "lost", "undelayed", "err p50", "err p99", "err max"
    );
    for rate in rates {
        // `targets` names a selection, not a node: ask for "one" until it is n1.
        let v = loop {
            match nem.invoke(
                "start-delay",
                &json!({"targets": "one", "delay_ms": delay_ms, "backend": backend}),
            ) {
                Completion::Ok { value, .. } if value["nodes"][0] == "n1" => break value,
                Completion::Ok { .. } => {
                    nem.invoke("stop-delay", &Value::Null);
                }
                other => panic!("start-delay: {other:?}"),
            }
        };
        let (rtts, sent) = echo_rtts(&nodes[1], server_addr, rate, secs);
        let stop = nem.invoke("stop-delay", &Value::Null);
        let summary = match &stop {
            Completion::Ok { value, .. } => value["delayer"]["n1"].clone(),
            _ => Value::Null,
        };
        let d = delay_ms as f64;
        let undelayed = rtts.iter().filter(|&&r| r < d * 0.5).count();
        let mut err: Vec<f64> = rtts
            .iter()
            .filter(|&&r| r >= d * 0.5)
            .map(|r| r - base_ms - d)
            .collect();
        err.sort_by(f64::total_cmp);
        println!(
            "{:>8} {:>8} {:>7} {:>10} {:>8.3}ms {:>8.3}ms {:>8.3}ms   served by {}; delayer: {}",
            rate,
            sent,
            sent - rtts.len() as u64,
            undelayed,
            quantile(&err, 0.5),
            quantile(&err, 0.99),
            err.last().copied().unwrap_or(f64::NAN),
            v["backend"],
            summary
        );
    }
    let _ = nem.heal_all();
}
