//! The session checker's pass over a history: the four guarantees as one rule table over two
//! bounds per session and key, stale-read quantification (against `acks`' per-key Fenwick trees of
//! acknowledged versions), version conflicts and the result's summary. Does not own how versions are read
//! (`versions`) or the result types (`mod`).

use super::acks::KeyAcks;
use super::versions::*;
use super::*;
use crate::history::{History, Op, OpType, Process};
use rustc_hash::FxHashMap;
use serde_json::Value;

/// Per (session, key): the highest position the session's own ok writes reached and the highest
/// its ok reads returned, each with the completion index that set it. Indexed by `Bound`.
#[derive(Default, Clone, Copy)]
pub(super) struct SessState([Option<(Pos, usize)>; 2]);

/// Where a bound came from when it was set by a key's earlier ops, walked before ([`KeySeed`]):
/// no op of this walk.
const SEED: usize = usize::MAX - 1;

/// What a walk over a key's later ops needs of the walk over its earlier ones (every earlier op
/// ended before any later op began): each session's bounds on it, the newest acknowledged
/// version, and the highest version an ok op reported with the value its first reporter showed
/// (`None`: not comparable, an append or no value). Enough to judge later ops that agree with
/// the key's end; a later op whose judgement needs more (a violation against an earlier bound,
/// a read older than the newest ack, a version below the highest reported) makes the key a
/// misfit, for the caller to walk it whole ([`tally_later`]).
#[derive(Debug, Clone, Default)]
pub(super) struct KeySeed {
    bounds: Vec<(u64, [Option<Pos>; 2])>,
    max_ack: Option<i64>,
    top: Option<(i64, Option<Value>)>,
}

/// Which of a session's bounds a rule compares against.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Bound {
    /// The session's own highest ok write.
    OwnWrite = 0,
    /// The highest version the session has read.
    OwnRead = 1,
}

/// One session guarantee as data: an op of kind `later_is_read` (read, or a write of any kind)
/// must reach at least the session's `bound` — strictly beyond it when `must_be_newer`.
pub(super) struct Rule {
    guarantee: Guarantee,
    later_is_read: bool,
    bound: Bound,
    must_be_newer: bool,
}

/// The four guarantees (Terry et al.) as comparisons against the session's bounds.
pub(super) const RULES: [Rule; 4] = [
    Rule {
        guarantee: Guarantee::ReadYourWrites,
        later_is_read: true,
        bound: Bound::OwnWrite,
        must_be_newer: false,
    },
    Rule {
        guarantee: Guarantee::MonotonicReads,
        later_is_read: true,
        bound: Bound::OwnRead,
        must_be_newer: false,
    },
    Rule {
        guarantee: Guarantee::MonotonicWrites,
        later_is_read: false,
        bound: Bound::OwnWrite,
        must_be_newer: true,
    },
    Rule {
        guarantee: Guarantee::WritesFollowReads,
        later_is_read: false,
        bound: Bound::OwnRead,
        must_be_newer: true,
    },
];

pub(super) struct GuaranteeAcc {
    pub(super) checks: u64,
    pub(super) violations: u64,
    /// Violations per key id.
    pub(super) per_key: FxHashMap<u32, u64>,
    pub(super) witnesses: Vec<Violation>,
    /// Completion time of every violating op.
    pub(super) times_ns: Vec<u64>,
}

pub(super) fn percentiles<T: Copy + Default + PartialOrd>(sorted: &[T]) -> Percentiles<T> {
    if sorted.is_empty() {
        return Percentiles::default();
    }
    let at = |p: f64| {
        let rank = (p * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    };
    Percentiles {
        p50: at(0.50),
        p90: at(0.90),
        p99: at(0.99),
        max: sorted[sorted.len() - 1],
    }
}

/// Check the four session guarantees, quantify stale reads and find version conflicts (see the
/// module doc for the exact semantics). Three passes: pair ops and intern keys ([`Paired`]),
/// derive versions ([`derive_versions`]), walk the history in order ([`Walk`]).
pub fn check_sessions(history: &History, config: &SessionConfig) -> SessionResult {
    let (source, source_reason) = choose_source(history, config);
    walk_of(&history.ops, config, source, |mut walk, derived| {
        walk.list_append_conflicts(&derived.conflicts);
        walk.run();
        walk.finish(source, source_reason, derived.unseen_appends)
    })
}

/// Passes 1 and 2 over `ops` (pair, derive versions by `source`), then `f` with the walk over
/// them (pass 3, not yet run) and the derived versions.
fn walk_of<'o, R>(
    ops: &'o [Op],
    config: &SessionConfig,
    source: VersionSource,
    f: impl for<'w> FnOnce(Walk<'w, 'o>, &'w Derived) -> R,
) -> R {
    let paired = Paired::of(ops);
    let derived = derive_versions(&paired, source);
    let labels = Labels {
        mode: config.mode,
        source,
    };
    f(Walk::new(&paired, &derived.vers, config, labels), &derived)
}

