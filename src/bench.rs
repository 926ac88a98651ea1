//! `shakedown bench`: the controller's overhead against a bare client loop on the same cluster.
//!
//! Brings up the sandbox and a fresh etcd (or Redis with `--db redis`), then alternates a bare
//! loop of clients (`systems::etcd::bare_loop`: etcd clients; `systems::redis::bare_loop`: plain
//! `redis` crate connections to the primary, on the register workload's values and key groups;
//! no generator, no history) with the full interpreter (register workload, unlimited rate,
//! history written to a scratch run directory, no faults), each for `--duration` seconds at the
//! same concurrency, `--rounds` times each, and reports ops/s, the CPU time this process spent
//! per op on each side, and the throughput loss.
//!
//! Throughput on a small shared machine drifts by a quarter within minutes and jumps from one
//! measurement to the next, more than the difference being measured. So each round pairs one
//! bare measurement with one controller measurement, the order alternating (bare first in even
//! rounds, controller first in odd ones) so a steady drift favours neither side; rounds are many
//! and short (20 × 3 s by default); the loss is the median of the rounds' paired losses, with a
//! distribution-free 95 % confidence interval (order statistics, [`median_ci`]). A round during
//! which the hypervisor took more than `--max-steal` % of the machine's CPU (`steal` in
//! `/proc/stat`) measured the host: it is shown, left out of the median and run again (at most
//! `--rounds` extra rounds). A short unrecorded bare warm-up comes first. The scratch run
//! directories live under a temporary directory and are removed.

use crate::config::TestConfig;
use crate::node::Node;
use crate::runner::{RunError, connect, on_nodes};
use crate::store::RunDir;
use crate::systems::SystemConfig;
use crate::systems::etcd::bare_loop::{BareLoopError, BareLoopStats, OpMix, bare_loop};
use std::sync::Arc;
use std::time::Duration;

/// Measured throughput of both sides.
#[derive(Debug, serde::Serialize)]
pub struct OverheadReport {
    /// Concurrent clients on both sides.
    pub concurrency: usize,
    /// Seconds per measurement.
    pub duration_s: f64,
    /// Bare-loop ops/s, one per round.
    pub bare_ops_per_s: Vec<f64>,
    /// Controller ops/s (client completions / main phase), one per round.
    pub controller_ops_per_s: Vec<f64>,
    /// Each round's throughput loss, 1 - controller / bare, in percent.
    pub round_loss_pct: Vec<f64>,
    /// Whether each round counts: false where the hypervisor took more than `max_steal_pct` of
    /// the machine's CPU during either side (that round measured the host, and was run again).
    pub round_kept: Vec<bool>,
    /// The steal above which a round is left out (`--max-steal`).
    pub max_steal_pct: f64,
    /// Rounds asked for (`--rounds`); fewer are kept when the host kept stealing.
    pub rounds_wanted: usize,
    /// The median of the kept rounds' `round_loss_pct`; `null` when no round was clean.
    pub overhead_pct: Option<f64>,
    /// A 95 % confidence interval for that median, `[low, high]` in percent (distribution-free:
    /// order statistics of the rounds); `null` with fewer than 6 rounds.
    pub overhead_ci95_pct: Option<[f64; 2]>,
    /// CPU time (user + system) of this process per op, in µs: bare loop, one per round.
    pub bare_cpu_us_per_op: Vec<f64>,
    /// The same for the controller (generator, scheduler, clients, history).
    pub controller_cpu_us_per_op: Vec<f64>,
    /// Share of the machine's CPU time the hypervisor took (`steal` in `/proc/stat`) during each
    /// bare measurement, in percent (empty where `/proc/stat` cannot be read). A round where one
    /// side lost much more than the other measured the host, not the controller.
    pub bare_steal_pct: Vec<f64>,
    /// The same during each controller measurement.
    pub controller_steal_pct: Vec<f64>,
    /// The system measured (`etcd`, `redis`).
    pub db: String,
}

