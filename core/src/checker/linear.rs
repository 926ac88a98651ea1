//! Linearizability checking: P-compositional Wing & Gong / Lowe just-in-time linearization search.
//!
//! Owns splitting a history into independent parts (by `Op::key`; ops without a key form one part),
//! checking every part in parallel within the budgets, the result types and their text. Two phases:
//! the verdict, then the witnesses of the invalid parts, so verdict and witness times are reported
//! separately and the order of the output does not depend on thread timing.
//!
//! The verdict first ([`Decide`]): one invalid part settles the verdict. By default the parts
//! still undecided then get a budget proportionate to what the first invalid part took (a multiple
//! of it) and are left unknown past it, saying so; `Decide::AllKeys` decides every part within
//! the time limit. A valid verdict always needs every part decided valid. Budgets are for the whole
//! check: one time limit, and one memory budget shared by the parts searched in parallel and then
//! by the witnesses' minimizations (`memory_bytes`; a part past it is unknown). A witness's
//! minimization gets a multiple of its part's search time, capped (`WitnessMode::Fast`), or the
//! whole time limit (`WitnessMode::Minimal`).
//!
//! Submodules: `search` (the WGL/Lowe search and its cache key), `witness` (blocked op, longest
//! linearizable prefix, minimized essential ops), `result` (the result types, summary line and
//! explanation), `histgen` (generated histories for tests and benchmarks). Does not own the sequential specifications (`crate::model`) or history parsing, nor
//! the default memory budget (the CLI reads the machine's memory and passes a number down).
//!
//! Semantics: an op converted to `Convert::Completed` must take effect between its invoke and its
//! completion; a `Convert::Pending` op (crashed, `info`, or never completed) has its return entry at
//! +infinity and may take effect at any later point or never — the search succeeds once every
//! completed op is linearized. Budgets never panic or hang: exceeding one yields `Unknown` with the
//! reason, per part.

pub mod histgen;
mod result;
pub mod retire;
mod search;
mod witness;

use crate::checker::{CheckResult, Checker, Verdict};
use crate::history::{History, Name, OpType};
use crate::model::{Convert, Model, StandIn};
use rayon::prelude::*;
use result::key_label;
pub use result::{LinearResult, PartSummary, Undecided, Witness, WitnessOp, WitnessStep};
pub use search::Cause;
use search::{Limits, Memory, Outcome, PartOp, Pruning, Stats, Stop, search};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How much work goes into the witness of an invalid part (`--witness`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WitnessMode {
    /// The blocked op and the longest linearizable prefix only; no minimization.
    None,
    /// Minimize to a 1-minimal set of essential ops within a budget that follows the part's
    /// search time ([`WITNESS_FACTOR`] times it, at least [`WITNESS_FLOOR`]), at most
    /// `minimize_time_limit` (default).
    #[default]
    Fast,
    /// Minimize to a 1-minimal set within the check's whole `time_limit`.
    Minimal,
}

impl WitnessMode {
    /// The `--witness` names.
    pub const NAMES: [&'static str; 3] = ["none", "fast", "minimal"];

    /// The `--witness` name.
    pub fn name(self) -> &'static str {
        match self {
            WitnessMode::None => "none",
            WitnessMode::Fast => "fast",
            WitnessMode::Minimal => "minimal",
        }
    }
}

impl std::str::FromStr for WitnessMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(WitnessMode::None),
            "fast" => Ok(WitnessMode::Fast),
            "minimal" => Ok(WitnessMode::Minimal),
            other => Err(format!(
                "witness mode {other:?}: expected {}",
                WitnessMode::NAMES.join(", ")
            )),
        }
    }
}

/// A `WitnessMode::Fast` minimization gets this many times its part's search time…
pub const WITNESS_FACTOR: u32 = 10;
/// …but at least this much (a tiny part's witness is still minimized).
pub const WITNESS_FLOOR: Duration = Duration::from_millis(50);

/// How many parts a check decides once one part is invalid (`--all-keys`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decide {
    /// Every part, within the time limit and the memory budget (`--all-keys`).
    AllKeys,
    /// The verdict first: once a part is invalid the verdict is settled, and the parts still
    /// undecided get `factor` times the time that took (at least `floor`) before they are left
    /// unknown (cause `Cause::Settled`). Factor 0 and floor 0 stop at once.
    Proportionate {
        /// Multiple of the time to the first invalid part.
        factor: u32,
        /// The least time the other parts get.
        floor: Duration,
    },
}

impl Default for Decide {
    /// Ten times what the first invalid part took, at least 100 ms.
    fn default() -> Self {
        Decide::Proportionate {
            factor: 10,
            floor: Duration::from_millis(100),
        }
    }
}

/// Budgets and options for a linearizability check.
#[derive(Debug, Clone)]
pub struct LinearConfig {
    /// Wall-clock limit for the whole check; parts unfinished by then are `Unknown`.
    pub time_limit: Option<Duration>,
    /// The check's one memory budget, in bytes: the search caches of every part searched at once
    /// (states' heap memory counted, `Model::state_heap_bytes`), then the witnesses'
    /// minimizations. A search that finds the budget used up stops, its part `Unknown`
    /// (`Cause::Memory`). `None` = unbounded.
    pub memory_bytes: Option<usize>,
    /// Worker threads; `None` uses rayon's global pool (one per core).
    pub threads: Option<usize>,
    /// How many parts are decided once one is invalid.
    pub decide: Decide,
    /// How much work goes into each invalid part's witness.
    pub witness: WitnessMode,
    /// Cap of the minimization budget per invalid part with `WitnessMode::Fast`; `None` disables
    /// minimization. `WitnessMode::Minimal` uses `time_limit` instead.
    pub minimize_time_limit: Option<Duration>,
    /// How many steps at the end of the longest linearizable prefix the witness keeps.
    pub prefix_tail_len: usize,
    /// Keep each valid part's linearization ([`PartSummary::linearization`]): live checking
    /// hands it to the end-of-run check, which then checks a key's later ops against it.
    pub keep_linearization: bool,
    /// Give each valid part the stand-in for the state its linearization ends in
    /// ([`PartSummary::end`]): the streamed check checks a key's later ops after it.
    pub keep_end: bool,
}

