//! The replicated-log workload (Jepsen's Kafka / queue workload in spirit): `send` integers unique
//! across the run to a few keys (a key is one log: a stream, topic or partition), `poll` each key
//! from the reading thread's node as a consumer would during the run, and after the heal `read`
//! every key whole from every node ([`LogFinalReads`]).
//!
//! Owns the op vocabulary of logs (the `f` names and value shapes below, which the log checker
//! `checker::log` reads and every client that declares the workload writes), which op goes to
//! which key and thread, the run-wide value counter and the per-node final reads. Does not own
//! executing ops (clients) or checking them (`checker::log`).
//!
//! Op shapes (`key` = the log's name):
//! - `send`: invoke value = the integer sent; `ok` value = `[offset, value]`, the offset
//!   (sequence number) the system acknowledged; `fail` = definitely not appended; `info` = maybe.
//! - `poll`: invoke value `null`; `ok` value = `[[offset, value], …]` ascending, the messages
//!   the consumer received, continuing after the last offset this client thread polled on the key
//!   (a fresh client starts at the beginning).
//! - `read`: invoke value `null`; `ok` value = `[[offset, value], …]` ascending, the whole log as
//!   the thread's node serves it, from the first offset. The final reads are reads.

use super::workload::WorkloadConfigError;
use super::{Context, Generator, Invocation, Next, ThreadId, pick_free_client};
use crate::history::{Op, OpType, Process};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};

/// The workload kind (`kind = "log"` in `workloads/*.toml`).
pub const KIND: &str = "log";
/// The `f` of a send (append one value to a log).
pub const SEND: &str = "send";
/// The `f` of a consumer poll (the next messages after this consumer's position).
pub const POLL: &str = "poll";
/// The `f` of a whole-log read from the first offset (the final reads).
pub const READ: &str = "read";

/// Configuration of [`log_workload`] (`[log]` in a workload spec). Defaults for missing fields,
/// unknown ones rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// Number of logs (keys `0..keys`).
    pub keys: usize,
    /// Relative weight of `send` ops.
    pub send_weight: u32,
    /// Relative weight of `poll` ops.
    pub poll_weight: u32,
}

impl Default for LogConfig {
    fn default() -> LogConfig {
        LogConfig {
            keys: 3,
            send_weight: 10,
            poll_weight: 1,
        }
    }
}

impl LogConfig {
    /// Check the configuration.
    pub fn validate(&self) -> Result<(), WorkloadConfigError> {
        let err = |field, message: &str| WorkloadConfigError {
            what: "log workload",
            field,
            message: message.to_string(),
        };
        if self.keys == 0 {
            return Err(err("keys", "must be at least 1, got 0"));
        }
        if self.send_weight == 0 {
            return Err(err(
                "send_weight",
                "must be at least 1: a log workload sends",
            ));
        }
        Ok(())
    }

    /// The key names, `0..keys`.
    pub fn key_names(&self) -> Vec<String> {
        (0..self.keys).map(|k| k.to_string()).collect()
    }
}

/// The log workload; see [`log_workload`].
pub struct LogWorkload {
    cfg: LogConfig,
    next_value: i64,
}

/// Sends and polls on `cfg.keys` logs, infinite (bound it with `time_limit`). Each op goes to a
/// uniformly random free client thread and a uniformly random key: `send` of the next integer
/// (0, 1, 2, … in issue order, never reused on any key) or `poll`, by weight.
pub fn log_workload(cfg: LogConfig) -> Result<LogWorkload, WorkloadConfigError> {
    cfg.validate()?;
    Ok(LogWorkload { cfg, next_value: 0 })
}

impl Generator for LogWorkload {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        let Some(thread) = pick_free_client(ctx, rng) else {
            return if ctx.client_threads == 0 {
                Next::Done
            } else {
                Next::Pending
            };
        };
        let key = rng.random_range(0..self.cfg.keys).to_string();
        let total = u64::from(self.cfg.send_weight) + u64::from(self.cfg.poll_weight);
        let (f, value) = if rng.random_range(0..total) < u64::from(self.cfg.send_weight) {
            self.next_value += 1;
            (SEND, Value::from(self.next_value - 1))
        } else {
            (POLL, Value::Null)
        };
        Next::Op(Invocation {
            thread,
            time_ns: ctx.time_ns,
            f: f.to_string(),
            key: Some(key),
            value,
        })
    }
}

/// Reads of one (key, node) pair before giving up on it.
const MAX_ATTEMPTS: u32 = 5;
/// Wait after a failed final read before retrying it, in ns.
const RETRY_DELAY_NS: u64 = 500_000_000;

#[derive(Debug, Clone)]
struct Pending {
    key: String,
    node: String,
    attempts: u32,
    not_before_ns: u64,
}

/// One `read` of every key from every node, each on a free thread bound to that node, at most one
/// read per thread at a time; a read that ends `fail` or `info` is retried `RETRY_DELAY_NS`
/// later, up to `MAX_ATTEMPTS` reads per pair. Done when every pair has an `ok` read or ran
/// out of attempts (at once without client threads or nodes).
pub struct LogFinalReads {
    queue: Option<VecDeque<Pending>>,
    keys: Vec<String>,
    in_flight: BTreeMap<Process, Pending>,
}

