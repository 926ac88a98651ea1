//! The session checker in parts ([`SessionParts`]): a history given a few keys at a time (the
//! streamed check's batches), each part walked as the whole check walks it and folded into a
//! small summary, and at the end the [`SessionResult`] that [`check_sessions`] of the whole
//! history gives, field for field. Owns the folding and what it keeps; does not own the walk
//! (`check`), reading versions or the auto choice of source (`versions`, [`SourceSniff`]).
//!
//! # Why parts are exact
//!
//! Everything the walk decides is per key: a session's bounds are per (session, key), versions
//! are derived per key (list-append: from the key's own reads), stale reads count the key's own
//! acknowledged versions, version conflicts compare ops of one key. A session crossing keys
//! changes nothing: its bounds on one key never meet another's. What is not per key is folded:
//!
//! - counters (ops, checks, violations, keys, conflicts) add up; `sessions` is the union of the
//!   parts' session ids (a set of ids: about 16 B per distinct session);
//! - witnesses and conflicts: the whole check keeps the first `max_witnesses_per_guarantee` per
//!   guarantee (history order of the later op) and the first `max_conflicts` (history order of
//!   the op that showed it; list-append: duplicate elements first, by the key's first op, then
//!   non-prefix reads in history order). Each part keeps its own first ones, so the whole's
//!   first ones are among them: merged by that order and cut at each step;
//! - `top_keys`: per key violation counts (only keys with violations), ranked at the end as the
//!   whole check ranks them (count, then key);
//! - timelines: every width a [`TimeHistogram`] can choose is a multiple of the power of ten at
//!   or below the width chosen for any shorter span, so times are counted per slot of that power
//!   of ten (coarsened as later parts show later times: at most about 5,000 slots) and cut into
//!   the whole history's buckets at the end, given its span;
//! - stale-read percentiles: exact nearest-rank percentiles from counts: reads that were up to
//!   date cost nothing (they are zeros), a stale read costs an entry in a map of distinct
//!   versions-behind and one of distinct ms-behind (about 40 B each; one per stale read with a
//!   distinct lag at worst);
//! - the verdict, its reason and the summary from the folded counts, by the whole check's rules.
//!
//! # What a caller must guarantee
//!
//! Each part holds every op of its keys (invokes and completions, in history order, `index` the
//! position in the whole history), keys disjoint from every earlier part's (keyless client ops
//! are one key: all in one part); each process's ops alternate invoke and completion of one key
//! (what the streamed check already demands: otherwise the whole check pairs ops across keys);
//! the version source is the one the whole check uses ([`SourceSniff`] fed every op tells it at
//! the end); [`SessionParts::finish`] gets the whole history's span (largest `time_ns`).
//! A key whose first ops were added (a prefix: every op before some position) and which got
//! more later can be added again whole with [`SessionParts::add_rest`]: only what happens at
//! its later ops counts. Not with list-append versions, derived from all of a key's reads: the
//! prefix's versions may differ from the whole key's, so that is refused.
//!
//! # Later ops without the earlier ones
//!
//! When every later op of a key began after every earlier one ended (the key had retired: a
//! run's final reads), what the walk needs of the earlier ops is small ([`SessionParts::keep_ends`]
//! keeps it per key, `check::KeySeed`): each session's two bounds (the rules compare against
//! nothing else), the newest acknowledged version (a read at or above it has no earlier version
//! newer than it: stale counts only later acks) and the highest reported version with the value
//! its first reporter showed (a later report of it is compared with that; a higher one is new).
//! [`SessionParts::add_later`] walks the later ops from there. Whatever it would need beyond that
//! — a violation against an earlier op (the witness names it), a read older than the newest
//! ack, a version below the highest reported, a later op pairing with an earlier one — makes the
//! key a misfit: none of its later ops is folded, and the caller adds it whole with `add_rest`.
//! So the fold stays the whole check's, field for field.

use super::check::{Counts, KeySeed, Tally, tally_later, tally_part, verdict};
use super::*;
use crate::history::Op;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

/// Event times counted per slot of `width_ms` (a power of ten), so that any [`TimeHistogram`]
/// over a span at least as long as the times seen so far is a sum of slots.
#[derive(Debug, Clone)]
struct Slots {
    width_ms: u64,
    counts: BTreeMap<u64, u64>,
}

impl Default for Slots {
    fn default() -> Slots {
        Slots {
            width_ms: 1,
            counts: BTreeMap::new(),
        }
    }
}

