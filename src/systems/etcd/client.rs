//! etcd v3 client for the register, list-append and set workloads, over etcd's JSON gRPC gateway.
//!
//! Owns: talking to etcd members (`POST /v3/kv/range`, `/v3/kv/put`, `/v3/kv/txn`,
//! `GET /health`) over keep-alive HTTP/1.1, mapping register ops (`read`, `write`, `cas`) and
//! list-append ops (`append`, `read`) onto etcd requests, choosing the member of each read, and
//! turning every outcome into a completion (`Fail` = definitely not applied, `Info` = unknown).
//! Does not own decoding the gateway's JSON and classifying its errors (`wire`), the client-only
//! load loop (`bare_loop`), starting or stopping etcd (`db`) or history writing. The only
//! retries are an append's compare-and-put retries (below); every other op is one attempt.
//!
//! Set semantics (`with_set_reads`, the set workload): element `e` of set `k` is its own etcd
//! key `{key_prefix}set/{k}/{e}`. `add` e → Put → `Ok { value: e, version: header.revision }`,
//! errors classified as for a write; `read` → one Range over the set's prefix (keys only, the
//! configured read mode) → `Ok { value: [elements] }`.
//!
//! Register semantics: values are integers stored as decimal text under
//! `key_prefix + key` (`key_prefix` alone when the op has no key).
//! - `read`, value null → `Ok { value: int | null (absent key), version: mod_revision | None }`.
//! - `write`, value v → Put → `Ok { value: v, version: header.revision }`.
//! - `cas`, value `[old, new]` → Txn(if VALUE == old then Put new) → `Ok { value: [old, new],
//!   version: header.revision }` when it succeeded, otherwise `Fail { error: "cas-mismatch" }`
//!   (a definite negative: the txn was applied and saw a value other than `old`, or no key).
//!
//! List-append semantics: a key holds a JSON list of integers as text (`[1,2,3]`).
//! - `read` → `Ok { value: list | null (absent key), version: mod_revision | None }` (a read
//!   decodes whatever the key holds: a decimal integer or a list of integers).
//! - `append`, value e → a linearizable Range of the key on this client's own member, then
//!   Txn(if MOD(key) == the mod_revision read, 0 when absent, then Put list + [e]) →
//!   `Ok { value: e, version: header.revision }`. When the compare fails (another writer got in
//!   between) nothing was written and the append retries, up to `APPEND_ATTEMPTS` attempts
//!   within the op's one timeout; if all lose, `Fail { error: "append-conflict: …" }` — a
//!   definite negative (no attempt applied). An error before any txn was sent (the first
//!   pre-read) is `Fail`; after one, it is classified as for a write. The op's overall timeout
//!   guard firing is `Info`.
//!
//! Where ops go: writes, cas and appends always go to the client's own member (`endpoint`), so a
//! session's writes have one home. Reads go there too, unless the client was given read
//! endpoints (`EtcdClient::with_read_endpoints`, the run's `--read-from any`): then each read goes
//! to a member chosen uniformly at random (seeded), so one session's reads move between members —
//! what monotonic reads is about. With `--read-mode serializable` such reads are answered from
//! each member's local state and may go back in time; linearizable reads may not.
//!
//! Error classification (`EtcdError::definitely_not_applied`). Reads never change state, so every
//! read error is `Fail`. For `write` and `cas`:
//!
//! | error                                                                  | completion |
//! |------------------------------------------------------------------------|------------|
//! | invalid op or argument (never sent)                                    | Fail       |
//! | connect error: refused, unreachable, DNS, connect timeout (not sent)   | Fail       |
//! | timeout after the connection was established (request may be sent)     | Info       |
//! | connection reset or closed, body error, after sending                  | Info       |
//! | gRPC code 3 InvalidArgument: gateway JSON errors, request validation,  | Fail       |
//! |   "request is too large", "duplicate key given in txn request"         |            |
//! | gRPC code 7 PermissionDenied, 12 Unimplemented, 16 Unauthenticated     | Fail       |
//! | "etcdserver: too many requests" (rejected before proposing)            | Fail       |
//! | "raft proposal dropped" (no leader or leader transfer; not proposed)   | Fail       |
//! | "etcdserver: mvcc: database space exceeded" (quota check, or applied   | Fail       |
//! |   as a no-op under the NOSPACE alarm)                                  |            |
//! | "etcdserver: no leader", "etcdserver: not capable",                    | Fail       |
//! |   "etcdserver: rpc not supported for learner" (interceptor checks)     |            |
//! | "etcdserver: request timed out" (all variants), "leader changed",      | Info       |
//! |   "server stopped", "context canceled", "context deadline exceeded",   |            |
//! |   any other gRPC or HTTP error with a gateway body                     |            |
//! | a response that cannot be decoded (raw body kept, truncated)           | Info       |
//!
//! The definite server errors are those etcd returns before handing the request to raft
//! (`processInternalRaftRequestOnce`, the gRPC interceptors, request validation) or that are
//! applied as no-ops; everything that may have been proposed is `Info`.

