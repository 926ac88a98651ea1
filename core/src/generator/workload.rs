//! Workload generators: the Jepsen-style independent-key register and list-append workloads and
//! final reads.
//!
//! Owns which register / list-append ops are issued on which keys and by which client threads,
//! the unique elements appended, and the record of keys used. Does not own how ops are executed (clients) or checked (checkers).

use super::{
    Context, Generator, Invocation, Next, ThreadId, pick_free_client, pick_free_client_avoiding,
};
use crate::history::{Op, OpType, Process};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// An invalid workload (generator) configuration, naming the field; the spec reader turns it
/// into a `options::ConfigError` at the field's file:line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {field} {message}")]
pub struct WorkloadConfigError {
    /// Which generator was being configured, e.g. `register workload`.
    pub what: &'static str,
    /// The offending field.
    pub field: &'static str,
    /// What is wrong and what is expected.
    pub message: String,
}

/// The set of keys a workload has used, shared between the workload and [`final_reads`].
#[derive(Debug, Clone, Default)]
pub struct KeyLog(Arc<Mutex<BTreeSet<String>>>);

impl KeyLog {
    /// An empty log.
    pub fn new() -> KeyLog {
        KeyLog::default()
    }

    /// A log holding `keys`.
    pub fn from_keys<I: IntoIterator<Item = String>>(keys: I) -> KeyLog {
        KeyLog(Arc::new(Mutex::new(keys.into_iter().collect())))
    }

    fn lock(&self) -> MutexGuard<'_, BTreeSet<String>> {
        // A poisoned lock still holds a valid set of strings.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record a key.
    pub fn insert(&self, key: &str) {
        let mut keys = self.lock();
        if !keys.contains(key) {
            keys.insert(key.to_string());
        }
    }

    /// The keys recorded so far.
    pub fn snapshot(&self) -> BTreeSet<String> {
        self.lock().clone()
    }

    /// Number of keys recorded so far.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True if no key was recorded.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// Configuration of [`register_workload`]. Deserializes with defaults for missing fields and
/// rejects unknown ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RegisterConfig {
    /// Relative weight of `read` ops.
    pub read_weight: u32,
    /// Relative weight of `write` ops.
    pub write_weight: u32,
    /// Relative weight of `cas` ops.
    pub cas_weight: u32,
    /// Written and compared values are uniform in `0..=max_value`.
    pub max_value: u64,
    /// Client threads per key group (Jepsen's `concurrent-generator` n).
    pub threads_per_key: usize,
    /// Ops a group issues on one key before moving to a fresh key.
    pub ops_per_key: u64,
    /// Prefix of key names; keys are `{prefix}{n}`, or just `{n}` without a prefix.
    pub key_prefix: Option<String>,
}

impl Default for RegisterConfig {
    fn default() -> RegisterConfig {
        RegisterConfig {
            read_weight: 1,
            write_weight: 1,
            cas_weight: 1,
            max_value: 4,
            threads_per_key: 2,
            ops_per_key: 100,
            key_prefix: None,
        }
    }
}

impl RegisterConfig {
    /// Check the configuration.
    pub fn validate(&self) -> Result<(), WorkloadConfigError> {
        let err = |field, message: String| WorkloadConfigError {
            what: "register workload",
            field,
            message,
        };
        let total =
            u64::from(self.read_weight) + u64::from(self.write_weight) + u64::from(self.cas_weight);
        if total == 0 {
            return Err(err(
                "read_weight/write_weight/cas_weight",
                "must not all be 0".to_string(),
            ));
        }
        if self.threads_per_key == 0 {
            return Err(err(
                "threads_per_key",
                "must be at least 1, got 0".to_string(),
            ));
        }
        if self.ops_per_key == 0 {
            return Err(err("ops_per_key", "must be at least 1, got 0".to_string()));
        }
        if self.max_value > i64::MAX as u64 {
            return Err(err(
                "max_value",
                format!("must be at most {}, got {}", i64::MAX, self.max_value),
            ));
        }
        Ok(())
    }
}

