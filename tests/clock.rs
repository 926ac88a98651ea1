//! Clock faults against a real sandbox (`sdclk`, 10.82.0.0/24): `date -s` steps one node's clock
//! only (through the preload shim), resets put it back, a `date -s` that bypasses the shim fails
//! with EPERM, the host clock never moves; and `shakedown heal` after a SIGKILLed controller
//! undoes a partition, a pause and a clock step that were all active at once; a real PostgreSQL
//! server on the stepped node sees the step (`clock_timestamp()`), one on another node does not.
//! Also measures the time from a clock op to its effect on 5 nodes and the offset measurement
//! error (printed).
//!
//! Needs root (CI runs as root); when not root each test prints why it did nothing. Tests take a
//! lock so only one uses the sandbox at a time; the sandbox is brought down at the end, also on
//! failure.

use serde_json::{Value, json};
use shakedown::client::Completion;
use shakedown::control::{Cmd, Remote, SshConfig};
use shakedown::nemesis::{Nemesis, NemesisConfig, PartitionConfig, outstanding_faults};
use shakedown::node::Node;
use shakedown::sandbox::{SandboxConfig, SandboxInfo};
use shakedown::systems::etcd::{Etcd, EtcdConfig};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[path = "common/cli.rs"]
mod cli;
use cli::{root, shakedown};

static SERIAL: Mutex<()> = Mutex::new(());
const NAME: &str = "sdclk";
const SUBNET: &str = "10.82.0.0/24";
const SANDBOX: [&str; 4] = ["--sandbox-name", NAME, "--sandbox-subnet", SUBNET];
/// Allowed difference between a node's measured offset and the expected one.
const TOLERANCE_MS: f64 = 50.0;

fn sandbox_config() -> SandboxConfig {
    SandboxConfig {
        subnet: SUBNET.into(),
        ..SandboxConfig::named(NAME)
    }
}

/// Brings the test sandbox down when dropped.
struct SandboxGuard;

impl Drop for SandboxGuard {
    fn drop(&mut self) {
        if let Err(e) = shakedown::sandbox::down(&sandbox_config()) {
            eprintln!("sandbox down failed: {e}");
        }
    }
}

/// The host's wall clock minus its monotonic clock, in ms: it changes only when the wall clock
/// is stepped or slewed (a VM's time sync may slew it by several ms a second).
fn host_wall_minus_monotonic_ms() -> f64 {
    let mut mono = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut mono) };
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    wall.as_secs_f64() * 1e3 - (mono.tv_sec as f64 * 1e3 + mono.tv_nsec as f64 / 1e6)
}

/// Watches the host's wall clock for steps during a test: samples wall − monotonic every 5 ms
/// on a thread; [`HostClockWatch::assert_never_stepped`] fails on any jump between two samples
/// larger than a slew could make (a step of ours would be seconds; the smallest we make is
/// 1.5 s). Comparing only the start and end would blame the host's own slewing.
struct HostClockWatch {
    stop: Arc<std::sync::atomic::AtomicBool>,
    worker: Option<std::thread::JoinHandle<(f64, usize)>>,
}

impl HostClockWatch {
    fn start() -> HostClockWatch {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let worker = std::thread::spawn(move || {
            let (mut last, mut largest, mut samples) = (host_wall_minus_monotonic_ms(), 0.0f64, 0);
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
                let now = host_wall_minus_monotonic_ms();
                largest = largest.max((now - last).abs());
                last = now;
                samples += 1;
            }
            (largest, samples)
        });
        HostClockWatch {
            stop,
            worker: Some(worker),
        }
    }

    /// A slew moves wall − monotonic by well under a ms between two samples 5 ms apart (even
    /// at 5,000 ppm, 25 µs); a descheduled sampler stretches that, so allow 5 ms.
    fn assert_never_stepped(mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (largest, samples) = self.worker.take().unwrap().join().unwrap();
        assert!(samples > 10, "only {samples} samples of the host clock");
        assert!(
            largest < 5.0,
            "the host's wall clock jumped by {largest:.1} ms between two samples"
        );
    }
}

struct Cluster {
    info: SandboxInfo,
    nodes: Vec<Node>,
    remotes: Vec<Arc<dyn Remote>>,
}

