//! What a list-append history implies: per-key version orders from the reads (every read is a
//! prefix of the key's longest read — Elle's trick), the non-cycle anomalies (G1a, G1b, internal,
//! fuzzy reads, duplicate elements, incompatible orders, lost updates, dirty updates, garbage reads)
//! and the dependency graph (ww, wr, rw — appends no read showed after the last element read, as
//! Elle — process and real-time edges, each data edge with why it exists).
//!
//! Owns inference. Does not own parsing (`parse`), cycle search (`cycles`) or wording beyond each
//! finding's own sentence. Pure: no IO.

use super::anomaly::{Kind, Other, edge};
use super::parse::{Mop, Status, Txns};
use super::{Found, describe_list};
use rustc_hash::FxHashMap;

/// Why a data edge exists: the key, and the element appended by the edge's target (ww: by its
/// source too) or read.
#[derive(Debug, Clone, Copy)]
pub struct Reason {
    /// The key.
    pub key: u32,
    /// ww: the source's element; wr: the element read (the source's); rw: the last element the
    /// source read (`None` = it read the empty list).
    pub first: Option<u32>,
    /// ww, rw: the target's element; wr: unused.
    pub second: Option<u32>,
    /// ww, rw (list-append): no read showed `second`, so it came after `first`, not
    /// necessarily right after it.
    pub unread: bool,
}

/// The dependency graph over transactions (node = index into `Txns::txns`).
#[derive(Debug, Default)]
pub struct Graph {
    /// Out-edges per node: (target, edge type bits).
    pub adj: Vec<Vec<(u32, u8)>>,
    /// Distinct (from, to) pairs, counted by [`Graph::finish`].
    edges: usize,
    /// Why each data edge exists, per (from, to, type bit).
    pub reasons: FxHashMap<(u32, u32, u8), Reason>,
}

impl Graph {
    pub(super) fn new(n: usize) -> Graph {
        Graph {
            adj: vec![Vec::new(); n],
            ..Graph::default()
        }
    }

    pub(super) fn add(&mut self, from: u32, to: u32, bit: u8, reason: Option<Reason>) {
        if from == to {
            return;
        }
        // The same pair added twice in a row merges at once; the others in `finish` (sorting
        // each list is cheaper than a hash lookup per edge: a million transactions have tens of
        // millions of edges).
        let list = &mut self.adj[from as usize];
        match list.last_mut() {
            Some(last) if last.0 == to => last.1 |= bit,
            _ => list.push((to, bit)),
        }
        if let Some(r) = reason {
            self.reasons.entry((from, to, bit)).or_insert(r);
        }
    }

    /// Merge each node's edges to the same target into one (their types or'ed), after the last
    /// [`Graph::add`]; the search needs one entry per pair.
    pub(super) fn finish(&mut self) {
        for list in &mut self.adj {
            if list.len() > 1 {
                list.sort_unstable_by_key(|e| e.0);
                list.dedup_by(|later, kept| {
                    let same = later.0 == kept.0;
                    if same {
                        kept.1 |= later.1;
                    }
                    same
                });
            }
        }
        self.edges = self.adj.iter().map(Vec::len).sum();
    }

    /// Number of distinct (from, to) pairs (after [`Graph::finish`]).
    pub fn edge_count(&self) -> usize {
        self.edges
    }
}

/// Everything inferred before the cycle search.
#[derive(Debug, Default)]
pub struct Inferred {
    /// The dependency graph.
    pub graph: Graph,
    /// Non-cycle anomalies.
    pub anomalies: Vec<Found>,
    /// Per key: the version order (the longest read), when read at all.
    pub orders: Vec<Option<Vec<u32>>>,
    /// What the result should say besides anomalies (one sentence each).
    pub notes: Vec<String>,
}

/// `T17` — a transaction named by its invoke's index (by its completion's position in the input
/// when the invokes were synthesized).
pub fn tname(t: &Txns, i: u32) -> String {
    format!("T{}", t.txns[i as usize].name)
}

pub(super) fn found(kind: Kind, txns: &Txns, nodes: &[u32], text: String) -> Found {
    Found {
        kind,
        name: kind.name().to_string(),
        ops: nodes
            .iter()
            .map(|&n| txns.txns[n as usize].name as u64)
            .collect(),
        explanation: vec![text],
        cycle: None,
    }
}

