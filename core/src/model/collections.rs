//! The set and FIFO queue models, whose elements are model values (`Scalar`: integers, or strings
//! and other values compared by equality).
//!
//! Owns `SetModel` (add / read of the whole set) and `QueueModel` (enqueue / dequeue). Does not own
//! the search or history parsing.

use super::value::{NotScalar, Scalar, Values};
use super::{Convert, Model, Outcome, bad, outcome, scalar_arg, wrap};
use crate::history::Op;
use serde_json::Value;
use std::collections::{BTreeSet, VecDeque};

/// A set op.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SetOp {
    /// Add an element.
    Add(Scalar),
    /// A read that observed exactly these elements.
    Read(BTreeSet<Scalar>),
}

/// A set with `add` and `read` (read returns all elements, `null` = empty).
#[derive(Debug, Clone, Default)]
pub struct SetModel {
    /// Interned element values.
    pub values: Values,
}

impl Model for SetModel {
    type State = BTreeSet<Scalar>;
    type Op = SetOp;

    fn name(&self) -> &'static str {
        "set"
    }

    fn init(&self) -> Self::State {
        BTreeSet::new()
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<SetOp>, String> {
        let o = outcome(completion);
        match invoke.f.as_str() {
            "add" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                let v = scalar_arg(&self.values, invoke, completion, "an element to add")?;
                Ok(wrap(o, SetOp::Add(v)))
            }
            "read" => match o {
                Outcome::Ok(c) => {
                    let empty = Vec::new();
                    let arr = match &c.value {
                        Value::Null => &empty,
                        Value::Array(a) => a,
                        other => return Err(bad(invoke, "a read value array", other)),
                    };
                    let mut set = BTreeSet::new();
                    for v in arr {
                        set.insert(self.values.scalar(v).ok_or_else(|| {
                            bad(invoke, "elements that are numbers, strings or booleans", v)
                        })?);
                    }
                    Ok(Convert::Completed(SetOp::Read(set)))
                }
                _ => Ok(Convert::Skip),
            },
            f => Err(format!(
                "op {} (process {}): set model has no operation {f:?}",
                invoke.index, invoke.process
            )),
        }
    }

    fn step(&self, s: &Self::State, op: &SetOp) -> Option<Self::State> {
        match op {
            SetOp::Add(v) => {
                let mut n = s.clone();
                n.insert(*v);
                Some(n)
            }
            SetOp::Read(r) => (s == r).then(|| s.clone()),
        }
    }

    fn is_read_only(&self, op: &SetOp) -> bool {
        matches!(op, SetOp::Read(_))
    }

    fn state_heap_bytes(&self, s: &Self::State) -> usize {
        super::btree_heap_bytes(s.len(), std::mem::size_of::<Scalar>())
    }

    fn describe_op(&self, op: &SetOp) -> String {
        match op {
            SetOp::Add(v) => format!("add {}", self.values.show(*v)),
            SetOp::Read(r) => format!("read → {}", self.values.show_all(r, "{", "}")),
        }
    }

    fn describe_state(&self, s: &Self::State) -> String {
        self.values.show_all(s, "{", "}")
    }
}

/// A queue op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueOp {
    /// Enqueue an element.
    Enqueue(Scalar),
    /// Dequeue that returned `Some(v)`, or `None` for an empty queue.
    Dequeue(Option<Scalar>),
    /// Dequeue with unknown output (crashed): removes the head if any.
    DequeueUnknown,
}

/// FIFO queue with `enqueue` and `dequeue` (ok value `null` = queue was empty).
#[derive(Debug, Clone, Default)]
pub struct QueueModel {
    /// Interned element values.
    pub values: Values,
}

impl Model for QueueModel {
    type State = VecDeque<Scalar>;
    type Op = QueueOp;

