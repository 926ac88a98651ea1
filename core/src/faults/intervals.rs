//! Fault intervals: when each injected fault was in effect, read from the nemesis ops of a
//! history, with a short label saying what was done ("isolate n5", "kill n1").
//!
//! Owns pairing nemesis invocations with their completions, starts with stops (verbs from
//! `nemesis::kinds`), the real span of faults that last exactly as long as their own op (a clock
//! strobe), faults the history never shows ending (drawn to its end), and the labels. Pure: no IO.
//! Does not own drawing the bands (`plots`), the fault timeline HTML (`page`) or what happens to
//! the workload during a fault (`report::recovery`). Lives in the pure core (under `faults`, not
//! `report`) so checkers can say which faults were active at an op (`checker::set`); `report`
//! re-exports it as `report::faults`.

use crate::faults::{self as kinds, FaultKind, VerbRole};
use crate::history::{History, Op, OpType, Process};
use serde_json::Value;
use std::collections::HashMap;

/// A span of time during which a fault was in effect.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultInterval {
    /// Fault kind: "partition", "kill", "pause", or the `X` of a `start-X`/`stop-X` nemesis pair.
    pub kind: String,
    /// When the fault took effect, seconds since run start: the completion of the starting
    /// nemesis op; for a fault that spans its own op (strobe), when the op began working.
    pub start_s: f64,
    /// When the fault was healed (completion of the stopping nemesis op; for a spanning fault,
    /// its own completion), or the end of the history if it never was, seconds since run start.
    pub end_s: f64,
    /// True when the history never shows the fault ending (no stop, or a start op that never
    /// completed, e.g. after a killed controller): `end_s` is then the end of the history.
    pub open: bool,
    /// What was done, for the chart, e.g. "isolate n3", "n1 n2 | n3 n4 n5", "kill n1".
    pub label: String,
}

/// Nemesis verb → (fault kind, starts the fault?): the verbs of [`kinds::KINDS`], else any
/// `start-X` / `stop-X` pair as kind `X`.
fn classify(f: &str) -> Option<(String, bool)> {
    if let Some((k, role)) = kinds::classify_verb(f) {
        return Some((k.name.to_string(), role == VerbRole::Start));
    }
    if let Some(k) = f.strip_prefix("start-") {
        Some((k.to_string(), true))
    } else {
        f.strip_prefix("stop-").map(|k| (k.to_string(), false))
    }
}