use super::wire::*;
pub use super::wire::{CasOutcome, EtcdError};
use crate::client::{Client, Completion, WorkloadOp};
use crate::model::CAS_MISMATCH;
use crate::options::ReadMode;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use rand::RngExt;
use rand::SeedableRng;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Extra time allowed beyond `timeout_ms` before `invoke` gives up on its own (the HTTP client's
/// timeout normally fires first).
pub const TIMEOUT_SLACK_MS: u64 = 250;

/// How to reach one etcd member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdClientConfig {
    /// Client URL of the member, e.g. `http://10.78.0.1:2379` (plain HTTP only).
    pub endpoint: String,
    /// Consistency of `read` ops.
    pub read_mode: ReadMode,
    /// Total time allowed per request (connect + send + response), in milliseconds.
    pub timeout_ms: u64,
    /// Prefix prepended to op keys, e.g. `/shakedown/register/`.
    pub key_prefix: String,
}

impl Default for EtcdClientConfig {
    fn default() -> Self {
        EtcdClientConfig {
            endpoint: "http://127.0.0.1:2379".to_string(),
            read_mode: ReadMode::Linearizable,
            timeout_ms: 1000,
            key_prefix: "/shakedown/register/".to_string(),
        }
    }
}

/// A register value from an op argument.
fn as_register_value(v: &Value) -> Option<i64> {
    v.as_i64()
}

/// How many times an `append` retries its read + compare-and-put when another writer changed the
/// key in between, before giving up with a definite `append-conflict` fail.
pub const APPEND_ATTEMPTS: u32 = 5;

/// The error string of an append whose every compare-and-put attempt lost to a concurrent
/// writer: nothing was written (a definite negative).
pub const APPEND_CONFLICT: &str = "append-conflict";

/// Why an append did not complete.
#[derive(Debug, Clone, PartialEq)]
pub struct AppendError {
    /// The error of the failed request.
    pub error: EtcdError,
    /// Whether a compare-and-put txn had been sent before it (false: nothing can have been
    /// written).
    pub txn_sent: bool,
}

/// An etcd v3 client bound to one member (its writes and, by default, its reads). Holds one
/// keep-alive HTTP connection pool. With [`EtcdClient::with_read_endpoints`], each `read` op goes
/// to a member chosen uniformly at random (seeded) instead.
#[derive(Debug, Clone)]
pub struct EtcdClient {
    config: EtcdClientConfig,
    http: reqwest::Client,
    /// Members `read` ops are spread over (empty: reads go to `config.endpoint`).
    read_endpoints: Vec<String>,
    /// Picks the member of each read.
    rng: rand_chacha::ChaCha8Rng,
    /// Serve the set workload: `read` is a prefix read of the key's elements ([`SET_SEGMENT`]).
    set_reads: bool,
}

/// The set workload's segment of etcd keys: element `e` of set `k` is the etcd key
/// `{key_prefix}set/{k}/{e}` (value `e`), so an add is one put and a read one prefix range.
pub const SET_SEGMENT: &str = "set/";

impl EtcdClient {
    /// Build a client. Fails if the endpoint is not an `http://` URL or `timeout_ms` is 0.
    pub fn new(mut config: EtcdClientConfig) -> Result<EtcdClient, EtcdError> {
        while config.endpoint.ends_with('/') {
            config.endpoint.pop();
        }
        let invalid = |message: String| EtcdError::Invalid {
            endpoint: config.endpoint.clone(),
            message,
        };
        let url = reqwest::Url::parse(&config.endpoint)
            .map_err(|e| invalid(format!("endpoint is not a URL: {e}")))?;
        if url.scheme() != "http" {
            return Err(invalid(format!(
                "endpoint scheme must be http (built without TLS), got {:?}",
                url.scheme()
            )));
        }
        if url.host_str().is_none() {
            return Err(invalid("endpoint has no host".to_string()));
        }
        if config.timeout_ms == 0 {
            return Err(invalid("timeout_ms must be positive".to_string()));
        }
        let timeout = Duration::from_millis(config.timeout_ms);
        // Shorter than the total timeout so an unreachable member surfaces as a connect error
        // (definitely not sent) rather than an ambiguous total timeout.
        let connect_timeout = Duration::from_millis((config.timeout_ms * 3 / 4).max(1));
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(connect_timeout)
            .tcp_nodelay(true)
            .pool_max_idle_per_host(4)
            .build()
            .map_err(|e| EtcdError::Library {
                endpoint: config.endpoint.clone(),
                message: format!("cannot build HTTP client: {}", error_chain(&e)),
            })?;
        Ok(EtcdClient {
            config,
            http,
            read_endpoints: Vec::new(),
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(0),
            set_reads: false,
        })
    }

    /// Serve the set workload: `read` returns the key's elements (a prefix range of its element
    /// keys) instead of a register or list value.
    pub fn with_set_reads(mut self) -> EtcdClient {
        self.set_reads = true;
        self
    }

