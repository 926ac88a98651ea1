//! What an rw-register history implies (Elle's `elle.rw-register`): transactions of
//! `["w", k, v]` / `["r", k, v]` over registers whose written values are unique per key.
//!
//! - **wr** edges are exact: a read of `k = v` depends on the one transaction that wrote `v`.
//! - **ww** and **rw** edges exist only where a key's version order is *inferred*. The sources,
//!   as Elle's: the initial state nil precedes every value (always); with
//!   [`Assume::writes_follow_reads`] a transaction that read `k = a` and then wrote `k = b`
//!   orders `a < b`; with [`Assume::sequential_keys`] each process's transactions, and with
//!   [`Assume::linearizable_keys`] the real-time order (none in a history of completions only),
//!   order the versions of each key they touch (the last version one transaction saw or wrote
//!   precedes the first the next one did; process order over ok transactions, real time from ok
//!   ones to ok and indeterminate ones, as Elle's process and real-time graphs). A
//!   source whose orders have a cycle on some key is reported (`cyclic-versions`) and left out.
//!   Every edge of the version graph `a < b` gives ww edges (writer of `a` → writer of `b`) and
//!   rw edges (each reader of `a` → writer of `b`). With the initial state alone a key's
//!   versions are totally ordered only when it has at most one written value, so most ww / rw
//!   edges need an assumption; [`Coverage`] says how many keys got a total order.
//! - Non-cycle anomalies: G1a (a read of a failed write), G1b (a read of a value its writer
//!   overwrote in the same transaction), internal (a read that disagrees with the transaction's
//!   own earlier write, or precedes its own write of that value), fuzzy read (two reads of a key
//!   in one transaction disagree with no write in between), lost update (two committed
//!   transactions read the same version of a key and both wrote it). A read of a value nobody
//!   wrote is, as in Elle, no anomaly by itself (the initial state may hold it): it gets no wr
//!   edge and a note in the result, and shows only through the version orders it takes part in.
//! - A value written twice to a key breaks the inference (`infer` refuses it); what each
//!   transaction shows on its own is still found ([`per_transaction`]).
//!
//! Only committed transactions, and indeterminate ones one of whose writes was read (so they
//! committed), get ww / rw edges: an `info` write nobody saw may never have happened.
//!
//! Owns rw-register inference. Does not own parsing (`parse`), the graph type and the order
//! edges (`infer`), or the cycle search (`cycles`). Pure: no IO.

use super::anomaly::{Kind, Other, VersionSource, edge};
use super::infer::{Graph, Inferred, Reason, found, order_edges, tname};
use super::parse::{Mop, Status, Txns};
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

/// The assumptions that add version orders (Elle's options; all off by default, as in Elle).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Assume {
    /// `wfr-keys`: within a transaction, a write of a key follows its read of it.
    pub writes_follow_reads: bool,
    /// `sequential-keys`: each key is sequentially consistent (process order orders versions).
    pub sequential_keys: bool,
    /// `linearizable-keys`: each key is linearizable (real-time order orders versions).
    pub linearizable_keys: bool,
}

impl Assume {
    /// Parse `--txn-assume`: a comma-separated list of `wfr-keys`, `sequential-keys`,
    /// `linearizable-keys` (Elle's option names), or `none`.
    pub fn parse(list: &str) -> Result<Assume, String> {
        let mut a = Assume::default();
        for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let source = [
                VersionSource::WritesFollowReads,
                VersionSource::SequentialKeys,
                VersionSource::LinearizableKeys,
            ]
            .into_iter()
            .find(|s| s.name() == word);
            match source {
                Some(VersionSource::WritesFollowReads) => a.writes_follow_reads = true,
                Some(VersionSource::SequentialKeys) => a.sequential_keys = true,
                Some(VersionSource::LinearizableKeys) => a.linearizable_keys = true,
                _ if word == "none" => {}
                _ => {
                    return Err(format!(
                        "--txn-assume {word:?}: expected a comma-separated list of wfr-keys, sequential-keys and linearizable-keys, or none"
                    ));
                }
            }
        }
        Ok(a)
    }
}

