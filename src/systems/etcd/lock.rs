//! etcd client of the lock workloads (`lock`, `fenced-lock`; vocabulary in `generator::lock`),
//! with etcd's own primitives, as applications use them.
//!
//! Owns mapping lock ops onto etcd requests and their completions. Keys, under the run's key
//! prefix: `lock/{L}` (the lock), `fence/{L}` (the greatest token the resource accepted, 20-digit
//! zero-padded decimal so etcd's byte-wise compare is numeric), `res/{L}` (the resource).
//! - `lock-acquire` (`ttl_ms`): `POST /v3/lease/grant` (TTL = ⌈ttl_ms / 1000⌉ s; etcd raises it
//!   to its minimum, 2 s with default timing), then a txn `if CREATE(lock/L) == 0 then put
//!   lock/L with the lease` → ok `{"token": revision}`: the key's create revision, the fencing
//!   token (monotonic per key). Compare failed → `fail` (held by another; the lease is revoked).
//!   A failed grant is `fail` (nothing taken); a txn error is classified as for a write.
//! - `lock-write`: a plain put of the value to `res/L` (no check: the resource trusts the lock).
//! - `fenced-write` (`token` t): txn `if VALUE(fence/L) < pad(t + 1) then put fence/L = pad(t),
//!   res/L = v else range fence/L`; when `fence/L` does not exist yet (the range is empty) a
//!   second txn `if CREATE(fence/L) == 0 then put both` creates it. Refused → `fail` with
//!   `stale-token`.
//! - After every protected write the lease is kept alive (`POST /v3/lease/keepalive`, in the
//!   background), as a
//!   client library's keep-alive loop would: the refresh never gates a write, so a holder that
//!   stalled past its TTL (the `stall` nemesis) writes without knowing it lost the lock.
//! - `lock-release`: `POST /v3/lease/revoke` of the lease this client holds for L (deleting the
//!   key); "lease not found" (it expired) and no lease at all are `ok`: nothing is held.
//!
//! Does not own decoding errors (`wire`), HTTP (`client::EtcdClient`) or checking (`checker::lock`).

use super::client::{EtcdClient, TIMEOUT_SLACK_MS};
use super::wire::EtcdError;
use crate::client::{Client, Completion};
use crate::generator::lock::{
    ACQUIRE, FENCED_WRITE, RELEASE, STALE_TOKEN, TOKEN, TTL_MS, VALUE, WRITE,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

/// The error of an acquire whose lock another holder has.
pub const LOCK_HELD: &str = "lock-held";

/// A token as etcd compares it: 20-digit zero-padded decimal.
fn pad(token: i64) -> String {
    format!("{:020}", token.max(0))
}

fn b64(s: &str) -> String {
    B64.encode(s)
}

fn int_field(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => s.parse().ok(),
        v => v.as_i64(),
    }
}

/// The lock client of one worker thread.
pub struct EtcdLockClient {
    etcd: EtcdClient,
    /// Lease this client holds (or may hold) per lock.
    leases: HashMap<String, i64>,
}

impl EtcdLockClient {
    /// A lock client over `etcd` (its member, timeout and key prefix).
    pub fn new(etcd: EtcdClient) -> EtcdLockClient {
        EtcdLockClient {
            etcd,
            leases: HashMap::new(),
        }
    }

    fn key(&self, segment: &str, lock: &str) -> String {
        self.etcd.full_key(Some(&format!("{segment}/{lock}")))
    }

    fn invalid(&self, message: String) -> EtcdError {
        EtcdError::Invalid {
            endpoint: self.etcd.endpoint().to_string(),
            message,
        }
    }