impl Slots {
    fn add(&mut self, t_ns: u64) {
        *self
            .counts
            .entry(t_ns / 1_000_000 / self.width_ms)
            .or_insert(0) += 1;
    }

    /// Widen the slots to the power of ten at or below the bucket width of a history lasting
    /// `span_ns` (the whole history lasts at least that: its width is a multiple of it).
    fn coarsen(&mut self, span_ns: u64) {
        let bucket = bucket_ms(span_ns);
        let mut width = 1u64;
        while width <= bucket / 10 {
            width *= 10;
        }
        if width <= self.width_ms || !bucket.is_multiple_of(width) {
            return;
        }
        let f = width / self.width_ms;
        let mut counts = BTreeMap::new();
        for (slot, n) in std::mem::take(&mut self.counts) {
            *counts.entry(slot / f).or_insert(0) += n;
        }
        self.counts = counts;
        self.width_ms = width;
    }

    /// The histogram [`TimeHistogram::of`] gives of these times over a history of `span_ns`.
    fn histogram(mut self, span_ns: u64) -> TimeHistogram {
        self.coarsen(span_ns);
        let bucket_ms = bucket_ms(span_ns);
        let f = (bucket_ms / self.width_ms).max(1);
        let mut buckets: BTreeMap<u64, u64> = BTreeMap::new();
        for (slot, n) in self.counts {
            *buckets.entry(slot / f).or_insert(0) += n;
        }
        TimeHistogram {
            bucket_ms,
            buckets: buckets
                .into_iter()
                .map(|(b, n)| [b * bucket_ms, n])
                .collect(),
        }
    }
}

/// One guarantee so far.
#[derive(Debug, Clone, Default)]
struct GuaranteeSoFar {
    checks: u64,
    violations: u64,
    per_key: FxHashMap<Option<String>, u64>,
    /// The first witnesses in history order (of the later op), at most the configured number.
    witnesses: Vec<Violation>,
    times: Slots,
}

/// Stale reads so far, as counts: up-to-date reads are zeros, only stale ones are kept.
#[derive(Debug, Clone, Default)]
struct StaleSoFar {
    measured: u64,
    /// Stale reads by versions behind (all > 0).
    versions: BTreeMap<u64, u64>,
    /// Stale reads by ms behind (the `f64`'s bits: ordered as the values, all ≥ 0).
    ms: BTreeMap<u64, u64>,
}

/// Nearest-rank percentiles, as `check::percentiles` gives them of the sorted sample made of
/// `zeros` times `zero` then each value of `counted` (ascending, none below `zero`) its count.
fn percentiles_of_counts<T: Copy + Default>(
    zeros: u64,
    zero: T,
    counted: &[(T, u64)],
) -> Percentiles<T> {
    let n = zeros + counted.iter().map(|c| c.1).sum::<u64>();
    if n == 0 {
        return Percentiles::default();
    }
    let at_rank = |rank: u64| {
        if rank <= zeros {
            return zero;
        }
        let mut seen = zeros;
        for &(v, c) in counted {
            seen += c;
            if rank <= seen {
                return v;
            }
        }
        counted.last().map_or(zero, |c| c.0)
    };
    let at = |p: f64| {
        let rank = (p * n as f64).ceil() as u64;
        at_rank(rank.clamp(1, n))
    };
    Percentiles {
        p50: at(0.50),
        p90: at(0.90),
        p99: at(0.99),
        max: at_rank(n),
    }
}

/// Order of version conflicts in the whole check's list (see the module doc).
type ConflictOrder = (u8, u64, u64);

/// The session checker fed a history in parts (see the module doc).
#[derive(Debug, Clone)]
pub struct SessionParts {
    config: SessionConfig,
    source: VersionSource,
    counts: Counts,
    keys: u64,
    unpaired: u64,
    unseen_appends: u64,
    sessions: FxHashSet<u64>,
    guarantees: Vec<GuaranteeSoFar>,
    stale: StaleSoFar,
    conflicts: u64,
    conflict_list: Vec<(ConflictOrder, VersionConflict)>,
    conflict_times: Slots,
    /// Latest op time seen in any part.
    seen_ns: u64,
    /// Per key added, what its ops left for a walk of its later ops ([`Self::add_later`]);
    /// `None` when not kept.
    seeds: Option<FxHashMap<String, KeySeed>>,
}

