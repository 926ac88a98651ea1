//! The transactional checker (Elle-class) for list-append and rw-register transactions: each
//! client op is a transaction, a list of micro-ops — `["append", k, v]` / `["r", k, [v…]]`
//! (list-append) or `["w", k, v]` / `["r", k, v]` (rw-register; `parse::kind_of` tells which,
//! a history mixing both is an error). List-append infers per-key version orders from the reads
//! (`infer`); rw-register knows wr edges exactly and orders versions only from the initial state
//! and the assumptions the user asserts (`register`, as Elle's rw-register). Both build ww / wr /
//! rw dependency edges plus process-order and real-time edges, search the strongly connected
//! components for cycles by shape (G0, G1c, G-single-item, G2-item, each plain, `-process` or
//! `-realtime`), find the non-cycle anomalies (G1a, G1b, internal, duplicate elements,
//! incompatible orders, lost updates, dirty updates, garbage reads, cyclic versions), and say which consistency
//! models the anomalies rule out (`not` / `also_not`, Elle's lattice in `consistency`). Each anomaly is explained in
//! words, each cycle edge by edge.
//!
//! Verdict against the models and anomalies asked for (`judge`; default strict-serializable):
//! invalid when a found anomaly is prohibited; else unknown when a component's search ran out of
//! budget, nothing committed, a prohibited anomaly is not checked, or a value repeated on a key
//! left no dependency graph (then only each transaction's own anomalies — internal, future
//! reads — are found); else valid — for rw-register, valid for what the inferred version orders
//! let it see, which the result states (`versions`: keys whose versions are totally ordered,
//! sources used). A history of completions only, as Elle writes them, is decided as Elle does:
//! the data edges need no invokes; it has no real-time edge, and process edges only where Elle's
//! choice of graphs draws them (`judge::Orders`); the anomalies those orders would show cannot
//! occur in it (`unseen`, said in a note), which is no reason for unknown.
//! Submodules: `parse` (transactions from a history), `infer` (list-append orders, non-cycle
//! anomalies, graph), `register` (the same for rw-register), `cycles` (components and search),
//! `anomaly` (the kinds found), `consistency` (Elle's model lattice), `judge` (the verdict), `future` (future reads), `histgen` (generated histories for tests and
//! benchmarks). Does not own file formats, the page (`report::page::txn`) or the workload. Pure:
//! no IO (the search reads the clock for its budget).

pub mod anomaly;
pub mod consistency;
pub mod cycles;
pub mod future;
pub mod histgen;
pub mod infer;
pub mod judge;
pub mod parse;
pub mod register;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_agreement;
#[cfg(test)]
mod tests_elle;
#[cfg(test)]
mod tests_register;

use super::{CheckResult, Verdict};
use crate::history::History;
use anomaly::{Kind, edge};
use consistency::{Anomaly, Model};
use cycles::Hop;
use parse::{Status, TxnKind, Txns};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// The model name `check --model` and workloads use for this checker.
pub const NAME: &str = crate::model::registry::TXN;

/// The checker name in results.json.
pub const CHECKER: &str = "txn";

/// At most this many anomalies of one type are kept with their explanation (all are counted).
const KEEP_PER_TYPE: usize = 8;

/// Settings.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    /// The models the history must satisfy and the anomalies it must not show.
    pub ask: judge::Ask,
    /// Time budget of the cycle search.
    pub time_limit: Duration,
    /// rw-register: the assumptions that order versions beyond the initial state.
    pub assume: register::Assume,
}

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig {
            ask: judge::Ask::default(),
            time_limit: Duration::from_secs(60),
            assume: register::Assume::default(),
        }
    }
}

/// One step of an explained cycle.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Source transaction, by the number the explanation names it with (`T17`): its invoke's op
    /// index, or in a history of completions only its completion's position in the input.
    pub from: u64,
    /// Target transaction.
    pub to: u64,
    /// `ww`, `wr`, `rw`, `process` or `realtime`.
    pub edge: &'static str,
    /// Why the edge exists, in words.
    pub because: String,
}

/// One anomaly found.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// Its type.
    #[serde(skip)]
    pub kind: Kind,
    /// Its type's name (`G2-item`).
    #[serde(rename = "type")]
    pub name: String,
    /// The transactions involved, numbered as the explanation names them (see [`Step::from`]).
    pub ops: Vec<u64>,
    /// What happened, in words.
    pub explanation: Vec<String>,
    /// The cycle, edge by edge, for cycle anomalies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle: Option<Vec<Step>>,
}

