//! Session-guarantee checker: read-your-writes, monotonic reads, monotonic writes and
//! writes-follow-reads (Terry et al., PDIS 1994) on per-key ops, judged against a per-key version
//! order taken from one of three sources, plus stale-read quantification and version-conflict
//! detection.
//!
//! Owns the analysis and its result types (`SessionResult`, `SessionChecker`), the choice of
//! version source, and seeded generators of versioned register and list-append histories
//! (`histgen`) for tests and benchmarks. Does not own reading histories (`history`), rendering or
//! storing results.
//!
//! # Version sources
//!
//! - **system** (`VersionSource::System`): each ok `read` carries the key's version (etcd
//!   `mod_revision`); an ok `write`, `cas` or `append` carries the version it created. Higher
//!   version = newer, per key. A read of an absent key (`value: null`, no version) reads version
//!   0 ("none").
//! - **list-append** (`VersionSource::ListAppend`, Elle's trick): ops are `append` (value: an
//!   integer unique per key) and `read` (value: the key's whole list, `null` = empty). The order
//!   is recovered from the reads: a read's version is its list's length, and every read must be a
//!   prefix of the key's longest read. A read that is not is a `version-conflict` anomaly whose
//!   witness is that read and the longest one (two lists that cannot both be prefixes of one
//!   order); it is then not judged further (counted in `conflicting_reads`). An element appearing
//!   twice in a list is a `duplicate-element` anomaly. An ok append's version is the 1-based
//!   position of its element in the longest list. An ok append that no read shows has an unknown
//!   position after every version any read returned (counted in `unseen_appends`): a later read
//!   by its session misses it (read-your-writes violation), a later seen append by its session is
//!   older than it (monotonic-writes violation), and two unseen appends are never compared.
//!   `write`/`cas` ops cannot be placed and count as unversioned. Versions reported by the system
//!   are ignored in this source. With every read a prefix of one order, an append after reading
//!   `n` elements always lands beyond position `n`, so a writes-follow-reads violation can only
//!   show up as a version conflict.
//! - **increasing values** (`VersionSource::IncreasingValues`): the workload writes values that
//!   increase per key (starting at 1), so the written value is the version: a read's version is
//!   the value read (`null` = 0), a write's its value, a cas's its new value. Non-integer or
//!   non-positive values are malformed.
//!
//! **Choosing the source** (`SessionConfig::source`; `None` = auto): a configured source wins;
//! otherwise a history with any `append` op or any list-valued ok read uses list-append (the order
//! it recovers is checked against itself, while system versions are taken on trust), else system
//! versions. Increasing values are never guessed: a workload must declare them. The source used
//! and why are recorded in the result (`version_source`, `version_source_reason`).
//!
//! # Semantics
//!
//! - **Session.** By default a session is a client *process*. A thread whose op ends `info`
//!   continues under a fresh process id, i.e. as a new session: the info op may or may not have
//!   taken effect, so the checker cannot demand that the session later sees it, and it cannot know
//!   how long the old connection's effects keep arriving. `SessionMode::Thread` instead treats a
//!   whole client thread (process `p`, `p + concurrency`, `p + 2·concurrency`, …) as one session;
//!   its ok writes before an `info` must still be seen after it. Info ops are never evidence in
//!   either mode: neither their writes nor their (unknown) reads are used.
//! - **fail** ops did not happen and are ignored. Nemesis ops and ops other than
//!   `read`/`write`/`cas`/`append` are ignored.
//! - Sessions are sequential, so scanning completions in history order is session order. For each
//!   session and key: **read-your-writes**: an ok read after the session's own ok write of
//!   version `v` returns version ≥ `v`; **monotonic reads**: successive ok reads never go back in
//!   version; **monotonic writes**: successive ok writes get strictly increasing versions;
//!   **writes-follow-reads**: an ok write after reading version `v` gets a version > `v`. The four
//!   are one mechanism (`RULES`): each session keeps two bounds per key (highest own write,
//!   highest read) and each rule compares an op against one of them, so one bad op is one
//!   violation per rule.
//! - **Unjudgeable input.** An ok op whose version the source cannot give (a read with a value but
//!   no version, a write without one) is counted as unversioned and skipped; an impossible version
//!   (≤ 0 on a write or on a read with a value, a value of the wrong shape) is counted as
//!   malformed and skipped. If no op has a version, or no comparison could be made at all, the
//!   verdict is `unknown`, never `valid`.
//! - **Stale reads.** For every ok read with a judgeable version, among the distinct versions of
//!   its key acknowledged (ok write/cas/append by anyone) *before the read was invoked*: versions
//!   behind = how many are newer than the version read; ms behind = read invoke time minus the ack
//!   time of the earliest-acknowledged of those newer versions (0 when up to date). Unseen appends
//!   count as newer than every read. Staleness is reported, not judged: it does not change the
//!   verdict (session guarantees allow stale reads).
//! - **Version conflicts** (system and increasing values). Two ok ops of one key reporting the same
//!   version with different values (write/write, read/write or read/read) mean the system's
//!   version order itself is contradictory; each is an anomaly of kind `version-conflict` and
//!   makes the verdict `invalid`. An append's element is not compared with a read's list.
//! - **Cost.** A constant number of passes over the history with hash maps keyed by (session,
//!   key), (key, version) and (key, element); list-append reads are each compared once with their
//!   key's longest list (linear in the history's size); stale-read counts use per-key Fenwick trees
//!   over the sorted acknowledged versions. O(n log n) time, O(n) memory.

use crate::checker::{CheckResult, Checker, Verdict};
use crate::history::{History, Op, OpType, Process};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt::Write as _;

/// What counts as one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "mode")]
pub enum SessionMode {
    /// Each process id is a session (a thread starts a new session after an `info`).
    Process,
    /// Each client thread is a session: process `p` belongs to thread `p % concurrency`.
    Thread {
        /// Number of client threads (process ids advance by this after an `info`).
        concurrency: u64,
    },
}

/// Where the per-key version order comes from (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionSource {
    /// Versions the system reported on each op (`version`: etcd mod_revision, a version column).
    System,
    /// Recovered from list-append reads: a read's version is its length, an append's the position
    /// of its element.
    ListAppend,
    /// The written value is the version (values increase per key).
    IncreasingValues,
}

impl VersionSource {
    /// All sources.
    pub const ALL: [VersionSource; 3] = [
        VersionSource::System,
        VersionSource::ListAppend,
        VersionSource::IncreasingValues,
    ];

    /// Stable kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            VersionSource::System => "system",
            VersionSource::ListAppend => "list-append",
            VersionSource::IncreasingValues => "increasing-values",
        }
    }
}

impl std::str::FromStr for VersionSource {
    type Err = String;

    fn from_str(s: &str) -> Result<VersionSource, String> {
        VersionSource::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                format!("version source {s:?}: expected system, list-append or increasing-values")
            })
    }
}

/// Checker options.
#[derive(Debug, Clone, Serialize)]
pub struct SessionConfig {
    /// How sessions are formed.
    pub mode: SessionMode,
    /// Where versions come from; `None` chooses automatically (see the module doc).
    pub source: Option<VersionSource>,
    /// At most this many violation witnesses are kept per guarantee (totals are always exact).
    pub max_witnesses_per_guarantee: usize,
    /// At most this many version-conflict witnesses are kept.
    pub max_conflicts: usize,
    /// Per guarantee, report violation counts for at most this many keys (the worst ones).
    pub top_keys: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            mode: SessionMode::Process,
            source: None,
            max_witnesses_per_guarantee: 100,
            max_conflicts: 100,
            top_keys: 10,
        }
    }
}

/// One of the four session guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Guarantee {
    /// Reads see the session's own earlier writes.
    ReadYourWrites,
    /// Reads never go back in version.
    MonotonicReads,
    /// The session's writes are applied in session order.
    MonotonicWrites,
    /// Writes are ordered after the versions the session read.
    WritesFollowReads,
}

impl Guarantee {
    /// All four, in report order.
    pub const ALL: [Guarantee; 4] = [
        Guarantee::ReadYourWrites,
        Guarantee::MonotonicReads,
        Guarantee::MonotonicWrites,
        Guarantee::WritesFollowReads,
    ];

    /// Stable kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Guarantee::ReadYourWrites => "read-your-writes",
            Guarantee::MonotonicReads => "monotonic-reads",
            Guarantee::MonotonicWrites => "monotonic-writes",
            Guarantee::WritesFollowReads => "writes-follow-reads",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// One violated guarantee with the two ops that show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violation {
    /// Which guarantee.
    pub guarantee: Guarantee,
    /// Key (absent for single-register histories).
    pub key: Option<String>,
    /// Session id: the process id, or the thread number in `SessionMode::Thread`.
    pub session: u64,
    /// Process id of the later op.
    pub process: u64,
    /// History index of the earlier op's completion (the write or read that set the bound).
    pub earlier_index: u64,
    /// History index of the later op's completion (the op that broke the bound).
    pub later_index: u64,
    /// Version of the earlier op (0 = absent).
    pub earlier_version: i64,
    /// Version of the later op (0 = absent).
    pub later_version: i64,
    /// Human-readable account naming values, versions and times.
    pub witness: String,
}

