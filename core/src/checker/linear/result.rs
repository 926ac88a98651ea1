//! The result of a linearizability check and its text: per part (`PartSummary`, `Witness`), the
//! whole (`LinearResult`, with the unknown parts counted by cause in `Undecided`), the one-line
//! summary and the terminal explanation. Does not own the search or the budgets (`linear`,
//! `linear::search`) nor the HTML page (`checker::witness_html`).

use super::{Cause, WitnessMode};
use crate::checker::Verdict;
use crate::plural::counted;
use crate::size::human_bytes;
use serde::Serialize;
use serde_json::Value;

/// A history op as shown in a witness.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WitnessOp {
    /// Position of the invoke in the history (0-based; equals `Op::index` in dense histories).
    pub index: u64,
    /// Position of the completion, if any.
    pub completion_index: Option<u64>,
    /// Completion type: `ok`, `fail`, `info`, or `none` when the op never completed.
    pub outcome: String,
    /// Issuing process.
    pub process: String,
    /// Function name.
    pub f: String,
    /// Key, for independent-key histories.
    pub key: Option<String>,
    /// Observed value (completion value for ok ops, invoke value otherwise).
    pub value: Value,
    /// Invoke time, seconds since the run started.
    pub invoke_time_s: f64,
    /// Completion time in seconds, if completed.
    pub complete_time_s: Option<f64>,
    /// The model's description of the op.
    pub description: String,
}

/// One step of a linearization.
#[derive(Debug, Clone, Serialize)]
pub struct WitnessStep {
    /// The op linearized at this step.
    pub op: WitnessOp,
    /// Model state after it.
    pub state_after: String,
}

/// Why a part is not linearizable.
#[derive(Debug, Clone, Serialize)]
pub struct Witness {
    /// The op that could not be linearized at the furthest point any linearization reached.
    pub op: WitnessOp,
    /// Length of the longest linearizable prefix found (ending at that point).
    pub prefix_len: usize,
    /// The last `prefix_tail_len` steps of that prefix, in linearization order.
    pub prefix_tail: Vec<WitnessStep>,
    /// Model state after the prefix.
    pub last_state: String,
    /// Essential ops found by delta debugging (history order), if run: even if every other read
    /// in the window is ignored and every other write may have taken effect at any time after its
    /// invoke or never, these ops cannot be linearized.
    pub minimized: Option<Vec<WitnessOp>>,
    /// True when minimization ran to a 1-minimal result within its budget.
    pub minimized_complete: bool,
    /// Searches minimization ran (each on a relaxed sub-history).
    pub minimize_searches: usize,
    /// Time spent building this witness (prefix replay and minimization), in milliseconds.
    pub time_ms: u64,
}

/// Outcome for one independent part.
#[derive(Debug, Clone, Serialize)]
pub struct PartSummary {
    /// The key (`None` for ops without a key).
    pub key: Option<String>,
    /// Model ops in the part (after dropping ops that impose nothing).
    pub op_count: usize,
    /// History position of the part's first op (parts are in this order). Not serialized.
    #[serde(skip)]
    pub first_index: u64,
    /// How many of them are pending (info / never completed).
    pub pending_count: usize,
    /// Verdict for this part.
    pub verdict: Verdict,
    /// Why the verdict is unknown, if it is.
    pub reason: Option<String>,
    /// What stopped the search of an unknown part.
    pub unknown_cause: Option<Cause>,
    /// Search (verdict) time in milliseconds; the witness's own time is `witness.time_ms`.
    pub time_ms: u64,
    /// Cache entries (distinct configurations visited).
    pub cache_entries: usize,
    /// Approximate peak cache size in bytes.
    pub cache_bytes: usize,
    /// Witness, for an invalid part.
    pub witness: Option<Witness>,
    /// For a valid part checked with `LinearConfig::keep_linearization`: the history positions
    /// of the invokes of one linearization, in order (every completed op that imposes
    /// something, and the pending ops it let take effect). Not serialized.
    #[serde(skip)]
    pub linearization: Option<Vec<u64>>,
    /// For a valid part checked with `LinearConfig::keep_end`: how to start a history in a
    /// state one of its linearizations ends in — the found one's first, then others found
    /// near it (`linear::ends_of`) — when the model can say; empty otherwise. Not serialized.
    #[serde(skip)]
    pub ends: Vec<crate::model::StandIn>,
}

/// Result of a linearizability check.
#[derive(Debug, Clone, Serialize)]
pub struct LinearResult {
    /// Model name.
    pub model: String,
    /// Merged verdict over all parts.
    pub verdict: Verdict,
    /// History-level reason for an unknown verdict (ill-formed input), if any.
    pub reason: Option<String>,
    /// Total model ops over all parts.
    pub op_count: usize,
    /// Wall time in milliseconds (verdict and witnesses).
    pub time_ms: u64,
    /// Wall time of the verdict phase (every part searched), in milliseconds.
    pub verdict_time_ms: u64,
    /// Wall time of the witness phase (witnesses of the invalid parts), in milliseconds.
    pub witness_time_ms: u64,
    /// How the witnesses were built.
    pub witness_mode: WitnessMode,
    /// When the first invalid part was found, in milliseconds from the start of the check: the
    /// time to the verdict, when it is invalid.
    pub first_invalid_ms: Option<u64>,
    /// Unknown parts counted by what stopped them, and the budgets that did.
    pub undecided: Undecided,
    /// Per-part summaries, in order of the parts' first appearance in the history.
    pub parts: Vec<PartSummary>,
}