/// Infer version orders, non-cycle anomalies and the dependency graph. An element appended twice
/// to the same key is an error: list-append needs unique elements per key.
pub fn infer(t: &Txns) -> Result<Inferred, String> {
    let n = t.txns.len();
    let nkeys = t.keys.values.len();
    let mut out = Inferred {
        graph: Graph::new(n),
        orders: vec![None; nkeys],
        ..Inferred::default()
    };
    let writers = Writers::of(t)?;
    let duplicated = version_orders(t, &mut out.orders, &mut out.anomalies);
    single_appends(t, &writers, &mut out.orders);
    dirty_updates(t, &out.orders, &writers, &mut out.anomalies);
    ww_edges(t, &out.orders, &writers, &mut out.graph);
    unobserved_append_edges(t, &out.orders, &writers, &duplicated, &mut out.graph);
    let reads = Reads {
        t,
        orders: &out.orders,
        writers: &writers,
        duplicated: &duplicated,
    };
    reads.anomalies_and_edges(&mut out.anomalies, &mut out.graph);
    internal_and_lost_updates(t, &mut out.anomalies, true);
    order_edges(t, &mut out.graph);
    out.graph.finish();
    Ok(out)
}

/// Who appended each (key, element), and each transaction's last append per key.
struct Writers {
    /// (key, element) → the transaction that appended it.
    writer: FxHashMap<(u32, u32), u32>,
    /// (transaction, key) → the last element it appended to the key.
    last_append: FxHashMap<(u32, u32), u32>,
}

impl Writers {
    /// The writers of `t`; an element appended twice to one key is an error.
    fn of(t: &Txns) -> Result<Writers, String> {
        let mut writer: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut last_append: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        for (i, tx) in t.txns.iter().enumerate() {
            for m in &tx.mops {
                if let Mop::Append { key, elem } = *m {
                    if let Some(prev) = writer.insert((key, elem), i as u32) {
                        return Err(format!(
                            "{} and {} both append {} to key {}: list-append histories need elements unique per key",
                            tname(t, prev),
                            tname(t, i as u32),
                            t.elems.show(elem),
                            t.keys.show(key)
                        ));
                    }
                    last_append.insert((i as u32, key), elem);
                }
            }
        }
        Ok(Writers {
            writer,
            last_append,
        })
    }
}

/// Every committed read: (transaction, key, the list it read).
fn committed_reads(t: &Txns) -> impl Iterator<Item = (u32, u32, &Vec<u32>)> {
    t.txns
        .iter()
        .enumerate()
        .filter(|(_, tx)| tx.status == Status::Ok)
        .flat_map(|(i, tx)| {
            tx.mops.iter().filter_map(move |m| match m {
                Mop::Read { key, list: Some(l) } => Some((i as u32, *key, l)),
                _ => None,
            })
        })
}

/// Each key's version order into `orders`: its longest committed read, of which every read must
/// be a prefix (else an incompatible order). A read holding an element twice is a duplicate;
/// those reads are returned, and left out of everything after.
fn version_orders(
    t: &Txns,
    orders: &mut [Option<Vec<u32>>],
    anomalies: &mut Vec<Found>,
) -> rustc_hash::FxHashSet<*const Vec<u32>> {
    let nkeys = t.keys.values.len();
    // Committed reads: duplicates, longest per key.
    let mut longest: Vec<Option<(u32, &Vec<u32>)>> = vec![None; nkeys];
    let mut duplicated: rustc_hash::FxHashSet<*const Vec<u32>> = Default::default();
    // Last read (1-based) each element was seen in: a duplicate is one seen twice in one read.
    let mut seen_in = vec![0u32; t.elems.values.len()];
    for (r, (i, key, list)) in committed_reads(t).enumerate() {
        let stamp = r as u32 + 1;
        let dup = list
            .iter()
            .find(|e| std::mem::replace(&mut seen_in[**e as usize], stamp) == stamp);
        if let Some(d) = dup {
            duplicated.insert(list as *const _);
            anomalies.push(found(
                Kind::Other(Other::DuplicateElements),
                t,
                &[i],
                format!(
                    "{} read key {} = {}, which holds {} more than once",
                    tname(t, i),
                    t.keys.show(key),
                    describe_list(t, list),
                    t.elems.show(*d)
                ),
            ));
            continue;
        }
        let slot = &mut longest[key as usize];
        if slot.is_none_or(|(_, l)| list.len() > l.len()) {
            *slot = Some((i, list));
        }
    }
    // Incompatible orders: every read must be a prefix of the longest one.
    let mut incompatible_reported = vec![false; nkeys];
    for (i, key, list) in committed_reads(t) {
        let Some((j, long)) = longest[key as usize] else {
            continue;
        };
        if duplicated.contains(&(list as *const _)) || long.starts_with(list) {
            continue;
        }
        if !std::mem::replace(&mut incompatible_reported[key as usize], true) {
            anomalies.push(found(
                Kind::Other(Other::IncompatibleOrder),
                t,
                &[i, j],
                format!(
                    "{} read key {} = {} and {} read it = {}: neither is a prefix of the other, so no single order of appends explains both",
                    tname(t, i),
                    t.keys.show(key),
                    describe_list(t, list),
                    tname(t, j),
                    describe_list(t, long)
                ),
            ));
        }
    }
    for (k, l) in longest.iter().enumerate() {
        orders[k] = l.map(|(_, l)| l.clone());
    }
    duplicated
}

