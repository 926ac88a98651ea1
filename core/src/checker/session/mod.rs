//! Session-guarantee checker: read-your-writes, monotonic reads, monotonic writes and
//! writes-follow-reads (Terry et al., PDIS 1994) on per-key ops, judged against a per-key version
//! order taken from one of three sources, plus stale-read quantification and version-conflict
//! detection.
//!
//! Owns the analysis and its result types (`SessionResult`, `SessionChecker`; here), reading
//! versions and choosing their source (`versions`), the pass over a history (`check`), the same
//! result from a history given a few keys at a time (`parts`: the streamed check), and seeded
//! generators of versioned register and list-append histories (`histgen`) for tests and
//! benchmarks. Does not own reading histories (`history`), rendering or storing results.
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
use crate::history::History;
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

/// The bucket width of a [`TimeHistogram`] over a history lasting `span_ns`: the smallest of
/// 10, 20, 50, 100, … ms giving at most [`MAX_TIME_BUCKETS`] buckets.
fn bucket_ms(span_ns: u64) -> u64 {
    let span_ms = span_ns.div_ceil(1_000_000).max(1);
    (1..=18)
        .flat_map(|e| [1, 2, 5].map(|m| m * 10u64.pow(e)))
        .find(|w| span_ms.div_ceil(*w) <= MAX_TIME_BUCKETS)
        .unwrap_or(u64::MAX / 2)
}

/// Most buckets a [`TimeHistogram`] spreads a history over.
pub const MAX_TIME_BUCKETS: u64 = 1_000;

/// The session checker's name (`CheckResult::checker`, results.json's `checkers[].checker`).
pub const NAME: &str = "session";

impl TimeHistogram {
    /// Histogram of `times_ns` over a history lasting `span_ns`.
    pub fn of(times_ns: &[u64], span_ns: u64) -> TimeHistogram {
        let bucket_ms = bucket_ms(span_ns);
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

    /// The generic checker result (`CheckResult::details` this result as JSON).
    pub fn check_result(&self) -> CheckResult {
        CheckResult {
            checker: NAME.to_string(),
            verdict: self.verdict,
            summary: self.summary(),
            details: serde_json::to_value(self).unwrap_or_else(
                |e| serde_json::json!({ "error": format!("cannot serialize session result: {e}") }),
            ),
        }
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
                "4 session guarantees held over {} in {}",
                crate::plural::counted(checks, "check"),
                crate::plural::counted(self.sessions, "session")
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
        NAME
    }

    fn check(&self, history: &History) -> CheckResult {
        self.analyse(history).check_result()
    }
}

fn key_label(k: Option<&str>) -> &str {
    k.unwrap_or("(register)")
}

/// No key (a register history): the key index of an op without one.
const NO_KEY: u32 = u32::MAX;
/// No partner op (an invoke never completed, a completion without invoke).
const NONE: usize = usize::MAX;

mod acks;
mod check;
pub mod histgen;
mod parts;
mod versions;
pub use check::check_sessions;
pub use parts::SessionParts;
pub use versions::SourceSniff;

#[cfg(test)]
mod tests;