/// What the checker concluded.
#[derive(Debug, Clone, Serialize)]
pub struct TxnResult {
    /// List-append or rw-register.
    pub kind: TxnKind,
    /// rw-register: how much of the version orders could be inferred.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versions: Option<register::Coverage>,
    /// The verdict against `consistency_models` and `prohibited`.
    pub verdict: Verdict,
    /// The models checked against.
    #[serde(rename = "consistency-models")]
    pub consistency_models: Vec<Model>,
    /// Anomalies named as prohibited besides the models' (`--anomalies`).
    #[serde(rename = "prohibited-anomalies", skip_serializing_if = "Vec::is_empty")]
    pub prohibited_anomalies: Vec<Anomaly>,
    /// Transactions: committed, failed, indeterminate.
    pub committed: usize,
    /// Failed transactions.
    pub failed: usize,
    /// Indeterminate transactions (info or never completed).
    pub indeterminate: usize,
    /// Keys seen.
    pub keys: usize,
    /// Dependency graph size: (from, to) pairs.
    pub edges: usize,
    /// Components of two or more transactions.
    pub components: usize,
    /// Count per anomaly type.
    pub anomaly_counts: BTreeMap<String, usize>,
    /// Anomalies, up to a few per type, explained.
    pub anomalies: Vec<Found>,
    /// The anomaly types found that what was asked prohibits (Elle's `anomaly-types`).
    #[serde(rename = "anomaly-types")]
    pub anomaly_types: Vec<Anomaly>,
    /// The anomaly types found that what was asked allows: reported, not failures.
    #[serde(rename = "allowed-anomaly-types")]
    pub allowed_anomaly_types: Vec<Anomaly>,
    /// Prohibited anomalies the checker neither looks for nor could rule out.
    #[serde(rename = "not-checked")]
    pub not_checked: Vec<Anomaly>,
    /// Prohibited anomalies this history cannot show: they need an order it does not have (a
    /// history of completions only has no real-time order), so they were not looked for.
    #[serde(rename = "unseen-anomaly-types", skip_serializing_if = "Vec::is_empty")]
    pub unseen: Vec<Anomaly>,
    /// The order edges the dependency graph has besides ww / wr / rw.
    #[serde(rename = "order-edges")]
    pub orders: judge::Orders,
    /// The weakest models the anomalies rule out.
    pub not: Vec<Model>,
    /// Stronger models ruled out because they imply one of `not`.
    #[serde(rename = "also-not")]
    pub also_not: Vec<Model>,
    /// Components whose search did not finish.
    pub unsearched: Vec<cycles::Unsearched>,
    /// Why the verdict is unknown, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_reason: Option<String>,
    /// What else the reader should know, one sentence each: a history of completions only (which
    /// orders it has), a value repeated on a key (no dependency graph), rw-register reads of
    /// values nobody wrote.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl TxnResult {
    /// One line: verdict, counts, anomalies and what they rule out.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} committed, {} failed, {} indeterminate transaction{} over {}",
            self.committed,
            self.failed,
            self.indeterminate,
            crate::plural::s(self.committed + self.failed + self.indeterminate),
            crate::plural::counted(self.keys, "key")
        );
        if let Some(v) = &self.versions {
            s.push_str(&format!(" (rw-register: {})", v.describe()));
        }
        if !self.anomaly_counts.is_empty() {
            let list: Vec<String> = self
                .anomaly_counts
                .iter()
                .map(|(k, n)| format!("{k} ×{n}"))
                .collect();
            s.push_str(&format!("; anomalies: {}", list.join(", ")));
        }
        if !self.allowed_anomaly_types.is_empty() {
            let allowed: Vec<&str> = self
                .allowed_anomaly_types
                .iter()
                .map(|a| a.name())
                .collect();
            s.push_str(&format!(
                " ({} allowed by {})",
                allowed.join(", "),
                models_text(&self.consistency_models)
            ));
        }
        if let Some(b) = self.boundary_text() {
            s.push_str(&format!("; {b}"));
        }
        if let Some(r) = &self.unknown_reason {
            s.push_str(&format!("; unknown: {r}"));
        }
        for n in &self.notes {
            s.push_str(&format!("; {n}"));
        }
        s
    }

    /// `not snapshot-isolation (and therefore not serializable, strict-serializable)`, when the
    /// anomalies rule anything out.
    pub fn boundary_text(&self) -> Option<String> {
        if self.not.is_empty() {
            return None;
        }
        let not: Vec<&str> = self.not.iter().map(|m| m.name()).collect();
        let mut s = format!("not {}", not.join(", not "));
        if !self.also_not.is_empty() {
            let also: Vec<&str> = self.also_not.iter().map(|m| m.name()).collect();
            s.push_str(&format!(" (and therefore not {})", also.join(", ")));
        }
        Some(s)
    }

    /// The text `check` prints: the summary, then every kept anomaly explained.
    pub fn explain(&self) -> String {
        let mut out = vec![format!("txn: {} — {}", self.verdict, self.summary())];
        for a in &self.anomalies {
            out.push(format!("  {}:", a.name));
            for line in &a.explanation {
                out.push(format!("    {line}"));
            }
        }
        for u in &self.unsearched {
            out.push(format!(
                "  unsearched component of {} transactions ({}): {}",
                u.size,
                u.shapes.join(", "),
                u.reason
            ));
        }
        out.join("\n")
    }

    /// As a generic checker result.
    pub fn check_result(&self) -> CheckResult {
        CheckResult {
            checker: CHECKER.to_string(),
            verdict: self.verdict,
            summary: self.summary(),
            details: serde_json::to_value(self).unwrap_or_else(
                |e| serde_json::json!({ "error": format!("could not serialize result: {e}") }),
            ),
        }
    }
}