    async fn acquire(&mut self, lock: &str, value: &Value) -> Completion {
        let ttl_s = value[TTL_MS].as_u64().unwrap_or(2000).div_ceil(1000).max(1);
        let grant = match self
            .etcd
            .post_json("/v3/lease/grant", &json!({ "TTL": ttl_s }))
            .await
        {
            // The lock txn was never sent: whatever the grant did, nothing is held.
            Err(e) => return fail(e, value),
            Ok(g) => g,
        };
        let Some(lease) = int_field(&grant["ID"]) else {
            return fail(
                self.invalid(format!("lease grant gave no ID: {grant}")),
                value,
            );
        };
        self.leases.insert(lock.to_string(), lease);
        let k = b64(&self.key("lock", lock));
        let txn = json!({
            "compare": [{ "key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0" }],
            "success": [{ "request_put": { "key": k, "value": b64(&lease.to_string()), "lease": lease.to_string() } }],
        });
        match self.etcd.post_json("/v3/kv/txn", &txn).await {
            Err(e) => write_error(e, value),
            Ok(r) if r["succeeded"].as_bool() == Some(true) => {
                match int_field(&r["header"]["revision"]) {
                    Some(token) => Completion::Ok {
                        value: json!({ TOKEN: token }),
                        version: Some(token),
                    },
                    // It was acquired, but the token is unreadable: say so, not ok.
                    None => Completion::Info {
                        error: format!("lock txn succeeded without a revision: {r}"),
                    },
                }
            }
            Ok(_) => {
                self.revoke(lock).await.ok();
                Completion::Fail {
                    error: LOCK_HELD.into(),
                    value: value.clone(),
                }
            }
        }
    }

    /// Refresh the lease of `lock` in the background (the write's outcome never waits for it).
    fn keep_alive(&self, lock: &str) {
        if let Some(lease) = self.leases.get(lock) {
            let (etcd, body) = (self.etcd.clone(), json!({ "ID": lease.to_string() }));
            tokio::spawn(async move {
                let _ = etcd.post_json("/v3/lease/keepalive", &body).await;
            });
        }
    }

    async fn write(&mut self, lock: &str, value: &Value) -> Completion {
        let Some(v) = value[VALUE].as_i64() else {
            return fail(
                self.invalid(format!("{WRITE}: value {value} has no integer {VALUE}")),
                value,
            );
        };
        let req = json!({ "key": b64(&self.key("res", lock)), "value": b64(&v.to_string()) });
        let c = match self.etcd.post_json("/v3/kv/put", &req).await {
            Ok(r) => Completion::Ok {
                value: value.clone(),
                version: int_field(&r["header"]["revision"]),
            },
            Err(e) => write_error(e, value),
        };
        self.keep_alive(lock);
        c
    }

    async fn fenced_write(&mut self, lock: &str, value: &Value) -> Completion {
        let (Some(v), Some(token)) = (value[VALUE].as_i64(), value[TOKEN].as_i64()) else {
            return fail(
                self.invalid(format!(
                    "{FENCED_WRITE}: value {value} needs integer {VALUE} and {TOKEN}"
                )),
                value,
            );
        };
        let (fence, res) = (b64(&self.key("fence", lock)), b64(&self.key("res", lock)));
        let puts = json!([
            { "request_put": { "key": fence, "value": b64(&pad(token)) } },
            { "request_put": { "key": res, "value": b64(&v.to_string()) } },
        ]);
        let guarded = json!({
            "compare": [{ "key": fence, "target": "VALUE", "result": "LESS", "value": b64(&pad(token.saturating_add(1))) }],
            "success": puts,
            "failure": [{ "request_range": { "key": fence } }],
        });
        let c = match self.etcd.post_json("/v3/kv/txn", &guarded).await {
            Err(e) => write_error(e, value),
            Ok(r) if r["succeeded"].as_bool() == Some(true) => ok_write(value, &r),
            Ok(r) => {
                let exists = r["responses"][0]["response_range"]["kvs"]
                    .as_array()
                    .is_some_and(|kvs| !kvs.is_empty());
                if exists {
                    Completion::Fail {
                        error: STALE_TOKEN.into(),
                        value: value.clone(),
                    }
                } else {
                    self.first_fenced_write(&fence, puts, value).await
                }
            }
        };
        self.keep_alive(lock);
        c
    }