/// A key no read showed anything of, with exactly one append by a transaction that did not
/// fail, has the version order [that element] (Elle's `values-from-single-appends`): a read of
/// it empty then precedes the append (rw) without any read showing it.
fn single_appends(t: &Txns, writers: &Writers, orders: &mut [Option<Vec<u32>>]) {
    let mut only: FxHashMap<u32, Option<u32>> = FxHashMap::default();
    for (&(key, elem), &w) in &writers.writer {
        if t.txns[w as usize].status != Status::Fail {
            only.entry(key)
                .and_modify(|e| *e = None)
                .or_insert(Some(elem));
        }
    }
    for (key, elem) in only {
        let slot = &mut orders[key as usize];
        if let Some(e) = elem
            && slot.as_ref().is_none_or(|o| o.is_empty())
        {
            *slot = Some(vec![e]);
        }
    }
}

/// Dirty updates (Elle's `dirty-update-cases`): walking each key's version order from the
/// initial state (committed), a committed append that follows a failed one, indeterminate
/// appends in between not telling either way. One finding per such committed append, naming
/// the elements from the first failed one to it.
fn dirty_updates(t: &Txns, orders: &[Option<Vec<u32>>], writers: &Writers, out: &mut Vec<Found>) {
    for (k, order) in orders.iter().enumerate() {
        let Some(order) = order else { continue };
        // The last append that was not indeterminate (None = the initial state), and the
        // elements since the first failed one after it.
        let mut last: Option<u32> = None;
        let mut span: Vec<u32> = Vec::new();
        for &e in order {
            let Some(&w) = writers.writer.get(&(k as u32, e)) else {
                continue;
            };
            let failed =
                |x: Option<u32>| x.is_some_and(|x| t.txns[x as usize].status == Status::Fail);
            match t.txns[w as usize].status {
                Status::Info => span.push(e),
                Status::Fail if failed(last) => span.push(e),
                Status::Fail => {
                    last = Some(w);
                    span = vec![e];
                }
                Status::Ok => {
                    if let Some(f) = last.filter(|&f| failed(Some(f))) {
                        span.push(e);
                        out.push(found(
                            Kind::Other(Other::DirtyUpdate),
                            t,
                            &[f, w],
                            format!(
                                "key {}'s version order holds {}: {} appended {}, which failed, and {}, which committed, appended {} after it (dirty update)",
                                t.keys.show(k as u32),
                                describe_list(t, &span),
                                tname(t, f),
                                t.elems.show(span[0]),
                                tname(t, w),
                                t.elems.show(e)
                            ),
                        ));
                    }
                    last = Some(w);
                    span = vec![e];
                }
            }
        }
    }
}

/// ww: consecutive appends by different non-failed writers in each key's order.
fn ww_edges(t: &Txns, orders: &[Option<Vec<u32>>], writers: &Writers, g: &mut Graph) {
    for (k, order) in orders.iter().enumerate() {
        let Some(order) = order else { continue };
        let mut prev: Option<(u32, u32)> = None;
        for &e in order {
            let Some(&w) = writers.writer.get(&(k as u32, e)) else {
                continue;
            };
            if t.txns[w as usize].status == Status::Fail {
                continue;
            }
            if let Some((pw, pe)) = prev
                && pw != w
            {
                let r = Reason {
                    key: k as u32,
                    first: Some(pe),
                    second: Some(e),
                    unread: false,
                };
                g.add(pw, w, edge::WW, Some(r));
            }
            prev = Some((w, e));
        }
    }
}