fn cluster() -> Cluster {
    let info = shakedown::sandbox::up(&sandbox_config()).expect("sandbox up");
    let nodes: Vec<Node> = info
        .nodes
        .iter()
        .map(|n| Node {
            name: n.name.clone(),
            host: n.address.to_string(),
        })
        .collect();
    let ssh = SshConfig {
        private_key: Some(info.private_key.clone()),
        known_hosts: Some(info.known_hosts.clone()),
        ..SshConfig::default()
    };
    let pairs: Vec<(String, String)> = nodes
        .iter()
        .map(|n| (n.name.clone(), n.host.clone()))
        .collect();
    let remotes = shakedown::control::connect_all(&pairs, &ssh).expect("connect");
    Cluster {
        info,
        nodes,
        remotes,
    }
}

type Journal = Arc<Mutex<Vec<Value>>>;

fn nemesis(c: &Cluster) -> (Nemesis, Journal) {
    nemesis_of(c, Arc::new(Etcd::new(EtcdConfig::default())))
}

fn nemesis_of(c: &Cluster, db: Arc<dyn shakedown::db::Abilities>) -> (Nemesis, Journal) {
    let journal: Journal = Arc::new(Mutex::new(Vec::new()));
    let sink = journal.clone();
    let n = Nemesis::new(NemesisConfig {
        helper_exe: None,
        nodes: c.nodes.clone(),
        remotes: c.remotes.clone(),
        db,
        partition: PartitionConfig::default(),
        rng: rand::SeedableRng::seed_from_u64(7),
        journal: Some(Box::new(move |r: &Value| {
            sink.lock().unwrap().push(r.clone())
        })),
    });
    (n, journal)
}

fn ok(c: Completion) -> Value {
    match c {
        Completion::Ok { value, .. } => value,
        other => panic!("nemesis op did not succeed: {other:?}"),
    }
}

