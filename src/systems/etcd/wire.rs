//! etcd's v3 JSON gateway on the wire: decoding its responses (keys and values base64, int64
//! fields as strings, absent fields omitted, gRPC error bodies) and classifying every error as
//! definitely not applied or unknown (`EtcdError::definitely_not_applied`; the table is in
//! `client`'s doc).
//!
//! Owns `EtcdError`, `CasOutcome` and the `decode_*` functions. Does not own building or sending
//! requests, or mapping ops onto them (`client`). Pure decoding apart from reading `reqwest`
//! errors.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Longest response body kept in an error message, in bytes.
const MAX_BODY_IN_ERROR_BYTES: usize = 512;

/// Server error messages that etcd only returns when the request was not applied.
const DEFINITE_SERVER_MESSAGES: &[&str] = &[
    "etcdserver: too many requests",
    "etcdserver: request is too large",
    "etcdserver: mvcc: database space exceeded",
    "etcdserver: no leader",
    "etcdserver: not capable",
    "etcdserver: rpc not supported for learner",
    "raft proposal dropped",
];

/// gRPC status codes that mean the request was rejected before it could take effect.
const DEFINITE_GRPC_CODES: &[i64] = &[
    3,  // InvalidArgument: validation and gateway decoding happen before proposing
    7,  // PermissionDenied: auth check fails, request not applied
    12, // Unimplemented
    16, // Unauthenticated
];

/// Why an etcd request did not produce a result. Every variant names the endpoint.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EtcdError {
    /// The client configuration or the op's arguments are unusable; nothing was sent.
    #[error("etcd {endpoint}: {message}")]
    Invalid {
        /// Endpoint the client is bound to.
        endpoint: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// The HTTP library could not be set up when the client was made; nothing was sent.
    #[error("etcd {endpoint}: {message}")]
    Library {
        /// Endpoint the client is bound to.
        endpoint: String,
        /// What the library said.
        message: String,
    },
    /// The connection could not be established; the request was never sent.
    #[error("etcd {endpoint}: connect failed, request not sent: {message}")]
    Connect {
        /// Endpoint the client is bound to.
        endpoint: String,
        /// Underlying error chain.
        message: String,
    },
    /// No complete response within the timeout; the request may have been sent.
    #[error("etcd {endpoint}: no response within {timeout_ms} ms")]
    Timeout {
        /// Endpoint the client is bound to.
        endpoint: String,
        /// The configured timeout.
        timeout_ms: u64,
    },
    /// The connection failed after the request may have been sent (reset, closed, body error).
    #[error("etcd {endpoint}: transport error: {message}")]
    Transport {
        /// Endpoint the client is bound to.
        endpoint: String,
        /// Underlying error chain.
        message: String,
    },
    /// etcd (or its gateway) answered with an error status and a gateway error body.
    #[error("etcd {endpoint}: HTTP {http_status}, gRPC code {grpc_code}: {message}")]
    Server {
        /// Endpoint the client is bound to.
        endpoint: String,
        /// HTTP status of the response.
        http_status: u16,
        /// gRPC status code from the body (`-1` when absent).
        grpc_code: i64,
        /// Error message from the body, e.g. `etcdserver: request timed out`.
        message: String,
    },
    /// The response could not be decoded.
    #[error("etcd {endpoint}: undecodable response (HTTP {http_status}): {message}; body: {body}")]
    Decode {
        /// Endpoint the client is bound to.
        endpoint: String,
        /// HTTP status of the response.
        http_status: u16,
        /// What was wrong.
        message: String,
        /// The raw body, truncated.
        body: String,
    },
    /// A key holds a value that is not a decimal integer.
    #[error("etcd {endpoint}: key {key:?} holds {raw:?}, not a decimal integer")]
    NotAnInteger {
        /// Endpoint the client is bound to.
        endpoint: String,
        /// The full etcd key.
        key: String,
        /// The stored value, lossily decoded.
        raw: String,
    },
    /// `/health` reported the member unhealthy.
    #[error("etcd {endpoint}: unhealthy: {message}")]
    Unhealthy {
        /// Endpoint the client is bound to.
        endpoint: String,
        /// The reason etcd gave, or the raw body.
        message: String,
    },
}

