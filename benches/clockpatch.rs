//! Benchmarks of the sandbox's clock patch (`sandbox::clockpatch`): what a program pays for
//! reading its node's clock. Owns three scenarios, each its two sides alternated in one sitting:
//! (c) ns per `clock_gettime(CLOCK_REALTIME)` through the vDSO in the static probe, unpatched
//! and patched; with a Go toolchain on PATH, a Go program's `time.Now()` likewise (it is built
//! in a temporary directory); (s) time added to starting a program: the probe and
//! `etcd --version`, directly and through `sd-clockexec` (process start to exit, medians);
//! (e) etcd's throughput on patched and unpatched nodes: `shakedown run --db etcd --nemesis
//! none` rounds on two 3-node sandboxes, one made with `--sandbox-no-clock-patch`.
//! Does not own the patch's correctness (tests/clock.rs).
//! Needs root. Run with `cargo bench --bench clockpatch`; `CLOCKPATCH_BENCH_ROUNDS` sets (e)'s
//! rounds (default 3, 20 s each side), 0 skips it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const PATCHED: [&str; 6] = [
    "--sandbox-name",
    "sdbclk",
    "--sandbox-subnet",
    "10.113.0.0/24",
    "--sandbox-nodes",
    "3",
];
const UNPATCHED: [&str; 7] = [
    "--sandbox-name",
    "sdbclkoff",
    "--sandbox-subnet",
    "10.114.0.0/24",
    "--sandbox-nodes",
    "3",
    "--sandbox-no-clock-patch",
];

fn shakedown(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_shakedown"))
        .args(args)
        .output()
        .expect("run shakedown")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The offset file of node 1 of the patched sandbox, set to +1 s so the patch does work.
fn offset_file(state: &Path) -> PathBuf {
    let f = state.join("nodes/n1/clock_offset");
    std::fs::write(&f, 1_000_000_000i64.to_le_bytes()).expect("write the offset");
    f
}

/// (c): ns per call, unpatched and patched, alternating, 7 rounds of 20M calls.
fn per_call(state: &Path) {
    let probe = state.join("sd-clockprobe");
    let exec = state.join("sd-clockexec");
    let clock = offset_file(state);
    let run = |patched: bool| -> f64 {
        let mut cmd = if patched {
            let mut c = Command::new(&exec);
            c.arg(&probe).arg("sd-clockprobe");
            c
        } else {
            Command::new(&probe)
        };
        let out = cmd
            .args(["bench", "20000000"])
            .env("SHAKEDOWN_CLOCK_FILE", &clock)
            .output()
            .expect("probe");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("ns per call")
    };
    let (mut plain, mut patched) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        plain.push(run(false));
        patched.push(run(true));
    }
    let (p, q) = (median(plain), median(patched));
    println!(
        "(c) vDSO clock_gettime(REALTIME), static probe: {p:.1} ns unpatched, {q:.1} ns patched (+{:.1} ns), medians of 7 x 20M calls",
        q - p
    );
    go_time_now(state, &clock);
}

const GO_PROGRAM: &str = r#"package main

import (
	"fmt"
	"time"
)

func main() {
	const n = 20000000
	start := time.Now()
	var sink int64
	for i := 0; i < n; i++ {
		sink += time.Now().UnixNano()
	}
	el := time.Since(start)
	fmt.Printf("%.2f %d\n", float64(el.Nanoseconds())/n, sink&1)
}
"#;