/// Offsets measured by the nemesis (`clock-offsets`), per node name.
fn measured(n: &mut Nemesis) -> Vec<(String, f64)> {
    let v = ok(n.invoke("clock-offsets", &Value::Null));
    v["offsets_ms"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
        .collect()
}

/// The true offsets (the shim's files, read on the host), in ms.
fn truth(info: &SandboxInfo) -> Vec<(String, f64)> {
    info.nodes
        .iter()
        .map(|n| (n.name.clone(), n.clock_offset_ns().unwrap() as f64 / 1e6))
        .collect()
}

fn assert_offsets(n: &mut Nemesis, info: &SandboxInfo, expected: &[(&str, f64)], what: &str) {
    let got = measured(n);
    for (name, offset) in &got {
        let want = expected
            .iter()
            .find(|(e, _)| e == name)
            .map_or(0.0, |(_, o)| *o);
        assert!(
            (offset - want).abs() <= TOLERANCE_MS,
            "{what}: {name} measured offset {offset:.1} ms, expected {want} ± {TOLERANCE_MS}; \
             all measured {got:?}, files {:?}",
            truth(info)
        );
    }
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

#[test]
fn clock_steps_move_only_the_stepped_node_and_never_the_host() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard;
    let host_clock = HostClockWatch::start();
    let c = cluster();
    let (mut n, journal) = nemesis(&c);

    assert_offsets(&mut n, &c.info, &[], "fresh sandbox");

    // One node steps forward 90 s, another back 1.5 s; the rest stay.
    let v = ok(n.invoke("bump-clock", &json!({"nodes": ["n2"], "delta_ms": 90_000})));
    assert_eq!(v, json!({"nodes": ["n2"], "delta_ms": 90_000}));
    ok(n.invoke("bump-clock", &json!({"nodes": ["n3"], "delta_ms": -1500})));
    let expected = [("n2", 90_000.0), ("n3", -1500.0)];
    assert_offsets(&mut n, &c.info, &expected, "after bumps");
    assert!(
        n.active().iter().any(|a| a == "clock n2,n3"),
        "{:?}",
        n.active()
    );
    // Processes started over SSH see it through every libc clock call (python reads
    // clock_gettime), while the monotonic clock is untouched.
    let probe = c.remotes[1].exec_ok(&Cmd::new("date").arg("+%s")).unwrap();
    let node_secs: f64 = probe.trim().parse().unwrap();
    let host_secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        (node_secs - host_secs - 90.0).abs() < 2.0,
        "{node_secs} vs {host_secs}"
    );

    // Bypassing the shim cannot step the (shared) kernel clock: the nodes lack CAP_SYS_TIME.
    let out = c.remotes[0]
        .exec(&Cmd::sh("env -u LD_PRELOAD date -s '+5 seconds'"))
        .unwrap();
    assert!(!out.success(), "bypassing date -s succeeded: {out:?}");
    assert!(
        out.stderr.contains("Operation not permitted"),
        "expected EPERM: {out:?}"
    );
    assert_offsets(&mut n, &c.info, &expected, "after the refused bypass");

    // Strobe: flips between +2 s and the starting offset, ends where it started.
    let strobe_node = c.info.node("n4").unwrap().clone();
    let seen = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut seen = Vec::new();
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(900) {
                seen.push(strobe_node.clock_offset_ns().unwrap() / 1_000_000);
                std::thread::sleep(Duration::from_millis(10));
            }
            seen
        });
        let v = ok(n.invoke(
            "strobe-clock",
            &json!({"nodes": ["n4"], "delta_ms": 2000, "period_ms": 100, "duration_ms": 1000}),
        ));
        assert_eq!(v["period_ms"], 100);
        sampler.join().unwrap()
    });
    assert!(seen.iter().any(|ms| (ms - 2000).abs() < 50), "{seen:?}");
    assert!(seen.iter().any(|ms| ms.abs() < 50), "{seen:?}");
    assert_offsets(&mut n, &c.info, &expected, "after the strobe");

    // A 1 ms period cannot be kept (each flip forks `date` and `sleep`): the strobe still stops
    // at its duration (it once ran 2000 flips at ~3 ms each) and ends where it started.
    let t = Instant::now();
    ok(n.invoke(
        "strobe-clock",
        &json!({"nodes": ["n4"], "delta_ms": 2000, "period_ms": 1, "duration_ms": 2000}),
    ));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "a 2 s strobe with a 1 ms period ran {:?}",
        t.elapsed()
    );
    assert_offsets(&mut n, &c.info, &expected, "after the 1 ms strobe");

    // A strobe whose controller is gone (here: another nemesis that never started it, as
    // `shakedown heal` would be) is stopped by the reset, which then holds.
    let n5 = c.info.node("n5").unwrap().clone();
    std::thread::scope(|s| {
        let t = Instant::now();
        let orphan =
            s.spawn(|| shakedown::nemesis::clock::strobe(c.remotes[4].as_ref(), 3000, 50, 20_000));
        std::thread::sleep(Duration::from_millis(400));
        let (mut healer, _) = nemesis(&c);
        healer.adopt(&[
            json!({"action": "inject", "event": "begin", "f": "bump-clock",
                               "undo_with": "reset-clock", "detail": {"nodes": ["n5"]}}),
        ]);
        ok(healer.invoke("reset-clock", &Value::Null));
        let _ = orphan.join().unwrap();
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the strobe loop was not stopped by the reset"
        );
    });
    std::thread::sleep(Duration::from_millis(300));
    let left = n5.clock_offset_ns().unwrap() as f64 / 1e6;
    assert!(left.abs() < TOLERANCE_MS, "n5 at {left} ms after the reset");

    // Reset puts every touched node back; the journal shows nothing outstanding.
    let v = ok(n.invoke("reset-clock", &Value::Null));
    assert_eq!(v, json!({"nodes": ["n2", "n3", "n4"]}));
    assert_offsets(&mut n, &c.info, &[], "after reset");
    assert!(n.active().is_empty(), "{:?}", n.active());
    let records = journal.lock().unwrap().clone();
    let fs: Vec<String> = records
        .iter()
        .filter(|r| r["event"] == "begin")
        .map(|r| {
            format!(
                "{} {}",
                r["action"].as_str().unwrap(),
                r["f"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        fs,
        [
            "inject bump-clock",
            "inject bump-clock",
            "inject strobe-clock",
            "inject strobe-clock",
            "undo reset-clock"
        ]
    );
    assert!(
        records
            .iter()
            .filter(|r| r["action"] == "inject")
            .all(|r| r["undo_with"] == "reset-clock")
    );
    assert!(outstanding_faults(&records).is_empty(), "{records:?}");
    // Bad requests are reported, not panicked on, and change nothing.
    match n.invoke("bump-clock", &json!({"nodes": ["n9"], "delta_ms": 5})) {
        Completion::Info { error } => assert!(error.contains("unknown node \"n9\""), "{error}"),
        other => panic!("{other:?}"),
    }

    // Time from a clock op to its effect on all 5 nodes (the op returns once every node's
    // `date -s` returned; the sampler sees the offset files change), and measurement error.
    let all: Vec<String> = c.nodes.iter().map(|x| x.name.clone()).collect();
    let (mut op_ms, mut effect_ms, mut error_ms) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..20 {
        let delta = if i % 2 == 0 { 300 } else { -300 };
        let before: Vec<i64> = c
            .info
            .nodes
            .iter()
            .map(|x| x.clock_offset_ns().unwrap())
            .collect();
        let t = Instant::now();
        let effect = std::thread::scope(|s| {
            let watcher =
                s.spawn(|| {
                    loop {
                        let changed =
                            c.info.nodes.iter().zip(&before).all(|(x, b)| {
                                (x.clock_offset_ns().unwrap() - b).abs() > 200_000_000
                            });
                        if changed || t.elapsed() > Duration::from_secs(10) {
                            return t.elapsed();
                        }
                        std::thread::sleep(Duration::from_micros(200));
                    }
                });
            ok(n.invoke("bump-clock", &json!({"nodes": all, "delta_ms": delta})));
            op_ms.push(t.elapsed().as_secs_f64() * 1e3);
            watcher.join().unwrap()
        });
        effect_ms.push(effect.as_secs_f64() * 1e3);
        let m = measured(&mut n);
        for ((name, got), (file_name, want)) in m.iter().zip(truth(&c.info)) {
            assert_eq!(name, &file_name);
            error_ms.push(got - want);
        }
    }
    ok(n.invoke("reset-clock", &Value::Null));
    let residual: Vec<f64> = truth(&c.info).into_iter().map(|(_, o)| o).collect();
    println!("offsets right after reset (true, from the shim's files): {residual:?} ms");
    let (p50_op, p50_effect) = (percentile(op_ms.clone(), 0.5), percentile(effect_ms, 0.5));
    let mean_err = error_ms.iter().sum::<f64>() / error_ms.len() as f64;
    let abs_err: Vec<f64> = error_ms.iter().map(|e| e.abs()).collect();
    let (p50_err, max_err) = (percentile(abs_err.clone(), 0.5), percentile(abs_err, 1.0));
    println!(
        "clock op on 5 nodes: p50 {p50_op:.1} ms to completion, p50 {p50_effect:.1} ms to \
         effect (max op {:.1} ms); offset measurement error |p50| {p50_err:.2} ms, max {max_err:.2} ms, mean (signed) \
         {mean_err:.2} ms",
        percentile(op_ms, 1.0)
    );
    assert!(p50_effect < 200.0, "p50 time to effect {p50_effect:.1} ms");
    assert!(
        max_err < TOLERANCE_MS,
        "measurement error up to {max_err:.1} ms"
    );
    assert_offsets(&mut n, &c.info, &[], "after the measurement loop");

    // The host clock was never stepped.
    host_clock.assert_never_stepped();
}

fn iptables_rules(n: usize) -> usize {
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &format!("sd-{NAME}-n{n}"),
            "iptables",
            "-w",
            "-S",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("SHAKEDOWN"))
        .count()
}

/// Run a command on node `i` (0-based) and return its stdout.
fn on(c: &Cluster, i: usize, script: &'static str) -> String {
    c.remotes[i]
        .exec(&Cmd::sh(script))
        .map(|o| o.stdout)
        .unwrap_or_default()
}

const ETCD_STATE: &str = "cut -d' ' -f3 /proc/$(cat /tmp/shakedown/etcd/etcd.pid)/stat";

#[test]
fn heal_after_a_killed_controller_undoes_partition_pause_and_clock_step_together() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard;
    let host_clock = HostClockWatch::start();
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let schedule = tmp.path().join("stacked.toml");
    // Three faults that overlap: after the third start all three are active.
    std::fs::write(
        &schedule,
        "interval_s = 2.0\norder = \"stacked\"\n\
         [[faults]]\nkind = \"partition\"\nshape = \"halves\"\n\
         [[faults]]\nkind = \"pause\"\ntargets = \"minority\"\n\
         [[faults]]\nkind = \"clock\"\nmode = \"bump\"\ntargets = \"one\"\n\
         min_delta_ms = 60000\nmax_delta_ms = 60000\n",
    )
    .unwrap();
    let mut child = cli::command()
        .args(["run", "--quiet", "--time-limit", "120"])
        .args(["--reports", reports.to_str().unwrap()])
        .args(["--nemesis", schedule.to_str().unwrap()])
        .args(SANDBOX)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let history = reports.join("latest/history.jsonl");
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        assert!(Instant::now() < deadline, "the clock step never happened");
        assert!(child.try_wait().unwrap().is_none(), "run ended early");
        let text = std::fs::read_to_string(&history).unwrap_or_default();
        let stepped = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|o| o["f"] == "bump-clock" && o["value"]["delta_ms"].is_i64());
        if stepped {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: no cleanup runs in the controller
    child.wait().unwrap();

    let c = cluster();
    // A nemesis that touched nothing (so it resets nothing), used only to measure offsets.
    let (mut n, _) = nemesis(&c);
    // All three faults are in place.
    let rules: usize = (1..=5).map(iptables_rules).sum();
    assert!(rules > 5, "partition not in place ({rules} rules)");
    let stopped = (0..5)
        .filter(|&i| on(&c, i, ETCD_STATE).trim() == "T")
        .count();
    assert_eq!(stopped, 2, "expected the paused minority in state T");
    let stepped: Vec<(String, f64)> = measured(&mut n)
        .into_iter()
        .filter(|(_, o)| o.abs() > 1000.0)
        .collect();
    assert_eq!(stepped.len(), 1, "expected one node 60 s off: {stepped:?}");
    assert!(
        (stepped[0].1.abs() - 60_000.0).abs() < TOLERANCE_MS,
        "{stepped:?}"
    );
    // etcd itself (a Go program) on the stepped node is 60 s off; on the others it is not.
    // Its HTTP Date header is its own time.Now(), to the second.
    for (i, node) in c.nodes.iter().enumerate() {
        if on(&c, i, ETCD_STATE).trim() == "T" {
            continue; // paused: it cannot answer
        }
        let off = etcd_date_offset_s(&node.host);
        let want = if node.name == stepped[0].0 {
            stepped[0].1 / 1e3
        } else {
            0.0
        };
        assert!(
            (off - want).abs() <= 1.5,
            "{}: etcd's clock is {off} s off, expected {want} s",
            node.name
        );
    }

    let out = shakedown(&[
        "heal",
        "--sandbox-name",
        NAME,
        "--sandbox-subnet",
        SUBNET,
        "--reports",
        reports.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with(&format!("{}: ", stepped[0].0))
                && l.contains("reset the clock to the controller's")),
        "{stdout}"
    );
    for i in 1..=5 {
        assert_eq!(iptables_rules(i), 0, "n{i} still has SHAKEDOWN rules");
    }
    for i in 0..5 {
        let s = on(&c, i, ETCD_STATE);
        assert!(
            !s.trim().is_empty() && s.trim() != "T",
            "n{} etcd state {s:?} after heal",
            i + 1
        );
        // No process at all is stopped on the node.
        let states = on(&c, i, "ps -eo stat=");
        assert!(!states.trim().is_empty(), "no ps output on n{}", i + 1);
        assert!(
            states.lines().all(|l| !l.trim_start().starts_with('T')),
            "n{} has stopped processes: {states}",
            i + 1
        );
    }
    assert_offsets(&mut n, &c.info, &[], "after heal");
    // Every etcd started on the nodes was patched, and no process is left traced.
    for (i, node) in c.info.nodes.iter().enumerate() {
        let log = std::fs::read_to_string(node.clock_patch_log()).unwrap_or_default();
        assert!(
            log.contains("exe=/usr/bin/etcd patched in") && !log.contains("NOT patched"),
            "n{}: {log}",
            i + 1
        );
        let traced = on(
            &c,
            i,
            "grep -l '^TracerPid:[[:space:]]*[1-9]' /proc/[0-9]*/status 2>/dev/null",
        );
        assert!(traced.trim().is_empty(), "n{} traced: {traced}", i + 1);
    }
    let journal = std::fs::read_to_string(reports.join("latest/faults.jsonl")).unwrap();
    let records: Vec<Value> = journal
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(outstanding_faults(&records).is_empty(), "{journal}");
    host_clock.assert_never_stepped();
}

