//! Client ops paired into the latency and throughput charts' samples, op by op, in memory
//! bounded by the run's concurrency once a history is big.
//!
//! Owns the pairing (per process: an invoke, then that process's next completion; invokes that
//! never complete and stray completions are skipped), the `f` series (at most [`MAX_F_SERIES`],
//! the rest "other") and the switch to density: past [`DENSITY_FROM`] completed ops the samples
//! are folded into a [`Summary`] (`plots::density`) and dropped, so a 100M-op history costs the
//! charts a few MiB, not a vector of every op. Does not own drawing (`plots`, `plots::density`).

use super::density::Summary;
use super::{MAX_F_SERIES, Outcome};
use crate::history::{History, Name, Op, OpType, Process};
use rustc_hash::FxHashMap;

/// Completed client ops from which the charts draw a density (a 2-D histogram of latency
/// against time, quantile lines from it, the slowest ops as points) instead of a point or a
/// sorted window per op. Below it every chart is exact.
pub const DENSITY_FROM: usize = 250_000;

/// One completed client op.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sample {
    pub(super) f_idx: usize,
    pub(super) invoke_s: f64,
    pub(super) complete_s: f64,
    pub(super) latency_ms: f64,
    pub(super) outcome: Outcome,
}

/// Completed client ops plus the `f` names (index = `Sample::f_idx`) and the history end.
pub struct Samples {
    /// Every completed op, when there are at most [`DENSITY_FROM`]; empty past it.
    pub(super) samples: Vec<Sample>,
    /// Past [`DENSITY_FROM`] completed ops: all of them, folded.
    pub(super) summary: Option<Box<Summary>>,
    /// Completed client ops in all.
    pub(super) total: usize,
    pub(super) f_names: Vec<String>,
    pub(super) end_s: f64,
}

impl Samples {
    /// No completed client op at all.
    pub(super) fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Completed client ops, drawn as a density (true past [`DENSITY_FROM`]).
    pub fn dense(&self) -> bool {
        self.summary.is_some()
    }
}

/// Builds [`Samples`] from ops pushed in history order: a history in memory
/// ([`samples`]) or one streamed from a file, op by op.
pub struct SampleBuilder {
    open: FxHashMap<u64, (Name, u64)>,
    f_index: FxHashMap<Name, usize>,
    f_names: Vec<String>,
    other: bool,
    samples: Vec<Sample>,
    summary: Option<Box<Summary>>,
    total: usize,
    end_ns: u64,
    dense_from: usize,
}

impl Default for SampleBuilder {
    fn default() -> Self {
        SampleBuilder::with_dense_from(DENSITY_FROM)
    }
}

impl SampleBuilder {
    /// A builder that switches to density past `dense_from` completed ops (tests use small ones).
    pub fn with_dense_from(dense_from: usize) -> SampleBuilder {
        SampleBuilder {
            open: FxHashMap::default(),
            f_index: FxHashMap::default(),
            f_names: Vec::new(),
            other: false,
            samples: Vec::new(),
            summary: None,
            total: 0,
            end_ns: 0,
            dense_from,
        }
    }

    /// Take the next op of the history.
    pub fn push(&mut self, op: &Op) {
        self.end_ns = self.end_ns.max(op.time_ns);
        let Process::Client(p) = op.process else {
            return;
        };
        let outcome = match op.op_type {
            OpType::Invoke => {
                self.open.insert(p, (op.f.clone(), op.time_ns));
                return;
            }
            OpType::Ok => Outcome::Ok,
            OpType::Fail => Outcome::Fail,
            OpType::Info => Outcome::Info,
        };
        let Some((f, invoke_ns)) = self.open.remove(&p) else {
            return;
        };
        let f_idx = match self.f_index.get(&f) {
            Some(&i) => i,
            None if self.f_names.len() < MAX_F_SERIES => {
                self.f_names.push(f.to_string());
                self.f_index.insert(f, self.f_names.len() - 1);
                self.f_names.len() - 1
            }
            None => {
                self.other = true;
                MAX_F_SERIES
            }
        };
        let sample = Sample {
            f_idx,
            invoke_s: invoke_ns as f64 / 1e9,
            complete_s: op.time_ns as f64 / 1e9,
            latency_ms: op.time_ns.saturating_sub(invoke_ns) as f64 / 1e6,
            outcome,
        };
        self.total += 1;
        match &mut self.summary {
            Some(summary) => summary.add(&sample),
            None => {
                self.samples.push(sample);
                if self.samples.len() > self.dense_from {
                    let mut summary = Box::new(Summary::new());
                    for s in &self.samples {
                        summary.add(s);
                    }
                    self.samples = Vec::new();
                    self.summary = Some(summary);
                }
            }
        }
    }

    /// The samples of every op pushed.
    pub fn finish(mut self) -> Samples {
        if self.other {
            self.f_names.push("other".into());
        }
        Samples {
            samples: self.samples,
            summary: self.summary,
            total: self.total,
            f_names: self.f_names,
            end_s: self.end_ns as f64 / 1e9,
        }
    }
}

/// The samples of `history`'s client ops.
pub(super) fn samples(history: &History) -> Samples {
    let mut b = SampleBuilder::default();
    for op in &history.ops {
        b.push(op);
    }
    b.finish()
}
