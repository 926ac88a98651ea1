//! Requested faults that never ran: the nemesis asked for in test.json against the nemesis ops
//! the history recorded.
//!
//! Owns the comparison and its words, a pure function of test.json's value and a [`History`]
//! (no IO). A schedule with `order = "random"` draws one fault every two intervals (start,
//! wait, stop, wait), in rounds that give every kind a turn before one repeats
//! (`generator::nemesis_cycle`), so a requested kind goes undrawn only in a run too short for
//! one draw per kind (`--nemesis partition,kill,pause` at the default 5 s interval makes about
//! six draws in 60 s: every kind twice), and one entry of a kind listed twice (the `partition`
//! package's `one` and `halves`) can still go undrawn when the seed picks the other each time.
//! A sequential or stacked schedule reaches faults in list order and can run out of time before
//! the last ones. A fault can also be drawn and fail every time (a kernel without netem). Does
//! not own the schedule (`generator::nemesis`), the spec (`spec::NemesisSpec`) or fault
//! intervals (`report::faults`). The runner records what it finds in results.json
//! (`store::NEVER_RAN_KEY`), which the run page reads: the report imports no spec.

use crate::history::{History, OpType, Process};
use crate::report::phases;
use crate::spec::{FaultOrder, NemesisSpec};
pub use crate::store::NeverRan;
use serde_json::Value;

/// Longest error text quoted in [`NeverRan::why`].
const MAX_ERROR_CHARS: usize = 160;

/// What the history shows of one requested fault.
#[derive(Default)]
struct Seen {
    drawn: u64,
    took_effect: u64,
    error: Option<String>,
}

/// Whether an invoke's value is the requested start value: equal, or (objects) every requested
/// key with its value (the runner may add keys, e.g. a strobe's `offsets_every_ms`).
fn value_matches(requested: &Value, invoked: &Value) -> bool {
    match (requested, invoked) {
        (Value::Object(r), Value::Object(i)) => r.iter().all(|(k, v)| i.get(k) == Some(v)),
        _ => requested == invoked,
    }
}

/// The names of requested faults: the kind, the clock mode, and for a kind requested twice
/// its start value.
fn names(spec: &NemesisSpec) -> Vec<String> {
    let base: Vec<String> = spec
        .faults
        .iter()
        .map(|f| {
            let v = serde_json::to_value(f).unwrap_or(Value::Null);
            let kind = v["kind"].as_str().unwrap_or("fault").to_string();
            match v["mode"].as_str() {
                Some(mode) => format!("{kind} ({mode})"),
                None => kind,
            }
        })
        .collect();
    base.iter()
        .zip(&spec.faults)
        .map(|(name, f)| {
            if base.iter().filter(|b| *b == name).count() < 2 {
                return name.clone();
            }
            match f.ops().value {
                Value::String(s) => format!("{name} ({s})"),
                Value::Null => name.clone(),
                other => format!("{name} ({other})"),
            }
        })
        .collect()
}

