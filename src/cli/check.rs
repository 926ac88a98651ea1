//! `shakedown check`'s flags: inputs, model, register semantics, transaction consistency,
//! budgets and outputs. Their conversion into a check is `app::check`; `run`'s flags are `cli`.

use super::{parse_memory, parse_witness};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `shakedown check` flags.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Run directories, history files (JSONL, JSON array, Jepsen EDN, history.txt or console log,
    /// Porcupine kv lines) or directories of them; several give one line per file.
    #[arg(required = true, num_args = 1..)]
    pub paths: Vec<PathBuf>,
    /// Model: auto (from the client functions: list-append for JSONL with append ops, log for
    /// send ops, mutex, queue, txn for transactions with append or w micro-ops, multi-register
    /// for other txn, kv for get/put/append and Porcupine input, set or counter for add/read;
    /// cas-register otherwise), register, cas-register, multi-register, kv, list-append, set,
    /// set-full (Jepsen's set-full: per element stable, lost, stale or never read, and
    /// duplicates; never chosen by auto), queue, mutex, counter, txn (list-append or rw-register
    /// transactions: Elle-style dependency cycles, checked against --consistency-models;
    /// elle-cli's list-append and rw-register mean txn on a transaction history) or log
    /// (replicated logs: lost, duplicated and inconsistent offsets).
    #[arg(long, default_value = "auto")]
    pub model: String,
    /// --model set-full: the set's reads are claimed linearizable, so an element missing from a
    /// read that began after it was known (stale) fails the check (Jepsen's :linearizable?; off
    /// by default, as elle-cli runs set-full).
    #[arg(long)]
    pub linearizable: bool,
    /// rw-register transactions: what orders a key's versions besides the initial state nil
    /// (Elle's options), a comma-separated list: wfr-keys (a transaction's write of a key follows
    /// its read of it), sequential-keys (process order), linearizable-keys (real-time order), or
    /// none. A source whose orders contradict themselves is reported (cyclic-versions) and unused.
    #[arg(long, value_name = "LIST", default_value = "none")]
    pub txn_assume: String,
    /// Transactions: the consistency models the history must satisfy, comma-separated, in
    /// Elle's names (strict-serializable, serializable, snapshot-isolation, repeatable-read,
    /// read-committed, read-atomic, strong-session-serializable, …, or Adya's PL-3, PL-SI, …).
    /// An anomaly one of them proscribes fails the check; others found are reported as allowed.
    #[arg(long, value_name = "MODELS", default_value = "strict-serializable")]
    pub consistency_models: String,
    /// Transactions: anomalies that fail the check besides the models' (Elle's names: G0, G1a,
    /// G1c, G-single-item, G-nonadjacent-item, G2-item, lost-update, …; any anomaly implying one
    /// counts).
    #[arg(long, value_name = "ANOMALIES")]
    pub anomalies: Option<String>,
    /// Time budget per file (seconds, or 90s, 10m…); past it the verdict is unknown.
    #[arg(long, default_value_t = 60.0, value_parser = crate::cli::duration::seconds)]
    pub time_limit: f64,
    /// Witness of an invalid key: none (blocked op and longest linearizable prefix only), fast
    /// (also the essential ops, minimized within 10 times the key's search time, at least 50 ms
    /// and at most 2 s) or minimal (minimized to 1-minimal within --time-limit).
    #[arg(long, default_value = "fast", value_parser = parse_witness)]
    pub witness: crate::checker::linear::WitnessMode,
    /// Decide every key within --time-limit even once one is invalid. Without it the verdict
    /// comes first: one invalid key settles it, the keys still undecided then get 10 times the
    /// time that took (at least 100 ms), and those left are reported unknown.
    #[arg(long)]
    pub all_keys: bool,
    /// Memory budget of the linearizability check, for all keys searched at once (512M, 2G, …);
    /// past it a key is unknown. Default: a quarter of the machine's available memory, at most
    /// 1 GiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
    pub memory: Option<usize>,
    /// Input format: auto, jsonl, json (a JSON array of op maps, as elle-cli reads), edn,
    /// history-txt (Jepsen's tab-separated history.txt), jepsen-log or porcupine.
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Register semantics preset (default per input: etcd for our JSONL and Porcupine's etcd
    /// logs, knossos for Jepsen EDN, history.txt, console logs and JSON arrays).
    #[arg(long, value_enum)]
    pub semantics: Option<SemanticsArg>,
    /// The register's value before any op: nil (absent) or a value (`0`, `"x"`, `x`); overrides
    /// the preset.
    #[arg(long, value_name = "nil|VALUE")]
    pub initial: Option<String>,
    /// What an ok read of nil means: the key was absent, or nothing is known; overrides the preset.
    #[arg(long, value_enum)]
    pub nil_read: Option<NilReadArg>,
    /// What a failed cas (no error, or error cas-mismatch) means: evidence that the value
    /// differed, or nothing (the op did not happen); overrides the preset.
    #[arg(long, value_enum)]
    pub failed_cas: Option<FailedCasArg>,
    /// Treat client op values as `jepsen.independent` `[key value]` tuples (EDN, JSON arrays and
    /// Jepsen logs detect this automatically when every client invoke value is a tuple and no ok
    /// completion holds a collection other than its invoke's tuple).
    #[arg(long, conflicts_with = "no_independent")]
    pub independent: bool,
    /// Never split `[key value]` tuples, even when every value looks like one.
    #[arg(long)]
    pub no_independent: bool,
    /// Write a self-contained HTML page explaining the result to this file (one input file only):
    /// the linearizability witness, or for transactions each anomaly explained and each cycle
    /// drawn.
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,
    /// Write the history as Jepsen EDN to this file (one input file only).
    #[arg(long, value_name = "OUT")]
    pub export_edn: Option<PathBuf>,
    /// Check a JSONL history as it is read, each key once the file shows it retired (every
    /// process that worked on it moved on), holding only the keys still open: auto (files over
    /// 64 MiB), always, or never (read it whole). For the register, cas-register and list-append
    /// models, with or without --session, not with --html, --export-edn or --independent;
    /// verdict, counts and witnesses are the whole check's, and a history the stream cannot
    /// judge alike is checked whole.
    #[arg(long, value_enum, default_value = "auto")]
    pub stream: StreamArg,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also check the four session guarantees (read-your-writes, monotonic reads, monotonic
    /// writes, writes-follow-reads); the verdict merges both checkers, as a run does.
    #[arg(long)]
    pub session: bool,
    /// Version order for --session: auto (chosen from the history), system, list-append or
    /// increasing-values.
    #[arg(long, default_value = "auto", requires = "session")]
    pub version_source: String,
}

/// `--stream`: whether to check a history as it is read.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum StreamArg {
    /// Stream JSONL files over 64 MiB that can be streamed.
    Auto,
    /// Stream every history that can be streamed (and say why one cannot).
    Always,
    /// Read every history whole.
    Never,
}

/// `--semantics`: a register semantics preset.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SemanticsArg {
    /// Starts at 0, a nil read is unknown, a failed cas did not happen (Knossos).
    Knossos,
    /// Starts absent, a nil read means absent, a failed cas saw another value (etcd, Porcupine).
    Etcd,
}

impl From<SemanticsArg> for crate::model::SemanticsPreset {
    fn from(s: SemanticsArg) -> Self {
        match s {
            SemanticsArg::Knossos => crate::model::SemanticsPreset::Knossos,
            SemanticsArg::Etcd => crate::model::SemanticsPreset::Etcd,
        }
    }
}

/// `--nil-read`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum NilReadArg {
    /// A nil read observed the key absent.
    Absent,
    /// A nil read says nothing.
    Unknown,
}

/// `--failed-cas`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum FailedCasArg {
    /// A failed cas happened and saw a value other than its `old`.
    Evidence,
    /// A failed cas did not happen.
    Ignored,
}
