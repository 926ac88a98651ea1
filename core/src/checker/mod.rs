//! Checkers: pure functions from a history to a three-valued verdict with details.
//!
//! Owns the `Checker` trait, `Verdict` and its merge rule (invalid > unknown > valid), and composing
//! several checkers. Individual analyses live in submodules. No IO here: results are data that
//! `store` writes and `report` renders.

pub mod compose;
pub mod linear;
pub mod lock;
pub mod log;
pub mod session;
pub mod set;
pub mod set_full;
pub mod txn;

use crate::history::History;
use serde::{Deserialize, Serialize};

/// Outcome of a check. Never collapse `Unknown` into `Valid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The history satisfies the property.
    Valid,
    /// The history violates the property; details carry a witness.
    Invalid,
    /// The checker could not decide (budget exceeded, indeterminate input).
    Unknown,
}

impl Verdict {
    /// Merge two verdicts: invalid outranks unknown, which outranks valid.
    pub fn merge(self, other: Verdict) -> Verdict {
        use Verdict::*;
        match (self, other) {
            (Invalid, _) | (_, Invalid) => Invalid,
            (Unknown, _) | (_, Unknown) => Unknown,
            _ => Valid,
        }
    }

    /// Process exit code for this verdict: 0 valid, 1 invalid, 2 unknown.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Valid => 0,
            Verdict::Invalid => 1,
            Verdict::Unknown => 2,
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Valid => "valid",
            Verdict::Invalid => "invalid",
            Verdict::Unknown => "unknown",
        })
    }
}

/// What one checker concluded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckResult {
    /// Checker name, e.g. `linearizable`.
    pub checker: String,
    /// The verdict.
    pub verdict: Verdict,
    /// One-line human summary.
    pub summary: String,
    /// Checker-specific machine-readable details (witnesses, coverage, counts).
    pub details: serde_json::Value,
}

/// A pure analysis of a history.
pub trait Checker: Send + Sync {
    /// Short stable name used in results.json.
    fn name(&self) -> &str;
    /// Analyse the history. Must not panic on any input; malformed input is an `Unknown` or
    /// `Invalid` result with the reason in `details`, as appropriate to the checker.
    fn check(&self, history: &History) -> CheckResult;
}

/// Run several checkers and merge their verdicts.
pub fn check_all(checkers: &[Box<dyn Checker>], history: &History) -> (Verdict, Vec<CheckResult>) {
    let results: Vec<CheckResult> = checkers.iter().map(|c| c.check(history)).collect();
    let verdict = results
        .iter()
        .fold(Verdict::Valid, |v, r| v.merge(r.verdict));
    (verdict, results)
}

#[cfg(test)]
mod tests {
    use super::Verdict::*;

    #[test]
    fn merge_ranks_invalid_over_unknown_over_valid() {
        assert_eq!(Valid.merge(Valid), Valid);
        assert_eq!(Valid.merge(Unknown), Unknown);
        assert_eq!(Unknown.merge(Valid), Unknown);
        assert_eq!(Unknown.merge(Invalid), Invalid);
        assert_eq!(Invalid.merge(Valid), Invalid);
    }
}
