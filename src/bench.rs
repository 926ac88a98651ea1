//! `shakedown bench`: the controller's overhead against a bare client loop on the same cluster.
//!
//! Brings up the sandbox and a fresh etcd (or Redis with `--db redis`), then alternates a bare
//! loop of clients (`systems::etcd::bare_loop`: etcd clients; `systems::redis::bare_loop`: plain
//! `redis` crate connections to the primary; no generator, no history) with the full interpreter
//! (register workload, unlimited rate, history written to a scratch run directory, no faults),
//! each for `--duration` seconds at the same concurrency, `--rounds` times each, and reports
//! ops/s, the CPU time this process spent per op on each side, and the throughput loss.
//!
//! Throughput on a small machine drifts by a quarter within minutes (the database's log grows,
//! replicas catch up), more than the difference being measured. So each round pairs one bare
//! measurement with one controller measurement, the order alternating (bare first in even
//! rounds, controller first in odd ones) so a steady drift favours neither side; the loss is the
//! median of the rounds' paired losses. A short unrecorded bare warm-up comes first. The scratch
//! run directories live under a temporary directory and are removed.

use crate::config::TestConfig;
use crate::node::Node;
use crate::runner::{RunError, connect, on_nodes};
use crate::store::RunDir;
use crate::systems::SystemConfig;
use crate::systems::etcd::bare_loop::{BareLoopError, BareLoopStats, OpMix, bare_loop};
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
    /// The median of `round_loss_pct`.
    pub overhead_pct: f64,
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
        writeln!(f, "loss per round:     {} %", fmt(&self.round_loss_pct, 1))?;
        if !self.bare_steal_pct.is_empty() {
            writeln!(
                f,
                "hypervisor steal:   bare {} %; run loop {} %",
                fmt(&self.bare_steal_pct, 1),
                fmt(&self.controller_steal_pct, 1)
            )?;
        }
        write!(
            f,
            "controller overhead: {:.1} % throughput loss (median of the rounds)",
            self.overhead_pct
        )
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
            crate::systems::redis::bare_loop::bare_loop(
                &primary.host,
                r.port,
                cfg.concurrency,
                duration,
                OpMix::default(),
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
    let nodes = crate::runner::resolve_nodes(&mut cfg)?;
    let ssh = cfg.ssh.clone();
    let remotes = {
        let nodes = nodes.clone();
        tokio::task::spawn_blocking(move || connect(&nodes, &ssh))
            .await
            .expect("connect task")?
    };
    let system = cfg.system.open();
    {
        let (remotes, nodes, system) = (remotes.clone(), nodes.clone(), system.clone());
        tokio::task::spawn_blocking(move || -> Result<(), RunError> {
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
    let duration = Duration::from_secs_f64(cfg.time_limit_s);
    let mut report = OverheadReport {
        concurrency: cfg.concurrency,
        duration_s: cfg.time_limit_s,
        bare_ops_per_s: vec![],
        controller_ops_per_s: vec![],
        round_loss_pct: vec![],
        overhead_pct: 0.0,
        bare_cpu_us_per_op: vec![],
        controller_cpu_us_per_op: vec![],
        bare_steal_pct: vec![],
        controller_steal_pct: vec![],
        db: cfg.system.name().to_string(),
    };
    let failure = async {
        bare_round(&cfg, &nodes, duration.min(Duration::from_secs(2)))
            .await
            .map_err(|e| RunError::Control(format!("bare loop (warm-up): {e}")))?;
        for round in 0..rounds {
            for side in [round % 2, 1 - round % 2] {
                let cpu0 = cpu_time();
                let machine0 = machine_cpu();
                if side == 0 {
                    let s = bare_round(&cfg, &nodes, duration)
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
                    let run_dir = RunDir::create(scratch.path(), "bench")?;
                    let control = crate::runner::Control {
                        progress: None,
                        interrupt: tokio::sync::watch::channel(false).1,
                    };
                    let driven = crate::runner::drive(
                        &cfg, &nodes, &remotes, &*system, None, &run_dir, control,
                    )
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
            }
            let (bare, ctl) = (
                report.bare_ops_per_s[round],
                report.controller_ops_per_s[round],
            );
            report
                .round_loss_pct
                .push((1.0 - ctl / bare.max(1e-9)) * 100.0);
        }
        Ok::<(), RunError>(())
    }
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
    report.overhead_pct = median(&report.round_loss_pct);
    if let Some(out) = &out {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        std::fs::write(out, text)
            .map_err(|e| RunError::Control(format!("{}: {e}", out.display())))?;
    }
    Ok(report)
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
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, -1.0, 10.0, 2.0]), 2.5);
        assert_eq!(median(&[5.0, 1.0, 9.0]), 5.0);
        assert_eq!(median(&[]), 0.0);
    }
}