/// The requested faults (test.json's `nemesis.spec`) that never took effect in `history`, in
/// request order; empty when all did, when none was requested, or when test.json holds no
/// readable nemesis spec.
pub fn never_ran(test: &Value, history: &History) -> Vec<NeverRan> {
    let Some(spec) = test
        .get("nemesis")
        .and_then(|n| n.get("spec"))
        .and_then(|s| serde_json::from_value::<NemesisSpec>(s.clone()).ok())
    else {
        return Vec::new();
    };
    if spec.faults.is_empty() {
        return Vec::new();
    }
    let starts: Vec<(&'static str, Value)> = spec
        .faults
        .iter()
        .map(|f| {
            let ops = f.ops();
            (ops.start.as_str(), ops.value)
        })
        .collect();
    let mut seen: Vec<Seen> = starts.iter().map(|_| Seen::default()).collect();
    let mut draws = 0u64;
    // Nemesis ops pair up as (invocation, completion) of the same `f`.
    let mut pending: Option<&crate::history::Op> = None;
    let mut end_ns = 0;
    for op in &history.ops {
        end_ns = end_ns.max(op.time_ns);
        if op.process != Process::Nemesis {
            continue;
        }
        let Some(invoke) = pending.filter(|p| op.op_type != OpType::Invoke && p.f == op.f) else {
            pending = Some(op);
            let mut drawn = false;
            for ((verb, value), s) in starts.iter().zip(seen.iter_mut()) {
                if op.f == *verb && value_matches(value, &op.value) {
                    s.drawn += 1;
                    drawn = true;
                }
            }
            draws += u64::from(drawn);
            continue;
        };
        pending = None;
        let failed = (op.error.is_some() && !crate::faults::applied_somewhere(&op.value))
            || op.op_type == OpType::Fail;
        for ((verb, value), s) in starts.iter().zip(seen.iter_mut()) {
            if invoke.f != *verb || !value_matches(value, &invoke.value) {
                continue;
            }
            if failed {
                s.error.get_or_insert_with(|| {
                    op.error
                        .clone()
                        .unwrap_or_else(|| "the nemesis op failed".to_string())
                });
            } else {
                s.took_effect += 1;
            }
        }
    }
    // A start still running when the history ends may have taken effect.
    if let Some(p) = pending {
        for ((verb, value), s) in starts.iter().zip(seen.iter_mut()) {
            if p.f == *verb && value_matches(value, &p.value) {
                s.took_effect += 1;
            }
        }
    }
    let ran_s = phases::final_phase(history).map_or(end_ns, |p| p.workload_end_ns) as f64 / 1e9;
    let n = spec.faults.len();
    let never_drawn = match spec.order {
        FaultOrder::Random => format!(
            "never drawn by the schedule in {ran_s:.0} s ({draws} fault{} drawn at \
             random from {n} kinds, one every {} s or more)",
            plural(draws),
            num(2.0 * spec.interval_s)
        ),
        FaultOrder::Sequential => format!(
            "never reached in {ran_s:.0} s (faults start in list order, one every {} \
             s or more; {draws} started)",
            num(2.0 * spec.interval_s)
        ),
        FaultOrder::Stacked => format!(
            "never reached in {ran_s:.0} s (faults are stacked in list order, one \
             every {} s or more; {draws} started)",
            num(spec.interval_s)
        ),
    };
    names(&spec)
        .into_iter()
        .zip(seen)
        .filter(|(_, s)| s.took_effect == 0)
        .map(|(fault, s)| {
            let why = match s.error {
                None => never_drawn.clone(),
                Some(e) => format!(
                    "drawn {} time{}, never took effect: {}",
                    s.drawn,
                    plural(s.drawn),
                    cut(&e, MAX_ERROR_CHARS)
                ),
            };
            NeverRan { fault, why }
        })
        .collect()
}

/// "requested faults never in effect — pause: never drawn by the schedule in 60 s (…)", or
/// `None` when every requested fault ran.
pub fn summary_line(never: &[NeverRan]) -> Option<String> {
    if never.is_empty() {
        return None;
    }
    let items: Vec<String> = never
        .iter()
        .map(|n| format!("{}: {}", n.fault, n.why))
        .collect();
    Some(format!(
        "requested faults never in effect — {}",
        items.join("; ")
    ))
}

use crate::plural::s as plural;

/// A number without a needless fraction: `10`, `2.5`.
fn num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// `s` cut to `max` characters, with "…" when cut.
fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Op;
    use serde_json::json;

    const S: u64 = 1_000_000_000;

    fn nem(time_s: u64, f: &str, value: Value) -> Op {
        let mut o = Op::new(OpType::Info, Process::Nemesis, f, value);
        o.time_ns = time_s * S;
        o
    }

    fn client(t: OpType, time_s: u64) -> Op {
        let mut o = Op::new(t, Process::Client(0), "read", Value::Null);
        o.time_ns = time_s * S;
        o.key = Some("k".into());
        o
    }

    fn test_json(faults: Value, order: &str) -> Value {
        json!({"nemesis": {"name": "partition,kill,pause", "spec": {
            "faults": faults, "interval_s": 5.0, "order": order,
            "clock_offsets_interval_s": 1.0}}})
    }

    fn three() -> Value {
        json!([
            {"kind": "partition", "shape": "one"},
            {"kind": "kill", "targets": "one"},
            {"kind": "pause", "targets": "one"}
        ])
    }

    /// A 60 s run of `--nemesis partition,kill,pause` whose seed drew partitions and kills
    /// only, then the final heal and reads.
    fn no_pause_history() -> History {
        let mut ops = vec![client(OpType::Invoke, 1), client(OpType::Ok, 1)];
        for (i, (start, value, stop)) in [
            ("start-partition", json!("one"), "stop-partition"),
            ("kill", json!("one"), "start"),
            ("kill", json!("one"), "start"),
            ("start-partition", json!("one"), "stop-partition"),
            ("kill", json!("one"), "start"),
            ("start-partition", json!("one"), "stop-partition"),
        ]
        .into_iter()
        .enumerate()
        {
            let t = 5 + 10 * i as u64;
            ops.push(nem(t, start, value));
            ops.push(nem(t, start, json!({"nodes": ["n2"]})));
            if t + 5 < 60 {
                ops.push(nem(t + 5, stop, Value::Null));
                ops.push(nem(t + 5, stop, json!("healed")));
            }
        }
        ops.push(client(OpType::Invoke, 59));
        ops.push(client(OpType::Ok, 60));
        for stop in ["stop-partition", "start", "resume"] {
            ops.push(nem(60, stop, Value::Null));
            ops.push(nem(60, stop, json!({"nodes": []})));
        }
        ops.push(client(OpType::Invoke, 63));
        ops.push(client(OpType::Ok, 63));
        History::from_ops(ops)
    }

    #[test]
    fn a_kind_the_random_schedule_never_drew_is_named_with_why() {
        let never = never_ran(&test_json(three(), "random"), &no_pause_history());
        assert_eq!(
            never,
            [NeverRan {
                fault: "pause".into(),
                why: "never drawn by the schedule in 60 s (6 faults drawn at random \
                      from 3 kinds, one every 10 s or more)"
                    .into()
            }]
        );
        assert_eq!(
            summary_line(&never).unwrap(),
            "requested faults never in effect — pause: never drawn by the schedule in 60 s (6 \
             faults drawn at random from 3 kinds, one every 10 s or more)"
        );
        // The final heal's `resume` is no pause.
        let sequential = never_ran(&test_json(three(), "sequential"), &no_pause_history());
        assert!(
            sequential[0].why.starts_with("never reached in 60 s"),
            "{sequential:?}"
        );
    }

    #[test]
    fn every_kind_drawn_is_nothing_to_say() {
        let mut h = no_pause_history();
        h.ops.insert(2, nem(2, "pause", json!("one")));
        h.ops.insert(3, nem(2, "pause", json!({"nodes": ["n1"]})));
        let h = History::from_ops(h.ops);
        assert_eq!(never_ran(&test_json(three(), "random"), &h), []);
        assert_eq!(summary_line(&[]), None);
        // No nemesis, or an unreadable spec: nothing to compare.
        assert_eq!(never_ran(&json!({}), &h), []);
        assert_eq!(
            never_ran(
                &json!({"nemesis": {"name": "x", "spec": {"faults": 3}}}),
                &h
            ),
            []
        );
        assert_eq!(never_ran(&test_json(json!([]), "random"), &h), []);
    }

    #[test]
    fn a_fault_drawn_that_failed_every_time_and_faults_told_apart_by_their_values() {
        let faults = json!([
            {"kind": "partition", "shape": "one"},
            {"kind": "partition", "shape": "halves"},
            {"kind": "delay", "targets": "one", "delay_ms": 40, "jitter_ms": 5},
            {"kind": "clock", "mode": "strobe", "targets": "one", "min_delta_ms": 50,
             "max_delta_ms": 200, "max_period_ms": 100, "duration_ms": 1500}
        ]);
        let mut strobe = json!({"targets": "one", "min_delta_ms": 50, "max_delta_ms": 200,
                                "max_period_ms": 100, "duration_ms": 1500});
        strobe["offsets_every_ms"] = json!(100);
        let mut failed = nem(
            3,
            "start-delay",
            json!({"delay_ms": 40, "jitter_ms": 5, "targets": "one"}),
        );
        failed.error = Some("netem not available in this kernel".into());
        let h = History::from_ops(vec![
            client(OpType::Invoke, 1),
            client(OpType::Ok, 1),
            nem(2, "start-partition", json!("one")),
            nem(2, "start-partition", json!({"grudge": {}})),
            nem(
                3,
                "start-delay",
                json!({"delay_ms": 40, "jitter_ms": 5, "targets": "one"}),
            ),
            failed,
            nem(4, "strobe-clock", strobe),
            nem(5, "strobe-clock", json!({"nodes": ["n1"], "ran_ms": 1000})),
        ]);
        let never = never_ran(&test_json(faults, "random"), &h);
        let got: Vec<(&str, &str)> = never
            .iter()
            .map(|n| (n.fault.as_str(), n.why.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "partition (halves)",
                    "never drawn by the schedule in 5 s (3 faults drawn at random from \
                     4 kinds, one every 10 s or more)"
                ),
                (
                    "delay",
                    "drawn 1 time, never took effect: netem not available in this kernel"
                ),
            ]
        );
    }

    #[test]
    fn the_all_faults_fixture_names_its_failed_delay() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports/all-faults");
        let test: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
        let h = History::read_file(&dir.join("history.jsonl")).unwrap();
        let never = never_ran(&test, &h);
        assert_eq!(never.len(), 1, "{never:?}");
        assert_eq!(never[0].fault, "delay");
        assert!(
            never[0]
                .why
                .starts_with("drawn 1 time, never took effect: netem not available in this kernel"),
            "{never:?}"
        );
    }
}