    /// The etcd key prefix of set `key`'s elements.
    pub fn set_prefix(&self, key: Option<&str>) -> String {
        format!(
            "{}{SET_SEGMENT}{}/",
            self.config.key_prefix,
            key.unwrap_or("")
        )
    }

    /// Add `element` to set `key`: put its own etcd key. Returns the store revision.
    pub async fn set_add(&self, key: Option<&str>, element: i64) -> Result<i64, EtcdError> {
        let k = format!("{}{element}", self.set_prefix(key));
        let req = json!({ "key": B64.encode(k), "value": B64.encode(element.to_string()) });
        let body = self.post("/v3/kv/put", &req).await?;
        decode_put(self.endpoint(), &body)
    }

    /// The elements of set `key`, read from `endpoint` with the configured read mode: one range
    /// over the set's prefix, keys only.
    pub async fn set_read_at(
        &self,
        endpoint: &str,
        key: Option<&str>,
    ) -> Result<Vec<i64>, EtcdError> {
        let prefix = self.set_prefix(key);
        let mut end = prefix.clone().into_bytes();
        // The prefix ends in '/': the range end is the prefix with its last byte incremented.
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let mut req = json!({
            "key": B64.encode(&prefix),
            "range_end": B64.encode(&end),
            "keys_only": true,
        });
        if self.config.read_mode == ReadMode::Serializable {
            req["serializable"] = Value::Bool(true);
        }
        let body = self.post_to(endpoint, "/v3/kv/range", &req).await?;
        decode_range_elements(endpoint, &prefix, &body)
    }

    /// Send every `read` op to a member chosen uniformly at random from `endpoints` (seeded by
    /// `seed`), so one session reads from different members (`--read-from any`). Writes, cas and
    /// appends (including an append's own read) stay on this client's endpoint. Fails if an
    /// endpoint is not an `http://` URL with a host; an empty list keeps reads on the endpoint.
    pub fn with_read_endpoints(
        mut self,
        endpoints: Vec<String>,
        seed: u64,
    ) -> Result<EtcdClient, EtcdError> {
        let mut normalized = Vec::with_capacity(endpoints.len());
        for mut e in endpoints {
            while e.ends_with('/') {
                e.pop();
            }
            let ok = reqwest::Url::parse(&e)
                .is_ok_and(|u| u.scheme() == "http" && u.host_str().is_some());
            if !ok {
                return Err(EtcdError::Invalid {
                    endpoint: e,
                    message: "read endpoint must be an http:// URL with a host".to_string(),
                });
            }
            normalized.push(e);
        }
        self.read_endpoints = normalized;
        self.rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        Ok(self)
    }

    /// The members `read` ops are spread over (empty: reads go to [`EtcdClient::endpoint`]).
    pub fn read_endpoints(&self) -> &[String] {
        &self.read_endpoints
    }

    /// The member the next `read` goes to (advances the seeded choice).
    fn next_read_endpoint(&mut self) -> String {
        if self.read_endpoints.is_empty() {
            return self.config.endpoint.clone();
        }
        let i = self.rng.random_range(0..self.read_endpoints.len());
        self.read_endpoints[i].clone()
    }

    /// The endpoint this client talks to (without trailing slash).
    pub fn endpoint(&self) -> &str {
        &self.config.endpoint
    }

    /// The configuration this client was built with (endpoint normalized).
    pub fn config(&self) -> &EtcdClientConfig {
        &self.config
    }

    /// The full etcd key for an op key.
    pub fn full_key(&self, key: Option<&str>) -> String {
        format!("{}{}", self.config.key_prefix, key.unwrap_or(""))
    }

    /// POST a JSON body; returns the 2xx body, or the classified error.
    async fn post(&self, path: &str, body: &Value) -> Result<Vec<u8>, EtcdError> {
        self.post_to(self.endpoint(), path, body).await
    }

    /// POST a JSON body to this client's member and decode the 2xx answer as JSON (for the lock
    /// client, `systems::etcd::lock`); errors are classified as for every request.
    pub async fn post_json(&self, path: &str, body: &Value) -> Result<Value, EtcdError> {
        let bytes = self.post(path, body).await?;
        serde_json::from_slice(&bytes).map_err(|e| EtcdError::Decode {
            endpoint: self.endpoint().to_string(),
            http_status: 200,
            message: format!("{path}: not JSON: {e}"),
            body: String::from_utf8_lossy(&bytes).chars().take(512).collect(),
        })
    }

    /// POST a JSON body to `endpoint` (this client's or one of its read endpoints).
    async fn post_to(
        &self,
        endpoint: &str,
        path: &str,
        body: &Value,
    ) -> Result<Vec<u8>, EtcdError> {
        let url = format!("{endpoint}{path}");
        let (status, bytes) = self
            .send_to(endpoint, self.http.post(&url).json(body))
            .await?;
        if (200..300).contains(&status) {
            Ok(bytes.to_vec())
        } else {
            Err(decode_error_response(endpoint, status, &bytes))
        }
    }