/// Edges to appends no read showed (Elle's `previously-appended-element`): an element appended
/// by a transaction that did not fail and missing from its key's version order came after the
/// order's last element (a list only grows: had it come before, every read showing that last
/// element would show it too), or after the initial state when nothing of the key was read. So
/// the last element's writer precedes it (ww) and every committed read of exactly the whole
/// order — or, for a key never read non-empty, every empty read — precedes it (rw). Several
/// such appends on one key are not ordered among themselves: each gets the edges, as in Elle.
fn unobserved_append_edges(
    t: &Txns,
    orders: &[Option<Vec<u32>>],
    writers: &Writers,
    duplicated: &rustc_hash::FxHashSet<*const Vec<u32>>,
    g: &mut Graph,
) {
    let observed: rustc_hash::FxHashSet<(u32, u32)> = orders
        .iter()
        .enumerate()
        .filter_map(|(k, o)| o.as_ref().map(|o| (k as u32, o)))
        .flat_map(|(k, o)| o.iter().map(move |&e| (k, e)))
        .collect();
    // Per key: the appends after the order's end, (element, writer).
    let mut after_end: FxHashMap<u32, Vec<(u32, u32)>> = FxHashMap::default();
    for (&(key, elem), &w) in &writers.writer {
        if t.txns[w as usize].status != Status::Fail && !observed.contains(&(key, elem)) {
            after_end.entry(key).or_default().push((elem, w));
        }
    }
    if after_end.is_empty() {
        return;
    }
    for list in after_end.values_mut() {
        list.sort_unstable();
    }
    let last_of = |key: u32| {
        orders[key as usize]
            .as_ref()
            .and_then(|o| o.last().copied())
    };
    // ww: from the writer of the order's last element.
    for (&key, appends) in &after_end {
        let Some(last) = last_of(key) else { continue };
        let Some(&lw) = writers.writer.get(&(key, last)) else {
            continue;
        };
        if t.txns[lw as usize].status == Status::Fail {
            continue;
        }
        for &(elem, w) in appends {
            let r = Reason {
                key,
                first: Some(last),
                second: Some(elem),
                unread: true,
            };
            g.add(lw, w, edge::WW, Some(r));
        }
    }
    // rw: from every committed read of the whole order.
    for (i, key, list) in committed_reads(t) {
        let Some(appends) = after_end.get(&key) else {
            continue;
        };
        if duplicated.contains(&(list as *const _)) {
            continue;
        }
        let whole = match &orders[key as usize] {
            Some(o) => o[..] == list[..],
            None => list.is_empty(),
        };
        if !whole {
            continue;
        }
        for &(elem, w) in appends {
            let r = Reason {
                key,
                first: list.last().copied(),
                second: Some(elem),
                unread: true,
            };
            g.add(i, w, edge::RW, Some(r));
        }
    }
}

/// What the reads' anomalies and edges are read against.
struct Reads<'a> {
    t: &'a Txns,
    orders: &'a [Option<Vec<u32>>],
    writers: &'a Writers,
    /// Reads holding an element twice: left out.
    duplicated: &'a rustc_hash::FxHashSet<*const Vec<u32>>,
}