/// What a walk over part of a history found, before it is made a result (`parts` folds these).
pub(super) struct Tally {
    /// Per guarantee, in `Guarantee::ALL` order; `per_key` by index into `key_names`.
    pub(super) acc: Vec<GuaranteeAcc>,
    pub(super) key_names: Vec<Option<String>>,
    pub(super) stale: Stale,
    pub(super) counts: Counts,
    pub(super) conflicts: Conflicts,
    /// Sessions with an ok op that carried a judgeable version.
    pub(super) sessions: Vec<u64>,
    pub(super) keys: u64,
    pub(super) unpaired: u64,
    pub(super) unseen_appends: u64,
    /// Per key, what it left for a walk of its later ops (when asked: [`tally_part`]).
    pub(super) seeds: Vec<(String, KeySeed)>,
}

/// Walk part of a history as [`check_sessions`] walks a whole one: `ops` are every op of some
/// keys, in history order, `index` each op's position in the whole history. `from(key)` is the
/// position from which what happens at the key's ops counts (its earlier ops were walked
/// before, as a part of their own); `None`: everything counts. A read's staleness counts at
/// its completion, a key at its first op. With `keep_seeds`, the tally carries what each key
/// left for a walk of its later ops ([`tally_later`]).
pub(super) fn tally_part(
    ops: &[Op],
    config: &SessionConfig,
    source: VersionSource,
    from: &dyn Fn(Option<&str>) -> Option<u64>,
    keep_seeds: bool,
) -> Tally {
    walk_of(ops, config, source, |mut walk, derived| {
        let p = walk.p;
        walk.from = p.key_names.iter().map(|&k| from(k).unwrap_or(0)).collect();
        walk.list_append_conflicts(&derived.conflicts);
        walk.run();
        let seeds = if keep_seeds {
            let names = p.key_names.iter();
            let seeds = names.zip(walk.seeds());
            seeds
                .filter_map(|(k, s)| Some((k.map(str::to_string)?, s?)))
                .collect()
        } else {
            Vec::new()
        };
        let counted = |at: &[usize]| at.iter().filter(|&&i| walk.counted(i)).count() as u64;
        let (keys, unpaired) = (counted(&p.key_first), counted(&p.unpaired_at));
        Tally {
            seeds,
            ..walk.tally(keys, unpaired, derived.unseen_appends)
        }
    })
}

/// Walk the later ops of keys whose earlier ops were walked before (every earlier op ended
/// before any later one began), starting from what those left (`seed(key)`), with versions
/// read op by op (not list-append). What happens at the later ops counts; the keys were counted
/// before. Also returns the *misfits*: keys whose later ops cannot be judged from the seed alone
/// (no seed, an op pairing with an earlier one, a judgement that needs an earlier op — see
/// [`KeySeed`]); their part of the tally is not theirs alone and must be dropped (walk the
/// others again) and the key walked whole.
pub(super) fn tally_later<'s>(
    ops: &[Op],
    config: &SessionConfig,
    source: VersionSource,
    seed: &dyn Fn(&str) -> Option<&'s KeySeed>,
) -> (Tally, Vec<String>) {
    walk_of(ops, config, source, |mut walk, derived| {
        let p = walk.p;
        let seeds: Vec<Option<&KeySeed>> = p.key_names.iter().map(|k| seed((*k)?)).collect();
        for (k, s) in seeds.iter().enumerate() {
            walk.misfit[k] = s.is_none() || !derived.conflicts.is_empty();
        }
        for &i in &p.unpaired_at {
            walk.misfit[p.key_id[i] as usize] = true;
        }
        walk.seed(seeds);
        walk.run();
        let names = p.key_names.iter().zip(&walk.misfit);
        let misfits = names
            .filter(|(_, m)| **m)
            .map(|(k, _)| k.unwrap_or_default().to_string())
            .collect();
        (walk.tally(0, 0, 0), misfits)
    })
}

/// Pass 1: every session op's partner (invoke ↔ completion), its key id, the key names.
struct Paired<'h> {
    ops: &'h [Op],
    kinds: Vec<Option<Kind>>,
    partner: Vec<usize>,
    key_id: Vec<u32>,
    key_names: Vec<Option<&'h str>>,
    /// Per key id, the position of its first op.
    key_first: Vec<usize>,
    /// Invokes left open by a later invoke of their process (at that invoke), and completions
    /// with no invoke.
    unpaired_at: Vec<usize>,
}