impl SessionParts {
    /// An empty fold, checking with `config` and versions from `source` (fixed for every part).
    pub fn new(config: SessionConfig, source: VersionSource) -> SessionParts {
        SessionParts {
            config,
            source,
            counts: Counts::default(),
            keys: 0,
            unpaired: 0,
            unseen_appends: 0,
            sessions: FxHashSet::default(),
            guarantees: vec![GuaranteeSoFar::default(); Guarantee::ALL.len()],
            stale: StaleSoFar::default(),
            conflicts: 0,
            conflict_list: Vec::new(),
            conflict_times: Slots::default(),
            seen_ns: 0,
            seeds: None,
        }
    }

    /// Keep, for every key added from now on, what its ops left (its sessions' bounds, its
    /// newest acknowledged version, its highest reported version and value: tens of bytes per
    /// session and key), so that its later ops can be added without them ([`Self::add_later`]).
    /// Not with list-append versions (derived from all of a key's reads).
    pub fn keep_ends(&mut self) {
        if self.source != VersionSource::ListAppend {
            self.seeds.get_or_insert_with(FxHashMap::default);
        }
    }

    /// The version source every part is checked with.
    pub fn source(&self) -> VersionSource {
        self.source
    }

    /// Add a part: every op of some keys none of which was in an earlier part (see the module
    /// doc for what the caller guarantees).
    pub fn add(&mut self, ops: &[Op]) {
        let keep = self.seeds.is_some();
        let mut t = tally_part(ops, &self.config, self.source, &|_| None, keep);
        if let Some(seeds) = self.seeds.as_mut() {
            seeds.extend(std::mem::take(&mut t.seeds));
        }
        self.fold(t, ops);
    }

    /// Add the later ops of keys added before (with [`Self::keep_ends`]): every op of theirs
    /// after the ops added, each of which ended before any of these began (the key had retired;
    /// each key's ops in history order). Judged from what the earlier ops left, as the whole
    /// check judges them; what happens at them counts, as [`Self::add_rest`] would count it.
    /// Returns the keys whose later ops could not be judged so (none of theirs was added: see
    /// `check::KeySeed`), to be added with [`Self::add_rest`] instead. Once, after every part
    /// holding the keys' earlier ops: every key's end is dropped (and no more kept).
    pub fn add_later(&mut self, ops: &[Op]) -> FxHashSet<String> {
        let Some(seeds) = self.seeds.take() else {
            return ops
                .iter()
                .filter_map(|o| o.key.as_deref())
                .map(str::to_string)
                .collect();
        };
        let (config, source) = (&self.config, self.source);
        let (t, misfits) = tally_later(ops, config, source, &|k| seeds.get(k));
        if misfits.is_empty() {
            self.fold(t, ops);
            return FxHashSet::default();
        }
        // The tally holds the misfits' ops too: walk the others again. Keys are independent:
        // without the misfits the same walk finds no misfit.
        let misfits: FxHashSet<String> = misfits.into_iter().collect();
        let fit: Vec<Op> = ops
            .iter()
            .filter(|o| o.key.as_deref().is_some_and(|k| !misfits.contains(k)))
            .cloned()
            .collect();
        let (t, again) = tally_later(&fit, config, source, &|k| seeds.get(k));
        debug_assert!(again.is_empty(), "{again:?}");
        if !fit.is_empty() {
            self.fold(t, &fit);
        }
        misfits
    }

    /// Add every op of keys whose ops before `from(key)` (and none after) were added as a part
    /// before: only what happens at ops from that position on counts. Refused with list-append
    /// versions (see the module doc).
    pub fn add_rest(
        &mut self,
        ops: &[Op],
        from: &dyn Fn(Option<&str>) -> Option<u64>,
    ) -> Result<(), String> {
        if self.source == VersionSource::ListAppend {
            return Err(
                "session guarantees with list-append versions: keys touched after they were \
                 checked would be judged on versions derived from part of their reads"
                    .to_string(),
            );
        }
        let t = tally_part(ops, &self.config, self.source, from, false);
        self.fold(t, ops);
        Ok(())
    }