impl EtcdError {
    /// Short category, used as the prefix of completion error strings.
    pub fn kind(&self) -> &'static str {
        match self {
            EtcdError::Invalid { .. } => "invalid",
            EtcdError::Library { .. } => "library",
            EtcdError::Connect { .. } => "connect",
            EtcdError::Timeout { .. } => "timeout",
            EtcdError::Transport { .. } => "transport",
            EtcdError::Server { .. } => "server",
            EtcdError::Decode { .. } => "decode",
            EtcdError::NotAnInteger { .. } => "not-an-integer",
            EtcdError::Unhealthy { .. } => "unhealthy",
        }
    }

    /// True when a write/cas that ended with this error certainly did not take effect (see the
    /// module doc's table). False means "unknown".
    pub fn definitely_not_applied(&self) -> bool {
        match self {
            EtcdError::Invalid { .. } | EtcdError::Library { .. } | EtcdError::Connect { .. } => {
                true
            }
            EtcdError::Server {
                grpc_code, message, ..
            } => server_error_is_definite(*grpc_code, message),
            // Only reads decode stored values, and every read error is a Fail anyway.
            EtcdError::NotAnInteger { .. }
            | EtcdError::Timeout { .. }
            | EtcdError::Transport { .. }
            | EtcdError::Decode { .. }
            | EtcdError::Unhealthy { .. } => false,
        }
    }

    /// `kind: message`, the text recorded in the history's `error` field.
    pub fn to_completion_error(&self) -> String {
        format!("{}: {}", self.kind(), self)
    }
}

/// True when a gateway error (gRPC code + message) means the request was not applied.
pub fn server_error_is_definite(grpc_code: i64, message: &str) -> bool {
    DEFINITE_GRPC_CODES.contains(&grpc_code)
        || DEFINITE_SERVER_MESSAGES.iter().any(|m| message.contains(m))
}

/// Outcome of a compare-and-set transaction that reached etcd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CasOutcome {
    /// The key held `old`; it now holds `new`.
    Swapped {
        /// Store revision after the put (the key's new mod_revision).
        revision: i64,
    },
    /// The key was absent or held something other than `old`; nothing was written.
    Mismatch,
}

/// Accepts an int64 encoded as a JSON string (the gateway's encoding) or a number.
fn de_opt_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("expected an int64, got {s:?}"))),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom(format!("expected an int64, got {n}"))),
        Some(other) => Err(serde::de::Error::custom(format!(
            "expected an int64, got {other}"
        ))),
    }
}

/// `ResponseHeader`, the part we use.
#[derive(Debug, Default, Deserialize)]
struct Header {
    #[serde(default, deserialize_with = "de_opt_i64")]
    revision: Option<i64>,
}

