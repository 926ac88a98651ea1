//! The multi-register model: Knossos `:txn` histories of `[f key value]` micro-ops over several
//! registers updated atomically. Values are model values (`Scalar`), keys strings.
//!
//! Owns `MultiRegisterModel`. Every key starts at `initial`; a read of `null` is unknown and imposes
//! nothing. Does not own the search or history parsing.

use super::value::{NotScalar, Scalar, Values};
use super::{Convert, Model, Outcome, bad, outcome, wrap};
use crate::history::Op;
use serde_json::Value;
use std::collections::BTreeMap;

/// One micro-op of a multi-register transaction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MicroOp {
    /// Read `key`, observed value (`None` = unknown, imposes nothing).
    Read(String, Option<Scalar>),
    /// Write `key`.
    Write(String, Scalar),
}

/// Several registers updated by atomic transactions `f: "txn"`, value `[["read"|"write", key, v]…]`.
#[derive(Debug, Clone)]
pub struct MultiRegisterModel {
    /// Initial value of every key.
    pub initial: Scalar,
    /// Interned values.
    pub values: Values,
}

impl MultiRegisterModel {
    /// Every key starts at the integer `initial` (Knossos: 0).
    pub fn new(initial: i64) -> MultiRegisterModel {
        MultiRegisterModel {
            initial: Scalar::Int(initial),
            values: Values::new(),
        }
    }
}

impl Model for MultiRegisterModel {
    type State = BTreeMap<String, Scalar>;
    type Op = Vec<MicroOp>;

    fn name(&self) -> &'static str {
        "multi-register"
    }

    fn init(&self) -> Self::State {
        BTreeMap::new()
    }

    fn convert(
        &self,
        invoke: &Op,
        completion: Option<&Op>,
    ) -> Result<Convert<Vec<MicroOp>>, String> {
        if invoke.f != "txn" {
            return Err(bad(
                invoke,
                "f \"txn\"",
                &Value::String(invoke.f.to_string()),
            ));
        }
        let o = outcome(completion);
        if matches!(o, Outcome::Fail(_)) {
            return Ok(Convert::Skip);
        }
        let src = match o {
            Outcome::Ok(c) => &c.value,
            _ => &invoke.value,
        };
        let known = matches!(o, Outcome::Ok(_));
        let items = src
            .as_array()
            .ok_or_else(|| bad(invoke, "a txn vector of [f key value]", src))?;
        let mut ops = Vec::new();
        for it in items {
            let parts = it.as_array().map(|a| a.as_slice());
            let Some([f, k, v]) = parts else {
                return Err(bad(invoke, "a micro-op [f key value]", it));
            };
            let key = match k {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => return Err(bad(invoke, "a string or integer key", other)),
            };
            match f.as_str() {
                Some("read") | Some("r") => {
                    let val = if known {
                        self.values
                            .observed(v)
                            .map_err(|NotScalar| bad(invoke, "a read value or null", v))?
                    } else {
                        None
                    };
                    if val.is_some() {
                        ops.push(MicroOp::Read(key, val));
                    }
                }
                Some("write") | Some("w") => {
                    let val = self
                        .values
                        .scalar(v)
                        .ok_or_else(|| bad(invoke, "a value to write", v))?;
                    ops.push(MicroOp::Write(key, val));
                }
                _ => return Err(bad(invoke, "micro-op f read or write", f)),
            }
        }
        if ops.is_empty() {
            return Ok(Convert::Skip);
        }
        Ok(wrap(o, ops))
    }

    fn step(&self, s: &Self::State, op: &Vec<MicroOp>) -> Option<Self::State> {
        let mut next = s.clone();
        for m in op {
            match m {
                MicroOp::Read(k, Some(v)) => {
                    if *next.get(k).unwrap_or(&self.initial) != *v {
                        return None;
                    }
                }
                MicroOp::Read(_, None) => {}
                MicroOp::Write(k, v) => {
                    next.insert(k.clone(), *v);
                }
            }
        }
        Some(next)
    }

    fn is_read_only(&self, op: &Vec<MicroOp>) -> bool {
        op.iter().all(|m| matches!(m, MicroOp::Read(..)))
    }

    fn state_heap_bytes(&self, s: &Self::State) -> usize {
        let keys: usize = s.keys().map(String::capacity).sum();
        super::btree_heap_bytes(
            s.len(),
            std::mem::size_of::<String>() + std::mem::size_of::<Scalar>(),
        ) + keys
    }

    fn describe_op(&self, op: &Vec<MicroOp>) -> String {
        let parts: Vec<String> = op
            .iter()
            .map(|m| match m {
                MicroOp::Read(k, v) => format!("read {k} → {}", self.values.show_opt(*v)),
                MicroOp::Write(k, v) => format!("write {k} {}", self.values.show(*v)),
            })
            .collect();
        format!("txn [{}]", parts.join(", "))
    }

    fn describe_state(&self, s: &Self::State) -> String {
        let parts: Vec<String> = s
            .iter()
            .map(|(k, v)| format!("{k}: {}", self.values.show(*v)))
            .collect();
        format!(
            "{{{}}} (others {})",
            parts.join(", "),
            self.values.show(self.initial)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::conv;
    use super::*;
    use crate::history::OpType;
    use serde_json::json;

    #[test]
    fn multi_register_txns() {
        let m = MultiRegisterModel::new(0);
        let c = conv(
            &m,
            "txn",
            json!([["read", "x", null], ["write", "y", 2]]),
            Some(OpType::Ok),
            json!([["read", "x", 0], ["write", "y", 2]]),
        );
        let Convert::Completed(op) = c else {
            panic!("{c:?}")
        };
        let s = m.step(&m.init(), &op).unwrap();
        assert_eq!(s.get("y"), Some(&Scalar::Int(2)));
        let read_y1 = vec![MicroOp::Read("y".into(), Some(Scalar::Int(1)))];
        assert_eq!(m.step(&s, &read_y1), None);
        let read_y2 = vec![MicroOp::Read("y".into(), Some(Scalar::Int(2)))];
        assert!(m.step(&s, &read_y2).is_some());
        assert_eq!(m.describe_state(&s), "{y: 2} (others 0)");
        // An info txn keeps only its writes.
        let p = conv(
            &m,
            "txn",
            json!([["read", "x", null], ["write", "x", 1]]),
            None,
            Value::Null,
        );
        assert_eq!(
            p,
            Convert::Pending(vec![MicroOp::Write("x".into(), Scalar::Int(1))])
        );
        // String values compare by equality.
        let Convert::Completed(w) = conv(
            &m,
            "txn",
            json!([["w", "x", "a"]]),
            Some(OpType::Ok),
            json!([["w", "x", "a"]]),
        ) else {
            panic!()
        };
        let Convert::Completed(r) = conv(
            &m,
            "txn",
            json!([["r", "x", null]]),
            Some(OpType::Ok),
            json!([["r", "x", "a"]]),
        ) else {
            panic!()
        };
        let s = m.step(&m.init(), &w).unwrap();
        assert!(m.step(&s, &r).is_some());
        assert!(m.step(&m.init(), &r).is_none());
        assert_eq!(m.describe_op(&r), "txn [read x → \"a\"]");
    }
}
