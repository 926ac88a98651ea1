//! Differential test of the linearizability checker against an independent reference, in each
//! register semantics, on thousands of small random histories (ok / fail / info / open ops, nil
//! reads, failed cas with and without `cas-mismatch`, integer and string values that look alike).
//!
//! Owns the reference: a brute-force search over orders of the history's raw ops, written here
//! from the semantics' definitions (docs/guide/check.md, "Register semantics") and sharing no code with
//! `core/src/checker` or `core/src/model` — it reads `serde_json::Value`s, compares them with `==` and
//! decides what every op means itself. The checker side goes through the public path a user's file
//! takes: the history is written as JSONL, a JSON array or Jepsen EDN, read back with
//! `import::read_text`, and checked with `app::check_linear_with`.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use shakedown::checker::Verdict;
use shakedown::history::{History, Op, OpType, Process};
use shakedown::import::{InputFormat, read_text};
use shakedown::model::{ModelOptions, RegisterConfig, SemanticsPreset};
use std::time::Duration;

/// The semantics under test, spelled out for the reference.
#[derive(Debug, Clone)]
struct Semantics {
    /// `None` = the register starts absent.
    initial: Option<Value>,
    /// An ok read of null observes nothing (else: observes "absent").
    nil_read_unknown: bool,
    /// A failed cas without error or with `cas-mismatch` ran and saw a value other than `old`.
    failed_cas_evidence: bool,
}

impl Semantics {
    fn options(&self) -> ModelOptions {
        let mut o = ModelOptions::preset(SemanticsPreset::Etcd);
        o.register = RegisterConfig {
            initial: self.initial.clone(),
            nil_read_is_unknown: self.nil_read_unknown,
            cas_mismatch_is_evidence: self.failed_cas_evidence,
        };
        o
    }
}

/// What a history op pair means, decided by the reference.
#[derive(Debug, Clone)]
enum Effect {
    /// Observes the register: `None` = absent.
    Read(Option<Value>),
    Write(Value),
    Cas(Value, Value),
    /// Ran, saw a value other than this one, changed nothing.
    CasMismatch(Value),
}

#[derive(Debug, Clone)]
struct RefOp {
    effect: Effect,
    /// History position of the invoke.
    call: usize,
    /// History position of the completion; `None` = may happen any time after `call`, or never.
    ret: Option<usize>,
}

/// The reference's reading of a history (well-formed by construction).
fn reference_ops(h: &History, sem: &Semantics) -> Vec<RefOp> {
    let mut out = Vec::new();
    for (i, inv) in h.ops.iter().enumerate() {
        if inv.op_type != OpType::Invoke || !inv.is_client() {
            continue;
        }
        let done = h.ops[i + 1..]
            .iter()
            .position(|o| o.process == inv.process)
            .map(|d| i + 1 + d);
        let comp = done.map(|j| &h.ops[j]);
        let kind = comp.map(|c| c.op_type);
        let definite = kind == Some(OpType::Ok);
        let pending = matches!(kind, None | Some(OpType::Info));
        let ret = if definite { done } else { None };
        let effect = match inv.f.as_str() {
            "read" if definite => {
                let v = comp.unwrap().value.clone();
                if v.is_null() {
                    if sem.nil_read_unknown {
                        continue;
                    }
                    Effect::Read(None)
                } else {
                    Effect::Read(Some(v))
                }
            }
            "write" if definite || pending => Effect::Write(inv.value.clone()),
            "cas" if definite || pending => Effect::Cas(inv.value[0].clone(), inv.value[1].clone()),
            "cas" if kind == Some(OpType::Fail) && sem.failed_cas_evidence => {
                let c = comp.unwrap();
                match c.error.as_deref() {
                    None | Some("cas-mismatch") => {
                        out.push(RefOp {
                            effect: Effect::CasMismatch(inv.value[0].clone()),
                            call: i,
                            ret: done,
                        });
                        continue;
                    }
                    Some(_) => continue,
                }
            }
            _ => continue,
        };
        out.push(RefOp {
            effect,
            call: i,
            ret,
        });
    }
    out
}

fn apply(state: &Option<Value>, e: &Effect) -> Option<Option<Value>> {
    match e {
        Effect::Read(v) => (state == v).then(|| state.clone()),
        Effect::Write(v) => Some(Some(v.clone())),
        Effect::Cas(old, new) => (state.as_ref() == Some(old)).then(|| Some(new.clone())),
        Effect::CasMismatch(old) => (state.as_ref() != Some(old)).then(|| state.clone()),
    }
}

/// Brute force: is there an order of the ops, respecting real time, in which every definite op
/// takes effect and each pending op takes effect after its invoke or never?
fn reference_linearizable(ops: &[RefOp], sem: &Semantics) -> bool {
    fn go(ops: &[RefOp], placed: &mut Vec<bool>, state: Option<Value>) -> bool {
        let all_definite_placed = ops
            .iter()
            .zip(placed.iter())
            .all(|(o, p)| *p || o.ret.is_none());
        if all_definite_placed {
            return true;
        }
        for k in 0..ops.len() {
            if placed[k] {
                continue;
            }
            // k may take effect next only if no unplaced definite op returned before k's invoke.
            let blocked = ops
                .iter()
                .enumerate()
                .any(|(j, o)| j != k && !placed[j] && o.ret.is_some_and(|r| r < ops[k].call));
            if blocked {
                continue;
            }
            if let Some(next) = apply(&state, &ops[k].effect) {
                placed[k] = true;
                let ok = go(ops, placed, next);
                placed[k] = false;
                if ok {
                    return true;
                }
            }
        }
        false
    }
    let mut placed = vec![false; ops.len()];
    go(ops, &mut placed, sem.initial.clone())
}

