//! Recovery and unavailability per fault, from the history alone: how soon a fault hurt the
//! workload, when nothing was served, and how long after the heal the workload was back.
//!
//! Owns the definitions below and their computation ([`analyse`]), a pure function of a
//! [`History`] (no IO, no clock). Does not own fault intervals (`report::faults`), drawing
//! (`plots`, which shades [`Recovery::shading`]) or the HTML table (`page`).
//!
//! Definitions (times are the history's, seconds since the run started; defaults in
//! [`RecoveryConfig::default`]):
//! - A client op is **served** when it completed `ok`, or `fail` with `cas-mismatch` (the system
//!   answered: the compare did not match). Every other completion (`fail`, `info`, a timeout) and
//!   an invoke that never completed is **failed**. A served op counts at its completion, a
//!   failed one at its invocation (the moment it was attempted).
//! - **Outage** (unavailability window): for a group of ops — one kind (`f`) or every kind, on
//!   one node or on all nodes — a span of at least `min_outage_ms` from a served op of the group
//!   to the next one (or to the end of the history, then `open`), during which at least one op of
//!   the group failed. It starts at the last served op before it (at the first failed op when
//!   nothing was served before). Idle gaps without failed ops are not outages. The final heal
//!   and the settle pause before the final reads (`report::phases`) are not either: nothing is
//!   attempted then, so an outage still going when the main workload stopped ends there
//!   (`workload_stopped`), and the final reads start every group afresh.
//! - **Time to first failure** of a fault: from the fault's start to the first failed op
//!   attempted in [start, settled) (settled = the recovery point, else the next change of faults
//!   or the end of the history); an op already in flight at the start that then failed counts as
//!   0 s.
//! - **Pre-fault level** (baseline): served ops per second over the `baseline_s` before the
//!   fault's start, cut at the latest earlier change of faults (another fault's start or end, or
//!   an earlier fault's recovery point) and at the first client op. Shorter than
//!   `min_baseline_s`, or nothing served in it: no baseline, recovery not measured. When the
//!   fault that ended last before this one was seen not to recover, the level before this one
//!   is still degraded: its baseline is inherited from that fault (`baseline_inherited`).
//! - **Longest outage** of a fault: the longest all-nodes outage lying mostly (more than half)
//!   between the fault's start and its recovery point (else the next change of faults or the
//!   end of the history).
//! - **Recovered** (sustained): the first time t ≥ the heal, on a `step_ms` grid from the heal,
//!   such that every window of `window_ms` starting at t, t + step, … up to t + `sustain_ms` −
//!   `window_ms` holds at least `recovered_fraction` × baseline × window served ops (and at least
//!   one). The recovery point is the first served op at or after t; **recovery time** = recovery
//!   point − heal. When the next change of faults comes sooner than `sustain_ms` after t, the
//!   stretch up to it is enough if it is at least half of `sustain_ms` (the next fault is its own
//!   story; with faults every few seconds a full stretch rarely fits), and `sustained_s` says how
//!   long it was. The stretch must fit before the workload stops (an idle span: `window_ms` or
//!   more with no client op invoked or in flight, as after the run's time limit) and before the
//!   end of the history, else the fault is "not recovered" with that reason — or "not measured"
//!   when too little was left after the heal (half of `sustain_ms` before the next fault change,
//!   all of it before the workload stops or the history ends), or the workload stopped. A fault
//!   never healed in the history is not measured. Why a fault was not measured is kept as an
//!   [`Unmeasured`] reason, and the summary line names it per fault.
//! - **Throughput during** a fault: served ops per second from its start to its heal, or to
//!   where the workload stopped if that came first.
//!
//! This file holds the types stored in results.json and [`analyse`]; `recovery::attempts` pairs
//! the ops, `recovery::outages` finds outages, `recovery::fault` measures one fault,
//! `recovery::unmeasured` names why a fault was not measured.

use crate::history::History;
use crate::report::faults::fault_intervals;
use crate::report::phases;
use serde::{Deserialize, Serialize};

mod attempts;
mod fault;
mod outages;
mod unmeasured;
pub use attempts::{ATTEMPT_BYTES, Attempts, AttemptsBuilder};
use attempts::{Attempt, attempts};
use fault::{Context, fault_recovery, idle_spans};
pub use unmeasured::{UNMEASURED_NAMED, Unmeasured};

/// Thresholds of the definitions in the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RecoveryConfig {
    /// Shortest outage reported, in ms.
    pub min_outage_ms: u64,
    /// Longest baseline before a fault, in s.
    pub baseline_s: f64,
    /// Shortest usable baseline, in s.
    pub min_baseline_s: f64,
    /// Fraction of the baseline throughput that counts as recovered.
    pub recovered_fraction: f64,
    /// Width of the throughput windows, in ms.
    pub window_ms: u64,
    /// How long throughput must stay recovered, in ms (at least `window_ms`).
    pub sustain_ms: u64,
    /// Grid step of the recovery search, in ms.
    pub step_ms: u64,
    /// Most outages listed (the longest are kept; the total is always exact).
    pub max_outages: usize,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        RecoveryConfig {
            min_outage_ms: 1_000,
            baseline_s: 10.0,
            min_baseline_s: 1.0,
            recovered_fraction: 0.5,
            window_ms: 1_000,
            sustain_ms: 3_000,
            step_ms: 100,
            max_outages: 1_000,
        }
    }
}