struct Group {
    /// Index of the current key (group g uses g, g+G, g+2G, ...).
    key_index: u64,
    /// Name of the current key.
    key: String,
    /// Ops issued on the current key.
    ops_on_key: u64,
}

/// The independent-key register workload; see [`register_workload`].
pub struct RegisterWorkload {
    cfg: RegisterConfig,
    keys: KeyLog,
    groups: Vec<Group>,
    total_weight: u64,
}

/// Jepsen-style independent-key register workload, infinite (bound it with `time_limit` or
/// `limit`). Client threads are split into groups of `threads_per_key` (the last group may be
/// smaller); group g works on key g, then g+G, g+2G, … (G groups), moving on after
/// `ops_per_key` ops, so only one group's threads ever touch a key. Each op goes to a uniformly
/// random free client thread, on its group's current key: `read` (null), `write` (int) or `cas`
/// (`[old, new]`), chosen by weight. Keys are recorded in [`RegisterWorkload::keys_used`] when
/// first used.
pub fn register_workload(cfg: RegisterConfig) -> Result<RegisterWorkload, WorkloadConfigError> {
    cfg.validate()?;
    let total_weight =
        u64::from(cfg.read_weight) + u64::from(cfg.write_weight) + u64::from(cfg.cas_weight);
    Ok(RegisterWorkload {
        cfg,
        keys: KeyLog::new(),
        groups: Vec::new(),
        total_weight,
    })
}

impl RegisterWorkload {
    /// A handle on the set of keys this workload used (for [`final_reads`]).
    pub fn keys_used(&self) -> KeyLog {
        self.keys.clone()
    }

    fn key_name(&self, index: u64) -> String {
        match &self.cfg.key_prefix {
            Some(prefix) => format!("{prefix}{index}"),
            None => index.to_string(),
        }
    }
}

impl Generator for RegisterWorkload {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        if ctx.client_threads == 0 {
            return Next::Done;
        }
        let tpk = self.cfg.threads_per_key;
        if self.groups.is_empty() {
            let n_groups = ctx.client_threads.div_ceil(tpk) as u64;
            self.groups = (0..n_groups)
                .map(|g| Group {
                    key_index: g,
                    key: self.key_name(g),
                    ops_on_key: 0,
                })
                .collect();
        }
        let Some(thread) = pick_free_client(ctx, rng) else {
            return Next::Pending;
        };
        // A thread beyond the first context's client count joins the last group.
        let g = (thread / tpk).min(self.groups.len() - 1);
        let n_groups = self.groups.len() as u64;
        if self.groups[g].ops_on_key >= self.cfg.ops_per_key {
            let index = self.groups[g].key_index + n_groups;
            self.groups[g] = Group {
                key_index: index,
                key: self.key_name(index),
                ops_on_key: 0,
            };
        }
        let group = &mut self.groups[g];
        if group.ops_on_key == 0 {
            self.keys.insert(&group.key);
        }
        group.ops_on_key += 1;
        let max = self.cfg.max_value;
        let r = rng.random_range(0..self.total_weight);
        let (f, value) = if r < u64::from(self.cfg.read_weight) {
            ("read", Value::Null)
        } else if r < u64::from(self.cfg.read_weight) + u64::from(self.cfg.write_weight) {
            ("write", Value::from(rng.random_range(0..=max)))
        } else {
            let old = rng.random_range(0..=max);
            let new = rng.random_range(0..=max);
            (
                "cas",
                Value::Array(vec![Value::from(old), Value::from(new)]),
            )
        };
        Next::Op(Invocation {
            thread,
            time_ns: ctx.time_ns,
            f: f.to_string(),
            key: Some(group.key.clone()),
            value,
        })
    }
}