impl LinearConfig {
    /// The minimization budget of an invalid part whose search took `search`, as `witness` asks:
    /// `WitnessMode::Fast` follows the search's cost (see [`WITNESS_FACTOR`]).
    pub fn minimize_budget(&self, search: Duration) -> Option<Duration> {
        match self.witness {
            WitnessMode::None => None,
            WitnessMode::Fast => self.minimize_time_limit.map(|cap| {
                search
                    .saturating_mul(WITNESS_FACTOR)
                    .max(WITNESS_FLOOR)
                    .min(cap)
            }),
            WitnessMode::Minimal => Some(
                self.time_limit
                    .unwrap_or(Duration::from_secs(3600))
                    .max(self.minimize_time_limit.unwrap_or_default()),
            ),
        }
    }
}

impl Default for LinearConfig {
    fn default() -> Self {
        LinearConfig {
            time_limit: Some(Duration::from_secs(60)),
            memory_bytes: Some(1 << 30),
            threads: None,
            decide: Decide::default(),
            witness: WitnessMode::Fast,
            minimize_time_limit: Some(Duration::from_secs(2)),
            prefix_tail_len: 50,
            keep_linearization: false,
            keep_end: false,
        }
    }
}

pub(crate) struct Part<O> {
    key: Option<Name>,
    pub(crate) ops: Vec<PartOp<O>>,
}

/// Split a history into parts and convert ops with the model.
pub(crate) fn prepare<M: Model>(model: &M, history: &History) -> Result<Vec<Part<M::Op>>, String> {
    let pairs = history
        .completions()
        .map_err(|e| format!("ill-formed history: {e}"))?;
    // Each part's ops counted first, so that each part's vector is allocated once at its size:
    // grown by doubling, 50,000 parts of a 10M-op history would hold a quarter more than they
    // use, on average, at the check's peak.
    let mut parts: Vec<Part<M::Op>> = Vec::new();
    let mut by_key: HashMap<Option<Name>, usize> = HashMap::new();
    let mut sizes: HashMap<Option<Name>, usize> = HashMap::new();
    for op in &history.ops {
        if op.op_type == OpType::Invoke && op.is_client() {
            *sizes.entry(op.key.clone()).or_default() += 1;
        }
    }
    for (i, op) in history.ops.iter().enumerate() {
        if op.op_type != OpType::Invoke || !op.is_client() {
            continue;
        }
        let completion_idx = pairs.of(i);
        let completion = completion_idx.map(|j| &history.ops[j]);
        let converted = model.convert(op, completion).map_err(|e| {
            if op.index as usize == i {
                e
            } else {
                format!("history position {i}: {e}")
            }
        })?;
        let (mop, returned) = match converted {
            Convert::Skip => continue,
            Convert::Completed(m) => (m, true),
            Convert::Pending(m) => (m, false),
        };
        let slot = *by_key.entry(op.key.clone()).or_insert_with(|| {
            parts.push(Part {
                key: op.key.clone(),
                ops: Vec::with_capacity(sizes.get(&op.key).copied().unwrap_or(0)),
            });
            parts.len() - 1
        });
        let pop = PartOp::new(mop, i, completion_idx, returned)
            .ok_or("the history has more than 2 billion events, more than the checker can index")?;
        parts[slot].ops.push(pop);
    }
    Ok(parts)
}