impl<'h> Paired<'h> {
    fn of(ops: &'h [Op]) -> Paired<'h> {
        let n = ops.len();
        let mut p = Paired {
            ops,
            kinds: ops.iter().map(kind_of).collect(),
            partner: vec![NONE; n],
            key_id: vec![NO_KEY; n],
            key_names: Vec::new(),
            key_first: Vec::new(),
            unpaired_at: Vec::new(),
        };
        let mut key_ids: FxHashMap<Option<&str>, u32> = FxHashMap::default();
        let mut open: FxHashMap<Process, usize> = FxHashMap::default();
        for (i, op) in ops.iter().enumerate() {
            if p.kinds[i].is_none() {
                continue;
            }
            let (names, first) = (&mut p.key_names, &mut p.key_first);
            p.key_id[i] = *key_ids.entry(op.key.as_deref()).or_insert_with(|| {
                names.push(op.key.as_deref());
                first.push(i);
                (names.len() - 1) as u32
            });
            if op.op_type == OpType::Invoke {
                if open.insert(op.process, i).is_some() {
                    p.unpaired_at.push(i);
                }
                continue;
            }
            match open.remove(&op.process) {
                Some(inv) => {
                    p.partner[inv] = i;
                    p.partner[i] = inv;
                }
                None => p.unpaired_at.push(i),
            }
        }
        p
    }

    /// The invoke of completion `i`, when it has one.
    fn invoke_of(&self, i: usize) -> Option<&'h Op> {
        (self.partner[i] != NONE && self.ops[i].op_type != OpType::Invoke)
            .then(|| &self.ops[self.partner[i]])
    }

    /// Op `i`'s key.
    fn key(&self, i: usize) -> Option<&'h str> {
        self.key_names[self.key_id[i] as usize]
    }

    /// Op `i` in words ("read k3 and got 9").
    fn describe_at(&self, i: usize) -> String {
        let kind = self.kinds[i].unwrap_or(Kind::Read);
        let invoke = (self.partner[i] != NONE).then(|| &self.ops[self.partner[i]]);
        describe(kind, &self.ops[i], invoke, self.key(i))
    }
}

/// Pass 2: the version of every ok completion, by `source`.
fn derive_versions(p: &Paired, source: VersionSource) -> Derived {
    if source == VersionSource::ListAppend {
        return derive_list_append(p.ops, &p.kinds, &p.partner, &p.key_id, p.key_names.len());
    }
    let vers = p
        .ops
        .iter()
        .enumerate()
        .map(|(i, op)| match p.kinds[i] {
            Some(kind) if op.op_type == OpType::Ok => {
                if source == VersionSource::System {
                    system_version(kind, op)
                } else {
                    let inv = (p.partner[i] != NONE).then(|| &p.ops[p.partner[i]]);
                    increasing_version(kind, op, inv)
                }
            }
            _ => Ver::Unversioned,
        })
        .collect();
    Derived {
        vers,
        conflicts: Vec::new(),
        unseen_appends: 0,
    }
}

/// How witnesses name sessions and versions.
#[derive(Clone, Copy)]
struct Labels {
    mode: SessionMode,
    source: VersionSource,
}

impl Labels {
    /// The session a process belongs to.
    fn session_of(self, p: u64) -> u64 {
        match self.mode {
            SessionMode::Process => p,
            SessionMode::Thread { concurrency } => p % concurrency.max(1),
        }
    }

    /// "process 7", or "thread 2 (process 12)".
    fn session(self, p: u64) -> String {
        match self.mode {
            SessionMode::Process => format!("process {p}"),
            SessionMode::Thread { concurrency } => {
                format!("thread {} (process {p})", p % concurrency.max(1))
            }
        }
    }
}

/// The version conflicts found, capped in number, and when each happened.
#[derive(Default)]
pub(super) struct Conflicts {
    pub(super) count: u64,
    pub(super) list: Vec<VersionConflict>,
    /// Per listed conflict, its place in the whole check's list: (0, the later op's index) for
    /// a reported version, (0, the key's first op's index, position) for a duplicate element,
    /// (1, the read's index) for a list that is not a prefix of the longest.
    pub(super) order: Vec<(u8, u64, u64)>,
    pub(super) times_ns: Vec<u64>,
}

