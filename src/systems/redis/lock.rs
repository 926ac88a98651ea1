//! Redis client of the lock workloads (`lock`, `fenced-lock`; vocabulary in `generator::lock`):
//! the single-instance Redis lock pattern, on the primary the Sentinels name.
//!
//! Owns mapping lock ops onto Redis commands and scripts and their completions. Keys, under the
//! run's key prefix: `lock:{L}` (the lock), `lock:{L}:token` (the token counter), `fence:{L}`
//! (greatest token the resource accepted), `res:{L}` (the resource).
//! - `lock-acquire` (`ttl_ms`): one script — `SET lock:L holder NX PX ttl`, and when it was
//!   set, `INCR lock:L:token` → ok `{"token": n}`; not set → `fail` `lock-held`. `holder` is
//!   unique per acquire (client id + counter). The key's expiry runs on the server's wall clock,
//!   which a clock step on the primary moves (the sandbox's clock shim is loaded in
//!   redis-server): a forward step past the TTL expires the lock early.
//! - `lock-write`: `SET res:L v` (the resource trusts the lock).
//! - `fenced-write` (`token` t): one script — if t ≥ `fence:L` (absent = 0) then set `fence:L` =
//!   t and `res:L` = v, else refuse → `fail` `stale-token`.
//! - `lock-release`: compare-and-delete script (`DEL lock:L` only if it still holds this
//!   client's holder value) → ok whether or not it still held it.
//!
//! Errors are classified as the register client's (`client`'s table): not sent or a server
//! error reply → `fail`; lost after sending → `info`. Does not own finding the primary or
//! connections (`client::RedisClient`), nor checking (`checker::lock`).

use super::client::{RedisClient, describe, is_server_reply};
use crate::client::{Client, Completion};
use crate::generator::lock::{
    ACQUIRE, FENCED_WRITE, RELEASE, STALE_TOKEN, TOKEN, TTL_MS, VALUE, WRITE,
};
use redis::RedisError;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

/// The error of an acquire whose lock another holder has.
pub const LOCK_HELD: &str = "lock-held";

/// Acquire: set the lock key if absent with a TTL; when set, the next token.
pub const ACQUIRE_LUA: &str = r"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0";

/// Release: delete the lock only if it still holds this holder's value.
pub const RELEASE_LUA: &str = r"if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0";

/// Fenced write: accept only a token at least the greatest accepted so far.
pub const FENCED_WRITE_LUA: &str = r"local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) >= cur then
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('SET', KEYS[2], ARGV[2])
  return 1
end
return 0";

/// The lock client of one worker thread.
pub struct RedisLockClient {
    redis: RedisClient,
    /// Distinguishes this client's holder values from every other client's.
    id: String,
    /// Acquires so far (makes holder values unique per acquire).
    acquires: u64,
    /// The holder value this client set (or may have set) per lock.
    holders: HashMap<String, String>,
    acquire: redis::Script,
    release: redis::Script,
    fenced: redis::Script,
}

/// Why a command did not complete.
struct Failure {
    error: String,
    sent: bool,
    server_reply: bool,
    node: Option<usize>,
}

impl RedisLockClient {
    /// A lock client over `redis` (its primary discovery, timeout and key prefix); `thread`
    /// makes holder values unique.
    pub fn new(redis: RedisClient, thread: usize) -> RedisLockClient {
        RedisLockClient {
            id: format!("{}t{thread}", redis.config().key_prefix),
            redis,
            acquires: 0,
            holders: HashMap::new(),
            acquire: redis::Script::new(ACQUIRE_LUA),
            release: redis::Script::new(RELEASE_LUA),
            fenced: redis::Script::new(FENCED_WRITE_LUA),
        }
    }

    fn key(&self, what: &str, lock: &str) -> String {
        format!("{}{what}:{lock}", self.redis.config().key_prefix)
    }

    /// A connection to the current primary; nothing was sent when this fails.
    async fn primary(&mut self) -> Result<(usize, redis::aio::MultiplexedConnection), Failure> {
        self.redis
            .primary_connection()
            .await
            .map_err(|error| Failure {
                error,
                sent: false,
                server_reply: false,
                node: None,
            })
    }