    fn fold(&mut self, t: Tally, ops: &[Op]) {
        self.seen_ns = ops.iter().map(|o| o.time_ns).fold(self.seen_ns, u64::max);
        self.counts.add(&t.counts);
        self.keys += t.keys;
        self.unpaired += t.unpaired;
        self.unseen_appends += t.unseen_appends;
        self.sessions.extend(t.sessions);
        let max_w = self.config.max_witnesses_per_guarantee;
        for (g, a) in self.guarantees.iter_mut().zip(t.acc) {
            g.checks += a.checks;
            g.violations += a.violations;
            for (k, n) in a.per_key {
                *g.per_key
                    .entry(t.key_names[k as usize].clone())
                    .or_insert(0) += n;
            }
            for time in a.times_ns {
                g.times.add(time);
            }
            g.times.coarsen(self.seen_ns);
            if !a.witnesses.is_empty() {
                g.witnesses.extend(a.witnesses);
                g.witnesses.sort_by_key(|w| w.later_index);
                g.witnesses.truncate(max_w);
            }
        }
        for (&vb, &ms) in t.stale.versions_behind.iter().zip(&t.stale.ms_behind) {
            self.stale.measured += 1;
            if vb > 0 {
                *self.stale.versions.entry(vb).or_insert(0) += 1;
                *self.stale.ms.entry(ms.to_bits()).or_insert(0) += 1;
            }
        }
        self.conflicts += t.conflicts.count;
        for time in t.conflicts.times_ns {
            self.conflict_times.add(time);
        }
        self.conflict_times.coarsen(self.seen_ns);
        if !t.conflicts.list.is_empty() {
            self.conflict_list
                .extend(t.conflicts.order.into_iter().zip(t.conflicts.list));
            self.conflict_list.sort_by_key(|c| c.0);
            self.conflict_list.truncate(self.config.max_conflicts);
        }
    }