/// The parts a check left unknown, by cause, with the budgets behind them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Undecided {
    /// Parts left undecided once an invalid part settled the verdict (`Cause::Settled`).
    pub settled: usize,
    /// Parts stopped by the memory budget (`Cause::Memory`).
    pub memory: usize,
    /// Parts stopped by the time limit (`Cause::TimeLimit`).
    pub time_limit: usize,
    /// Parts unknown for another reason (`Cause::Other`).
    pub other: usize,
    /// Every part decided (`--all-keys`), or the verdict first (`verdict-first`).
    pub decide: &'static str,
    /// The time the undecided parts had after the verdict was settled, in milliseconds.
    pub settled_budget_ms: Option<u64>,
    /// The check's memory budget, in bytes.
    pub memory_budget_bytes: Option<usize>,
    /// The check's time limit, in milliseconds.
    pub time_limit_ms: Option<u64>,
}

pub(super) fn key_label<K: std::ops::Deref<Target = str>>(k: &Option<K>) -> String {
    match k {
        Some(k) => format!("key {}", &**k),
        None => "history".to_string(),
    }
}

impl LinearResult {
    /// What a part is called in this result's text: `key` when the parts are keys.
    fn part_noun(&self) -> &'static str {
        if self.parts.iter().any(|p| p.key.is_some()) {
            "key"
        } else {
            "part"
        }
    }

    /// Why parts were left unknown, one clause per cause, for the summary line.
    fn undecided_clauses(&self) -> Vec<String> {
        let u = &self.undecided;
        let noun = self.part_noun();
        let mut out = Vec::new();
        if u.settled > 0 {
            let first = self.first_invalid_ms.unwrap_or(0);
            let budget = u
                .settled_budget_ms
                .map_or(String::new(), |b| format!(" they had {b} ms more;"));
            out.push(format!(
                "{} left undecided: the first invalid {noun} settled the verdict after {first} ms;{budget} --all-keys decides every {noun}",
                counted(u.settled, noun)
            ));
        }
        if u.memory > 0 {
            let budget = u
                .memory_budget_bytes
                .map_or("the memory budget".to_string(), |b| {
                    format!("the memory budget of {}", human_bytes(b))
                });
            out.push(format!(
                "{} unknown: {budget} was exhausted (--memory sets it)",
                counted(u.memory, noun)
            ));
        }
        if u.time_limit > 0 {
            let limit = u.time_limit_ms.map_or("the time limit".to_string(), |t| {
                format!("the time limit of {} s", t as f64 / 1000.0)
            });
            out.push(format!(
                "{} unknown: {limit} passed (--time-limit sets it)",
                counted(u.time_limit, noun)
            ));
        }
        if u.other > 0 {
            out.push(format!("{} unknown", counted(u.other, noun)));
        }
        out
    }

    /// One-line summary.
    pub fn summary(&self) -> String {
        let count = |v: Verdict| self.parts.iter().filter(|p| p.verdict == v).count();
        let mut s = format!(
            "{}: {} in {} ({} valid, {} invalid, {} unknown) in {} ms",
            self.verdict,
            counted(self.op_count, "op"),
            counted(self.parts.len(), "part"),
            count(Verdict::Valid),
            count(Verdict::Invalid),
            count(Verdict::Unknown),
            self.time_ms
        );
        if count(Verdict::Invalid) > 0 {
            s.push_str(&format!(
                " (verdict {} ms, witnesses {} ms, --witness {})",
                self.verdict_time_ms,
                self.witness_time_ms,
                self.witness_mode.name()
            ));
        }
        for clause in self.undecided_clauses() {
            s.push_str(&format!("; {clause}"));
        }
        if let Some(r) = &self.reason {
            s.push_str(&format!("; {r}"));
        }
        s
    }

    /// A short human explanation for terminal output: the summary, then one line per invalid part
    /// and one per unknown part (the parts left undecided once the verdict was settled in one).
    pub fn explain(&self) -> String {
        let mut out = vec![self.summary()];
        let mut settled: Vec<String> = Vec::new();
        for p in &self.parts {
            match (p.verdict, &p.witness) {
                (Verdict::Invalid, Some(w)) => {
                    let o = &w.op;
                    let at = match o.complete_time_s {
                        Some(t) => format!("{:.3} s", t),
                        None => format!("{:.3} s (never completed)", o.invoke_time_s),
                    };
                    out.push(format!(
                        "{}: cannot linearize op {} (process {} {} at {}); last consistent state: {} after {} ops",
                        key_label(&p.key),
                        o.index,
                        o.process,
                        o.description,
                        at,
                        w.last_state,
                        w.prefix_len
                    ));
                    if let Some(m) = &w.minimized {
                        const SHOWN: usize = 12;
                        let mut ops: Vec<String> = m
                            .iter()
                            .take(SHOWN)
                            .map(|o| {
                                format!("op {} (process {} {})", o.index, o.process, o.description)
                            })
                            .collect();
                        if m.len() > SHOWN {
                            ops.push(format!("… {} more", m.len() - SHOWN));
                        }
                        let how = if w.minimized_complete {
                            "minimal"
                        } else {
                            "reduced, budget ran out"
                        };
                        out.push(format!("  essential ops ({how}): {}", ops.join("; ")));
                    }
                }
                (Verdict::Unknown, _) if p.unknown_cause == Some(Cause::Settled) => {
                    settled.push(key_label(&p.key));
                }
                (Verdict::Unknown, _) => out.push(format!(
                    "{}: unknown ({})",
                    key_label(&p.key),
                    p.reason.as_deref().unwrap_or("no reason recorded")
                )),
                _ => {}
            }
        }
        if !settled.is_empty() {
            const SHOWN: usize = 10;
            let mut names = settled[..settled.len().min(SHOWN)].join(", ");
            if settled.len() > SHOWN {
                names.push_str(&format!(", … {} more", settled.len() - SHOWN));
            }
            out.push(format!("not decided once the verdict was settled: {names}"));
        }
        out.join("\n")
    }
}