/// A span during which a group of ops got no service (see the module doc).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outage {
    /// Node whose ops these are; `None` = all nodes.
    pub node: Option<String>,
    /// Kind of op (`read`, `write`, …); `None` = every kind.
    pub f: Option<String>,
    /// Start, s.
    pub start_s: f64,
    /// End (the next served op, or the end of the history), s.
    pub end_s: f64,
    /// True when it lasted until the end of the history.
    pub open: bool,
    /// True when the main workload stopped (the final heal began) while it lasted: it ends at
    /// the workload's last op, and the quiet final heal and settle after it are not counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub workload_stopped: bool,
    /// Ops of the group that failed in it.
    pub failed_ops: u64,
}

impl Outage {
    /// Orders outages by length, then the broader group first (all kinds, all nodes), for
    /// picking "the longest".
    fn longer(a: &&Outage, b: &&Outage) -> std::cmp::Ordering {
        a.duration_s()
            .total_cmp(&b.duration_s())
            .then_with(|| a.f.is_none().cmp(&b.f.is_none()))
            .then_with(|| a.node.is_none().cmp(&b.node.is_none()))
            .then_with(|| b.start_s.total_cmp(&a.start_s))
    }

    /// Length in s.
    pub fn duration_s(&self) -> f64 {
        self.end_s - self.start_s
    }

    /// "write on n3", "all ops on all nodes".
    pub fn group(&self) -> String {
        format!(
            "{} on {}",
            self.f.as_deref().unwrap_or("all ops"),
            self.node.as_deref().unwrap_or("all nodes")
        )
    }
}

/// What one fault did to the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecovery {
    /// Fault kind (`partition`, `kill`, …).
    pub kind: String,
    /// What was done ("isolate n5").
    pub label: String,
    /// When it took effect, s.
    pub start_s: f64,
    /// When it was healed (or the end of the history, when never), s.
    pub end_s: f64,
    /// False when the history never shows it healed.
    pub healed: bool,
    /// From the start to the first failed op, s; `None` when no op failed.
    pub first_failure_s: Option<f64>,
    /// Served ops per second before the fault; `None` without a usable baseline.
    pub baseline_ops_per_s: Option<f64>,
    /// True when `baseline_ops_per_s` is the previous fault's, which never recovered.
    pub baseline_inherited: bool,
    /// Served ops per second while it was in effect and the workload ran; `None` for an
    /// instantaneous fault.
    pub during_ops_per_s: Option<f64>,
    /// True when recovery was judged: healed, with a baseline, and the workload ran long
    /// enough after the heal to see it recover or not.
    pub measured: bool,
    /// From the heal to the recovery point, s; `None` when not measured or not recovered.
    pub recovery_s: Option<f64>,
    /// The recovery point, s.
    pub recovered_at_s: Option<f64>,
    /// How long throughput was seen to stay recovered from the recovery search's grid time, s:
    /// `sustain_ms`, or less when the next change of faults came sooner (see the module doc).
    #[serde(default)]
    pub sustained_s: Option<f64>,
    /// Why `recovery_s` is `None`.
    pub not_recovered: Option<String>,
    /// Why recovery was not measured (`measured` false): which of the reasons it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasured: Option<Unmeasured>,
    /// The longest all-nodes outage lying mostly (more than half of it) between the fault's
    /// start and its recovery point (or, not recovered, the next change of faults or the end of
    /// the history).
    pub longest_outage: Option<Outage>,
}

/// Recovery and unavailability of a whole history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// Thresholds used.
    pub config: RecoveryConfig,
    /// One entry per fault interval, by start time.
    pub faults: Vec<FaultRecovery>,
    /// Outages of every group, by start time (at most `config.max_outages`, the longest).
    pub outages: Vec<Outage>,
    /// All outages found.
    pub outages_total: u64,
    /// Median recovery time over the faults that recovered, s (nearest rank).
    pub recovery_p50_s: Option<f64>,
    /// Longest recovery time, s.
    pub recovery_max_s: Option<f64>,
    /// Healed faults with a baseline that recovered.
    pub recovered: u64,
    /// Healed faults with a baseline that did not recover in time.
    pub not_recovered: u64,
    /// Faults whose recovery was not measured (never healed, no baseline, or the workload
    /// stopped too soon after the heal).
    pub not_measured: u64,
    /// Nodes whose database was not running after the final heal and settle (the run's last
    /// `db-status`), by name: they never came back, whatever the throughput says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub down_at_end: Vec<String>,
}

/// A span to shade on the time-series charts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shade {
    /// Start, s.
    pub start_s: f64,
    /// End, s.
    pub end_s: f64,
    /// What it is.
    pub kind: ShadeKind,
}

/// Kinds of [`Shade`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShadeKind {
    /// An all-nodes outage of some kind of op.
    Outage,
    /// From a heal to its recovery point (or to where the search gave up).
    Recovering,
}

impl Recovery {
    /// "recovery after heal: p50 0.8 s, max 4.1 s over 9 faults (1 not recovered in time);
    /// longest outage 4.3 s (all ops on all nodes at 21.4 s)", or `None` without faults.
    pub fn summary_line(&self) -> Option<String> {
        if self.faults.is_empty() {
            return None;
        }
        let down = (!self.down_at_end.is_empty()).then(|| {
            format!(
                "; not running after the final heal: {}",
                self.down_at_end.join(", ")
            )
        });
        let total = self.faults.len();
        let mut s = match (self.recovery_p50_s, self.recovery_max_s) {
            (Some(p50), Some(max)) => format!(
                "recovery after heal: p50 {}, max {} ({} of {total} fault{} recovered",
                duration_text(p50),
                duration_text(max),
                self.recovered,
                plural(total as u64)
            ),
            _ => format!(
                "recovery after heal: none measured (0 of {total} fault{} recovered",
                plural(total as u64)
            ),
        };
        if self.not_recovered > 0 {
            s.push_str(&format!("; {} not recovered in time", self.not_recovered));
        }
        if self.not_measured > 0 {
            s.push_str(&format!(
                "; {} not measured — {}",
                self.not_measured,
                self.unmeasured_text()
            ));
        }
        s.push(')');
        if let Some(o) = self
            .outages
            .iter()
            .filter(|o| o.node.is_none())
            .max_by(Outage::longer)
        {
            s.push_str(&format!(
                "; longest outage {} ({} at {:.1} s)",
                duration_text(o.duration_s()),
                o.group(),
                o.start_s
            ));
        }
        if let Some(d) = down {
            s.push_str(&d);
        }
        Some(s)
    }