/// What the walk counts besides guarantees, stale reads and conflicts.
#[derive(Debug, Clone, Default)]
pub(super) struct Counts {
    pub(super) ok_reads: u64,
    pub(super) ok_writes: u64,
    pub(super) unversioned_reads: u64,
    pub(super) unversioned_writes: u64,
    pub(super) malformed: u64,
    pub(super) conflicting_reads: u64,
    pub(super) info_ignored: u64,
    pub(super) fail_ignored: u64,
    /// Some ok op had a version other than the initial one.
    pub(super) any_version: bool,
}

impl Counts {
    /// Add another part's counts.
    pub(super) fn add(&mut self, o: &Counts) {
        self.ok_reads += o.ok_reads;
        self.ok_writes += o.ok_writes;
        self.unversioned_reads += o.unversioned_reads;
        self.unversioned_writes += o.unversioned_writes;
        self.malformed += o.malformed;
        self.conflicting_reads += o.conflicting_reads;
        self.info_ignored += o.info_ignored;
        self.fail_ignored += o.fail_ignored;
        self.any_version |= o.any_version;
    }
}

/// Stale-read measurements: per measured read, acknowledged versions newer than what it
/// returned, and how long before its invoke the first of those was acknowledged.
#[derive(Default)]
pub(super) struct Stale {
    pub(super) versions_behind: Vec<u64>,
    pub(super) ms_behind: Vec<f64>,
    pub(super) stale_reads: u64,
}

/// Pass 3: the history in order, with everything it accumulates.
struct Walk<'a, 'h> {
    p: &'a Paired<'h>,
    vers: &'a [Ver],
    config: &'a SessionConfig,
    labels: Labels,
    acks: Vec<KeyAcks>,
    sessions: FxHashMap<(u64, u32), SessState>,
    seen_sessions: FxHashMap<u64, ()>,
    /// The first ok op that reported each (key, version): reported-version conflicts.
    by_version: FxHashMap<(u32, i64), usize>,
    acc: Vec<GuaranteeAcc>,
    stale: Stale,
    counts: Counts,
    conflicts: Conflicts,
    /// Per key id, the position from which its events count (empty: all count; see
    /// [`tally_part`]).
    from: Vec<u64>,
    /// Per key id, what its earlier ops left ([`tally_later`]; empty: no earlier ops).
    seeds: Vec<Option<&'a KeySeed>>,
    /// Per key id: judging one of its ops needed its earlier ops ([`tally_later`]).
    misfit: Vec<bool>,
}

impl<'a, 'h> Walk<'a, 'h> {
    fn new(
        p: &'a Paired<'h>,
        vers: &'a [Ver],
        config: &'a SessionConfig,
        labels: Labels,
    ) -> Walk<'a, 'h> {
        // Every acknowledged version of every key, so a read's staleness counts versions
        // acknowledged before it (inserted as the walk passes their acks).
        let mut acked: Vec<Vec<i64>> = vec![Vec::new(); p.key_names.len()];
        for (i, op) in p.ops.iter().enumerate() {
            if op.op_type == OpType::Ok
                && let Some(kind) = p.kinds[i]
                && kind != Kind::Read
                && let Ver::Known(pos) = vers[i]
            {
                acked[p.key_id[i] as usize].push(pos.rank());
            }
        }
        Walk {
            p,
            vers,
            config,
            labels,
            acks: acked.into_iter().map(KeyAcks::new).collect(),
            sessions: FxHashMap::default(),
            seen_sessions: FxHashMap::default(),
            by_version: FxHashMap::default(),
            acc: (0..4)
                .map(|_| GuaranteeAcc {
                    checks: 0,
                    violations: 0,
                    per_key: FxHashMap::default(),
                    witnesses: Vec::new(),
                    times_ns: Vec::new(),
                })
                .collect(),
            stale: Stale::default(),
            counts: Counts::default(),
            conflicts: Conflicts::default(),
            from: Vec::new(),
            seeds: Vec::new(),
            misfit: vec![false; p.key_names.len()],
        }
    }

    /// Start from what each key's earlier ops left: its sessions' bounds and its highest
    /// reported version (as set by no op of this walk, [`SEED`]).
    fn seed(&mut self, seeds: Vec<Option<&'a KeySeed>>) {
        for (k, s) in seeds.iter().enumerate() {
            let Some(s) = s else { continue };
            let k = k as u32;
            for &(sid, [w, r]) in &s.bounds {
                let st = SessState([w.map(|p| (p, SEED)), r.map(|p| (p, SEED))]);
                self.sessions.insert((sid, k), st);
            }
            if let Some((ver, _)) = s.top {
                self.by_version.insert((k, ver), SEED);
            }
        }
        self.seeds = seeds;
    }