/// Configuration of [`list_append_workload`]. Deserializes with defaults for missing fields and
/// rejects unknown ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ListAppendConfig {
    /// Relative weight of `read` ops.
    pub read_weight: u32,
    /// Relative weight of `append` ops.
    pub append_weight: u32,
    /// Client threads per key group.
    pub threads_per_key: usize,
    /// Ops a group issues on one key before moving to a fresh key.
    pub ops_per_key: u64,
    /// Prefix of key names; keys are `{prefix}{n}`, or just `{n}` without a prefix.
    pub key_prefix: Option<String>,
}

impl Default for ListAppendConfig {
    fn default() -> ListAppendConfig {
        ListAppendConfig {
            read_weight: 1,
            append_weight: 1,
            threads_per_key: 2,
            ops_per_key: 100,
            key_prefix: None,
        }
    }
}

impl ListAppendConfig {
    /// Check the configuration.
    pub fn validate(&self) -> Result<(), WorkloadConfigError> {
        let err = |field, message: String| WorkloadConfigError {
            what: "list-append workload",
            field,
            message,
        };
        if u64::from(self.read_weight) + u64::from(self.append_weight) == 0 {
            return Err(err(
                "read_weight/append_weight",
                "must not both be 0".to_string(),
            ));
        }
        if self.threads_per_key == 0 {
            return Err(err(
                "threads_per_key",
                "must be at least 1, got 0".to_string(),
            ));
        }
        if self.ops_per_key == 0 {
            return Err(err("ops_per_key", "must be at least 1, got 0".to_string()));
        }
        Ok(())
    }
}

/// The independent-key list-append workload; see [`list_append_workload`].
pub struct ListAppendWorkload {
    cfg: ListAppendConfig,
    /// The register workload's key rotation, reused: only its groups and key log are used.
    keys: RegisterWorkload,
    /// Next element to append, per group (elements restart at 1 on every fresh key).
    next_element: Vec<i64>,
}

/// Independent-key list-append workload, infinite (bound it with `time_limit` or `limit`). Keys
/// rotate exactly as in [`register_workload`] (groups of `threads_per_key` threads, a fresh key
/// after `ops_per_key` ops). Each op goes to a uniformly random free client thread, on its
/// group's current key: `append` with the next integer of that key (1, 2, 3, … in issue order, so
/// elements are unique per key) or `read` (null; the client returns the whole list), chosen by
/// weight.
pub fn list_append_workload(
    cfg: ListAppendConfig,
) -> Result<ListAppendWorkload, WorkloadConfigError> {
    cfg.validate()?;
    let keys = register_workload(RegisterConfig {
        read_weight: 1,
        write_weight: 0,
        cas_weight: 0,
        max_value: 0,
        threads_per_key: cfg.threads_per_key,
        ops_per_key: cfg.ops_per_key,
        key_prefix: cfg.key_prefix.clone(),
    })?;
    Ok(ListAppendWorkload {
        cfg,
        keys,
        next_element: Vec::new(),
    })
}

impl ListAppendWorkload {
    /// A handle on the set of keys this workload used (for [`final_reads`]).
    pub fn keys_used(&self) -> KeyLog {
        self.keys.keys_used()
    }
}

impl Generator for ListAppendWorkload {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        // The register workload picks the thread and the key (rotating keys); it draws exactly
        // one extra random number for its (read-only) op choice, which we ignore.
        let mut inv = match self.keys.next(ctx, rng) {
            Next::Op(inv) => inv,
            other => return other,
        };
        let tpk = self.cfg.threads_per_key;
        let g = (inv.thread / tpk).min(self.keys.groups.len().saturating_sub(1));
        if self.next_element.len() < self.keys.groups.len() {
            self.next_element.resize(self.keys.groups.len(), 1);
        }
        if self.keys.groups[g].ops_on_key == 1 {
            self.next_element[g] = 1; // a fresh key
        }
        let total = u64::from(self.cfg.read_weight) + u64::from(self.cfg.append_weight);
        if rng.random_range(0..total) < u64::from(self.cfg.append_weight) {
            inv.f = "append".to_string();
            inv.value = Value::from(self.next_element[g]);
            self.next_element[g] += 1;
        } else {
            inv.f = "read".to_string();
            inv.value = Value::Null;
        }
        Next::Op(inv)
    }
}