    /// Spans to shade on the time-series charts: all-nodes outages (merged over kinds of op)
    /// and, for faults that recovered, the span from the heal to the recovery point; each in
    /// time order.
    pub fn shading(&self) -> Vec<Shade> {
        let mut outages: Vec<(f64, f64)> = self
            .outages
            .iter()
            .filter(|o| o.node.is_none())
            .map(|o| (o.start_s, o.end_s))
            .collect();
        outages.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut out: Vec<Shade> = Vec::new();
        for (a, b) in outages {
            match out.last_mut() {
                Some(last) if a <= last.end_s => last.end_s = last.end_s.max(b),
                _ => out.push(Shade {
                    start_s: a,
                    end_s: b,
                    kind: ShadeKind::Outage,
                }),
            }
        }
        for f in &self.faults {
            if let Some(at) = f.recovered_at_s.filter(|at| *at > f.end_s) {
                out.push(Shade {
                    start_s: f.end_s,
                    end_s: at,
                    kind: ShadeKind::Recovering,
                });
            }
        }
        out
    }
}

use crate::plural::s as plural;

const NS_PER_S: f64 = 1e9;

fn secs(ns: u64) -> f64 {
    (ns as f64 / 1e3).round() / 1e6
}

fn ns_of(s: f64) -> u64 {
    (s * NS_PER_S).round().max(0.0) as u64
}

/// A duration for people: milliseconds below a second (`4 ms`), else seconds (`3.2 s`).
fn duration_text(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else {
        format!("{s:.1} s")
    }
}
/// Compute recovery and unavailability of `history` (see the module doc).
pub fn analyse(history: &History, config: &RecoveryConfig) -> Recovery {
    let end_ns = history.ops.iter().map(|o| o.time_ns).max().unwrap_or(0);
    analyse_attempts(attempts(history), history, end_ns, config)
}

/// [`analyse`] of a history read as it streamed: `attempts` from an [`AttemptsBuilder`] fed
/// every op; `faults` a history holding at least every nemesis op, the client op before each
/// and the ops after the last one (`report::digest`'s sparse history; positions kept);
/// `end_ns` the history's last time.
pub fn analyse_attempts(
    attempts: Attempts,
    faults: &History,
    end_ns: u64,
    config: &RecoveryConfig,
) -> Recovery {
    let history = faults;
    let Attempts {
        attempts,
        f_names,
        node_names,
    } = attempts;

    // The final heal and settle attempt nothing: outages end where the workload stopped.
    let final_phase = phases::final_phase(history);
    let cut = final_phase.map(|p| (p.heal_start_ns, p.workload_end_ns));
    let (outages, outages_total, served_ns) =
        outages::find(&attempts, &f_names, &node_names, config, end_ns, cut);

    // Failed ops by invocation, with the latest completion among those invoked earlier.
    let mut failed: Vec<(u64, u64)> = attempts
        .iter()
        .filter(|a| !a.served)
        .map(|a| (a.invoke_ns, a.complete_ns))
        .collect();
    failed.sort_unstable();
    let mut latest_completion = Vec::with_capacity(failed.len());
    let mut m = 0u64;
    for &(_, c) in &failed {
        m = m.max(c);
        latest_completion.push(m);
    }
    let first_client_ns = attempts.iter().map(|a| a.invoke_ns).min().unwrap_or(0);
    let idle = idle_spans(&attempts, config.window_ms * 1_000_000, end_ns);

    let intervals = fault_intervals(history);
    let mut boundaries: Vec<u64> = intervals
        .iter()
        .flat_map(|iv| [ns_of(iv.start_s), ns_of(iv.end_s)])
        .collect();
    boundaries.sort_unstable();
    let mut recovered_points: Vec<u64> = Vec::new();
    let mut faults: Vec<FaultRecovery> = Vec::with_capacity(intervals.len());
    for iv in &intervals {
        // The fault that ended last before this one started, if it was seen not to recover: the
        // level before this fault is still degraded, so its pre-fault level carries over.
        let unrecovered_before = faults
            .iter()
            .filter(|f| f.healed && f.end_s <= iv.start_s)
            .max_by(|a, b| a.end_s.total_cmp(&b.end_s))
            .filter(|f| f.measured && f.recovery_s.is_none())
            .and_then(|f| f.baseline_ops_per_s);
        let fr = fault_recovery(
            iv,
            config,
            unrecovered_before,
            &Context {
                end_ns,
                first_client_ns,
                boundaries: &boundaries,
                recovered_points: &recovered_points,
                served_ns: &served_ns,
                failed: &failed,
                latest_completion: &latest_completion,
                idle: &idle,
                workload_end_ns: final_phase.map(|p| p.workload_end_ns),
            },
            &outages,
        );
        if let Some(at) = fr.recovered_at_s {
            recovered_points.push(ns_of(at));
        }
        faults.push(fr);
    }

    let mut times: Vec<f64> = faults.iter().filter_map(|f| f.recovery_s).collect();
    times.sort_by(f64::total_cmp);
    let p50 = (!times.is_empty()).then(|| times[times.len().div_ceil(2) - 1]);
    let measured_not_recovered = faults
        .iter()
        .filter(|f| f.measured && f.recovery_s.is_none())
        .count() as u64;
    Recovery {
        config: *config,
        recovered: times.len() as u64,
        not_recovered: measured_not_recovered,
        not_measured: faults.len() as u64 - times.len() as u64 - measured_not_recovered,
        recovery_p50_s: p50,
        recovery_max_s: times.last().copied(),
        faults,
        outages,
        outages_total,
        down_at_end: down_at_end(history),
    }
}