    /// What key id `k`'s earlier ops left, in a walk of later ops.
    fn seed_of(&self, k: usize) -> Option<&'a KeySeed> {
        self.seeds.get(k).copied().flatten()
    }

    /// Per key id, what its ops left for a walk of its later ops; `None` for a key with an
    /// invoke no completion followed (a later op could complete it).
    fn seeds(&self) -> Vec<Option<KeySeed>> {
        let p = self.p;
        let mut out = vec![Some(KeySeed::default()); p.key_names.len()];
        for (i, op) in p.ops.iter().enumerate() {
            if p.kinds[i].is_some() && op.op_type == OpType::Invoke && p.partner[i] == NONE {
                out[p.key_id[i] as usize] = None;
            }
        }
        for (&(sid, k), st) in &self.sessions {
            if let Some(s) = &mut out[k as usize] {
                s.bounds
                    .push((sid, [st.0[0].map(|b| b.0), st.0[1].map(|b| b.0)]));
            }
        }
        for (k, s) in out.iter_mut().enumerate() {
            if let Some(s) = s {
                s.max_ack = self.acks[k].newest();
            }
        }
        for (&(k, ver), &j) in &self.by_version {
            let Some(s) = &mut out[k as usize] else {
                continue;
            };
            if s.top.as_ref().is_some_and(|t| t.0 > ver) {
                continue;
            }
            let kind = p.kinds[j].unwrap_or(Kind::Read);
            let invoke = (p.partner[j] != NONE).then(|| &p.ops[p.partner[j]]);
            let value = (kind != Kind::Append)
                .then(|| value_of(kind, &p.ops[j], invoke).cloned())
                .flatten();
            s.top = Some((ver, value));
        }
        out
    }

    /// Whether what happens at session op `i` counts (see [`tally_part`]).
    fn counted(&self, i: usize) -> bool {
        self.from
            .get(self.p.key_id[i] as usize)
            .is_none_or(|&f| self.p.ops[i].index >= f)
    }

    /// The conflicts the list-append source found while deriving versions.
    fn list_append_conflicts(&mut self, found: &[ListConflict]) {
        let ops = self.p.ops;
        for &(a, b, at, kind, found_at) in found {
            self.conflicts.count += 1;
            self.conflicts.times_ns.push(ops[b].time_ns);
            if self.conflicts.list.len() >= self.config.max_conflicts {
                continue;
            }
            let key = self.p.key(a);
            let side = |j: usize| {
                format!(
                    "{} ({} {}, ok at {})",
                    self.p.describe_at(j),
                    self.labels.session(ops[j].process.client().unwrap_or(0)),
                    ops[j].index,
                    secs(ops[j].time_ns)
                )
            };
            let witness = if kind == "duplicate-element" {
                format!(
                    "{} holds element {} twice (again at position {at} of {})",
                    side(a),
                    ops[a].value.get((at - 1) as usize).unwrap_or(&Value::Null),
                    key_label(key)
                )
            } else {
                format!(
                    "{} and {} differ at position {at} of {}: they cannot both be prefixes of one order",
                    side(a),
                    side(b),
                    key_label(key)
                )
            };
            self.conflicts.order.push(if kind == "duplicate-element" {
                let first = self.p.key_first[self.p.key_id[a] as usize];
                (0, ops[first].index, at as u64)
            } else {
                (1, ops[found_at].index, 0)
            });
            self.conflicts.list.push(VersionConflict {
                kind,
                key: key.map(str::to_string),
                version: at,
                first_index: ops[a].index,
                later_index: ops[b].index,
                first_value: ops[a].value.clone(),
                later_value: ops[b].value.clone(),
                witness,
            });
        }
    }

    fn run(&mut self) {
        for (i, op) in self.p.ops.iter().enumerate() {
            let Some(kind) = self.p.kinds[i] else {
                continue;
            };
            let Some(proc_id) = op.process.client() else {
                continue;
            };
            let n = u64::from(self.counted(i));
            match op.op_type {
                OpType::Invoke => self.measure_stale(i, kind),
                OpType::Fail => self.counts.fail_ignored += n,
                OpType::Info => self.counts.info_ignored += n,
                OpType::Ok => self.ok(i, kind, proc_id),
            }
        }
    }

    /// A read's staleness, at its invoke, against what was acknowledged before it.
    fn measure_stale(&mut self, i: usize, kind: Kind) {
        let c = self.p.partner[i];
        if kind != Kind::Read
            || c == NONE
            || self.p.ops[c].op_type != OpType::Ok
            || !self.counted(c)
        {
            return;
        }
        let Ver::Known(pos) = self.vers[c] else {
            return;
        };
        let k = self.p.key_id[i] as usize;
        // Versions the key's earlier ops acknowledged count too: only none newer is known.
        if self
            .seed_of(k)
            .and_then(|s| s.max_ack)
            .is_some_and(|m| m > pos.rank())
        {
            self.misfit[k] = true;
        }
        let (newer, first_ack) = self.acks[k].newer_than(pos.rank());
        self.stale.versions_behind.push(newer);
        if newer == 0 {
            self.stale.ms_behind.push(0.0);
            return;
        }
        self.stale.stale_reads += 1;
        let t = self.p.ops[i].time_ns;
        let lag_ns = t.saturating_sub(first_ack.unwrap_or(t));
        self.stale.ms_behind.push(lag_ns as f64 / 1e6);
    }

    /// An ok completion: counted, its version checked against earlier reports of it and
    /// against its session's bounds.
    fn ok(&mut self, i: usize, kind: Kind, proc_id: u64) {
        let is_read = kind == Kind::Read;
        let n = u64::from(self.counted(i));
        let c = &mut self.counts;
        if is_read {
            c.ok_reads += n;
        } else {
            c.ok_writes += n;
        }
        let v = match self.vers[i] {
            Ver::Known(p) => p,
            Ver::Unversioned if is_read => return c.unversioned_reads += n,
            Ver::Unversioned => return c.unversioned_writes += n,
            Ver::Malformed => return c.malformed += n,
            Ver::Conflicting => return c.conflicting_reads += n,
        };
        if v != Pos::At(0) {
            c.any_version = true;
        }
        let k = self.p.key_id[i];
        if !is_read {
            self.acks[k as usize].insert(v.rank(), self.p.ops[i].time_ns);
        }
        // The list-append source found its own conflicts.
        if self.labels.source != VersionSource::ListAppend
            && let Pos::At(ver) = v
            && ver > 0
        {
            self.reported_version(i, kind, k, ver, v);
        }
        self.apply_rules(i, kind, k, v, proc_id);
    }

    /// Two ok ops that report the same version of a key with different values conflict.
    fn reported_version(&mut self, i: usize, kind: Kind, k: u32, ver: i64, v: Pos) {
        // Of the key's earlier ops only the first report of its highest version is known.
        if let Some((top, seeded)) = self.seed_of(k as usize).and_then(|s| s.top.as_ref()) {
            let here = (kind != Kind::Append)
                .then(|| value_of(kind, &self.p.ops[i], self.p.invoke_of(i)))
                .flatten();
            let differs = seeded.as_ref().zip(here).is_some_and(|(a, b)| a != b);
            if ver < *top || (ver == *top && differs) {
                self.misfit[k as usize] = true;
                return;
            }
        }
        let j = match self.by_version.entry((k, ver)) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(i);
                return;
            }
            std::collections::hash_map::Entry::Occupied(e) => *e.get(),
        };
        // The earlier first report agrees or cannot be compared (see above).
        if j == SEED {
            return;
        }
        if !self.counted(i) {
            return;
        }
        let ops = self.p.ops;
        let fk = self.p.kinds[j].unwrap_or(Kind::Read);
        let first_inv = (self.p.partner[j] != NONE).then(|| &ops[self.p.partner[j]]);
        let invoke = self.p.invoke_of(i);
        // An appended element is not the key's whole value: not comparable.
        if fk == Kind::Append || kind == Kind::Append {
            return;
        }
        let (Some(a), Some(b)) = (
            value_of(fk, &ops[j], first_inv),
            value_of(kind, &ops[i], invoke),
        ) else {
            return;
        };
        if a == b {
            return;
        }
        self.conflicts.count += 1;
        self.conflicts.times_ns.push(ops[i].time_ns);
        if self.conflicts.list.len() >= self.config.max_conflicts {
            return;
        }
        let key = self.p.key(i);
        let side = |o: &Op, kind: Kind, inv: Option<&Op>| {
            format!(
                "{} ({} {}, ok at {})",
                describe(kind, o, inv, key),
                self.labels.session(o.process.client().unwrap_or(0)),
                o.index,
                secs(o.time_ns)
            )
        };
        let witness = format!(
            "{} and {} both report {} of {}",
            side(&ops[j], fk, first_inv),
            side(&ops[i], kind, invoke),
            show_pos(self.labels.source, true, v),
            key_label(key),
        );
        self.conflicts.order.push((0, ops[i].index, 0));
        self.conflicts.list.push(VersionConflict {
            kind: "version-conflict",
            key: key.map(str::to_string),
            version: ver,
            first_index: ops[j].index,
            later_index: ops[i].index,
            first_value: a.clone(),
            later_value: b.clone(),
            witness,
        });
    }

    /// Every guarantee rule for this op's kind, against its session's bound on the key as it was
    /// before the op, which raises it.
    fn apply_rules(&mut self, i: usize, kind: Kind, k: u32, v: Pos, proc_id: u64) {
        let is_read = kind == Kind::Read;
        let sid = self.labels.session_of(proc_id);
        self.seen_sessions.insert(sid, ());
        // The op raises its bound at once; the rules compare against the bounds before it.
        let entry = self.sessions.entry((sid, k)).or_default();
        let st = *entry;
        let slot = &mut entry.0[if is_read {
            Bound::OwnRead
        } else {
            Bound::OwnWrite
        } as usize];
        if slot.is_none_or(|(b, _)| v.cmp(b).is_some_and(|o| o.is_gt())) {
            *slot = Some((v, i));
        }
        if !self.counted(i) {
            return;
        }
        for rule in RULES.iter().filter(|r| r.later_is_read == is_read) {
            let Some((bound, bi)) = st.0[rule.bound as usize] else {
                continue;
            };
            let Some(ord) = v.cmp(bound) else { continue };
            let a = &mut self.acc[rule.guarantee.slot()];
            a.checks += 1;
            if ord.is_lt() || (rule.must_be_newer && ord.is_eq()) {
                self.violation(rule, i, kind, k, v, (bound, bi), proc_id);
            }
        }
    }

    /// Op `i` broke `rule` against the session's bound (version `bound`, set by op `bi`).
    #[allow(clippy::too_many_arguments)]
    fn violation(
        &mut self,
        rule: &Rule,
        i: usize,
        kind: Kind,
        k: u32,
        v: Pos,
        (bound, bi): (Pos, usize),
        proc_id: u64,
    ) {
        if bi == SEED {
            // Against a bound the key's earlier ops set: their walk says it.
            self.misfit[k as usize] = true;
            return;
        }
        let ops = self.p.ops;
        let op = &ops[i];
        let a = &mut self.acc[rule.guarantee.slot()];
        a.violations += 1;
        a.times_ns.push(op.time_ns);
        *a.per_key.entry(k).or_insert(0) += 1;
        if a.witnesses.len() >= self.config.max_witnesses_per_guarantee {
            return;
        }
        let source = self.labels.source;
        let earlier = match rule.bound {
            Bound::OwnWrite => format!(
                "({}, ok at {})",
                show_pos(source, false, bound),
                secs(ops[bi].time_ns)
            ),
            Bound::OwnRead => format!(
                "({}) at {}",
                show_pos(source, true, bound),
                secs(ops[bi].time_ns)
            ),
        };
        let later = if kind == Kind::Read {
            format!("({}) at {}", show_pos(source, true, v), secs(op.time_ns))
        } else {
            format!(
                "and got {}, not newer, at {}",
                show_pos(source, false, v),
                secs(op.time_ns)
            )
        };
        let key = self.p.key(i);
        let witness = format!(
            "{} {} {earlier} then {} {later}",
            self.labels.session(proc_id),
            self.p.describe_at(bi),
            describe(kind, op, self.p.invoke_of(i), key),
        );
        a.witnesses.push(Violation {
            guarantee: rule.guarantee,
            key: key.map(str::to_string),
            session: self.labels.session_of(proc_id),
            process: proc_id,
            earlier_index: ops[bi].index,
            later_index: op.index,
            earlier_version: bound.rank(),
            later_version: v.rank(),
            witness,
        });
    }

    /// What the walk found, as a part's tally (`keys`, `unpaired` as the caller counts them).
    fn tally(self, keys: u64, unpaired: u64, unseen_appends: u64) -> Tally {
        Tally {
            acc: self.acc,
            key_names: self
                .p
                .key_names
                .iter()
                .map(|k| k.map(str::to_string))
                .collect(),
            stale: self.stale,
            counts: self.counts,
            conflicts: self.conflicts,
            sessions: self.seen_sessions.into_keys().collect(),
            keys,
            unpaired,
            unseen_appends,
            seeds: Vec::new(),
        }
    }

    /// The result: per-guarantee results, stale-read statistics, the verdict.
    fn finish(
        self,
        source: VersionSource,
        source_reason: String,
        unseen_appends: u64,
    ) -> SessionResult {
        let span_ns = self.p.ops.iter().map(|o| o.time_ns).max().unwrap_or(0);
        let guarantees = guarantee_results(self.acc, &self.p.key_names, self.config, span_ns);
        let c = &self.counts;
        let (verdict, reason) = verdict(&guarantees, self.conflicts.count, c, source);
        SessionResult {
            verdict,
            reason,
            version_source: source,
            version_source_reason: source_reason,
            mode: self.config.mode,
            sessions: self.seen_sessions.len() as u64,
            keys: self.p.key_names.len() as u64,
            ok_reads: c.ok_reads,
            ok_writes: c.ok_writes,
            unversioned_reads: c.unversioned_reads,
            unversioned_writes: c.unversioned_writes,
            malformed: c.malformed,
            conflicting_reads: c.conflicting_reads,
            unseen_appends,
            info_ignored: c.info_ignored,
            fail_ignored: c.fail_ignored,
            unpaired: self.p.unpaired_at.len() as u64,
            guarantees,
            stale: stale_stats(self.stale),
            version_conflicts: self.conflicts.count,
            conflicts: self.conflicts.list,
            conflict_timeline: TimeHistogram::of(&self.conflicts.times_ns, span_ns),
        }
    }
}

