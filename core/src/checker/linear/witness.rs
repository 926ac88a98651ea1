//! Witnesses of invalid parts: the op that blocks the deepest linearization, the tail of the
//! longest linearizable prefix, and a minimized set of essential ops.
//!
//! Owns turning a search's `Blocked` point into a `Witness` and the minimization. Does not own the
//! search (`linear::search`) or the result types (`linear`).

use super::search::{Blocked, Limits, Memory, Outcome, PartOp, Pruning, Stop, search};
use super::{Witness, WitnessOp, WitnessStep};
use crate::history::{History, Op, OpType};
use crate::model::Model;
use std::time::{Duration, Instant};

pub(super) fn witness_op<M: Model>(model: &M, history: &History, p: &PartOp<M::Op>) -> WitnessOp {
    let inv: &Op = &history.ops[p.invoke_idx()];
    let comp = p.completion_idx().map(|j| &history.ops[j]);
    let outcome = match comp {
        Some(c) => match c.op_type {
            OpType::Ok => "ok",
            OpType::Fail => "fail",
            OpType::Info => "info",
            OpType::Invoke => "invoke",
        },
        None => "none",
    };
    let value = match comp {
        Some(c) if c.op_type == OpType::Ok => c.value.clone(),
        _ => inv.value.clone(),
    };
    WitnessOp {
        index: p.invoke_idx() as u64,
        completion_index: p.completion_idx().map(|j| j as u64),
        outcome: outcome.to_string(),
        process: inv.process.to_string(),
        f: inv.f.to_string(),
        key: inv.key.clone().map(String::from),
        value,
        invoke_time_s: inv.time_ns as f64 / 1e9,
        complete_time_s: comp.map(|c| c.time_ns as f64 / 1e9),
        description: model.describe_op(&p.op),
    }
}

/// States to probe op relations with: the initial state and the distinct states along the blocked
/// search's deepest prefix (at most 64).
fn sample_states<M: Model>(model: &M, ops: &[PartOp<M::Op>], blocked: &Blocked) -> Vec<M::State> {
    let mut s = model.init();
    let mut out = vec![s.clone()];
    for &id in &blocked.prefix {
        match model.step(&s, &ops[id as usize].op) {
            Some(n) => s = n,
            None => break,
        }
        if out.len() < 64 && !out.contains(&s) {
            out.push(s.clone());
        }
    }
    out
}

/// How `x` bears on `b`, probed on sample states: 0 when applying `x` first lets `b` step where it
/// could not, 1 when it stops `b` stepping where it could, 2 otherwise.
fn relation<M: Model>(model: &M, samples: &[M::State], x: &M::Op, b: &M::Op) -> u8 {
    let mut rank = 2;
    for s in samples {
        let Some(after) = model.step(s, x) else {
            continue;
        };
        match (model.step(s, b).is_some(), model.step(&after, b).is_some()) {
            (false, true) => return 0,
            (true, false) => rank = 1,
            _ => {}
        }
    }
    rank
}

/// What minimization found.
pub(super) struct Minimized {
    /// Essential ops, part-local ids in history order.
    pub(super) ids: Vec<usize>,
    /// True when `ids` is 1-minimal: relaxing any one of them was shown to make the part
    /// linearizable, within the budget.
    pub(super) complete: bool,
    /// Searches run.
    pub(super) searches: usize,
}