/// A node's PostgreSQL server clock minus the controller's, in ms: `clock_timestamp()` is read
/// by the server process (a libc program started over SSH, so it runs under the shim).
fn pg_server_offset_ms(c: &Cluster, i: usize) -> f64 {
    let query = Cmd::script(
        "/usr/lib/postgresql/15/bin/psql -h \"$1\" -p 5432 -U postgres -d postgres -Atc \
         'select extract(epoch from clock_timestamp())'",
        [c.nodes[i].host.as_str()],
    );
    let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let out = c.remotes[i].exec_ok(&query).expect("psql");
    let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let server_s: f64 = out
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("psql said {out:?}"));
    server_s * 1e3 - (before.as_secs_f64() + after.as_secs_f64()) * 1e3 / 2.0
}

#[test]
fn a_clock_step_reaches_a_postgresql_server_on_that_node_only() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard;
    let c = cluster();
    use shakedown::db::Db;
    use shakedown::systems::postgres::{Postgres, PostgresConfig};
    let pg = Arc::new(Postgres::new(PostgresConfig::default()));
    shakedown::sandbox::ensure_packages(&pg.packages()).expect("postgres packages");
    // A primary and one streaming replica are enough.
    let (nodes, remotes) = (&c.nodes[..2], &c.remotes[..2]);
    for r in shakedown::runner::on_nodes(remotes, nodes, |r, n| {
        pg.install(r)?;
        pg.setup(r, n, nodes)
    }) {
        r.expect("postgres setup");
    }
    for r in shakedown::runner::on_nodes(remotes, nodes, |r, n| pg.await_ready(r, n, nodes)) {
        r.expect("postgres ready");
    }
    let (mut nem, _journal) = nemesis(&c);
    for i in 0..2 {
        let off = pg_server_offset_ms(&c, i);
        assert!(
            off.abs() < 250.0,
            "n{} server clock off by {off} ms before any step",
            i + 1
        );
    }

    ok(nem.invoke("bump-clock", &json!({"nodes": ["n2"], "delta_ms": 30_000})));
    let (n1, n2) = (pg_server_offset_ms(&c, 0), pg_server_offset_ms(&c, 1));
    println!("after +30 s on n2: postgres clock offsets n1 {n1:.1} ms, n2 {n2:.1} ms");
    assert!(
        (n2 - 30_000.0).abs() < 250.0,
        "n2's postgres did not see the step: {n2} ms"
    );
    assert!(
        n1.abs() < 250.0,
        "n1's postgres moved with n2's step: {n1} ms"
    );

    ok(nem.invoke("reset-clock", &Value::Null));
    let n2 = pg_server_offset_ms(&c, 1);
    assert!(n2.abs() < 250.0, "n2's postgres clock not reset: {n2} ms");
    for r in shakedown::runner::on_nodes(remotes, nodes, |r, n| pg.teardown(r, n)) {
        r.expect("postgres teardown");
    }
}

