//! Cycle search over the dependency graph: strongly connected components (petgraph's Kosaraju,
//! iterative: a recursive Tarjan overflows the stack on a graph of a million transactions),
//! then, per component and per anomaly shape, a breadth-first search for a cycle of that shape:
//! G0 (ww only), G1c (ww + wr, at least one wr), G-single-item (exactly one rw),
//! G-nonadjacent-item (two or more rw, no two adjacent — what snapshot isolation forbids),
//! G2-item (two or more rw, two of them adjacent), each also with process-order and real-time
//! edges (`-process`, `-realtime`). Each search starts from an edge of the type the shape needs
//! and looks for the shortest way back through the edge types it allows; its states are
//! (transaction, flags), the flags tracking what the shape needs (a required edge type used; the
//! last edge an rw; a second rw, or two adjacent). A search for G-nonadjacent or G2-item may
//! take an edge that has several types as either its rw or its other type; the other shapes
//! count such an edge as its most telling type (ww, wr, rw, process, realtime). A found walk
//! that visits a transaction twice is cut into simple cycles and one of them kept (of the
//! shape searched for when one is; a non-adjacent walk always holds a simple cycle with no two
//! rw adjacent), and a cycle is reported as the shape its edges give, so shapes are never
//! mislabelled.
//!
//! Each search is confined to the component of the subgraph of the edge types it may use (a
//! cycle of those types lies inside one). Budgets: the searches share a time budget, one search
//! visits at most 10,000 states, and one shape's searches in one component at most 1,000,000; a
//! component whose searches did not all finish is reported with the shapes left unsearched and
//! why, never dropped. Owns search and
//! classification. Does not own the graph (`infer`) or wording (`mod`). Pure apart from reading
//! the clock for its budget.