    fn name(&self) -> &'static str {
        "queue"
    }

    fn init(&self) -> Self::State {
        VecDeque::new()
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<QueueOp>, String> {
        let o = outcome(completion);
        match invoke.f.as_str() {
            "enqueue" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                let v = scalar_arg(&self.values, invoke, completion, "an element to enqueue")?;
                Ok(wrap(o, QueueOp::Enqueue(v)))
            }
            "dequeue" => match o {
                Outcome::Ok(c) => match self.values.observed(&c.value) {
                    Ok(v) => Ok(Convert::Completed(QueueOp::Dequeue(v))),
                    Err(NotScalar) => Err(bad(invoke, "a dequeued element or null", &c.value)),
                },
                Outcome::Fail(_) => Ok(Convert::Skip),
                Outcome::Unknown => Ok(Convert::Pending(QueueOp::DequeueUnknown)),
            },
            f => Err(format!(
                "op {} (process {}): queue model has no operation {f:?}",
                invoke.index, invoke.process
            )),
        }
    }

    fn step(&self, s: &Self::State, op: &QueueOp) -> Option<Self::State> {
        match *op {
            QueueOp::Enqueue(v) => {
                let mut n = s.clone();
                n.push_back(v);
                Some(n)
            }
            QueueOp::Dequeue(None) => s.is_empty().then(|| s.clone()),
            QueueOp::Dequeue(Some(v)) => {
                if s.front() == Some(&v) {
                    let mut n = s.clone();
                    n.pop_front();
                    Some(n)
                } else {
                    None
                }
            }
            QueueOp::DequeueUnknown => {
                let mut n = s.clone();
                n.pop_front();
                Some(n)
            }
        }
    }

    fn is_read_only(&self, op: &QueueOp) -> bool {
        matches!(op, QueueOp::Dequeue(None))
    }

    fn state_heap_bytes(&self, s: &Self::State) -> usize {
        s.capacity() * std::mem::size_of::<Scalar>()
    }

    fn describe_op(&self, op: &QueueOp) -> String {
        match op {
            QueueOp::Enqueue(v) => format!("enqueue {}", self.values.show(*v)),
            QueueOp::Dequeue(None) => "dequeue → empty".to_string(),
            QueueOp::Dequeue(Some(v)) => format!("dequeue → {}", self.values.show(*v)),
            QueueOp::DequeueUnknown => "dequeue → ?".to_string(),
        }
    }

    fn describe_state(&self, s: &Self::State) -> String {
        self.values.show_all(s, "[", "]")
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{conv, done, inv, run};
    use super::*;
    use crate::history::OpType;
    use serde_json::json;

    const fn i(v: i64) -> Scalar {
        Scalar::Int(v)
    }

    #[test]
    fn set_add_read() {
        let m = SetModel::default();
        let r = |v: &[i64]| SetOp::Read(v.iter().copied().map(i).collect());
        assert!(run(&m, &[SetOp::Add(i(1)), SetOp::Add(i(2)), r(&[1, 2])]).is_some());
        assert!(run(&m, &[SetOp::Add(i(1)), r(&[1, 2])]).is_none());
        assert_eq!(
            conv(&m, "read", Value::Null, Some(OpType::Ok), json!([2, 1])),
            Convert::Completed(r(&[1, 2]))
        );
        assert_eq!(
            conv(&m, "read", Value::Null, Some(OpType::Ok), Value::Null),
            Convert::Completed(r(&[]))
        );
        assert!(
            m.convert(
                &inv("read", Value::Null),
                Some(&done(OpType::Ok, "read", json!(3)))
            )
            .is_err()
        );
    }

    #[test]
    fn set_elements_of_any_type_compare_by_equality() {
        let m = SetModel::default();
        let Convert::Completed(add) = conv(&m, "add", json!("a"), Some(OpType::Ok), json!("a"))
        else {
            panic!()
        };
        let Convert::Completed(read) =
            conv(&m, "read", Value::Null, Some(OpType::Ok), json!(["a", 1]))
        else {
            panic!()
        };
        let Convert::Completed(one) = conv(&m, "add", json!(1), Some(OpType::Ok), json!(1)) else {
            panic!()
        };
        assert!(run(&m, &[add.clone(), one, read.clone()]).is_some());
        assert!(run(&m, &[add.clone(), read.clone()]).is_none());
        assert_eq!(m.describe_op(&read), "read → {1, \"a\"}");
        assert_eq!(m.describe_op(&add), "add \"a\"");
    }

    #[test]
    fn queue_is_fifo() {
        let m = QueueModel::default();
        use QueueOp::*;
        assert!(
            run(
                &m,
                &[
                    Enqueue(i(1)),
                    Enqueue(i(2)),
                    Dequeue(Some(i(1))),
                    Dequeue(Some(i(2))),
                    Dequeue(None)
                ]
            )
            .is_some()
        );
        assert!(run(&m, &[Enqueue(i(1)), Enqueue(i(2)), Dequeue(Some(i(2)))]).is_none());
        assert!(run(&m, &[Enqueue(i(1)), Dequeue(None)]).is_none());
        assert_eq!(
            run(&m, &[Enqueue(i(1)), DequeueUnknown, DequeueUnknown]),
            Some(VecDeque::new())
        );
        assert_eq!(
            conv(&m, "dequeue", Value::Null, None, Value::Null),
            Convert::Pending(DequeueUnknown)
        );
        let Convert::Completed(e) = conv(&m, "enqueue", json!("x"), Some(OpType::Ok), json!("x"))
        else {
            panic!()
        };
        let Convert::Completed(d) = conv(&m, "dequeue", Value::Null, Some(OpType::Ok), json!("x"))
        else {
            panic!()
        };
        assert!(run(&m, &[e, d]).is_some());
        assert_eq!(m.describe_op(&d), "dequeue → \"x\"");
    }
}
