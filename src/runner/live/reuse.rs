//! The end-of-run check's use of what live checking decided ([`Reuse`]): which keys it keeps,
//! the history left to search, and merging the two. Owns the rule for a key found valid live
//! that got ops since (a final read): its live ops are replaced by the linearization live
//! checking found, followed by the later ops, and only when that fails is the key searched whole.
//! Does not own live checking itself (`live`) or the composition of checkers (`results`).

use super::remap_positions;
use crate::checker::Verdict;
use crate::checker::linear::{LinearResult, PartSummary};
use crate::history::{History, Op, OpType, Process};
use std::collections::{HashMap, HashSet};

/// The final check's use of the live verdicts: the keys decided invalid live, and the keys found
/// valid live that got no op since, are left out of the search and their parts put back into
/// its result. An invalid key stays invalid whatever came later (a history with a
/// non-linearizable prefix stays non-linearizable).
///
/// A key found valid live that got more ops (a final read) is *extended*: the search sees, in
/// place of its live ops, one after another, the ops of the linearization live checking found
/// (each invoke followed at once by its completion), then the later ops as they happened. Every
/// later op began after every live op had ended (the key was retired), so a linearization of
/// that stand-in is one of the key's real history: valid there means valid. Anything else is not
/// taken as a verdict: the key is searched whole again ([`Reuse::settle`]).
#[derive(Debug, Clone, Default)]
pub struct Reuse {
    /// The parts decided live that the final check keeps (positions of the run's history).
    pub parts: Vec<PartSummary>,
    /// How many of them are valid.
    pub valid: usize,
    /// Keys found valid live that got ops since.
    pub extended: Vec<Extended>,
    /// How many extended keys the final check confirmed valid without searching their live ops
    /// again (set by [`Reuse::settle`]).
    pub confirmed: usize,
}

/// A key found valid live that got ops since (see [`Reuse`]).
#[derive(Debug, Clone)]
pub struct Extended {
    key: String,
    /// Positions (in the run's history) of the key's events live checking saw.
    live: HashSet<usize>,
    /// The last of them: where the stand-in goes.
    last: usize,
    /// The live linearization: each op's invoke position and its completion's, in order.
    order: Vec<(usize, Option<usize>)>,
    /// How many of those ops are pending (no ok or fail completion).
    pending: usize,
    /// The live part: its op counts.
    part: PartSummary,
}

