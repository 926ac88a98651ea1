//! The key-value model: `get`, `put` and `append` on string values, keys from `Op::key`.
//!
//! Owns `KvModel` and its one semantic switch, what a never-written key holds: absent (a `get`
//! returns `null`), or the empty string as in Porcupine's kv model (a `get` of a never-written key
//! returns `""`, and a `null` get means `""`). Does not own the search or history parsing.

use super::{Convert, Model, Outcome, bad, outcome, wrap};
use crate::history::Op;
use serde_json::Value;
use std::collections::BTreeMap;

/// A key-value op; keys come from `Op::key` (`""` when absent).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KvOp {
    /// `get` observed this value (`None` = absent).
    Get(String, Option<String>),
    /// `put` a value.
    Put(String, String),
    /// `append` a string to the value (absent counts as empty).
    Append(String, String),
}

/// Key-value map with `get`, `put` and `append`; values are strings (integers are stringified).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KvModel {
    /// Every key starts as `""` (Porcupine) instead of absent.
    pub missing_is_empty: bool,
}

impl KvModel {
    /// Porcupine's kv model: every key starts as the empty string.
    pub fn porcupine() -> KvModel {
        KvModel {
            missing_is_empty: true,
        }
    }
}

fn string_value(invoke: &Op, v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(bad(invoke, "a string value", other)),
    }
}

impl Model for KvModel {
    type State = BTreeMap<String, String>;
    type Op = KvOp;

    fn name(&self) -> &'static str {
        "kv"
    }

    fn init(&self) -> Self::State {
        BTreeMap::new()
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<KvOp>, String> {
        let key = invoke.key.clone().unwrap_or_default();
        let o = outcome(completion);
        match invoke.f.as_str() {
            "get" => match o {
                Outcome::Ok(c) => {
                    let v = match &c.value {
                        Value::Null if self.missing_is_empty => Some(String::new()),
                        Value::Null => None,
                        v => Some(string_value(invoke, v)?),
                    };
                    Ok(Convert::Completed(KvOp::Get(key, v)))
                }
                _ => Ok(Convert::Skip),
            },
            "put" | "append" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                let v = string_value(invoke, &invoke.value)?;
                let op = if invoke.f == "put" {
                    KvOp::Put(key, v)
                } else {
                    KvOp::Append(key, v)
                };
                Ok(wrap(o, op))
            }
            f => Err(format!(
                "op {} (process {}): kv model has no operation {f:?}",
                invoke.index, invoke.process
            )),
        }
    }

    fn step(&self, s: &Self::State, op: &KvOp) -> Option<Self::State> {
        match op {
            KvOp::Get(k, v) => {
                let current = match s.get(k) {
                    None if self.missing_is_empty => Some(""),
                    other => other.map(String::as_str),
                };
                (current == v.as_deref()).then(|| s.clone())
            }
            KvOp::Put(k, v) => {
                let mut n = s.clone();
                n.insert(k.clone(), v.clone());
                Some(n)
            }
            KvOp::Append(k, v) => {
                let mut n = s.clone();
                n.entry(k.clone()).or_default().push_str(v);
                Some(n)
            }
        }
    }

    fn is_read_only(&self, op: &KvOp) -> bool {
        matches!(op, KvOp::Get(..))
    }

    fn state_heap_bytes(&self, s: &Self::State) -> usize {
        let strings: usize = s.iter().map(|(k, v)| k.capacity() + v.capacity()).sum();
        super::btree_heap_bytes(s.len(), 2 * std::mem::size_of::<String>()) + strings
    }

    fn describe_op(&self, op: &KvOp) -> String {
        match op {
            KvOp::Get(k, v) => format!("get {k} → {v:?}"),
            KvOp::Put(k, v) => format!("put {k} {v:?}"),
            KvOp::Append(k, v) => format!("append {k} {v:?}"),
        }
    }

    fn describe_state(&self, s: &Self::State) -> String {
        format!("{s:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{conv, inv, run};
    use super::*;
    use crate::history::OpType;
    use serde_json::json;

    #[test]
    fn kv_get_put_append() {
        let m = KvModel::default();
        let k = || "k".to_string();
        let ops = [
            KvOp::Get(k(), None),
            KvOp::Put(k(), "a".into()),
            KvOp::Append(k(), "b".into()),
            KvOp::Get(k(), Some("ab".into())),
        ];
        assert!(run(&m, &ops).is_some());
        assert!(
            run(
                &m,
                &[
                    KvOp::Append(k(), "x".into()),
                    KvOp::Get(k(), Some("y".into()))
                ]
            )
            .is_none()
        );
        let mut i = inv("put", json!("v"));
        i.key = Some("k9".into());
        assert_eq!(
            m.convert(&i, None).unwrap(),
            Convert::Pending(KvOp::Put("k9".into(), "v".into()))
        );
    }

    #[test]
    fn porcupine_keys_start_empty() {
        let k = || "k".to_string();
        let empty_get = [KvOp::Get(k(), Some(String::new()))];
        assert!(run(&KvModel::default(), &empty_get).is_none());
        let m = KvModel::porcupine();
        assert!(
            run(&m, &empty_get).is_some(),
            "a never-written key reads \"\""
        );
        assert!(run(&m, &[KvOp::Get(k(), Some("x".into()))]).is_none());
        assert!(
            run(
                &m,
                &[
                    KvOp::Append(k(), "x".into()),
                    KvOp::Get(k(), Some("x".into()))
                ]
            )
            .is_some()
        );
        // A null get means "" here.
        assert_eq!(
            conv(&m, "get", Value::Null, Some(OpType::Ok), Value::Null),
            Convert::Completed(KvOp::Get(String::new(), Some(String::new())))
        );
    }
}