/// `mvccpb.KeyValue`, the part we use.
#[derive(Debug, Deserialize)]
struct KeyValue {
    #[serde(default)]
    key: String,
    /// Absent when the value is empty.
    #[serde(default)]
    value: String,
    #[serde(default, deserialize_with = "de_opt_i64")]
    mod_revision: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct RangeResponse {
    #[serde(default)]
    kvs: Vec<KeyValue>,
}

#[derive(Debug, Deserialize)]
struct PutResponse {
    #[serde(default)]
    header: Header,
}

#[derive(Debug, Deserialize)]
struct TxnResponse {
    #[serde(default)]
    header: Header,
    /// Absent when false.
    #[serde(default)]
    succeeded: bool,
}

/// The grpc-gateway error body: `{"error": ..., "message": ..., "code": n}`.
#[derive(Debug, Deserialize)]
struct GatewayError {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct HealthResponse {
    #[serde(default)]
    health: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

/// The body as text for an error message, truncated to `MAX_BODY_IN_ERROR_BYTES`.
pub(super) fn truncated_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if text.len() <= MAX_BODY_IN_ERROR_BYTES {
        return text.into_owned();
    }
    let mut end = MAX_BODY_IN_ERROR_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes total)", &text[..end], body.len())
}

fn decode_error(endpoint: &str, http_status: u16, message: String, body: &[u8]) -> EtcdError {
    EtcdError::Decode {
        endpoint: endpoint.to_string(),
        http_status,
        message,
        body: truncated_body(body),
    }
}

/// Decode a non-2xx gateway response into `EtcdError::Server` (or `Decode` if the body is not a
/// gateway error).
pub fn decode_error_response(endpoint: &str, http_status: u16, body: &[u8]) -> EtcdError {
    match serde_json::from_slice::<GatewayError>(body) {
        Ok(GatewayError {
            error,
            message,
            code,
        }) if message.is_some() || error.is_some() => EtcdError::Server {
            endpoint: endpoint.to_string(),
            http_status,
            grpc_code: code.unwrap_or(-1),
            message: message.or(error).unwrap_or_default(),
        },
        Ok(_) => decode_error(
            endpoint,
            http_status,
            "error response without a message".to_string(),
            body,
        ),
        Err(e) => decode_error(
            endpoint,
            http_status,
            format!("error response is not gateway JSON: {e}"),
            body,
        ),
    }
}

fn parse_json<'a, T: Deserialize<'a>>(
    endpoint: &str,
    what: &str,
    body: &'a [u8],
) -> Result<T, EtcdError> {
    serde_json::from_slice(body)
        .map_err(|e| decode_error(endpoint, 200, format!("bad {what} response: {e}"), body))
}

/// A stored value's raw bytes and its mod_revision (if the response had one).
type RawKv = (Vec<u8>, Option<i64>);

/// The first kv of a `/v3/kv/range` body: its raw value bytes and mod_revision (if present).
fn range_raw(endpoint: &str, body: &[u8]) -> Result<Option<RawKv>, EtcdError> {
    let resp: RangeResponse = parse_json(endpoint, "range", body)?;
    let Some(kv) = resp.kvs.into_iter().next() else {
        return Ok(None);
    };
    let raw = B64.decode(kv.value.as_bytes()).map_err(|e| {
        decode_error(
            endpoint,
            200,
            format!("range value of {:?} is not base64: {e}", kv.key),
            body,
        )
    })?;
    Ok(Some((raw, kv.mod_revision)))
}

fn require_mod_revision(
    endpoint: &str,
    body: &[u8],
    mod_revision: Option<i64>,
) -> Result<i64, EtcdError> {
    mod_revision.ok_or_else(|| {
        decode_error(
            endpoint,
            200,
            "range kv has no mod_revision".to_string(),
            body,
        )
    })
}

fn not_an_integer(endpoint: &str, key: &str, raw: &[u8]) -> EtcdError {
    EtcdError::NotAnInteger {
        endpoint: endpoint.to_string(),
        key: key.to_string(),
        raw: String::from_utf8_lossy(raw).into_owned(),
    }
}

/// Decode a successful `/v3/kv/range` body for a single key: `None` if absent, else the value
/// (decimal text) and its mod_revision.
pub fn decode_range(
    endpoint: &str,
    key: &str,
    body: &[u8],
) -> Result<Option<(i64, i64)>, EtcdError> {
    let Some((raw, mod_revision)) = range_raw(endpoint, body)? else {
        return Ok(None);
    };
    let value = std::str::from_utf8(&raw)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| not_an_integer(endpoint, key, &raw))?;
    Ok(Some((
        value,
        require_mod_revision(endpoint, body, mod_revision)?,
    )))
}