/// `strict-serializable` or `read-committed + snapshot-isolation`.
fn models_text(models: &[Model]) -> String {
    let names: Vec<&str> = models.iter().map(|m| m.name()).collect();
    names.join(" + ")
}

/// `[1 2 3]` with elements as written.
pub fn describe_list(t: &Txns, list: &[u32]) -> String {
    const MAX: usize = 12;
    let shown: Vec<String> = if list.len() > MAX {
        let mut v: Vec<String> = list[..3].iter().map(|e| t.elems.show(*e)).collect();
        v.push(format!("…{} more…", list.len() - 6));
        v.extend(list[list.len() - 3..].iter().map(|e| t.elems.show(*e)));
        v
    } else {
        list.iter().map(|e| t.elems.show(*e)).collect()
    };
    format!("[{}]", shown.join(" "))
}

fn seconds(ns: u64) -> String {
    format!("{:.3} s", ns as f64 / 1e9)
}

/// One hop in words.
fn explain_hop(t: &Txns, g: &infer::Graph, h: Hop) -> String {
    let (a, b) = (infer::tname(t, h.from), infer::tname(t, h.to));
    let reason = g.reasons.get(&(h.from, h.to, h.bit));
    let show = |e: Option<u32>| e.map_or("nothing".to_string(), |e| t.elems.show(e));
    let register = t.kind == TxnKind::RwRegister;
    match (h.bit, reason) {
        (edge::WW, Some(r)) if register => format!(
            "{a} wrote key {} = {} and {b} wrote it = {}, which came later in the version order, so {a} → {b} (ww)",
            t.keys.show(r.key),
            show(r.first),
            show(r.second)
        ),
        (edge::WR, Some(r)) if register => format!(
            "{a} wrote key {} = {} and {b} read that value, so {a} → {b} (wr)",
            t.keys.show(r.key),
            show(r.first)
        ),
        (edge::RW, Some(r)) if register => format!(
            "{a} read key {} = {} and {b} wrote it = {}, which came later in the version order, so {a} → {b} (rw)",
            t.keys.show(r.key),
            r.first.map_or("nil".to_string(), |e| t.elems.show(e)),
            show(r.second)
        ),
        (edge::WW, Some(r)) if r.unread => format!(
            "{a} appended {} to key {}, the last element any read showed, and {b} appended {}, which no read showed, so after it: {a} → {b} (ww)",
            show(r.first),
            t.keys.show(r.key),
            show(r.second)
        ),
        (edge::WW, Some(r)) => format!(
            "{a} appended {} to key {} and {b} appended {} right after it, so {a} → {b} (ww)",
            show(r.first),
            t.keys.show(r.key),
            show(r.second)
        ),
        (edge::WR, Some(r)) => format!(
            "{a} appended {} to key {} and {b} read it, so {a} → {b} (wr)",
            show(r.first),
            t.keys.show(r.key)
        ),
        (edge::RW, Some(r)) => format!(
            "{a} read key {} {} without {}, which {b} {}, so {a} → {b} (rw)",
            t.keys.show(r.key),
            match r.first {
                Some(e) => format!("up to {}", t.elems.show(e)),
                None => "empty".to_string(),
            },
            show(r.second),
            if r.unread {
                "appended and no read showed, so later"
            } else {
                "appended next"
            }
        ),
        (edge::PROCESS, _) => format!(
            "{a} and {b} ran on process {}, {a} first, so {a} → {b} (process)",
            t.txns[h.from as usize].process
        ),
        (edge::REALTIME, _) => format!(
            "{a} completed at {} before {b} began at {}, so {a} → {b} (realtime)",
            seconds(t.txns[h.from as usize].complete_ns),
            seconds(t.txns[h.to as usize].invoke_ns)
        ),
        _ => format!("{a} → {b} ({})", edge::name(h.bit)),
    }
}