/// (c) for a Go program, when `go` is on PATH: time.Now() per call.
fn go_time_now(state: &Path, clock: &Path) {
    if Command::new("go").arg("version").output().is_err() {
        println!("(c) Go time.Now(): skipped, no Go toolchain on PATH (apt-get install golang-go)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("main.go"), GO_PROGRAM).unwrap();
    let bin = dir.path().join("gonow");
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg("main.go")
        .current_dir(dir.path())
        .env("GOCACHE", dir.path().join("cache"))
        .env("CGO_ENABLED", "0")
        .output()
        .expect("go build");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let exec = state.join("sd-clockexec");
    let run = |patched: bool| -> f64 {
        let mut cmd = if patched {
            let mut c = Command::new(&exec);
            c.arg(&bin).arg("gonow");
            c
        } else {
            Command::new(&bin)
        };
        let out = cmd
            .env("SHAKEDOWN_CLOCK_FILE", clock)
            .output()
            .expect("gonow");
        let text = String::from_utf8_lossy(&out.stdout);
        text.split_whitespace().next().unwrap().parse().expect("ns")
    };
    let (mut plain, mut patched) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        plain.push(run(false));
        patched.push(run(true));
    }
    let (p, q) = (median(plain), median(patched));
    println!(
        "(c) Go time.Now() (static Go binary): {p:.1} ns unpatched, {q:.1} ns patched (+{:.1} ns), medians of 7 x 20M calls",
        q - p
    );
}

/// (s): process start to exit, directly and through sd-clockexec, 100 alternating runs each.
fn startup(state: &Path) {
    let exec = state.join("sd-clockexec");
    let clock = offset_file(state);
    for (label, program, args) in [
        (
            "static probe",
            state.join("sd-clockprobe"),
            vec!["bench", "1"],
        ),
        (
            "etcd --version",
            PathBuf::from("/usr/bin/etcd"),
            vec!["--version"],
        ),
    ] {
        if !program.exists() {
            println!(
                "(s) {label}: skipped, {} is not installed",
                program.display()
            );
            continue;
        }
        let time = |patched: bool| -> f64 {
            let t = Instant::now();
            let mut cmd = if patched {
                let mut c = Command::new(&exec);
                c.arg(&program).arg(program.file_name().unwrap());
                c
            } else {
                Command::new(&program)
            };
            let out = cmd
                .args(&args)
                .env("SHAKEDOWN_CLOCK_FILE", &clock)
                .output()
                .expect("run");
            assert!(out.status.success());
            t.elapsed().as_secs_f64() * 1e3
        };
        let (mut plain, mut patched) = (Vec::new(), Vec::new());
        for _ in 0..100 {
            plain.push(time(false));
            patched.push(time(true));
        }
        let (p, q) = (median(plain), median(patched));
        println!(
            "(s) {label}: {p:.2} ms directly, {q:.2} ms through sd-clockexec (+{:.2} ms), medians of 100",
            q - p
        );
    }
}

/// ops/s of one `shakedown run` on the sandbox `flags` names.
fn etcd_round(flags: &[&str], reports: &Path) -> f64 {
    let mut args = vec!["run", "--quiet", "--db", "etcd", "--nemesis", "none"];
    args.extend(["--time-limit", "20", "--reports", reports.to_str().unwrap()]);
    args.extend(flags);
    let out = shakedown(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains(" client ops in "))
        .unwrap_or_else(|| {
            panic!(
                "no throughput line: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    line.split_once('(')
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("unreadable line {line:?}"))
}

/// (e): etcd's ops/s, patched and unpatched sandboxes alternating (which goes first alternates).
fn etcd_throughput() {
    let rounds: usize = std::env::var("CLOCKPATCH_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    if rounds == 0 {
        return;
    }
    let reports = tempfile::tempdir().expect("tempdir");
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        if r % 2 == 0 {
            on.push(etcd_round(&PATCHED, reports.path()));
            off.push(etcd_round(&UNPATCHED, reports.path()));
        } else {
            off.push(etcd_round(&UNPATCHED, reports.path()));
            on.push(etcd_round(&PATCHED, reports.path()));
        }
        println!(
            "(e) round {}: patched {:.0} ops/s, unpatched {:.0} ops/s",
            r + 1,
            on[r],
            off[r]
        );
    }
    let (p, q) = (median(off), median(on));
    println!(
        "(e) etcd register workload, 3 nodes, 20 s rounds: {p:.0} ops/s unpatched, {q:.0} ops/s patched ({:+.1} %), medians of {rounds}",
        (q / p - 1.0) * 100.0
    );
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("clockpatch bench: skipped, needs root (it brings up sandboxes)");
        return;
    }
    let up = shakedown(&[&["sandbox", "up"][..], &PATCHED[..]].concat());
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let state = PathBuf::from("/var/lib/shakedown/sandbox/sdbclk");
    let t = Instant::now();
    per_call(&state);
    startup(&state);
    // Node 1's clock back to the host's before etcd runs there.
    std::fs::write(state.join("nodes/n1/clock_offset"), 0i64.to_le_bytes()).unwrap();
    etcd_throughput();
    for flags in [&PATCHED[..], &UNPATCHED[..]] {
        let _ = shakedown(&[&["sandbox", "down"][..], flags].concat());
    }
    println!("clockpatch bench: {:.0} s", t.elapsed().as_secs_f64());
}
