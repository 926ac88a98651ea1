//! How the session checker reads versions: the op kinds it judges, a position in a key's
//! version order (`Pos`) and an op's version (`Ver`) under each source, the auto choice of
//! source, and the list-append derivation (versions recovered from reads, Elle's prefix trick).
//! Does not own the guarantees' rules or the result (`check`, `mod`).

use super::*;
use crate::history::{History, Op, OpType};
use rustc_hash::FxHashMap;
use serde_json::Value;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Read,
    Write,
    Cas,
    Append,
}

pub(super) fn kind_of(op: &Op) -> Option<Kind> {
    if !op.is_client() {
        return None;
    }
    match op.f.as_str() {
        "read" => Some(Kind::Read),
        "write" => Some(Kind::Write),
        "cas" => Some(Kind::Cas),
        "append" => Some(Kind::Append),
        _ => None,
    }
}

/// A judged position in a key's version order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Pos {
    /// A known version (0 = absent key / empty list, reads only).
    At(i64),
    /// An ok append no read ever showed: after every version any read returned, order among
    /// such appends unknown. The number is a synthetic rank (> every read's version) used only
    /// for stale-read counting.
    Unseen(i64),
}

impl Pos {
    /// The version used for stale-read counting and the result's `*_version` fields.
    pub(super) fn rank(self) -> i64 {
        match self {
            Pos::At(v) | Pos::Unseen(v) => v,
        }
    }

    /// Order of two positions; `None` when they cannot be compared (two unseen appends).
    pub(super) fn cmp(self, other: Pos) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Pos::At(a), Pos::At(b)) => Some(a.cmp(&b)),
            (Pos::At(_), Pos::Unseen(_)) => Some(std::cmp::Ordering::Less),
            (Pos::Unseen(_), Pos::At(_)) => Some(std::cmp::Ordering::Greater),
            (Pos::Unseen(_), Pos::Unseen(_)) => None,
        }
    }
}

/// How an ok op's version can be used.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Ver {
    /// A judgeable position.
    Known(Pos),
    /// No version reported (or derivable).
    Unversioned,
    /// An impossible version or a value of the wrong shape.
    Malformed,
    /// A list-append read that is not a prefix of the key's longest list (reported as a
    /// version conflict, not judged further).
    Conflicting,
}

pub(super) fn system_version(kind: Kind, op: &Op) -> Ver {
    match (kind, op.version) {
        (Kind::Read, None) if op.value.is_null() => Ver::Known(Pos::At(0)),
        (Kind::Read, Some(0)) if op.value.is_null() => Ver::Known(Pos::At(0)),
        (_, None) => Ver::Unversioned,
        (_, Some(v)) if v >= 1 => Ver::Known(Pos::At(v)),
        _ => Ver::Malformed,
    }
}

pub(super) fn increasing_version(kind: Kind, op: &Op, invoke: Option<&Op>) -> Ver {
    if kind == Kind::Append {
        return Ver::Unversioned;
    }
    if kind == Kind::Read && op.value.is_null() {
        return Ver::Known(Pos::At(0));
    }
    match value_of(kind, op, invoke).map(Value::as_i64) {
        Some(Some(v)) if v >= 1 => Ver::Known(Pos::At(v)),
        _ => Ver::Malformed,
    }
}