    /// The first fenced write of a lock: create the fence key if it still does not exist.
    async fn first_fenced_write(&self, fence: &str, puts: Value, value: &Value) -> Completion {
        let create = json!({
            "compare": [{ "key": fence, "target": "CREATE", "result": "EQUAL", "create_revision": "0" }],
            "success": puts,
        });
        match self.etcd.post_json("/v3/kv/txn", &create).await {
            Err(e) => write_error(e, value),
            Ok(r) if r["succeeded"].as_bool() == Some(true) => ok_write(value, &r),
            // Another writer created the fence in between: this write was not applied; its
            // token was not checked against it, so it is a plain definite failure.
            Ok(_) => Completion::Fail {
                error: "fence-created-concurrently".into(),
                value: value.clone(),
            },
        }
    }

    async fn revoke(&mut self, lock: &str) -> Result<(), EtcdError> {
        let Some(lease) = self.leases.remove(lock) else {
            return Ok(());
        };
        match self
            .etcd
            .post_json("/v3/lease/revoke", &json!({ "ID": lease.to_string() }))
            .await
        {
            Ok(_) => Ok(()),
            // Expired already: the key is gone with it.
            Err(EtcdError::Server { grpc_code: 5, .. }) => Ok(()),
            Err(e) => {
                self.leases.insert(lock.to_string(), lease);
                Err(e)
            }
        }
    }

    async fn release(&mut self, lock: &str, value: &Value) -> Completion {
        match self.revoke(lock).await {
            Ok(()) => Completion::Ok {
                value: value.clone(),
                version: None,
            },
            Err(e) => write_error(e, value),
        }
    }

    async fn invoke_inner(&mut self, f: &str, lock: &str, value: &Value) -> Completion {
        match f {
            ACQUIRE => self.acquire(lock, value).await,
            WRITE => self.write(lock, value).await,
            FENCED_WRITE => self.fenced_write(lock, value).await,
            RELEASE => self.release(lock, value).await,
            other => fail(
                self.invalid(format!("the lock client has no op {other:?}")),
                value,
            ),
        }
    }
}

fn ok_write(value: &Value, r: &Value) -> Completion {
    Completion::Ok {
        value: value.clone(),
        version: int_field(&r["header"]["revision"]),
    }
}

fn fail(e: EtcdError, value: &Value) -> Completion {
    Completion::Fail {
        error: e.to_completion_error(),
        value: value.clone(),
    }
}

fn write_error(e: EtcdError, value: &Value) -> Completion {
    if e.definitely_not_applied() {
        fail(e, value)
    } else {
        Completion::Info {
            error: e.to_completion_error(),
        }
    }
}

#[async_trait::async_trait]
impl Client for EtcdLockClient {
    async fn invoke(&mut self, f: &str, key: Option<&str>, value: &Value) -> Completion {
        let Some(lock) = key else {
            return fail(
                self.invalid(format!("{f}: a lock op needs a key (the lock)")),
                value,
            );
        };
        // One budget for the whole op (an acquire is two requests, a first fenced write two).
        let guard = Duration::from_millis(self.etcd.config().timeout_ms + TIMEOUT_SLACK_MS);
        match tokio::time::timeout(guard, self.invoke_inner(f, lock, value)).await {
            Ok(c) => c,
            Err(_) => Completion::Info {
                error: format!(
                    "etcd {}: {f} on {lock} got no answer within {} ms",
                    self.etcd.endpoint(),
                    guard.as_millis()
                ),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_tokens_compare_like_numbers() {
        assert!(pad(9) < pad(10));
        assert!(pad(99_999) < pad(100_000));
        assert_eq!(pad(7).len(), 20);
        assert_eq!(pad(-3), pad(0));
    }

    #[test]
    fn int64_fields_come_as_strings_or_numbers() {
        assert_eq!(int_field(&json!("42")), Some(42));
        assert_eq!(int_field(&json!(42)), Some(42));
        assert_eq!(int_field(&json!(null)), None);
    }
}
