//! One fault's recovery: time to first failure, the pre-fault level, the recovery point after
//! the heal (sustained service at that level) and why it was not measured, from the paired ops
//! and the outages (see `report::recovery`'s module doc for the definitions). Pure. Does not pair
//! ops (`recovery::attempts`) nor find outages (`recovery::outages`).

use super::{Attempt, FaultRecovery, NS_PER_S, Outage, RecoveryConfig, Unmeasured, ns_of, secs};
use crate::report::faults::FaultInterval;

/// What every fault's computation reads.
pub(super) struct Context<'a> {
    pub(super) end_ns: u64,
    pub(super) first_client_ns: u64,
    /// Starts and ends of every fault interval, sorted.
    pub(super) boundaries: &'a [u64],
    /// Recovery points of the faults before this one.
    pub(super) recovered_points: &'a [u64],
    /// Completion times of served ops, sorted.
    pub(super) served_ns: &'a [u64],
    /// Failed ops as (invoke, completion), by invocation.
    pub(super) failed: &'a [(u64, u64)],
    /// Latest completion among `failed[..=i]`.
    pub(super) latest_completion: &'a [u64],
    /// Spans of at least a window with no client op invoked or in flight, by start.
    pub(super) idle: &'a [(u64, u64)],
    /// Where the main workload stopped, when the history shows a final heal and final reads
    /// (`report::phases`).
    pub(super) workload_end_ns: Option<u64>,
}

impl Context<'_> {
    /// Served ops completed in `[a, b)`.
    fn served_between(&self, a: u64, b: u64) -> u64 {
        let before = |t: u64| self.served_ns.partition_point(|&s| s < t);
        before(b).saturating_sub(before(a)) as u64
    }

    /// Start of the first idle span that begins at or after `t`, or `t` itself when the
    /// workload is idle at `t`.
    fn workload_stops_after(&self, t: u64) -> Option<u64> {
        let i = self.idle.partition_point(|s| s.1 < t);
        self.idle.get(i).map(|s| s.0.max(t))
    }
}

/// Spans of at least `min_ns` during which no client op was invoked or in flight (the
/// workload had stopped or not begun), in time order, up to `end_ns`.
pub(super) fn idle_spans(attempts: &[Attempt], min_ns: u64, end_ns: u64) -> Vec<(u64, u64)> {
    let mut busy: Vec<(u64, u64)> = attempts
        .iter()
        .map(|a| (a.invoke_ns, a.complete_ns))
        .collect();
    busy.sort_unstable();
    let mut out = Vec::new();
    let mut covered_to: Option<u64> = None;
    for (a, b) in busy {
        if let Some(c) = covered_to
            && a >= c.saturating_add(min_ns)
        {
            out.push((c, a));
        }
        covered_to = Some(covered_to.map_or(b, |c| c.max(b)));
    }
    if let Some(c) = covered_to
        && end_ns >= c.saturating_add(min_ns)
    {
        out.push((c, end_ns));
    }
    out
}

/// How the workload fared through one fault: its baseline, the throughput while it lasted, the
/// first failure, when (and whether) throughput recovered after the heal, or why that was not
/// measured, and the longest outage within it.
pub(super) fn fault_recovery(
    iv: &FaultInterval,
    config: &RecoveryConfig,
    inherited_baseline: Option<f64>,
    cx: &Context<'_>,
    outages: &[Outage],
) -> FaultRecovery {
    let (start, heal) = (ns_of(iv.start_s), ns_of(iv.end_s));
    let own = [start, heal];
    let (baseline, baseline_len_s) = baseline_of(start, &own, config, inherited_baseline, cx);
    // While the workload ran (it stops at the end of the run, e.g. during a long strobe).
    let busy_until = cx.workload_stops_after(start).unwrap_or(heal).min(heal);
    let during = (busy_until > start).then(|| {
        cx.served_between(start, busy_until) as f64 / ((busy_until - start) as f64 / NS_PER_S)
    });
    let limit = SearchEnd::after(heal, &own, config, cx);
    let mut measured = false;
    let mut sustained = None;
    let mut unmeasured = None;
    let (recovered_at, why_not) = if !iv.open {
        match baseline {
            None if baseline_len_s < config.min_baseline_s && inherited_baseline.is_none() => {
                unmeasured = Some(Unmeasured::NoBaseline);
                (
                    None,
                    Some(format!(
                        "no baseline: less than {} s without fault changes before it",
                        config.min_baseline_s
                    )),
                )
            }
            None => {
                unmeasured = Some(Unmeasured::NoBaseline);
                (
                    None,
                    Some("no baseline: nothing served before it".to_string()),
                )
            }
            Some(rate) => match recovery_point(heal, limit.at, limit.truncate, rate, config, cx) {
                Some((at, stretch)) => {
                    measured = true;
                    sustained = Some(secs(stretch));
                    (Some(at), None)
                }
                None => {
                    measured = limit.unmeasured.is_none();
                    unmeasured = limit.unmeasured;
                    (None, Some(limit.reason))
                }
            },
        }
    } else {
        unmeasured = Some(Unmeasured::NeverHealed);
        (None, Some("never healed in the history".to_string()))
    };
    let settled = recovered_at.unwrap_or(limit.at).max(heal);
    let first_failure = first_failure(start, settled, cx);
    let longest_outage = longest_outage(outages, iv.start_s, secs(settled));
    FaultRecovery {
        kind: iv.kind.clone(),
        label: iv.label.clone(),
        start_s: iv.start_s,
        end_s: iv.end_s,
        healed: !iv.open,
        first_failure_s: first_failure.map(secs),
        baseline_ops_per_s: baseline.map(round2),
        baseline_inherited: inherited_baseline.is_some(),
        during_ops_per_s: during.map(round2),
        measured,
        recovery_s: recovered_at.map(|at| secs(at - heal)),
        recovered_at_s: recovered_at.map(secs),
        sustained_s: sustained,
        not_recovered: why_not,
        unmeasured,
        longest_outage,
    }
}