impl Reuse {
    /// What a live record leaves to reuse for `history`, the run's whole history.
    pub fn of(record: &super::LiveRecord, history: &History) -> Reuse {
        let seen: HashMap<&str, usize> = record
            .valid_parts
            .iter()
            .filter_map(|(p, n)| p.key.as_deref().map(|k| (k, *n)))
            .collect();
        // Per key found valid live: its client events' positions, in order.
        let mut events: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, o) in history
            .ops
            .iter()
            .enumerate()
            .filter(|(_, o)| o.is_client())
        {
            if let Some(k) = o.key.as_deref().filter(|k| seen.contains_key(k)) {
                events.entry(k).or_default().push(i);
            }
        }
        let completions = history.completions().ok();
        let mut unchanged = Vec::new();
        let mut extended = Vec::new();
        for (part, n) in &record.valid_parts {
            let Some(key) = part.key.as_deref() else {
                continue;
            };
            let now = events.get(key).map_or(&[][..], Vec::as_slice);
            if now.len() == *n {
                unchanged.push(part.clone());
            } else if now.len() > *n
                && let Some(e) = Extended::new(key, part, &now[..*n], history, completions.as_ref())
            {
                extended.push(e);
            }
        }
        Reuse {
            valid: unchanged.len(),
            parts: record
                .invalid_parts
                .iter()
                .cloned()
                .chain(unchanged)
                .collect(),
            extended,
            confirmed: 0,
        }
    }

    /// The keys decided live.
    pub fn keys(&self) -> HashSet<&str> {
        self.parts.iter().filter_map(|p| p.key.as_deref()).collect()
    }

    /// `history` without the client ops on keys decided live, the live ops of extended keys
    /// replaced by their stand-ins, and each kept op's position in `history`.
    pub fn remaining(&self, history: &History) -> (History, Vec<u64>) {
        let keys = self.keys();
        let decided = |o: &Op| o.is_client() && o.key.as_deref().is_some_and(|k| keys.contains(k));
        let stand_in: HashMap<usize, &Extended> =
            self.extended.iter().map(|e| (e.last, e)).collect();
        let live: HashSet<usize> = self
            .extended
            .iter()
            .flat_map(|e| e.live.iter().copied())
            .collect();
        // A stand-in op runs as a process of its own: its thread may already have an op open on
        // another key where the stand-in is placed, and pairing goes by process. The search
        // uses processes only to pair events.
        let mut fresh = history
            .ops
            .iter()
            .filter_map(|o| match o.process {
                Process::Client(p) => Some(p),
                Process::Nemesis => None,
            })
            .max()
            .map_or(0, |p| p + 1);
        let mut ops = Vec::with_capacity(history.ops.len());
        let mut orig = Vec::with_capacity(history.ops.len());
        let mut lines = Vec::new();
        let mut keep = |i: usize, process: Option<u64>| {
            let mut o = history.ops[i].clone();
            if let Some(p) = process {
                o.process = Process::Client(p);
            }
            ops.push(o);
            orig.push(i as u64);
            if let Some(l) = history.line_of(i) {
                lines.push(l);
            }
        };
        for (i, o) in history.ops.iter().enumerate() {
            if let Some(e) = stand_in.get(&i) {
                for &(invoke, done) in &e.order {
                    keep(invoke, Some(fresh));
                    if let Some(c) = done {
                        keep(c, Some(fresh));
                    }
                    fresh += 1;
                }
            }
            if decided(o) || live.contains(&i) {
                continue;
            }
            keep(i, None);
        }
        let mut rest = History::from_ops_at_lines(ops, lines);
        rest.warnings = history.warnings.clone();
        rest.cut_short = history.cut_short.clone();
        rest.invokes_synthesized = history.invokes_synthesized;
        (rest, orig)
    }

    /// The result of searching [`Reuse::remaining`] (positions mapped back through `orig`)
    /// merged with the parts decided live, parts in order of their first op in `history`.
    /// A rest that could not be checked (an ill-formed history) stays as it is, unknown with
    /// its reason, as `shakedown check` would say; a rest without client ops (every key decided
    /// live) adds nothing.
    pub fn merge(
        &self,
        mut rest: LinearResult,
        orig: &[u64],
        history: &History,
        rest_has_client_ops: bool,
    ) -> LinearResult {
        remap_positions(&mut rest, orig);
        // (With stand-ins the rest's parts are in the order of the stand-ins: sorted below.)
        if self.parts.is_empty() && self.extended.is_empty() {
            return rest;
        }
        if rest.reason.is_some() {
            if rest_has_client_ops {
                return rest;
            }
            rest.reason = None;
        }
        let mut first_of: HashMap<&str, usize> = HashMap::new();
        for (i, o) in history.ops.iter().enumerate() {
            if let Some(k) = o.key.as_deref() {
                first_of.entry(k).or_insert(i);
            }
        }
        rest.parts.extend(self.parts.iter().cloned());
        rest.parts.sort_by_key(|p| {
            p.key
                .as_deref()
                .and_then(|k| first_of.get(k).copied())
                .unwrap_or(usize::MAX)
        });
        rest.op_count = rest.parts.iter().map(|p| p.op_count).sum();
        rest.verdict = rest
            .parts
            .iter()
            .fold(Verdict::Valid, |v, p| v.merge(p.verdict));
        if self.parts.iter().any(|p| p.verdict == Verdict::Invalid) {
            // Decided before the check began.
            rest.first_invalid_ms = Some(0);
        }
        rest
    }

    /// After [`Reuse::merge`] of a check of [`Reuse::remaining`]: the extended keys found valid
    /// get their whole op counts back (the stand-in leaves out what the live linearization did
    /// not need) and are counted in `confirmed`. When every extended key was valid, `None`: the
    /// result stands. Otherwise (a key not valid there, or a rest that could not be checked) the
    /// reuse for a second check, which keeps every part decided so far and searches the other
    /// extended keys whole.
    pub fn settle(&mut self, merged: &mut LinearResult) -> Option<Reuse> {
        if self.extended.is_empty() {
            return None;
        }
        let by_key: HashMap<&str, &Extended> =
            self.extended.iter().map(|e| (e.key.as_str(), e)).collect();
        let mut found = HashSet::new();
        let mut doubtful = HashSet::new();
        for p in &mut merged.parts {
            let Some(e) = p.key.as_deref().and_then(|k| by_key.get(k)) else {
                continue;
            };
            found.insert(e.key.as_str());
            if p.verdict != Verdict::Valid {
                doubtful.insert(e.key.clone());
                continue;
            }
            p.op_count = e.part.op_count + p.op_count.saturating_sub(e.order.len());
            p.pending_count = e.part.pending_count + p.pending_count.saturating_sub(e.pending);
            p.linearization = None;
        }
        merged.op_count = merged.parts.iter().map(|p| p.op_count).sum();
        let unchecked = merged.reason.is_some() || found.len() < self.extended.len();
        if unchecked {
            // Nothing of this check is taken: the extended keys are searched whole.
            self.confirmed = 0;
            return Some(Reuse {
                extended: Vec::new(),
                confirmed: 0,
                ..self.clone()
            });
        }
        self.confirmed = self.extended.len() - doubtful.len();
        if doubtful.is_empty() {
            return None;
        }
        let kept: Vec<PartSummary> = merged
            .parts
            .iter()
            // Keyless parts are searched again (`remaining` keeps their ops).
            .filter(|p| p.key.as_ref().is_some_and(|k| !doubtful.contains(k)))
            .cloned()
            .collect();
        Some(Reuse {
            valid: self.valid,
            parts: kept,
            extended: Vec::new(),
            confirmed: self.confirmed,
        })
    }
}

impl Extended {
    /// The stand-in of `key`, valid live as `part` over its events at `live` (its first ones in
    /// `history`); `None` when the part's linearization is missing or does not name live
    /// invokes of the key (then the key is searched whole).
    fn new(
        key: &str,
        part: &PartSummary,
        live: &[usize],
        history: &History,
        completions: Option<&crate::history::Completions>,
    ) -> Option<Extended> {
        let completions = completions?;
        let live_set: HashSet<usize> = live.iter().copied().collect();
        let mut order = Vec::new();
        let mut pending = 0;
        for &p in part.linearization.as_ref()? {
            let p = usize::try_from(p).ok()?;
            let o = history.ops.get(p)?;
            if !live_set.contains(&p) || o.op_type != OpType::Invoke || !o.is_client() {
                return None;
            }
            // An info completion leaves the op pending: it stays one in the stand-in.
            let done = completions.of(p).filter(|c| live_set.contains(c));
            if !done.is_some_and(|c| matches!(history.ops[c].op_type, OpType::Ok | OpType::Fail)) {
                pending += 1;
            }
            order.push((p, done));
        }
        Some(Extended {
            key: key.to_string(),
            last: *live.last()?,
            live: live_set,
            order,
            pending,
            part: part.clone(),
        })
    }
}