/// Final reads of `keys` on every node of the context; see [`LogFinalReads`].
pub fn log_final_reads(keys: Vec<String>) -> LogFinalReads {
    LogFinalReads {
        queue: None,
        keys,
        in_flight: BTreeMap::new(),
    }
}

impl Generator for LogFinalReads {
    fn next(&mut self, ctx: &Context, _rng: &mut ChaCha8Rng) -> Next {
        let keys = &self.keys;
        let queue = self.queue.get_or_insert_with(|| {
            // Only nodes some client thread is bound to can be read.
            let bound = ctx.client_threads.min(ctx.nodes.len());
            keys.iter()
                .flat_map(|k| {
                    ctx.nodes[..bound].iter().map(|n| Pending {
                        key: k.clone(),
                        node: n.clone(),
                        attempts: 0,
                        not_before_ns: 0,
                    })
                })
                .collect()
        });
        if ctx.client_threads == 0 || ctx.nodes.is_empty() {
            return Next::Done;
        }
        if queue.is_empty() {
            return if self.in_flight.is_empty() {
                Next::Done
            } else {
                Next::Pending
            };
        }
        // The first queued pair whose node has a free thread.
        let free_on = |node: &str| -> Option<ThreadId> {
            ctx.free_clients().find(|&t| ctx.node_of(t) == Some(node))
        };
        let Some((pos, thread)) = queue
            .iter()
            .enumerate()
            .find_map(|(i, p)| free_on(&p.node).map(|t| (i, t)))
        else {
            return Next::Pending;
        };
        let Some(mut read) = queue.remove(pos) else {
            return Next::Pending;
        };
        read.attempts += 1;
        let op = Invocation {
            thread,
            time_ns: ctx.time_ns.max(read.not_before_ns),
            f: READ.to_string(),
            key: Some(read.key.clone()),
            value: Value::Null,
        };
        self.in_flight.insert(ctx.process_of(thread), read);
        Next::Op(op)
    }

    fn update(&mut self, _ctx: &Context, event: &Op) {
        if event.op_type == OpType::Invoke || event.f != READ {
            return;
        }
        let Some(mut read) = self.in_flight.remove(&event.process) else {
            return;
        };
        if event.op_type == OpType::Ok || read.attempts >= MAX_ATTEMPTS {
            return;
        }
        read.not_before_ns = event.time_ns.saturating_add(RETRY_DELAY_NS);
        if let Some(queue) = &mut self.queue {
            queue.push_back(read);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn sends_are_unique_across_keys_and_polls_carry_no_value() {
        let mut w = log_workload(LogConfig::default()).unwrap();
        let ctx = Context::new(4, vec!["n1".into(), "n2".into()]);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut sent = Vec::new();
        let mut polls = 0;
        for _ in 0..500 {
            let Next::Op(op) = w.next(&ctx, &mut rng) else {
                panic!("no op")
            };
            assert!(op.key.as_deref().unwrap().parse::<usize>().unwrap() < 3);
            match op.f.as_str() {
                SEND => sent.push(op.value.as_i64().unwrap()),
                POLL => {
                    assert_eq!(op.value, Value::Null);
                    polls += 1;
                }
                other => panic!("unexpected f {other}"),
            }
        }
        let n = sent.len();
        sent.dedup();
        assert_eq!(sent.len(), n);
        assert!(polls > 10 && n > 300, "{polls} polls, {n} sends");
        assert!(
            log_workload(LogConfig {
                keys: 0,
                ..LogConfig::default()
            })
            .is_err()
        );
    }

    #[test]
    fn final_reads_cover_every_key_on_every_node_and_retry_failures() {
        let mut g = log_final_reads(vec!["0".into(), "1".into()]);
        let mut ctx = Context::new(3, vec!["n1".into(), "n2".into(), "n3".into()]);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut seen = Vec::new();
        let mut failed_once = false;
        loop {
            match g.next(&ctx, &mut rng) {
                Next::Op(op) => {
                    let node = ctx.node_of(op.thread).unwrap().to_string();
                    let p = ctx.process_of(op.thread);
                    let mut done = Op::new(OpType::Ok, p, READ, Value::Null);
                    if !failed_once {
                        failed_once = true;
                        done.op_type = OpType::Fail;
                    } else {
                        seen.push((op.key.clone().unwrap(), node));
                    }
                    g.update(&ctx, &done);
                    ctx.time_ns += 1_000_000_000;
                }
                Next::Pending => panic!("pending with every thread free"),
                Next::Done => break,
            }
        }
        seen.sort();
        let want: Vec<(String, String)> = ["0", "1"]
            .iter()
            .flat_map(|k| ["n1", "n2", "n3"].map(|n| (k.to_string(), n.to_string())))
            .collect();
        assert_eq!(seen, want);
    }
}