/// Each guarantee's checks, violations, top keys, witnesses and timeline.
fn guarantee_results(
    acc: Vec<GuaranteeAcc>,
    key_names: &[Option<&str>],
    config: &SessionConfig,
    span_ns: u64,
) -> Vec<GuaranteeResult> {
    Guarantee::ALL
        .iter()
        .zip(acc)
        .map(|(&g, a)| {
            let mut per_key: Vec<(u32, u64)> = a.per_key.into_iter().collect();
            per_key.sort_unstable_by(|x, y| {
                y.1.cmp(&x.1)
                    .then_with(|| key_names[x.0 as usize].cmp(&key_names[y.0 as usize]))
            });
            per_key.truncate(config.top_keys);
            GuaranteeResult {
                guarantee: g,
                checks: a.checks,
                violations: a.violations,
                top_keys: per_key
                    .into_iter()
                    .map(|(k, c)| KeyCount {
                        key: key_names[k as usize].map(str::to_string),
                        violations: c,
                    })
                    .collect(),
                witnesses: a.witnesses,
                timeline: TimeHistogram::of(&a.times_ns, span_ns),
            }
        })
        .collect()
}

/// Percentiles of the stale-read measurements, over all measured reads and over the stale ones.
fn stale_stats(mut s: Stale) -> StaleReadStats {
    let mut stale_vb: Vec<u64> = s
        .versions_behind
        .iter()
        .copied()
        .filter(|&x| x > 0)
        .collect();
    let mut stale_ms: Vec<f64> = s
        .versions_behind
        .iter()
        .zip(&s.ms_behind)
        .filter(|(v, _)| **v > 0)
        .map(|(_, m)| *m)
        .collect();
    s.versions_behind.sort_unstable();
    s.ms_behind.sort_unstable_by(f64::total_cmp);
    stale_vb.sort_unstable();
    stale_ms.sort_unstable_by(f64::total_cmp);
    StaleReadStats {
        reads_measured: s.versions_behind.len() as u64,
        stale_reads: s.stale_reads,
        versions_behind: percentiles(&s.versions_behind),
        ms_behind: percentiles(&s.ms_behind),
        stale_versions_behind: percentiles(&stale_vb),
        stale_ms_behind: percentiles(&stale_ms),
    }
}