    /// Send a request and read its whole body; transport errors are classified.
    async fn send(&self, req: reqwest::RequestBuilder) -> Result<(u16, Vec<u8>), EtcdError> {
        self.send_to(self.endpoint(), req).await
    }

    /// [`EtcdClient::send`], naming `endpoint` in errors.
    async fn send_to(
        &self,
        endpoint: &str,
        req: reqwest::RequestBuilder,
    ) -> Result<(u16, Vec<u8>), EtcdError> {
        let classify = |e: reqwest::Error| classify_reqwest(endpoint, self.config.timeout_ms, &e);
        let resp = req.send().await.map_err(classify)?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(classify)?;
        Ok((status, bytes.to_vec()))
    }

    /// Read `key` (a full etcd key): `None` if absent, else (value, mod_revision). Uses the
    /// configured read mode.
    pub async fn get(&self, key: &str) -> Result<Option<(i64, i64)>, EtcdError> {
        let mut req = json!({ "key": B64.encode(key) });
        if self.config.read_mode == ReadMode::Serializable {
            req["serializable"] = Value::Bool(true);
        }
        let body = self.post("/v3/kv/range", &req).await?;
        decode_range(self.endpoint(), key, &body)
    }

    /// Read `key` (a full etcd key) from `endpoint` with the configured read mode: `None` if
    /// absent, else the value (integer or list of integers, see [`decode_range_value`]) and its
    /// mod_revision.
    pub async fn get_value_at(
        &self,
        endpoint: &str,
        key: &str,
    ) -> Result<Option<(Value, i64)>, EtcdError> {
        let mut req = json!({ "key": B64.encode(key) });
        if self.config.read_mode == ReadMode::Serializable {
            req["serializable"] = Value::Bool(true);
        }
        let body = self.post_to(endpoint, "/v3/kv/range", &req).await?;
        decode_range_value(endpoint, key, &body)
    }

    /// Append `element` to the JSON list stored at `key` (a full etcd key; absent = empty list):
    /// a linearizable read of the list and its mod_revision from this client's endpoint, then a
    /// txn that puts the extended list only if the key's mod_revision is unchanged (0 = still
    /// absent). A lost race retries, up to [`APPEND_ATTEMPTS`] attempts in all. Returns the store
    /// revision of the put, or `Ok(None)` when every attempt lost (nothing was written). An error
    /// says whether a txn had been sent when it happened.
    pub async fn append(&self, key: &str, element: i64) -> Result<Option<i64>, AppendError> {
        let mut txn_sent = false;
        self.append_attempts(key, element, &mut txn_sent)
            .await
            .map_err(|error| AppendError { error, txn_sent })
    }

    async fn append_attempts(
        &self,
        key: &str,
        element: i64,
        txn_sent: &mut bool,
    ) -> Result<Option<i64>, EtcdError> {
        let k = B64.encode(key);
        for _ in 0..APPEND_ATTEMPTS {
            let body = self
                .post("/v3/kv/range", &json!({ "key": k.clone() }))
                .await?;
            let (mut list, mod_revision) = match decode_range_value(self.endpoint(), key, &body)? {
                None => (Vec::new(), 0),
                Some((Value::Array(a), rev)) => (a, rev),
                Some((_, _)) => {
                    return Err(EtcdError::Invalid {
                        endpoint: self.endpoint().to_string(),
                        message: format!(
                            "cannot append to {key:?}: it holds an integer, not a list"
                        ),
                    });
                }
            };
            list.push(Value::from(element));
            let req = json!({
                "compare": [{
                    "key": k.clone(),
                    "target": "MOD",
                    "result": "EQUAL",
                    "mod_revision": mod_revision.to_string(),
                }],
                "success": [{ "request_put": {
                    "key": k.clone(),
                    "value": B64.encode(Value::Array(list).to_string()),
                } }],
            });
            *txn_sent = true;
            let body = self.post("/v3/kv/txn", &req).await?;
            if let CasOutcome::Swapped { revision } = decode_cas(self.endpoint(), &body)? {
                return Ok(Some(revision));
            }
        }
        Ok(None)
    }

    /// Put `value` (as decimal text) at `key` (a full etcd key); returns the new store revision.
    pub async fn put(&self, key: &str, value: i64) -> Result<i64, EtcdError> {
        let req = json!({ "key": B64.encode(key), "value": B64.encode(value.to_string()) });
        let body = self.post("/v3/kv/put", &req).await?;
        decode_put(self.endpoint(), &body)
    }

