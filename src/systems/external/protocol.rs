//! The JSON-lines client protocol, as pure data: the `init` message, one request per op, the
//! reply a client writes, what a reply means as a `Completion`, and the words of a protocol
//! error (so the report can count them from the history alone).
//!
//! Owns the message shapes (documented for users in PROTOCOL.md) and their validation. Does no
//! IO: starting, feeding and restarting client processes is `client`'s job.

use crate::client::Completion;
use crate::generator::lock;
use crate::node::Node;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Every protocol error recorded in a history starts with this; the kind follows in
/// parentheses (`client protocol error (timeout): …`).
pub const PROTOCOL_ERROR_PREFIX: &str = "client protocol error";

/// Longest reply line accepted (a client writing more without a newline is malformed).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// How a client broke the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProtocolErrorKind {
    /// The process could not be started or did not answer `init` (the op was not sent: `fail`).
    Start,
    /// The process exited or closed its output during an op.
    Crash,
    /// No reply within the op timeout.
    Timeout,
    /// A reply to another op id.
    WrongId,
    /// A reply line that is not a valid reply.
    Malformed,
}

impl ProtocolErrorKind {
    /// Every kind.
    pub const ALL: [ProtocolErrorKind; 5] = [
        ProtocolErrorKind::Start,
        ProtocolErrorKind::Crash,
        ProtocolErrorKind::Timeout,
        ProtocolErrorKind::WrongId,
        ProtocolErrorKind::Malformed,
    ];

    /// The word in messages and results.json.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolErrorKind::Start => "start",
            ProtocolErrorKind::Crash => "crash",
            ProtocolErrorKind::Timeout => "timeout",
            ProtocolErrorKind::WrongId => "wrong-id",
            ProtocolErrorKind::Malformed => "malformed",
        }
    }
}

/// A broken protocol exchange: its kind and what happened, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    /// What kind of breakage.
    pub kind: ProtocolErrorKind,
    /// What happened, naming the client thread.
    pub detail: String,
}

impl ProtocolError {
    /// Build one.
    pub fn new(kind: ProtocolErrorKind, detail: impl Into<String>) -> ProtocolError {
        ProtocolError {
            kind,
            detail: detail.into(),
        }
    }

    /// The error text recorded on the op: `client protocol error (KIND): DETAIL`.
    pub fn message(&self) -> String {
        format!(
            "{PROTOCOL_ERROR_PREFIX} ({}): {}",
            self.kind.as_str(),
            self.detail
        )
    }

    /// The op's completion: `fail` when the op was never sent, `info` otherwise.
    pub fn completion(&self, request_value: &Value) -> Completion {
        match self.kind {
            ProtocolErrorKind::Start => Completion::Fail {
                error: self.message(),
                value: request_value.clone(),
            },
            _ => Completion::Info {
                error: self.message(),
            },
        }
    }
}

/// The kind of protocol error an op's error text records, if it is one.
pub fn classify(error: &str) -> Option<ProtocolErrorKind> {
    let rest = error
        .strip_prefix(PROTOCOL_ERROR_PREFIX)?
        .strip_prefix(" (")?;
    let (word, _) = rest.split_once(')')?;
    ProtocolErrorKind::ALL
        .into_iter()
        .find(|k| k.as_str() == word)
}

/// Protocol errors in a history, by kind (for results.json and the run page).
pub fn count_errors(history: &crate::history::History) -> BTreeMap<ProtocolErrorKind, u64> {
    let mut counts = BTreeMap::new();
    for op in &history.ops {
        count_error(&mut counts, op);
    }
    counts
}

/// Count `op` in `counts` when it is a client op the protocol failed (a history read as it
/// streams is counted one op at a time).
pub fn count_error(counts: &mut BTreeMap<ProtocolErrorKind, u64>, op: &crate::history::Op) {
    if op.is_client()
        && let Some(kind) = op.error.as_deref().and_then(classify)
    {
        *counts.entry(kind).or_default() += 1;
    }
}

/// The key of the protocol error counts in results.json (defined with the run directory).
pub use crate::store::PROTOCOL_ERRORS_KEY as RESULTS_KEY;

/// Counts as results.json stores them: `{"total": N, "by_kind": {"timeout": 2, …}}`.
pub fn counts_json(counts: &BTreeMap<ProtocolErrorKind, u64>) -> Value {
    let by_kind: Map<String, Value> = counts
        .iter()
        .map(|(k, n)| (k.as_str().to_string(), (*n).into()))
        .collect();
    json!({ "total": counts.values().sum::<u64>(), "by_kind": by_kind })
}