/// `NAME SECONDS` lines of the static clock probe (`sd-clockprobe`) run over SSH on node `i`,
/// and the host's wall clock just before and after (s).
fn probe_on(c: &Cluster, i: usize) -> (Vec<(String, f64)>, f64, f64) {
    let now = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let probe = c.info.clock_probe();
    let before = now();
    let out = c.remotes[i]
        .exec_ok(&Cmd::new(probe.to_str().unwrap()))
        .expect("sd-clockprobe");
    let after = now();
    let readings = shakedown::sandbox::clockpatch::parse_probe(&out).expect("probe output");
    (readings, before, after)
}

/// A minimal HTTP GET to a node's address (a node need not have curl): (headers, body).
fn http_get(host: &str, port: u16, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect((host, port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_string(), body.to_string())
}

/// etcd's clock on `host` (its HTTP `Date` header, whole seconds) minus the host's, in s.
fn etcd_date_offset_s(host: &str) -> f64 {
    let t0 = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let (head, _) = http_get(host, 2379, "/version");
    let t1 = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let date = head
        .lines()
        .find_map(|l| l.strip_prefix("Date: "))
        .unwrap_or_else(|| panic!("no Date header from etcd on {host}: {head}"));
    let etcd = chrono::DateTime::parse_from_rfc2822(date.trim()).unwrap();
    // The header truncates to the second: compare with the midpoint minus half a second.
    etcd.timestamp() as f64 + 0.5 - (t0.as_secs_f64() + t1.as_secs_f64()) / 2.0
}

const NATS_PORT: u16 = 14222;
const NATS_MONITOR: u16 = 18222;

/// What a nats-server (a Go program) on `host` says the time is (`/varz` `now`), minus the
/// host's wall clock at the midpoint of the request, in ms.
fn nats_offset_ms(host: &str) -> f64 {
    let t0 = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let (_, body) = http_get(host, NATS_MONITOR, "/varz");
    let t1 = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let varz: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let now = chrono::DateTime::parse_from_rfc3339(varz["now"].as_str().unwrap()).unwrap();
    let server_ms = now.timestamp_nanos_opt().unwrap() as f64 / 1e6;
    server_ms - (t0.as_secs_f64() + t1.as_secs_f64()) * 1e3 / 2.0
}

#[test]
fn go_and_static_programs_read_their_nodes_clock_and_see_steps_at_once() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard;
    let host_clock = HostClockWatch::start();
    let c = cluster();
    assert_eq!(
        c.info.clock_patch,
        Some(shakedown::sandbox::ClockPatch::Works),
        "the clock patch does not work on this machine"
    );
    shakedown::sandbox::ensure_packages(&["nats-server".to_string()]).expect("nats-server");
    let (mut n, _journal) = nemesis(&c);
    ok(n.invoke("bump-clock", &json!({"nodes": ["n2"], "delta_ms": 90_000})));
    ok(n.invoke("bump-clock", &json!({"nodes": ["n3"], "delta_ms": -1500})));

    // A static binary started over SSH (bash execs it: the shim sends it through the patcher)
    // reads its node's clock through libc, its vDSO directly (Go's way), gettimeofday, time,
    // in a new thread and in a forked child; its monotonic clock is the host's.
    for (i, offset_s) in [(0, 0.0), (1, 90.0), (2, -1.5), (3, 0.0)] {
        let (readings, before, after) = probe_on(&c, i);
        for (name, seen) in &readings {
            if name == "monotonic" || name == "tai" {
                continue;
            }
            let slack = if name == "time" || name == "realtime-coarse" {
                1.0
            } else {
                0.05
            };
            assert!(
                *seen >= before + offset_s - slack && *seen <= after + offset_s + slack,
                "n{}: {name} read {seen:.3}, host {before:.3}..{after:.3}, offset {offset_s} s",
                i + 1
            );
        }
    }

    // A Go program: nats-server on the stepped n2 and on n1 reports its node's time.
    let mut pids = Vec::new();
    for i in 0..2 {
        let pid = c.remotes[i]
            .exec_ok(&Cmd::script(
                "cd /tmp && nats-server -a \"$1\" -p \"$2\" -m \"$3\" >/tmp/nats-clock.log 2>&1 & echo $!",
                [
                    c.nodes[i].host.as_str(),
                    &NATS_PORT.to_string(),
                    &NATS_MONITOR.to_string(),
                ],
            ))
            .unwrap();
        pids.push(pid.trim().to_string());
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while (0..2)
        .any(|i| std::net::TcpStream::connect((c.nodes[i].host.as_str(), NATS_MONITOR)).is_err())
    {
        assert!(Instant::now() < deadline, "nats-server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (n1, n2) = (
        nats_offset_ms(&c.nodes[0].host),
        nats_offset_ms(&c.nodes[1].host),
    );
    println!("nats-server clock offsets: n1 {n1:.1} ms, n2 {n2:.1} ms (n2 stepped +90 s)");
    assert!(n1.abs() < 250.0, "n1's nats-server is off by {n1} ms");
    assert!(
        (n2 - 90_000.0).abs() < 250.0,
        "n2's nats-server did not see +90 s: {n2} ms"
    );
    // The nemesis's clock-offsets read the same servers' own clocks (`/varz` now), beside each
    // node's `date`; nodes without a server are named in db_errors, and the op stays ok.
    let nats = shakedown::systems::nats::Nats::new(shakedown::systems::nats::NatsConfig {
        monitor_port: NATS_MONITOR,
        ..Default::default()
    });
    let (mut nats_nemesis, _) = nemesis_of(&c, Arc::new(nats));
    let v = ok(nats_nemesis.invoke("clock-offsets", &Value::Null));
    let db = &v["db_offsets_ms"];
    assert!(db["n1"].as_f64().unwrap().abs() < 250.0, "{v}");
    assert!((db["n2"].as_f64().unwrap() - 90_000.0).abs() < 250.0, "{v}");
    assert!(v["db_errors"]["n3"].is_string(), "{v}");
    assert_eq!(v["db_clock"]["source"], "nats-server's /varz now", "{v}");

    // A step reaches the running Go program at once (no restart, no re-attach).
    ok(n.invoke("bump-clock", &json!({"nodes": ["n1"], "delta_ms": 7000})));
    let n1 = nats_offset_ms(&c.nodes[0].host);
    assert!(
        (n1 - 7000.0).abs() < 250.0,
        "n1's nats-server after +7 s: {n1} ms"
    );

    // A strobe seen from inside the Go program: both ends of the flip show up.
    let host = c.nodes[0].host.clone();
    let samples = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut v = Vec::new();
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(1500) {
                v.push(nats_offset_ms(&host));
                std::thread::sleep(Duration::from_millis(20));
            }
            v
        });
        ok(n.invoke(
            "strobe-clock",
            &json!({"nodes": ["n1"], "delta_ms": 3000, "period_ms": 200, "duration_ms": 1500}),
        ));
        sampler.join().unwrap()
    });
    let near = |target: f64| {
        samples
            .iter()
            .filter(|o| (*o - target).abs() < 300.0)
            .count()
    };
    println!(
        "nats-server on n1 during a ±3 s strobe (200 ms period): {} samples, {} near +7 s, {} near +10 s",
        samples.len(),
        near(7000.0),
        near(10_000.0)
    );
    assert!(near(7000.0) > 0 && near(10_000.0) > 0, "{samples:?}");

    for (i, pid) in pids.iter().enumerate() {
        c.remotes[i]
            .exec_ok(&Cmd::script("kill \"$1\"", [pid.as_str()]))
            .unwrap();
    }
    // Every static or Go program was patched, and no process on a node is left traced.
    for (i, node) in c.info.nodes.iter().enumerate() {
        let log = std::fs::read_to_string(node.clock_patch_log()).unwrap_or_default();
        assert!(!log.contains("NOT patched"), "n{}: {log}", i + 1);
        if i < 2 {
            assert!(
                log.contains("exe=/usr/sbin/nats-server patched in"),
                "n{}: {log}",
                i + 1
            );
        }
        let traced = on(
            &c,
            i,
            "grep -l '^TracerPid:[[:space:]]*[1-9]' /proc/[0-9]*/status 2>/dev/null",
        );
        assert!(traced.trim().is_empty(), "n{} traced: {traced}", i + 1);
    }
    ok(n.invoke("reset-clock", &Value::Null));
    host_clock.assert_never_stepped();
}