/// Run `f` over `items` on the configured pool; results in `items` order.
fn par_map<T: Sync, R: Send>(
    config: &LinearConfig,
    items: &[T],
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<R> {
    // One item needs no pool: starting rayon's threads is most of a small check's time.
    if items.len() <= 1 {
        return items.iter().map(&f).collect();
    }
    let run = || items.par_iter().map(&f).collect();
    match config.threads {
        Some(t) => match rayon::ThreadPoolBuilder::new()
            .num_threads(t.max(1))
            .build()
        {
            Ok(pool) => pool.install(run),
            Err(_) => run(),
        },
        None => run(),
    }
}

/// The budgets a result reports, with no part counted yet.
fn undecided_base(config: &LinearConfig) -> Undecided {
    Undecided {
        decide: match config.decide {
            Decide::AllKeys => "all-keys",
            Decide::Proportionate { .. } => "verdict-first",
        },
        memory_budget_bytes: config.memory_bytes,
        time_limit_ms: config.time_limit.map(|d| d.as_millis() as u64),
        ..Undecided::default()
    }
}

/// The verdict phase searches every part in rounds: a part that passes the round's cap of cached
/// configurations is searched again in the next round with a cap `ROUND_GROWTH` times bigger, and
/// the last round has none. So a part that is quick to decide (an invalid key convicted early in
/// its history) is decided within the first round whichever parts come before it, as Porcupine's
/// goroutine per partition would, while a hard part repeats at most 1/(ROUND_GROWTH − 1) of its
/// work. Rounds count configurations, not time, so which parts they decide does not depend on
/// timing.
const ROUNDS: usize = 4;
/// The first round's cap of cached configurations per part.
const FIRST_ROUND_ENTRIES: usize = 20_000;
/// How much bigger each round's cap is than the one before.
const ROUND_GROWTH: usize = 8;

/// The first invalid part (index, when found from the check's start) and the budget the parts
/// still undecided got from then on.
type FirstInvalid = Mutex<Option<(usize, Duration, Option<Duration>)>>;

/// One round of the verdict phase over the parts `todo`: their outcomes in `todo` order, each
/// with its search time. The first invalid part found sets the stop of the others (`Decide`).
fn search_round<M: Model>(
    model: &M,
    parts: &[Part<M::Op>],
    todo: &[usize],
    limits: &Limits<'_>,
    config: &LinearConfig,
    start: Instant,
    first_invalid: &FirstInvalid,
) -> Vec<(usize, Outcome, Stats, Duration)> {
    par_map(config, todo, |&i| {
        let t0 = Instant::now();
        let (outcome, stats) = if limits.settled.passed(t0) {
            (
                Outcome::Aborted(Cause::Settled, String::new()),
                Stats::default(),
            )
        } else {
            search(model, &parts[i].ops, limits, true, Pruning::Auto)
        };
        let took = t0.elapsed();
        if matches!(outcome, Outcome::Invalid(_)) {
            let at = start.elapsed();
            let mut first = first_invalid.lock().unwrap_or_else(|e| e.into_inner());
            if first.is_none() {
                let budget = match config.decide {
                    Decide::AllKeys => None,
                    Decide::Proportionate { factor, floor } => {
                        Some(at.saturating_mul(factor).max(floor))
                    }
                };
                if let Some(b) = budget {
                    limits.settled.at(start + at + b);
                }
                *first = Some((i, at, budget));
            }
        }
        (i, outcome, stats, took)
    })
}

/// Check a whole history against `model` (see the module doc for the phases and budgets).
pub fn check_history<M: Model>(
    model: &M,
    history: &History,
    config: &LinearConfig,
) -> LinearResult {
    let start = Instant::now();
    let parts = match prepare(model, history) {
        Ok(p) => p,
        Err(reason) => {
            let ms = start.elapsed().as_millis() as u64;
            return LinearResult {
                model: model.name().to_string(),
                verdict: Verdict::Unknown,
                reason: Some(reason),
                op_count: 0,
                time_ms: ms,
                verdict_time_ms: ms,
                witness_time_ms: 0,
                witness_mode: config.witness,
                first_invalid_ms: None,
                undecided: undecided_base(config),
                parts: Vec::new(),
            };
        }
    };
    let settled = Stop::never(start);
    let memory = Memory::new(config.memory_bytes.unwrap_or(usize::MAX));
    // The first invalid part: its index and when it was found, from `start`; and the budget the
    // others got from then on.
    let first_invalid: FirstInvalid = Mutex::new(None);
    let searched = decide_parts(
        model,
        &parts,
        config,
        start,
        &settled,
        &memory,
        &first_invalid,
    );
    let verdict_time = start.elapsed();
    let first_invalid = first_invalid
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    // Phase 2, the witnesses of the invalid parts, in part order, within the same memory budget.
    let invalid: Vec<(usize, &search::Blocked, Duration)> = searched
        .iter()
        .filter_map(|(i, o, _, took)| match o {
            Outcome::Invalid(b) => Some((*i, b, *took)),
            _ => None,
        })
        .collect();
    let witnesses = par_map(config, &invalid, |&(i, b, took)| {
        let budget = config.minimize_budget(took);
        witness::build_witness(
            model,
            history,
            &parts[i].ops,
            b,
            config.prefix_tail_len,
            budget.map(|d| (d, &memory)),
        )
    });
    let mut witnesses = witnesses.into_iter();
    let mut undecided = undecided_base(config);
    undecided.settled_budget_ms = first_invalid.and_then(|(.., b)| b.map(|b| b.as_millis() as u64));
    let settled_reason = |first: usize| {
        let (_, at, budget) = first_invalid.unwrap_or((first, Duration::ZERO, None));
        settled_reason(&parts[first].key, at, budget)
    };
    let summaries: Vec<PartSummary> = searched
        .into_iter()
        .map(|(i, outcome, stats, took)| {
            let searched = (outcome, stats, took);
            let done = Summarize {
                config,
                first_invalid,
                settled_reason: &settled_reason,
            };
            let ends = match &searched.0 {
                Outcome::Valid(order) if config.keep_end => ends_of(model, &parts[i], order),
                _ => Vec::new(),
            };
            let mut summary =
                summarize_part(&parts[i], searched, &done, &mut undecided, &mut witnesses);
            summary.ends = ends;
            summary
        })
        .collect();
    let verdict = summaries
        .iter()
        .fold(Verdict::Valid, |v, p| v.merge(p.verdict));
    let total = start.elapsed();
    LinearResult {
        model: model.name().to_string(),
        verdict,
        reason: None,
        op_count: summaries.iter().map(|p| p.op_count).sum(),
        time_ms: total.as_millis() as u64,
        verdict_time_ms: verdict_time.as_millis() as u64,
        witness_time_ms: (total - verdict_time).as_millis() as u64,
        witness_mode: config.witness,
        first_invalid_ms: first_invalid.map(|(_, at, _)| at.as_millis() as u64),
        undecided,
        parts: summaries,
    }
}

/// Why a part is unknown once the first invalid part, `first`, settled the verdict after `at`,
/// the others getting `budget` more.
pub(crate) fn settled_reason<K: std::ops::Deref<Target = str>>(
    first: &Option<K>,
    at: Duration,
    budget: Option<Duration>,
) -> String {
    let budget = budget.map_or(String::new(), |b| {
        format!("; the other parts had {} ms more", b.as_millis())
    });
    format!(
        "not decided: {} was invalid after {} ms, which settled the verdict{budget} (--all-keys decides every key)",
        key_label(first),
        at.as_millis()
    )
}

/// Phase 1, the verdict, in rounds (see `ROUNDS`); in each, biggest parts first, for load
/// balance. Every part's outcome, in part order, with the statistics of its latest search that
/// ran and its search time.
fn decide_parts<M: Model>(
    model: &M,
    parts: &[Part<M::Op>],
    config: &LinearConfig,
    start: Instant,
    settled: &Stop,
    memory: &Memory,
    first_invalid: &FirstInvalid,
) -> Vec<(usize, Outcome, Stats, Duration)> {
    let mut todo: Vec<usize> = (0..parts.len()).collect();
    todo.sort_by_key(|&i| (std::cmp::Reverse(parts[i].ops.len()), i));
    let mut decided: Vec<Option<(Outcome, Stats)>> = (0..parts.len()).map(|_| None).collect();
    let mut took = vec![Duration::ZERO; parts.len()];
    // The statistics of each part's latest search that ran (a part stopped before its next
    // round began keeps the last round's).
    let mut last_stats = vec![Stats::default(); parts.len()];
    for round in 0..ROUNDS {
        let limits = Limits {
            deadline: config.time_limit.map(|d| start + d),
            settled,
            memory,
            max_entries: (round + 1 < ROUNDS)
                .then(|| FIRST_ROUND_ENTRIES * ROUND_GROWTH.pow(round as u32)),
        };
        let searched = search_round(model, parts, &todo, &limits, config, start, first_invalid);
        todo.clear();
        for (i, outcome, stats, t) in searched {
            took[i] += t;
            if stats.cache_entries > 0 {
                last_stats[i] = stats;
            }
            match outcome {
                Outcome::Unfinished => todo.push(i),
                o => decided[i] = Some((o, last_stats[i])),
            }
        }
        if todo.is_empty() {
            break;
        }
    }
    decided
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let (o, st) = d.unwrap_or_else(|| {
                (
                    Outcome::Aborted(Cause::Other, "internal: never searched".into()),
                    Stats::default(),
                )
            });
            (i, o, st, took[i])
        })
        .collect()
}