/// Violations of one key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyCount {
    /// Key (absent for single-register histories).
    pub key: Option<String>,
    /// Number of violations on this key.
    pub violations: u64,
}

/// Everything about one guarantee.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuaranteeResult {
    /// Which guarantee.
    pub guarantee: Guarantee,
    /// Comparisons made (pairs of ops whose versions were compared).
    pub checks: u64,
    /// Violations found (exact).
    pub violations: u64,
    /// Keys with the most violations, worst first, bounded by `top_keys`.
    pub top_keys: Vec<KeyCount>,
    /// The first violations in history order, bounded by `max_witnesses_per_guarantee`.
    pub witnesses: Vec<Violation>,
    /// When every violation happened (the later op's completion), as counts per time bucket.
    pub timeline: TimeHistogram,
}

/// Counts of events over time, compact whatever their number: the run is cut into buckets of
/// `bucket_ms` (10, 20, 50, 100, 200, 500 ms, 1 s, 2 s, … — the smallest giving at most
/// [`MAX_TIME_BUCKETS`] buckets over the history) and only non-empty buckets are listed.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct TimeHistogram {
    /// Bucket width in ms.
    pub bucket_ms: u64,
    /// `[bucket start in ms since the run started, events in it]`, in time order, non-empty
    /// buckets only.
    pub buckets: Vec<[u64; 2]>,
}

/// Most buckets a [`TimeHistogram`] spreads a history over.
pub const MAX_TIME_BUCKETS: u64 = 1_000;

impl TimeHistogram {
    /// Histogram of `times_ns` over a history lasting `span_ns`.
    pub fn of(times_ns: &[u64], span_ns: u64) -> TimeHistogram {
        let span_ms = span_ns.div_ceil(1_000_000).max(1);
        let bucket_ms = (1..=18)
            .flat_map(|e| [1, 2, 5].map(|m| m * 10u64.pow(e)))
            .find(|w| span_ms.div_ceil(*w) <= MAX_TIME_BUCKETS)
            .unwrap_or(u64::MAX / 2);
        let mut counts: std::collections::BTreeMap<u64, u64> = Default::default();
        for &t in times_ns {
            *counts.entry(t / 1_000_000 / bucket_ms).or_insert(0) += 1;
        }
        TimeHistogram {
            bucket_ms,
            buckets: counts
                .into_iter()
                .map(|(b, n)| [b * bucket_ms, n])
                .collect(),
        }
    }

    /// Total events counted.
    pub fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b[1]).sum()
    }
}

/// Contradictory evidence about a key's version order: two ops reporting the same version with
/// different values (system, increasing values), two list-append reads that cannot both be
/// prefixes of one order, or a list holding one element twice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionConflict {
    /// `version-conflict` or (list-append) `duplicate-element`.
    pub kind: &'static str,
    /// Key (absent for single-register histories).
    pub key: Option<String>,
    /// The contested version; for list-append, the 1-based list position where the two reads
    /// differ (or where the element repeats).
    pub version: i64,
    /// History index of the first op (for list-append: the earlier of the two reads).
    pub first_index: u64,
    /// History index of the contradicting op (equal to `first_index` for a duplicate element).
    pub later_index: u64,
    /// Value the first op associated with the version (for list-append: its whole list).
    pub first_value: Value,
    /// Value the later op associated with the version (for list-append: its whole list).
    pub later_value: Value,
    /// Human-readable account.
    pub witness: String,
}

/// Nearest-rank percentiles of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Percentiles<T> {
    /// Median.
    pub p50: T,
    /// 90th percentile.
    pub p90: T,
    /// 99th percentile.
    pub p99: T,
    /// Maximum.
    pub max: T,
}

/// How stale the reads were.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct StaleReadStats {
    /// Ok reads measured (versioned or absent, with a known invoke).
    pub reads_measured: u64,
    /// Of those, reads that missed at least one acknowledged newer version.
    pub stale_reads: u64,
    /// Versions behind over all measured reads.
    pub versions_behind: Percentiles<u64>,
    /// Milliseconds behind over all measured reads.
    pub ms_behind: Percentiles<f64>,
    /// Versions behind over stale reads only (all zero when there are none).
    pub stale_versions_behind: Percentiles<u64>,
    /// Milliseconds behind over stale reads only (all zero when there are none).
    pub stale_ms_behind: Percentiles<f64>,
}

/// What the checker found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionResult {
    /// Invalid if any guarantee was violated or versions conflict; unknown if nothing could be
    /// checked; valid otherwise.
    pub verdict: Verdict,
    /// Why the verdict is unknown, when it is.
    pub reason: Option<String>,
    /// Where the version order came from.
    pub version_source: VersionSource,
    /// Why that source was used.
    pub version_source_reason: String,
    /// How sessions were formed.
    pub mode: SessionMode,
    /// Distinct sessions with at least one ok read or write.
    pub sessions: u64,
    /// Distinct keys read or written.
    pub keys: u64,
    /// Ok reads seen.
    pub ok_reads: u64,
    /// Ok writes, cas and appends seen.
    pub ok_writes: u64,
    /// Ok reads with a value but no version (not judged).
    pub unversioned_reads: u64,
    /// Ok writes/cas without a version (not judged).
    pub unversioned_writes: u64,
    /// Ok ops with an impossible version (≤ 0 on a write or on a read that returned a value).
    pub malformed: u64,
    /// List-append reads that are not a prefix of their key's longest list (not judged).
    pub conflicting_reads: u64,
    /// Ok appends no read ever showed (position unknown; see the module doc).
    pub unseen_appends: u64,
    /// Info completions of reads/writes/cas (ignored as evidence).
    pub info_ignored: u64,
    /// Fail completions of reads/writes/cas (ignored: they did not happen).
    pub fail_ignored: u64,
    /// Completions with no open invoke, or invokes replaced by another invoke of the same process.
    pub unpaired: u64,
    /// Per guarantee results, in `Guarantee::ALL` order.
    pub guarantees: Vec<GuaranteeResult>,
    /// Stale-read quantification.
    pub stale: StaleReadStats,
    /// Number of version conflicts (exact).
    pub version_conflicts: u64,
    /// The first version conflicts, bounded by `max_conflicts`.
    pub conflicts: Vec<VersionConflict>,
    /// When every version conflict showed (the later op's completion), per time bucket.
    pub conflict_timeline: TimeHistogram,
}

impl SessionResult {
    /// Total violations over all guarantees.
    pub fn total_violations(&self) -> u64 {
        self.guarantees.iter().map(|g| g.violations).sum()
    }

    /// The result for one guarantee.
    pub fn guarantee(&self, g: Guarantee) -> &GuaranteeResult {
        &self.guarantees[g.slot()]
    }

    /// One-line summary.
    pub fn summary(&self) -> String {
        let checks: u64 = self.guarantees.iter().map(|g| g.checks).sum();
        let mut s = match self.verdict {
            Verdict::Invalid => {
                let parts: Vec<String> = self
                    .guarantees
                    .iter()
                    .filter(|g| g.violations > 0)
                    .map(|g| format!("{} {}", g.guarantee.name(), g.violations))
                    .collect();
                let mut s = format!("violations: {}", parts.join(", "));
                if self.version_conflicts > 0 {
                    if !parts.is_empty() {
                        s.push_str("; ");
                    } else {
                        s.clear();
                    }
                    let _ = write!(s, "{} version conflicts", self.version_conflicts);
                }
                s
            }
            Verdict::Unknown => format!(
                "unknown: {}",
                self.reason.as_deref().unwrap_or("nothing could be checked")
            ),
            Verdict::Valid => format!(
                "4 session guarantees held over {checks} checks in {} sessions",
                self.sessions
            ),
        };
        let _ = write!(
            s,
            "; {} of {} reads stale (p99 {} versions / {:.1} ms behind)",
            self.stale.stale_reads,
            self.stale.reads_measured,
            self.stale.versions_behind.p99,
            self.stale.ms_behind.p99
        );
        if self.unversioned_reads + self.unversioned_writes + self.malformed > 0 {
            let _ = write!(
                s,
                "; {} unversioned, {} malformed ops not judged",
                self.unversioned_reads + self.unversioned_writes,
                self.malformed
            );
        }
        s
    }

    /// A small fixed-width per-guarantee table plus the stale-read line.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<20} {:>10} {:>10}  worst key\n",
            "guarantee", "checks", "violations"
        );
        for g in &self.guarantees {
            let worst = g
                .top_keys
                .first()
                .map(|k| format!("{} ({})", key_label(k.key.as_deref()), k.violations))
                .unwrap_or_else(|| "-".to_string());
            let _ = writeln!(
                s,
                "{:<20} {:>10} {:>10}  {worst}",
                g.guarantee.name(),
                g.checks,
                g.violations
            );
        }
        let st = &self.stale;
        let _ = writeln!(
            s,
            "stale reads: {} of {}; versions behind p50/p90/p99/max {}/{}/{}/{}; ms behind {:.1}/{:.1}/{:.1}/{:.1}",
            st.stale_reads,
            st.reads_measured,
            st.versions_behind.p50,
            st.versions_behind.p90,
            st.versions_behind.p99,
            st.versions_behind.max,
            st.ms_behind.p50,
            st.ms_behind.p90,
            st.ms_behind.p99,
            st.ms_behind.max
        );
        if self.version_conflicts > 0 {
            let _ = writeln!(s, "version conflicts: {}", self.version_conflicts);
        }
        let _ = writeln!(
            s,
            "versions: {} ({})",
            self.version_source.name(),
            self.version_source_reason
        );
        s
    }
}

