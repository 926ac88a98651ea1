//! `bare_loop`: a client-only load loop over etcd, used by `shakedown bench` (and the
//! etcd_client benchmark) to measure the client's own throughput and latency without generator,
//! history or checker.
//!
//! Owns the op mix, the per-worker measurements and their summary. Does not own the client
//! (`client`) or the comparison with a full run (`bench`).

use super::client::{EtcdClient, EtcdClientConfig, EtcdError};
use crate::client::{Client, Completion};
use crate::model::CAS_MISMATCH;
use rand::RngExt;
use rand::SeedableRng;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Op mix and key space for `bare_loop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpMix {
    /// Relative weight of `read` ops.
    pub read_weight: u32,
    /// Relative weight of `write` ops.
    pub write_weight: u32,
    /// Relative weight of `cas` ops.
    pub cas_weight: u32,
    /// Number of distinct keys the ops are spread over.
    pub key_count: u32,
    /// Values written are drawn from `0..value_count`.
    pub value_count: u32,
}

impl Default for OpMix {
    fn default() -> Self {
        OpMix {
            read_weight: 1,
            write_weight: 1,
            cas_weight: 1,
            key_count: 8,
            value_count: 5,
        }
    }
}

/// Latency distribution of a set of ops, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatencySummary {
    /// Number of ops measured.
    pub count: u64,
    /// Median latency.
    pub p50_us: u64,
    /// 99th percentile latency.
    pub p99_us: u64,
    /// Largest latency.
    pub max_us: u64,
}

impl LatencySummary {
    /// Summarize latencies (sorts in place). Nearest-rank percentiles.
    pub fn from_latencies(latencies_us: &mut [u64]) -> LatencySummary {
        if latencies_us.is_empty() {
            return LatencySummary::default();
        }
        latencies_us.sort_unstable();
        let n = latencies_us.len();
        let rank = |p: f64| latencies_us[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        LatencySummary {
            count: n as u64,
            p50_us: rank(0.50),
            p99_us: rank(0.99),
            max_us: latencies_us[n - 1],
        }
    }
}

/// What `bare_loop` measured.
#[derive(Debug, Clone, PartialEq)]
pub struct BareLoopStats {
    /// Number of concurrent client tasks.
    pub concurrency: usize,
    /// Wall time from start until the last task finished, in milliseconds.
    pub elapsed_ms: u64,
    /// Ops completed (any outcome).
    pub ops: u64,
    /// Ops that completed `Ok`.
    pub ok: u64,
    /// Ops that completed `Fail` (including cas mismatches).
    pub fail: u64,
    /// Ops that completed `Info`.
    pub info: u64,
    /// Completed ops per second of wall time.
    pub ops_per_sec: f64,
    /// Latency over all ops.
    pub latency: LatencySummary,
    /// Latency per op function, in the order read, write, cas.
    pub latency_by_f: Vec<(String, LatencySummary)>,
    /// Up to 5 distinct non-mismatch error strings seen, for diagnosis.
    pub sample_errors: Vec<String>,
}

impl std::fmt::Display for BareLoopStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} tasks, {} ms: {} ops ({} ok, {} fail, {} info), {:.0} ops/s",
            self.concurrency,
            self.elapsed_ms,
            self.ops,
            self.ok,
            self.fail,
            self.info,
            self.ops_per_sec
        )?;
        let l = &self.latency;
        write!(
            f,
            "latency all:   p50 {} us, p99 {} us, max {} us",
            l.p50_us, l.p99_us, l.max_us
        )?;
        for (name, l) in &self.latency_by_f {
            write!(
                f,
                "\nlatency {name:<6} p50 {} us, p99 {} us, max {} us (n={})",
                l.p50_us, l.p99_us, l.max_us, l.count
            )?;
        }
        for e in &self.sample_errors {
            write!(f, "\nerror: {e}")?;
        }
        Ok(())
    }
}

/// Why `bare_loop` could not run.
#[derive(Debug, thiserror::Error)]
pub enum BareLoopError {
    /// A client could not be built.
    #[error(transparent)]
    Client(#[from] EtcdError),
    /// The arguments are unusable.
    #[error("bare loop: {0}")]
    Invalid(String),
    /// A worker task died.
    #[error("bare loop worker {worker}: {message}")]
    Worker {
        /// Index of the worker task.
        worker: usize,
        /// Why it died.
        message: String,
    },
}

/// Per-worker measurements.
#[derive(Default)]
struct WorkerResult {
    latencies_us: [Vec<u64>; 3],
    ok: u64,
    fail: u64,
    info: u64,
    errors: Vec<String>,
}

const OP_NAMES: [&str; 3] = ["read", "write", "cas"];

/// Run `concurrency` tokio tasks for `duration`, each with its own `EtcdClient` (task i bound to
/// `endpoints[i % len]`, keys under `/shakedown/bench/`), issuing a random read/write/cas mix
/// back-to-back, and report throughput and latency. Measures the client alone, without generator,
/// history or checker.
pub async fn bare_loop(
    endpoints: Vec<String>,
    concurrency: usize,
    duration: Duration,
    mix: OpMix,
) -> Result<BareLoopStats, BareLoopError> {
    if endpoints.is_empty() {
        return Err(BareLoopError::Invalid("no endpoints given".to_string()));
    }
    if concurrency == 0 {
        return Err(BareLoopError::Invalid(
            "concurrency must be positive".to_string(),
        ));
    }
    let total_weight =
        u64::from(mix.read_weight) + u64::from(mix.write_weight) + u64::from(mix.cas_weight);
    if total_weight == 0 || mix.key_count == 0 || mix.value_count == 0 {
        return Err(BareLoopError::Invalid(format!(
            "op mix needs a positive weight, key_count and value_count, got {mix:?}"
        )));
    }
    let clients = (0..concurrency)
        .map(|i| {
            EtcdClient::new(EtcdClientConfig {
                endpoint: endpoints[i % endpoints.len()].clone(),
                key_prefix: "/shakedown/bench/".to_string(),
                ..EtcdClientConfig::default()
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let start = Instant::now();
    let deadline = start + duration;
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, mut client)| {
            tokio::spawn(async move {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(i as u64);
                let mut r = WorkerResult::default();
                while Instant::now() < deadline {
                    let pick = rng.random_range(0..total_weight);
                    let fi = if pick < u64::from(mix.read_weight) {
                        0
                    } else if pick < u64::from(mix.read_weight) + u64::from(mix.write_weight) {
                        1
                    } else {
                        2
                    };
                    let key = rng.random_range(0..mix.key_count).to_string();
                    let value = match fi {
                        0 => Value::Null,
                        1 => json!(rng.random_range(0..mix.value_count)),
                        _ => json!([
                            rng.random_range(0..mix.value_count),
                            rng.random_range(0..mix.value_count)
                        ]),
                    };
                    let t0 = Instant::now();
                    let c = client.invoke(OP_NAMES[fi], Some(&key), &value).await;
                    r.latencies_us[fi].push(t0.elapsed().as_micros() as u64);
                    match &c {
                        Completion::Ok { .. } => r.ok += 1,
                        Completion::Fail { .. } => r.fail += 1,
                        Completion::Info { .. } => r.info += 1,
                    }
                    if let Some(e) = c.error()
                        && e != CAS_MISMATCH
                        && r.errors.len() < 5
                        && !r.errors.iter().any(|x| x == e)
                    {
                        r.errors.push(e.to_string());
                    }
                }
                client.close().await;
                r
            })
        })
        .collect();
    let mut results = Vec::with_capacity(tasks.len());
    for (worker, t) in tasks.into_iter().enumerate() {
        results.push(t.await.map_err(|e| BareLoopError::Worker {
            worker,
            message: e.to_string(),
        })?);
    }
    let elapsed = start.elapsed();
    let mut all = Vec::new();
    let mut by_f: [Vec<u64>; 3] = Default::default();
    let (mut ok, mut fail, mut info) = (0, 0, 0);
    let mut sample_errors: Vec<String> = Vec::new();
    for r in results {
        ok += r.ok;
        fail += r.fail;
        info += r.info;
        for (fi, lat) in r.latencies_us.into_iter().enumerate() {
            all.extend_from_slice(&lat);
            by_f[fi].extend(lat);
        }
        for e in r.errors {
            if sample_errors.len() < 5 && !sample_errors.contains(&e) {
                sample_errors.push(e);
            }
        }
    }
    let ops = ok + fail + info;
    Ok(BareLoopStats {
        concurrency,
        elapsed_ms: elapsed.as_millis() as u64,
        ops,
        ok,
        fail,
        info,
        ops_per_sec: ops as f64 / elapsed.as_secs_f64().max(1e-9),
        latency: LatencySummary::from_latencies(&mut all),
        latency_by_f: OP_NAMES
            .iter()
            .zip(by_f.iter_mut())
            .map(|(name, lat)| (name.to_string(), LatencySummary::from_latencies(lat)))
            .collect(),
        sample_errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_percentiles_nearest_rank() {
        let mut l: Vec<u64> = (1..=100).rev().collect();
        let s = LatencySummary::from_latencies(&mut l);
        assert_eq!(
            s,
            LatencySummary {
                count: 100,
                p50_us: 50,
                p99_us: 99,
                max_us: 100
            }
        );
        assert_eq!(
            LatencySummary::from_latencies(&mut []),
            LatencySummary::default()
        );
    }
}