/// Values that look alike but differ: integers and their strings.
fn value(pick: u8) -> Value {
    match pick % 5 {
        0 => json!(0),
        1 => json!(1),
        2 => json!("1"),
        3 => json!("a"),
        _ => json!(2),
    }
}

/// A random well-formed small history: 3 processes, ok/fail/info completions, some invokes left
/// open, nil reads, failed cas with no error, `cas-mismatch` or another error.
fn random_history() -> impl Strategy<Value = History> {
    proptest::collection::vec((0u64..3, 0u8..10, any::<u8>(), any::<u8>(), 0u8..12), 1..16)
        .prop_map(|steps| {
            let mut open: [Option<(String, Value)>; 3] = [None, None, None];
            let mut ops = Vec::new();
            for (p, kind, a, b, outcome) in steps {
                let proc_ = Process::Client(p);
                match open[p as usize].take() {
                    None => {
                        let (f, v) = match kind % 3 {
                            0 => ("read", Value::Null),
                            1 => ("write", value(a)),
                            _ => ("cas", json!([value(a), value(b)])),
                        };
                        ops.push(Op::new(OpType::Invoke, proc_, f, v.clone()));
                        open[p as usize] = Some((f.to_string(), v));
                    }
                    Some((f, v)) => {
                        let t = match outcome {
                            0..7 => OpType::Ok,
                            7..10 => OpType::Fail,
                            _ => OpType::Info,
                        };
                        let v = if f == "read" && t == OpType::Ok {
                            if a % 4 == 0 { Value::Null } else { value(b) }
                        } else {
                            v
                        };
                        let mut op = Op::new(t, proc_, f.as_str(), v);
                        if t == OpType::Fail {
                            op.error = match kind % 3 {
                                0 => None,
                                1 => Some("cas-mismatch".into()),
                                _ => Some("connection refused".into()),
                            };
                        }
                        ops.push(op);
                    }
                }
            }
            History::from_ops(ops)
        })
}

/// The history as a user's file in `format`.
fn render(h: &History, format: InputFormat) -> String {
    match format {
        InputFormat::Jsonl => h
            .ops
            .iter()
            .map(|o| serde_json::to_string(o).unwrap() + "\n")
            .collect(),
        InputFormat::Json => serde_json::to_string(&h.ops).unwrap(),
        InputFormat::Edn => shakedown::edn::write_edn(h),
        other => unreachable!("{other:?}"),
    }
}

fn semantics_under_test() -> Vec<(&'static str, Semantics)> {
    let mut v = vec![
        (
            "knossos",
            Semantics {
                initial: Some(json!(0)),
                nil_read_unknown: true,
                failed_cas_evidence: false,
            },
        ),
        (
            "etcd",
            Semantics {
                initial: None,
                nil_read_unknown: false,
                failed_cas_evidence: true,
            },
        ),
    ];
    v.push((
        "custom: initial \"1\", nil absent, failed cas ignored",
        Semantics {
            initial: Some(json!("1")),
            nil_read_unknown: false,
            failed_cas_evidence: false,
        },
    ));
    v.push((
        "custom: initial 0, nil unknown, failed cas evidence",
        Semantics {
            initial: Some(json!(0)),
            nil_read_unknown: true,
            failed_cas_evidence: true,
        },
    ));
    v
}

/// Both presets the checker offers mean what the reference spells out.
#[test]
fn presets_match_the_reference_semantics() {
    let sems = semantics_under_test();
    assert_eq!(
        sems[0].1.options(),
        ModelOptions::preset(SemanticsPreset::Knossos)
    );
    assert_eq!(
        sems[1].1.options(),
        ModelOptions::preset(SemanticsPreset::Etcd)
    );
}

#[test]
fn checker_agrees_with_the_reference_in_every_semantics() {
    const CASES: usize = 1500;
    let formats = [InputFormat::Jsonl, InputFormat::Json, InputFormat::Edn];
    for (name, sem) in semantics_under_test() {
        let mut runner = TestRunner::new(Config {
            rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
            ..Config::default()
        });
        let strategy = random_history();
        let (mut valid, mut invalid) = (0usize, 0usize);
        for case in 0..CASES {
            let h = strategy.new_tree(&mut runner).unwrap().current();
            let expect = reference_linearizable(&reference_ops(&h, &sem), &sem);
            let format = formats[case % formats.len()];
            let text = render(&h, format);
            let imported = read_text(&text, "generated", Some(format), Some(false))
                .unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            let r = shakedown::checker::compose::check_linear(
                "cas-register",
                &imported.history,
                &sem.options(),
                Duration::from_secs(20),
                shakedown::checker::linear::WitnessMode::None,
            )
            .unwrap();
            let want = if expect {
                Verdict::Valid
            } else {
                Verdict::Invalid
            };
            assert_eq!(
                r.verdict,
                want,
                "semantics {name}, case {case}, {} input:\n{text}\n{}",
                format.name(),
                r.explain()
            );
            if expect {
                valid += 1;
            } else {
                invalid += 1;
            }
        }
        // The generator exercises both answers in every semantics.
        assert!(
            valid > CASES / 10 && invalid > CASES / 10,
            "{name}: {valid} valid, {invalid} invalid"
        );
    }
}