/// The session-guarantee checker as a `Checker`.
#[derive(Debug, Clone, Default)]
pub struct SessionChecker {
    /// Options.
    pub config: SessionConfig,
}

impl SessionChecker {
    /// A checker with the given options.
    pub fn new(config: SessionConfig) -> SessionChecker {
        SessionChecker { config }
    }

    /// Run the analysis and return the typed result.
    pub fn analyse(&self, history: &History) -> SessionResult {
        check_sessions(history, &self.config)
    }
}

impl Checker for SessionChecker {
    fn name(&self) -> &str {
        "session"
    }

    fn check(&self, history: &History) -> CheckResult {
        let r = self.analyse(history);
        CheckResult {
            checker: self.name().to_string(),
            verdict: r.verdict,
            summary: r.summary(),
            details: serde_json::to_value(&r).unwrap_or_else(
                |e| serde_json::json!({ "error": format!("cannot serialize session result: {e}") }),
            ),
        }
    }
}

fn key_label(k: Option<&str>) -> &str {
    k.unwrap_or("(register)")
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    Cas,
    Append,
}

fn kind_of(op: &Op) -> Option<Kind> {
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
enum Pos {
    /// A known version (0 = absent key / empty list, reads only).
    At(i64),
    /// An ok append no read ever showed: after every version any read returned, order among
    /// such appends unknown. The number is a synthetic rank (> every read's version) used only
    /// for stale-read counting.
    Unseen(i64),
}

impl Pos {
    /// The version used for stale-read counting and the result's `*_version` fields.
    fn rank(self) -> i64 {
        match self {
            Pos::At(v) | Pos::Unseen(v) => v,
        }
    }

    /// Order of two positions; `None` when they cannot be compared (two unseen appends).
    fn cmp(self, other: Pos) -> Option<std::cmp::Ordering> {
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
enum Ver {
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

fn system_version(kind: Kind, op: &Op) -> Ver {
    match (kind, op.version) {
        (Kind::Read, None) if op.value.is_null() => Ver::Known(Pos::At(0)),
        (Kind::Read, Some(0)) if op.value.is_null() => Ver::Known(Pos::At(0)),
        (_, None) => Ver::Unversioned,
        (_, Some(v)) if v >= 1 => Ver::Known(Pos::At(v)),
        _ => Ver::Malformed,
    }
}

fn increasing_version(kind: Kind, op: &Op, invoke: Option<&Op>) -> Ver {
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
fn value_of<'a>(kind: Kind, op: &'a Op, invoke: Option<&'a Op>) -> Option<&'a Value> {
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

fn secs(t_ns: u64) -> String {
    format!("{:.3} s", t_ns as f64 / 1e9)
}

fn show_value(v: Option<&Value>) -> String {
    match v {
        None => "?".to_string(),
        Some(Value::Null) => "nothing".to_string(),
        Some(v) => v.to_string(),
    }
}

/// How a position reads in a witness: "version 12" / "version none" for versioned sources,
/// "3 elements" / "position 5" / "never read" for list-append.
fn show_pos(source: VersionSource, is_read: bool, p: Pos) -> String {
    match (source, p) {
        (VersionSource::ListAppend, Pos::Unseen(_)) => "position unknown: never read".to_string(),
        (VersionSource::ListAppend, Pos::At(v)) if is_read => format!("{v} elements"),
        (VersionSource::ListAppend, Pos::At(v)) => format!("position {v}"),
        (_, Pos::At(0)) => "version none".to_string(),
        (_, p) => format!("version {}", p.rank()),
    }
}

/// Fenwick tree over one key's sorted distinct acknowledged versions: count of inserted ranks and
/// minimum ack time over rank suffixes.
struct KeyAcks {
    versions: Vec<i64>,
    inserted: Vec<bool>,
    count_tree: Vec<u32>,
    min_tree: Vec<u64>,
    total: u64,
}

impl KeyAcks {
    fn new(mut versions: Vec<i64>) -> KeyAcks {
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

    fn insert(&mut self, version: i64, ack_ns: u64) {
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
    fn newer_than(&self, version: i64) -> (u64, Option<u64>) {
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
struct SessState([Option<(Pos, usize)>; 2]);

/// Which of a session's bounds a rule compares against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// The session's own highest ok write.
    OwnWrite = 0,
    /// The highest version the session has read.
    OwnRead = 1,
}

/// One session guarantee as data: an op of kind `later_is_read` (read, or a write of any kind)
/// must reach at least the session's `bound` — strictly beyond it when `must_be_newer`.
struct Rule {
    guarantee: Guarantee,
    later_is_read: bool,
    bound: Bound,
    must_be_newer: bool,
}

/// The four guarantees (Terry et al.) as comparisons against the session's bounds.
const RULES: [Rule; 4] = [
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

struct GuaranteeAcc {
    checks: u64,
    violations: u64,
    per_key: FxHashMap<u32, u64>,
    witnesses: Vec<Violation>,
    /// Completion time of every violating op.
    times_ns: Vec<u64>,
}

const NO_KEY: u32 = u32::MAX;
const NONE: usize = usize::MAX;

fn percentiles<T: Copy + Default + PartialOrd>(sorted: &[T]) -> Percentiles<T> {
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

/// The auto rule (see the module doc): list-append if the history has `append` ops or
/// list-valued ok reads, else system versions. Returns the source and why.
fn choose_source(history: &History, config: &SessionConfig) -> (VersionSource, String) {
    if let Some(s) = config.source {
        return (s, "chosen by configuration".to_string());
    }
    let mut versioned = false;
    for op in &history.ops {
        let Some(kind) = kind_of(op) else { continue };
        if kind == Kind::Append {
            return (
                VersionSource::ListAppend,
                "the history has append ops".to_string(),
            );
        }
        if op.op_type == OpType::Ok {
            if kind == Kind::Read && op.value.is_array() {
                return (
                    VersionSource::ListAppend,
                    "ok reads return lists".to_string(),
                );
            }
            versioned |= op.version.is_some();
        }
    }
    if versioned {
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

/// Derived versions and the conflicts found while deriving them.
struct Derived {
    /// Per history position; meaningful at ok completions only.
    vers: Vec<Ver>,
    /// Conflicts found by the list-append prefix check (system conflicts are found later).
    conflicts: Vec<(usize, usize, i64, &'static str)>,
    /// Ok appends whose element no read showed.
    unseen_appends: u64,
}

/// The elements of a read value when it is a list of integers (`null` = empty).
fn int_list(v: &Value) -> Option<&[Value]> {
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
fn derive_list_append(
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
                conflicts.push((li, li, p as i64 + 1, "duplicate-element"));
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
                conflicts.push((i.min(li), i.max(li), p as i64 + 1, "version-conflict"));
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
fn describe(kind: Kind, op: &Op, invoke: Option<&Op>, key: Option<&str>) -> String {
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

/// Seeded generators of linearizable histories, optionally with injected stale reads: versioned
/// register histories (etcd-like: one global revision counter, each successful write/cas creates
/// the next revision and that becomes the key's version) and list-append histories (no versions). Client threads pick a random key per op, so a
/// session spans keys. Owns generation only.
pub mod histgen {
    use crate::history::{History, Op, OpType, Process};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use serde_json::{Value, json};

    /// Shape of a generated history.
    #[derive(Debug, Clone)]
    pub struct VersionedGenConfig {
        /// Number of keys (ops carry keys `k0`, `k1`, …).
        pub keys: usize,
        /// Concurrent client threads.
        pub threads: usize,
        /// Total operations (each is an invoke plus one completion).
        pub ops: usize,
        /// Probability that an op crashes (completes `info`; its effect is random).
        pub info_probability: f64,
        /// Probability that an ok read returns a random older version of its key instead of the
        /// current one (0 keeps the history linearizable).
        pub stale_read_probability: f64,
        /// Written values are drawn from `0..value_range`.
        pub value_range: i64,
        /// Upper bound of each random delay, ns.
        pub max_delay_ns: u64,
        /// RNG seed.
        pub seed: u64,
    }

    impl Default for VersionedGenConfig {
        fn default() -> Self {
            VersionedGenConfig {
                keys: 3,
                threads: 5,
                ops: 200,
                info_probability: 0.05,
                stale_read_probability: 0.0,
                value_range: 5,
                max_delay_ns: 1_000_000,
                seed: 0,
            }
        }
    }

    struct G {
        key: usize,
        process: u64,
        f: &'static str,
        arg: (i64, i64),
        invoke_ns: u64,
        lin_ns: u64,
        ret_ns: u64,
        crashed: bool,
        takes_effect: bool,
    }

    /// Generate a history (see the module doc).
    pub fn generate_versioned_history(cfg: &VersionedGenConfig) -> History {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let keys = cfg.keys.max(1);
        let threads = cfg.threads.max(1);
        let delay = cfg.max_delay_ns.max(2);
        let range = cfg.value_range.max(1);
        let mut cursor: Vec<(u64, u64)> = (0..threads)
            .map(|t| (t as u64, rng.random_range(0..delay)))
            .collect();
        let mut gs: Vec<G> = Vec::with_capacity(cfg.ops);
        for _ in 0..cfg.ops {
            let t = rng.random_range(0..threads);
            let (process, at) = cursor[t];
            let lin_ns = at + rng.random_range(1..delay);
            let ret_ns = lin_ns + rng.random_range(1..delay);
            let crashed = rng.random_bool(cfg.info_probability.clamp(0.0, 1.0));
            let (f, arg) = match rng.random_range(0..10) {
                0..5 => ("read", (0, 0)),
                5..8 => ("write", (rng.random_range(0..range), 0)),
                _ => (
                    "cas",
                    (rng.random_range(0..range), rng.random_range(0..range)),
                ),
            };
            gs.push(G {
                key: rng.random_range(0..keys),
                process,
                f,
                arg,
                invoke_ns: at,
                lin_ns,
                ret_ns,
                crashed,
                takes_effect: !crashed || rng.random_bool(0.5),
            });
            let next = if crashed {
                process + threads as u64
            } else {
                process
            };
            cursor[t] = (next, ret_ns + rng.random_range(1..delay));
        }
        let mut order: Vec<usize> = (0..gs.len()).collect();
        order.sort_unstable_by_key(|&i| (gs[i].lin_ns, i));
        // Per key: every (value, version) state it has had, oldest first; (null, 0) = absent.
        let mut states: Vec<Vec<(Value, i64)>> = vec![vec![(Value::Null, 0)]; keys];
        let mut revision = 0i64;
        let mut out: Vec<(OpType, Value, Option<i64>, Option<&'static str>)> =
            vec![(OpType::Ok, Value::Null, None, None); gs.len()];
        let stale_p = cfg.stale_read_probability.clamp(0.0, 1.0);
        for &i in &order {
            let g = &gs[i];
            let st = &mut states[g.key];
            let (cur_val, cur_ver) = st[st.len() - 1].clone();
            let o = match g.f {
                "read" => {
                    let (val, ver) = if stale_p > 0.0 && st.len() > 1 && rng.random_bool(stale_p) {
                        st[rng.random_range(0..st.len() - 1)].clone()
                    } else {
                        (cur_val, cur_ver)
                    };
                    (OpType::Ok, val, (ver > 0).then_some(ver), None)
                }
                "write" => {
                    let mut ver = None;
                    if g.takes_effect {
                        revision += 1;
                        st.push((json!(g.arg.0), revision));
                        ver = Some(revision);
                    }
                    (OpType::Ok, json!(g.arg.0), ver, None)
                }
                _ => {
                    if cur_val == json!(g.arg.0) {
                        let mut ver = None;
                        if g.takes_effect {
                            revision += 1;
                            st.push((json!(g.arg.1), revision));
                            ver = Some(revision);
                        }
                        (OpType::Ok, json!([g.arg.0, g.arg.1]), ver, None)
                    } else {
                        (
                            OpType::Fail,
                            json!([g.arg.0, g.arg.1]),
                            None,
                            Some("cas-mismatch"),
                        )
                    }
                }
            };
            out[i] = if g.crashed {
                let v = if g.f == "read" { Value::Null } else { o.1 };
                (OpType::Info, v, None, Some("timeout"))
            } else {
                o
            };
        }
        let mut events: Vec<(u64, usize, bool)> = Vec::with_capacity(gs.len() * 2);
        for (i, g) in gs.iter().enumerate() {
            events.push((g.invoke_ns, i, false));
            events.push((g.ret_ns, i, true));
        }
        events.sort_unstable_by_key(|&(t, i, done)| (t, done, i));
        let mut ops = Vec::with_capacity(events.len());
        for (t, i, done) in events {
            let g = &gs[i];
            let mut op = if done {
                let (ty, v, ver, err) = &out[i];
                let mut op = Op::new(*ty, Process::Client(g.process), g.f, v.clone());
                op.version = *ver;
                op.error = err.map(str::to_string);
                op
            } else {
                let v = match g.f {
                    "read" => Value::Null,
                    "write" => json!(g.arg.0),
                    _ => json!([g.arg.0, g.arg.1]),
                };
                Op::new(OpType::Invoke, Process::Client(g.process), g.f, v)
            };
            op.time_ns = t;
            op.key = Some(format!("k{}", g.key));
            op.node = Some(format!("n{}", g.process % threads as u64 % 5 + 1));
            ops.push(op);
        }
        History::from_ops(ops)
    }

    /// Shape of a generated list-append history.
    #[derive(Debug, Clone)]
    pub struct ListAppendGenConfig {
        /// Number of keys (ops carry keys `k0`, `k1`, …).
        pub keys: usize,
        /// Keys in use at any moment (0 = all): op `i` picks uniformly among
        /// `active_keys` keys starting at `i · keys / ops`, so the key space is walked over time
        /// and lists stay short while sessions still revisit keys.
        pub active_keys: usize,
        /// Concurrent client threads.
        pub threads: usize,
        /// Total operations (each is an invoke plus one completion).
        pub ops: usize,
        /// Probability that an op is an append (else a read).
        pub append_probability: f64,
        /// Probability that an op crashes (completes `info`; an append's effect is random).
        pub info_probability: f64,
        /// Probability that an ok read returns a random shorter prefix of its key's list instead
        /// of the whole list (0 keeps the history linearizable).
        pub stale_read_probability: f64,
        /// Upper bound of each random delay, ns.
        pub max_delay_ns: u64,
        /// RNG seed.
        pub seed: u64,
    }

    impl Default for ListAppendGenConfig {
        fn default() -> Self {
            ListAppendGenConfig {
                keys: 3,
                active_keys: 0,
                threads: 5,
                ops: 200,
                append_probability: 0.5,
                info_probability: 0.05,
                stale_read_probability: 0.0,
                max_delay_ns: 1_000_000,
                seed: 0,
            }
        }
    }

    /// (key, process, append element or 0 for a read, invoke ns, linearization ns, return ns,
    /// crashed, takes effect)
    type LaOp = (usize, u64, i64, u64, u64, u64, bool, bool);

    /// Generate a list-append history: appends of per-key unique integers (1, 2, … in invoke
    /// order), reads returning the key's whole list at their linearization point (or, with
    /// `stale_read_probability`, a shorter prefix). No op carries a system version.
    pub fn generate_list_append_history(cfg: &ListAppendGenConfig) -> History {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let keys = cfg.keys.max(1);
        let threads = cfg.threads.max(1);
        let delay = cfg.max_delay_ns.max(2);
        let mut next_elem = vec![1i64; keys];
        let mut cursor: Vec<(u64, u64)> = (0..threads)
            .map(|t| (t as u64, rng.random_range(0..delay)))
            .collect();
        let mut gs: Vec<LaOp> = Vec::with_capacity(cfg.ops);
        let ops_total = cfg.ops.max(1);
        for op_i in 0..cfg.ops {
            let t = rng.random_range(0..threads);
            let (process, at) = cursor[t];
            let lin_ns = at + rng.random_range(1..delay);
            let ret_ns = lin_ns + rng.random_range(1..delay);
            let crashed = rng.random_bool(cfg.info_probability.clamp(0.0, 1.0));
            let key = if cfg.active_keys == 0 || cfg.active_keys >= keys {
                rng.random_range(0..keys)
            } else {
                let base = (op_i as u128 * keys as u128 / ops_total as u128) as usize;
                (base + rng.random_range(0..cfg.active_keys)).min(keys - 1)
            };
            let elem = if rng.random_bool(cfg.append_probability.clamp(0.0, 1.0)) {
                next_elem[key] += 1;
                next_elem[key] - 1
            } else {
                0
            };
            let effect = !crashed || rng.random_bool(0.5);
            gs.push((key, process, elem, at, lin_ns, ret_ns, crashed, effect));
            let next = if crashed {
                process + threads as u64
            } else {
                process
            };
            cursor[t] = (next, ret_ns + rng.random_range(1..delay));
        }
        let mut order: Vec<usize> = (0..gs.len()).collect();
        order.sort_unstable_by_key(|&i| (gs[i].4, i));
        let mut lists: Vec<Vec<i64>> = vec![Vec::new(); keys];
        let mut reads: Vec<Value> = vec![Value::Null; gs.len()];
        let stale_p = cfg.stale_read_probability.clamp(0.0, 1.0);
        for &i in &order {
            let (key, _, elem, _, _, _, _, effect) = gs[i];
            let l = &mut lists[key];
            if elem != 0 {
                if effect {
                    l.push(elem);
                }
            } else {
                let len = if stale_p > 0.0 && !l.is_empty() && rng.random_bool(stale_p) {
                    rng.random_range(0..l.len())
                } else {
                    l.len()
                };
                reads[i] = json!(l[..len]);
            }
        }
        let mut events: Vec<(u64, usize, bool)> = Vec::with_capacity(gs.len() * 2);
        for (i, g) in gs.iter().enumerate() {
            events.push((g.3, i, false));
            events.push((g.5, i, true));
        }
        events.sort_unstable_by_key(|&(t, i, done)| (t, done, i));
        let mut ops = Vec::with_capacity(events.len());
        for (t, i, done) in events {
            let (key, process, elem, _, _, _, crashed, _) = gs[i];
            let f = if elem != 0 { "append" } else { "read" };
            let mut op = match (done, crashed, elem != 0) {
                (false, _, true) => {
                    Op::new(OpType::Invoke, Process::Client(process), f, json!(elem))
                }
                (false, _, false) => {
                    Op::new(OpType::Invoke, Process::Client(process), f, Value::Null)
                }
                (true, true, _) => {
                    let v = if elem != 0 { json!(elem) } else { Value::Null };
                    let mut op = Op::new(OpType::Info, Process::Client(process), f, v);
                    op.error = Some("timeout".to_string());
                    op
                }
                (true, false, true) => {
                    Op::new(OpType::Ok, Process::Client(process), f, json!(elem))
                }
                (true, false, false) => {
                    Op::new(OpType::Ok, Process::Client(process), f, reads[i].clone())
                }
            };
            op.time_ns = t;
            op.key = Some(format!("k{key}"));
            op.node = Some(format!("n{}", process % threads as u64 % 5 + 1));
            ops.push(op);
        }
        History::from_ops(ops)
    }
}

#[cfg(test)]
mod tests {
    use super::histgen::{
        ListAppendGenConfig, VersionedGenConfig, generate_list_append_history,
        generate_versioned_history,
    };
    use super::*;
    use serde_json::json;

    /// Builds histories event by event; times in ms.
    struct B(Vec<Op>);

    impl B {
        fn new() -> B {
            B(Vec::new())
        }
        #[allow(clippy::too_many_arguments)]
        fn ev(
            &mut self,
            ty: OpType,
            p: u64,
            f: &str,
            key: &str,
            value: Value,
            version: Option<i64>,
            t_ms: u64,
        ) -> &mut B {
            let mut op = Op::new(ty, Process::Client(p), f, value);
            op.key = Some(key.to_string());
            op.version = version;
            op.time_ns = t_ms * 1_000_000;
            if ty == OpType::Fail {
                op.error = Some("cas-mismatch".to_string());
            }
            self.0.push(op);
            self
        }
        /// A complete write: invoke at t, ok at t+1.
        fn write(&mut self, p: u64, key: &str, v: i64, ver: i64, t_ms: u64) -> &mut B {
            self.ev(OpType::Invoke, p, "write", key, json!(v), None, t_ms)
                .ev(OpType::Ok, p, "write", key, json!(v), Some(ver), t_ms + 1)
        }
        /// A complete read: invoke at t, ok at t+1; `None` value = absent.
        fn read(&mut self, p: u64, key: &str, v: Option<i64>, ver: i64, t_ms: u64) -> &mut B {
            let (val, version) = match v {
                Some(x) => (json!(x), Some(ver)),
                None => (Value::Null, None),
            };
            self.ev(OpType::Invoke, p, "read", key, Value::Null, None, t_ms)
                .ev(OpType::Ok, p, "read", key, val, version, t_ms + 1)
        }
        fn h(&self) -> History {
            History::from_ops(self.0.clone())
        }
    }

    fn check(h: &History) -> SessionResult {
        check_sessions(h, &SessionConfig::default())
    }

    fn with_source(h: &History, source: VersionSource) -> SessionResult {
        check_sessions(
            h,
            &SessionConfig {
                source: Some(source),
                ..SessionConfig::default()
            },
        )
    }

    fn only(r: &SessionResult, g: Guarantee, n: u64) {
        for x in &r.guarantees {
            let want = if x.guarantee == g { n } else { 0 };
            assert_eq!(x.violations, want, "{:?}: {}", x.guarantee, r.table());
        }
    }

    #[test]
    fn read_your_writes_violation_and_clean() {
        let mut b = B::new();
        b.write(7, "k3", 12, 40, 4210 - 1)
            .read(7, "k3", Some(9), 35, 4211);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Invalid);
        only(&r, Guarantee::ReadYourWrites, 1);
        let w = &r.guarantee(Guarantee::ReadYourWrites).witnesses[0];
        assert_eq!(
            w.witness,
            "process 7 wrote k3 = 12 (version 40, ok at 4.210 s) then read k3 and got 9 (version 35) at 4.212 s"
        );
        assert_eq!((w.earlier_version, w.later_version), (40, 35));
        assert_eq!((w.earlier_index, w.later_index), (1, 3));
        assert_eq!(
            r.guarantee(Guarantee::ReadYourWrites).top_keys,
            vec![KeyCount {
                key: Some("k3".into()),
                violations: 1
            }]
        );

        let mut b = B::new();
        b.write(7, "k3", 12, 40, 0)
            .read(7, "k3", Some(12), 40, 2)
            .read(7, "k3", Some(5), 41, 4);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
        assert_eq!(r.guarantee(Guarantee::ReadYourWrites).checks, 2);
    }

    #[test]
    fn read_your_writes_absent_read_after_own_write_is_violation() {
        let mut b = B::new();
        b.write(1, "a", 1, 5, 0).read(1, "a", None, 0, 2);
        let r = check(&b.h());
        only(&r, Guarantee::ReadYourWrites, 1);
        assert!(
            r.guarantee(Guarantee::ReadYourWrites).witnesses[0]
                .witness
                .contains("got nothing (version none)")
        );
    }

    #[test]
    fn monotonic_reads_violation_and_clean() {
        let mut b = B::new();
        b.read(1, "x", Some(3), 10, 0)
            .read(1, "x", Some(2), 8, 2)
            .read(2, "x", Some(2), 8, 4); // another session: no bound
        let r = check(&b.h());
        only(&r, Guarantee::MonotonicReads, 1);
        let w = &r.guarantee(Guarantee::MonotonicReads).witnesses[0];
        assert_eq!(w.session, 1);
        assert_eq!(
            w.witness,
            "process 1 read x and got 3 (version 10) at 0.001 s then read x and got 2 (version 8) at 0.003 s"
        );

        let mut b = B::new();
        b.read(1, "x", None, 0, 0)
            .read(1, "x", Some(2), 8, 2)
            .read(1, "x", Some(2), 8, 4)
            .read(1, "y", None, 0, 6); // other key: independent
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
        assert_eq!(r.guarantee(Guarantee::MonotonicReads).checks, 2);
    }

    #[test]
    fn monotonic_writes_violation_and_clean() {
        let mut b = B::new();
        b.write(4, "k", 1, 20, 0).write(4, "k", 2, 19, 2);
        let r = check(&b.h());
        only(&r, Guarantee::MonotonicWrites, 1);
        assert!(
            r.guarantee(Guarantee::MonotonicWrites).witnesses[0]
                .witness
                .starts_with("process 4 wrote k = 1 (version 20, ok at 0.001 s) then wrote k = 2 and got version 19")
        );

        let mut b = B::new();
        b.write(4, "k", 1, 20, 0).write(4, "k", 2, 25, 2);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Valid);
        assert_eq!(r.guarantee(Guarantee::MonotonicWrites).checks, 1);
    }

    #[test]
    fn writes_follow_reads_violation_and_clean() {
        let mut b = B::new();
        // Session 1 reads version 30 (written by 2), then its cas creates version 30 too… no:
        // creates 29, older than what it read.
        b.write(2, "k", 5, 30, 0).read(1, "k", Some(5), 30, 2).ev(
            OpType::Invoke,
            1,
            "cas",
            "k",
            json!([5, 6]),
            None,
            4,
        );
        b.ev(OpType::Ok, 1, "cas", "k", json!([5, 6]), Some(29), 5);
        let r = check(&b.h());
        only(&r, Guarantee::WritesFollowReads, 1);
        let w = &r.guarantee(Guarantee::WritesFollowReads).witnesses[0];
        assert!(
            w.witness
                .contains("then cas k from 5 to 6 and got version 29")
        );

        let mut b = B::new();
        b.write(2, "k", 5, 30, 0)
            .read(1, "k", Some(5), 30, 2)
            .write(1, "k", 6, 31, 4);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Valid);
        assert_eq!(r.guarantee(Guarantee::WritesFollowReads).checks, 1);
    }

    #[test]
    fn info_writes_need_not_be_seen_and_fails_are_ignored() {
        let mut b = B::new();
        // Process 0's write crashes (info); it continues as process 5 and reads an older version.
        b.write(0, "k", 1, 10, 0)
            .ev(OpType::Invoke, 0, "write", "k", json!(2), None, 2)
            .ev(OpType::Info, 0, "write", "k", json!(2), None, 3)
            .read(5, "k", Some(1), 10, 4)
            // A failed cas by 5 reports a (bogus) version: ignored.
            .ev(OpType::Invoke, 5, "cas", "k", json!([7, 8]), None, 6)
            .ev(OpType::Fail, 5, "cas", "k", json!([7, 8]), Some(1), 7)
            .read(5, "k", Some(1), 10, 8);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
        assert_eq!((r.info_ignored, r.fail_ignored), (1, 1));
        assert_eq!(r.sessions, 2);

        // In thread mode, process 5 is thread 0 again: its own ok write (version 10) still binds,
        // while reads that go back in version break monotonic reads across the info.
        let mut b = B::new();
        b.write(0, "k", 1, 10, 0)
            .ev(OpType::Invoke, 0, "read", "k", Value::Null, None, 2)
            .ev(OpType::Info, 0, "read", "k", Value::Null, None, 3)
            .read(5, "k", Some(0), 9, 4);
        let h = b.h();
        assert_eq!(
            check(&h).verdict,
            Verdict::Unknown,
            "process mode: nothing comparable"
        );
        let r = check_sessions(
            &h,
            &SessionConfig {
                mode: SessionMode::Thread { concurrency: 5 },
                ..SessionConfig::default()
            },
        );
        only(&r, Guarantee::ReadYourWrites, 1);
        assert!(
            r.guarantee(Guarantee::ReadYourWrites).witnesses[0]
                .witness
                .starts_with("thread 0 (process 5) wrote k = 1")
        );
    }

    #[test]
    fn unversioned_history_is_unknown_never_valid() {
        let mut b = B::new();
        b.ev(OpType::Invoke, 1, "write", "k", json!(1), None, 0)
            .ev(OpType::Ok, 1, "write", "k", json!(1), None, 1)
            .ev(OpType::Invoke, 1, "read", "k", Value::Null, None, 2)
            .ev(OpType::Ok, 1, "read", "k", json!(1), None, 3)
            .read(1, "k", None, 0, 4)
            .read(1, "k", None, 0, 6);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Unknown);
        assert_eq!((r.unversioned_reads, r.unversioned_writes), (1, 1));
        assert!(
            r.reason
                .as_deref()
                .unwrap()
                .contains("no ok op carries a version")
        );
        assert_eq!(check(&History::default()).verdict, Verdict::Unknown);
    }

    #[test]
    fn malformed_input_does_not_panic() {
        let mut b = B::new();
        b.ev(OpType::Ok, 3, "read", "k", json!(1), Some(4), 0) // completion without invoke
            .ev(OpType::Invoke, 3, "cas", "k", json!("junk"), None, 1)
            .ev(OpType::Ok, 3, "cas", "k", json!({"a": 1}), Some(-2), 2)
            .ev(OpType::Invoke, 3, "write", "k", json!(1), None, 3)
            .ev(OpType::Invoke, 3, "write", "k", json!(1), None, 3) // double invoke
            .ev(OpType::Ok, 3, "write", "k", json!(1), Some(i64::MAX), 4)
            .ev(OpType::Invoke, 3, "read", "k", Value::Null, None, 5)
            .ev(OpType::Ok, 3, "read", "k", json!([1, 2]), Some(i64::MIN), 6)
            .ev(OpType::Ok, 9, "frobnicate", "k", json!(1), Some(3), 7);
        let mut h = b.h();
        let mut n = Op::new(
            OpType::Info,
            Process::Nemesis,
            "start-partition",
            Value::Null,
        );
        n.version = Some(5);
        h.ops.push(n);
        let r = with_source(&h, VersionSource::System);
        assert_eq!(r.malformed, 2);
        assert_eq!(r.unpaired, 2);
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table()); // read 4 → write MAX: RYW n/a, WFR ok
        assert_eq!(r.guarantee(Guarantee::WritesFollowReads).checks, 1);
        // Auto: the list-valued read selects list-append; the integer read and the junk cas are
        // malformed there, the write cannot be placed, and nothing is comparable.
        let r = check(&h);
        assert_eq!(r.version_source, VersionSource::ListAppend);
        assert_eq!(r.verdict, Verdict::Unknown, "{}", r.table());
        assert_eq!((r.malformed, r.unversioned_writes), (1, 2));
        // Increasing values: read 1 then write 1 is a (correct) writes-follow-reads violation.
        let r = with_source(&h, VersionSource::IncreasingValues);
        only(&r, Guarantee::WritesFollowReads, 1);
        assert_eq!(r.malformed, 2); // the junk cas and the list read
        let c = SessionChecker::default().check(&h);
        assert_eq!(c.checker, "session");
        assert!(c.details["guarantees"].is_array());
        assert_eq!(c.details["version_source"], "list-append");
    }

    #[test]
    fn stale_read_numbers_exact() {
        let mut b = B::new();
        // Acked versions of k: 10 (ack 1 ms), 20 (ack 11 ms), 30 (ack 21 ms); 40 acked after the
        // read below was invoked, so it does not count.
        b.write(1, "k", 1, 10, 0)
            .write(1, "k", 2, 20, 10)
            .write(2, "k", 3, 30, 20)
            // Process 3 reads version 10 at invoke 25 ms: 20 and 30 are newer → 2 behind,
            // 25 - 11 = 14 ms behind.
            .ev(OpType::Invoke, 3, "read", "k", Value::Null, None, 25)
            .write(2, "k", 4, 40, 26)
            .ev(OpType::Ok, 3, "read", "k", json!(1), Some(10), 30)
            // Process 4 reads absent at 40: 10,20,30,40 newer → 4 behind, 40 - 1 = 39 ms.
            .read(4, "k", None, 0, 40)
            // Process 5 reads version 40 at 50: up to date.
            .read(5, "k", Some(4), 40, 50)
            // An unacked (info) write's version never counts as acknowledged.
            .ev(OpType::Invoke, 6, "write", "k", json!(9), None, 60)
            .ev(OpType::Info, 6, "write", "k", json!(9), Some(50), 61)
            .read(5, "k", Some(4), 40, 70);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
        let s = &r.stale;
        assert_eq!((s.reads_measured, s.stale_reads), (4, 2));
        assert_eq!(
            s.versions_behind,
            Percentiles {
                p50: 0,
                p90: 4,
                p99: 4,
                max: 4
            }
        );
        assert_eq!(s.stale_versions_behind.p50, 2);
        assert!((s.stale_ms_behind.p50 - 14.0).abs() < 1e-9, "{:?}", s);
        assert!((s.ms_behind.max - 39.0).abs() < 1e-9, "{:?}", s);
    }

    #[test]
    fn version_conflicts_are_invalid() {
        let mut b = B::new();
        b.write(1, "k", 1, 10, 0)
            .write(2, "k", 2, 10, 2) // same version, different value
            .read(3, "k", Some(7), 10, 4) // read contradicts too
            .read(3, "k", Some(1), 10, 6) // agrees with the first write
            .write(4, "j", 1, 10, 8); // other key: no conflict
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Invalid);
        assert_eq!(r.total_violations(), 0);
        assert_eq!(r.version_conflicts, 2);
        let c = &r.conflicts[0];
        assert_eq!(c.kind, "version-conflict");
        assert_eq!((c.first_index, c.later_index, c.version), (1, 3, 10));
        assert_eq!((&c.first_value, &c.later_value), (&json!(1), &json!(2)));
        assert!(
            c.witness.contains("both report version 10 of k"),
            "{}",
            c.witness
        );
        assert!(
            r.summary().starts_with("2 version conflicts"),
            "{}",
            r.summary()
        );
        assert!(r.table().contains("version conflicts: 2"));

        // A cas's version is associated with its new value.
        let mut b = B::new();
        b.ev(OpType::Invoke, 1, "cas", "k", json!([1, 2]), None, 0)
            .ev(OpType::Ok, 1, "cas", "k", json!([1, 2]), Some(5), 1)
            .read(2, "k", Some(2), 5, 2);
        assert_eq!(check(&b.h()).version_conflicts, 0);
    }

    #[test]
    fn time_histograms_pick_a_round_bucket_and_list_non_empty_ones() {
        let ms = 1_000_000u64;
        let h = TimeHistogram::of(&[0, 9 * ms, 10 * ms, 35 * ms, 35 * ms], 5_000 * ms);
        assert_eq!(h.bucket_ms, 10);
        assert_eq!(h.buckets, vec![[0, 2], [10, 1], [30, 2]]);
        assert_eq!(h.total(), 5);
        for (span_s, want) in [
            (10u64, 10u64),
            (11, 20),
            (60, 100),
            (1_000, 1_000),
            (3_600, 5_000),
        ] {
            let h = TimeHistogram::of(&[span_s * 1_000 * ms], span_s * 1_000 * ms);
            assert_eq!(h.bucket_ms, want, "{span_s} s");
            assert_eq!(h.total(), 1);
        }
        assert!(TimeHistogram::of(&[], 0).buckets.is_empty());
    }

    #[test]
    fn witnesses_and_key_lists_are_bounded_but_totals_exact() {
        let mut b = B::new();
        for i in 0..50u64 {
            let key = format!("k{}", i % 5);
            b.read(1, &key, Some(1), 100 - i as i64, i * 10);
        }
        let r = check_sessions(
            &b.h(),
            &SessionConfig {
                max_witnesses_per_guarantee: 3,
                top_keys: 2,
                ..SessionConfig::default()
            },
        );
        let g = r.guarantee(Guarantee::MonotonicReads);
        assert_eq!(g.violations, 45);
        assert_eq!(g.witnesses.len(), 3);
        // The timeline counts every violation, not only the witnesses kept.
        assert_eq!(g.timeline.total(), 45);
        assert_eq!(g.top_keys.len(), 2);
        assert_eq!(g.top_keys[0].violations, 9);
        assert_eq!(g.top_keys[0].key.as_deref(), Some("k0"));
    }

    #[test]
    fn deterministic_results() {
        let cfg = VersionedGenConfig {
            ops: 3000,
            stale_read_probability: 0.1,
            seed: 11,
            ..VersionedGenConfig::default()
        };
        let h = generate_versioned_history(&cfg);
        assert_eq!(h.ops, generate_versioned_history(&cfg).ops);
        let a = serde_json::to_string(&check(&h)).unwrap();
        let b = serde_json::to_string(&check(&h)).unwrap();
        assert_eq!(a, b);
        let r = check(&h);
        assert_eq!(r.verdict, Verdict::Invalid, "{}", r.table());
        assert!(r.stale.stale_reads > 0);
        assert!(r.guarantee(Guarantee::MonotonicReads).violations > 0);
    }

    #[test]
    fn linearizable_histories_have_no_violations_and_no_stale_reads() {
        for seed in 0..30 {
            let cfg = VersionedGenConfig {
                keys: 1 + (seed as usize % 4),
                threads: 2 + (seed as usize % 7),
                ops: 1500,
                info_probability: [0.0, 0.05, 0.3][seed as usize % 3],
                seed,
                ..VersionedGenConfig::default()
            };
            let h = generate_versioned_history(&cfg);
            let r = check(&h);
            assert_eq!(r.verdict, Verdict::Valid, "seed {seed}: {}", r.table());
            assert_eq!(r.stale.stale_reads, 0, "seed {seed}");
            assert_eq!(r.version_conflicts, 0);
            assert!(r.stale.reads_measured > 300, "seed {seed}");
            for g in &r.guarantees {
                assert!(g.checks > 0, "seed {seed}: {:?} never checked", g.guarantee);
            }
            // Thread sessions see the same linearizable history: still valid.
            let t = check_sessions(
                &h,
                &SessionConfig {
                    mode: SessionMode::Thread {
                        concurrency: cfg.threads as u64,
                    },
                    ..SessionConfig::default()
                },
            );
            assert_eq!(t.verdict, Verdict::Valid, "seed {seed}: {}", t.table());
        }
    }

    #[test]
    fn fenwick_matches_brute_force() {
        let versions = vec![3, 9, 4, 12, 7, 9];
        let mut acks = KeyAcks::new(versions.clone());
        let mut inserted: Vec<(i64, u64)> = Vec::new();
        for (t, v) in [(5u64, 9i64), (6, 3), (7, 12), (8, 9), (9, 4)] {
            acks.insert(v, t);
            if !inserted.iter().any(|x| x.0 == v) {
                inserted.push((v, t));
            }
            for q in 0..14 {
                let newer: Vec<&(i64, u64)> = inserted.iter().filter(|x| x.0 > q).collect();
                let want = (newer.len() as u64, newer.iter().map(|x| x.1).min());
                assert_eq!(acks.newer_than(q), want, "q {q}");
            }
        }
        acks.insert(100, 1); // never acknowledged in pass 1: ignored
        assert_eq!(acks.newer_than(50), (0, None));
    }

    impl B {
        /// A complete ok append: invoke at t, ok at t+1.
        fn append(&mut self, p: u64, key: &str, e: i64, t_ms: u64) -> &mut B {
            self.ev(OpType::Invoke, p, "append", key, json!(e), None, t_ms)
                .ev(OpType::Ok, p, "append", key, json!(e), None, t_ms + 1)
        }
        /// A complete ok list read: invoke at t, ok at t+1.
        fn lread(&mut self, p: u64, key: &str, list: &[i64], t_ms: u64) -> &mut B {
            self.ev(OpType::Invoke, p, "read", key, Value::Null, None, t_ms)
                .ev(OpType::Ok, p, "read", key, json!(list), None, t_ms + 1)
        }
    }

    #[test]
    fn list_append_is_chosen_automatically_and_recorded() {
        let mut b = B::new();
        b.append(1, "k", 1, 0).lread(1, "k", &[1], 2);
        let r = check(&b.h());
        assert_eq!(r.version_source, VersionSource::ListAppend);
        assert_eq!(r.version_source_reason, "the history has append ops");
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
        let c = SessionChecker::default().check(&b.h());
        assert_eq!(c.details["version_source"], "list-append");
        // Reads of lists alone also select it; versions alone select system.
        let mut b = B::new();
        b.lread(1, "k", &[], 0).lread(1, "k", &[4], 2);
        assert_eq!(check(&b.h()).version_source, VersionSource::ListAppend);
        let mut b = B::new();
        b.write(1, "k", 1, 3, 0);
        assert_eq!(check(&b.h()).version_source, VersionSource::System);
        assert_eq!(
            with_source(&b.h(), VersionSource::IncreasingValues).version_source_reason,
            "chosen by configuration"
        );
        assert_eq!(
            "increasing-values".parse::<VersionSource>(),
            Ok(VersionSource::IncreasingValues)
        );
        assert!("lists".parse::<VersionSource>().is_err());
    }

    #[test]
    fn list_append_read_your_writes_violation_and_clean() {
        let mut b = B::new();
        // Process 1 appends 1 (position 1, as process 2's read shows), then reads the empty list.
        b.append(1, "k", 1, 0)
            .lread(2, "k", &[1], 2)
            .lread(1, "k", &[], 4);
        let r = check(&b.h());
        only(&r, Guarantee::ReadYourWrites, 1);
        let w = &r.guarantee(Guarantee::ReadYourWrites).witnesses[0];
        assert_eq!(
            w.witness,
            "process 1 appended 1 to k (position 1, ok at 0.001 s) then read k and got [] (0 elements) at 0.005 s"
        );
        assert_eq!((w.earlier_version, w.later_version), (1, 0));

        let mut b = B::new();
        b.append(1, "k", 1, 0)
            .lread(2, "k", &[1], 2)
            .lread(1, "k", &[1], 4);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
        assert_eq!(r.guarantee(Guarantee::ReadYourWrites).checks, 1);
    }

    #[test]
    fn list_append_unseen_append_is_after_every_read() {
        // Process 1's append of 9 is acknowledged but no read ever shows it: its own later read
        // misses it (read-your-writes), and its later append of 1, seen at position 1, is older
        // than it (monotonic writes). Process 2's two unseen appends are never compared.
        let mut b = B::new();
        b.append(1, "k", 9, 0)
            .lread(1, "k", &[], 2)
            .append(1, "k", 1, 4)
            .lread(3, "k", &[1], 6)
            .append(2, "k", 7, 8)
            .append(2, "k", 8, 10);
        let r = check(&b.h());
        assert_eq!(r.unseen_appends, 3);
        let ryw = r.guarantee(Guarantee::ReadYourWrites);
        assert_eq!(ryw.violations, 1);
        assert!(
            ryw.witnesses[0]
                .witness
                .contains("appended 9 to k (position unknown: never read, ok at 0.001 s)"),
            "{}",
            ryw.witnesses[0].witness
        );
        let mw = r.guarantee(Guarantee::MonotonicWrites);
        assert_eq!((mw.checks, mw.violations), (1, 1), "{}", r.table());
        assert!(
            mw.witnesses[0]
                .witness
                .contains("then appended 1 to k and got position 1")
        );
        // Unseen appends count as newer than every read for staleness: process 3's read of [1]
        // was invoked after 9's ack.
        assert_eq!(r.stale.stale_reads, 2, "{:?}", r.stale);
    }

    #[test]
    fn list_append_monotonic_reads_violation_and_clean() {
        let mut b = B::new();
        b.lread(1, "k", &[1, 2], 0)
            .lread(1, "k", &[1], 2)
            .lread(2, "k", &[], 4); // another session: no bound
        let r = check(&b.h());
        only(&r, Guarantee::MonotonicReads, 1);
        assert_eq!(
            r.guarantee(Guarantee::MonotonicReads).witnesses[0].witness,
            "process 1 read k and got [1,2] (2 elements) at 0.001 s then read k and got [1] (1 elements) at 0.003 s"
        );
        let mut b = B::new();
        b.lread(1, "k", &[], 0)
            .lread(1, "k", &[1], 2)
            .lread(1, "k", &[1, 2], 4);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
        assert_eq!(r.guarantee(Guarantee::MonotonicReads).checks, 2);
    }

    #[test]
    fn list_append_monotonic_writes_violation_and_clean() {
        // Process 1 appended 2 before 1, but the lists put 1 first.
        let mut b = B::new();
        b.append(1, "k", 2, 0)
            .append(1, "k", 1, 2)
            .lread(2, "k", &[1, 2], 4);
        let r = check(&b.h());
        only(&r, Guarantee::MonotonicWrites, 1);
        let w = &r.guarantee(Guarantee::MonotonicWrites).witnesses[0];
        assert_eq!((w.earlier_version, w.later_version), (2, 1));
        let mut b = B::new();
        b.append(1, "k", 1, 0)
            .append(1, "k", 2, 2)
            .lread(2, "k", &[1, 2], 4);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
        assert_eq!(r.guarantee(Guarantee::MonotonicWrites).checks, 1);
    }

    #[test]
    fn list_append_writes_follow_reads_clean_and_violation_is_a_conflict() {
        // Clean: read [1], then append 2, which lands after it.
        let mut b = B::new();
        b.lread(1, "k", &[1], 0)
            .append(1, "k", 2, 2)
            .lread(2, "k", &[1, 2], 4);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
        assert_eq!(r.guarantee(Guarantee::WritesFollowReads).checks, 1);
        // Process 1 read [1, 2] and then appended 3, which another read places at position 2:
        // with every read a prefix of one order this cannot happen, so it surfaces as two reads
        // that cannot both be prefixes — a version conflict naming both.
        let mut b = B::new();
        b.lread(1, "k", &[1, 2], 0)
            .append(1, "k", 3, 2)
            .lread(2, "k", &[1, 3], 4)
            .lread(3, "k", &[1, 2, 4], 6);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Invalid);
        assert_eq!((r.version_conflicts, r.conflicting_reads), (1, 1));
        let c = &r.conflicts[0];
        assert_eq!(c.kind, "version-conflict");
        assert_eq!((c.first_index, c.later_index, c.version), (5, 7, 2));
        assert_eq!(
            (&c.first_value, &c.later_value),
            (&json!([1, 3]), &json!([1, 2, 4]))
        );
        assert_eq!(
            c.witness,
            "read k and got [1,3] (process 2 5, ok at 0.005 s) and read k and got [1,2,4] (process 3 7, ok at 0.007 s) differ at position 2 of k: they cannot both be prefixes of one order"
        );
        // The append of 3 was never seen in a consistent list: unseen, hence after the read.
        assert_eq!(r.unseen_appends, 1);
        assert_eq!(r.total_violations(), 0, "{}", r.table());
    }

    #[test]
    fn list_append_duplicate_element_is_a_conflict() {
        let mut b = B::new();
        b.append(1, "k", 1, 0).lread(1, "k", &[1, 1], 2);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Invalid);
        assert_eq!(r.conflicts[0].kind, "duplicate-element");
        assert_eq!(r.conflicts[0].version, 2);
        assert!(r.conflicts[0].witness.contains("holds element 1 twice"));
    }

    #[test]
    fn list_append_info_and_fail_ops() {
        // Process 0's append of 2 crashes (info) but shows up in a read: it is placed, yet it
        // never binds a session. Process 0 continues as 5 and reads [1] — no violation. A failed
        // append is ignored; an info read is no evidence.
        let mut b = B::new();
        b.append(0, "k", 1, 0)
            .ev(OpType::Invoke, 0, "append", "k", json!(2), None, 2)
            .ev(OpType::Info, 0, "append", "k", json!(2), None, 3)
            .lread(5, "k", &[1], 4)
            .ev(OpType::Invoke, 5, "append", "k", json!(3), None, 6)
            .ev(OpType::Fail, 5, "append", "k", json!(3), None, 7)
            .ev(OpType::Invoke, 5, "read", "k", Value::Null, None, 8)
            .ev(OpType::Info, 5, "read", "k", Value::Null, None, 9)
            .lread(5, "k", &[1, 2], 10);
        let r = check(&b.h());
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
        assert_eq!((r.info_ignored, r.fail_ignored), (2, 1));
        assert_eq!((r.unseen_appends, r.ok_writes), (0, 1));
        // Thread mode: process 5 is thread 0, which appended 1 before the crash; reading [] after
        // it breaks read-your-writes.
        b.lread(5, "k", &[], 12);
        let r = check_sessions(
            &b.h(),
            &SessionConfig {
                mode: SessionMode::Thread { concurrency: 5 },
                ..SessionConfig::default()
            },
        );
        assert_eq!(r.guarantee(Guarantee::ReadYourWrites).violations, 1);
        assert_eq!(r.guarantee(Guarantee::MonotonicReads).violations, 1);
    }

    #[test]
    fn list_append_ignores_system_versions_and_unplaceable_ops() {
        let mut b = B::new();
        b.write(1, "k", 5, 10, 0)
            .ev(OpType::Invoke, 1, "read", "k", Value::Null, None, 2)
            .ev(OpType::Ok, 1, "read", "k", json!([1]), Some(3), 3)
            .ev(OpType::Invoke, 1, "read", "k", Value::Null, None, 4)
            .ev(OpType::Ok, 1, "read", "k", json!(["x"]), Some(3), 5);
        let r = check(&b.h());
        assert_eq!((r.unversioned_writes, r.malformed), (1, 1));
        assert_eq!(r.verdict, Verdict::Unknown, "{}", r.table());
    }

    #[test]
    fn increasing_values_each_guarantee_violation_and_clean() {
        let inc = |b: &B| with_source(&b.h(), VersionSource::IncreasingValues);
        // Read-your-writes: wrote 5, read 3.
        let mut b = B::new();
        b.write(1, "k", 5, 0, 0).read(1, "k", Some(3), 0, 2);
        let r = inc(&b);
        only(&r, Guarantee::ReadYourWrites, 1);
        assert_eq!(
            r.guarantee(Guarantee::ReadYourWrites).witnesses[0].witness,
            "process 1 wrote k = 5 (version 5, ok at 0.001 s) then read k and got 3 (version 3) at 0.003 s"
        );
        let mut b = B::new();
        b.write(1, "k", 5, 0, 0).read(1, "k", Some(6), 0, 2);
        assert_eq!(inc(&b).verdict, Verdict::Valid);
        // Monotonic reads: 4 then absent.
        let mut b = B::new();
        b.read(1, "k", Some(4), 0, 0).read(1, "k", None, 0, 2);
        only(&inc(&b), Guarantee::MonotonicReads, 1);
        let mut b = B::new();
        b.read(1, "k", None, 0, 0).read(1, "k", Some(4), 0, 2);
        assert_eq!(inc(&b).verdict, Verdict::Valid);
        // Monotonic writes: 7 then a cas to 6.
        let mut b = B::new();
        b.write(1, "k", 7, 0, 0)
            .ev(OpType::Invoke, 1, "cas", "k", json!([7, 6]), None, 2)
            .ev(OpType::Ok, 1, "cas", "k", json!([7, 6]), None, 3);
        only(&inc(&b), Guarantee::MonotonicWrites, 1);
        let mut b = B::new();
        b.write(1, "k", 7, 0, 0).write(1, "k", 8, 0, 2);
        assert_eq!(inc(&b).verdict, Verdict::Valid);
        // Writes-follow-reads: read 9, then write 9 (not newer).
        let mut b = B::new();
        b.read(1, "k", Some(9), 0, 0).write(1, "k", 9, 0, 2);
        only(&inc(&b), Guarantee::WritesFollowReads, 1);
        let mut b = B::new();
        b.read(1, "k", Some(9), 0, 0).write(1, "k", 10, 0, 2);
        assert_eq!(inc(&b).verdict, Verdict::Valid);
    }

    #[test]
    fn increasing_values_info_and_fail_ops() {
        let inc = |b: &B| with_source(&b.h(), VersionSource::IncreasingValues);
        // An info write of 9 need not be seen; a failed write of 20 is ignored; the session after
        // the info is new.
        let mut b = B::new();
        b.write(0, "k", 3, 0, 0)
            .ev(OpType::Invoke, 0, "write", "k", json!(9), None, 2)
            .ev(OpType::Info, 0, "write", "k", json!(9), None, 3)
            .read(5, "k", Some(3), 0, 4)
            .ev(OpType::Invoke, 5, "write", "k", json!(20), None, 6)
            .ev(OpType::Fail, 5, "write", "k", json!(20), None, 7)
            .read(5, "k", Some(3), 0, 8);
        let r = inc(&b);
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.table());
        assert_eq!((r.info_ignored, r.fail_ignored), (1, 1));
        // Stale reads are measured in values: 3 read while 3 and ... nothing newer was acked.
        assert_eq!(r.stale.stale_reads, 0);
        // Non-positive or non-integer values are malformed, never judged.
        let mut b = B::new();
        b.write(1, "k", 0, 0, 0)
            .ev(OpType::Invoke, 1, "read", "k", Value::Null, None, 2)
            .ev(OpType::Ok, 1, "read", "k", json!("x"), None, 3);
        let r = inc(&b);
        assert_eq!(r.malformed, 2);
        assert_eq!(r.verdict, Verdict::Unknown);
        assert!(r.reason.as_deref().unwrap().contains("positive integer"));
    }

    #[test]
    fn generated_list_append_histories() {
        for seed in 0..20 {
            let cfg = ListAppendGenConfig {
                keys: 1 + (seed as usize % 4),
                threads: 2 + (seed as usize % 7),
                ops: 1500,
                info_probability: [0.0, 0.05, 0.3][seed as usize % 3],
                seed,
                ..ListAppendGenConfig::default()
            };
            let h = generate_list_append_history(&cfg);
            let r = check(&h);
            assert_eq!(r.version_source, VersionSource::ListAppend);
            assert_eq!(r.verdict, Verdict::Valid, "seed {seed}: {}", r.table());
            assert_eq!(r.version_conflicts, 0);
            assert!(r.stale.reads_measured > 300, "seed {seed}");
            // Stale prefixes break monotonic reads (and read-your-writes) but never the prefix
            // order itself.
            let s = check(&generate_list_append_history(&ListAppendGenConfig {
                stale_read_probability: 0.2,
                ..cfg
            }));
            assert_eq!(s.verdict, Verdict::Invalid, "seed {seed}");
            assert!(s.guarantee(Guarantee::MonotonicReads).violations > 0);
            assert_eq!(s.version_conflicts, 0);
            assert!(s.stale.stale_reads > 0);
        }
    }
}
