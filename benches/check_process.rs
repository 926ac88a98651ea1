//! Benchmarks of `shakedown check` as a user runs it: one process per call, timed from outside.
//! Owns two scenarios: (u) the start-up cost of a small check (a 6-event history, run a few
//! hundred times; `/bin/true` run the same way is the floor of spawning any process), and (p)
//! Porcupine's own test data (its `test_data` folder, given as `PORCUPINE_TEST_DATA=DIR`: the
//! 103 Jepsen etcd logs and the 6 kv files) checked in one process, with and without witnesses:
//! wall time, the children's peak RSS, and whether each file's verdict agrees with Porcupine's
//! own test expectations. Does not own the checker's in-process benchmarks (`linear`).
//! Run with `cargo bench --bench check_process`; `CHECK_BENCH_RUNS` sets (u)'s number of runs,
//! `CHECK_BENCH_BIN` another build's binary to time instead (before/after comparisons).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test: this build's, or `CHECK_BENCH_BIN` (another build, to compare).
fn bin() -> PathBuf {
    std::env::var_os("CHECK_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_shakedown")))
}

/// The Jepsen etcd logs Porcupine's tests expect to be linearizable; the others are not (and
/// `etcd_095.log` is an empty file, which shakedown calls unknown).
const PORCUPINE_OK: [u32; 23] = [
    2, 5, 7, 18, 25, 31, 38, 45, 48, 49, 51, 53, 56, 67, 75, 76, 80, 87, 92, 98, 100, 101, 102,
];

fn time_runs(runs: usize, mut f: impl FnMut()) -> Vec<Duration> {
    for _ in 0..10 {
        f();
    }
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect()
}

fn summary(mut v: Vec<Duration>) -> String {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "min {:.2} ms, median {:.2} ms, p90 {:.2} ms ({} runs)",
        ms(v[0]),
        ms(v[v.len() / 2]),
        ms(v[v.len() * 9 / 10]),
        v.len()
    )
}

fn startup() {
    let runs = std::env::var("CHECK_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let small =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/histories/bad-register.jsonl");
    let floor = time_runs(runs, || {
        Command::new("/bin/true").status().expect("run /bin/true");
    });
    let check = time_runs(runs, || {
        let s = Command::new(bin())
            .arg("check")
            .arg(&small)
            .stdout(Stdio::null())
            .status()
            .expect("run shakedown check");
        assert_eq!(s.code(), Some(1), "bad-register.jsonl is invalid");
    });
    println!("(u) start-up of a small check (bad-register.jsonl, 6 events), one process each:");
    println!("  /bin/true:        {}", summary(floor));
    println!("  shakedown check:  {}", summary(check));
}

/// Peak RSS of the largest child waited for so far, in KiB.
fn children_peak_rss_kib() -> i64 {
    // SAFETY: `rusage` is plain integers, so all-zero is a valid value; getrusage only writes
    // the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    u.ru_maxrss
}

/// Porcupine's expected verdict for a file of its test data, as shakedown words it.
fn expected(file: &str) -> Option<&'static str> {
    if let Some(n) = file
        .strip_prefix("etcd_")
        .and_then(|s| s.strip_suffix(".log"))
    {
        let n: u32 = n.parse().ok()?;
        return Some(if PORCUPINE_OK.contains(&n) {
            "valid"
        } else {
            "invalid"
        });
    }
    if file.ends_with("-ok.txt") {
        Some("valid")
    } else if file.ends_with("-bad.txt") {
        Some("invalid")
    } else {
        None
    }
}

fn porcupine(dir: &Path) {
    let inputs = [dir.join("jepsen"), dir.join("kv")];
    println!(
        "(p) Porcupine's test data in one `shakedown check` process ({}):",
        dir.display()
    );
    for witness in ["none", "fast"] {
        let mut walls = Vec::new();
        let mut out = String::new();
        for _ in 0..5 {
            let t = Instant::now();
            let o = Command::new(bin())
                .args(["check", "--witness", witness])
                .args(&inputs)
                .output()
                .expect("run shakedown check");
            walls.push(t.elapsed());
            out = String::from_utf8_lossy(&o.stdout).into_owned();
        }
        let (mut agree, mut differ, mut empty) = (0, Vec::new(), 0);
        for line in out.lines() {
            let Some((path, rest)) = line.split_once(": ") else {
                continue;
            };
            let file = Path::new(path).file_name().and_then(|f| f.to_str());
            let Some(want) = file.and_then(expected) else {
                continue;
            };
            let got = rest.split_whitespace().next().unwrap_or_default();
            if got == want {
                agree += 1;
            } else if rest.contains("empty history") {
                empty += 1;
            } else {
                differ.push(format!("{}: {got}, Porcupine {want}", file.unwrap_or(path)));
            }
        }
        println!(
            "  --witness {witness}: {}; agree with Porcupine on {agree} files, differ on {} {differ:?}, {empty} empty",
            summary(walls),
            differ.len(),
        );
        println!("    {}", out.lines().last().unwrap_or_default());
    }
    println!(
        "  children's peak RSS: {} MiB",
        children_peak_rss_kib() / 1024
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too: keep that cheap.
    if std::env::args().any(|a| a == "--bench") {
        startup();
        match std::env::var_os("PORCUPINE_TEST_DATA").map(PathBuf::from) {
            Some(dir) => porcupine(&dir),
            None => println!(
                "(p) skipped: set PORCUPINE_TEST_DATA to Porcupine's test_data folder (jepsen/, kv/)"
            ),
        }
    }
}