impl Reads<'_> {
    /// G1a, garbage reads and G1b into `anomalies`; wr and rw edges into `g`.
    fn anomalies_and_edges(&self, anomalies: &mut Vec<Found>, g: &mut Graph) {
        let (t, writers) = (self.t, self.writers);
        for (i, key, list) in committed_reads(t) {
            if self.duplicated.contains(&(list as *const _)) {
                continue;
            }
            for &e in list {
                match writers.writer.get(&(key, e)) {
                    None => anomalies.push(found(
                        Kind::Other(Other::GarbageRead),
                        t,
                        &[i],
                        format!(
                            "{} read key {} = {}, but no transaction appended {}",
                            tname(t, i),
                            t.keys.show(key),
                            describe_list(t, list),
                            t.elems.show(e)
                        ),
                    )),
                    Some(&w) if t.txns[w as usize].status == Status::Fail => {
                        anomalies.push(found(
                            Kind::Other(Other::G1a),
                            t,
                            &[i, w],
                            format!(
                                "{} read key {} = {}, including {}, which {} appended and which failed (aborted read)",
                                tname(t, i),
                                t.keys.show(key),
                                describe_list(t, list),
                                t.elems.show(e),
                                tname(t, w)
                            ),
                        ))
                    }
                    _ => {}
                }
            }
            // The version the transaction saw from others: its last element not its own.
            let external = list
                .iter()
                .rposition(|e| writers.writer.get(&(key, *e)) != Some(&i));
            if let Some(pos) = external {
                let e = list[pos];
                if let Some(&w) = writers.writer.get(&(key, e)) {
                    if writers.last_append.get(&(w, key)).is_some_and(|&l| l != e)
                        && pos + 1 == list.len()
                    {
                        anomalies.push(found(
                            Kind::Other(Other::G1b),
                            t,
                            &[i, w],
                            format!(
                                "{} read key {} = {}, ending at {}, but {} appended {} to it after {} (intermediate read)",
                                tname(t, i),
                                t.keys.show(key),
                                describe_list(t, list),
                                t.elems.show(e),
                                tname(t, w),
                                t.elems.show(writers.last_append[&(w, key)]),
                                t.elems.show(e)
                            ),
                        ));
                    }
                    if t.txns[w as usize].status != Status::Fail {
                        let r = Reason {
                            key,
                            first: Some(e),
                            second: None,
                            unread: false,
                        };
                        g.add(w, i, edge::WR, Some(r));
                    }
                }
            }
            // rw: the element after what was read was appended by someone who came later.
            let Some(order) = &self.orders[key as usize] else {
                continue;
            };
            if !order.starts_with(list) {
                continue;
            }
            if let Some(&next) = order.get(list.len())
                && let Some(&w) = writers.writer.get(&(key, next))
                && t.txns[w as usize].status != Status::Fail
            {
                let r = Reason {
                    key,
                    first: list.last().copied(),
                    second: Some(next),
                    unread: false,
                };
                g.add(i, w, edge::RW, Some(r));
            }
        }
    }
}

/// The anomalies each committed transaction shows on its own (internal, non-repeatable reads),
/// which need no unique elements: what is left to check when the history appends an element
/// twice to a key.
pub fn per_transaction(t: &Txns) -> Vec<Found> {
    let mut anomalies = Vec::new();
    internal_and_lost_updates(t, &mut anomalies, false);
    anomalies
}

/// Internal consistency of each committed transaction, and (with `lost_updates`) lost updates.
fn internal_and_lost_updates(t: &Txns, anomalies: &mut Vec<Found>, lost_updates: bool) {
    // (key, version read: last element or none) → committed txns that read it, then appended.
    let mut read_then_wrote: FxHashMap<(u32, Option<u32>), Vec<u32>> = FxHashMap::default();
    for (i, tx) in t.txns.iter().enumerate() {
        if tx.status != Status::Ok {
            continue;
        }
        let i = i as u32;
        // Per key: the list it must read next (when a read fixed it), or its own appends since.
        let mut expect: FxHashMap<u32, (Option<Vec<u32>>, Vec<u32>)> = FxHashMap::default();
        let mut first_read: FxHashMap<u32, Option<u32>> = FxHashMap::default();
        let mut appended: rustc_hash::FxHashSet<u32> = Default::default();
        for m in &tx.mops {
            match m {
                Mop::Append { key, elem } => {
                    let (_, own) = expect.entry(*key).or_default();
                    own.push(*elem);
                    if first_read.contains_key(key) {
                        appended.insert(*key);
                    }
                }
                Mop::Read {
                    key,
                    list: Some(list),
                } => {
                    // `known`: the last read of the key; `own`: appends to it since.
                    let (known, own) = expect.entry(*key).or_default();
                    let sees_own = list.ends_with(own);
                    let same_base = known
                        .as_ref()
                        .is_none_or(|k| sees_own && list[..list.len() - own.len()] == k[..]);
                    if !sees_own {
                        anomalies.push(found(
                            Kind::Other(Other::Internal),
                            t,
                            &[i],
                            format!(
                                "{} read key {} = {}, which does not end with its own earlier appends {}",
                                tname(t, i),
                                t.keys.show(*key),
                                describe_list(t, list),
                                describe_list(t, own)
                            ),
                        ));
                    } else if !same_base {
                        let before = known.as_deref().unwrap_or(&[]);
                        anomalies.push(found(
                            Kind::Other(Other::FuzzyRead),
                            t,
                            &[i],
                            format!(
                                "{} read key {} = {} after reading it = {} earlier in the same transaction{} (non-repeatable read)",
                                tname(t, i),
                                t.keys.show(*key),
                                describe_list(t, list),
                                describe_list(t, before),
                                if own.is_empty() {
                                    String::new()
                                } else {
                                    format!(" and appending {}", describe_list(t, own))
                                }
                            ),
                        ));
                    }
                    *known = Some(list.clone());
                    own.clear();
                    if !expect_has_own_appends(tx, *key, m) {
                        first_read.entry(*key).or_insert(list.last().copied());
                    }
                }
                _ => {}
            }
        }
        for key in appended {
            read_then_wrote
                .entry((key, first_read[&key]))
                .or_default()
                .push(i);
        }
    }
    if !lost_updates {
        return;
    }
    let mut groups: Vec<_> = read_then_wrote
        .into_iter()
        .filter(|(_, v)| v.len() > 1)
        .collect();
    groups.sort_by_key(|((k, _), v)| (*k, v[0]));
    for ((key, version), txns) in groups {
        let names: Vec<String> = txns.iter().map(|&x| tname(t, x)).collect();
        let version = version.map_or("the empty list".to_string(), |e| {
            format!("the version ending at {}", t.elems.show(e))
        });
        anomalies.push(found(
            Kind::Other(Other::LostUpdate),
            t,
            &txns,
            format!(
                "{} all read key {} at {} and then appended to it: each commit overwrote a version the others had read (lost update)",
                names.join(", "),
                t.keys.show(key),
                version
            ),
        ));
    }
}

