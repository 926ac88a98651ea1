//! The SLO judgement of a chaos experiment: probe statistics from its history and the verdict
//! they earn against `--slo-p99-ms` and `--slo-availability`. Pure: no IO.
//!
//! Definitions: a probe is **served** when it completed `ok`; every other probe (`fail`, which
//! includes timeouts, `info`, or an invoke never completed) is **failed**. Availability = served
//! / probes. Latency quantiles are over served probes (nearest rank), in ms.
//!
//! Verdict (exit code): **invalid** (1) when an SLO is violated by what was observed — a
//! violation is a result even in an experiment that stopped early; otherwise **unknown** (2)
//! when the experiment did not run to its end (aborted by the probe rail, interrupted, stopped by
//! an error, controller killed) or no probe completed, or the p99 SLO has no served probe to
//! measure; otherwise **valid** (0). Without any SLO, a complete experiment is valid: it is
//! then judged only by running to its end without tripping the abort rail.

use crate::checker::{CheckResult, Verdict};
use crate::completion::CompletionRecord;
use crate::history::{History, OpType};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Name of the judgement in results.json `checkers` (defined with the run directory, which the
/// report reads).
pub use crate::store::SLO_CHECKER as CHECKER;

/// The service level the probe must stay within; `None` = not asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// Largest allowed 99th percentile of served probes' latency, in ms.
    pub p99_ms: Option<f64>,
    /// Smallest allowed fraction of served probes, in (0, 1].
    pub availability: Option<f64>,
}

impl Slo {
    /// "p99 ≤ 250 ms, availability ≥ 0.99", or "none".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = self.p99_ms {
            parts.push(format!("p99 ≤ {p} ms"));
        }
        if let Some(a) = self.availability {
            parts.push(format!("availability ≥ {a}"));
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
}

/// What the probes saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeStats {
    /// Probes invoked.
    pub probes: u64,
    /// Probes that completed ok.
    pub served: u64,
    /// Probes that failed, timed out or never completed.
    pub failed: u64,
    /// served / probes; `None` without probes.
    pub availability: Option<f64>,
    /// Median latency of served probes, ms.
    pub p50_ms: Option<f64>,
    /// 99th percentile latency of served probes, ms.
    pub p99_ms: Option<f64>,
    /// Slowest served probe, ms.
    pub max_ms: Option<f64>,
    /// Longest run of consecutive failed probes.
    pub longest_failure_run: u64,
}

/// Nearest-rank quantile `q` in (0, 1] of sorted values.
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// The probe statistics of a chaos history (ops with `f` = [`super::PROBE_F`]).
pub fn stats(history: &History) -> ProbeStats {
    let pairs = history
        .pairs()
        .unwrap_or_else(|_| vec![None; history.ops.len()]);
    let mut s = ProbeStats::default();
    let mut latencies_ms = Vec::new();
    let mut run = 0;
    for (i, op) in history.ops.iter().enumerate() {
        if !(op.is_client() && op.op_type == OpType::Invoke && op.f == super::PROBE_F) {
            continue;
        }
        s.probes += 1;
        let done = pairs[i].map(|j| &history.ops[j]);
        match done {
            Some(d) if d.op_type == OpType::Ok => {
                s.served += 1;
                run = 0;
                latencies_ms.push(d.time_ns.saturating_sub(op.time_ns) as f64 / 1e6);
            }
            _ => {
                s.failed += 1;
                run += 1;
                s.longest_failure_run = s.longest_failure_run.max(run);
            }
        }
    }
    latencies_ms.sort_by(f64::total_cmp);
    s.availability = (s.probes > 0).then(|| s.served as f64 / s.probes as f64);
    s.p50_ms = quantile(&latencies_ms, 0.5);
    s.p99_ms = quantile(&latencies_ms, 0.99);
    s.max_ms = latencies_ms.last().copied();
    s
}

/// The verdict of an experiment, with its statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// valid / invalid / unknown (see the module doc).
    pub verdict: Verdict,
    /// One line for people.
    pub summary: String,
    /// Each SLO the probes violated, in words.
    pub violations: Vec<String>,
    /// What the probes saw.
    pub stats: ProbeStats,
}

impl Judgement {
    /// As a checker result (results.json `checkers`, the run page, the reports index).
    pub fn check_result(&self, slo: &Slo) -> CheckResult {
        CheckResult {
            checker: CHECKER.into(),
            verdict: self.verdict,
            summary: self.summary.clone(),
            details: json!({ "slo": slo, "probes": self.stats, "violations": self.violations }),
        }
    }
}