/// How much of the version orders could be inferred.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Coverage {
    /// The sources used (a source whose orders were cyclic is not).
    pub sources: Vec<&'static str>,
    /// Keys with at least one written or read value.
    pub keys: usize,
    /// Keys whose versions (nil and every value seen) are totally ordered.
    pub keys_totally_ordered: usize,
    /// Version-order edges used.
    pub version_edges: usize,
}

impl Coverage {
    /// `versions totally ordered for 3 of 10 keys (initial-state, wfr-keys)`.
    pub fn describe(&self) -> String {
        format!(
            "versions totally ordered for {} of {} keys ({})",
            self.keys_totally_ordered,
            self.keys,
            self.sources.join(", ")
        )
    }
}

/// The nil version (the initial state) in version graphs.
const NIL: u32 = u32::MAX;

/// What each transaction did to each key, seen from outside.
#[derive(Default)]
struct Ext {
    /// Per transaction: (key, first read before any own write of it) — committed ones only.
    reads: Vec<Vec<(u32, u32)>>,
    /// Per transaction: (key, last write).
    writes: Vec<Vec<(u32, u32)>>,
}

fn get(kvs: &[(u32, u32)], key: u32) -> Option<u32> {
    kvs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

fn show(t: &Txns, v: u32) -> String {
    if v == NIL {
        "nil".to_string()
    } else {
        t.elems.show(v)
    }
}

/// Infer non-cycle anomalies, version orders and the dependency graph of an rw-register
/// history. A value written to one key by two transactions is an error: rw-register needs
/// unique writes (Elle assumes them too).
pub fn infer(t: &Txns, assume: Assume) -> Result<(Inferred, Coverage), String> {
    let n = t.txns.len();
    let mut out = Inferred {
        graph: Graph::new(n),
        ..Inferred::default()
    };
    // Who wrote each (key, value); which writes were overwritten in their own transaction.
    let mut writer: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    let mut ext = Ext {
        reads: vec![Vec::new(); n],
        writes: vec![Vec::new(); n],
    };
    let mut intermediate: FxHashSet<(u32, u32)> = FxHashSet::default();
    for (i, tx) in t.txns.iter().enumerate() {
        let i = i as u32;
        for m in &tx.mops {
            match *m {
                Mop::Write { key, value } => {
                    if let Some(prev) = writer.insert((key, value), i)
                        && prev != i
                    {
                        return Err(format!(
                            "{} and {} both write {} to key {}: rw-register histories need values unique per key",
                            tname(t, prev),
                            tname(t, i),
                            t.elems.show(value),
                            t.keys.show(key)
                        ));
                    }
                    let writes = &mut ext.writes[i as usize];
                    match writes.iter_mut().find(|(k, _)| *k == key) {
                        Some(slot) => {
                            if slot.1 != value {
                                intermediate.insert((key, slot.1));
                            }
                            slot.1 = value;
                        }
                        None => writes.push((key, value)),
                    }
                }
                Mop::ReadRegister {
                    key,
                    value: Some(v),
                } if tx.status == Status::Ok => {
                    let wrote = get(&ext.writes[i as usize], key).is_some();
                    if !wrote && get(&ext.reads[i as usize], key).is_none() {
                        ext.reads[i as usize].push((key, v.unwrap_or(NIL)));
                    }
                }
                _ => {}
            }
        }
    }
    let failed = |w: u32| t.txns[w as usize].status == Status::Fail;
    // Committed, or indeterminate with a write someone read.
    let mut committed: Vec<bool> = t.txns.iter().map(|x| x.status == Status::Ok).collect();
    for (i, reads) in ext.reads.iter().enumerate() {
        for &(key, v) in reads {
            if let Some(&w) = writer.get(&(key, v))
                && !failed(w)
                && w as usize != i
            {
                committed[w as usize] = true;
            }
        }
    }
    read_anomalies(t, Some(&writer), &intermediate, &mut out);
    // wr: exact.
    for (i, reads) in ext.reads.iter().enumerate() {
        for &(key, v) in reads {
            if let Some(&w) = writer.get(&(key, v))
                && !failed(w)
            {
                let r = Reason {
                    key,
                    first: Some(v),
                    second: None,
                    unread: false,
                };
                out.graph.add(w, i as u32, edge::WR, Some(r));
            }
        }
    }
    lost_updates(t, &ext, &mut out.anomalies);
    let (versions, coverage) = version_orders(t, &ext, assume, &mut out.anomalies);
    // ww and rw from every version edge a < b.
    let mut readers: FxHashMap<(u32, u32), Vec<u32>> = FxHashMap::default();
    for (i, reads) in ext.reads.iter().enumerate() {
        for &(key, v) in reads {
            readers.entry((key, v)).or_default().push(i as u32);
        }
    }
    let final_writer = |key: u32, v: u32| -> Option<u32> {
        let &w = writer.get(&(key, v))?;
        (committed[w as usize] && get(&ext.writes[w as usize], key) == Some(v)).then_some(w)
    };
    for &(key, a, b) in &versions {
        let Some(wb) = final_writer(key, b) else {
            continue;
        };
        if a != NIL
            && let Some(wa) = final_writer(key, a)
        {
            let r = Reason {
                key,
                first: Some(a),
                second: Some(b),
                unread: false,
            };
            out.graph.add(wa, wb, edge::WW, Some(r));
        }
        for &ra in readers.get(&(key, a)).into_iter().flatten() {
            let r = Reason {
                key,
                first: (a != NIL).then_some(a),
                second: Some(b),
                unread: false,
            };
            out.graph.add(ra, wb, edge::RW, Some(r));
        }
    }
    order_edges(t, &mut out.graph);
    out.graph.finish();
    Ok((out, coverage))
}

/// The anomalies each committed transaction shows on its own (internal, non-repeatable reads),
/// which need no unique values: what is left to check when the history writes a value twice to
/// a key.
pub fn per_transaction(t: &Txns) -> Vec<super::Found> {
    let mut out = Inferred::default();
    read_anomalies(t, None, &FxHashSet::default(), &mut out);
    out.anomalies
}

/// Internal and fuzzy reads of committed transactions; with `writer` (who wrote each value)
/// also G1a, G1b and future reads, and a note of the reads of values nobody wrote. Such a read
/// is no anomaly by itself, as in Elle's rw-register: it gets no wr edge (the key's initial
/// state may not be nil), and it shows only through what it orders (a cyclic version order under
/// an assumption).
fn read_anomalies(
    t: &Txns,
    writer: Option<&FxHashMap<(u32, u32), u32>>,
    intermediate: &FxHashSet<(u32, u32)>,
    out: &mut Inferred,
) {
    let mut unwritten: Vec<String> = Vec::new();
    for (i, tx) in t.txns.iter().enumerate() {
        if tx.status != Status::Ok {
            continue;
        }
        let i = i as u32;
        // Per key: the value last written (true) or read (false) by this transaction.
        let mut known: FxHashMap<u32, (u32, bool)> = FxHashMap::default();
        for m in &tx.mops {
            match *m {
                Mop::Write { key, value } => {
                    known.insert(key, (value, true));
                }
                Mop::ReadRegister {
                    key,
                    value: Some(v),
                } => {
                    let seen = v.unwrap_or(NIL);
                    let key_s = t.keys.show(key);
                    // A read of its own write keeps the key "written by this transaction".
                    let prior = known.get(&key).copied();
                    let own = prior.is_some_and(|(w, own)| own && w == seen);
                    known.insert(key, (seen, own));
                    match prior {
                        Some((w, true)) if w != seen => out.anomalies.push(found(
                            Kind::Other(Other::Internal),
                            t,
                            &[i],
                            format!(
                                "{} wrote key {key_s} = {} and then read it = {} (internal inconsistency)",
                                tname(t, i),
                                show(t, w),
                                show(t, seen)
                            ),
                        )),
                        Some((r, false)) if r != seen => out.anomalies.push(found(
                            Kind::Other(Other::FuzzyRead),
                            t,
                            &[i],
                            format!(
                                "{} read key {key_s} = {} and later = {} in the same transaction, writing nothing to it in between (non-repeatable read)",
                                tname(t, i),
                                show(t, r),
                                show(t, seen)
                            ),
                        )),
                        _ => {}
                    }
                    let (Some(v), Some(writer)) = (v, writer) else {
                        continue;
                    };
                    match writer.get(&(key, v)) {
                        None => unwritten.push(format!(
                            "{} read key {key_s} = {}",
                            tname(t, i),
                            t.elems.show(v)
                        )),
                        Some(&w) if w == i && !own => {
                            out.anomalies.push(found(
                                Kind::Other(Other::FutureRead),
                                t,
                                &[i],
                                format!(
                                    "{} read key {key_s} = {} before writing that value itself (a future read)",
                                    tname(t, i),
                                    t.elems.show(v)
                                ),
                            ))
                        }
                        Some(&w) if w == i => {}
                        Some(&w) if t.txns[w as usize].status == Status::Fail => {
                            out.anomalies.push(found(
                                Kind::Other(Other::G1a),
                                t,
                                &[i, w],
                                format!(
                                    "{} read key {key_s} = {}, which {} wrote and which failed (aborted read)",
                                    tname(t, i),
                                    t.elems.show(v),
                                    tname(t, w)
                                ),
                            ))
                        }
                        Some(&w) if intermediate.contains(&(key, v)) => {
                            out.anomalies.push(found(
                                Kind::Other(Other::G1b),
                                t,
                                &[i, w],
                                format!(
                                    "{} read key {key_s} = {}, which {} wrote and then overwrote in the same transaction (intermediate read)",
                                    tname(t, i),
                                    t.elems.show(v),
                                    tname(t, w)
                                ),
                            ))
                        }
                        Some(_) => {}
                    }
                }
                _ => {}
            }
        }
    }
    if !unwritten.is_empty() {
        const SHOWN: usize = 3;
        let n = unwritten.len();
        let mut shown = unwritten[..n.min(SHOWN)].join(", ");
        if n > SHOWN {
            shown.push_str(&format!(" and {} more", n - SHOWN));
        }
        out.notes.push(format!(
            "{} of a value no transaction wrote ({shown}): no dependency drawn from {}, as in Elle's rw-register (a key's initial value need not be nil); not an anomaly by itself",
            crate::plural::counted(n, "read"),
            if n == 1 { "it" } else { "them" }
        ));
    }
}

/// Two or more committed transactions that read the same version of a key and then wrote it.
fn lost_updates(t: &Txns, ext: &Ext, anomalies: &mut Vec<super::Found>) {
    let mut groups: FxHashMap<(u32, u32), Vec<u32>> = FxHashMap::default();
    for (i, tx) in t.txns.iter().enumerate() {
        if tx.status != Status::Ok {
            continue;
        }
        for &(key, v) in &ext.reads[i] {
            if get(&ext.writes[i], key).is_some() {
                groups.entry((key, v)).or_default().push(i as u32);
            }
        }
    }
    let mut groups: Vec<_> = groups.into_iter().filter(|(_, v)| v.len() > 1).collect();
    groups.sort_by_key(|((k, _), v)| (*k, v[0]));
    for ((key, v), txns) in groups {
        let names: Vec<String> = txns.iter().map(|&x| tname(t, x)).collect();
        anomalies.push(found(
            Kind::Other(Other::LostUpdate),
            t,
            &txns,
            format!(
                "{} all read key {} = {} and then wrote it: each commit overwrote a version the others had read (lost update)",
                names.join(", "),
                t.keys.show(key),
                show(t, v)
            ),
        ));
    }
}

/// Version-order edges (key, earlier, later) from every source in use, cyclic sources reported
/// and dropped, and how much they order.
fn version_orders(
    t: &Txns,
    ext: &Ext,
    assume: Assume,
    anomalies: &mut Vec<super::Found>,
) -> (Vec<(u32, u32, u32)>, Coverage) {
    let nkeys = t.keys.values.len();
    // Versions per key: nil and every value a committed transaction saw or wrote.
    let mut versions: Vec<FxHashSet<u32>> = vec![FxHashSet::default(); nkeys];
    for (i, tx) in t.txns.iter().enumerate() {
        if tx.status == Status::Fail {
            continue;
        }
        for &(k, v) in ext.reads[i].iter().chain(&ext.writes[i]) {
            versions[k as usize].insert(v);
        }
    }
    let mut edges: FxHashSet<(u32, u32, u32)> = FxHashSet::default();
    for (k, vs) in versions.iter().enumerate() {
        for &v in vs {
            if v != NIL {
                edges.insert((k as u32, NIL, v));
            }
        }
    }
    let mut coverage = Coverage {
        sources: vec![VersionSource::InitialState.name()],
        ..Coverage::default()
    };
    let sources = [
        (assume.writes_follow_reads, VersionSource::WritesFollowReads),
        (assume.sequential_keys, VersionSource::SequentialKeys),
        (assume.linearizable_keys, VersionSource::LinearizableKeys),
    ];
    for (on, source) in sources {
        if !on {
            continue;
        }
        let more = match source {
            VersionSource::WritesFollowReads => wfr_edges(t, ext),
            _ => order_version_edges(t, ext, source),
        };
        let mut trial = edges.clone();
        trial.extend(more.iter().copied().filter(|(_, a, b)| a != b));
        match cyclic_key(&trial, nkeys) {
            Some(key) => anomalies.push(found(
                Kind::Other(Other::CyclicVersions(source)),
                t,
                &[],
                format!(
                    "assuming {}, the versions of key {} form a cycle, so the assumption does not hold; the checker does not use it",
                    match source {
                        VersionSource::WritesFollowReads =>
                            "writes follow reads within transactions (wfr-keys)",
                        VersionSource::SequentialKeys =>
                            "each key is sequentially consistent (sequential-keys)",
                        _ => "each key is linearizable (linearizable-keys)",
                    },
                    t.keys.show(key)
                ),
            )),
            None => {
                edges = trial;
                coverage.sources.push(source.name());
            }
        }
    }
    let mut edges: Vec<(u32, u32, u32)> = edges.into_iter().collect();
    edges.sort_unstable();
    coverage.keys = versions
        .iter()
        .filter(|v| v.iter().any(|&x| x != NIL))
        .count();
    coverage.keys_totally_ordered = totally_ordered_keys(&edges, &versions);
    coverage.version_edges = edges.len();
    (edges, coverage)
}

/// wfr: a committed transaction that read `k = a` and then wrote `k = b` orders `a < b`.
fn wfr_edges(t: &Txns, ext: &Ext) -> Vec<(u32, u32, u32)> {
    let mut v = Vec::new();
    for (i, tx) in t.txns.iter().enumerate() {
        if tx.status != Status::Ok {
            continue;
        }
        for &(k, a) in &ext.reads[i] {
            if let Some(b) = get(&ext.writes[i], k) {
                v.push((k, a, b));
            }
        }
    }
    v
}

/// Per-key orders from process order (sequential-keys) or real-time order (linearizable-keys),
/// as Elle's `transaction-graph->version-graphs` over its process and real-time graphs: the last
/// version a transaction saw or wrote of a key (its write, else its read) precedes the first
/// version the next transaction touching that key saw or wrote (its read, else its write).
/// Process order joins each process's successive ok transactions. Real time runs from each ok
/// transaction to every transaction, ok or indeterminate, invoked after it completed (an
/// indeterminate one by its writes), through a per-key frontier of the latest completed
/// transactions (those not known to precede another completed one); a history of completions
/// only has no real-time order, so none is drawn.
fn order_version_edges(t: &Txns, ext: &Ext, source: VersionSource) -> Vec<(u32, u32, u32)> {
    // A transaction's first and last external version of each key: an ok one read (or else
    // wrote) first and wrote (or else read) last; an indeterminate one only its writes (its
    // reads are unknown, and `ext.reads` holds only ok ones').
    let touched = |i: usize| -> Vec<(u32, u32, u32)> {
        let mut keys: Vec<u32> = ext.reads[i]
            .iter()
            .chain(&ext.writes[i])
            .map(|(k, _)| *k)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter()
            .filter_map(|k| {
                let r = get(&ext.reads[i], k);
                let w = get(&ext.writes[i], k);
                Some((k, r.or(w)?, w.or(r)?))
            })
            .collect()
    };
    let mut out = Vec::new();
    match source {
        VersionSource::SequentialKeys => {
            // (process, key) → the last version the process's previous transaction left.
            let mut last: FxHashMap<(u64, u32), u32> = FxHashMap::default();
            for (i, tx) in t.txns.iter().enumerate() {
                if tx.status != Status::Ok {
                    continue;
                }
                for (k, first, final_v) in touched(i) {
                    if let Some(prev) = last.insert((tx.process, k), final_v) {
                        out.push((k, prev, first));
                    }
                }
            }
        }
        _ if t.realtime_unknown => {}
        _ => {
            let mut events: Vec<(usize, bool, usize)> = Vec::new();
            for (i, tx) in t.txns.iter().enumerate() {
                if tx.status == Status::Fail {
                    continue;
                }
                events.push((tx.invoke, true, i));
                // Only an ok completion is known to come after the transaction took effect.
                if let Some(c) = tx.complete
                    && tx.status == Status::Ok
                {
                    events.push((c, false, i));
                }
            }
            events.sort_unstable();
            // key → frontier of (txn, last version); txn → its predecessors per key.
            let mut frontier: FxHashMap<u32, Vec<(usize, u32)>> = FxHashMap::default();
            let mut preds: FxHashMap<usize, Vec<(u32, Vec<usize>)>> = FxHashMap::default();
            for (_, is_invoke, i) in events {
                let mine = touched(i);
                if is_invoke {
                    let mut p = Vec::new();
                    for &(k, first, _) in &mine {
                        let f = frontier.get(&k).map(Vec::as_slice).unwrap_or(&[]);
                        for &(_, last) in f {
                            out.push((k, last, first));
                        }
                        p.push((k, f.iter().map(|(j, _)| *j).collect()));
                    }
                    if t.txns[i].status == Status::Ok {
                        preds.insert(i, p);
                    }
                } else {
                    let before = preds.remove(&i).unwrap_or_default();
                    for ((k, _, final_v), (_, gone)) in mine.into_iter().zip(before) {
                        let f = frontier.entry(k).or_default();
                        f.retain(|(j, _)| !gone.contains(j));
                        f.push((i, final_v));
                    }
                }
            }
        }
    }
    out
}

/// A key whose version edges have a cycle, if any.
pub(super) fn cyclic_key(edges: &FxHashSet<(u32, u32, u32)>, nkeys: usize) -> Option<u32> {
    let mut per_key: Vec<Vec<(u32, u32)>> = vec![Vec::new(); nkeys];
    for &(k, a, b) in edges {
        if a != NIL {
            per_key[k as usize].push((a, b));
        }
    }
    per_key.iter().enumerate().find_map(|(k, es)| {
        let g = version_graph(es);
        // toposort is iterative; is_cyclic_directed recurses once per version in a chain and
        // overflows the stack on a key with a long version history.
        petgraph::algo::toposort(&g, None)
            .is_err()
            .then_some(k as u32)
    })
}

fn version_graph(es: &[(u32, u32)]) -> DiGraph<u32, ()> {
    let mut g = DiGraph::new();
    let mut ids: FxHashMap<u32, NodeIndex> = FxHashMap::default();
    for &(a, b) in es {
        let ia = *ids.entry(a).or_insert_with(|| g.add_node(a));
        let ib = *ids.entry(b).or_insert_with(|| g.add_node(b));
        g.add_edge(ia, ib, ());
    }
    g
}

/// Keys whose versions are totally ordered: a topological order of the key's version graph in
/// which every two neighbours are joined by an edge (the only order there is).
fn totally_ordered_keys(edges: &[(u32, u32, u32)], versions: &[FxHashSet<u32>]) -> usize {
    let mut per_key: Vec<Vec<(u32, u32)>> = vec![Vec::new(); versions.len()];
    for &(k, a, b) in edges {
        per_key[k as usize].push((a, b));
    }
    let mut n = 0;
    for (k, vs) in versions.iter().enumerate() {
        let written = vs.iter().filter(|&&v| v != NIL).count();
        if written == 0 {
            continue;
        }
        if written == 1 {
            n += 1;
            continue;
        }
        let g = version_graph(&per_key[k]);
        let Ok(order) = petgraph::algo::toposort(&g, None) else {
            continue;
        };
        let covers = order.len() == written + 1;
        if covers && order.windows(2).all(|w| g.contains_edge(w[0], w[1])) {
            n += 1;
        }
    }
    n
}