/// The value an ok op associates with its version: the read value, the written value, the
/// cas's new value or the appended element. Falls back to the invoke's argument when the
/// completion carries none.
pub(super) fn value_of<'a>(kind: Kind, op: &'a Op, invoke: Option<&'a Op>) -> Option<&'a Value> {
    let pick = |v: &'a Value| -> Option<&'a Value> {
        match kind {
            Kind::Read | Kind::Write | Kind::Append => Some(v),
            Kind::Cas => match v {
                Value::Array(a) if a.len() == 2 => Some(&a[1]),
                _ => None,
            },
        }
    };
    if kind == Kind::Read || !op.value.is_null() {
        return pick(&op.value);
    }
    invoke.and_then(|i| pick(&i.value))
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

pub(super) fn secs(t_ns: u64) -> String {
    format!("{:.3} s", t_ns as f64 / 1e9)
}

pub(super) fn show_value(v: Option<&Value>) -> String {
    match v {
        None => "?".to_string(),
        Some(Value::Null) => "nothing".to_string(),
        Some(v) => v.to_string(),
    }
}

/// How a position reads in a witness: "version 12" / "version none" for versioned sources,
/// "3 elements" / "position 5" / "never read" for list-append.
pub(super) fn show_pos(source: VersionSource, is_read: bool, p: Pos) -> String {
    match (source, p) {
        (VersionSource::ListAppend, Pos::Unseen(_)) => "position unknown: never read".to_string(),
        (VersionSource::ListAppend, Pos::At(v)) if is_read => format!("{v} elements"),
        (VersionSource::ListAppend, Pos::At(v)) => format!("position {v}"),
        (_, Pos::At(0)) => "version none".to_string(),
        (_, p) => format!("version {}", p.rank()),
    }
}

/// The auto rule (see the module doc): list-append if the history has `append` ops or
/// list-valued ok reads, else system versions. Returns the source and why.
pub(super) fn choose_source(history: &History, config: &SessionConfig) -> (VersionSource, String) {
    let mut sniff = SourceSniff::new(config);
    for op in &history.ops {
        if sniff.decided() {
            break;
        }
        sniff.see(op);
    }
    sniff.choice()
}

/// The version source the whole check uses ([`SessionConfig::source`], or the auto rule of the
/// module doc), fed a history op by op: what a check in parts fixes up front and confirms at
/// the end.
#[derive(Debug, Clone)]
pub struct SourceSniff {
    configured: Option<VersionSource>,
    /// The first op that chose list-append, in words.
    found: Option<&'static str>,
    /// Some ok op carried a system version.
    versioned: bool,
}

impl SourceSniff {
    /// Nothing seen yet.
    pub fn new(config: &SessionConfig) -> SourceSniff {
        SourceSniff {
            configured: config.source,
            found: None,
            versioned: false,
        }
    }

    /// Whether later ops can no longer change the choice.
    pub fn decided(&self) -> bool {
        self.configured.is_some() || self.found.is_some()
    }

    /// See the history's next op.
    pub fn see(&mut self, op: &Op) {
        if self.decided() {
            return;
        }
        let Some(kind) = kind_of(op) else { return };
        if kind == Kind::Append {
            self.found = Some("the history has append ops");
        } else if op.op_type == OpType::Ok {
            if kind == Kind::Read && op.value.is_array() {
                self.found = Some("ok reads return lists");
            }
            self.versioned |= op.version.is_some();
        }
    }

    /// The source for the ops seen so far, and why.
    pub fn choice(&self) -> (VersionSource, String) {
        if let Some(s) = self.configured {
            return (s, "chosen by configuration".to_string());
        }
        if let Some(why) = self.found {
            return (VersionSource::ListAppend, why.to_string());
        }
        if self.versioned {
            (
                VersionSource::System,
                "ok ops carry system versions".to_string(),
            )
        } else {
            (
                VersionSource::System,
                "no versions, lists or declared increasing values; defaulted".to_string(),
            )
        }
    }
}

/// A list-append conflict as [`derive_list_append`] finds it (see [`Derived::conflicts`]).
pub(super) type ListConflict = (usize, usize, i64, &'static str, usize);

/// Derived versions and the conflicts found while deriving them.
pub(super) struct Derived {
    /// Per history position; meaningful at ok completions only.
    pub(super) vers: Vec<Ver>,
    /// Conflicts found by the list-append prefix check (system conflicts are found later): the
    /// two ops, the position where they differ, the kind, and the op it was found at (the
    /// longest read for a duplicate element, else the read that is not its prefix).
    pub(super) conflicts: Vec<ListConflict>,
    /// Ok appends whose element no read showed.
    pub(super) unseen_appends: u64,
}

/// The elements of a read value when it is a list of integers (`null` = empty).
pub(super) fn int_list(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Null => Some(&[]),
        Value::Array(a) if a.iter().all(Value::is_i64) => Some(a),
        _ => None,
    }
}

/// List-append versions (Elle's trick): a read's version is its length and must be a prefix of
/// the key's longest read; an ok append's version is the 1-based position its element first
/// appears at in that longest list, or `Unseen` when no read shows it. Linear in the total size
/// of the history (each read list is compared once, element by element).
pub(super) fn derive_list_append(
    ops: &[Op],
    kinds: &[Option<Kind>],
    partner: &[usize],
    key_id: &[u32],
    nkeys: usize,
) -> Derived {
    let n = ops.len();
    let mut vers = vec![Ver::Unversioned; n];
    let is_ok_read = |i: usize| ops[i].op_type == OpType::Ok && kinds[i] == Some(Kind::Read);
    // Longest ok read per key: (history position, length).
    let mut longest: Vec<Option<(usize, usize)>> = vec![None; nkeys];
    for (i, op) in ops.iter().enumerate() {
        if !is_ok_read(i) {
            continue;
        }
        match int_list(&op.value) {
            Some(l) => {
                let k = key_id[i] as usize;
                if longest[k].is_none_or(|(_, len)| l.len() > len) {
                    longest[k] = Some((i, l.len()));
                }
            }
            None => vers[i] = Ver::Malformed,
        }
    }
    let list_at = |i: usize| int_list(&ops[i].value).unwrap_or(&[]);
    let mut conflicts = Vec::new();
    // Element → 1-based position in the key's longest list.
    let mut position: FxHashMap<(u32, i64), i64> = FxHashMap::default();
    for (k, l) in longest.iter().enumerate() {
        let Some((li, _)) = *l else { continue };
        for (p, e) in list_at(li).iter().enumerate() {
            let e = e.as_i64().unwrap_or(0);
            if position.insert((k as u32, e), p as i64 + 1).is_some() {
                // An element appended once appears twice: the list contradicts itself.
                conflicts.push((li, li, p as i64 + 1, "duplicate-element", li));
            }
        }
    }
    for i in 0..n {
        if !is_ok_read(i) || vers[i] == Ver::Malformed {
            continue;
        }
        let Some((li, _)) = longest[key_id[i] as usize] else {
            continue;
        };
        let list = list_at(i);
        match list.iter().zip(list_at(li)).position(|(a, b)| a != b) {
            None => vers[i] = Ver::Known(Pos::At(list.len() as i64)),
            Some(p) => {
                vers[i] = Ver::Conflicting;
                conflicts.push((i.min(li), i.max(li), p as i64 + 1, "version-conflict", i));
            }
        }
    }
    // Synthetic ranks for unseen appends start beyond the longest list of their key.
    let mut next_unseen: Vec<i64> = longest
        .iter()
        .map(|l| l.map_or(0, |(_, len)| len as i64) + 1)
        .collect();
    let mut unseen_appends = 0u64;
    for (i, op) in ops.iter().enumerate() {
        // Only appends can be placed; writes and cas stay unversioned.
        if op.op_type != OpType::Ok || kinds[i] != Some(Kind::Append) {
            continue;
        }
        let inv = (partner[i] != NONE).then(|| &ops[partner[i]]);
        let Some(e) = value_of(Kind::Append, op, inv).and_then(Value::as_i64) else {
            vers[i] = Ver::Malformed;
            continue;
        };
        let k = key_id[i];
        vers[i] = match position.get(&(k, e)) {
            Some(&p) => Ver::Known(Pos::At(p)),
            None => {
                unseen_appends += 1;
                let r = next_unseen[k as usize];
                next_unseen[k as usize] += 1;
                Ver::Known(Pos::Unseen(r))
            }
        };
    }
    Derived {
        vers,
        conflicts,
        unseen_appends,
    }
}
