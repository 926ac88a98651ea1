//! The mutex (acquire / release) and counter (add / read) models.
//!
//! Owns `MutexModel` and `CounterModel`. Counter values stay numeric: a delta or a read value that
//! is not an integer is an error naming the op; a read of `null` is 0 (a key nobody added to, as
//! Jepsen's independent counters read it). Does not own the search or history parsing.

use super::{Convert, Model, Outcome, bad, int_arg, outcome, wrap};
use crate::history::Op;
use serde_json::Value;

/// A mutex op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MutexOp {
    /// Acquire: requires the mutex free.
    Acquire,
    /// Release: requires the mutex held.
    Release,
}

/// A mutex with `acquire` and `release`; state `true` = held. Owners are not tracked (as Knossos).
#[derive(Debug, Clone, Copy, Default)]
pub struct MutexModel;

impl Model for MutexModel {
    type State = bool;
    type Op = MutexOp;

    fn name(&self) -> &'static str {
        "mutex"
    }

    fn init(&self) -> bool {
        false
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<MutexOp>, String> {
        let op = match invoke.f.as_str() {
            "acquire" => MutexOp::Acquire,
            "release" => MutexOp::Release,
            f => {
                return Err(format!(
                    "op {} (process {}): mutex model has no operation {f:?}",
                    invoke.index, invoke.process
                ));
            }
        };
        Ok(wrap(outcome(completion), op))
    }

    fn step(&self, s: &bool, op: &MutexOp) -> Option<bool> {
        match op {
            MutexOp::Acquire => (!*s).then_some(true),
            MutexOp::Release => (*s).then_some(false),
        }
    }

    fn describe_op(&self, op: &MutexOp) -> String {
        match op {
            MutexOp::Acquire => "acquire".into(),
            MutexOp::Release => "release".into(),
        }
    }

    fn describe_state(&self, s: &bool) -> String {
        if *s { "held" } else { "free" }.into()
    }
}

/// A counter op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CounterOp {
    /// Add a (possibly negative) delta.
    Add(i64),
    /// A read that observed this value.
    Read(i64),
}

/// An integer counter starting at 0 with `add` (value = delta) and `read` (`null` reads as 0).
#[derive(Debug, Clone, Copy, Default)]
pub struct CounterModel;

impl Model for CounterModel {
    type State = i64;
    type Op = CounterOp;

    fn name(&self) -> &'static str {
        "counter"
    }

    fn init(&self) -> i64 {
        0
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<CounterOp>, String> {
        let o = outcome(completion);
        match invoke.f.as_str() {
            "add" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                Ok(wrap(
                    o,
                    CounterOp::Add(int_arg(invoke, completion, "an integer delta")?),
                ))
            }
            "read" => match o {
                Outcome::Ok(c) => match &c.value {
                    Value::Null => Ok(Convert::Completed(CounterOp::Read(0))),
                    v => v
                        .as_i64()
                        .map(|v| Convert::Completed(CounterOp::Read(v)))
                        .ok_or_else(|| bad(invoke, "an integer (or null) counter read", v)),
                },
                _ => Ok(Convert::Skip),
            },
            f => Err(format!(
                "op {} (process {}): counter model has no operation {f:?}",
                invoke.index, invoke.process
            )),
        }
    }

    fn step(&self, s: &i64, op: &CounterOp) -> Option<i64> {
        match *op {
            CounterOp::Add(d) => s.checked_add(d),
            CounterOp::Read(v) => (*s == v).then_some(*s),
        }
    }

    fn is_read_only(&self, op: &CounterOp) -> bool {
        matches!(op, CounterOp::Read(_))
    }

    fn describe_op(&self, op: &CounterOp) -> String {
        match op {
            CounterOp::Add(d) => format!("add {d}"),
            CounterOp::Read(v) => format!("read → {v}"),
        }
    }

    fn describe_state(&self, s: &i64) -> String {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{conv, done, inv, run};
    use super::*;
    use crate::history::OpType;
    use serde_json::json;

    #[test]
    fn mutex_acquire_release() {
        let m = MutexModel;
        use MutexOp::*;
        assert_eq!(run(&m, &[Acquire, Release, Acquire]), Some(true));
        assert!(run(&m, &[Acquire, Acquire]).is_none());
        assert!(run(&m, &[Release]).is_none());
        assert_eq!(
            conv(&m, "acquire", Value::Null, Some(OpType::Fail), Value::Null),
            Convert::Skip
        );
    }

    #[test]
    fn counter_add_read() {
        let m = CounterModel;
        use CounterOp::*;
        assert_eq!(run(&m, &[Add(2), Add(-1), Read(1)]), Some(1));
        assert!(run(&m, &[Add(2), Read(1)]).is_none());
        assert!(
            run(&m, &[Add(i64::MAX), Add(1)]).is_none(),
            "overflow is inconsistent, not a panic"
        );
        let e = m.convert(&inv("add", json!("x")), None).unwrap_err();
        assert!(e.contains("op 0 (process 0 add)"), "{e}");
        assert_eq!(
            conv(&m, "read", Value::Null, Some(OpType::Ok), Value::Null),
            Convert::Completed(Read(0)),
            "a key never added to reads nil = 0"
        );
        let e = m
            .convert(
                &inv("read", Value::Null),
                Some(&done(OpType::Ok, "read", json!("7"))),
            )
            .unwrap_err();
        assert!(
            e.contains("integer (or null) counter read, got \"7\""),
            "{e}"
        );
    }
}