/// The pre-fault throughput (ops/s) a fault starting at `start` is measured against —
/// `inherited`, else what was served since the latest other change of faults or earlier
/// recovery point (at most `baseline_s`), when that stretch is long enough and served anything
/// — and that stretch's length in s. `own` = the fault's own start and heal.
fn baseline_of(
    start: u64,
    own: &[u64; 2],
    config: &RecoveryConfig,
    inherited: Option<f64>,
    cx: &Context<'_>,
) -> (Option<f64>, f64) {
    // Baseline: cut at the latest other change of faults and earlier recovery point.
    let cut = cx
        .boundaries
        .iter()
        .filter(|b| **b < start && !own.contains(b))
        .chain(cx.recovered_points.iter().filter(|r| **r <= start))
        .copied()
        .max()
        .unwrap_or(0);
    let b0 = cut
        .max(cx.first_client_ns)
        .max(start.saturating_sub(ns_of(config.baseline_s)));
    let baseline_len_s = start.saturating_sub(b0) as f64 / NS_PER_S;
    let baseline = inherited.or_else(|| {
        (baseline_len_s >= config.min_baseline_s)
            .then(|| cx.served_between(b0, start) as f64 / baseline_len_s)
            .filter(|r| *r > 0.0)
    });
    (baseline, baseline_len_s)
}

/// Where the search for a recovery point after a heal stops, and what finding none there means.
struct SearchEnd {
    /// The next change of faults, the workload's stop or the end of the history, whichever
    /// comes first.
    at: u64,
    /// Whether the next change of faults cuts the search short (a shorter stretch suffices).
    truncate: bool,
    /// Why no recovery point was found before `at`, in words.
    reason: String,
    /// Why finding none measured nothing (`None`: it is a measurement).
    unmeasured: Option<Unmeasured>,
}

impl SearchEnd {
    /// The limit of the search after the heal at `heal` (`own` = the fault's start and heal).
    fn after(heal: u64, own: &[u64; 2], config: &RecoveryConfig, cx: &Context<'_>) -> SearchEnd {
        // Recovery must be seen before the next change of faults, before the workload stops and
        // before the end of the history.
        let next_change = cx
            .boundaries
            .iter()
            .copied()
            .find(|b| *b > heal && !own.contains(b))
            .unwrap_or(u64::MAX);
        let stops = cx.workload_stops_after(heal).unwrap_or(u64::MAX);
        let limit = next_change.min(stops).min(cx.end_ns);
        let pct = (config.recovered_fraction * 100.0).round();
        let what = if limit == stops {
            "the workload stopped"
        } else if limit == next_change {
            "the next fault change"
        } else {
            "the end of the history"
        };
        // Why no recovery point was found before `limit`, and whether that is a measurement: too
        // little time after the heal to see a sustained recovery is not one.
        let sustain_s = config.sustain_ms.max(config.window_ms) as f64 / 1e3;
        let room_s = limit.saturating_sub(heal) as f64 / NS_PER_S;
        // Before the next fault change, a shorter stretch suffices (see the module doc).
        let truncate = limit == next_change && limit < stops && limit < cx.end_ns;
        let needed_s = if truncate {
            min_sustain_s(config)
        } else {
            sustain_s
        };
        // Why a search that found nothing did not measure anything (`None`: it did).
        let stopped = if cx.workload_end_ns.is_some_and(|end| heal >= end) {
            Unmeasured::HealedAfterWorkload
        } else {
            Unmeasured::WorkloadStopped
        };
        let (limit_reason, unmeasured_limit) = if room_s < needed_s {
            (
                format!("only {room_s:.1} s from the heal until {what}, {needed_s} s needed"),
                Some(if limit == stops {
                    stopped
                } else if limit == next_change {
                    Unmeasured::NextFault
                } else {
                    Unmeasured::HistoryEnded
                }),
            )
        } else if limit == stops {
            (
                format!(
                    "the workload stopped before {sustain_s} s of {pct}% of the pre-fault throughput"
                ),
                Some(stopped),
            )
        } else {
            (
                format!("below {pct}% of the pre-fault throughput until {what}"),
                None,
            )
        };
        SearchEnd {
            at: limit,
            truncate,
            reason: limit_reason,
            unmeasured: unmeasured_limit,
        }
    }
}