/// Configuration of [`final_reads_with`]. Deserializes with defaults for missing fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FinalReadsConfig {
    /// Reads of one key before giving up on it (0 counts as 1).
    pub max_attempts: u32,
    /// Wait after a failed read before retrying that key, in ns.
    pub retry_delay_ns: u64,
}

impl Default for FinalReadsConfig {
    fn default() -> FinalReadsConfig {
        FinalReadsConfig {
            max_attempts: 5,
            retry_delay_ns: 100_000_000,
        }
    }
}

struct PendingRead {
    key: String,
    attempts: u32,
    last_thread: Option<ThreadId>,
    not_before_ns: u64,
}

/// Final reads of every key; see [`final_reads`].
pub struct FinalReads {
    keys: KeyLog,
    cfg: FinalReadsConfig,
    /// Keys still to read, ordered by `not_before_ns`; `None` until the first `next`.
    queue: Option<VecDeque<PendingRead>>,
    in_flight: BTreeMap<Process, PendingRead>,
}

/// [`final_reads_with`] the default configuration (5 attempts, 100 ms apart).
pub fn final_reads(keys: KeyLog) -> FinalReads {
    final_reads_with(keys, FinalReadsConfig::default())
}

/// One `read` of every key in `keys` (snapshotted when first asked, i.e. after the main phase),
/// spread over free client threads, at most one read of a key at a time. A read that ends `fail`
/// or `info` is retried, on another thread when one is free, `retry_delay_ns` after it completed,
/// up to `max_attempts` reads per key. Done once every key has an `ok` read or ran out of
/// attempts and no read is in flight (or at once without client threads). Needs `update` to see
/// completions.
pub fn final_reads_with(keys: KeyLog, cfg: FinalReadsConfig) -> FinalReads {
    FinalReads {
        keys,
        cfg,
        queue: None,
        in_flight: BTreeMap::new(),
    }
}

impl Generator for FinalReads {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        let keys = &self.keys;
        let queue = self.queue.get_or_insert_with(|| {
            keys.snapshot()
                .into_iter()
                .map(|key| PendingRead {
                    key,
                    attempts: 0,
                    last_thread: None,
                    not_before_ns: 0,
                })
                .collect()
        });
        if ctx.client_threads == 0 {
            // Nobody can ever read: give up rather than wait forever.
            return Next::Done;
        }
        let Some(front) = queue.front() else {
            return if self.in_flight.is_empty() {
                Next::Done
            } else {
                Next::Pending
            };
        };
        let Some(thread) = pick_free_client_avoiding(ctx, rng, front.last_thread) else {
            return Next::Pending;
        };
        let Some(mut read) = queue.pop_front() else {
            return Next::Pending;
        };
        read.attempts += 1;
        read.last_thread = Some(thread);
        let op = Invocation {
            thread,
            time_ns: ctx.time_ns.max(read.not_before_ns),
            f: "read".to_string(),
            key: Some(read.key.clone()),
            value: Value::Null,
        };
        self.in_flight.insert(ctx.process_of(thread), read);
        Next::Op(op)
    }

    fn update(&mut self, _ctx: &Context, event: &Op) {
        if event.op_type == OpType::Invoke || event.f != "read" {
            return;
        }
        let Some(read) = self.in_flight.get(&event.process) else {
            return;
        };
        if event.key.as_deref() != Some(read.key.as_str()) {
            return;
        }
        let Some(mut read) = self.in_flight.remove(&event.process) else {
            return;
        };
        if event.op_type == OpType::Ok || read.attempts >= self.cfg.max_attempts {
            return;
        }
        read.not_before_ns = event.time_ns.saturating_add(self.cfg.retry_delay_ns);
        if let Some(queue) = &mut self.queue {
            queue.push_back(read);
        }
    }
}