impl std::fmt::Display for OverheadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fmt = |v: &[f64], digits: usize| {
            v.iter()
                .map(|x| format!("{x:.digits$}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(
            f,
            "{} · concurrency {} · {} s per measurement · {} rounds",
            self.db,
            self.concurrency,
            self.duration_s,
            self.round_loss_pct.len()
        )?;
        writeln!(
            f,
            "bare client loop:   {} ops/s ({} µs CPU per op)",
            fmt(&self.bare_ops_per_s, 0),
            fmt(&self.bare_cpu_us_per_op, 1)
        )?;
        writeln!(
            f,
            "shakedown run loop: {} ops/s ({} µs CPU per op)",
            fmt(&self.controller_ops_per_s, 0),
            fmt(&self.controller_cpu_us_per_op, 1)
        )?;
        let losses: Vec<String> = self
            .round_loss_pct
            .iter()
            .zip(&self.round_kept)
            .map(|(l, k)| {
                if *k {
                    format!("{l:.1}")
                } else {
                    format!("({l:.1})")
                }
            })
            .collect();
        writeln!(f, "loss per round:     {} %", losses.join(", "))?;
        if !self.bare_steal_pct.is_empty() {
            writeln!(
                f,
                "hypervisor steal:   bare {} %; run loop {} %",
                fmt(&self.bare_steal_pct, 1),
                fmt(&self.controller_steal_pct, 1)
            )?;
        }
        let left_out = self.round_kept.len() - self.kept_rounds();
        if left_out > 0 {
            writeln!(
                f,
                "left out (in brackets): {left_out} round(s) where the hypervisor took more than {} % of the CPU{}",
                self.max_steal_pct,
                if self.kept_rounds() < self.rounds_wanted {
                    format!(
                        "; only {} of the {} rounds asked for are clean: the host is busy, try again later",
                        self.kept_rounds(),
                        self.rounds_wanted
                    )
                } else {
                    String::new()
                }
            )?;
        }
        let Some(overhead) = self.overhead_pct else {
            return write!(
                f,
                "controller overhead: not measured (no round was clean of hypervisor steal)"
            );
        };
        write!(
            f,
            "controller overhead: {overhead:.1} % throughput loss (median of {}",
            crate::plural::counted(self.kept_rounds(), "round")
        )?;
        match self.overhead_ci95_pct {
            Some([lo, hi]) => write!(f, "; 95 % confidence interval {lo:.1} to {hi:.1} %)"),
            None => write!(f, "; 6 or more rounds give a confidence interval)"),
        }
    }
}

impl OverheadReport {
    /// Rounds that count (`round_kept`).
    pub fn kept_rounds(&self) -> usize {
        self.round_kept.iter().filter(|&&k| k).count()
    }

    /// The losses of the rounds that count.
    fn kept_losses(&self) -> Vec<f64> {
        self.round_loss_pct
            .iter()
            .zip(&self.round_kept)
            .filter(|(_, k)| **k)
            .map(|(l, _)| *l)
            .collect()
    }
}

/// CPU time (user + system) this process has used so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the zeroed struct it is given; RUSAGE_SELF cannot fail.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The machine's CPU time so far from `/proc/stat` (its first line, in clock ticks): (all,
/// steal). `None` where it cannot be read.
fn machine_cpu() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice, already in user/nice].
    let steal = *ticks.get(7)?;
    Some((ticks.iter().take(8).sum(), steal))
}