/// The longest outage of every node (`node` none) mostly within [`from_s`, `to_s`): one that
/// began before the fault and only ran into it belongs to what came before.
fn longest_outage(outages: &[Outage], from_s: f64, to_s: f64) -> Option<Outage> {
    outages
        .iter()
        .filter(|o| {
            let inside = o.end_s.min(to_s) - o.start_s.max(from_s);
            o.node.is_none() && inside > o.duration_s() / 2.0
        })
        .max_by(Outage::longer)
        .cloned()
}

pub(super) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Shortest stretch of recovered throughput that counts when the next change of faults cuts it
/// short: half of `sustain_ms`, and at least one window.
pub(super) fn min_sustain_s(config: &RecoveryConfig) -> f64 {
    (config.sustain_ms / 2).max(config.window_ms) as f64 / 1e3
}

/// The first served op at or after the first grid time from which throughput stays recovered
/// for `sustain_ms` — or, with `truncate`, until `limit` when that is sooner but at least
/// [`min_sustain_s`] away (see the module doc) — with the length of that stretch in ns.
pub(super) fn recovery_point(
    heal: u64,
    limit: u64,
    truncate: bool,
    baseline_per_s: f64,
    config: &RecoveryConfig,
    cx: &Context<'_>,
) -> Option<(u64, u64)> {
    let ms = 1_000_000u64;
    let step = config.step_ms.max(1) * ms;
    let window = config.window_ms.max(1) * ms;
    let sustain = (config.sustain_ms * ms).max(window);
    let min_stretch = if truncate {
        ns_of(min_sustain_s(config))
    } else {
        sustain
    };
    let need = (config.recovered_fraction * baseline_per_s * window as f64 / NS_PER_S)
        .ceil()
        .max(1.0) as u64;
    // Grid windows [heal + k·step, + window) that fit before `limit`, and whether each holds
    // enough served ops.
    let fit = limit.checked_sub(heal)?.checked_sub(window)? / step + 1;
    let good: Vec<bool> = (0..fit)
        .map(|k| {
            let t = heal + k * step;
            cx.served_between(t, t + window) >= need
        })
        .collect();
    // Runs of consecutive good windows, scanned once: `run_from[k]` = good windows from k on.
    let mut run_from = vec![0u64; good.len() + 1];
    for k in (0..good.len()).rev() {
        run_from[k] = if good[k] { run_from[k + 1] + 1 } else { 0 };
    }
    for (k, _) in good.iter().enumerate().filter(|(_, g)| **g) {
        let t0 = heal + k as u64 * step;
        // The stretch this start needs: all of `sustain`, or up to `limit` when truncating.
        let stretch = sustain.min(limit - t0);
        if stretch < min_stretch {
            return None;
        }
        let windows = (stretch - window) / step + 1;
        if run_from[k] >= windows {
            let i = cx.served_ns.partition_point(|&s| s < t0);
            return cx.served_ns.get(i).copied().map(|at| (at, stretch));
        }
    }
    None
}

/// Time from `start` to the first failed op attempted in `[start, settled)` (0 when one was in
/// flight at `start`), in ns.
pub(super) fn first_failure(start: u64, settled: u64, cx: &Context<'_>) -> Option<u64> {
    let k = cx.failed.partition_point(|f| f.0 < start);
    if k > 0 && cx.latest_completion[k - 1] >= start {
        return Some(0);
    }
    cx.failed
        .get(k)
        .filter(|f| f.0 < settled)
        .map(|f| f.0 - start)
}
