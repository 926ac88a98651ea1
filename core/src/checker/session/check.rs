//! The session checker's pass over a history: the four guarantees as one rule table over two
//! bounds per session and key, stale-read quantification (per-key Fenwick trees of acknowledged
//! versions), version conflicts and the result's summary. Does not own how versions are read
//! (`versions`) or the result types (`mod`).

use super::versions::*;
use super::*;
use crate::history::{History, Op, OpType, Process};
use rustc_hash::FxHashMap;
use serde_json::Value;

/// Fenwick tree over one key's sorted distinct acknowledged versions: count of inserted ranks and
/// minimum ack time over rank suffixes.
pub(super) struct KeyAcks {
    versions: Vec<i64>,
    inserted: Vec<bool>,
    count_tree: Vec<u32>,
    min_tree: Vec<u64>,
    total: u64,
}

impl KeyAcks {
    pub(super) fn new(mut versions: Vec<i64>) -> KeyAcks {
        versions.sort_unstable();
        versions.dedup();
        let n = versions.len();
        KeyAcks {
            versions,
            inserted: vec![false; n],
            count_tree: vec![0; n + 1],
            min_tree: vec![u64::MAX; n + 1],
            total: 0,
        }
    }

    pub(super) fn insert(&mut self, version: i64, ack_ns: u64) {
        let Ok(rank) = self.versions.binary_search(&version) else {
            return;
        };
        if self.inserted[rank] {
            return;
        }
        self.inserted[rank] = true;
        self.total += 1;
        let n = self.versions.len();
        let mut i = rank + 1;
        while i <= n {
            self.count_tree[i] += 1;
            i += i & i.wrapping_neg();
        }
        // Reversed index so that a prefix of the min tree is a suffix of ranks.
        let mut j = n - rank;
        while j <= n {
            if ack_ns < self.min_tree[j] {
                self.min_tree[j] = ack_ns;
            }
            j += j & j.wrapping_neg();
        }
    }

    /// (acknowledged versions newer than `version`, earliest ack time among them).
    pub(super) fn newer_than(&self, version: i64) -> (u64, Option<u64>) {
        let r = self.versions.partition_point(|&v| v <= version);
        let mut at_or_below = 0u64;
        let mut i = r;
        while i > 0 {
            at_or_below += u64::from(self.count_tree[i]);
            i -= i & i.wrapping_neg();
        }
        let newer = self.total - at_or_below;
        if newer == 0 {
            return (0, None);
        }
        let mut min = u64::MAX;
        let mut j = self.versions.len() - r;
        while j > 0 {
            min = min.min(self.min_tree[j]);
            j -= j & j.wrapping_neg();
        }
        (newer, (min != u64::MAX).then_some(min))
    }
}

