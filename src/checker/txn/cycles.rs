//! Cycle search over the dependency graph: strongly connected components (petgraph's Tarjan),
//! then, per component and per anomaly shape, a breadth-first search for a cycle of that shape:
//! G0 (ww only), G1c (ww + wr, at least one wr), G-single-item (exactly one rw), G2-item (two or more
//! rw), each also with process-order and real-time edges (`-process`, `-realtime`). Each
//! search starts from an edge of the type the shape needs and looks for the shortest way back
//! through the edge types it allows, tracking whether a required type was used; a found cycle
//! is classified by the edges it uses (an edge with several types counts as its most telling
//! one: ww, wr, rw, process, realtime), so shapes are never mislabelled; a walk that visits a
//! transaction twice is cut down to a sub-cycle of the same shape when one exists.
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

/// One search: start on an edge of type `first`, come back through `path` types; when
/// `require` is not 0 the cycle must use one of those types somewhere.
struct Spec {
    kind: Kind,
    first: u8,
    path: u8,
    require: u8,
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
        v.push(Spec {
            kind: Kind::Cycle(CycleShape::G0, variant),
            first: first_for(WW),
            path: WW | extra,
            require,
        });
        v.push(Spec {
            kind: Kind::Cycle(CycleShape::G1c, variant),
            first: WR,
            path: WW | WR | extra,
            require,
        });
        v.push(Spec {
            kind: Kind::Cycle(CycleShape::GSingle, variant),
            first: RW,
            path: WW | WR | extra,
            require,
        });
        v.push(Spec {
            kind: Kind::Cycle(CycleShape::G2Item, variant),
            first: RW,
            path: DATA | extra,
            require,
        });
    }
    v
}

/// The shape a cycle has, from the types its hops count as.
pub fn classify(hops: &[Hop]) -> Kind {
    let count = |b: u8| hops.iter().filter(|h| h.bit == b).count();
    let shape = match count(edge::RW) {
        0 if count(edge::WR) == 0 => CycleShape::G0,
        0 => CycleShape::G1c,
        1 => CycleShape::GSingle,
        _ => CycleShape::G2Item,
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
/// one of them still has the shape `kind` (the search works on (node, flag) states, so its walks
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
    for (c, scc) in petgraph::algo::tarjan_scc(&pg).into_iter().enumerate() {
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
    /// Shortest path from `start` (with `q` = required type already used) back to `goal`, through
    /// edges of `path` types inside component `comp_id`, using a required type when `require` is
    /// not 0. States are (node, used-required) pairs. Returns the hops, and counts visited states
    /// into `steps`.
    #[allow(clippy::too_many_arguments)]
    fn find(
        &mut self,
        g: &Graph,
        comp: &[u32],
        comp_id: u32,
        start: u32,
        q: bool,
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
        let state = |node: u32, q: bool| node * 2 + q as u32;
        let s0 = state(start, q);
        self.stamp[s0 as usize] = self.generation;
        self.queue.clear();
        self.queue.push_back(s0);
        let done = |s: u32| s / 2 == goal && (spec.require == 0 || s % 2 == 1);
        let mut end = if done(s0) { Some(s0) } else { None };
        while end.is_none()
            && let Some(s) = self.queue.pop_front()
        {
            *steps += 1;
            visited += 1;
            if visited > MAX_STATES_PER_SEARCH {
                return Err(Capped);
            }
            let (node, q) = (s / 2, s % 2 == 1);
            for &(to, mask) in &g.adj[node as usize] {
                if comp[to as usize] != comp_id {
                    continue;
                }
                let Some(bit) = edge::pick(mask, spec.path) else {
                    continue;
                };
                let ns = state(to, q || bit & spec.require != 0);
                if self.stamp[ns as usize] == self.generation {
                    continue;
                }
                self.stamp[ns as usize] = self.generation;
                self.parent[ns as usize] = (s, bit);
                if done(ns) {
                    end = Some(ns);
                    break;
                }
                self.queue.push_back(ns);
            }
        }
        let Some(mut s) = end else {
            return Ok(None);
        };
        let mut hops = Vec::new();
        while s != s0 {
            let (p, bit) = self.parent[s as usize];
            hops.push(Hop {
                from: p / 2,
                to: s / 2,
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
    let mut bfs = Bfs {
        stamp: vec![0; 2 * n],
        parent: vec![(0, 0); 2 * n],
        generation: 0,
        queue: Default::default(),
    };
    let mut steps = 0u64;
    let mut over = false;
    for nodes in &comps {
        let cid = comp[nodes[0] as usize];
        let mut left: Vec<String> = Vec::new();
        let mut cut_reasons: Vec<String> = Vec::new();
        for spec in &specs {
            if over {
                left.push(spec.kind.name().to_string());
                continue;
            }
            let subc = &sub[&(spec.first | spec.path)];
            let mut found = None;
            let mut cut = 0usize;
            let shape_start = steps;
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
                        left.push(spec.kind.name().to_string());
                        break 'edges;
                    }
                    // The first edge must count as the type the shape starts with.
                    if edge::pick(mask, spec.first | spec.path) != Some(spec.first) {
                        continue;
                    }
                    if started.elapsed() >= budget {
                        over = true;
                        left.push(spec.kind.name().to_string());
                        break 'edges;
                    }
                    let q = spec.first & spec.require != 0;
                    let sub_id = subc[a as usize];
                    let hops = match bfs.find(g, subc, sub_id, b, q, a, spec, &mut steps) {
                        Ok(h) => h,
                        Err(Capped) => {
                            cut += 1;
                            None
                        }
                    };
                    if let Some(mut hops) = hops {
                        hops.insert(
                            0,
                            Hop {
                                from: a,
                                to: b,
                                bit: spec.first,
                            },
                        );
                        if classify(&hops) == spec.kind {
                            found = Some(simplify(hops, spec.kind));
                            break 'edges;
                        }
                    }
                }
            }
            match found {
                Some(h) => out.cycles.push((spec.kind, h)),
                None if cut > 0 && !left.iter().any(|l| l == spec.kind.name()) => {
                    cut_reasons.push(format!(
                        "{}: {cut} search(es) cut at {MAX_STATES_PER_SEARCH} states",
                        spec.kind.name()
                    ));
                    left.push(spec.kind.name().to_string());
                }
                None => {}
            }
        }
        if !left.is_empty() {
            out.unsearched.push(Unsearched {
                size: nodes.len(),
                shapes: left,
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
