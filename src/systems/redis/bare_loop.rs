//! `bare_loop`: a client-only load loop straight on the `redis` crate — what an application
//! without a harness gets — for `shakedown bench --db redis`: no generator, no history, no
//! checker, no shakedown client (no Sentinel lookup, no classification): one multiplexed
//! connection per task to the primary, the same read/write/cas mix (`HMGET`, the client's write
//! and cas Lua scripts) over the same key space as the register workload.
//!
//! Owns only the loop. The comparison with a full run is `bench`; the op mix and statistics
//! types are shared with etcd's loop (`systems::etcd::bare_loop`).

use super::client::{CAS_LUA, WRITE_LUA};
use crate::systems::etcd::bare_loop::{BareLoopError, BareLoopStats, LatencySummary, OpMix};
use rand::RngExt;
use rand::SeedableRng;
use std::time::{Duration, Instant};

const OP_NAMES: [&str; 3] = ["read", "write", "cas"];

#[derive(Default)]
struct WorkerResult {
    ok: u64,
    fail: u64,
    latencies_us: [Vec<u64>; 3],
    errors: Vec<String>,
}

/// Run `concurrency` tokio tasks for `duration` against the Redis primary at `host:port`, each
/// issuing the `mix` back-to-back on its own connection, and report throughput and latency.
pub async fn bare_loop(
    host: &str,
    port: u16,
    concurrency: usize,
    duration: Duration,
    mix: OpMix,
) -> Result<BareLoopStats, BareLoopError> {
    let total_weight =
        u64::from(mix.read_weight) + u64::from(mix.write_weight) + u64::from(mix.cas_weight);
    if concurrency == 0 || total_weight == 0 || mix.key_count == 0 || mix.value_count == 0 {
        return Err(BareLoopError::Invalid(format!(
            "needs a positive concurrency, weight, key_count and value_count, got {concurrency} and {mix:?}"
        )));
    }
    let client = redis::Client::open((host, port))
        .map_err(|e| BareLoopError::Invalid(format!("{host}:{port}: {e}")))?;
    let mut conns = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        conns.push(
            client
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| BareLoopError::Invalid(format!("connecting to {host}:{port}: {e}")))?,
        );
    }
    let start = Instant::now();
    let deadline = start + duration;
    let tasks: Vec<_> = conns
        .into_iter()
        .enumerate()
        .map(|(i, mut conn)| {
            tokio::spawn(async move {
                let write = redis::Script::new(WRITE_LUA);
                let cas = redis::Script::new(CAS_LUA);
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
                    let key = format!("shakedown:bench:{}", rng.random_range(0..mix.key_count));
                    let t0 = Instant::now();
                    let done: Result<(), redis::RedisError> = match fi {
                        0 => redis::cmd("HMGET")
                            .arg(&key)
                            .arg("value")
                            .arg("version")
                            .query_async::<(Option<String>, Option<i64>)>(&mut conn)
                            .await
                            .map(drop),
                        1 => write
                            .key(&key)
                            .arg(rng.random_range(0..mix.value_count))
                            .invoke_async::<i64>(&mut conn)
                            .await
                            .map(drop),
                        _ => cas
                            .key(&key)
                            .arg(rng.random_range(0..mix.value_count))
                            .arg(rng.random_range(0..mix.value_count))
                            .invoke_async::<i64>(&mut conn)
                            .await
                            .map(drop),
                    };
                    r.latencies_us[fi].push(t0.elapsed().as_micros() as u64);
                    match done {
                        Ok(()) => r.ok += 1,
                        Err(e) => {
                            r.fail += 1;
                            if r.errors.len() < 5 {
                                r.errors.push(e.to_string());
                            }
                        }
                    }
                }
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
    let (mut ok, mut fail) = (0, 0);
    let mut all = Vec::new();
    let mut by_f: [Vec<u64>; 3] = Default::default();
    let mut sample_errors: Vec<String> = Vec::new();
    for r in results {
        ok += r.ok;
        fail += r.fail;
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
    let ops = ok + fail;
    Ok(BareLoopStats {
        concurrency,
        elapsed_ms: elapsed.as_millis() as u64,
        ops,
        ok,
        fail,
        info: 0,
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