/// Per (session, key): the highest position the session's own ok writes reached and the highest
/// its ok reads returned, each with the completion index that set it. Indexed by `Bound`.
#[derive(Default, Clone, Copy)]
pub(super) struct SessState([Option<(Pos, usize)>; 2]);

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
    checks: u64,
    violations: u64,
    per_key: FxHashMap<u32, u64>,
    witnesses: Vec<Violation>,
    /// Completion time of every violating op.
    times_ns: Vec<u64>,
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
/// module doc for the exact semantics).
pub fn check_sessions(history: &History, config: &SessionConfig) -> SessionResult {
    let ops = &history.ops;
    let n = ops.len();
    let (source, source_reason) = choose_source(history, config);

    // Pass 1: pair invokes with completions, intern keys.
    let mut partner = vec![NONE; n];
    let mut key_id = vec![NO_KEY; n];
    let mut key_ids: FxHashMap<Option<&str>, u32> = FxHashMap::default();
    let mut key_names: Vec<Option<&str>> = Vec::new();
    let mut open: FxHashMap<Process, usize> = FxHashMap::default();
    let mut unpaired = 0u64;
    let kinds: Vec<Option<Kind>> = ops.iter().map(kind_of).collect();
    for (i, op) in ops.iter().enumerate() {
        if kinds[i].is_none() {
            continue;
        }
        let k = *key_ids.entry(op.key.as_deref()).or_insert_with(|| {
            key_names.push(op.key.as_deref());
            (key_names.len() - 1) as u32
        });
        key_id[i] = k;
        if op.op_type == OpType::Invoke {
            if open.insert(op.process, i).is_some() {
                unpaired += 1;
            }
            continue;
        }
        match open.remove(&op.process) {
            Some(inv) => {
                partner[inv] = i;
                partner[i] = inv;
            }
            None => unpaired += 1,
        }
    }

    // Pass 2: versions of ok completions, by source.
    let derived = match source {
        VersionSource::ListAppend => {
            derive_list_append(ops, &kinds, &partner, &key_id, key_names.len())
        }
        VersionSource::System | VersionSource::IncreasingValues => {
            let vers = ops
                .iter()
                .enumerate()
                .map(|(i, op)| match kinds[i] {
                    Some(kind) if op.op_type == OpType::Ok => {
                        if source == VersionSource::System {
                            system_version(kind, op)
                        } else {
                            let inv = (partner[i] != NONE).then(|| &ops[partner[i]]);
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
    };
    let vers = derived.vers;
    let mut acked: Vec<Vec<i64>> = vec![Vec::new(); key_names.len()];
    for (i, op) in ops.iter().enumerate() {
        if op.op_type == OpType::Ok
            && let Some(kind) = kinds[i]
            && kind != Kind::Read
            && let Ver::Known(p) = vers[i]
        {
            acked[key_id[i] as usize].push(p.rank());
        }
    }
    let mut acks: Vec<KeyAcks> = acked.into_iter().map(KeyAcks::new).collect();

    let session_label = |p: u64| match config.mode {
        SessionMode::Process => format!("process {p}"),
        SessionMode::Thread { concurrency } => {
            format!("thread {} (process {p})", p % concurrency.max(1))
        }
    };
    let describe_at = |j: usize| {
        let kj = kind_of(&ops[j]).unwrap_or(Kind::Read);
        let inv = (partner[j] != NONE).then(|| &ops[partner[j]]);
        describe(kj, &ops[j], inv, key_names[key_id[j] as usize])
    };
    let mut version_conflicts = 0u64;
    let mut conflicts: Vec<VersionConflict> = Vec::new();
    let mut conflict_times_ns: Vec<u64> = Vec::new();
    for &(a, b, at, kind) in &derived.conflicts {
        version_conflicts += 1;
        conflict_times_ns.push(ops[b].time_ns);
        if conflicts.len() >= config.max_conflicts {
            continue;
        }
        let key = key_names[key_id[a] as usize];
        let side = |j: usize| {
            format!(
                "{} ({} {}, ok at {})",
                describe_at(j),
                session_label(ops[j].process.client().unwrap_or(0)),
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
        conflicts.push(VersionConflict {
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

    // Pass 3: history order.
    let mut sessions: FxHashMap<(u64, u32), SessState> = FxHashMap::default();
    let mut seen_sessions: FxHashMap<u64, ()> = FxHashMap::default();
    let mut by_version: FxHashMap<(u32, i64), usize> = FxHashMap::default();
    let mut acc: Vec<GuaranteeAcc> = (0..4)
        .map(|_| GuaranteeAcc {
            checks: 0,
            violations: 0,
            per_key: FxHashMap::default(),
            witnesses: Vec::new(),
            times_ns: Vec::new(),
        })
        .collect();
    let mut versions_behind: Vec<u64> = Vec::new();
    let mut ms_behind: Vec<f64> = Vec::new();
    let mut stale_reads = 0u64;
    let (mut ok_reads, mut ok_writes) = (0u64, 0u64);
    let (mut unversioned_reads, mut unversioned_writes, mut malformed) = (0u64, 0u64, 0u64);
    let mut conflicting_reads = 0u64;
    let (mut info_ignored, mut fail_ignored) = (0u64, 0u64);
    let mut any_version = false;

    let session_of = |p: u64| match config.mode {
        SessionMode::Process => p,
        SessionMode::Thread { concurrency } => p % concurrency.max(1),
    };

    for (i, op) in ops.iter().enumerate() {
        let Some(kind) = kinds[i] else { continue };
        let k = key_id[i];
        let Some(proc_id) = op.process.client() else {
            continue;
        };
        let invoke = (partner[i] != NONE && op.op_type != OpType::Invoke).then(|| &ops[partner[i]]);
        match op.op_type {
            OpType::Invoke => {
                // Stale-read measurement happens at the read's invoke, against what was
                // acknowledged before it.
                if kind != Kind::Read || partner[i] == NONE {
                    continue;
                }
                let c = partner[i];
                if ops[c].op_type != OpType::Ok {
                    continue;
                }
                if let Ver::Known(p) = vers[c] {
                    let (newer, first_ack) = acks[k as usize].newer_than(p.rank());
                    versions_behind.push(newer);
                    if newer > 0 {
                        stale_reads += 1;
                        let lag_ns = op.time_ns.saturating_sub(first_ack.unwrap_or(op.time_ns));
                        ms_behind.push(lag_ns as f64 / 1e6);
                    } else {
                        ms_behind.push(0.0);
                    }
                }
                continue;
            }
            OpType::Fail => {
                fail_ignored += 1;
                continue;
            }
            OpType::Info => {
                info_ignored += 1;
                continue;
            }
            OpType::Ok => {}
        }
        let is_read = kind == Kind::Read;
        if is_read {
            ok_reads += 1;
        } else {
            ok_writes += 1;
        }
        let v = match vers[i] {
            Ver::Known(p) => p,
            Ver::Unversioned => {
                if is_read {
                    unversioned_reads += 1;
                } else {
                    unversioned_writes += 1;
                }
                continue;
            }
            Ver::Malformed => {
                malformed += 1;
                continue;
            }
            Ver::Conflicting => {
                conflicting_reads += 1;
                continue;
            }
        };
        if v != Pos::At(0) {
            any_version = true;
        }
        if !is_read {
            acks[k as usize].insert(v.rank(), op.time_ns);
        }
        let key = key_names[k as usize];

        // Version conflicts of reported versions (the list-append source found its own).
        if source != VersionSource::ListAppend
            && let Pos::At(ver) = v
            && ver > 0
        {
            match by_version.entry((k, ver)) {
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(i);
                }
                std::collections::hash_map::Entry::Occupied(e) => {
                    let j = *e.get();
                    let fk = kind_of(&ops[j]).unwrap_or(Kind::Read);
                    let first_inv = (partner[j] != NONE).then(|| &ops[partner[j]]);
                    // An appended element is not the key's whole value: not comparable.
                    let comparable = fk != Kind::Append && kind != Kind::Append;
                    let a = value_of(fk, &ops[j], first_inv);
                    let b = value_of(kind, op, invoke);
                    if let (true, Some(a), Some(b)) = (comparable, a, b)
                        && a != b
                    {
                        version_conflicts += 1;
                        conflict_times_ns.push(op.time_ns);
                        if conflicts.len() < config.max_conflicts {
                            conflicts.push(VersionConflict {
                                kind: "version-conflict",
                                key: key.map(str::to_string),
                                version: ver,
                                first_index: ops[j].index,
                                later_index: op.index,
                                first_value: a.clone(),
                                later_value: b.clone(),
                                witness: format!(
                                    "{} ({} {}, ok at {}) and {} ({} {}, ok at {}) both report {} of {}",
                                    describe(fk, &ops[j], first_inv, key),
                                    session_label(ops[j].process.client().unwrap_or(0)),
                                    ops[j].index,
                                    secs(ops[j].time_ns),
                                    describe(kind, op, invoke, key),
                                    session_label(proc_id),
                                    op.index,
                                    secs(op.time_ns),
                                    show_pos(source, true, v),
                                    key_label(key),
                                ),
                            });
                        }
                    }
                }
            }
        }

        // Session guarantees: every rule for this op's kind, against the session's bound.
        let sid = session_of(proc_id);
        seen_sessions.insert(sid, ());
        let st = sessions.entry((sid, k)).or_default();
        for rule in RULES.iter().filter(|r| r.later_is_read == is_read) {
            let Some((bound, bi)) = st.0[rule.bound as usize] else {
                continue;
            };
            let Some(ord) = v.cmp(bound) else { continue };
            let a = &mut acc[rule.guarantee.slot()];
            a.checks += 1;
            let broken = ord.is_lt() || (rule.must_be_newer && ord.is_eq());
            if !broken {
                continue;
            }
            a.violations += 1;
            a.times_ns.push(op.time_ns);
            *a.per_key.entry(k).or_insert(0) += 1;
            if a.witnesses.len() >= config.max_witnesses_per_guarantee {
                continue;
            }
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
            let later = if is_read {
                format!("({}) at {}", show_pos(source, true, v), secs(op.time_ns))
            } else {
                format!(
                    "and got {}, not newer, at {}",
                    show_pos(source, false, v),
                    secs(op.time_ns)
                )
            };
            a.witnesses.push(Violation {
                guarantee: rule.guarantee,
                key: key.map(str::to_string),
                session: sid,
                process: proc_id,
                earlier_index: ops[bi].index,
                later_index: op.index,
                earlier_version: bound.rank(),
                later_version: v.rank(),
                witness: format!(
                    "{} {} {earlier} then {} {later}",
                    session_label(proc_id),
                    describe_at(bi),
                    describe(kind, op, invoke, key),
                ),
            });
        }
        let slot = &mut st.0[if is_read {
            Bound::OwnRead
        } else {
            Bound::OwnWrite
        } as usize];
        if slot.is_none_or(|(b, _)| v.cmp(b).is_some_and(|o| o.is_gt())) {
            *slot = Some((v, i));
        }
    }

    let span_ns = ops.iter().map(|o| o.time_ns).max().unwrap_or(0);
    let guarantees: Vec<GuaranteeResult> = Guarantee::ALL
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
        .collect();

    let mut stale_vb: Vec<u64> = versions_behind.iter().copied().filter(|&x| x > 0).collect();
    let mut stale_ms: Vec<f64> = versions_behind
        .iter()
        .zip(&ms_behind)
        .filter(|(v, _)| **v > 0)
        .map(|(_, m)| *m)
        .collect();
    versions_behind.sort_unstable();
    ms_behind.sort_unstable_by(f64::total_cmp);
    stale_vb.sort_unstable();
    stale_ms.sort_unstable_by(f64::total_cmp);
    let stale = StaleReadStats {
        reads_measured: versions_behind.len() as u64,
        stale_reads,
        versions_behind: percentiles(&versions_behind),
        ms_behind: percentiles(&ms_behind),
        stale_versions_behind: percentiles(&stale_vb),
        stale_ms_behind: percentiles(&stale_ms),
    };

    let checks: u64 = guarantees.iter().map(|g| g.checks).sum();
    let violations: u64 = guarantees.iter().map(|g| g.violations).sum();
    let (verdict, reason) = if violations > 0 || version_conflicts > 0 {
        (Verdict::Invalid, None)
    } else if !any_version {
        let why = match source {
            VersionSource::System => format!(
                "no ok op carries a version ({unversioned_reads} unversioned reads, {unversioned_writes} unversioned writes); if written values increase per key, use the increasing-values version source"
            ),
            VersionSource::ListAppend => format!(
                "no ok read returned a non-empty list and no ok append was placed ({malformed} malformed, {unversioned_writes} writes that are not appends)"
            ),
            VersionSource::IncreasingValues => {
                format!("no ok op has a positive integer value ({malformed} malformed)")
            }
        };
        (Verdict::Unknown, Some(why))
    } else if checks == 0 {
        (
            Verdict::Unknown,
            Some("no session made two comparable ops on one key".to_string()),
        )
    } else {
        (Verdict::Valid, None)
    };

    SessionResult {
        verdict,
        reason,
        version_source: source,
        version_source_reason: source_reason,
        mode: config.mode,
        sessions: seen_sessions.len() as u64,
        keys: key_names.len() as u64,
        ok_reads,
        ok_writes,
        unversioned_reads,
        unversioned_writes,
        malformed,
        conflicting_reads,
        unseen_appends: derived.unseen_appends,
        info_ignored,
        fail_ignored,
        unpaired,
        guarantees,
        stale,
        version_conflicts,
        conflicts,
        conflict_timeline: TimeHistogram::of(&conflict_times_ns, span_ns),
    }
}

/// "wrote k3 = 12", "read k3 and got 9", "cas k3 from 1 to 12", "appended 7 to k3".
pub(super) fn describe(kind: Kind, op: &Op, invoke: Option<&Op>, key: Option<&str>) -> String {
    let key = key_label(key);
    match kind {
        Kind::Read => format!("read {key} and got {}", show_value(Some(&op.value))),
        Kind::Write => format!("wrote {key} = {}", show_value(value_of(kind, op, invoke))),
        Kind::Append => format!(
            "appended {} to {key}",
            show_value(value_of(kind, op, invoke))
        ),
        Kind::Cas => {
            let arg = if op.value.is_null() {
                invoke.map(|i| &i.value)
            } else {
                Some(&op.value)
            };
            match arg {
                Some(Value::Array(a)) if a.len() == 2 => {
                    format!("cas {key} from {} to {}", a[0], a[1])
                }
                _ => format!("cas {key} (arguments unknown)"),
            }
        }
    }
}