/// Invalid on any violation or conflict; unknown when nothing carried a version or no session
/// made two comparable ops on one key (with why); else valid.
pub(super) fn verdict(
    guarantees: &[GuaranteeResult],
    conflicts: u64,
    c: &Counts,
    source: VersionSource,
) -> (Verdict, Option<String>) {
    let checks: u64 = guarantees.iter().map(|g| g.checks).sum();
    let violations: u64 = guarantees.iter().map(|g| g.violations).sum();
    if violations > 0 || conflicts > 0 {
        return (Verdict::Invalid, None);
    }
    if !c.any_version {
        let why = match source {
            VersionSource::System => format!(
                "no ok op carries a version ({} unversioned reads, {} unversioned writes); if written values increase per key, use the increasing-values version source",
                c.unversioned_reads, c.unversioned_writes
            ),
            VersionSource::ListAppend => format!(
                "no ok read returned a non-empty list and no ok append was placed ({} malformed, {} writes that are not appends)",
                c.malformed, c.unversioned_writes
            ),
            VersionSource::IncreasingValues => {
                format!(
                    "no ok op has a positive integer value ({} malformed)",
                    c.malformed
                )
            }
        };
        return (Verdict::Unknown, Some(why));
    }
    if checks == 0 {
        return (
            Verdict::Unknown,
            Some("no session made two comparable ops on one key".to_string()),
        );
    }
    (Verdict::Valid, None)
}
