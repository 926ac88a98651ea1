//! The list-append model: one list of integers per key with `append` and whole-list `read`, the
//! list-append workload's ops. Does not own the search or history parsing.

use super::{Convert, Model, Outcome, bad, int_arg, outcome, wrap};
use crate::history::Op;
use serde_json::Value;

/// A list-append op on one key (the checker partitions histories by key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ListAppendOp {
    /// `append` an integer to the end of the list.
    Append(i64),
    /// `read` observed the whole list (`null` = empty).
    Read(Vec<i64>),
}

/// One list of integers per key with `append` (value: the element) and `read` (value: the whole
/// list, `null` = empty), the list-append workload's ops. Info appends may take effect or not;
/// info and failed reads impose nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListAppendModel;

impl Model for ListAppendModel {
    type State = Vec<i64>;
    type Op = ListAppendOp;

    fn name(&self) -> &'static str {
        "list-append"
    }

    fn init(&self) -> Vec<i64> {
        Vec::new()
    }

    fn convert(
        &self,
        invoke: &Op,
        completion: Option<&Op>,
    ) -> Result<Convert<ListAppendOp>, String> {
        let o = outcome(completion);
        match invoke.f.as_str() {
            "read" => match o {
                Outcome::Ok(c) => {
                    let list = match &c.value {
                        Value::Null => Vec::new(),
                        Value::Array(a) => a
                            .iter()
                            .map(|e| {
                                e.as_i64()
                                    .ok_or_else(|| bad(invoke, "a list of integers", &c.value))
                            })
                            .collect::<Result<_, _>>()?,
                        other => return Err(bad(invoke, "a list of integers", other)),
                    };
                    Ok(Convert::Completed(ListAppendOp::Read(list)))
                }
                _ => Ok(Convert::Skip),
            },
            "append" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                let e = int_arg(invoke, completion, "an integer element")?;
                Ok(wrap(o, ListAppendOp::Append(e)))
            }
            f => Err(format!(
                "op {} (process {}): list-append model has no operation {f:?}",
                invoke.index, invoke.process
            )),
        }
    }

    fn step(&self, s: &Vec<i64>, op: &ListAppendOp) -> Option<Vec<i64>> {
        match op {
            ListAppendOp::Read(l) => (s == l).then(|| s.clone()),
            ListAppendOp::Append(e) => {
                let mut n = s.clone();
                n.push(*e);
                Some(n)
            }
        }
    }

    fn is_read_only(&self, op: &ListAppendOp) -> bool {
        matches!(op, ListAppendOp::Read(_))
    }

    fn state_heap_bytes(&self, s: &Self::State) -> usize {
        s.capacity() * std::mem::size_of::<i64>()
    }

    fn describe_op(&self, op: &ListAppendOp) -> String {
        match op {
            ListAppendOp::Append(e) => format!("append {e}"),
            ListAppendOp::Read(l) => format!("read → {l:?}"),
        }
    }

    fn describe_state(&self, s: &Vec<i64>) -> String {
        format!("{s:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::OpType;

    #[test]
    fn list_append_model_steps_and_converts() {
        use crate::history::Process;
        let m = ListAppendModel;
        let s = m.init();
        let s = m.step(&s, &ListAppendOp::Append(3)).unwrap();
        let s = m.step(&s, &ListAppendOp::Append(1)).unwrap();
        assert_eq!(s, vec![3, 1]);
        assert!(m.step(&s, &ListAppendOp::Read(vec![3])).is_none());
        assert_eq!(
            m.step(&s, &ListAppendOp::Read(vec![3, 1])),
            Some(vec![3, 1])
        );
        let inv = Op::new(OpType::Invoke, Process::Client(1), "read", Value::Null);
        let ok = Op::new(
            OpType::Ok,
            Process::Client(1),
            "read",
            serde_json::json!([1, 2]),
        );
        assert_eq!(
            m.convert(&inv, Some(&ok)).unwrap(),
            Convert::Completed(ListAppendOp::Read(vec![1, 2]))
        );
        let empty = Op::new(OpType::Ok, Process::Client(1), "read", Value::Null);
        assert_eq!(
            m.convert(&inv, Some(&empty)).unwrap(),
            Convert::Completed(ListAppendOp::Read(vec![]))
        );
        let junk = Op::new(
            OpType::Ok,
            Process::Client(1),
            "read",
            serde_json::json!(["x"]),
        );
        assert!(
            m.convert(&inv, Some(&junk))
                .unwrap_err()
                .contains("list of integers")
        );
        let app = Op::new(
            OpType::Invoke,
            Process::Client(1),
            "append",
            serde_json::json!(7),
        );
        let info = Op::new(OpType::Info, Process::Client(1), "append", Value::Null);
        assert_eq!(
            m.convert(&app, Some(&info)).unwrap(),
            Convert::Pending(ListAppendOp::Append(7))
        );
        let fail = Op::new(
            OpType::Fail,
            Process::Client(1),
            "append",
            serde_json::json!(7),
        );
        assert_eq!(m.convert(&app, Some(&fail)).unwrap(), Convert::Skip);
        let w = Op::new(
            OpType::Invoke,
            Process::Client(1),
            "write",
            serde_json::json!(7),
        );
        assert!(m.convert(&w, None).unwrap_err().contains("no operation"));
    }
}
