//! What makes a run complete, and what an incomplete run does to its verdict.
//!
//! Owns the one definition of "complete" that the runner, `report`, `heal`, the run page and the
//! reports index read: a [`CompletionRecord`] (status, a one-line reason for people, how much
//! of the workload ran, what cleanup could not undo) and [`judge`], which turns the checkers'
//! merged verdict into the verdict the run earned. Pure: no IO. Where the record lives on disk
//! is `store`'s business; writing it at the right moment is `runner`'s.
//!
//! The rule: `valid` needs a run whose workload ran to its time limit (then was healed and read)
//! and at least one client op. Anything less is `unknown` with the reason; `invalid` stays
//! `invalid`, because anomalies in what was recorded are real.

use crate::checker::Verdict;
use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// The workload ran to its time limit; faults were healed through the history and the final
    /// reads done.
    Completed,
    /// Ctrl-C (SIGINT) stopped the workload early; the controller healed and cleaned up.
    Interrupted,
    /// An error stopped the workload; the controller healed and cleaned up.
    Failed,
    /// The controller panicked while driving the workload; it healed and cleaned up.
    Panicked,
    /// `--stop-on-anomaly`: live checking confirmed an anomaly, so the workload stopped early;
    /// the controller healed and cleaned up. Never `valid`; `invalid` by the confirmed anomaly,
    /// which the end-of-run check keeps.
    StoppedOnAnomaly,
    /// A second Ctrl-C aborted the controller at once: no cleanup, no check.
    Aborted,
    /// `shakedown chaos`: the probe failed `--abort-after` times in a row, so the experiment
    /// stopped injecting, healed everything and cleaned up.
    ProbeAborted,
    /// The workload never started (an unreachable node, a failed setup).
    NotStarted,
    /// No completion record: the controller was killed (or the run is still going).
    Killed,
}

impl RunStatus {
    /// Short label for badges and tables.
    pub fn label(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
            RunStatus::Panicked => "panicked",
            RunStatus::StoppedOnAnomaly => "stopped on anomaly",
            RunStatus::Aborted => "aborted",
            RunStatus::ProbeAborted => "aborted by the probe",
            RunStatus::NotStarted => "not started",
            RunStatus::Killed => "incomplete",
        }
    }
}

/// The completion record of a run (`completion.json`, and `completion` in results.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionRecord {
    /// How the run ended.
    pub status: RunStatus,
    /// One line for people, e.g. "interrupted after 5.1 s of 60 s".
    pub reason: String,
    /// Seconds of workload that ran, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_s: Option<f64>,
    /// The workload's time limit in seconds, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_s: Option<f64>,
    /// What the final cleanup could not undo, one entry per failure, each naming its node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cleanup_failures: Vec<String>,
}

/// "5.1 s of 60 s", or "5.1 s" without a limit.
fn progress_text(workload_s: f64, time_limit_s: Option<f64>) -> String {
    match time_limit_s {
        Some(l) => format!("{workload_s:.1} s of {l} s"),
        None => format!("{workload_s:.1} s"),
    }
}

impl CompletionRecord {
    fn new(status: RunStatus, reason: String, workload_s: Option<f64>, limit: Option<f64>) -> Self {
        CompletionRecord {
            status,
            reason,
            workload_s,
            time_limit_s: limit,
            cleanup_failures: Vec::new(),
        }
    }

    /// The workload ran for `workload_s` of its `time_limit_s` and finished normally.
    pub fn completed(workload_s: f64, time_limit_s: f64) -> Self {
        let reason = format!(
            "completed {}",
            progress_text(workload_s, Some(time_limit_s))
        );
        Self::new(
            RunStatus::Completed,
            reason,
            Some(workload_s),
            Some(time_limit_s),
        )
    }

    /// Ctrl-C stopped the workload after `workload_s`.
    pub fn interrupted(workload_s: f64, time_limit_s: f64) -> Self {
        let reason = format!(
            "interrupted after {}",
            progress_text(workload_s, Some(time_limit_s))
        );
        Self::new(
            RunStatus::Interrupted,
            reason,
            Some(workload_s),
            Some(time_limit_s),
        )
    }