/// The nodes the history's last `db-status` completion found stopped.
fn down_at_end(history: &History) -> Vec<String> {
    history
        .ops
        .iter()
        .rev()
        .find(|o| {
            o.process == crate::history::Process::Nemesis
                && o.f == crate::faults::verb::DB_STATUS
                && o.op_type != crate::history::OpType::Invoke
        })
        .and_then(|o| o.value.get("stopped")?.as_array().cloned())
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Key of the recovery value in results.json.
pub const RESULTS_KEY: &str = "recovery";

/// [`analyse`] with the default thresholds, as the [`RESULTS_KEY`] value of results.json.
pub fn to_json(history: &History) -> serde_json::Value {
    serde_json::to_value(analyse(history, &RecoveryConfig::default()))
        .unwrap_or(serde_json::Value::Null)
}

/// The recovery stored in a results.json value, if it has a readable one.
pub fn from_results(results: &serde_json::Value) -> Option<Recovery> {
    serde_json::from_value(results.get(RESULTS_KEY)?.clone()).ok()
}

/// The recovery stored in `results` (a results.json value), else computed from `history`
/// (results written before recovery existed).
pub fn stored_or_analysed(results: Option<&serde_json::Value>, history: &History) -> Recovery {
    results
        .and_then(from_results)
        .unwrap_or_else(|| analyse(history, &RecoveryConfig::default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, OpType, Process};
    use crate::model::CAS_MISMATCH;
    use serde_json::{Value, json};

    const MS: u64 = 1_000_000;

    /// Builds histories: clients issue one op every `period_ms` each, on their node, ok unless
    /// the time falls in a "down" span, where they time out after `timeout_ms`.
    struct Gen {
        ops: Vec<Op>,
    }

    impl Gen {
        fn new() -> Gen {
            Gen { ops: Vec::new() }
        }

        fn op(&mut self, t_ms: u64, ty: OpType, p: Process, f: &str, node: Option<&str>) {
            let mut o = Op::new(ty, p, f, Value::Null);
            o.time_ns = t_ms * MS;
            o.node = node.map(Into::into);
            self.ops.push(o);
        }

        fn nem(&mut self, t_ms: u64, f: &str, v: Value) {
            self.op(t_ms, OpType::Info, Process::Nemesis, f, None);
            self.ops.last_mut().unwrap().value = v;
        }

        /// `client` issues `f` every `period_ms` from `from_ms` to `to_ms`; an op invoked in a
        /// `down` span (on its node) times out `timeout_ms` later as info; others take 2 ms.
        #[allow(clippy::too_many_arguments)]
        fn client(
            &mut self,
            client: u64,
            node: &str,
            f: &str,
            from_ms: u64,
            to_ms: u64,
            period_ms: u64,
            down: &[(u64, u64)],
            timeout_ms: u64,
        ) {
            let mut t = from_ms;
            let mut p = client;
            while t < to_ms {
                let is_down = down.iter().any(|(a, b)| (*a..*b).contains(&t));
                self.op(t, OpType::Invoke, Process::Client(p), f, Some(node));
                if is_down {
                    self.op(
                        t + timeout_ms,
                        OpType::Info,
                        Process::Client(p),
                        f,
                        Some(node),
                    );
                    p += 100;
                    t += timeout_ms;
                } else {
                    self.op(t + 2, OpType::Ok, Process::Client(p), f, Some(node));
                    t += period_ms;
                }
            }
        }

        fn history(mut self) -> History {
            self.ops.sort_by_key(|o| o.time_ns);
            History::from_ops(self.ops)
        }
    }

    fn partition(g: &mut Gen, start_ms: u64, heal_ms: u64) {
        g.nem(start_ms - 10, "start-partition", json!("one"));
        g.nem(
            start_ms,
            "start-partition",
            json!({"grudge": {"n1": ["n2"], "n2": ["n1"]}}),
        );
        g.nem(heal_ms - 10, "stop-partition", Value::Null);
        g.nem(heal_ms, "stop-partition", json!("healed"));
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-6)
    }

    /// A node whose database never came back (e.g. it crashes on a corrupted file at its
    /// restart) is named, whatever the throughput of the others says; the last status counts.
    #[test]
    fn nodes_stopped_after_the_final_heal_are_named() {
        let mut g = Gen::new();
        partition(&mut g, 10_000, 20_000);
        for (c, node) in [(0, "n1"), (1, "n2")] {
            g.client(c, node, "read", 0, 40_000, 100, &[], 500);
        }
        g.nem(39_000, "db-status", Value::Null);
        g.nem(
            39_010,
            "db-status",
            json!({"running": ["n1"], "stopped": [], "unknown": {}}),
        );
        g.nem(41_000, "db-status", Value::Null);
        g.nem(
            41_010,
            "db-status",
            json!({"running": ["n1"], "stopped": ["n2"], "unknown": {}}),
        );
        let r = analyse(&g.history(), &RecoveryConfig::default());
        assert_eq!(r.down_at_end, ["n2"]);
        let line = r.summary_line().unwrap();
        assert!(
            line.ends_with("; not running after the final heal: n2"),
            "{line}"
        );
        // Stored in results.json and read back.
        let back: Recovery = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back.down_at_end, ["n2"]);
        // Without a status, nothing is claimed either way.
        let mut g = Gen::new();
        partition(&mut g, 10_000, 20_000);
        g.client(0, "n1", "read", 0, 40_000, 100, &[], 500);
        assert!(
            analyse(&g.history(), &RecoveryConfig::default())
                .down_at_end
                .is_empty()
        );
    }

    /// The etcd pattern of issue 15: every op times out for ~4 s after the heal.
    #[test]
    fn outage_after_the_heal_delays_recovery() {
        let mut g = Gen::new();
        partition(&mut g, 10_000, 20_000);
        // Two clients, 10 ops/s each; everything down from 20.0 s to 24.0 s (after the heal),
        // ops time out after 500 ms.
        for (c, node) in [(0, "n1"), (1, "n2")] {
            g.client(c, node, "read", 0, 40_000, 100, &[(20_000, 24_000)], 500);
        }
        let r = analyse(&g.history(), &RecoveryConfig::default());
        assert_eq!(r.faults.len(), 1);
        let f = &r.faults[0];
        assert_eq!((f.start_s, f.end_s, f.healed), (10.0, 20.0, true));
        assert!(close(f.baseline_ops_per_s, 20.0), "{f:?}");
        assert!(close(f.during_ops_per_s, 20.0), "{f:?}");
        // First failure: the op invoked at 20.0 s, 10 s after the start.
        assert!(close(f.first_failure_s, 10.0), "{f:?}");
        // Ops are served again from the one invoked at 24.0 s, completed at 24.002 s.
        assert!(close(f.recovered_at_s, 24.002), "{f:?}");
        assert!(close(f.recovery_s, 4.002), "{f:?}");
        // The all-nodes outage: from the last served op (19.902 s) to 24.002 s, 16 failed ops.
        let o = f.longest_outage.as_ref().unwrap();
        assert_eq!((o.start_s, o.end_s, o.failed_ops), (19.902, 24.002, 16));
        assert_eq!(o.group(), "all ops on all nodes");
        // Same window per kind and per node: {all, read} × {all nodes, n1, n2} = 6 outages.
        assert_eq!(r.outages_total, 6, "{:?}", r.outages);
        assert_eq!((r.recovered, r.not_recovered, r.not_measured), (1, 0, 0));
        assert_eq!(
            r.summary_line().unwrap(),
            "recovery after heal: p50 4.0 s, max 4.0 s (1 of 1 fault recovered); \
             longest outage 4.1 s (all ops on all nodes at 19.9 s)"
        );
        let shades = r.shading();
        assert_eq!(shades.len(), 2, "{shades:?}");
        assert_eq!(shades[0].kind, ShadeKind::Outage);
        assert_eq!(shades[1].kind, ShadeKind::Recovering);
        assert_eq!((shades[1].start_s, shades[1].end_s), (20.0, 24.002));
    }

    /// A fault that hurts at once and heals cleanly: first failure at its start, recovery in
    /// milliseconds; a per-node outage only on the isolated node.
    #[test]
    fn failures_during_the_fault_and_a_clean_heal() {
        let mut g = Gen::new();
        partition(&mut g, 10_000, 15_000);
        g.client(0, "n1", "write", 0, 30_000, 100, &[(10_000, 15_000)], 250);
        g.client(1, "n2", "write", 0, 30_000, 100, &[], 250);
        g.client(2, "n2", "read", 0, 30_000, 100, &[], 250);
        let r = analyse(&g.history(), &RecoveryConfig::default());
        let f = &r.faults[0];
        assert!(close(f.first_failure_s, 0.0), "{f:?}");
        assert!(close(f.baseline_ops_per_s, 30.0), "{f:?}");
        // n1's op invoked at 15.0 s is served at 15.002 s; throughput was never below half.
        assert!(close(f.recovered_at_s, 15.002), "{f:?}");
        assert!(f.longest_outage.is_none(), "no all-nodes outage: {f:?}");
        let groups: Vec<String> = r.outages.iter().map(Outage::group).collect();
        assert_eq!(groups, ["all ops on n1", "write on n1"], "{:?}", r.outages);
        assert_eq!((r.outages[0].start_s, r.outages[0].end_s), (9.902, 15.002));
    }

    /// Recovery must be sustained: a burst of served ops right after the heal, then nothing
    /// again, is not recovery; the search gives up at the next fault.
    #[test]
    fn a_burst_is_not_recovery_and_the_next_fault_stops_the_search() {
        let mut g = Gen::new();
        partition(&mut g, 10_000, 20_000);
        partition(&mut g, 30_000, 35_000);
        // Down from 10 s to 31 s, except 20.0–20.5 s (a burst).
        let down = [(10_000, 20_000), (20_500, 31_000)];
        for (c, node) in [(0, "n1"), (1, "n2")] {
            g.client(c, node, "read", 0, 50_000, 100, &down, 100);
        }
        let r = analyse(&g.history(), &RecoveryConfig::default());
        let f = &r.faults[0];
        assert_eq!(f.recovery_s, None, "{f:?}");
        assert_eq!(
            f.not_recovered.as_deref(),
            Some("below 50% of the pre-fault throughput until the next fault change")
        );
        // The first fault never recovered, so the level before the second one is still
        // degraded (0.5 s of service in the 10 s since the heal): its baseline is the first's.
        let s = &r.faults[1];
        assert!(
            close(s.baseline_ops_per_s, 20.0) && s.baseline_inherited,
            "{s:?}"
        );
        assert!(!f.baseline_inherited);
        assert!(close(s.recovered_at_s, 35.002), "{s:?}");
        assert_eq!((r.recovered, r.not_recovered), (1, 1));
        // The outage after the burst (20.4–31 s) lies mostly within the first fault's window
        // (10–30 s, the search's end), not the second's, though it runs into it.
        let o = f.longest_outage.as_ref().expect("first fault's outage");
        assert_eq!((o.start_s, o.end_s), (20.402, 31.002), "{o:?}");
        assert!(s.longest_outage.is_none(), "{s:?}");
        assert!(
            r.summary_line()
                .unwrap()
                .contains("(1 of 2 faults recovered; 1 not recovered in time)"),
            "{:?}",
            r.summary_line()
        );
    }

    /// Faults never healed, without a baseline, and instantaneous ones; open outages; cas
    /// mismatches count as served; an empty history.
    #[test]
    fn unmeasurable_faults_and_edge_cases() {
        let mut g = Gen::new();
        // A kill 0.5 s into the run (no 1 s baseline), never restarted.
        g.nem(400, "kill", json!("one"));
        g.nem(500, "kill", json!({"nodes": ["n1"]}));
        g.client(0, "n1", "read", 0, 5_000, 100, &[(500, 5_000)], 300);
        // cas mismatches on n2: served.
        for i in 0..50u64 {
            g.op(
                i * 100,
                OpType::Invoke,
                Process::Client(1),
                "cas",
                Some("n2"),
            );
            g.op(
                i * 100 + 1,
                OpType::Fail,
                Process::Client(1),
                "cas",
                Some("n2"),
            );
            g.ops.last_mut().unwrap().error = Some(CAS_MISMATCH.into());
        }
        // An op invoked at 2 s that never completed.
        g.op(
            2_000,
            OpType::Invoke,
            Process::Client(7),
            "write",
            Some("n1"),
        );
        let r = analyse(&g.history(), &RecoveryConfig::default());
        let f = &r.faults[0];
        assert_eq!((f.healed, f.recovery_s), (false, None));
        assert_eq!(
            f.not_recovered.as_deref(),
            Some("never healed in the history")
        );
        assert!(close(f.first_failure_s, 0.0), "{f:?}");
        let open: Vec<String> = r
            .outages
            .iter()
            .filter(|o| o.open)
            .map(Outage::group)
            .collect();
        assert!(
            open.contains(&"all ops on n1".to_string()),
            "{:?}",
            r.outages
        );
        assert!(
            open.contains(&"write on all nodes".to_string()),
            "{:?}",
            r.outages
        );
        // n2 was served all along (cas mismatches), so there is no all-kinds all-nodes outage.
        assert!(!open.contains(&"all ops on all nodes".to_string()));
        assert_eq!((r.recovered, r.not_recovered, r.not_measured), (0, 0, 1));
        assert_eq!(
            r.summary_line().unwrap(),
            "recovery after heal: none measured (0 of 1 fault recovered; 1 not measured — kill \
             n1 at 0.5 s: never healed); longest outage 4.6 s (read on all nodes at 0.4 s)"
        );

        // A healed fault with less than 1 s before it: no baseline.
        let mut g = Gen::new();
        partition(&mut g, 500, 2_000);
        g.client(0, "n1", "read", 0, 10_000, 100, &[], 100);
        let r = analyse(&g.history(), &RecoveryConfig::default());
        assert!(
            r.faults[0]
                .not_recovered
                .as_deref()
                .unwrap()
                .starts_with("no baseline: less than 1 s")
        );
        // Faults 1.5 s apart: the stretch up to the next fault (1.5 s, half of the 3 s) is
        // enough, and says how long it was.
        let mut g = Gen::new();
        partition(&mut g, 5_000, 6_000);
        partition(&mut g, 7_500, 8_500);
        g.client(
            0,
            "n1",
            "read",
            0,
            20_000,
            100,
            &[(5_000, 6_000), (7_500, 8_500)],
            100,
        );
        let r = analyse(&g.history(), &RecoveryConfig::default());
        let f = &r.faults[0];
        assert!(close(f.recovered_at_s, 6.002), "{f:?}");
        assert!(close(f.sustained_s, 1.5), "{f:?}");
        assert!(r.faults[1].measured && close(r.faults[1].sustained_s, 3.0));
        // Faults 1.2 s apart: too little time after a heal to see a sustained recovery, so
        // not measured, and the next fault keeps its own baseline.
        let mut g = Gen::new();
        partition(&mut g, 5_000, 6_000);
        partition(&mut g, 7_200, 8_200);
        g.client(
            0,
            "n1",
            "read",
            0,
            20_000,
            100,
            &[(5_000, 6_000), (7_200, 8_200)],
            100,
        );
        let r = analyse(&g.history(), &RecoveryConfig::default());
        assert_eq!(
            r.faults[0].not_recovered.as_deref(),
            Some("only 1.2 s from the heal until the next fault change, 1.5 s needed")
        );
        assert!(!r.faults[0].measured && !r.faults[1].baseline_inherited);
        assert!(
            r.faults[1].measured && r.faults[1].recovery_s.is_some(),
            "{r:?}"
        );
        // A one-shot fault (promote) is measured from its instant.
        let mut g = Gen::new();
        g.nem(4_990, "promote", json!({"node": "n2"}));
        g.nem(5_000, "promote", json!({"node": "n2"}));
        g.client(0, "n1", "read", 0, 10_000, 100, &[(5_000, 6_000)], 200);
        let r = analyse(&g.history(), &RecoveryConfig::default());
        let f = &r.faults[0];
        assert_eq!((f.during_ops_per_s, f.first_failure_s), (None, Some(0.0)));
        assert!(close(f.recovered_at_s, 6.002), "{f:?}");

        let r = analyse(&History::default(), &RecoveryConfig::default());
        assert!(r.faults.is_empty() && r.outages.is_empty() && r.summary_line().is_none());
    }

    /// The workload stops at the run's time limit while a long fault (a strobe) still runs:
    /// throughput during it counts only while the workload ran, and recovery cannot be judged
    /// after the heal because nothing runs any more.
    #[test]
    fn a_stopped_workload_is_not_an_outage_of_recovery() {
        let mut g = Gen::new();
        g.nem(9_000, "strobe-clock", json!({"nodes": ["n1"]}));
        g.nem(
            25_000,
            "strobe-clock",
            json!({"nodes": ["n1"], "ran_ms": 15_000}),
        );
        g.nem(25_010, "reset-clock", Value::Null);
        g.nem(25_100, "reset-clock", json!({"nodes": ["n1"]}));
        g.client(0, "n1", "read", 0, 20_000, 100, &[], 100);
        // Final reads after a settle period.
        g.client(0, "n1", "read", 30_000, 30_500, 100, &[], 100);
        let r = analyse(&g.history(), &RecoveryConfig::default());
        let f = &r.faults[0];
        assert_eq!((f.start_s, f.end_s), (10.0, 25.0));
        assert!(close(f.baseline_ops_per_s, 10.0), "{f:?}");
        // 10 s of service at 10/s from 10 s until the workload stopped at 20 s.
        assert!(close(f.during_ops_per_s, 10.0), "{f:?}");
        assert_eq!(
            f.not_recovered.as_deref(),
            Some("only 0.0 s from the heal until the workload stopped, 3 s needed")
        );
        assert!(r.outages.is_empty(), "{:?}", r.outages);
        assert_eq!((r.recovered, r.not_recovered, r.not_measured), (0, 0, 1));
        let idle = idle_spans(
            &attempts(&g_history_again()).attempts,
            1_000 * MS,
            30_502 * MS,
        );
        assert_eq!(idle, vec![(19_902 * MS, 30_000 * MS)]);
    }

    fn g_history_again() -> History {
        let mut g = Gen::new();
        g.client(0, "n1", "read", 0, 20_000, 100, &[], 100);
        g.client(0, "n1", "read", 30_000, 30_500, 100, &[], 100);
        g.history()
    }

    /// The end of a run: ops time out from 58 s until the time limit (60 s), the final heal,
    /// 3 s of settling, then the final reads. The outage ends where the workload stopped, not
    /// at the first final read: the quiet settle is no outage.
    fn run_with_final_heal_and_reads() -> History {
        let mut g = Gen::new();
        g.nem(49_990, "start-partition", json!("one"));
        g.nem(
            50_000,
            "start-partition",
            json!({"grudge": {"n1": ["n2"], "n2": ["n1"]}}),
        );
        g.client(0, "n1", "read", 0, 60_000, 100, &[(58_000, 60_000)], 500);
        g.nem(60_050, "stop-partition", Value::Null);
        g.nem(60_100, "stop-partition", json!("healed"));
        g.nem(60_110, "start", Value::Null);
        g.nem(60_150, "start", json!({"nodes": []}));
        for (t, ty) in [(63_000, OpType::Invoke), (63_002, OpType::Ok)] {
            g.op(t, ty, Process::Client(900), "read", Some("n1"));
            g.ops.last_mut().unwrap().key = Some("k1".into());
        }
        g.history()
    }

    #[test]
    fn the_final_heal_and_settle_are_no_outage() {
        let r = analyse(&run_with_final_heal_and_reads(), &RecoveryConfig::default());
        let all: Vec<&Outage> = r
            .outages
            .iter()
            .filter(|o| o.node.is_none() && o.f.is_none())
            .collect();
        assert_eq!(all.len(), 1, "{:?}", r.outages);
        let o = all[0];
        assert_eq!((o.start_s, o.end_s, o.failed_ops), (57.902, 60.0, 4));
        assert!(o.workload_stopped && !o.open, "{o:?}");
        assert!(r.outages.iter().all(|o| o.end_s <= 60.0), "{:?}", r.outages);
        let outage_shades: Vec<(f64, f64)> = r
            .shading()
            .iter()
            .filter(|s| s.kind == ShadeKind::Outage)
            .map(|s| (s.start_s, s.end_s))
            .collect();
        assert_eq!(outage_shades, [(57.902, 60.0)]);
        // Healed only by the final heal: not measured, and the summary says why.
        let f = &r.faults[0];
        assert_eq!(f.unmeasured, Some(Unmeasured::HealedAfterWorkload), "{f:?}");
        assert_eq!(f.unmeasured_reason(), Some(Unmeasured::HealedAfterWorkload));
        let line = r.summary_line().unwrap();
        assert!(
            line.contains(&format!(
                "1 not measured — {} at 50.0 s: healed by the final heal, after the workload \
                 stopped)",
                f.label
            )),
            "{line}"
        );
        // Stored and read back (the flag and the reason survive; absent in older results).
        let back: Recovery = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let mut old = serde_json::to_value(&r).unwrap();
        old["faults"][0]
            .as_object_mut()
            .unwrap()
            .remove("unmeasured");
        old["outages"][0]
            .as_object_mut()
            .unwrap()
            .remove("workload_stopped");
        let old: Recovery = serde_json::from_value(old).unwrap();
        assert_eq!(old.faults[0].unmeasured, None);
        assert_eq!(
            old.faults[0].unmeasured_reason(),
            Some(Unmeasured::HealedAfterWorkload),
            "read from the text"
        );
    }

    #[test]
    fn unmeasured_faults_are_named_per_reason() {
        let mut r = analyse(&run_with_final_heal_and_reads(), &RecoveryConfig::default());
        let f = r.faults[0].clone();
        let fault =
            |label: &str, start_s: f64, why: Option<Unmeasured>, text: &str| FaultRecovery {
                label: label.into(),
                start_s,
                unmeasured: why,
                not_recovered: Some(text.into()),
                ..f.clone()
            };
        r.faults = vec![
            fault("kill n2", 55.0, Some(Unmeasured::NeverHealed), ""),
            fault("isolate n1", 0.5, Some(Unmeasured::NoBaseline), ""),
            fault("pause n3", 12.0, Some(Unmeasured::NoBaseline), ""),
            fault("pause n4", 20.0, Some(Unmeasured::NoBaseline), ""),
            fault("pause n5", 30.0, Some(Unmeasured::NoBaseline), ""),
            // Stored before reasons were kept: read from the text.
            fault(
                "isolate n2",
                40.0,
                None,
                "only 1.2 s from the heal until the next fault change, 1.5 s needed",
            ),
            fault("bump-clock n1", 45.0, None, "something else"),
        ];
        r.not_measured = 7;
        assert_eq!(
            r.unmeasured_text(),
            "kill n2 at 55.0 s: never healed; isolate n1 at 0.5 s, pause n3 at 12.0 s, pause n4 \
             at 20.0 s and 1 more: no baseline before it; isolate n2 at 40.0 s: the next fault \
             came too soon after the heal; bump-clock n1 at 45.0 s: for another reason"
        );
    }

    #[test]
    fn results_json_round_trip_and_fallback() {
        let mut g = Gen::new();
        partition(&mut g, 10_000, 20_000);
        g.client(0, "n1", "read", 0, 40_000, 100, &[(20_000, 24_000)], 500);
        let h = g.history();
        let r = analyse(&h, &RecoveryConfig::default());
        let results = json!({"valid": "valid", RESULTS_KEY: to_json(&h)});
        assert_eq!(from_results(&results), Some(r.clone()));
        assert_eq!(stored_or_analysed(Some(&results), &History::default()), r);
        // No (or an unreadable) stored value: computed from the history.
        assert_eq!(stored_or_analysed(Some(&json!({RESULTS_KEY: 3})), &h), r);
        assert_eq!(stored_or_analysed(None, &h), r);
    }

    /// Histories in any order with stray, unfinished and odd ops never make it panic, and what
    /// it reports stays consistent.
    #[test]
    fn arbitrary_histories_do_not_panic() {
        use rand::{RngExt, SeedableRng};
        let verbs = [
            "start-partition",
            "stop-partition",
            "kill",
            "start",
            "strobe-clock",
            "reset-clock",
            "promote",
            "read",
        ];
        for seed in 0..200u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut g = Gen::new();
            for _ in 0..rng.random_range(0..300) {
                let t = rng.random_range(0..30_000u64);
                let p = rng.random_range(0..6u64);
                let ty = [OpType::Invoke, OpType::Ok, OpType::Fail, OpType::Info]
                    [rng.random_range(0..4)];
                if rng.random_bool(0.1) {
                    let f = verbs[rng.random_range(0..verbs.len())];
                    g.nem(t, f, json!({"ran_ms": rng.random_range(0..50_000u64)}));
                } else {
                    let node = ["n1", "n2"][rng.random_range(0..2)];
                    g.op(t, ty, Process::Client(p), "read", Some(node));
                }
            }
            let mut ops = g.ops;
            if seed % 2 == 0 {
                ops.sort_by_key(|o| o.time_ns);
            }
            let r = analyse(&History::from_ops(ops), &RecoveryConfig::default());
            assert_eq!(
                r.recovered + r.not_recovered + r.not_measured,
                r.faults.len() as u64
            );
            for f in &r.faults {
                if let (Some(at), Some(rec)) = (f.recovered_at_s, f.recovery_s) {
                    assert!(at >= f.end_s && rec >= 0.0, "{f:?}");
                }
            }
            let _ = r.summary_line();
            let _ = r.shading();
        }
    }

    #[test]
    fn outages_beyond_the_cap_keep_the_longest() {
        let mut g = Gen::new();
        let down: Vec<(u64, u64)> = (1..=5)
            .map(|k| (k * 10_000, k * 10_000 + k * 1_000))
            .collect();
        g.client(0, "n1", "read", 0, 70_000, 100, &down, 100);
        let cfg = RecoveryConfig {
            max_outages: 4,
            ..RecoveryConfig::default()
        };
        let r = analyse(&g.history(), &cfg);
        // Each down span gives 4 groups (all/read × all nodes/n1); the 4 kept are the longest.
        assert_eq!(r.outages_total, 20, "{:?}", r.outages);
        assert_eq!(r.outages.len(), 4);
        assert!(
            r.outages.iter().all(|o| o.duration_s() > 5.0),
            "{:?}",
            r.outages
        );
    }
}