/// What every part's summary reads of the check as a whole.
struct Summarize<'a> {
    config: &'a LinearConfig,
    /// The first invalid part, when it was found, and the budget the others got from then on.
    first_invalid: Option<(usize, Duration, Option<Duration>)>,
    /// Why a part the first invalid one settled is unknown.
    settled_reason: &'a dyn Fn(usize) -> String,
}

/// The last ops of a linearization [`ends_of`] puts in other orders (a register key's last
/// ops overlap by as many as it has threads).
const END_TAIL: usize = 10;
/// The most end states [`ends_of`] gives.
const MAX_ENDS: usize = 8;
/// The most places (ops placed so far, state) [`ends_of`] looks at per part.
const END_PLACES: usize = 4_096;

/// Stand-ins for states a valid part can end in, the found linearization's (`order`) first:
/// then those of the linearizations that differ from it only in the order of its last
/// [`END_TAIL`] ops (each order respecting real time and the model; a pending op among them —
/// never returned — may also not take effect), and of those that add an op left pending (it
/// may take effect after everything else) at the end. Each
/// is the end of a linearization of the part, so later ops that fit any one of them fit the
/// part (it need not be every end there is: fewer only means more keys read again). Empty when
/// the found end has no stand-in.
fn ends_of<M: Model>(model: &M, part: &Part<M::Op>, order: &[u32]) -> Vec<StandIn> {
    // The state after `ids` from `from`, in that order (op ids, as a valid outcome gives them).
    let replay = |from: M::State, ids: &[u32]| {
        ids.iter().try_fold(from, |s, &id| {
            model.step(&s, &part.ops.get(id as usize)?.op)
        })
    };
    let (prefix, tail) = order.split_at(order.len().saturating_sub(END_TAIL));
    let Some(before_tail) = replay(model.init(), prefix) else {
        return Vec::new();
    };
    let Some(first) = replay(before_tail.clone(), tail).and_then(|s| model.stand_in(&s)) else {
        return Vec::new();
    };
    let mut ends = Ends {
        model,
        part,
        tail,
        pending: left_pending(part, order),
        out: vec![first],
        seen: std::collections::HashSet::new(),
    };
    ends.orders(&before_tail, 0);
    ends.out
}

/// The pending ops of `part` that `order` leaves out.
fn left_pending<O>(part: &Part<O>, order: &[u32]) -> Vec<u32> {
    let mut pending: Vec<u32> = (0..part.ops.len() as u32)
        .filter(|&id| part.ops[id as usize].ret().is_none())
        .collect();
    if !pending.is_empty() {
        let placed: std::collections::HashSet<u32> = order.iter().copied().collect();
        pending.retain(|id| !placed.contains(id));
    }
    pending
}

/// The search of [`ends_of`].
struct Ends<'a, M: Model> {
    model: &'a M,
    part: &'a Part<M::Op>,
    tail: &'a [u32],
    /// Pending ops the linearization left out.
    pending: Vec<u32>,
    out: Vec<StandIn>,
    /// Places already looked at: the tail's ops placed, and the state they left.
    seen: std::collections::HashSet<(u32, M::State)>,
}

impl<M: Model> Ends<'_, M> {
    /// Every order of the tail's ops not in `used` after `state`, each op placed only once
    /// every tail op that returned before it was invoked is placed; a pending op also left
    /// out.
    fn orders(&mut self, state: &M::State, used: u32) {
        if self.out.len() >= MAX_ENDS
            || self.seen.len() >= END_PLACES
            || !self.seen.insert((used, state.clone()))
        {
            return;
        }
        let (ops, tail) = (&self.part.ops, self.tail);
        if used.count_ones() as usize == tail.len() {
            self.keep(state);
            for i in 0..self.pending.len() {
                let p = &ops[self.pending[i] as usize];
                if let Some(s) = self.model.step(state, &p.op) {
                    self.keep(&s);
                }
            }
            return;
        }
        for (i, &id) in tail.iter().enumerate() {
            let a = &ops[id as usize];
            let must_wait = tail.iter().enumerate().any(|(j, &other)| {
                j != i
                    && used & (1 << j) == 0
                    && ops[other as usize].ret().is_some_and(|r| r < a.call())
            });
            if used & (1 << i) != 0 || must_wait {
                continue;
            }
            if let Some(s) = self.model.step(state, &a.op) {
                self.orders(&s, used | (1 << i));
            }
            if a.ret().is_none() {
                self.orders(state, used | (1 << i));
            }
        }
    }

    fn keep(&mut self, state: &M::State) {
        if let Some(e) = self.model.stand_in(state)
            && !self.out.contains(&e)
            && self.out.len() < MAX_ENDS
        {
            self.out.push(e);
        }
    }
}