    /// `--stop-on-anomaly`: the anomaly `what` ("key 17 not linearizable at 12.3 s") stopped
    /// the workload after `workload_s`.
    pub fn stopped_on_anomaly(what: &str, workload_s: f64, time_limit_s: f64) -> Self {
        let reason = format!(
            "stopped early: {what} (--stop-on-anomaly; the workload ran {}, then healed)",
            progress_text(workload_s, Some(time_limit_s))
        );
        Self::new(
            RunStatus::StoppedOnAnomaly,
            reason,
            Some(workload_s),
            Some(time_limit_s),
        )
    }

    /// An error stopped the workload (`workload_s` of it ran, when known).
    pub fn failed(error: &str, workload_s: Option<f64>, time_limit_s: f64) -> Self {
        let reason = match workload_s {
            Some(w) => format!(
                "stopped by an error after {}: {error}",
                progress_text(w, Some(time_limit_s))
            ),
            None => format!("stopped by an error during the workload: {error}"),
        };
        Self::new(RunStatus::Failed, reason, workload_s, Some(time_limit_s))
    }

    /// The controller panicked while driving the workload.
    pub fn panicked(message: &str, time_limit_s: f64) -> Self {
        let reason = format!("the controller panicked during the workload: {message}");
        Self::new(RunStatus::Panicked, reason, None, Some(time_limit_s))
    }

    /// A second Ctrl-C aborted the controller `elapsed_s` after the run started.
    pub fn aborted(elapsed_s: f64, time_limit_s: f64) -> Self {
        let reason = format!(
            "aborted by a second Ctrl-C {elapsed_s:.1} s after the start: not cleaned up, \
             not checked; faults may remain (run `shakedown heal`)"
        );
        Self::new(RunStatus::Aborted, reason, None, Some(time_limit_s))
    }

    /// `shakedown chaos`: `after` failed probes in a row stopped the experiment at `at_s`
    /// (`workload_s` of faults ran); it stopped injecting and healed.
    pub fn probe_aborted(after: u32, at_s: f64, workload_s: f64, time_limit_s: f64) -> Self {
        let reason = format!(
            "aborted by the probe: {after} failed in a row at {at_s:.1} s ({}); stopped \
             injecting and healed",
            progress_text(workload_s, Some(time_limit_s))
        );
        Self::new(
            RunStatus::ProbeAborted,
            reason,
            Some(workload_s),
            Some(time_limit_s),
        )
    }

    /// The workload never started.
    pub fn not_started(error: &str) -> Self {
        let reason = format!("the workload never started: {error}");
        Self::new(RunStatus::NotStarted, reason, None, None)
    }

    /// No completion record was found: what a killed controller leaves.
    pub fn killed() -> Self {
        Self::new(
            RunStatus::Killed,
            "incomplete: controller killed (no completion record; the run stopped without \
             cleanup, or is still going)"
                .to_string(),
            None,
            None,
        )
    }

    /// Record what the final cleanup could not undo.
    pub fn with_cleanup_failures(mut self, failures: Vec<String>) -> Self {
        self.cleanup_failures = failures;
        self
    }

    /// Whether the workload ran to its end.
    pub fn is_complete(&self) -> bool {
        self.status == RunStatus::Completed
    }

    /// Whether the final cleanup undid everything it tried to.
    pub fn cleanup_ok(&self) -> bool {
        self.cleanup_failures.is_empty()
    }
}

/// The verdict a run earned and, when it differs from the checkers' merged verdict, why.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The run's verdict.
    pub verdict: Verdict,
    /// Why the verdict is not the checkers' (an incomplete run, no client ops); `None` when it is.
    pub reason: Option<String>,
}