    /// The result of the whole history, given the source the whole check would choose (with
    /// why) and the whole history's span (its largest `time_ns`). `Err` when that source is not
    /// the one the parts were checked with.
    pub fn finish(
        self,
        (source, source_reason): (VersionSource, String),
        span_ns: u64,
    ) -> Result<SessionResult, String> {
        if source != self.source {
            return Err(format!(
                "the whole history's ops choose version source {}, the stream checked with {}",
                source.name(),
                self.source.name()
            ));
        }
        let guarantees: Vec<GuaranteeResult> = Guarantee::ALL
            .iter()
            .zip(self.guarantees)
            .map(|(&g, s)| {
                let mut per_key: Vec<(Option<String>, u64)> = s.per_key.into_iter().collect();
                per_key.sort_unstable_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
                per_key.truncate(self.config.top_keys);
                GuaranteeResult {
                    guarantee: g,
                    checks: s.checks,
                    violations: s.violations,
                    top_keys: per_key
                        .into_iter()
                        .map(|(key, violations)| KeyCount { key, violations })
                        .collect(),
                    witnesses: s.witnesses,
                    timeline: s.times.histogram(span_ns),
                }
            })
            .collect();
        let (verdict, reason) = verdict(&guarantees, self.conflicts, &self.counts, source);
        let c = &self.counts;
        let st = &self.stale;
        let stale_reads: u64 = st.versions.values().sum();
        let versions: Vec<(u64, u64)> = st.versions.iter().map(|(&v, &n)| (v, n)).collect();
        let ms: Vec<(f64, u64)> = st
            .ms
            .iter()
            .map(|(&b, &n)| (f64::from_bits(b), n))
            .collect();
        let up_to_date = st.measured - stale_reads;
        let stale = StaleReadStats {
            reads_measured: st.measured,
            stale_reads,
            versions_behind: percentiles_of_counts(up_to_date, 0, &versions),
            ms_behind: percentiles_of_counts(up_to_date, 0.0, &ms),
            stale_versions_behind: percentiles_of_counts(0, 0, &versions),
            stale_ms_behind: percentiles_of_counts(0, 0.0, &ms),
        };
        Ok(SessionResult {
            verdict,
            reason,
            version_source: source,
            version_source_reason: source_reason,
            mode: self.config.mode,
            sessions: self.sessions.len() as u64,
            keys: self.keys,
            ok_reads: c.ok_reads,
            ok_writes: c.ok_writes,
            unversioned_reads: c.unversioned_reads,
            unversioned_writes: c.unversioned_writes,
            malformed: c.malformed,
            conflicting_reads: c.conflicting_reads,
            unseen_appends: self.unseen_appends,
            info_ignored: c.info_ignored,
            fail_ignored: c.fail_ignored,
            unpaired: self.unpaired,
            guarantees,
            stale,
            version_conflicts: self.conflicts,
            conflicts: self.conflict_list.into_iter().map(|c| c.1).collect(),
            conflict_timeline: self.conflict_times.histogram(span_ns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::histgen::{
        ListAppendGenConfig, VersionedGenConfig, generate_list_append_history,
        generate_versioned_history,
    };
    use super::*;
    use crate::history::{History, Name, OpType, Process};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use serde_json::Value;

    /// Small caps, so that witness, conflict and top-key lists are cut.
    fn config(source: Option<VersionSource>, mode: SessionMode) -> SessionConfig {
        SessionConfig {
            mode,
            source,
            max_witnesses_per_guarantee: 3,
            max_conflicts: 2,
            top_keys: 2,
        }
    }

    fn span(h: &History) -> u64 {
        h.ops.iter().map(|o| o.time_ns).max().unwrap_or(0)
    }

    /// The history's keys (keyless = `None`) in random groups, in random order.
    fn groups(h: &History, rng: &mut ChaCha8Rng) -> Vec<Vec<Option<Name>>> {
        let mut keys: Vec<Option<Name>> = Vec::new();
        for o in &h.ops {
            if !keys.contains(&o.key) {
                keys.push(o.key.clone());
            }
        }
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.random_range(0..=i));
        }
        let mut out = Vec::new();
        while !keys.is_empty() {
            let n = rng.random_range(1..=keys.len().min(3));
            out.push(keys.drain(..n).collect());
        }
        out
    }

    fn ops_of(h: &History, keys: &[Option<Name>]) -> Vec<Op> {
        h.ops
            .iter()
            .filter(|o| keys.contains(&o.key))
            .cloned()
            .collect()
    }

    fn json(r: &SessionResult) -> serde_json::Value {
        serde_json::to_value(r).unwrap()
    }

    /// Check `h` in parts of random key groups; with `rest`, a random cut of each group's
    /// keys: the ops before it as one part, then the whole keys again with `add_rest`.
    fn in_parts(h: &History, cfg: &SessionConfig, seed: u64, rest: bool) -> SessionResult {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut sniff = SourceSniff::new(cfg);
        h.ops.iter().for_each(|o| sniff.see(o));
        let choice = sniff.choice();
        let mut parts = SessionParts::new(cfg.clone(), choice.0);
        for g in groups(h, &mut rng) {
            let ops = ops_of(h, &g);
            if !rest {
                parts.add(&ops);
                continue;
            }
            let cut = ops[rng.random_range(0..ops.len())].index;
            let before: Vec<Op> = ops.iter().filter(|o| o.index < cut).cloned().collect();
            parts.add(&before);
            parts
                .add_rest(&ops, &|k| {
                    g.iter().any(|x| x.as_deref() == k).then_some(cut)
                })
                .unwrap();
        }
        parts.finish(choice, span(h)).unwrap()
    }

    fn agree(h: &History, cfg: &SessionConfig, seed: u64, rest: bool) -> SessionResult {
        let whole = check_sessions(h, cfg);
        let parts = in_parts(h, cfg, seed, rest);
        assert_eq!(
            json(&parts),
            json(&whole),
            "seed {seed}, rest {rest}, {:?}: parts then whole",
            cfg.source
        );
        whole
    }

    /// Give some ok ops another op's version of their key: version conflicts.
    fn conflicting(mut h: History, rng: &mut ChaCha8Rng) -> History {
        let versioned: Vec<usize> = (0..h.ops.len())
            .filter(|&i| h.ops[i].op_type == OpType::Ok && h.ops[i].version.is_some())
            .collect();
        for _ in 0..versioned.len() / 20 {
            let a = versioned[rng.random_range(0..versioned.len())];
            let b = versioned[rng.random_range(0..versioned.len())];
            if h.ops[a].key == h.ops[b].key {
                h.ops[a].version = h.ops[b].version;
            }
        }
        h
    }

    /// Make some list reads contradict the others: a pair swapped (not a prefix of the longest
    /// read) or an element repeated (a duplicate element).
    fn garbled(mut h: History, rng: &mut ChaCha8Rng) -> History {
        for o in &mut h.ops {
            if let serde_json::Value::Array(l) = &mut o.value
                && o.op_type == OpType::Ok
                && l.len() >= 2
                && rng.random_bool(0.05)
            {
                if rng.random_bool(0.5) {
                    l.swap(0, 1);
                } else {
                    let e = l[0].clone();
                    l.push(e);
                }
            }
        }
        h
    }

    /// Strip the key of one key's ops: keyless client ops.
    fn keyless(mut h: History, key: &str) -> History {
        for o in &mut h.ops {
            if o.key.as_deref() == Some(key) {
                o.key = None;
            }
        }
        h
    }

    fn versioned(seed: u64, stale: f64) -> History {
        generate_versioned_history(&VersionedGenConfig {
            keys: 6,
            threads: 6,
            ops: 400,
            info_probability: 0.08,
            stale_read_probability: stale,
            seed,
            ..VersionedGenConfig::default()
        })
    }

    fn list_append(seed: u64, stale: f64) -> History {
        generate_list_append_history(&ListAppendGenConfig {
            keys: 6,
            threads: 6,
            ops: 400,
            info_probability: 0.08,
            stale_read_probability: stale,
            seed,
            ..ListAppendGenConfig::default()
        })
    }

    #[test]
    fn versioned_histories_in_parts_give_the_whole_checks_result() {
        let (mut invalid, mut cut, mut conflicts) = (0, 0, 0);
        for seed in 0..24 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let stale = [0.0, 0.1, 0.3][seed as usize % 3];
            let mut h = versioned(seed, stale);
            if seed % 2 == 1 {
                h = conflicting(h, &mut rng);
            }
            if seed % 4 == 3 {
                h = keyless(h, "k1");
            }
            assert!(h.ops.iter().any(|o| o.op_type == OpType::Info));
            let mode = if seed % 5 == 4 {
                SessionMode::Thread { concurrency: 6 }
            } else {
                SessionMode::Process
            };
            for source in [
                None,
                Some(VersionSource::System),
                Some(VersionSource::IncreasingValues),
                Some(VersionSource::ListAppend),
            ] {
                let cfg = config(source, mode);
                let r = agree(&h, &cfg, seed, false);
                if source != Some(VersionSource::ListAppend) {
                    agree(&h, &cfg, seed + 100, true);
                }
                invalid += usize::from(r.verdict == Verdict::Invalid);
                cut += usize::from(r.guarantees.iter().any(|g| g.violations > 3));
                conflicts += usize::from(r.version_conflicts > 2);
            }
        }
        // The lists were cut, so which are kept mattered.
        assert!(
            invalid > 10 && cut > 5 && conflicts > 5,
            "{invalid} {cut} {conflicts}"
        );
    }

    #[test]
    fn list_append_histories_in_parts_give_the_whole_checks_result() {
        let (mut invalid, mut conflicts, mut unseen) = (0, 0, 0);
        for seed in 0..24 {
            let stale = [0.0, 0.1, 0.3][seed as usize % 3];
            let mut h = list_append(seed, stale);
            if seed % 2 == 1 {
                h = garbled(h, &mut ChaCha8Rng::seed_from_u64(seed));
            }
            if seed % 4 == 3 {
                h = keyless(h, "k2");
            }
            for source in [None, Some(VersionSource::ListAppend)] {
                let r = agree(&h, &config(source, SessionMode::Process), seed, false);
                invalid += usize::from(r.verdict == Verdict::Invalid);
                conflicts += usize::from(r.version_conflicts > 2);
                unseen += usize::from(r.unseen_appends > 0);
            }
        }
        assert!(
            invalid > 10 && conflicts > 5 && unseen > 5,
            "{invalid} {conflicts} {unseen}"
        );
    }

    /// `h` with later ops on every key, all after `h`'s last op: per key one to three ops by
    /// one of its sessions or a new one — a read of its newest reported version (what a run's
    /// final read sees), of its newest acknowledged one (older when a read saw a crashed
    /// write), of an older one, or of the newest with another value, a read of nothing, or a
    /// write of a newer version.
    fn with_later_ops(h: &History, rng: &mut ChaCha8Rng) -> History {
        // Per key: its ok ops' versions (with the value, and whether a write acknowledged it)
        // and its sessions.
        type Versions = Vec<(i64, Value, bool)>;
        let mut keys: Vec<(Name, Versions, Vec<Process>)> = Vec::new();
        for o in &h.ops {
            let Some(k) = &o.key else { continue };
            let i = match keys.iter().position(|x| &x.0 == k) {
                Some(i) => i,
                None => {
                    keys.push((k.clone(), Vec::new(), Vec::new()));
                    keys.len() - 1
                }
            };
            if !keys[i].2.contains(&o.process) {
                keys[i].2.push(o.process);
            }
            if let (OpType::Ok, Some(v)) = (o.op_type, o.version) {
                let value = match (o.f.as_str(), &o.value) {
                    ("cas", Value::Array(a)) if a.len() == 2 => a[1].clone(),
                    _ => o.value.clone(),
                };
                keys[i].1.push((v, value, o.f != "read"));
            }
        }
        let mut ops = h.ops.clone();
        let mut t = span(h);
        for (key, mut versions, sessions) in keys {
            versions.sort_by_key(|v| v.0);
            let (top, top_value, _) = versions.last().cloned().unwrap_or((0, Value::Null, true));
            let acked = versions.iter().rev().find(|v| v.2).cloned();
            for n in 0..rng.random_range(1..=3u64) {
                let process = if rng.random_bool(0.2) {
                    Process::Client(900 + n)
                } else {
                    sessions[rng.random_range(0..sessions.len())]
                };
                let (f, value, version) = match rng.random_range(0..10) {
                    0 if versions.len() > 1 => {
                        let (v, x, _) = versions[rng.random_range(0..versions.len() - 1)].clone();
                        ("read", x, Some(v))
                    }
                    4 | 5 if acked.is_some() => {
                        let (v, x, _) = acked.clone().unwrap_or((0, Value::Null, true));
                        ("read", x, Some(v))
                    }
                    1 if top > 0 => ("read", Value::from(12_345), Some(top)),
                    2 => ("read", Value::Null, None),
                    3 => ("write", Value::from(777 + n), Some(top + 1 + n as i64)),
                    _ => ("read", top_value.clone(), (top > 0).then_some(top)),
                };
                for ty in [OpType::Invoke, OpType::Ok] {
                    t += 10;
                    let v = if ty == OpType::Invoke && f == "read" {
                        Value::Null
                    } else {
                        value.clone()
                    };
                    let mut op = Op::new(ty, process, f, v);
                    op.key = Some(key.clone());
                    op.time_ns = t;
                    if ty == OpType::Ok {
                        op.version = version;
                    }
                    ops.push(op);
                }
            }
        }
        History::from_ops(ops)
    }

    #[test]
    fn later_ops_judged_from_their_keys_ends_give_the_whole_checks_result() {
        let (mut fit, mut misfit) = (0, 0);
        for seed in 0..24 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let h = versioned(seed, [0.0, 0.2][seed as usize % 2]);
            let all = with_later_ops(&h, &mut rng);
            let cut = h.ops.len() as u64;
            for source in [
                None,
                Some(VersionSource::System),
                Some(VersionSource::IncreasingValues),
            ] {
                let cfg = config(source, SessionMode::Process);
                let mut sniff = SourceSniff::new(&cfg);
                all.ops.iter().for_each(|o| sniff.see(o));
                let choice = sniff.choice();
                let mut parts = SessionParts::new(cfg.clone(), choice.0);
                parts.keep_ends();
                for g in groups(&h, &mut rng) {
                    parts.add(&ops_of(&h, &g));
                }
                let later: Vec<Op> = all.ops[cut as usize..].to_vec();
                let again = parts.add_later(&later);
                let keys: Vec<Option<Name>> = again.iter().map(|k| Some(Name::new(k))).collect();
                parts
                    .add_rest(&ops_of(&all, &keys), &|_| Some(cut))
                    .unwrap();
                let whole = check_sessions(&all, &cfg);
                let got = parts.finish(choice, span(&all)).unwrap();
                assert_eq!(json(&got), json(&whole), "seed {seed}, {source:?}");
                misfit += again.len();
                fit += 6 - again.len();
            }
        }
        // Both ways were taken, many times.
        assert!(fit > 50 && misfit > 50, "{fit} fit, {misfit} read again");
    }