/// One line for people: `3 (timeout 2, crash 1)`, or `0` (defined with the run directory).
pub use crate::store::protocol_errors_line as counts_line;

/// What a client learns once, before its first op.
#[derive(Debug, Clone, PartialEq)]
pub struct Init {
    /// The worker thread (0-based).
    pub thread: usize,
    /// The node this thread is bound to.
    pub node: String,
    /// Every node, in order.
    pub nodes: Vec<Node>,
    /// The spec's option values.
    pub options: BTreeMap<String, String>,
    /// How long the controller waits for each reply.
    pub timeout_ms: u64,
    /// A seed for the client's own random choices.
    pub seed: u64,
    /// The workload's kind (`register`, `lock`, …), so a client can prepare for its ops.
    pub workload: String,
}

impl Init {
    /// The `init` line (without its newline).
    pub fn to_line(&self) -> String {
        let nodes: Vec<Value> = self
            .nodes
            .iter()
            .map(|n| json!({ "name": n.name, "host": n.host }))
            .collect();
        json!({
            "type": "init",
            "thread": self.thread,
            "node": self.node,
            "nodes": nodes,
            "options": self.options,
            "timeout_ms": self.timeout_ms,
            "seed": self.seed,
            "workload": self.workload,
        })
        .to_string()
    }
}

/// The request line of op `id` (without its newline).
pub fn request_line(id: u64, f: &str, key: Option<&str>, value: &Value) -> String {
    let mut m = Map::with_capacity(4);
    m.insert("id".into(), id.into());
    m.insert("f".into(), f.into());
    m.insert("key".into(), key.map_or(Value::Null, Value::from));
    m.insert("value".into(), value.clone());
    Value::Object(m).to_string()
}

/// Check the answer to `init`: `{"type":"init_ok"}`.
pub fn parse_init_reply(line: &str) -> Result<(), String> {
    let v: Value =
        serde_json::from_str(line).map_err(|_| format!("not JSON: {}", excerpt(line)))?;
    match v.get("type").and_then(Value::as_str) {
        Some("init_ok") => Ok(()),
        Some("error") => Err(format!(
            "the client refused init: {}",
            v.get("error")
                .and_then(Value::as_str)
                .unwrap_or("no reason given")
        )),
        _ => Err(format!(
            "expected {{\"type\":\"init_ok\"}}, got {}",
            excerpt(line)
        )),
    }
}

/// A line cut to 120 characters for messages.
pub fn excerpt(line: &str) -> String {
    let t = line.trim_end();
    if t.chars().count() <= 120 {
        format!("{t:?}")
    } else {
        let cut: String = t.chars().take(120).collect();
        format!("{cut:?}…")
    }
}

/// The completion a reply line gives op `id` whose request carried `request_value`.
///
/// `ok` takes `value` from the reply (a read's result; absent = nil) or, for other functions
/// when absent or null, the request's value; `fail` echoes the request's value (the checker reads a
/// failed cas's `[old, new]`). The lock workloads: an ok `lock-acquire` must carry
/// `{"token": N}`; their other ops always record the request's value. A line that is not a
/// reply to `id` is a protocol error.
pub fn parse_reply(
    line: &str,
    id: u64,
    f: &str,
    request_value: &Value,
) -> Result<Completion, ProtocolError> {
    let malformed = |why: String| ProtocolError::new(ProtocolErrorKind::Malformed, why);
    let v: Value = serde_json::from_str(line)
        .map_err(|_| malformed(format!("reply is not JSON: {}", excerpt(line))))?;
    let Some(obj) = v.as_object() else {
        return Err(malformed(format!(
            "reply is not a JSON object: {}",
            excerpt(line)
        )));
    };
    let got = obj
        .get("id")
        .ok_or_else(|| malformed(format!("reply has no \"id\": {}", excerpt(line))))?;
    if got.as_u64() != Some(id) {
        return Err(ProtocolError::new(
            ProtocolErrorKind::WrongId,
            format!("expected a reply to id {id}, got id {got}"),
        ));
    }
    let version = match obj.get("version") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| {
            malformed(format!("\"version\" must be an integer or null, got {v}"))
        })?),
    };
    let error = match obj.get("error") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("ok") => {
            let value = match obj.get("value") {
                _ if f == lock::ACQUIRE => acquire_value(obj.get("value")).map_err(malformed)?,
                // The lock workloads' other ops record what was asked (value and token).
                _ if lock::FS.contains(&f) => request_value.clone(),
                Some(v) if f == "read" || !v.is_null() => v.clone(),
                None if f == "read" => Value::Null,
                // A write, cas or append reported without a value (or with null) did what it
                // was asked: record the request's value.
                _ => request_value.clone(),
            };
            Ok(Completion::Ok { value, version })
        }
        Some("fail") => Ok(Completion::Fail {
            error: error.unwrap_or_else(|| "failed".into()),
            value: request_value.clone(),
        }),
        Some("info") => Ok(Completion::Info {
            error: error.unwrap_or_else(|| "unknown outcome".into()),
        }),
        _ => Err(malformed(format!(
            "\"type\" must be \"ok\", \"fail\" or \"info\": {}",
            excerpt(line)
        ))),
    }
}