/// True when the txn appended to `key` before the read `at` (so the read is not of an external
/// version alone).
fn expect_has_own_appends(tx: &super::parse::Txn, key: u32, at: &Mop) -> bool {
    for m in &tx.mops {
        if std::ptr::eq(m, at) {
            return false;
        }
        if matches!(m, Mop::Append { key: k, .. } if *k == key) {
            return true;
        }
    }
    false
}

/// Process-order and real-time edges, as far as `t.orders` has them. Real time: at each
/// invoke, an edge from every committed transaction on the frontier (completed, not yet known to
/// precede a later completed one); at each completion the transaction replaces the ones that
/// precede it. With invokes, a process edge runs from each committed transaction to the
/// process's next one. In a history of completions only there is no real-time edge, as Elle
/// draws none without invokes, and process edges (when drawn) join successive committed
/// transactions of a process, as Elle's process graph over ok completions.
pub(super) fn order_edges(t: &Txns, g: &mut Graph) {
    let orders = t.orders;
    if !orders.realtime && !orders.process {
        return;
    }
    let mut last_on_process: FxHashMap<u64, u32> = FxHashMap::default();
    // Events: (time-ordered by history index) invoke / complete.
    let mut events: Vec<(usize, bool, u32)> = Vec::with_capacity(t.txns.len() * 2);
    for (i, tx) in t.txns.iter().enumerate() {
        events.push((tx.invoke, true, i as u32));
        if tx.status == Status::Ok
            && let Some(c) = tx.complete
        {
            events.push((c, false, i as u32));
        }
    }
    events.sort_unstable();
    let mut frontier: Vec<u32> = Vec::new();
    let mut preds: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    for (_, is_invoke, i) in events {
        let tx = &t.txns[i as usize];
        if is_invoke {
            if tx.status == Status::Fail {
                continue;
            }
            if orders.realtime {
                for &p in &frontier {
                    g.add(p, i, edge::REALTIME, None);
                }
                if tx.status == Status::Ok {
                    preds.insert(i, frontier.clone());
                }
            }
            let target = t.orders.realtime || tx.status == Status::Ok;
            if orders.process
                && target
                && let Some(&prev) = last_on_process.get(&tx.process)
            {
                g.add(prev, i, edge::PROCESS, None);
            }
            if tx.status == Status::Ok {
                last_on_process.insert(tx.process, i);
            }
        } else if orders.realtime {
            let before = preds.remove(&i).unwrap_or_default();
            frontier.retain(|f| !before.contains(f));
            frontier.push(i);
        }
    }
}