    /// Run one script on the primary.
    async fn script(
        &mut self,
        script: &redis::Script,
        keys: &[String],
        args: &[String],
    ) -> Result<i64, Failure> {
        let (i, mut conn) = self.primary().await?;
        let mut inv = script.prepare_invoke();
        for k in keys {
            inv.key(k);
        }
        for a in args {
            inv.arg(a);
        }
        inv.invoke_async(&mut conn)
            .await
            .map_err(|e: RedisError| Failure {
                error: format!("{}: {}", self.redis.label(i), describe(&e)),
                sent: true,
                server_reply: is_server_reply(&e),
                node: Some(i),
            })
    }

    fn failed(&mut self, f: Failure, value: &Value) -> Completion {
        if let Some(i) = f.node {
            self.redis.forget(i, f.server_reply);
        }
        if !f.sent || f.server_reply {
            Completion::Fail {
                error: f.error,
                value: value.clone(),
            }
        } else {
            Completion::Info { error: f.error }
        }
    }

    async fn invoke_inner(&mut self, f: &str, lock: &str, value: &Value) -> Completion {
        let ok = |v: Value| Completion::Ok {
            value: v,
            version: None,
        };
        let bad = |m: String| Completion::Fail {
            error: m,
            value: value.clone(),
        };
        match f {
            ACQUIRE => {
                let ttl_ms = value[TTL_MS].as_u64().unwrap_or(2000).max(1);
                self.acquires += 1;
                let holder = format!("{}:{}", self.id, self.acquires);
                self.holders.insert(lock.to_string(), holder.clone());
                let keys = [self.key("lock", lock), self.key("lock", lock) + ":token"];
                let script = self.acquire.clone();
                match self
                    .script(&script, &keys, &[holder, ttl_ms.to_string()])
                    .await
                {
                    Ok(token) if token > 0 => Completion::Ok {
                        value: json!({ TOKEN: token }),
                        version: Some(token),
                    },
                    Ok(_) => {
                        self.holders.remove(lock);
                        bad(LOCK_HELD.into())
                    }
                    Err(e) => self.failed(e, value),
                }
            }
            WRITE | FENCED_WRITE => {
                let Some(v) = value[VALUE].as_i64() else {
                    return bad(format!("{f}: value {value} has no integer {VALUE}"));
                };
                let (fence, res) = (self.key("fence", lock), self.key("res", lock));
                let result = if f == WRITE {
                    let res_key = res.clone();
                    self.set(&res_key, v).await.map(|_| 1)
                } else {
                    let Some(token) = value[TOKEN].as_i64() else {
                        return bad(format!("{f}: value {value} has no integer {TOKEN}"));
                    };
                    let script = self.fenced.clone();
                    self.script(&script, &[fence, res], &[token.to_string(), v.to_string()])
                        .await
                };
                match result {
                    Ok(1) => ok(value.clone()),
                    Ok(_) => bad(STALE_TOKEN.into()),
                    Err(e) => self.failed(e, value),
                }
            }
            RELEASE => {
                let Some(holder) = self.holders.get(lock).cloned() else {
                    return ok(value.clone());
                };
                let script = self.release.clone();
                match self
                    .script(&script, &[self.key("lock", lock)], &[holder])
                    .await
                {
                    Ok(_) => {
                        self.holders.remove(lock);
                        ok(value.clone())
                    }
                    Err(e) => self.failed(e, value),
                }
            }
            other => bad(format!("the lock client has no op {other:?}")),
        }
    }

    async fn set(&mut self, key: &str, v: i64) -> Result<(), Failure> {
        let (i, mut conn) = self.primary().await?;
        redis::cmd("SET")
            .arg(key)
            .arg(v)
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| Failure {
                error: format!("{}: {}", self.redis.label(i), describe(&e)),
                sent: true,
                server_reply: is_server_reply(&e),
                node: Some(i),
            })
    }
}

#[async_trait::async_trait]
impl Client for RedisLockClient {
    async fn invoke(&mut self, f: &str, key: Option<&str>, value: &Value) -> Completion {
        let Some(lock) = key else {
            return Completion::Fail {
                error: format!("{f}: a lock op needs a key (the lock)"),
                value: value.clone(),
            };
        };
        let timeout = Duration::from_millis(self.redis.config().timeout_ms);
        match tokio::time::timeout(timeout, self.invoke_inner(f, lock, value)).await {
            Ok(c) => c,
            Err(_) => Completion::Info {
                error: format!(
                    "redis primary: {f} on {lock} timed out after {} ms",
                    timeout.as_millis()
                ),
            },
        }
    }

    async fn close(&mut self) {
        self.redis.close().await;
    }
}