/// The value of an `ok` `lock-acquire`: `{"token": N}` with an integer token, or `null` from a
/// system without tokens; anything else is malformed (the fencing checker reads the token).
fn acquire_value(value: Option<&Value>) -> Result<Value, String> {
    let token = value
        .and_then(|v| v.as_object())
        .and_then(|o| o.get(lock::TOKEN));
    match token {
        Some(t) if t.is_null() || t.is_i64() => Ok(json!({ lock::TOKEN: t })),
        _ => Err(format!(
            "an ok {} needs \"value\": {{\"{}\": N}} (N an integer, or null without tokens), got {}",
            lock::ACQUIRE,
            lock::TOKEN,
            value.map_or_else(|| "no value".to_string(), Value::to_string)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{History, Op, OpType, Process};

    #[test]
    fn requests_and_init_are_one_json_line() {
        let l = request_line(7, "cas", Some("k1"), &json!([1, 2]));
        let v: Value = serde_json::from_str(&l).unwrap();
        assert_eq!(
            v,
            json!({"id": 7, "f": "cas", "key": "k1", "value": [1, 2]})
        );
        let init = Init {
            thread: 3,
            node: "n4".into(),
            nodes: vec![Node {
                name: "n4".into(),
                host: "10.0.0.4".into(),
            }],
            options: [("reads".to_string(), "sync".to_string())].into(),
            timeout_ms: 5000,
            seed: 9,
            workload: "lock".into(),
        };
        let l = init.to_line();
        assert!(!l.contains('\n'));
        let v: Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["type"], "init");
        assert_eq!(v["nodes"][0]["host"], "10.0.0.4");
        assert_eq!(v["options"]["reads"], "sync");
        assert_eq!(v["workload"], "lock");
        assert!(parse_init_reply("{\"type\":\"init_ok\"}").is_ok());
        let e = parse_init_reply("{\"type\":\"error\",\"error\":\"no kazoo\"}").unwrap_err();
        assert!(e.contains("no kazoo"), "{e}");
        assert!(parse_init_reply("hello").is_err());
    }

    #[test]
    fn replies_become_completions() {
        let w = json!(3);
        assert_eq!(
            parse_reply(r#"{"id":1,"type":"ok","version":4}"#, 1, "write", &w).unwrap(),
            Completion::Ok {
                value: json!(3),
                version: Some(4)
            }
        );
        assert_eq!(
            parse_reply(r#"{"id":1,"type":"ok","value":null}"#, 1, "write", &w).unwrap(),
            Completion::Ok {
                value: json!(3),
                version: None
            }
        );
        assert_eq!(
            parse_reply(r#"{"id":1,"type":"ok"}"#, 1, "read", &Value::Null).unwrap(),
            Completion::Ok {
                value: Value::Null,
                version: None
            }
        );
        assert_eq!(
            parse_reply(
                r#"{"id":2,"type":"fail","error":"cas-mismatch"}"#,
                2,
                "cas",
                &json!([1, 2])
            )
            .unwrap(),
            Completion::Fail {
                error: "cas-mismatch".into(),
                value: json!([1, 2])
            }
        );
        assert_eq!(
            parse_reply(
                r#"{"id":2,"type":"info","error":"timeout"}"#,
                2,
                "write",
                &w
            )
            .unwrap(),
            Completion::Info {
                error: "timeout".into()
            }
        );
    }

    #[test]
    fn lock_replies_carry_the_token_and_record_the_request() {
        let acquire = json!({ lock::TTL_MS: 2000 });
        let ok = |line: &str, f: &str, req: &Value| parse_reply(line, 3, f, req);
        assert_eq!(
            ok(
                r#"{"id":3,"type":"ok","value":{"token":41}}"#,
                lock::ACQUIRE,
                &acquire
            )
            .unwrap(),
            Completion::Ok {
                value: json!({ lock::TOKEN: 41 }),
                version: None
            }
        );
        assert_eq!(
            ok(
                r#"{"id":3,"type":"ok","value":{"token":null}}"#,
                lock::ACQUIRE,
                &acquire
            )
            .unwrap(),
            Completion::Ok {
                value: json!({ lock::TOKEN: null }),
                version: None
            }
        );
        for bad in [
            r#"{"id":3,"type":"ok"}"#,
            r#"{"id":3,"type":"ok","value":7}"#,
            r#"{"id":3,"type":"ok","value":{"token":"7"}}"#,
        ] {
            let e = ok(bad, lock::ACQUIRE, &acquire).unwrap_err();
            assert_eq!(e.kind, ProtocolErrorKind::Malformed, "{bad}");
            assert!(e.detail.contains(lock::ACQUIRE), "{}", e.detail);
        }
        // A protected write records its request (value and token), whatever the client echoes.
        let w = json!({ lock::VALUE: 5, lock::TOKEN: 41 });
        assert_eq!(
            ok(r#"{"id":3,"type":"ok","value":99}"#, lock::FENCED_WRITE, &w).unwrap(),
            Completion::Ok {
                value: w.clone(),
                version: None
            }
        );
        let refused = format!(
            r#"{{"id":3,"type":"fail","error":"{}"}}"#,
            lock::STALE_TOKEN
        );
        assert_eq!(
            ok(&refused, lock::FENCED_WRITE, &w).unwrap(),
            Completion::Fail {
                error: lock::STALE_TOKEN.into(),
                value: w
            }
        );
    }

    #[test]
    fn broken_replies_are_protocol_errors_of_their_kind() {
        let cases = [
            ("garbage", ProtocolErrorKind::Malformed),
            ("[1,2]", ProtocolErrorKind::Malformed),
            (r#"{"type":"ok"}"#, ProtocolErrorKind::Malformed),
            (r#"{"id":9,"type":"ok"}"#, ProtocolErrorKind::WrongId),
            (r#"{"id":"1","type":"ok"}"#, ProtocolErrorKind::WrongId),
            (r#"{"id":1,"type":"maybe"}"#, ProtocolErrorKind::Malformed),
            (
                r#"{"id":1,"type":"ok","version":"v1"}"#,
                ProtocolErrorKind::Malformed,
            ),
        ];
        for (line, kind) in cases {
            let e = parse_reply(line, 1, "write", &json!(1)).unwrap_err();
            assert_eq!(e.kind, kind, "{line}: {e:?}");
            // Recorded as info (the op was sent), and recognised again from its text.
            let c = e.completion(&json!(1));
            assert_eq!(c.op_type(), OpType::Info);
            assert_eq!(classify(c.error().unwrap()), Some(kind));
        }
        let start = ProtocolError::new(ProtocolErrorKind::Start, "no such program");
        assert_eq!(start.completion(&json!(1)).op_type(), OpType::Fail);
        assert_eq!(classify("cas-mismatch"), None);
        assert_eq!(classify("client protocol error (bogus): x"), None);
    }

    #[test]
    fn errors_are_counted_from_the_history() {
        let mut ops = Vec::new();
        for (i, err) in [
            Some(ProtocolError::new(ProtocolErrorKind::Timeout, "t0").message()),
            Some(ProtocolError::new(ProtocolErrorKind::Timeout, "t1").message()),
            Some(ProtocolError::new(ProtocolErrorKind::Crash, "t2").message()),
            Some("cas-mismatch".to_string()),
            None,
        ]
        .into_iter()
        .enumerate()
        {
            let mut op = Op::new(
                OpType::Info,
                Process::Client(i as u64),
                "write",
                Value::Null,
            );
            op.error = err;
            ops.push(op);
        }
        let counts = count_errors(&History {
            ops,
            ..Default::default()
        });
        assert_eq!(counts.get(&ProtocolErrorKind::Timeout), Some(&2));
        assert_eq!(counts.get(&ProtocolErrorKind::Crash), Some(&1));
        assert_eq!(counts.len(), 2);
        let stored = counts_json(&counts);
        assert_eq!(stored["total"], 3);
        assert_eq!(counts_line(&stored), "3 (crash 1, timeout 2)");
        assert_eq!(counts_line(&counts_json(&BTreeMap::new())), "0");
    }
}