fn node_list(v: &Value) -> Option<Vec<String>> {
    let arr = match v {
        Value::Object(m) => match m.get("nodes").or_else(|| m.get(kinds::APPLIED_KEY)) {
            Some(n) => n.as_array()?,
            None => return m.get("node")?.as_str().map(|n| vec![n.to_string()]),
        },
        Value::Array(a) => a,
        Value::String(s) => return Some(vec![s.clone()]),
        _ => return None,
    };
    let nodes: Vec<String> = arr
        .iter()
        .map(|n| match n {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    if nodes.is_empty() { None } else { Some(nodes) }
}

/// Most nodes a label names one by one; past it, the first few and how many more.
const LABEL_NODES: usize = 5;

/// `nodes` for a label, in natural order (n2 before n10): all of them up to [`LABEL_NODES`],
/// else the first three and "+k" (a 100-node halves partition is "n1 n2 n3 +47 | n51 n52 n53
/// +47", not 40 characters of its first half).
fn nodes_label(nodes: &[String]) -> String {
    let mut sorted: Vec<&String> = nodes.iter().collect();
    let natural = |n: &String| {
        let digits = n.len() - n.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (name, num) = n.split_at(n.len() - digits);
        (name.to_string(), num.parse::<u64>().unwrap_or(0), n.clone())
    };
    sorted.sort_by_cached_key(|n| natural(n));
    if sorted.len() <= LABEL_NODES {
        return sorted
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(" ");
    }
    let head: Vec<&str> = sorted.iter().take(3).map(|n| n.as_str()).collect();
    format!("{} +{}", head.join(" "), sorted.len() - 3)
}

/// Describe a grudge (`node → nodes it drops traffic from`) by grouping nodes with identical grudges.
/// `None` unless the grudge is a clean split (every node drops exactly the nodes outside its group),
/// e.g. for overlapping "majorities ring" partitions.
fn describe_grudge(grudge: &serde_json::Map<String, Value>) -> Option<String> {
    let mut groups: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for (node, dropped) in grudge {
        let mut d: Vec<String> = dropped
            .as_array()?
            .iter()
            .map(|n| {
                n.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| n.to_string())
            })
            .collect();
        d.sort();
        match groups.iter_mut().find(|(g, _)| *g == d) {
            Some((_, members)) => members.push(node.clone()),
            None => groups.push((d, vec![node.clone()])),
        }
    }
    let mut all: Vec<&String> = groups.iter().flat_map(|(d, m)| d.iter().chain(m)).collect();
    all.sort();
    all.dedup();
    for (dropped, members) in &groups {
        let outside: Vec<&String> = all
            .iter()
            .copied()
            .filter(|n| !members.contains(n))
            .collect();
        if dropped.iter().collect::<Vec<_>>() != outside {
            return None;
        }
    }
    let mut comps: Vec<Vec<String>> = groups
        .into_iter()
        .map(|(_, mut m)| {
            m.sort();
            m
        })
        .collect();
    comps.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    match comps.as_slice() {
        [] => None,
        [single, _rest] if single.len() == 1 => Some(format!("isolate {}", single[0])),
        _ => Some(
            comps
                .iter()
                .map(|c| nodes_label(c))
                .collect::<Vec<_>>()
                .join(" | "),
        ),
    }
}

/// Longest fault label, in characters.
const LABEL_MAX_CHARS: usize = 40;

fn truncate_label(s: String) -> String {
    if s.chars().count() <= LABEL_MAX_CHARS {
        s
    } else {
        let mut t: String = s.chars().take(LABEL_MAX_CHARS - 1).collect();
        t.push('…');
        t
    }
}

/// `label` shortened so that it still fits [`truncate_label`]'s limit with `suffix` appended.
fn with_suffix(label: String, suffix: &str) -> String {
    let room = LABEL_MAX_CHARS.saturating_sub(suffix.chars().count());
    let base = if label.chars().count() > room {
        let mut t: String = label.chars().take(room.saturating_sub(1)).collect();
        t.push('…');
        t
    } else {
        label
    };
    format!("{base}{suffix}")
}

/// A number from the completion value, else from the invocation value.
fn arg_f64(key: &str, invoke: Option<&Value>, done: &Value) -> Option<f64> {
    done.get(key)
        .and_then(Value::as_f64)
        .or_else(|| invoke.and_then(|v| v.get(key)).and_then(Value::as_f64))
}

/// `x` without a trailing ".0" for whole numbers.
pub fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn fault_label(kind: &str, f: &str, invoke: Option<&Value>, done: &Value) -> String {
    let inv_str = invoke.and_then(|v| v.as_str());
    let nodes = node_list(done)
        .or_else(|| invoke.and_then(node_list))
        .map(|n| nodes_label(&n));
    let arg = |key: &str| arg_f64(key, invoke, done);
    let label = match kind {
        "partition" => {
            if let Some(g) = done.get("grudge").and_then(|g| g.as_object()) {
                describe_grudge(g).or_else(|| inv_str.map(|s| format!("partition {s}")))
            } else {
                done.as_str().or(inv_str).map(|s| format!("partition {s}"))
            }
        }
        "clock" if kinds::classify_verb(f).is_some() => {
            let delta = arg("delta_ms")
                .map(|d| format!(" {}{} ms", if d >= 0.0 { "+" } else { "" }, num(d)));
            let period = arg("period_ms").map(|p| format!(" every {} ms", num(p)));
            Some(format!(
                "{f} {}{}{}",
                nodes.clone().unwrap_or_default(),
                delta.unwrap_or_default(),
                period.unwrap_or_default()
            ))
        }
        "loss" => Some(format!(
            "loss {}{}",
            arg("probability")
                .map(|p| format!("{}% ", num((p * 1000.0).round() / 10.0)))
                .unwrap_or_default(),
            nodes.clone().unwrap_or_default()
        )),
        "bandwidth" => Some(format!(
            "bandwidth {}{}",
            arg("rate_kbit")
                .map(|r| format!("{} kbit/s ", num(r)))
                .unwrap_or_default(),
            nodes.clone().unwrap_or_default()
        )),
        "delay" => {
            let label = format!(
                "delay {}{}",
                arg("delay_ms")
                    .map(|d| match arg("jitter_ms") {
                        Some(j) if j > 0.0 => format!("{}±{} ms ", num(d), num(j)),
                        _ => format!("{} ms ", num(d)),
                    })
                    .unwrap_or_default(),
                nodes.clone().unwrap_or_default()
            );
            // The completion names what served it (one backend, or one per node).
            return match done.get("backend") {
                Some(Value::String(b)) if b != "auto" => {
                    with_suffix(label.trim().to_string(), &format!(" ({b})"))
                }
                Some(Value::Object(_)) => with_suffix(label.trim().to_string(), " (mixed)"),
                _ => truncate_label(label.trim().to_string()),
            };
        }
        "stall" => done.get("process").and_then(Value::as_u64).map(|p| {
            let ms = arg("duration_ms").map(|d| format!(" {} ms", num(d)));
            format!("stall process {p}{}", ms.unwrap_or_default())
        }),
        // The verb says which corruption (`bitflip n3`, `truncate n3`).
        "corrupt" => nodes.map(|n| format!("{f} {n}")),
        "disk" => nodes.map(|n| match done.get("fault").and_then(Value::as_str) {
            Some(what) => format!("disk {what} {n}"),
            None => format!("disk fault {n}"),
        }),
        _ => nodes.map(|n| format!("{kind} {n}")),
    };
    truncate_label(
        label
            .map(|l| l.trim().to_string())
            .unwrap_or_else(|| kind.to_string()),
    )
}

/// When a spanning fault (a strobe) was in effect, in seconds, from its completion `done`: it
/// ended `ended_ms_before` the completion (0 when absent) and lasted `ran_ms`; histories without
/// `ran_ms` give the span from its invocation to its completion.
pub fn spanned(done: &Op, invoke: Option<&Op>) -> (f64, f64) {
    let ms = |key: &str| {
        done.value
            .get(key)
            .and_then(Value::as_f64)
            .filter(|x| x.is_finite() && *x >= 0.0)
    };
    let done_s = done.time_ns as f64 / 1e9;
    let end_s = (done_s - ms("ended_ms_before").unwrap_or(0.0) / 1e3).max(0.0);
    match (ms("ran_ms"), invoke) {
        (Some(ran), _) => ((end_s - ran / 1e3).max(0.0), end_s),
        (None, Some(i)) => (i.time_ns as f64 / 1e9, done_s),
        (None, None) => (done_s, done_s),
    }
}

/// Fault intervals of a history, ordered by start time.
///
/// Nemesis ops come in pairs (invocation, completion) of the same `f`; an interval runs from the
/// completion of a starting op (`start-partition`, `kill`, `pause`, `start-X`) to the completion of
/// the matching stopping op (`stop-partition`, `start`, `resume`, `stop-X`); verbs and kinds come
/// from [`kinds::KINDS`]. One-shot kinds (promote) give a zero-width interval at their completion.
/// A spanning verb ([`kinds::spans_its_op`], the clock strobe) is in effect while its op runs,
/// as its completion value reports ([`spanned`]); the stop that follows (a `reset-clock`) then
/// finds nothing open.
/// A completion carrying an `error` (or typed `fail`) is treated as not having happened.
/// A stop with no open fault of its kind is ignored; a second start while one is open extends the
/// open interval's label. Faults the history never shows ending run to the end of the history and
/// are marked `open`: a start never stopped, and a start op invoked but never completed (the
/// controller died while injecting; the fault may be in effect), which starts at its invocation.
pub fn fault_intervals(history: &History) -> Vec<FaultInterval> {
    let mut end_ns = 0;
    let mut out: Vec<FaultInterval> = Vec::new();
    let mut open: HashMap<String, usize> = HashMap::new();
    let mut pending: Option<&Op> = None;
    for op in history.ops.iter() {
        end_ns = end_ns.max(op.time_ns);
        if op.process != Process::Nemesis {
            continue;
        }
        let is_completion = match (op.op_type, pending) {
            (OpType::Invoke, _) => false,
            (_, Some(p)) => p.f == op.f,
            (_, None) => false,
        };
        if !is_completion {
            pending = Some(op);
            continue;
        }
        let invoke = pending.take();
        // A partly applied fault (`{"applied": [..], "failed": {..}}`) is in effect where applied.
        let partly = kinds::applied_somewhere(&op.value);
        if (op.error.is_some() && !partly) || op.op_type == OpType::Fail {
            continue;
        }
        let Some((kind, starts)) = classify(&op.f) else {
            continue;
        };
        let t_s = op.time_ns as f64 / 1e9;
        if starts {
            let label = fault_label(&kind, &op.f, invoke.map(|p| &p.value), &op.value);
            if kinds::spans_its_op(&op.f) {
                let (start_s, end_s) = spanned(op, invoke);
                out.push(FaultInterval {
                    kind,
                    start_s,
                    end_s,
                    open: false,
                    label,
                });
                continue;
            }
            if kinds::kind(&kind).is_some_and(FaultKind::one_shot) {
                // An instantaneous event (e.g. promote): a zero-width interval, drawn as a line.
                out.push(FaultInterval {
                    kind,
                    start_s: t_s,
                    end_s: t_s,
                    open: false,
                    label,
                });
                continue;
            }
            match open.get(&kind) {
                Some(&i) => {
                    let merged = format!("{} + {}", out[i].label, label);
                    out[i].label = truncate_label(merged);
                }
                None => {
                    open.insert(kind.clone(), out.len());
                    out.push(FaultInterval {
                        kind,
                        start_s: t_s,
                        end_s: f64::NAN,
                        open: true,
                        label,
                    });
                }
            }
        } else if let Some(i) = open.remove(&kind) {
            out[i].end_s = t_s;
            out[i].open = false;
        }
    }
    // A start op still running when the history ends: it may have taken effect.
    if let Some(p) = pending
        && let Some((kind, true)) = classify(&p.f)
        && !kinds::kind(&kind).is_some_and(FaultKind::one_shot)
        && !open.contains_key(&kind)
    {
        let label = fault_label(&kind, &p.f, None, &p.value);
        out.push(FaultInterval {
            kind,
            start_s: p.time_ns as f64 / 1e9,
            end_s: f64::NAN,
            open: true,
            label: with_suffix(label, " (unfinished)"),
        });
    }
    let end_s = end_ns as f64 / 1e9;
    for iv in &mut out {
        if iv.end_s.is_nan() {
            iv.end_s = end_s.max(iv.start_s);
        }
    }
    out.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An op at `t_ms` milliseconds.
    fn op(t_ms: u64, ty: OpType, p: Process, f: &str, v: Value) -> Op {
        let mut o = Op::new(ty, p, f, v);
        o.time_ns = t_ms * 1_000_000;
        o
    }

    fn nem(t_ms: u64, f: &str, v: Value) -> Op {
        op(t_ms, OpType::Info, Process::Nemesis, f, v)
    }

    fn client(h: &mut Vec<Op>, p: u64, f: &str, t0_ms: u64, t1_ms: u64, end: OpType) {
        h.push(op(
            t0_ms,
            OpType::Invoke,
            Process::Client(p),
            f,
            json!(null),
        ));
        h.push(op(t1_ms, end, Process::Client(p), f, json!(1)));
    }

    fn sorted(mut ops: Vec<Op>) -> History {
        ops.sort_by_key(|o| o.time_ns);
        History::from_ops(ops)
    }

    fn isolate_n5() -> Value {
        json!({"grudge": {"n1": ["n5"], "n2": ["n5"], "n3": ["n5"], "n4": ["n5"],
                          "n5": ["n1", "n2", "n3", "n4"]}})
    }

    /// Client ops until 4.99 s, a partition and a kill never healed.
    fn faulty() -> History {
        let mut ops = vec![
            nem(1_000, "start-partition", json!("one")),
            nem(1_100, "start-partition", isolate_n5()),
            nem(3_000, "stop-partition", json!(null)),
            nem(3_050, "stop-partition", json!("healed")),
            nem(4_000, "kill", json!("one")),
            nem(4_200, "kill", json!({"nodes": ["n1"]})),
        ];
        for i in 0..50u64 {
            let t = i * 100;
            client(&mut ops, 0, "read", t, t + 3, OpType::Ok);
            client(&mut ops, 2 + i, "cas", t + 20, t + 90, OpType::Info);
        }
        sorted(ops)
    }

    #[test]
    fn intervals_run_from_start_completion_to_stop_completion() {
        let iv = fault_intervals(&faulty());
        assert_eq!(iv.len(), 2, "{iv:?}");
        assert_eq!(iv[0].kind, "partition");
        assert_eq!(iv[0].label, "isolate n5");
        assert!(
            (iv[0].start_s - 1.1).abs() < 1e-9 && (iv[0].end_s - 3.05).abs() < 1e-9,
            "{iv:?}"
        );
        assert_eq!(iv[1].kind, "kill");
        assert_eq!(iv[1].label, "kill n1");
        assert!((iv[1].start_s - 4.2).abs() < 1e-9, "{iv:?}");
    }

    #[test]
    fn unterminated_fault_runs_to_end_of_history() {
        let iv = fault_intervals(&faulty());
        // Last client completion: cas invoked at 4920 ms, completed at 4990 ms.
        assert!((iv[1].end_s - 4.99).abs() < 1e-9, "{iv:?}");
    }

    #[test]
    fn repeated_and_stray_stops_are_harmless() {
        let h = sorted(vec![
            nem(100, "stop-partition", json!(null)),
            nem(200, "stop-partition", json!("healed")),
            nem(300, "pause", json!("one")),
            nem(400, "pause", json!({"nodes": ["n3"]})),
            nem(500, "resume", json!("all")),
            nem(600, "resume", json!({"nodes": ["n3"]})),
            nem(700, "resume", json!("all")),
            nem(800, "resume", json!({"nodes": ["n3"]})),
            nem(900, "start", json!("all")),
            nem(950, "start", json!("done")),
        ]);
        assert_eq!(
            fault_intervals(&h),
            vec![FaultInterval {
                kind: "pause".into(),
                start_s: 0.4,
                end_s: 0.6,
                open: false,
                label: "pause n3".into(),
            }]
        );
    }

    #[test]
    fn halves_generic_kinds_failed_faults_and_nested_starts() {
        let halves = json!({"grudge": {"n1": ["n3", "n4", "n5"], "n2": ["n3", "n4", "n5"],
                                       "n3": ["n1", "n2"], "n4": ["n1", "n2"], "n5": ["n1", "n2"]}});
        let mut failed = nem(450, "kill", json!("one"));
        failed.error = Some("ssh: connection refused".into());
        let h = sorted(vec![
            nem(100, "start-partition", json!("majority")),
            nem(150, "start-partition", halves),
            nem(200, "start-clock", json!(null)),
            nem(250, "start-clock", json!("bumped")),
            nem(400, "kill", json!("one")),
            nem(410, "kill", json!(null)).clone(),
            nem(420, "kill", json!("one")),
            nem(430, "kill", json!({"nodes": ["n2"]})),
            nem(440, "kill", json!("one")),
            failed,
            nem(500, "stop-clock", json!(null)),
            nem(600, "stop-clock", json!("reset")),
        ]);
        let iv = fault_intervals(&h);
        let got: Vec<(&str, &str, f64, f64)> = iv
            .iter()
            .map(|i| (i.kind.as_str(), i.label.as_str(), i.start_s, i.end_s))
            .collect();
        assert_eq!(
            got,
            vec![
                ("partition", "n1 n2 | n3 n4 n5", 0.15, 0.6),
                ("clock", "clock bumped", 0.25, 0.6),
                // The first kill's completion says nothing, so its invocation value labels it.
                ("kill", "kill one + kill n2", 0.41, 0.6),
            ]
        );
    }

    #[test]
    fn overlapping_grudge_is_labelled_by_its_invocation() {
        let ring = json!({"grudge": {"n1": ["n3", "n4"], "n2": ["n4", "n5"], "n3": ["n1", "n5"],
                                     "n4": ["n1", "n2"], "n5": ["n2", "n3"]}});
        let h = sorted(vec![
            nem(1, "start-partition", json!("majorities-ring")),
            nem(2, "start-partition", ring.clone()),
            nem(3, "stop-partition", json!(null)),
            nem(4, "stop-partition", json!("healed")),
            nem(5, "start-partition", json!(null)),
            nem(6, "start-partition", ring),
        ]);
        let labels: Vec<String> = fault_intervals(&h).into_iter().map(|i| i.label).collect();
        assert_eq!(labels, ["partition majorities-ring", "partition"]);
    }

    #[test]
    fn long_labels_are_truncated() {
        let nodes: Vec<String> = (0..3).map(|i| format!("a-long-host-name-{i}")).collect();
        let h = sorted(vec![
            nem(1, "kill", json!("all")),
            nem(2, "kill", json!({"nodes": nodes})),
        ]);
        let label = &fault_intervals(&h)[0].label;
        assert_eq!(label.chars().count(), 40);
        assert!(
            label.starts_with("kill a-long-host-name-0 a-long") && label.ends_with('…'),
            "{label}"
        );
    }

    #[test]
    fn many_nodes_are_named_by_the_first_three_and_a_count_in_natural_order() {
        let nodes: Vec<String> = (1..=30).rev().map(|i| format!("n{i}")).collect();
        let h = sorted(vec![
            nem(1, "kill", json!("minority")),
            nem(2, "kill", json!({"nodes": nodes})),
        ]);
        assert_eq!(fault_intervals(&h)[0].label, "kill n1 n2 n3 +27");
        // Up to five are all named (n10 after n9, not after n1).
        let h = sorted(vec![
            nem(1, "pause", json!("minority")),
            nem(2, "pause", json!({"nodes": ["n10", "n9", "n2"]})),
        ]);
        assert_eq!(fault_intervals(&h)[0].label, "pause n2 n9 n10");
        // A halves partition of 100 nodes: each side by its first three and a count.
        let side = |r: std::ops::RangeInclusive<u32>| -> Vec<String> {
            r.map(|i| format!("n{i}")).collect()
        };
        let mut grudge = serde_json::Map::new();
        for (mine, other) in [
            (side(1..=49), side(50..=100)),
            (side(50..=100), side(1..=49)),
        ] {
            for n in mine {
                grudge.insert(n, json!(other));
            }
        }
        let h = sorted(vec![
            nem(1, "start-partition", json!("halves")),
            nem(2, "start-partition", json!({ "grudge": grudge })),
        ]);
        assert_eq!(
            fault_intervals(&h)[0].label,
            "n1 n2 n3 +46 | n50 n51 n52 +48"
        );
    }

    #[test]
    fn a_delay_label_names_the_backend_that_served_it() {
        let label = |done: Value| fault_label("delay", "start-delay", None, &done);
        assert_eq!(
            label(
                json!({"nodes": ["n2", "n3"], "delay_ms": 100, "jitter_ms": 50, "backend": "nfqueue"})
            ),
            "delay 100±50 ms n2 n3 (nfqueue)"
        );
        assert_eq!(
            label(
                json!({"nodes": ["n1"], "delay_ms": 30, "backend": {"n1": "netem", "n2": "nfqueue"}})
            ),
            "delay 30 ms n1 (mixed)"
        );
        // An invocation's `auto` says nothing about what served it.
        assert_eq!(
            label(json!({"nodes": ["n1"], "delay_ms": 30, "backend": "auto"})),
            "delay 30 ms n1"
        );
        let many: Vec<String> = (0..20).map(|i| format!("node{i}")).collect();
        let long = label(json!({"nodes": many, "delay_ms": 30, "backend": "nfqueue"}));
        assert!(
            long.ends_with("… (nfqueue)") && long.chars().count() == 40,
            "{long}"
        );
    }

    /// The bug of issue 15: a strobe that ran 5.0–15.2 s was drawn 15.2–20.25 s (from its
    /// completion to the reset's). It spans its own op; the reset after it heals nothing.
    #[test]
    fn strobe_band_covers_the_strobe_not_the_time_until_the_reset() {
        let strobe =
            json!({"nodes": ["n2"], "delta_ms": 200, "period_ms": 500, "duration_ms": 10000});
        let mut done = strobe.clone();
        done["ran_ms"] = json!(10_100.0);
        done["ended_ms_before"] = json!(50.0);
        let mut ops = vec![
            nem(5_000, "strobe-clock", strobe.clone()),
            nem(15_200, "strobe-clock", done),
            nem(20_200, "reset-clock", json!(null)),
            nem(20_250, "reset-clock", json!({"nodes": ["n2"]})),
        ];
        client(&mut ops, 0, "read", 25_000, 25_010, OpType::Ok);
        let iv = fault_intervals(&sorted(ops.clone()));
        assert_eq!(iv.len(), 1, "{iv:?}");
        assert!(
            (iv[0].start_s - 5.05).abs() < 1e-9 && (iv[0].end_s - 15.15).abs() < 1e-9,
            "{iv:?}"
        );
        assert!(!iv[0].open);
        assert_eq!(iv[0].label, "strobe-clock n2 +200 ms every 500 ms");
        // An older history without ran_ms: from the strobe's invocation to its completion.
        ops[1].value = strobe;
        let iv = fault_intervals(&sorted(ops));
        assert_eq!((iv[0].start_s, iv[0].end_s), (5.0, 15.2), "{iv:?}");
        // A bump before the strobe is still open when the strobe ends; the reset closes it.
        let h = sorted(vec![
            nem(
                1_000,
                "bump-clock",
                json!({"nodes": ["n1"], "delta_ms": 50}),
            ),
            nem(
                1_010,
                "bump-clock",
                json!({"nodes": ["n1"], "delta_ms": 50}),
            ),
            nem(2_000, "strobe-clock", json!(null)),
            nem(
                3_000,
                "strobe-clock",
                json!({"nodes": ["n2"], "ran_ms": 900}),
            ),
            nem(4_000, "reset-clock", json!(null)),
            nem(4_100, "reset-clock", json!({"nodes": ["n1", "n2"]})),
        ]);
        let got: Vec<(f64, f64, bool)> = fault_intervals(&h)
            .iter()
            .map(|i| (i.start_s, i.end_s, i.open))
            .collect();
        assert_eq!(got, [(1.01, 4.1, false), (2.1, 3.0, false)]);
    }

    /// A killed controller leaves faults the history never shows ending: a completed start never
    /// stopped, and a start op that never completed (the fault may be in effect). Both run to
    /// the end of the history and are marked open.
    #[test]
    fn faults_left_by_a_killed_controller_run_to_the_end_and_are_open() {
        let iv = fault_intervals(&faulty());
        assert!(!iv[0].open && iv[1].open, "{iv:?}");
        let mut ops = vec![
            nem(1_000, "start-partition", json!("one")),
            nem(1_020, "start-partition", isolate_n5()),
            nem(
                2_000,
                "strobe-clock",
                json!({"nodes": ["n3"], "delta_ms": 100, "period_ms": 10}),
            ),
        ];
        client(&mut ops, 0, "read", 2_500, 3_000, OpType::Ok);
        let iv = fault_intervals(&sorted(ops));
        let got: Vec<(&str, f64, f64, bool)> = iv
            .iter()
            .map(|i| (i.label.as_str(), i.start_s, i.end_s, i.open))
            .collect();
        assert_eq!(
            got,
            [
                ("isolate n5", 1.02, 3.0, true),
                ("strobe-clock n3 +100 ms ev… (unfinished)", 2.0, 3.0, true)
            ]
        );
        // A stop op that never completed leaves its fault open.
        let h = sorted(vec![
            nem(100, "pause", json!("one")),
            nem(110, "pause", json!({"nodes": ["n2"]})),
            nem(500, "resume", json!(null)),
            nem(900, "read", json!(null)),
        ]);
        let iv = fault_intervals(&h);
        assert_eq!((iv.len(), iv[0].end_s, iv[0].open), (1, 0.9, true));
    }
}