/// Minimize an invalid part into a small set of *essential* ops, within `budget` and the check's
/// `memory` budget.
///
/// Only relaxations are tried, so the result never blames ops for a violation that removing other
/// ops created: a non-essential read-only op is dropped, a non-essential mutating op becomes pending
/// (it may have taken effect at any time after its invoke, or never). A candidate set E is tested
/// by searching E plus the relaxed rest, cut at E's last return (ops invoked later can only be
/// linearized after every op of E, so they cannot help). The search already knows where it got
/// stuck, so the candidates are first cut to ops invoked before the blocked op's return, then grown
/// from the blocked op outwards (the blocked op alone, then with its 1, 2, 4, … nearest completed
/// ops in time) until the set is invalid; delta debugging then takes that set to 1-minimal.
pub(super) fn minimize<M: Model>(
    model: &M,
    ops: &[PartOp<M::Op>],
    blocked: &Blocked,
    budget: Duration,
    memory: &Memory,
) -> Minimized {
    let deadline = Instant::now() + budget;
    let stop = Stop::never(Instant::now());
    // Each search gets a slice of the budget; one that runs out counts as "not shown invalid"
    // (its candidate is kept unrelaxed) and the result is then not claimed 1-minimal.
    let per_check = (budget / 16).max(Duration::from_millis(10));
    let mut searches = 0usize;
    let mut undecided = false;
    let mut essential_mark = vec![false; ops.len()];
    let mut sub: Vec<PartOp<M::Op>> = Vec::new();
    let mut invalid = |essential: &[usize]| -> bool {
        let horizon = essential
            .iter()
            .filter_map(|&i| ops[i].ret())
            .max()
            .unwrap_or(0);
        for &i in essential {
            essential_mark[i] = true;
        }
        sub.clear();
        for (i, o) in ops.iter().enumerate() {
            if o.call() > horizon {
                break;
            }
            if essential_mark[i] {
                sub.push(o.clone());
            } else if !model.is_read_only(&o.op) {
                let mut o = o.clone();
                o.set_pending();
                sub.push(o);
            }
        }
        for &i in essential {
            essential_mark[i] = false;
        }
        let limits = Limits {
            deadline: Some((Instant::now() + per_check).min(deadline)),
            settled: &stop,
            memory,
            max_entries: None,
        };
        searches += 1;
        match search(model, &sub, &limits, false, Pruning::Dominance).0 {
            Outcome::Invalid(_) => true,
            Outcome::Valid(_) => false,
            Outcome::Aborted(..) | Outcome::Unfinished => {
                undecided = true;
                false
            }
        }
    };
    let b = blocked.op;
    let blocked_ret = ops[b].ret().unwrap_or(u64::MAX);
    let completed = |keep: &dyn Fn(&PartOp<M::Op>) -> bool| -> Vec<usize> {
        (0..ops.len())
            .filter(|&i| ops[i].ret().is_some() && keep(&ops[i]))
            .collect()
    };
    let mut cands = completed(&|o| o.call() <= blocked_ret);
    if !invalid(&cands) {
        cands = completed(&|_| true);
    }
    // Grow from the blocked op: first the ops that can enable it, then those that can disable
    // it, then the rest; within each, nearest in time first (overlapping it, then returned just
    // before).
    let mut cur = cands.clone();
    if ops[b].ret().is_some() && cands.contains(&b) {
        let call = ops[b].call();
        let samples = sample_states(model, ops, blocked);
        let mut near: Vec<usize> = cands.iter().copied().filter(|&i| i != b).collect();
        let rank: Vec<u8> = (0..ops.len())
            .map(|i| relation(model, &samples, &ops[i].op, &ops[b].op))
            .collect();
        near.sort_by_key(|&i| {
            (
                rank[i],
                call.saturating_sub(ops[i].ret().unwrap_or(u64::MAX)),
                i,
            )
        });
        let mut k = 0usize;
        loop {
            if Instant::now() >= deadline {
                break;
            }
            if k >= near.len() {
                break;
            }
            let mut e: Vec<usize> = near[..k].to_vec();
            e.push(b);
            e.sort_unstable();
            if invalid(&e) {
                cur = e;
                break;
            }
            k = if k == 0 { 1 } else { k * 2 };
        }
    }
    // Delta debugging (ddmin) to 1-minimal.
    let mut gran = 2usize;
    let complete = loop {
        if cur.len() < 2 {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
        let chunk = cur.len().div_ceil(gran);
        let mut reduced = false;
        let mut start = 0;
        while start < cur.len() {
            if Instant::now() >= deadline {
                break;
            }
            let end = (start + chunk).min(cur.len());
            let cand: Vec<usize> = cur[..start].iter().chain(&cur[end..]).copied().collect();
            if invalid(&cand) {
                cur = cand;
                gran = (gran - 1).max(2);
                reduced = true;
                break;
            }
            start = end;
        }
        if Instant::now() >= deadline && !reduced {
            break false;
        }
        if !reduced {
            if chunk <= 1 {
                break true;
            }
            gran = (gran * 2).min(cur.len());
        }
    };
    Minimized {
        ids: cur,
        complete: complete && !undecided,
        searches,
    }
}

/// The witness of an invalid part: replay the blocked search's prefix (keeping its last
/// `prefix_tail_len` steps), then minimize within `minimize` (none: no minimization).
pub(super) fn build_witness<M: Model>(
    model: &M,
    history: &History,
    ops: &[PartOp<M::Op>],
    blocked: &Blocked,
    prefix_tail_len: usize,
    minimize: Option<(Duration, &Memory)>,
) -> Witness {
    let t0 = Instant::now();
    let mut state = model.init();
    let mut steps = Vec::with_capacity(blocked.prefix.len());
    for &id in &blocked.prefix {
        let p = &ops[id as usize];
        match model.step(&state, &p.op) {
            Some(s) => state = s,
            None => break,
        }
        steps.push((id as usize, model.describe_state(&state)));
    }
    let tail_from = steps.len().saturating_sub(prefix_tail_len);
    let prefix_tail = steps[tail_from..]
        .iter()
        .map(|(id, s)| WitnessStep {
            op: witness_op(model, history, &ops[*id]),
            state_after: s.clone(),
        })
        .collect();
    let (minimized, minimized_complete, minimize_searches) = match minimize {
        Some((budget, memory)) => {
            let m = self::minimize(model, ops, blocked, budget, memory);
            let w = m
                .ids
                .iter()
                .map(|&i| witness_op(model, history, &ops[i]))
                .collect();
            (Some(w), m.complete, m.searches)
        }
        None => (None, false, 0),
    };
    Witness {
        op: witness_op(model, history, &ops[blocked.op]),
        prefix_len: steps.len(),
        prefix_tail,
        last_state: model.describe_state(&state),
        minimized,
        minimized_complete,
        minimize_searches,
        time_ms: t0.elapsed().as_millis() as u64,
    }
}
