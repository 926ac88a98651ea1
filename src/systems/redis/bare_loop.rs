//! `bare_loop`: a client-only load loop straight on the `redis` crate — what an application
//! without a harness gets — for `shakedown bench --db redis`: no generator, no history, no
//! checker, no shakedown client (no Sentinel lookup, no classification): one multiplexed
//! connection per task to the primary, the same read/write/cas mix (`HMGET`, the client's write
//! and cas Lua scripts) and the register workload's key pattern ([`KeyRotation`]: clients in
//! groups, each group on one key until it has issued its ops there, then on a fresh one), so
//! the server does the same work on both sides (fresh keys cost Redis, its replicas and their
//! append-only files more than overwrites of a few).
//!
//! Owns only the loop. The comparison with a full run is `bench`; the op mix, the workers'
//! measurements and the statistics are shared with etcd's loop (`systems::bare_loop`).

use super::client::{CAS_LUA, WRITE_LUA};
use crate::systems::bare_loop::{self, BareLoopError, BareLoopStats, OpMix, WorkerResult};
use rand::RngExt;
use rand::SeedableRng;
use std::time::{Duration, Instant};

/// Which key each bare client uses, as the register workload picks them: client `i` is in
/// group `i / threads_per_key`; a group stays on one key for `ops_per_key` ops (each of its
/// clients issues its share), then moves to a key no group has used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRotation {
    /// Clients per key group.
    pub threads_per_key: usize,
    /// Ops a group issues on one key before moving on.
    pub ops_per_key: u64,
}

impl KeyRotation {
    /// The key index client `client` (of `concurrency`) uses for its `n`th op (from 0).
    pub fn key_index(&self, client: usize, concurrency: usize, n: u64) -> u64 {
        let per_group = self.threads_per_key.max(1);
        let groups = concurrency.div_ceil(per_group).max(1) as u64;
        let group = (client / per_group) as u64;
        // Each client issues its share of the group's ops on a key.
        let share = (self.ops_per_key / per_group as u64).max(1);
        group + groups * (n / share)
    }
}

/// Run `concurrency` tokio tasks for `duration` against the Redis primary at `host:port`, each
/// issuing the `mix` back-to-back on its own connection, on keys picked by `keys` (or, without
/// it, uniformly from `mix.key_count`), and report throughput and latency.
pub async fn bare_loop(
    host: &str,
    port: u16,
    concurrency: usize,
    duration: Duration,
    mix: OpMix,
    keys: Option<KeyRotation>,
) -> Result<BareLoopStats, BareLoopError> {
    if concurrency == 0 || mix.total_weight() == 0 || mix.key_count == 0 || mix.value_count == 0 {
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
                let mut n = 0u64;
                while Instant::now() < deadline {
                    let fi = mix.pick(&mut rng);
                    let k = match keys {
                        Some(rot) => rot.key_index(i, concurrency, n),
                        None => u64::from(rng.random_range(0..mix.key_count)),
                    };
                    n += 1;
                    let key = format!("shakedown:bench:{k}");
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
    bare_loop::join(tasks, concurrency, start).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_rotation_moves_each_group_to_a_fresh_key_after_its_ops() {
        let rot = KeyRotation {
            threads_per_key: 2,
            ops_per_key: 100,
        };
        // 10 clients: 5 groups; clients 0 and 1 share key 0, clients 8 and 9 key 4.
        assert_eq!(rot.key_index(0, 10, 0), 0);
        assert_eq!(rot.key_index(1, 10, 49), 0);
        assert_eq!(rot.key_index(9, 10, 0), 4);
        // After 50 ops each (100 for the group) both move on, to keys no group has used.
        assert_eq!(rot.key_index(0, 10, 50), 5);
        assert_eq!(rot.key_index(1, 10, 50), 5);
        assert_eq!(rot.key_index(9, 10, 149), 14);
        // An odd concurrency leaves a group of one; a group larger than ops_per_key still moves.
        assert_eq!(rot.key_index(4, 5, 0), 2);
        let tiny = KeyRotation {
            threads_per_key: 4,
            ops_per_key: 2,
        };
        assert_eq!(tiny.key_index(0, 4, 1), 1);
    }
}