fn cycle_found(t: &Txns, g: &infer::Graph, kind: Kind, hops: &[Hop]) -> Found {
    let steps: Vec<Step> = hops
        .iter()
        .map(|&h| Step {
            from: t.txns[h.from as usize].name as u64,
            to: t.txns[h.to as usize].name as u64,
            edge: edge::name(h.bit),
            because: explain_hop(t, g, h),
        })
        .collect();
    let mut explanation: Vec<String> = steps.iter().map(|s| s.because.clone()).collect();
    let names: Vec<String> = hops
        .iter()
        .map(|h| infer::tname(t, h.from))
        .chain(hops.first().map(|h| infer::tname(t, h.from)))
        .collect();
    explanation.push(format!(
        "so {}: a cycle, which no order of the transactions can explain ({})",
        names.join(" → "),
        kind.name()
    ));
    Found {
        kind,
        name: kind.name().to_string(),
        ops: steps.iter().map(|s| s.from).collect(),
        explanation,
        cycle: Some(steps),
    }
}

/// The unsearched components whose missing shapes could hold an anomaly `ask` prohibits (a
/// shape nobody asked about does not make the verdict unknown).
fn unsearched_prohibited<'a>(
    unsearched: &'a [cycles::Unsearched],
    ask: &judge::Ask,
) -> Vec<&'a cycles::Unsearched> {
    let prohibited = ask.prohibited();
    let matters = |k: &Kind| {
        consistency::implied_by([k.anomaly()])
            .intersection(&prohibited)
            .next()
            .is_some()
    };
    unsearched
        .iter()
        .filter(|u| u.kinds.iter().any(matters))
        .collect()
}

/// Check a list-append or rw-register transaction history. `Err` when the history is not one (a
/// client op that is not a transaction, a malformed micro-op, appends and writes mixed). A
/// history that appends an element or writes a value twice to a key breaks the uniqueness the
/// dependency graph needs: it is checked for what each transaction shows on its own (internal,
/// future reads), invalid when that is prohibited, else unknown naming the repeated value.
/// Why a history whose dependency graph has no edge is unknown (Elle's
/// `empty-transaction-graph`, one of its unknown anomaly types).
pub const EMPTY_GRAPH: &str = "empty-transaction-graph: no dependency between any two transactions (no read observed another's write or its absence, no order edge), so nothing was checked (Elle: unknown)";