use super::anomaly::{CycleShape, Kind, Variant, edge};
use super::infer::Graph;
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One step of a cycle: `from → to` by an edge of type `bit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hop {
    /// Source node.
    pub from: u32,
    /// Target node.
    pub to: u32,
    /// The edge type it is counted as.
    pub bit: u8,
}

/// A component whose search did not finish.
#[derive(Debug, Clone, Serialize)]
pub struct Unsearched {
    /// Transactions in the component.
    pub size: usize,
    /// The shapes not (fully) searched in it.
    pub shapes: Vec<String>,
    /// The same shapes as kinds (for the verdict: only a shape a model proscribes makes it
    /// unknown).
    #[serde(skip)]
    pub kinds: Vec<Kind>,
    /// Why.
    pub reason: String,
}

/// What the search found.
#[derive(Debug, Default)]
pub struct Cycles {
    /// One cycle per (component, shape) found.
    pub cycles: Vec<(Kind, Vec<Hop>)>,
    /// Components left (partly) unsearched.
    pub unsearched: Vec<Unsearched>,
    /// Components of two or more transactions.
    pub components: usize,
}

/// What a search tracks about the rw edges of its walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rw {
    /// Nothing: the path types fix the count (none or the first edge only).
    Free,
    /// Two or more rw edges, no two adjacent (the first edge is one).
    Nonadjacent,
    /// Two rw edges adjacent somewhere (the first edge is one).
    Adjacent,
}

/// One search: start on an edge of type `first`, come back through `path` types; when
/// `require` is not 0 the cycle must use one of those types somewhere.
struct Spec {
    kind: Kind,
    first: u8,
    path: u8,
    require: u8,
    rw: Rw,
}

/// State flags: a required type was used.
const REQ: u8 = 1;
/// State flags: the last edge taken was an rw.
const LAST_RW: u8 = 2;
/// State flags: a second rw (non-adjacent search) or an adjacent pair (adjacent search) was seen.
const MORE: u8 = 4;
/// States per transaction.
const FLAGS: u32 = 8;

impl Spec {
    /// The flags after taking an edge counted as `bit` from a state with `flags`, or `None` when
    /// the shape forbids it.
    fn step(&self, flags: u8, bit: u8) -> Option<u8> {
        let mut f = flags;
        if bit & self.require != 0 {
            f |= REQ;
        }
        match self.rw {
            Rw::Free => {}
            Rw::Nonadjacent if bit == edge::RW => {
                if flags & LAST_RW != 0 {
                    return None;
                }
                f |= LAST_RW | MORE;
            }
            Rw::Adjacent if bit == edge::RW => {
                if flags & LAST_RW != 0 {
                    f |= MORE;
                }
                f |= LAST_RW;
            }
            _ => f &= !LAST_RW,
        }
        Some(f)
    }

    /// The flags right after the first edge.
    fn start(&self) -> u8 {
        let mut f = 0;
        if self.first & self.require != 0 {
            f |= REQ;
        }
        if self.rw != Rw::Free && self.first == edge::RW {
            f |= LAST_RW;
        }
        f
    }

    /// Whether arriving back at the start with `flags` closes a cycle of the shape (the first
    /// edge, an rw for the rw-tracking shapes, follows the last).
    fn closes(&self, flags: u8) -> bool {
        let req = self.require == 0 || flags & REQ != 0;
        req && match self.rw {
            Rw::Free => true,
            Rw::Nonadjacent => flags & LAST_RW == 0 && flags & MORE != 0,
            Rw::Adjacent => flags & (LAST_RW | MORE) != 0,
        }
    }

    /// The types an edge with `mask` may be counted as: its most telling allowed type, and for
    /// the rw-tracking shapes also rw when it has one (a search may need either).
    fn bits(&self, mask: u8) -> [Option<u8>; 2] {
        match self.rw {
            Rw::Free => [edge::pick(mask, self.path), None],
            _ => [
                edge::pick(mask, self.path & !edge::RW),
                (mask & self.path & edge::RW != 0).then_some(edge::RW),
            ],
        }
    }
}

fn specs() -> Vec<Spec> {
    use edge::*;
    let mut v = Vec::new();
    for (variant, extra) in [
        (Variant::Plain, 0),
        (Variant::Process, PROCESS),
        (Variant::Realtime, REALTIME | PROCESS),
    ] {
        let require = match variant {
            Variant::Plain => 0,
            Variant::Process => PROCESS,
            Variant::Realtime => REALTIME,
        };
        let first_for = |data_first: u8| if require == 0 { data_first } else { require };
        let mut push = |shape, first, path, rw| {
            v.push(Spec {
                kind: Kind::Cycle(shape, variant),
                first,
                path,
                require,
                rw,
            })
        };
        push(CycleShape::G0, first_for(WW), WW | extra, Rw::Free);
        push(CycleShape::G1c, WR, WW | WR | extra, Rw::Free);
        push(CycleShape::GSingle, RW, WW | WR | extra, Rw::Free);
        push(CycleShape::GNonadjacent, RW, DATA | extra, Rw::Nonadjacent);
        push(CycleShape::G2Item, RW, DATA | extra, Rw::Adjacent);
    }
    v
}

/// Whether two rw hops follow each other somewhere in the cycle (the last hop is followed by
/// the first).
fn rw_adjacent(hops: &[Hop]) -> bool {
    let n = hops.len();
    n > 1 && (0..n).any(|i| hops[i].bit == edge::RW && hops[(i + 1) % n].bit == edge::RW)
}

/// The shape a cycle has, from the types its hops count as (Elle's classification: one rw is
/// G-single, several with two adjacent G2-item, several with none adjacent G-nonadjacent).
pub fn classify(hops: &[Hop]) -> Kind {
    let count = |b: u8| hops.iter().filter(|h| h.bit == b).count();
    let shape = match count(edge::RW) {
        0 if count(edge::WR) == 0 => CycleShape::G0,
        0 => CycleShape::G1c,
        1 => CycleShape::GSingle,
        _ if rw_adjacent(hops) => CycleShape::G2Item,
        _ => CycleShape::GNonadjacent,
    };
    let variant = if count(edge::REALTIME) > 0 {
        Variant::Realtime
    } else if count(edge::PROCESS) > 0 {
        Variant::Process
    } else {
        Variant::Plain
    };
    Kind::Cycle(shape, variant)
}

/// Shorten a closed walk that visits a transaction twice into one of its two sub-cycles while
/// one of them still has the shape `kind` (the search works on (node, flags) states, so its walks
/// may repeat a node).
pub fn simplify(mut hops: Vec<Hop>, kind: Kind) -> Vec<Hop> {
    'again: loop {
        for i in 0..hops.len() {
            for j in i + 1..hops.len() {
                if hops[i].from != hops[j].from {
                    continue;
                }
                let inner: Vec<Hop> = hops[i..j].to_vec();
                let outer: Vec<Hop> = hops[..i].iter().chain(&hops[j..]).copied().collect();
                if classify(&inner) == kind {
                    hops = inner;
                    continue 'again;
                }
                if classify(&outer) == kind {
                    hops = outer;
                    continue 'again;
                }
            }
        }
        return hops;
    }
}

/// The simple cycles a closed walk is made of (each hop in exactly one).
fn split_walk(hops: &[Hop]) -> Vec<Vec<Hop>> {
    let mut out = Vec::new();
    let mut stack: Vec<Hop> = Vec::new();
    for &h in hops {
        stack.push(h);
        // The walk came back to a transaction it left earlier: pop that loop.
        if let Some(i) = stack.iter().position(|x| x.from == h.to) {
            out.push(stack.split_off(i));
        }
    }
    if !stack.is_empty() {
        out.push(stack);
    }
    out
}

/// A simple cycle out of a closed walk found for `kind`: the walk shortened keeping the shape
/// when it can be, otherwise the simple cycle it is made of that says the most (of the shape
/// searched for; for a non-adjacent walk one with no two rw adjacent, which always exists; else
/// the one with the most rw edges).
pub(super) fn reduce(hops: Vec<Hop>, kind: Kind) -> Vec<Hop> {
    let hops = simplify(hops, kind);
    let mut seen = rustc_hash::FxHashSet::default();
    if hops.iter().all(|h| seen.insert(h.from)) {
        return hops;
    }
    let parts = split_walk(&hops);
    let rws = |c: &Vec<Hop>| c.iter().filter(|h| h.bit == edge::RW).count();
    if let Some(c) = parts.iter().find(|c| classify(c) == kind) {
        return c.clone();
    }
    if matches!(kind, Kind::Cycle(CycleShape::GNonadjacent, _))
        && let Some(c) = parts
            .iter()
            .filter(|c| !rw_adjacent(c))
            .max_by_key(|c| rws(c))
    {
        return c.clone();
    }
    parts.into_iter().max_by_key(rws).unwrap_or_default()
}
/// Strongly connected components of the graph restricted to edge types `mask`: component id per
/// node.
fn components(g: &Graph, mask: u8) -> Vec<u32> {
    let n = g.adj.len();
    let mut pg: DiGraph<(), ()> = DiGraph::with_capacity(n, 0);
    for _ in 0..n {
        pg.add_node(());
    }
    for (a, out) in g.adj.iter().enumerate() {
        for &(b, m) in out {
            if m & mask != 0 {
                pg.add_edge(NodeIndex::new(a), NodeIndex::new(b as usize), ());
            }
        }
    }
    let mut comp = vec![0u32; n];
    for (c, scc) in petgraph::algo::kosaraju_scc(&pg).into_iter().enumerate() {
        for v in scc {
            comp[v.index()] = c as u32;
        }
    }
    comp
}

/// One search from one edge visits at most this many states; past it the edge is left
/// undecided (real cycles are short; a search that long is a search for a cycle that is not there).
const MAX_STATES_PER_SEARCH: usize = 10_000;

/// The searches for one shape in one component stop after this many states in all.
const MAX_STATES_PER_SHAPE: u64 = 1_000_000;

/// A search cut at [`MAX_STATES_PER_SEARCH`].
struct Capped;

/// Scratch space for the breadth-first searches, reused across searches (stamped, not cleared).
struct Bfs {
    stamp: Vec<u32>,
    parent: Vec<(u32, u8)>,
    generation: u32,
    queue: std::collections::VecDeque<u32>,
}

impl Bfs {
    /// Shortest walk from `start` (with `flags` after the first edge) back to `goal` that closes
    /// a cycle of the spec's shape, through edges of `path` types inside component `comp_id`.
    /// States are (node, flags) pairs. Returns the hops, and counts visited states into `steps`.
    #[allow(clippy::too_many_arguments)]
    fn find(
        &mut self,
        g: &Graph,
        comp: &[u32],
        comp_id: u32,
        start: u32,
        flags: u8,
        goal: u32,
        spec: &Spec,
        steps: &mut u64,
    ) -> Result<Option<Vec<Hop>>, Capped> {
        let mut visited = 0usize;
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.generation = 1;
        }
        let state = |node: u32, f: u8| node * FLAGS + f as u32;
        let s0 = state(start, flags);
        self.stamp[s0 as usize] = self.generation;
        self.queue.clear();
        self.queue.push_back(s0);
        let done = |s: u32| s / FLAGS == goal && spec.closes((s % FLAGS) as u8);
        let mut end = if done(s0) { Some(s0) } else { None };
        while end.is_none()
            && let Some(s) = self.queue.pop_front()
        {
            *steps += 1;
            visited += 1;
            if visited > MAX_STATES_PER_SEARCH {
                return Err(Capped);
            }
            let (node, f) = (s / FLAGS, (s % FLAGS) as u8);
            'out: for &(to, mask) in &g.adj[node as usize] {
                if comp[to as usize] != comp_id {
                    continue;
                }
                for bit in spec.bits(mask).into_iter().flatten() {
                    let Some(nf) = spec.step(f, bit) else {
                        continue;
                    };
                    let ns = state(to, nf);
                    if self.stamp[ns as usize] == self.generation {
                        continue;
                    }
                    self.stamp[ns as usize] = self.generation;
                    self.parent[ns as usize] = (s, bit);
                    if done(ns) {
                        end = Some(ns);
                        break 'out;
                    }
                    self.queue.push_back(ns);
                }
            }
        }
        let Some(mut s) = end else {
            return Ok(None);
        };
        let mut hops = Vec::new();
        while s != s0 {
            let (p, bit) = self.parent[s as usize];
            hops.push(Hop {
                from: p / FLAGS,
                to: s / FLAGS,
                bit,
            });
            s = p;
        }
        hops.reverse();
        Ok(Some(hops))
    }
}

/// Search every component for cycles of every shape within `budget`.
pub fn search(g: &Graph, budget: Duration) -> Cycles {
    let started = Instant::now();
    let n = g.adj.len();
    let all = edge::DATA | edge::PROCESS | edge::REALTIME;
    let comp = components(g, all);
    let mut members: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    for (v, &c) in comp.iter().enumerate() {
        members.entry(c).or_default().push(v as u32);
    }
    let mut comps: Vec<Vec<u32>> = members.into_values().filter(|m| m.len() > 1).collect();
    comps.sort_by_key(|m| m[0]);
    let mut out = Cycles {
        components: comps.len(),
        ..Cycles::default()
    };
    if comps.is_empty() {
        return out;
    }
    let specs = specs();
    // Per distinct (first | path) mask: components of that subgraph, a necessary condition.
    let mut sub: FxHashMap<u8, Vec<u32>> = FxHashMap::default();
    for s in &specs {
        let m = s.first | s.path;
        sub.entry(m).or_insert_with(|| components(g, m));
    }
    let states = FLAGS as usize * n;
    let mut bfs = Bfs {
        stamp: vec![0; states],
        parent: vec![(0, 0); states],
        generation: 0,
        queue: Default::default(),
    };
    let mut steps = 0u64;
    let mut over = false;
    for nodes in &comps {
        let cid = comp[nodes[0] as usize];
        let mut left: Vec<Kind> = Vec::new();
        let mut cut_reasons: Vec<String> = Vec::new();
        // Cycles found in this component, by the shape they have (a search may find a cycle
        // of another shape than it looks for; that shape's own search is then not needed).
        let mut found: BTreeMap<Kind, Vec<Hop>> = BTreeMap::new();
        for spec in &specs {
            if found.contains_key(&spec.kind) {
                continue;
            }
            if over {
                left.push(spec.kind);
                continue;
            }
            let subc = &sub[&(spec.first | spec.path)];
            let mut cut = 0usize;
            let shape_start = steps;
            let mut stopped = false;
            'edges: for &a in nodes {
                for &(b, mask) in &g.adj[a as usize] {
                    if comp[b as usize] != cid || subc[a as usize] != subc[b as usize] {
                        continue;
                    }
                    if steps - shape_start > MAX_STATES_PER_SHAPE {
                        cut_reasons.push(format!(
                            "{}: stopped after {} search steps in this component",
                            spec.kind.name(),
                            steps - shape_start
                        ));
                        stopped = true;
                        break 'edges;
                    }
                    // The first edge must be able to count as the type the shape starts with.
                    let first_ok = match spec.rw {
                        Rw::Free => edge::pick(mask, spec.first | spec.path) == Some(spec.first),
                        _ => mask & spec.first != 0,
                    };
                    if !first_ok {
                        continue;
                    }
                    if started.elapsed() >= budget {
                        over = true;
                        stopped = true;
                        break 'edges;
                    }
                    let sub_id = subc[a as usize];
                    let flags = spec.start();
                    let walk = match bfs.find(g, subc, sub_id, b, flags, a, spec, &mut steps) {
                        Ok(h) => h,
                        Err(Capped) => {
                            cut += 1;
                            None
                        }
                    };
                    if let Some(mut hops) = walk {
                        hops.insert(
                            0,
                            Hop {
                                from: a,
                                to: b,
                                bit: spec.first,
                            },
                        );
                        let cycle = reduce(hops, spec.kind);
                        let kind = classify(&cycle);
                        found.entry(kind).or_insert(cycle);
                        if kind == spec.kind {
                            break 'edges;
                        }
                    }
                }
            }
            if found.contains_key(&spec.kind) {
                continue;
            }
            if stopped {
                left.push(spec.kind);
            } else if cut > 0 {
                cut_reasons.push(format!(
                    "{}: {cut} search(es) cut at {MAX_STATES_PER_SEARCH} states",
                    spec.kind.name()
                ));
                left.push(spec.kind);
            }
        }
        // A shape whose own search stopped but that another shape's search found is not missing.
        left.retain(|k| !found.contains_key(k));
        out.cycles.extend(found);
        if !left.is_empty() {
            out.unsearched.push(Unsearched {
                size: nodes.len(),
                shapes: left.iter().map(|k| k.name().to_string()).collect(),
                kinds: left,
                reason: if over {
                    format!(
                        "the cycle search ran past its {:.1} s budget ({steps} search steps)",
                        budget.as_secs_f64()
                    )
                } else {
                    cut_reasons.join("; ")
                },
            });
        }
    }
    out
}