/// Decode a successful `/v3/kv/range` body for a single key as a history value: `None` if
/// absent, else the value — a decimal integer (register) or a JSON list of integers
/// (list-append) — and its mod_revision. Anything else is `NotAnInteger`.
pub fn decode_range_value(
    endpoint: &str,
    key: &str,
    body: &[u8],
) -> Result<Option<(Value, i64)>, EtcdError> {
    let Some((raw, mod_revision)) = range_raw(endpoint, body)? else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&raw).map_err(|_| not_an_integer(endpoint, key, &raw))?;
    let value = if let Ok(i) = text.parse::<i64>() {
        Value::from(i)
    } else {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(a)) if a.iter().all(Value::is_i64) => Value::Array(a),
            _ => return Err(not_an_integer(endpoint, key, &raw)),
        }
    };
    Ok(Some((
        value,
        require_mod_revision(endpoint, body, mod_revision)?,
    )))
}

/// Decode a successful `/v3/kv/range` body of a prefix read (keys only) into the set's
/// elements: each key is `prefix` followed by a decimal integer.
pub fn decode_range_elements(
    endpoint: &str,
    prefix: &str,
    body: &[u8],
) -> Result<Vec<i64>, EtcdError> {
    let resp: RangeResponse = parse_json(endpoint, "range", body)?;
    resp.kvs
        .iter()
        .map(|kv| {
            let raw = B64.decode(kv.key.as_bytes()).map_err(|e| {
                decode_error(
                    endpoint,
                    200,
                    format!("range key {:?} is not base64: {e}", kv.key),
                    body,
                )
            })?;
            let text = String::from_utf8_lossy(&raw);
            text.strip_prefix(prefix)
                .and_then(|e| e.parse::<i64>().ok())
                .ok_or_else(|| not_an_integer(endpoint, &text, &raw))
        })
        .collect()
}

/// Decode a successful `/v3/kv/put` body into the store revision after the put.
pub fn decode_put(endpoint: &str, body: &[u8]) -> Result<i64, EtcdError> {
    let resp: PutResponse = parse_json(endpoint, "put", body)?;
    resp.header.revision.ok_or_else(|| {
        decode_error(
            endpoint,
            200,
            "put response has no header.revision".to_string(),
            body,
        )
    })
}

/// Decode a successful `/v3/kv/txn` body of a compare-and-set.
pub fn decode_cas(endpoint: &str, body: &[u8]) -> Result<CasOutcome, EtcdError> {
    let resp: TxnResponse = parse_json(endpoint, "txn", body)?;
    if !resp.succeeded {
        return Ok(CasOutcome::Mismatch);
    }
    let revision = resp.header.revision.ok_or_else(|| {
        decode_error(
            endpoint,
            200,
            "txn response has no header.revision".to_string(),
            body,
        )
    })?;
    Ok(CasOutcome::Swapped { revision })
}

/// Decode a `/health` body (any status): Ok if etcd says `"health": "true"`.
pub fn decode_health(endpoint: &str, http_status: u16, body: &[u8]) -> Result<(), EtcdError> {
    match serde_json::from_slice::<HealthResponse>(body) {
        Ok(h) if h.health.as_deref() == Some("true") && (200..300).contains(&http_status) => Ok(()),
        Ok(h) => Err(EtcdError::Unhealthy {
            endpoint: endpoint.to_string(),
            message: match h.reason {
                Some(r) if !r.is_empty() => format!("HTTP {http_status}: {r}"),
                _ => format!("HTTP {http_status}: {}", truncated_body(body)),
            },
        }),
        Err(e) => Err(decode_error(
            endpoint,
            http_status,
            format!("bad health response: {e}"),
            body,
        )),
    }
}

/// The error and all its sources, joined with ": ".
pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// Map a transport-level reqwest error onto the classification.
pub(super) fn classify_reqwest(endpoint: &str, timeout_ms: u64, e: &reqwest::Error) -> EtcdError {
    if e.is_connect() || e.is_dns() {
        // HTTP/1 writes the request only after the connection is up: nothing was sent.
        EtcdError::Connect {
            endpoint: endpoint.to_string(),
            message: error_chain(e),
        }
    } else if e.is_timeout() {
        EtcdError::Timeout {
            endpoint: endpoint.to_string(),
            timeout_ms,
        }
    } else {
        EtcdError::Transport {
            endpoint: endpoint.to_string(),
            message: error_chain(e),
        }
    }
}