pub fn check(history: &History, cfg: &TxnConfig) -> Result<TxnResult, String> {
    let mut t = parse::read_txns(history)?;
    let mut notes = Vec::new();
    if t.realtime_unknown {
        t.orders = judge::Orders::completions_only(&cfg.ask);
    }
    let inferred = match t.kind {
        TxnKind::ListAppend => infer::infer(&t).map(|i| (i, None)),
        TxnKind::RwRegister => register::infer(&t, cfg.assume).map(|(i, c)| (i, Some(c))),
    };
    let (mut inferred, versions, not_unique) = match inferred {
        Ok((i, v)) => (i, v, None),
        Err(e) => {
            let anomalies = match t.kind {
                TxnKind::ListAppend => infer::per_transaction(&t),
                TxnKind::RwRegister => register::per_transaction(&t),
            };
            let i = infer::Inferred {
                graph: infer::Graph::new(t.txns.len()),
                anomalies,
                ..infer::Inferred::default()
            };
            (i, None, Some(e))
        }
    };
    notes.append(&mut inferred.notes);
    let found_cycles = cycles::search(&inferred.graph, cfg.time_limit);
    let mut all: Vec<Found> = inferred.anomalies;
    all.extend(future::future_reads(&t));
    for (kind, hops) in &found_cycles.cycles {
        all.push(cycle_found(&t, &inferred.graph, *kind, hops));
    }
    all.sort_by_key(|a| a.kind);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut kept = Vec::new();
    for a in all {
        let n = counts.entry(a.name.clone()).or_default();
        *n += 1;
        if *n <= KEEP_PER_TYPE {
            kept.push(a);
        }
    }
    let found: std::collections::BTreeSet<Anomaly> =
        kept.iter().map(|a| a.kind.anomaly()).collect();
    let (not, also_not) = consistency::boundary(found.iter().copied());
    let judged = cfg.ask.judge(&found, t.orders);
    if t.realtime_unknown {
        notes.push(format!(
            "completions only (no invokes): the dependency graph has {}, as Elle draws it for what was asked{}",
            t.orders.describe(),
            judged
                .unseen_text()
                .map(|u| format!(
                    "; {u} cannot occur without that order and were not looked for"
                ))
                .unwrap_or_default()
        ));
    }
    let count = |s: Status| t.txns.iter().filter(|x| x.status == s).count();
    let committed = count(Status::Ok);
    let ruled_out = !judged.prohibited.is_empty();
    let missing = unsearched_prohibited(&found_cycles.unsearched, &cfg.ask);
    if let Some(e) = not_unique.as_ref().filter(|_| ruled_out) {
        notes.push(format!(
            "{e}: no dependency graph, only what each transaction shows on its own (internal, future reads) was checked"
        ));
    }
    let unknown_reason = if ruled_out {
        None
    } else if let Some(e) = &not_unique {
        Some(format!(
            "{e}: cycles and the anomalies between transactions need unique values, so only each transaction's own reads were checked"
        ))
    } else if committed == 0 {
        Some("no transaction committed: nothing to check".to_string())
    } else if inferred.graph.edge_count() == 0 {
        // Elle's `empty-transaction-graph`: with no dependency at all, almost certainly the
        // test observed nothing (no read saw another's write), so not valid: unknown.
        Some(EMPTY_GRAPH.to_string())
    } else if !missing.is_empty() {
        let u = &missing;
        Some(format!(
            "{} component(s) not fully searched (largest {} transactions): {}",
            u.len(),
            u.iter().map(|x| x.size).max().unwrap_or(0),
            u[0].reason
        ))
    } else {
        judged.not_checked_reason()
    };
    let verdict = if ruled_out {
        Verdict::Invalid
    } else if unknown_reason.is_some() {
        Verdict::Unknown
    } else {
        Verdict::Valid
    };
    Ok(TxnResult {
        kind: t.kind,
        versions,
        verdict,
        consistency_models: cfg.ask.models.clone(),
        prohibited_anomalies: cfg.ask.anomalies.clone(),
        committed,
        failed: count(Status::Fail),
        indeterminate: count(Status::Info),
        keys: t.keys.values.len(),
        edges: inferred.graph.edge_count(),
        components: found_cycles.components,
        anomaly_counts: counts,
        anomalies: kept,
        anomaly_types: judged.prohibited,
        allowed_anomaly_types: judged.allowed,
        not_checked: judged.not_checked,
        unseen: judged.unseen,
        orders: t.orders,
        not,
        also_not,
        unsearched: found_cycles.unsearched,
        unknown_reason,
        notes,
    })
}

/// Check and wrap as a generic result; a history that is not a transaction history gives an
/// unknown result with `details.error` (what `check` reports as unreadable input).
pub fn check_result(history: &History, cfg: &TxnConfig) -> CheckResult {
    match check(history, cfg) {
        Ok(r) => r.check_result(),
        Err(e) => CheckResult {
            checker: CHECKER.to_string(),
            verdict: Verdict::Unknown,
            summary: format!("not a transaction history: {e}"),
            details: serde_json::json!({ "error": e }),
        },
    }
}