/// The verdict a run earns: the checkers' merged verdict `checked`, demoted from `valid` to
/// `unknown` when the run is incomplete or recorded no client op. `invalid` stays `invalid`.
pub fn judge(checked: Verdict, completion: &CompletionRecord, client_ops: u64) -> Judgement {
    let demote = |reason: String| Judgement {
        verdict: Verdict::Unknown,
        reason: Some(reason),
    };
    match checked {
        Verdict::Invalid => Judgement {
            verdict: Verdict::Invalid,
            reason: None,
        },
        _ if client_ops == 0 => demote(format!(
            "no client ops recorded: nothing was checked ({})",
            completion.reason
        )),
        _ if !completion.is_complete() => demote(completion.reason.clone()),
        v => Judgement {
            verdict: v,
            reason: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_completed_run_with_ops_can_be_valid() {
        let done = CompletionRecord::completed(60.0, 60.0);
        assert_eq!(judge(Verdict::Valid, &done, 10).verdict, Verdict::Valid);
        assert_eq!(judge(Verdict::Valid, &done, 10).reason, None);
        let cut = CompletionRecord::interrupted(5.06, 60.0);
        assert_eq!(cut.reason, "interrupted after 5.1 s of 60 s");
        let j = judge(Verdict::Valid, &cut, 10);
        assert_eq!(j.verdict, Verdict::Unknown);
        assert_eq!(j.reason.as_deref(), Some("interrupted after 5.1 s of 60 s"));
        for c in [
            CompletionRecord::failed("writing history: disk full", Some(3.0), 60.0),
            CompletionRecord::panicked("boom", 60.0),
            CompletionRecord::aborted(2.0, 60.0),
            CompletionRecord::stopped_on_anomaly("key 17 not linearizable at 12.3 s", 12.5, 60.0),
            CompletionRecord::not_started("n1: unreachable"),
            CompletionRecord::killed(),
        ] {
            assert!(!c.is_complete());
            let j = judge(Verdict::Valid, &c, 10);
            assert_eq!(j.verdict, Verdict::Unknown, "{c:?}");
            assert_eq!(j.reason.as_deref(), Some(c.reason.as_str()));
        }
        assert!(
            CompletionRecord::killed()
                .reason
                .contains("controller killed")
        );
    }

    #[test]
    fn anomalies_stay_invalid_and_unknown_stays_unknown() {
        let cut = CompletionRecord::interrupted(5.0, 60.0);
        assert_eq!(judge(Verdict::Invalid, &cut, 10).verdict, Verdict::Invalid);
        assert_eq!(judge(Verdict::Invalid, &cut, 0).verdict, Verdict::Invalid);
        // A stop at a confirmed anomaly is invalid by it, never "interrupted, so unknown".
        let stopped =
            CompletionRecord::stopped_on_anomaly("key 17 not linearizable at 12.3 s", 12.5, 60.0);
        assert!(
            stopped
                .reason
                .starts_with("stopped early: key 17 not linearizable at 12.3 s")
        );
        assert_eq!(
            judge(Verdict::Invalid, &stopped, 10).verdict,
            Verdict::Invalid
        );
        let done = CompletionRecord::completed(60.0, 60.0);
        assert_eq!(judge(Verdict::Unknown, &done, 10).verdict, Verdict::Unknown);
    }

    #[test]
    fn an_empty_history_is_unknown_even_when_complete() {
        let done = CompletionRecord::completed(60.0, 60.0);
        let j = judge(Verdict::Valid, &done, 0);
        assert_eq!(j.verdict, Verdict::Unknown);
        assert!(j.reason.unwrap().contains("no client ops"));
    }

    #[test]
    fn the_record_round_trips_and_names_cleanup_failures() {
        let c = CompletionRecord::completed(60.0, 60.0)
            .with_cleanup_failures(vec!["n3: removing iptables chain SHAKEDOWN: busy".into()]);
        assert!(!c.cleanup_ok());
        let text = serde_json::to_string(&c).unwrap();
        assert!(text.contains("\"status\":\"completed\""), "{text}");
        let back: CompletionRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, c);
        let v: CompletionRecord =
            serde_json::from_str(r#"{"status":"not-started","reason":"x"}"#).unwrap();
        assert_eq!(v.status, RunStatus::NotStarted);
        assert!(v.cleanup_ok());
    }
}