/// Steal between two [`machine_cpu`] readings, in percent of all CPU time.
fn steal_pct(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<f64> {
    let ((all0, st0), (all1, st1)) = (before?, after?);
    let all = all1.checked_sub(all0).filter(|&d| d > 0)?;
    Some(st1.saturating_sub(st0) as f64 * 100.0 / all as f64)
}

/// µs of CPU per op, from a CPU time delta and an op count.
fn cpu_us_per_op(cpu: Duration, ops: u64) -> f64 {
    cpu.as_secs_f64() * 1e6 / (ops.max(1) as f64)
}

/// A scratch directory removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A distribution-free confidence interval for the median of the population `v` was drawn
/// from: the `k`th smallest and `k`th largest values, `k` the largest with a binomial(n, ½) tail
/// P(X < k) of at most (1 − `level`) / 2 on each side. `None` when `v` is too small for `level`
/// (a 95 % interval needs 6 values).
fn median_ci(v: &[f64], level: f64) -> Option<(f64, f64)> {
    let n = v.len();
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    // ln P(X = i) for X ~ binomial(n, ½), built up term by term (no overflow for large n).
    let ln_half_n = n as f64 * 0.5f64.ln();
    let (mut ln_choose, mut below) = (0.0f64, 0.0f64);
    let mut k = 0;
    for i in 0..n / 2 {
        // below = P(X <= i).
        below += (ln_choose + ln_half_n).exp();
        if 2.0 * below > 1.0 - level {
            break;
        }
        k = i + 1;
        ln_choose += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    (k >= 1).then(|| (s[k - 1], s[n - k]))
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// One round of the bare loop on `cfg`'s system (etcd: every member; Redis: the primary, the
/// first node).
async fn bare_round(
    cfg: &TestConfig,
    nodes: &[Node],
    duration: Duration,
) -> Result<BareLoopStats, BareLoopError> {
    match &cfg.system {
        SystemConfig::Redis(r) => {
            let primary = &nodes[0];
            // The register workload's values and keys (its groups move to fresh keys).
            let w = &cfg.workload;
            let mix = OpMix {
                value_count: w.max_value.saturating_add(1),
                ..OpMix::default()
            };
            let keys = crate::systems::redis::bare_loop::KeyRotation {
                threads_per_key: w.threads_per_key,
                ops_per_key: w.ops_per_key,
            };
            crate::systems::redis::bare_loop::bare_loop(
                &primary.host,
                r.port,
                cfg.concurrency,
                duration,
                mix,
                Some(keys),
            )
            .await
        }
        SystemConfig::Etcd(e) => {
            let etcd = crate::systems::etcd::Etcd::new(e.clone());
            let endpoints: Vec<String> = nodes.iter().map(|n| etcd.endpoint(n)).collect();
            bare_loop(endpoints, cfg.concurrency, duration, OpMix::default()).await
        }
        other => Err(BareLoopError::Invalid(format!(
            "no bare loop for {}",
            other.name()
        ))),
    }
}

/// Run the overhead benchmark: `rounds` (at least 1) paired measurements. `cfg` is the full
/// run's config (no faults, unlimited rate, its time limit the duration of one measurement, etcd
/// or Redis); the bare loop gets the same concurrency and duration. Run directories go to a
/// scratch directory, removed at the end. With `out`, the report is also written there as JSON.
pub async fn overhead(
    mut cfg: TestConfig,
    rounds: usize,
    max_steal_pct: f64,
    out: Option<std::path::PathBuf>,
) -> Result<OverheadReport, RunError> {
    let rounds = rounds.max(1);
    let scratch =
        Scratch(std::env::temp_dir().join(format!("shakedown-bench-{}", std::process::id())));
    std::fs::create_dir_all(scratch.path())
        .map_err(|e| RunError::Control(format!("{}: {e}", scratch.path().display())))?;
    cfg.reports_dir = scratch.path().to_path_buf();
    // Same op mix on both sides.
    cfg.workload.read_weight = 1;
    cfg.workload.write_weight = 1;
    cfg.workload.cas_weight = 1;
    let system = cfg.system.open();
    let (nodes, remotes) = set_up(&mut cfg, &system).await?;
    let mut report = OverheadReport {
        concurrency: cfg.concurrency,
        duration_s: cfg.time_limit_s,
        bare_ops_per_s: vec![],
        controller_ops_per_s: vec![],
        round_loss_pct: vec![],
        overhead_pct: None,
        overhead_ci95_pct: None,
        round_kept: vec![],
        max_steal_pct,
        rounds_wanted: rounds,
        bare_cpu_us_per_op: vec![],
        controller_cpu_us_per_op: vec![],
        bare_steal_pct: vec![],
        controller_steal_pct: vec![],
        db: cfg.system.name().to_string(),
    };
    let rig = Rig {
        cfg: &cfg,
        nodes: &nodes,
        remotes: &remotes,
        system: &*system,
        scratch: &scratch,
    };
    let failure = measure(&rig, &mut report, rounds, max_steal_pct)
        .await
        .err();
    let (remotes2, nodes2, system2) = (remotes.clone(), nodes.clone(), system.clone());
    let _ = tokio::task::spawn_blocking(move || {
        on_nodes(&remotes2, &nodes2, |r, n| system2.teardown(r, n))
    })
    .await;
    if let Some(e) = failure {
        return Err(e);
    }
    let kept = report.kept_losses();
    report.overhead_pct = (!kept.is_empty()).then(|| median(&kept));
    report.overhead_ci95_pct = median_ci(&kept, 0.95).map(|(lo, hi)| [lo, hi]);
    if let Some(out) = &out {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        std::fs::write(out, text)
            .map_err(|e| RunError::Control(format!("{}: {e}", out.display())))?;
    }
    Ok(report)
}

/// The bench's cluster: the packages the system needs, SSH sessions, the system installed,
/// set up and serving on every node.
async fn set_up(
    cfg: &mut TestConfig,
    system: &Arc<dyn crate::systems::System>,
) -> Result<(Vec<Node>, Vec<Arc<dyn crate::control::Remote>>), RunError> {
    let packages = system.packages();
    // The sandbox's nodes get their packages on this machine (as `runner::run` does).
    let install = match &cfg.nodes {
        None => {
            let quiet = crate::progress::Progress::quiet();
            crate::runner::provision_sandbox_host(cfg, &packages, cfg.install, &quiet).await?;
            crate::provision::Install::Skip
        }
        Some(_) => cfg.install,
    };
    let nodes = crate::runner::resolve_nodes(cfg)?;
    let ssh = cfg.ssh.clone();
    let remotes = {
        let nodes = nodes.clone();
        tokio::task::spawn_blocking(move || connect(&nodes, &ssh))
            .await
            .expect("connect task")?
    };
    {
        let (remotes, nodes, system) = (remotes.clone(), nodes.clone(), system.clone());
        tokio::task::spawn_blocking(move || -> Result<(), RunError> {
            if install != crate::provision::Install::Skip {
                crate::runner::provision_nodes(&remotes, &nodes, &packages, install, None)?;
            }
            for r in on_nodes(&remotes, &nodes, |r, n| {
                system.install(r).and_then(|_| system.setup(r, n, &nodes))
            }) {
                r?;
            }
            for r in on_nodes(&remotes, &nodes, |r, n| system.await_ready(r, n, &nodes)) {
                r?;
            }
            Ok(())
        })
        .await
        .expect("setup task")?;
    }
    Ok((nodes, remotes))
}

/// What every round measures on.
struct Rig<'a> {
    cfg: &'a TestConfig,
    nodes: &'a [Node],
    remotes: &'a [Arc<dyn crate::control::Remote>],
    system: &'a dyn crate::systems::System,
    scratch: &'a Scratch,
}

/// A warm-up, then paired rounds until `rounds` are kept (at most twice as many), each side's
/// throughput, CPU and steal into `report`.
async fn measure(
    c: &Rig<'_>,
    report: &mut OverheadReport,
    rounds: usize,
    max_steal_pct: f64,
) -> Result<(), RunError> {
    let duration = Duration::from_secs_f64(c.cfg.time_limit_s);
    bare_round(c.cfg, c.nodes, duration.min(Duration::from_secs(2)))
        .await
        .map_err(|e| RunError::Control(format!("bare loop (warm-up): {e}")))?;
    // A round the hypervisor took more than `max_steal_pct` of the CPU from measured the
    // host: it is kept in the report, left out of the median and run again, up to `rounds`
    // extra rounds in all.
    let mut round = 0;
    while report.kept_rounds() < rounds && round < 2 * rounds {
        let (steal_b, steal_c) = (
            report.bare_steal_pct.len(),
            report.controller_steal_pct.len(),
        );
        for side in [round % 2, 1 - round % 2] {
            measure_side(c, report, side, duration).await?;
        }
        let (bare, ctl) = (
            report.bare_ops_per_s[round],
            report.controller_ops_per_s[round],
        );
        report
            .round_loss_pct
            .push((1.0 - ctl / bare.max(1e-9)) * 100.0);
        let stolen = report.bare_steal_pct[steal_b..]
            .iter()
            .chain(&report.controller_steal_pct[steal_c..])
            .any(|&p| p > max_steal_pct);
        report.round_kept.push(!stolen);
        round += 1;
    }
    Ok(())
}

/// One side of a round (0: the bare loop, 1: the full run) measured into `report`.
async fn measure_side(
    c: &Rig<'_>,
    report: &mut OverheadReport,
    side: usize,
    duration: Duration,
) -> Result<(), RunError> {
    let cpu0 = cpu_time();
    let machine0 = machine_cpu();
    if side == 0 {
        let s = bare_round(c.cfg, c.nodes, duration)
            .await
            .map_err(|e| RunError::Control(format!("bare loop: {e}")))?;
        report.bare_ops_per_s.push(s.ops_per_sec);
        report
            .bare_cpu_us_per_op
            .push(cpu_us_per_op(cpu_time() - cpu0, s.ops));
        if let Some(p) = steal_pct(machine0, machine_cpu()) {
            report.bare_steal_pct.push(p);
        }
    } else {
        let run_dir = RunDir::create(c.scratch.path(), "bench")?;
        let control = crate::runner::Control {
            progress: None,
            interrupt: tokio::sync::watch::channel(false).1,
        };
        let driven =
            crate::runner::drive(c.cfg, c.nodes, c.remotes, c.system, None, &run_dir, control)
                .await?;
        // The main phase's ops over its time (final reads come after the window).
        let ops = driven.main_ops;
        report
            .controller_ops_per_s
            .push(ops as f64 / driven.main_phase.as_secs_f64());
        report
            .controller_cpu_us_per_op
            .push(cpu_us_per_op(cpu_time() - cpu0, ops));
        if let Some(p) = steal_pct(machine0, machine_cpu()) {
            report.controller_steal_pct.push(p);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_its_share_of_the_cpu_time_between_two_readings() {
        assert_eq!(steal_pct(Some((100, 5)), Some((300, 25))), Some(10.0));
        assert_eq!(steal_pct(Some((100, 5)), Some((100, 5))), None);
        assert_eq!(steal_pct(None, Some((100, 5))), None);
        let (all, steal) = machine_cpu().expect("/proc/stat on Linux");
        assert!(all > 0 && steal <= all);
    }

    #[test]
    fn the_medians_confidence_interval_is_the_binomial_order_statistics() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        // n = 20: P(X <= 5) = 0.0207 <= 0.025 < P(X <= 6) = 0.0577, so the 6th smallest and
        // the 6th largest.
        assert_eq!(median_ci(&v, 0.95), Some((6.0, 15.0)));
        // n = 6: P(X = 0) = 1/64 <= 0.025: the extremes; n = 5 (1/32 > 0.025): no interval.
        assert_eq!(
            median_ci(&[3.0, 1.0, 2.0, 6.0, 5.0, 4.0], 0.95),
            Some((1.0, 6.0))
        );
        assert_eq!(median_ci(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95), None);
        assert_eq!(median_ci(&[], 0.95), None);
        // Large n stays finite: about n/2 -+ 0.98 sqrt(n).
        let big: Vec<f64> = (0..2000).map(f64::from).collect();
        let (lo, hi) = median_ci(&big, 0.95).unwrap();
        assert!(
            (950.0..960.0).contains(&lo) && (1039.0..1050.0).contains(&hi),
            "{lo} {hi}"
        );
    }

    #[test]
    fn rounds_the_host_stole_from_are_shown_but_left_out_of_the_median() {
        let mut r = OverheadReport {
            concurrency: 10,
            duration_s: 3.0,
            bare_ops_per_s: vec![100.0; 4],
            controller_ops_per_s: vec![95.0, 50.0, 97.0, 96.0],
            round_loss_pct: vec![5.0, 50.0, 3.0, 4.0],
            round_kept: vec![true, false, true, true],
            max_steal_pct: 5.0,
            rounds_wanted: 3,
            overhead_pct: None,
            overhead_ci95_pct: None,
            bare_cpu_us_per_op: vec![10.0; 4],
            controller_cpu_us_per_op: vec![12.0; 4],
            bare_steal_pct: vec![0.1, 30.0, 0.2, 0.0],
            controller_steal_pct: vec![0.1, 25.0, 0.2, 0.0],
            db: "redis".into(),
        };
        assert_eq!(r.kept_rounds(), 3);
        assert_eq!(r.kept_losses(), vec![5.0, 3.0, 4.0]);
        r.overhead_pct = Some(median(&r.kept_losses()));
        let text = r.to_string();
        assert!(text.contains("5.0, (50.0), 3.0, 4.0 %"), "{text}");
        assert!(
            text.contains("left out (in brackets): 1 round(s)"),
            "{text}"
        );
        assert!(
            text.contains("4.0 % throughput loss (median of 3 rounds"),
            "{text}"
        );
        assert!(!text.contains("only"), "{text}");
        // A host that never stops stealing: said so, and no figure.
        r.round_kept = vec![false; 4];
        r.rounds_wanted = 4;
        r.overhead_pct = None;
        let text = r.to_string();
        assert!(
            text.contains("only 0 of the 4 rounds asked for are clean"),
            "{text}"
        );
        assert!(text.contains("not measured"), "{text}");
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, -1.0, 10.0, 2.0]), 2.5);
        assert_eq!(median(&[5.0, 1.0, 9.0]), 5.0);
        assert_eq!(median(&[]), 0.0);
    }
}