/// The summary of `part` from its outcome, statistics and search time; counts an unknown
/// part's cause in `undecided` and takes an invalid part's witness from `witnesses` (built in
/// part order).
fn summarize_part<O>(
    part: &Part<O>,
    (outcome, stats, took): (Outcome, Stats, Duration),
    done: &Summarize<'_>,
    undecided: &mut Undecided,
    witnesses: &mut impl Iterator<Item = Witness>,
) -> PartSummary {
    let (config, first_invalid, settled_reason) =
        (done.config, done.first_invalid, done.settled_reason);
    let mut linearization = None;
    let (verdict, reason, cause, witness) = match outcome {
        Outcome::Valid(order) => {
            if config.keep_linearization {
                linearization = Some(
                    order
                        .iter()
                        .map(|&id| part.ops[id as usize].invoke_idx() as u64)
                        .collect(),
                );
            }
            (Verdict::Valid, None, None, None)
        }
        Outcome::Aborted(cause, r) => {
            match cause {
                Cause::Settled => undecided.settled += 1,
                Cause::Memory => undecided.memory += 1,
                Cause::TimeLimit => undecided.time_limit += 1,
                Cause::Other => undecided.other += 1,
            }
            let r = match (cause, first_invalid) {
                (Cause::Settled, Some((first, ..))) => settled_reason(first),
                _ => r,
            };
            (Verdict::Unknown, Some(r), Some(cause), None)
        }
        Outcome::Invalid(_) => (Verdict::Invalid, None, None, witnesses.next()),
        // The last round has no cap, so no part ends unfinished.
        Outcome::Unfinished => {
            undecided.other += 1;
            let r = "internal: the search stopped unfinished".to_string();
            (Verdict::Unknown, Some(r), Some(Cause::Other), None)
        }
    };
    PartSummary {
        key: part.key.clone().map(String::from),
        op_count: part.ops.len(),
        first_index: part.ops.first().map_or(0, |o| o.invoke_idx() as u64),
        pending_count: part.ops.iter().filter(|o| o.ret().is_none()).count(),
        verdict,
        reason,
        unknown_cause: cause,
        time_ms: took.as_millis() as u64,
        cache_entries: stats.cache_entries,
        cache_bytes: stats.cache_bytes,
        witness,
        linearization,
        ends: Vec::new(),
    }
}

/// The `linearizable` checker: a model plus budgets.
pub struct LinearizableChecker<M: Model> {
    /// The sequential specification.
    pub model: M,
    /// Budgets and options.
    pub config: LinearConfig,
}

impl<M: Model> LinearizableChecker<M> {
    /// A checker with default budgets.
    pub fn new(model: M) -> Self {
        LinearizableChecker {
            model,
            config: LinearConfig::default(),
        }
    }

    /// Run the check and return the typed result.
    pub fn check_linear(&self, history: &History) -> LinearResult {
        check_history(&self.model, history, &self.config)
    }
}

impl<M: Model> Checker for LinearizableChecker<M> {
    fn name(&self) -> &str {
        "linearizable"
    }