#[test]
fn clock_faults_against_go_systems_are_refused_where_the_patch_is_off() {
    if !root() {
        return;
    }
    const OFF: &[&str] = &[
        "--sandbox-name",
        "sdclkoff",
        "--sandbox-subnet",
        "10.112.0.0/24",
        "--sandbox-nodes",
        "3",
        "--sandbox-no-clock-patch",
    ];
    let _guard = cli::SandboxGuard(OFF);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let mut args = vec!["run", "--quiet", "--db", "etcd", "--nemesis", "clock"];
    args.extend(["--time-limit", "5", "--reports", reports.to_str().unwrap()]);
    args.extend(OFF);
    let out = shakedown(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(
            "n1, n2, n3: etcd (etcd, reading time without libc) would not see clock faults"
        ) && stderr.contains("--sandbox-no-clock-patch"),
        "{stderr}"
    );
    // Refused before anything of the system ran: no run directory, no etcd on a node.
    assert!(!reports.exists() || std::fs::read_dir(&reports).unwrap().next().is_none());
    let state = shakedown::sandbox::load(
        &SandboxConfig {
            subnet: "10.112.0.0/24".into(),
            ..SandboxConfig::named("sdclkoff")
        }
        .state_dir(),
    )
    .unwrap();
    for node in &state.nodes {
        assert!(
            !node.tmp_dir().join("shakedown/etcd").exists(),
            "{}: etcd was set up",
            node.name
        );
    }
}