    #[test]
    fn a_later_op_judged_against_an_earlier_bound_is_read_again_with_its_witness() {
        // Key a: p1 writes 1 (version 1), p2 reads it, p1's write of 2 crashes, p2 reads 2
        // (version 2, never acknowledged). Later, p2 reads 1: not stale (1 is the newest
        // acknowledged version), but older than what p2 read before (monotonic reads). Key b:
        // the same, and p2's later read is of 2: judged from b's end alone. Key c: p1 writes 1
        // (version 1); later p1 writes 1 again and the system reports version 1 again: the same
        // value, no conflict, but not newer than p1's own write (monotonic writes).
        let mut ops = Vec::new();
        let mut t = 0;
        let mut op = |ty, p: u64, f: &str, key: &str, v: Value, version: Option<i64>| {
            t += 10;
            let mut o = Op::new(ty, Process::Client(p), f, v);
            o.key = Some(Name::new(key));
            o.time_ns = t;
            o.version = version;
            ops.push(o);
        };
        for key in ["a", "b"] {
            op(OpType::Invoke, 1, "write", key, Value::from(1), None);
            op(OpType::Ok, 1, "write", key, Value::from(1), Some(1));
            op(OpType::Invoke, 2, "read", key, Value::Null, None);
            op(OpType::Ok, 2, "read", key, Value::from(1), Some(1));
            op(OpType::Invoke, 1, "write", key, Value::from(2), None);
            op(OpType::Info, 1, "write", key, Value::from(2), None);
            op(OpType::Invoke, 2, "read", key, Value::Null, None);
            op(OpType::Ok, 2, "read", key, Value::from(2), Some(2));
        }
        op(OpType::Invoke, 1, "write", "c", Value::from(1), None);
        op(OpType::Ok, 1, "write", "c", Value::from(1), Some(1));
        let cut = 18;
        for (key, v) in [("a", 1), ("b", 2)] {
            op(OpType::Invoke, 2, "read", key, Value::Null, None);
            op(OpType::Ok, 2, "read", key, Value::from(v), Some(v));
        }
        op(OpType::Invoke, 1, "write", "c", Value::from(1), None);
        op(OpType::Ok, 1, "write", "c", Value::from(1), Some(1));
        let h = History::from_ops(ops);
        let cfg = config(Some(VersionSource::System), SessionMode::Process);
        let mut parts = SessionParts::new(cfg.clone(), VersionSource::System);
        parts.keep_ends();
        parts.add(&h.ops[..cut]);
        let mut again: Vec<String> = parts.add_later(&h.ops[cut..]).into_iter().collect();
        again.sort();
        assert_eq!(again, ["a", "c"]);
        let keys = [Some(Name::new("a")), Some(Name::new("c"))];
        parts
            .add_rest(&ops_of(&h, &keys), &|_| Some(cut as u64))
            .unwrap();
        let whole = check_sessions(&h, &cfg);
        let mr = whole.guarantee(Guarantee::MonotonicReads);
        assert_eq!(
            (mr.violations, mr.witnesses[0].later_index),
            (1, cut as u64 + 1)
        );
        let mw = whole.guarantee(Guarantee::MonotonicWrites);
        assert_eq!(
            (mw.violations, mw.witnesses[0].later_index),
            (1, cut as u64 + 5)
        );
        let choice = (VersionSource::System, whole.version_source_reason.clone());
        assert_eq!(json(&parts.finish(choice, span(&h)).unwrap()), json(&whole));
    }

