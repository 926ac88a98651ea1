//! What the bare client loops of `shakedown bench` share (etcd's through our client, Redis's
//! straight on the `redis` crate): the op mix and its weighted draw, one worker's measurements,
//! and joining the workers into throughput and latency statistics. Does not own a loop (each
//! system's `bare_loop`) nor the comparison with a full run (`bench`).

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::time::Instant;
use tokio::task::JoinHandle;

/// The op functions of a bare loop, indexed by [`OpMix::pick`].
pub const OP_NAMES: [&str; 3] = ["read", "write", "cas"];

/// Op mix and key space of a bare loop.
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

impl OpMix {
    /// The sum of the three weights.
    pub fn total_weight(&self) -> u64 {
        u64::from(self.read_weight) + u64::from(self.write_weight) + u64::from(self.cas_weight)
    }

    /// Draw the next op by weight: an index of [`OP_NAMES`] (0 read, 1 write, 2 cas).
    /// `total_weight` must be positive.
    pub fn pick(&self, rng: &mut ChaCha8Rng) -> usize {
        let pick = rng.random_range(0..self.total_weight());
        if pick < u64::from(self.read_weight) {
            0
        } else if pick < u64::from(self.read_weight) + u64::from(self.write_weight) {
            1
        } else {
            2
        }
    }
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

/// What a bare loop measured.
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

/// Why a bare loop could not run.
#[derive(Debug, thiserror::Error)]
pub enum BareLoopError {
    /// A client could not be built (the loop's own client's error: etcd's `EtcdError`).
    #[error("{0}")]
    Client(Box<dyn std::error::Error + Send + Sync>),
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

/// One worker task's measurements.
#[derive(Default)]
pub struct WorkerResult {
    /// Latencies per op function ([`OP_NAMES`] order), in microseconds.
    pub latencies_us: [Vec<u64>; 3],
    /// Ops that completed `Ok`.
    pub ok: u64,
    /// Ops that failed.
    pub fail: u64,
    /// Ops whose outcome is unknown.
    pub info: u64,
    /// Error strings seen (a loop keeps at most 5).
    pub errors: Vec<String>,
}

/// Wait for every worker started at `start` and sum what they measured.
pub async fn join(
    tasks: Vec<JoinHandle<WorkerResult>>,
    concurrency: usize,
    start: Instant,
) -> Result<BareLoopStats, BareLoopError> {
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

    use rand::SeedableRng;

    #[test]
    fn picks_follow_the_weights() {
        let mix = OpMix {
            read_weight: 0,
            write_weight: 1,
            cas_weight: 0,
            ..OpMix::default()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert!((0..50).all(|_| mix.pick(&mut rng) == 1));
        let mut seen = [0; 3];
        for _ in 0..300 {
            seen[OpMix::default().pick(&mut rng)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
    }

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
