//! `bare_loop`: a client-only load loop over etcd, used by `shakedown bench` (and the
//! etcd_client benchmark) to measure the client's own throughput and latency without generator,
//! history or checker.
//!
//! Owns the loop over our etcd client. Does not own the client (`client`), the op mix and the
//! statistics (`systems::bare_loop`, shared with Redis's loop) or the comparison with a full run
//! (`bench`).

use super::client::{EtcdClient, EtcdClientConfig};
use crate::client::{Client, Completion};
use crate::model::CAS_MISMATCH;
use crate::systems::bare_loop::{self, OP_NAMES, WorkerResult};
pub use crate::systems::bare_loop::{BareLoopError, BareLoopStats, LatencySummary, OpMix};
use rand::RngExt;
use rand::SeedableRng;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

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
    if mix.total_weight() == 0 || mix.key_count == 0 || mix.value_count == 0 {
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
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| BareLoopError::Client(Box::new(e)))?;
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
                    let fi = mix.pick(&mut rng);
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
    bare_loop::join(tasks, concurrency, start).await
}