    /// If `key` (a full etcd key) holds `old`, set it to `new`, atomically.
    pub async fn cas(&self, key: &str, old: i64, new: i64) -> Result<CasOutcome, EtcdError> {
        let k = B64.encode(key);
        let req = json!({
            "compare": [{
                "key": k,
                "target": "VALUE",
                "result": "EQUAL",
                "value": B64.encode(old.to_string()),
            }],
            "success": [{ "request_put": { "key": k, "value": B64.encode(new.to_string()) } }],
        });
        let body = self.post("/v3/kv/txn", &req).await?;
        decode_cas(self.endpoint(), &body)
    }

    /// `GET /health` once: Ok if the member reports itself healthy (it has a leader and can
    /// serve a quorum read).
    pub async fn health(&self) -> Result<(), EtcdError> {
        let url = format!("{}/health", self.endpoint());
        let (status, bytes) = self.send(self.http.get(url)).await?;
        decode_health(self.endpoint(), status, &bytes)
    }

    /// Poll `health()` every 100 ms until it succeeds or `within_ms` elapses; returns the last
    /// error on timeout.
    pub async fn wait_healthy(&self, within_ms: u64) -> Result<(), EtcdError> {
        let deadline = Instant::now() + Duration::from_millis(within_ms);
        loop {
            let err = match self.health().await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(EtcdError::Unhealthy {
                    endpoint: self.endpoint().to_string(),
                    message: format!("not healthy within {within_ms} ms; last error: {err}"),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// One op, without the outer timeout guard; a `read` goes to `read_endpoint`.
    async fn invoke_inner(
        &self,
        f: &str,
        key: Option<&str>,
        value: &Value,
        read_endpoint: &str,
    ) -> Completion {
        let full_key = self.full_key(key);
        let invalid = |message: String| Completion::Fail {
            error: EtcdError::Invalid {
                endpoint: self.endpoint().to_string(),
                message,
            }
            .to_completion_error(),
            value: value.clone(),
        };
        if f == "append" {
            let Some(e) = as_register_value(value) else {
                return invalid(format!("append value must be an integer, got {value}"));
            };
            return match self.append(&full_key, e).await {
                Ok(Some(revision)) => Completion::Ok {
                    value: value.clone(),
                    version: Some(revision),
                },
                Ok(None) => Completion::Fail {
                    error: format!(
                        "{APPEND_CONFLICT}: {} lost {APPEND_ATTEMPTS} compare-and-put races on {full_key:?}; nothing written",
                        self.endpoint()
                    ),
                    value: value.clone(),
                },
                // Before any txn was sent (the pre-read failed) nothing can have been
                // written; otherwise classify as for a write.
                Err(AppendError {
                    error,
                    txn_sent: false,
                }) => Completion::Fail {
                    error: error.to_completion_error(),
                    value: value.clone(),
                },
                Err(AppendError { error, .. }) => write_error(error, value),
            };
        }
        // Register and set ops: the one reading of their vocabulary the built-in clients share.
        let op = match WorkloadOp::parse(f, value, self.set_reads) {
            Ok(op) => op,
            Err(message) => return invalid(message),
        };
        match op {
            WorkloadOp::SetRead => match self.set_read_at(read_endpoint, key).await {
                Ok(elements) => Completion::Ok {
                    value: Value::from(elements),
                    version: None,
                },
                // Reads do not change state: every failed read is a definite fail.
                Err(e) => Completion::Fail {
                    error: e.to_completion_error(),
                    value: value.clone(),
                },
            },
            WorkloadOp::SetAdd(e) => match self.set_add(key, e).await {
                Ok(rev) => Completion::Ok {
                    value: value.clone(),
                    version: Some(rev),
                },
                Err(e) => write_error(e, value),
            },
            WorkloadOp::Read => match self.get_value_at(read_endpoint, &full_key).await {
                Ok(Some((v, rev))) => Completion::Ok {
                    value: v,
                    version: Some(rev),
                },
                Ok(None) => Completion::Ok {
                    value: Value::Null,
                    version: None,
                },
                // Reads do not change state: every failed read is a definite fail.
                Err(e) => Completion::Fail {
                    error: e.to_completion_error(),
                    value: value.clone(),
                },
            },
            WorkloadOp::Write(v) => match self.put(&full_key, v).await {
                Ok(rev) => Completion::Ok {
                    value: value.clone(),
                    version: Some(rev),
                },
                Err(e) => write_error(e, value),
            },
            WorkloadOp::Cas(old, new) => match self.cas(&full_key, old, new).await {
                Ok(CasOutcome::Swapped { revision }) => Completion::Ok {
                    value: value.clone(),
                    version: Some(revision),
                },
                Ok(CasOutcome::Mismatch) => Completion::Fail {
                    error: CAS_MISMATCH.to_string(),
                    value: value.clone(),
                },
                Err(e) => write_error(e, value),
            },
        }
    }
}

/// Completion of a write/cas that ended in an error.
fn write_error(e: EtcdError, value: &Value) -> Completion {
    if e.definitely_not_applied() {
        Completion::Fail {
            error: e.to_completion_error(),
            value: value.clone(),
        }
    } else {
        Completion::Info {
            error: e.to_completion_error(),
        }
    }
}

#[async_trait::async_trait]
impl Client for EtcdClient {
    async fn invoke(&mut self, f: &str, key: Option<&str>, value: &Value) -> Completion {
        let read_endpoint = if f == "read" {
            self.next_read_endpoint()
        } else {
            self.config.endpoint.clone()
        };
        // One budget for the whole op, also for an append's retries (the interpreter's worker
        // timeout is only slightly longer); a txn cut off by it may have applied: Info.
        let guard = Duration::from_millis(self.config.timeout_ms + TIMEOUT_SLACK_MS);
        match tokio::time::timeout(guard, self.invoke_inner(f, key, value, &read_endpoint)).await {
            Ok(c) => c,
            Err(_) => {
                let e = EtcdError::Timeout {
                    endpoint: self.endpoint().to_string(),
                    timeout_ms: self.config.timeout_ms,
                };
                if f == "read" {
                    Completion::Fail {
                        error: e.to_completion_error(),
                        value: value.clone(),
                    }
                } else {
                    Completion::Info {
                        error: e.to_completion_error(),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EP: &str = "http://127.0.0.1:2379";

    #[test]
    fn range_absent_key_is_none() {
        let body = br#"{"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"1","raft_term":"2"}}"#;
        assert_eq!(decode_range(EP, "/k", body).unwrap(), None);
    }

    #[test]
    fn range_present_key_decodes_value_and_mod_revision() {
        // "MTI=" is "12"
        let body = br#"{"header":{"revision":"9","raft_term":"2"},"kvs":[{"key":"Zm9v","create_revision":"2","mod_revision":"7","version":"3","value":"MTI="}],"count":"1"}"#;
        assert_eq!(decode_range(EP, "/k", body).unwrap(), Some((12, 7)));
    }

    #[test]
    fn set_range_decodes_elements_from_keys() {
        // Keys "/p/set/k/7" and "/p/set/k/12"; keys_only: no values.
        let body = br#"{"header":{"revision":"9"},"kvs":[{"key":"L3Avc2V0L2svNw==","mod_revision":"3"},{"key":"L3Avc2V0L2svMTI=","mod_revision":"4"}],"count":"2"}"#;
        assert_eq!(
            decode_range_elements(EP, "/p/set/k/", body).unwrap(),
            vec![7, 12]
        );
        assert_eq!(
            decode_range_elements(EP, "/p/set/k/", br#"{"header":{}}"#).unwrap(),
            Vec::<i64>::new()
        );
        let body = br#"{"kvs":[{"key":"L3Avc2V0L2sveA=="}]}"#;
        let e = decode_range_elements(EP, "/p/set/k/", body).unwrap_err();
        assert!(e.to_string().contains("/p/set/k/x"), "{e}");
    }

    #[test]
    fn range_value_decodes_integers_and_lists() {
        // "MTI=" is "12"; "WzEsMiwzXQ==" is "[1,2,3]"; "WzEsIngiXQ==" is "[1,\"x\"]"
        let body = br#"{"kvs":[{"key":"Zm9v","mod_revision":"7","value":"MTI="}]}"#;
        assert_eq!(
            decode_range_value(EP, "/k", body).unwrap(),
            Some((json!(12), 7))
        );
        let body = br#"{"kvs":[{"key":"Zm9v","mod_revision":"8","value":"WzEsMiwzXQ=="}]}"#;
        assert_eq!(
            decode_range_value(EP, "/k", body).unwrap(),
            Some((json!([1, 2, 3]), 8))
        );
        assert_eq!(
            decode_range_value(EP, "/k", br#"{"kvs":[]}"#).unwrap(),
            None
        );
        let body = br#"{"kvs":[{"key":"Zm9v","mod_revision":"8","value":"WzEsIngiXQ=="}]}"#;
        match decode_range_value(EP, "/k", body) {
            Err(EtcdError::NotAnInteger { key, raw, .. }) => {
                assert_eq!((key.as_str(), raw.as_str()), ("/k", "[1,\"x\"]"));
            }
            other => panic!("expected NotAnInteger, got {other:?}"),
        }
        // A list without a mod_revision is a decode error, as for integers.
        let body = br#"{"kvs":[{"key":"Zm9v","value":"WzEsMiwzXQ=="}]}"#;
        assert!(matches!(
            decode_range_value(EP, "/k", body),
            Err(EtcdError::Decode { .. })
        ));
    }

    #[test]
    fn read_endpoints_are_validated_and_spread_reads_over_members() {
        let c = EtcdClient::new(EtcdClientConfig::default()).unwrap();
        let e = c
            .clone()
            .with_read_endpoints(vec!["https://10.0.0.1:2379".into()], 1)
            .unwrap_err();
        assert!(e.to_string().contains("https://10.0.0.1:2379"), "{e}");
        let eps: Vec<String> = (1..=3)
            .map(|i| format!("http://10.0.0.{i}:2379/"))
            .collect();
        let mut c = c.with_read_endpoints(eps, 7).unwrap();
        assert_eq!(c.read_endpoints()[0], "http://10.0.0.1:2379");
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..300 {
            *seen.entry(c.next_read_endpoint()).or_insert(0) += 1;
        }
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen.values().all(|&n| n > 60), "{seen:?}");
        // Same seed, same choices.
        let again = EtcdClient::new(EtcdClientConfig::default())
            .unwrap()
            .with_read_endpoints(
                (1..=3).map(|i| format!("http://10.0.0.{i}:2379")).collect(),
                7,
            )
            .unwrap();
        let mut a = again.clone();
        let first: Vec<String> = (0..20).map(|_| a.next_read_endpoint()).collect();
        let mut b = again;
        assert_eq!(
            first,
            (0..20).map(|_| b.next_read_endpoint()).collect::<Vec<_>>()
        );
        // Without read endpoints, reads stay on the client's own member.
        let mut own = EtcdClient::new(EtcdClientConfig::default()).unwrap();
        assert_eq!(own.next_read_endpoint(), "http://127.0.0.1:2379");
    }

    #[test]
    fn range_accepts_numeric_int64_fields() {
        let body = br#"{"kvs":[{"key":"Zm9v","mod_revision":7,"value":"LTM="}]}"#;
        assert_eq!(decode_range(EP, "/k", body).unwrap(), Some((-3, 7)));
    }

    #[test]
    fn range_non_integer_value_is_an_error_naming_key() {
        // "YWJj" is "abc"; an absent value field is the empty string.
        let body = br#"{"kvs":[{"key":"Zm9v","mod_revision":"7","value":"YWJj"}]}"#;
        let e = decode_range(EP, "/k", body).unwrap_err();
        assert_eq!(
            e,
            EtcdError::NotAnInteger {
                endpoint: EP.to_string(),
                key: "/k".to_string(),
                raw: "abc".to_string()
            }
        );
        let body = br#"{"kvs":[{"key":"Zm9v","mod_revision":"7"}]}"#;
        assert!(matches!(
            decode_range(EP, "/k", body),
            Err(EtcdError::NotAnInteger { raw, .. }) if raw.is_empty()
        ));
    }

    #[test]
    fn range_missing_mod_revision_or_garbage_is_decode_error() {
        let body = br#"{"kvs":[{"key":"Zm9v","value":"MQ=="}]}"#;
        assert_eq!(decode_range(EP, "/k", body).unwrap_err().kind(), "decode");
        let body = b"<html>proxy error</html>";
        let e = decode_range(EP, "/k", body).unwrap_err();
        assert_eq!(e.kind(), "decode");
        assert!(e.to_string().contains("<html>proxy error</html>"), "{e}");
        assert!(e.to_string().contains(EP), "{e}");
    }

    #[test]
    fn put_decodes_header_revision() {
        let body =
            br#"{"header":{"cluster_id":"1","member_id":"2","revision":"42","raft_term":"2"}}"#;
        assert_eq!(decode_put(EP, body).unwrap(), 42);
        assert_eq!(decode_put(EP, b"{}").unwrap_err().kind(), "decode");
    }

    #[test]
    fn txn_succeeded_and_omitted_succeeded() {
        let ok = br#"{"header":{"revision":"3","raft_term":"2"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"3"}}}]}"#;
        assert_eq!(
            decode_cas(EP, ok).unwrap(),
            CasOutcome::Swapped { revision: 3 }
        );
        // etcd omits `succeeded` when false.
        let mismatch = br#"{"header":{"revision":"3","raft_term":"2"}}"#;
        assert_eq!(decode_cas(EP, mismatch).unwrap(), CasOutcome::Mismatch);
    }

    #[test]
    fn error_bodies_decode_to_server_errors() {
        let body = br#"{"error":"etcdserver: request timed out","message":"etcdserver: request timed out","code":14}"#;
        let e = decode_error_response(EP, 503, body);
        assert_eq!(
            e,
            EtcdError::Server {
                endpoint: EP.to_string(),
                http_status: 503,
                grpc_code: 14,
                message: "etcdserver: request timed out".to_string()
            }
        );
        assert!(!e.definitely_not_applied());
        let e = decode_error_response(EP, 502, b"Bad Gateway");
        assert_eq!(e.kind(), "decode");
        assert!(!e.definitely_not_applied());
    }

    #[test]
    fn server_error_classification_table() {
        let definite = [
            (8, "etcdserver: too many requests"),
            (3, "etcdserver: request is too large"),
            (3, "etcdserver: duplicate key given in txn request"),
            (
                3,
                "json: cannot unmarshal number into Go value of type []uint8",
            ),
            (8, "etcdserver: mvcc: database space exceeded"),
            (14, "etcdserver: no leader"),
            (2, "raft proposal dropped"),
            (7, "etcdserver: permission denied"),
            (16, "etcdserver: invalid auth token"),
        ];
        for (code, msg) in definite {
            assert!(server_error_is_definite(code, msg), "{code} {msg}");
        }
        let unknown = [
            (14, "etcdserver: request timed out"),
            (
                14,
                "etcdserver: request timed out, possibly due to previous leader failure",
            ),
            (14, "etcdserver: leader changed"),
            (14, "etcdserver: server stopped"),
            (1, "context canceled"),
            (4, "context deadline exceeded"),
            (2, "something new"),
            (13, "etcdserver: internal error"),
            (-1, ""),
        ];
        for (code, msg) in unknown {
            assert!(!server_error_is_definite(code, msg), "{code} {msg}");
        }
    }

    #[test]
    fn transport_error_classes() {
        let e = |kind: &str| match kind {
            "connect" => EtcdError::Connect {
                endpoint: EP.into(),
                message: "refused".into(),
            },
            "timeout" => EtcdError::Timeout {
                endpoint: EP.into(),
                timeout_ms: 5,
            },
            _ => EtcdError::Transport {
                endpoint: EP.into(),
                message: "reset".into(),
            },
        };
        assert!(e("connect").definitely_not_applied());
        assert!(!e("timeout").definitely_not_applied());
        assert!(!e("transport").definitely_not_applied());
        for k in ["connect", "timeout", "transport"] {
            let text = e(k).to_completion_error();
            assert!(text.starts_with(k), "{text}");
            assert!(text.contains(EP), "{text}");
        }
    }

    #[test]
    fn write_error_maps_to_fail_or_info() {
        let v = json!(3);
        let definite = EtcdError::Server {
            endpoint: EP.into(),
            http_status: 429,
            grpc_code: 8,
            message: "etcdserver: too many requests".into(),
        };
        assert!(matches!(write_error(definite, &v), Completion::Fail { value, .. } if value == v));
        let unknown = EtcdError::Server {
            endpoint: EP.into(),
            http_status: 503,
            grpc_code: 14,
            message: "etcdserver: leader changed".into(),
        };
        assert!(matches!(write_error(unknown, &v), Completion::Info { .. }));
    }

    #[test]
    fn health_decoding() {
        assert!(decode_health(EP, 200, br#"{"health":"true"}"#).is_ok());
        assert!(decode_health(EP, 200, br#"{"health":"true","reason":""}"#).is_ok());
        let e =
            decode_health(EP, 503, br#"{"health":"false","reason":"RAFT NO LEADER"}"#).unwrap_err();
        assert!(e.to_string().contains("RAFT NO LEADER"), "{e}");
        assert_eq!(e.kind(), "unhealthy");
        assert_eq!(
            decode_health(EP, 200, b"nope").unwrap_err().kind(),
            "decode"
        );
    }

    #[test]
    fn long_bodies_are_truncated() {
        let body = vec![b'x'; 5000];
        let t = truncated_body(&body);
        assert!(t.len() < 600, "{}", t.len());
        assert!(t.ends_with("(5000 bytes total)"), "{t}");
    }

    #[test]
    fn config_validation() {
        let bad = |endpoint: &str, timeout_ms| {
            EtcdClient::new(EtcdClientConfig {
                endpoint: endpoint.to_string(),
                timeout_ms,
                ..EtcdClientConfig::default()
            })
            .unwrap_err()
        };
        assert!(
            bad("https://127.0.0.1:2379", 100)
                .to_string()
                .contains("http")
        );
        assert!(
            bad("127.0.0.1:2379", 100)
                .to_string()
                .contains("127.0.0.1:2379")
        );
        assert!(
            bad("http://127.0.0.1:2379", 0)
                .to_string()
                .contains("timeout_ms")
        );
        let c = EtcdClient::new(EtcdClientConfig {
            endpoint: "http://127.0.0.1:2379/".to_string(),
            ..EtcdClientConfig::default()
        })
        .unwrap();
        assert_eq!(c.endpoint(), "http://127.0.0.1:2379");
        assert_eq!(c.full_key(Some("7")), "/shakedown/register/7");
        assert_eq!(c.full_key(None), "/shakedown/register/");
    }

    #[tokio::test]
    async fn invalid_arguments_fail_without_sending() {
        // Nothing listens on port 9 of 127.0.0.1 in the test environment, but invalid
        // arguments must fail before any connection attempt regardless.
        let mut c = EtcdClient::new(EtcdClientConfig {
            endpoint: "http://127.0.0.1:9".to_string(),
            ..EtcdClientConfig::default()
        })
        .unwrap();
        for (f, v) in [
            ("write", json!("x")),
            ("cas", json!([1])),
            ("cas", json!([1, "2"])),
            ("append", json!("x")),
            ("frobnicate", json!(1)),
        ] {
            match c.invoke(f, Some("k"), &v).await {
                Completion::Fail { error, value } => {
                    assert!(error.starts_with("invalid: "), "{error}");
                    assert_eq!(value, v);
                }
                other => panic!("{f} {v}: expected Fail, got {other:?}"),
            }
        }
    }
}