    fn check(&self, history: &History) -> CheckResult {
        let r = self.check_linear(history);
        CheckResult {
            checker: "linearizable".to_string(),
            verdict: r.verdict,
            summary: r.summary(),
            details: serde_json::to_value(&r).unwrap_or_else(
                |e| serde_json::json!({ "error": format!("could not serialize result: {e}") }),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, Process};
    use crate::model::{MutexModel, RegisterConfig, RegisterModel};
    use serde_json::{Value, json};

    fn op(t: OpType, p: u64, f: &str, v: Value) -> Op {
        Op::new(t, Process::Client(p), f, v)
    }
    fn cas() -> RegisterModel {
        RegisterModel::cas_register(RegisterConfig::etcd())
    }

    #[test]
    fn sequential_history_is_valid_and_stale_read_is_invalid() {
        use OpType::*;
        let good = History::from_ops(vec![
            op(Invoke, 0, "write", json!(1)),
            op(Ok, 0, "write", json!(1)),
            op(Invoke, 1, "read", Value::Null),
            op(Ok, 1, "read", json!(1)),
        ]);
        let r = check_history(&cas(), &good, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
        let bad = History::from_ops(vec![
            op(Invoke, 0, "write", json!(1)),
            op(Ok, 0, "write", json!(1)),
            op(Invoke, 1, "read", Value::Null),
            op(Ok, 1, "read", Value::Null),
        ]);
        let r = check_history(&cas(), &bad, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        let w = r.parts[0].witness.as_ref().unwrap();
        assert_eq!(w.op.index, 2);
        assert_eq!(w.prefix_len, 1);
        assert_eq!(w.last_state, "1");
        let m = w.minimized.as_ref().unwrap();
        assert_eq!(m.iter().map(|o| o.index).collect::<Vec<_>>(), vec![0, 2]);
        assert!(
            r.explain().contains("cannot linearize op 2"),
            "{}",
            r.explain()
        );
    }

    #[test]
    fn a_valid_part_keeps_the_ends_of_linearizations_near_the_found_one() {
        use OpType::*;
        let config = LinearConfig {
            keep_end: true,
            ..LinearConfig::default()
        };
        let values = |h: &History| -> Vec<Value> {
            let r = check_history(&cas(), h, &config);
            assert_eq!(r.verdict, Verdict::Valid);
            let mut v: Vec<Value> = r.parts[0]
                .ends
                .iter()
                .map(|e| match e {
                    StandIn::Op { f, value } => {
                        assert_eq!(*f, "write");
                        value.clone()
                    }
                    StandIn::Initial => Value::Null,
                })
                .collect();
            v.sort_by_key(Value::to_string);
            v
        };
        // Writes of 2 and 3 at once after a write of 1: either may be last.
        let concurrent = History::from_ops(vec![
            op(Invoke, 0, "write", json!(1)),
            op(Ok, 0, "write", json!(1)),
            op(Invoke, 0, "write", json!(2)),
            op(Invoke, 1, "write", json!(3)),
            op(Ok, 0, "write", json!(2)),
            op(Ok, 1, "write", json!(3)),
        ]);
        assert_eq!(values(&concurrent), [json!(2), json!(3)]);
        // One after the other: only the last.
        let sequential = History::from_ops(vec![
            op(Invoke, 0, "write", json!(2)),
            op(Ok, 0, "write", json!(2)),
            op(Invoke, 1, "write", json!(3)),
            op(Ok, 1, "write", json!(3)),
        ]);
        assert_eq!(values(&sequential), [json!(3)]);
        // A crashed write of 3 after a write of 2: it took effect, or it did not.
        let crashed = History::from_ops(vec![
            op(Invoke, 0, "write", json!(2)),
            op(Ok, 0, "write", json!(2)),
            op(Invoke, 1, "write", json!(3)),
            op(Info, 1, "write", json!(3)),
        ]);
        assert_eq!(values(&crashed), [json!(2), json!(3)]);
        // A read of 2 after both: the write of 3 cannot be last (nor take effect).
        let read = History::from_ops(vec![
            op(Invoke, 0, "write", json!(2)),
            op(Invoke, 1, "write", json!(3)),
            op(Ok, 0, "write", json!(2)),
            op(Ok, 1, "write", json!(3)),
            op(Invoke, 0, "read", Value::Null),
            op(Ok, 0, "read", json!(2)),
        ]);
        assert_eq!(values(&read), [json!(2)]);
    }

    #[test]
    fn concurrent_ops_may_reorder_and_info_may_or_may_not_happen() {
        use OpType::*;
        // Read overlapping a write may see either value; an info write may apply later or never.
        let h = History::from_ops(vec![
            op(Invoke, 0, "write", json!(1)),
            op(Invoke, 1, "read", Value::Null),
            op(Ok, 1, "read", json!(1)),
            op(Ok, 0, "write", json!(1)),
            op(Invoke, 2, "write", json!(7)),
            op(Info, 2, "write", json!(7)),
            op(Invoke, 3, "read", Value::Null),
            op(Ok, 3, "read", json!(1)),
            op(Invoke, 4, "read", Value::Null),
            op(Ok, 4, "read", json!(7)),
            op(Invoke, 5, "write", json!(9)),
        ]);
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
        assert_eq!(r.parts[0].pending_count, 2);
        // But the info write cannot un-happen: reading 1 after 7 is invalid.
        let mut ops = h.ops.clone();
        ops.push(op(Invoke, 6, "read", Value::Null));
        ops.push(op(Ok, 6, "read", json!(1)));
        let r = check_history(&cas(), &History::from_ops(ops), &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        assert_eq!(r.parts[0].witness.as_ref().unwrap().op.index, 11);
    }

    #[test]
    fn cas_mismatch_evidence_is_used_only_when_enabled() {
        use OpType::*;
        let mut fail = op(Fail, 1, "cas", json!([1, 2]));
        fail.error = Some("cas-mismatch".into());
        let h = History::from_ops(vec![
            op(Invoke, 0, "write", json!(1)),
            op(Ok, 0, "write", json!(1)),
            op(Invoke, 1, "cas", json!([1, 2])),
            fail,
        ]);
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        let mut cfg = RegisterConfig::etcd();
        cfg.cas_mismatch_is_evidence = false;
        let r = check_history(
            &RegisterModel::cas_register(cfg),
            &h,
            &LinearConfig::default(),
        );
        assert_eq!(r.verdict, Verdict::Valid);
    }

    #[test]
    fn parts_are_independent_and_invalid_part_is_named() {
        use OpType::*;
        let mut ops = Vec::new();
        for (k, v) in [("a", 1), ("b", 2)] {
            let mut w = op(Invoke, 0, "write", json!(v));
            w.key = Some(k.into());
            let mut wo = op(Ok, 0, "write", json!(v));
            wo.key = Some(k.into());
            ops.push(w);
            ops.push(wo);
        }
        let mut r = op(Invoke, 1, "read", Value::Null);
        r.key = Some("a".into());
        let mut ro = op(Ok, 1, "read", json!(2));
        ro.key = Some("a".into());
        ops.push(r);
        ops.push(ro);
        let cfg = LinearConfig {
            decide: Decide::AllKeys,
            ..LinearConfig::default()
        };
        let res = check_history(&cas(), &History::from_ops(ops), &cfg);
        assert_eq!(res.verdict, Verdict::Invalid);
        assert_eq!(res.parts.len(), 2);
        assert_eq!(res.parts[0].key.as_deref(), Some("a"));
        assert_eq!(res.parts[0].verdict, Verdict::Invalid);
        assert_eq!(res.parts[1].verdict, Verdict::Valid);
        assert!(
            res.explain().contains("key a: cannot linearize op 4"),
            "{}",
            res.explain()
        );
    }

    /// Several invalid keys: all are checked and reported (no cancellation), and the result does
    /// not depend on thread timing.
    #[test]
    fn every_invalid_key_is_reported_the_same_way_every_time() {
        use super::histgen::{GenConfig, corrupt_read, generate_register_history};
        let g = GenConfig {
            keys: 8,
            processes_per_key: 4,
            ops: 800,
            info_probability: 0.05,
            seed: 7,
            ..GenConfig::default()
        };
        let mut h = generate_register_history(&g);
        for pick in [3, 40, 77, 150, 220] {
            corrupt_read(&mut h, pick);
        }
        let cfg = LinearConfig {
            threads: Some(2),
            decide: Decide::AllKeys,
            ..LinearConfig::default()
        };
        type Shown = (Option<String>, Verdict, Option<u64>, Vec<u64>);
        let project = |r: &LinearResult| -> Vec<Shown> {
            r.parts
                .iter()
                .map(|p| {
                    let w = p.witness.as_ref();
                    (
                        p.key.clone(),
                        p.verdict,
                        w.map(|w| w.op.index),
                        w.and_then(|w| w.minimized.as_ref())
                            .map_or(Vec::new(), |m| m.iter().map(|o| o.index).collect()),
                    )
                })
                .collect()
        };
        let first = check_history(&cas(), &h, &cfg);
        let bad = first
            .parts
            .iter()
            .filter(|p| p.verdict == Verdict::Invalid)
            .count();
        assert!(bad >= 2, "{}", first.explain());
        assert!(first.parts.iter().all(|p| p.verdict != Verdict::Unknown));
        assert_eq!(
            first.explain().matches("cannot linearize").count(),
            bad,
            "{}",
            first.explain()
        );
        for _ in 0..10 {
            let r = check_history(&cas(), &h, &cfg);
            assert_eq!(project(&r), project(&first));
        }
    }

    /// Key `a` (the biggest, so searched first) is invalid; `b` and `c` are valid.
    fn one_bad_key_and_two_good() -> History {
        use OpType::*;
        let mut ops = Vec::new();
        let mut push = |t: OpType, p: u64, f: &str, v: Value, k: &str| {
            let mut o = op(t, p, f, v);
            o.key = Some(k.into());
            ops.push(o);
        };
        for v in 1..=4 {
            push(Invoke, 0, "write", json!(v), "a");
            push(Ok, 0, "write", json!(v), "a");
        }
        push(Invoke, 1, "read", Value::Null, "a");
        push(Ok, 1, "read", json!(1), "a");
        for k in ["b", "c"] {
            push(Invoke, 2, "write", json!(5), k);
            push(Ok, 2, "write", json!(5), k);
            push(Invoke, 3, "read", Value::Null, k);
            push(Ok, 3, "read", json!(5), k);
        }
        History::from_ops(ops)
    }

    #[test]
    fn the_verdict_comes_first_and_undecided_keys_are_counted_with_why() {
        let h = one_bad_key_and_two_good();
        let first = LinearConfig {
            threads: Some(1),
            decide: Decide::Proportionate {
                factor: 0,
                floor: Duration::ZERO,
            },
            ..LinearConfig::default()
        };
        let r = check_history(&cas(), &h, &first);
        assert_eq!(r.verdict, Verdict::Invalid, "{}", r.explain());
        assert_eq!(r.parts[0].verdict, Verdict::Invalid);
        assert!(r.parts[0].witness.is_some());
        for p in &r.parts[1..] {
            assert_eq!(p.verdict, Verdict::Unknown, "{}", r.explain());
            assert_eq!(p.unknown_cause, Some(Cause::Settled));
            let why = p.reason.as_deref().unwrap();
            assert!(why.contains("not decided: key a was invalid"), "{why}");
        }
        assert_eq!(r.undecided.settled, 2);
        assert_eq!(r.undecided.decide, "verdict-first");
        assert!(r.first_invalid_ms.is_some());
        let summary = r.summary();
        assert!(summary.contains("2 keys left undecided"), "{summary}");
        assert!(summary.contains("--all-keys"), "{summary}");
        assert!(
            r.explain()
                .contains("not decided once the verdict was settled: key b, key c"),
            "{}",
            r.explain()
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["undecided"]["settled"], 2);
        assert_eq!(json["parts"][1]["unknown_cause"], "settled");
        // Every key decided with --all-keys.
        let all = LinearConfig {
            decide: Decide::AllKeys,
            ..first
        };
        let r = check_history(&cas(), &h, &all);
        assert_eq!(r.verdict, Verdict::Invalid);
        let verdicts: Vec<Verdict> = r.parts.iter().map(|p| p.verdict).collect();
        assert_eq!(verdicts, [Verdict::Invalid, Verdict::Valid, Verdict::Valid]);
        assert_eq!(r.undecided.settled, 0);
        assert!(!r.summary().contains("undecided"), "{}", r.summary());
        // The default budget (10x, at least 100 ms) decides keys this small.
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert!(r.parts.iter().all(|p| p.verdict != Verdict::Unknown));
    }

    #[test]
    fn past_the_memory_budget_a_key_is_unknown_and_never_valid() {
        use super::histgen::{GenConfig, generate_register_history};
        // One key whose search passes the first memory check (4096 steps), with many crashes.
        let h = generate_register_history(&GenConfig {
            processes_per_key: 20,
            ops: 4_000,
            info_probability: 0.1,
            seed: 2,
            ..GenConfig::default()
        });
        let tiny = LinearConfig {
            memory_bytes: Some(1),
            ..LinearConfig::default()
        };
        let r = check_history(&cas(), &h, &tiny);
        assert_eq!(r.verdict, Verdict::Unknown, "{}", r.explain());
        assert_eq!(r.parts[0].unknown_cause, Some(Cause::Memory));
        assert!(
            r.parts[0]
                .reason
                .as_deref()
                .unwrap()
                .contains("memory budget exhausted"),
            "{}",
            r.explain()
        );
        assert_eq!(r.undecided.memory, 1);
        assert!(r.summary().contains("--memory"), "{}", r.summary());
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
    }

    #[test]
    fn witness_budget_follows_the_search_cost() {
        let cfg = LinearConfig::default();
        let ms = Duration::from_millis;
        assert_eq!(cfg.minimize_budget(ms(1)), Some(WITNESS_FLOOR));
        assert_eq!(cfg.minimize_budget(ms(10)), Some(ms(100)));
        assert_eq!(cfg.minimize_budget(ms(900)), Some(ms(2000)));
        let minimal = LinearConfig {
            witness: WitnessMode::Minimal,
            ..LinearConfig::default()
        };
        assert_eq!(
            minimal.minimize_budget(ms(1)),
            Some(Duration::from_secs(60))
        );
        let none = LinearConfig {
            witness: WitnessMode::None,
            ..LinearConfig::default()
        };
        assert_eq!(none.minimize_budget(ms(1)), None);
    }

    #[test]
    fn witness_mode_none_skips_minimization_and_times_are_split() {
        use OpType::*;
        let bad = History::from_ops(vec![
            op(Invoke, 0, "write", json!(1)),
            op(Ok, 0, "write", json!(1)),
            op(Invoke, 1, "read", Value::Null),
            op(Ok, 1, "read", Value::Null),
        ]);
        let none = LinearConfig {
            witness: WitnessMode::None,
            ..LinearConfig::default()
        };
        let r = check_history(&cas(), &bad, &none);
        let w = r.parts[0].witness.as_ref().unwrap();
        assert!(w.minimized.is_none());
        assert_eq!(w.minimize_searches, 0);
        assert!(r.summary().contains("--witness none"), "{}", r.summary());
        assert!(r.verdict_time_ms + r.witness_time_ms <= r.time_ms + 1);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["witness_mode"], "none");
        assert!(json["verdict_time_ms"].is_u64() && json["witness_time_ms"].is_u64());
        for mode in [WitnessMode::Fast, WitnessMode::Minimal] {
            let cfg = LinearConfig {
                witness: mode,
                ..LinearConfig::default()
            };
            let r = check_history(&cas(), &bad, &cfg);
            let w = r.parts[0].witness.as_ref().unwrap();
            assert!(w.minimized_complete, "{mode:?}");
            assert_eq!(w.minimized.as_ref().unwrap().len(), 2, "{mode:?}");
        }
        assert_eq!(
            "minimal".parse::<WitnessMode>(),
            Result::Ok(WitnessMode::Minimal)
        );
        assert!(
            "full"
                .parse::<WitnessMode>()
                .unwrap_err()
                .contains("none, fast, minimal")
        );
    }

    #[test]
    fn ill_formed_history_is_unknown_not_a_panic() {
        let h = History::from_ops(vec![op(OpType::Ok, 0, "read", json!(1))]);
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Unknown);
        assert!(r.reason.unwrap().contains("no open invoke"));
        let h = History::from_ops(vec![op(OpType::Invoke, 0, "write", json!(null))]);
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Unknown);
        assert!(r.reason.unwrap().contains("op 0"));
    }

    #[test]
    fn zero_budget_gives_unknown_with_reason() {
        use OpType::*;
        // Many concurrent pending writes force a large search; a zero time limit must stop it.
        let mut ops = Vec::new();
        for p in 0..40 {
            ops.push(op(Invoke, p, "write", json!(p)));
        }
        for p in 40..80 {
            ops.push(op(Invoke, p, "read", Value::Null));
            ops.push(op(Ok, p, "read", json!(1000 + p)));
        }
        let cfg = LinearConfig {
            time_limit: Some(Duration::ZERO),
            ..LinearConfig::default()
        };
        let r = check_history(&cas(), &History::from_ops(ops), &cfg);
        // Either the search proves it invalid before the first budget check, or it stops: both
        // are honest; it must never claim valid.
        assert_ne!(r.verdict, Verdict::Valid);
        if r.verdict == Verdict::Unknown {
            assert!(r.parts[0].reason.as_ref().unwrap().contains("time limit"));
        }
    }

    #[test]
    fn blocked_prefix_replays_and_respects_real_time() {
        use super::histgen::{GenConfig, generate_register_history};
        let m = cas();
        let mut aborted = 0;
        for seed in 0..40 {
            let g = GenConfig {
                processes_per_key: 4,
                ops: 120,
                info_probability: 0.03,
                seed,
                ..GenConfig::default()
            };
            let mut h = generate_register_history(&g);
            let Some(t) = h
                .ops
                .iter()
                .rposition(|o| o.op_type == OpType::Ok && o.f == "read")
            else {
                continue;
            };
            h.ops[t].value = json!(-5);
            let parts = prepare(&m, &h).unwrap();
            let stop = Stop::never(Instant::now());
            let mem = Memory::new(512 << 20);
            let limits = Limits {
                deadline: Some(Instant::now() + Duration::from_secs(5)),
                settled: &stop,
                memory: &mem,
                max_entries: None,
            };
            let ops = &parts[0].ops;
            let b = match search(&m, ops, &limits, true, Pruning::Auto).0 {
                Outcome::Invalid(b) => b,
                Outcome::Aborted(..) | Outcome::Unfinished => {
                    aborted += 1;
                    continue;
                }
                Outcome::Valid(_) => panic!("seed {seed}: expected invalid"),
            };
            assert_eq!(ops[b.op].completion_idx(), Some(t), "seed {seed}");
            let mut s = m.init();
            for (k, &id) in b.prefix.iter().enumerate() {
                s = m.step(&s, &ops[id as usize].op).expect("prefix replays");
                // No later prefix op may have returned before this one was invoked.
                for &later in &b.prefix[k + 1..] {
                    let r = ops[later as usize].ret().unwrap_or(u64::MAX);
                    assert!(r > ops[id as usize].call(), "seed {seed}: real-time order");
                }
            }
        }
        assert!(aborted < 10, "{aborted} of 40 searches hit the budget");
    }

    #[test]
    fn etcd_jsonl_history_with_absent_reads_and_cas_mismatch() {
        let text = r#"{"type":"invoke","process":0,"f":"read","key":"k1","value":null}
{"type":"ok","process":0,"f":"read","key":"k1","value":null}
{"type":"invoke","process":1,"f":"cas","key":"k1","value":[0,1]}
{"type":"fail","process":1,"f":"cas","key":"k1","value":[0,1],"error":"cas-mismatch"}
{"type":"invoke","process":2,"f":"write","key":"k1","value":3}
{"type":"info","process":2,"f":"write","key":"k1","value":3,"error":"timeout"}
{"type":"invoke","process":"nemesis","f":"start-partition","value":null}
{"type":"invoke","process":0,"f":"cas","key":"k1","value":[3,4]}
{"type":"ok","process":0,"f":"cas","key":"k1","value":[3,4]}
{"type":"invoke","process":1,"f":"read","key":"k2","value":null}
{"type":"ok","process":1,"f":"read","key":"k2","value":null}
"#;
        let h = History::read_jsonl(text.as_bytes(), "etcd.jsonl").unwrap();
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.explain());
        assert_eq!(r.parts.len(), 2);
        assert_eq!(
            r.parts[0].op_count, 4,
            "read, cas-mismatch, info write, cas"
        );
        assert_eq!(r.parts[0].pending_count, 1);
        // A later read of "absent" on k1 contradicts the successful cas.
        let bad = format!(
            "{text}{}\n{}\n",
            r#"{"type":"invoke","process":3,"f":"read","key":"k1","value":null}"#,
            r#"{"type":"ok","process":3,"f":"read","key":"k1","value":null}"#
        );
        let h = History::read_jsonl(bad.as_bytes(), "etcd.jsonl").unwrap();
        let r = check_history(&cas(), &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        assert!(
            r.explain()
                .contains("key k1: cannot linearize op 11 (process 3 read → absent"),
            "{}",
            r.explain()
        );
    }

    #[test]
    fn mutex_double_acquire_is_invalid() {
        use OpType::*;
        let h = History::from_ops(vec![
            op(Invoke, 0, "acquire", Value::Null),
            op(Ok, 0, "acquire", Value::Null),
            op(Invoke, 1, "acquire", Value::Null),
            op(Ok, 1, "acquire", Value::Null),
        ]);
        let r = check_history(&MutexModel, &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        let c = LinearizableChecker::new(MutexModel);
        let cr = c.check(&h);
        assert_eq!(cr.checker, "linearizable");
        assert_eq!(cr.details["verdict"], "invalid");
    }
}