/// Judge the probes of `history` against `slo`, given how the experiment ended.
pub fn judge(history: &History, slo: &Slo, completion: &CompletionRecord) -> Judgement {
    let stats = stats(history);
    let mut violations = Vec::new();
    let mut undecided = Vec::new();
    if let (Some(min), Some(a)) = (slo.availability, stats.availability)
        && a < min
    {
        violations.push(format!(
            "availability {a:.4} < {min} ({} of {} probes failed)",
            stats.failed, stats.probes
        ));
    }
    if let Some(max) = slo.p99_ms {
        match stats.p99_ms {
            Some(p) if p > max => violations.push(format!("p99 latency {p:.1} ms > {max} ms")),
            Some(_) => {}
            None if stats.probes > 0 => {
                undecided.push("no probe succeeded, so there is no p99 latency".to_string())
            }
            None => {}
        }
    }
    let seen = format!(
        "{} probes, {} served ({}), p99 {}",
        stats.probes,
        stats.served,
        stats
            .availability
            .map_or("-".into(), |a| format!("availability {a:.4}")),
        stats.p99_ms.map_or("-".into(), |p| format!("{p:.1} ms"))
    );
    let (verdict, summary) = if !violations.is_empty() {
        (
            Verdict::Invalid,
            format!("SLO violated: {}; {seen}", violations.join("; ")),
        )
    } else if stats.probes == 0 {
        (
            Verdict::Unknown,
            format!("no probe ran ({})", completion.reason),
        )
    } else if !completion.is_complete() {
        (
            Verdict::Unknown,
            format!("{}; within SLO so far: {seen}", completion.reason),
        )
    } else if !undecided.is_empty() {
        (
            Verdict::Unknown,
            format!("{}; {seen}", undecided.join("; ")),
        )
    } else if slo.p99_ms.is_none() && slo.availability.is_none() {
        (
            Verdict::Valid,
            format!("no SLO given; ran to its end without an abort: {seen}"),
        )
    } else {
        (
            Verdict::Valid,
            format!("within SLO ({}): {seen}", slo.describe()),
        )
    };
    Judgement {
        verdict,
        summary,
        violations,
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, Process};
    use serde_json::Value;

    /// A probe history: (start ms, latency ms, outcome) per probe; `None` outcome = never
    /// completed.
    fn history(probes: &[(u64, u64, Option<OpType>)]) -> History {
        let mut ops = Vec::new();
        for &(t, lat, outcome) in probes {
            let mut i = Op::new(OpType::Invoke, Process::Client(0), "probe", Value::Null);
            i.time_ns = t * 1_000_000;
            ops.push(i);
            if let Some(ty) = outcome {
                let mut c = Op::new(ty, Process::Client(0), "probe", Value::Null);
                c.time_ns = (t + lat) * 1_000_000;
                ops.push(c);
            }
        }
        let mut n = Op::new(
            OpType::Info,
            Process::Nemesis,
            "start-partition",
            Value::Null,
        );
        n.time_ns = 1;
        ops.insert(0, n);
        for (k, o) in ops.iter_mut().enumerate() {
            o.index = k as u64;
        }
        History {
            ops,
            ..Default::default()
        }
    }

    fn complete() -> CompletionRecord {
        CompletionRecord::completed(10.0, 10.0)
    }

    fn ok(n: u64, lat: u64) -> Vec<(u64, u64, Option<OpType>)> {
        (0..n).map(|i| (i * 1000, lat, Some(OpType::Ok))).collect()
    }

    #[test]
    fn statistics_count_timeouts_and_unfinished_probes_as_failed() {
        let mut p = ok(8, 10);
        p.push((9000, 2000, Some(OpType::Fail)));
        p.push((11000, 0, None));
        let s = stats(&history(&p));
        assert_eq!((s.probes, s.served, s.failed), (10, 8, 2));
        assert_eq!(s.availability, Some(0.8));
        assert_eq!(s.p99_ms, Some(10.0));
        assert_eq!(s.longest_failure_run, 2);
    }

    #[test]
    fn within_slo_is_valid_only_when_the_experiment_completed() {
        let h = history(&ok(100, 20));
        let slo = Slo {
            p99_ms: Some(50.0),
            availability: Some(0.99),
        };
        let j = judge(&h, &slo, &complete());
        assert_eq!(j.verdict, Verdict::Valid, "{}", j.summary);
        let aborted = CompletionRecord::interrupted(5.0, 10.0);
        let j = judge(&h, &slo, &aborted);
        assert_eq!(j.verdict, Verdict::Unknown, "{}", j.summary);
        assert!(j.summary.contains("interrupted"), "{}", j.summary);
    }

    #[test]
    fn a_violation_is_invalid_even_in_an_experiment_that_stopped_early() {
        let mut p = ok(10, 20);
        p.extend((0..3).map(|i| (20_000 + i * 1000, 500, Some(OpType::Fail))));
        let slo = Slo {
            p99_ms: None,
            availability: Some(0.99),
        };
        let j = judge(
            &history(&p),
            &slo,
            &CompletionRecord::interrupted(13.0, 60.0),
        );
        assert_eq!(j.verdict, Verdict::Invalid, "{}", j.summary);
        assert!(j.violations[0].contains("3 of 13 probes failed"), "{j:?}");
        let slow = Slo {
            p99_ms: Some(10.0),
            availability: None,
        };
        let j = judge(&history(&ok(10, 20)), &slow, &complete());
        assert_eq!(j.verdict, Verdict::Invalid);
        assert!(
            j.summary.contains("p99 latency 20.0 ms > 10 ms"),
            "{}",
            j.summary
        );
    }

    #[test]
    fn nothing_to_measure_is_unknown_never_valid() {
        let slo = Slo {
            p99_ms: Some(10.0),
            availability: None,
        };
        assert_eq!(
            judge(&history(&[]), &slo, &complete()).verdict,
            Verdict::Unknown
        );
        let all_failed = history(&[(0, 5, Some(OpType::Fail))]);
        assert_eq!(
            judge(&all_failed, &slo, &complete()).verdict,
            Verdict::Unknown
        );
        // No SLO at all: a complete experiment with probes is valid, an empty one is not.
        let none = Slo::default();
        assert_eq!(
            judge(&history(&ok(3, 1)), &none, &complete()).verdict,
            Verdict::Valid
        );
        assert_eq!(
            judge(&history(&[]), &none, &complete()).verdict,
            Verdict::Unknown
        );
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(quantile(&v, 0.5), Some(50.0));
        assert_eq!(quantile(&[7.0], 0.99), Some(7.0));
        assert_eq!(quantile(&[], 0.99), None);
    }
}