    #[test]
    fn a_list_append_key_cannot_be_added_again() {
        let h = list_append(1, 0.1);
        let cfg = config(None, SessionMode::Process);
        let mut parts = SessionParts::new(cfg, VersionSource::ListAppend);
        parts.add(&h.ops[..10]);
        assert!(parts.add_rest(&h.ops, &|_| Some(10)).is_err());
    }

    #[test]
    fn a_source_other_than_the_one_used_is_refused() {
        let h = list_append(2, 0.0);
        let cfg = config(None, SessionMode::Process);
        let mut sniff = SourceSniff::new(&cfg);
        // The first ops of a list-append history: reads of empty keys say nothing yet.
        sniff.see(&h.ops[0]);
        let early = sniff.choice();
        h.ops.iter().for_each(|o| sniff.see(o));
        let end = sniff.choice();
        assert_eq!(end.0, VersionSource::ListAppend);
        let parts = SessionParts::new(cfg, VersionSource::System);
        assert!(parts.finish(end.clone(), span(&h)).is_err());
        assert_eq!(early.0 == end.0, h.ops[0].f == "append");
    }

    #[test]
    fn time_slots_give_the_histogram_of_the_whole_span() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for _ in 0..200 {
            let span_ns = rng.random_range(1..=40_000u64) * 10u64.pow(rng.random_range(3..9));
            let mut times: Vec<u64> = (0..rng.random_range(0..300))
                .map(|_| rng.random_range(0..=span_ns))
                .collect();
            times.sort_unstable();
            let mut slots = Slots::default();
            let mut seen = 0;
            for chunk in times.chunks(rng.random_range(1..20)) {
                for &t in chunk {
                    slots.add(t);
                    seen = seen.max(t);
                }
                slots.coarsen(seen);
            }
            assert!(slots.counts.len() <= 5 * MAX_TIME_BUCKETS as usize + 1);
            assert_eq!(slots.histogram(span_ns), TimeHistogram::of(&times, span_ns));
        }
    }
}
