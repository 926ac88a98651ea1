//! The top of the run page, what a person reads first: every checker's verdict and summary in
//! one table, then the run's first witness — the earliest anomaly an invalid checker kept, in
//! words, with a linearizability witness's ops as a table — and, for a chaos run, the
//! experiment's judgement.
//!
//! Owns which witness comes first on the page and how it reads there. Does not own finding
//! witnesses or placing them in time (`report::anomalies`), every checker's full details
//! further down (`page::checkers`), or checking (`checker`).

use super::checkers::linear_witness;
use super::{badge, chaos, esc, text_of};
use crate::history::History;
use crate::report::anomalies::{self, AnomalyMark, LINEARIZABLE};
use serde_json::Value;
use std::fmt::Write as _;

/// Id of the Verdict section.
pub(super) const VERDICT_ID: &str = "verdict";

/// The Verdict section: the checkers' table, the first witness, the chaos judgement.
pub(super) fn verdict_section(out: &mut String, results: &Value, history: Option<&History>) {
    let checkers: &[Value] = results
        .get("checkers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let _ = writeln!(
        out,
        "<h2 id=\"{VERDICT_ID}\">Verdict</h2>\n<table><tr><th>checker</th><th>verdict</th>\
         <th>summary</th></tr>"
    );
    for c in checkers {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&text_of(c.get("checker"))),
            badge(&text_of(c.get("verdict"))),
            esc(&text_of(c.get("summary")))
        );
    }
    out.push_str("</table>\n");
    first_witness(out, results, history);
    for c in checkers {
        if c.get("checker").and_then(Value::as_str) == Some(crate::store::SLO_CHECKER) {
            chaos::chaos_section(out, c.get("details").unwrap_or(&Value::Null), results);
        }
    }
}

/// The linearizable checker's invalid parts (those with a witness object).
fn linear_parts(results: &Value) -> Vec<&Value> {
    anomalies::checker_details(results, LINEARIZABLE)
        .and_then(|d| d.get("parts"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("witness").is_some_and(Value::is_object))
        .collect()
}

/// The part whose unlinearizable op is the one `mark` sits on.
fn part_of<'a>(parts: &[&'a Value], mark: &AnomalyMark) -> Option<&'a Value> {
    parts.iter().copied().find(|p| {
        let op = &p["witness"]["op"];
        ["completion_index", "index"]
            .iter()
            .any(|k| op.get(*k).and_then(Value::as_u64) == Some(mark.op_index))
    })
}

/// The run's first witness in a box: a sentence (checker, kind, time, op, what it shows), the
/// witness table when it is a linearizability witness, and where the rest are. Without a history
/// to place witnesses in time, an invalid linearizable checker's first part. Nothing when no
/// invalid checker kept a witness.
fn first_witness(out: &mut String, results: &Value, history: Option<&History>) {
    let parts = linear_parts(results);
    let mark = history.and_then(|h| anomalies::first_witness(h, results));
    let part = match &mark {
        Some(m) if m.checker == LINEARIZABLE => part_of(&parts, m),
        Some(_) => None,
        None => parts.first().copied().filter(|_| {
            anomalies::checker_details(results, LINEARIZABLE).is_some()
                && checker_verdict(results, LINEARIZABLE) == Some("invalid")
        }),
    };
    if mark.is_none() && part.is_none() {
        return;
    }
    out.push_str("<div class=\"witness\" id=\"first-witness\">\n");
    match &mark {
        // The witness table below names the op and its times.
        Some(m) if part.is_some() => {
            let _ = writeln!(
                out,
                "<p><b>First witness</b> ({}) at {:.3} s:</p>",
                esc(m.checker),
                m.time_s
            );
        }
        Some(m) => {
            let kind = if m.category == m.checker {
                String::new()
            } else {
                format!(", {}", m.category)
            };
            let _ = writeln!(
                out,
                "<p><b>First witness</b> ({}{kind}) at {:.3} s, op {}: {}</p>",
                esc(m.checker),
                m.time_s,
                m.op_index,
                esc(&m.label)
            );
        }
        None => out.push_str("<p><b>First witness</b> (linearizable):</p>\n"),
    }
    if let Some(part) = part {
        linear_witness(out, part);
    }
    out.push_str(
        "<p>Every witness, checker by checker: <a href=\"#checkers\">Checkers</a>, after the \
         plots.</p>\n</div>\n",
    );
}

/// The verdict of the checker named `name`, if it ran.
fn checker_verdict<'a>(results: &'a Value, name: &str) -> Option<&'a str> {
    results
        .get("checkers")?
        .as_array()?
        .iter()
        .find(|c| c.get("checker").and_then(Value::as_str) == Some(name))?
        .get("verdict")?
        .as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, OpType, Process};
    use serde_json::json;

    fn results(verdict: &str) -> Value {
        json!({"valid": verdict, "checkers": [
            {"checker": "linearizable", "verdict": verdict, "summary": "s", "details": {"parts": [
                {"key": "k1", "witness": {"prefix_len": 3, "last_state": 4,
                    "op": {"index": 2, "completion_index": 3, "process": 7, "f": "read",
                           "key": "k1", "value": 5, "outcome": "ok",
                           "invoke_time_s": 0.2, "complete_time_s": 0.3},
                    "minimized": []}},
                {"key": "k0", "witness": {"prefix_len": 1, "last_state": 0,
                    "op": {"index": 0, "completion_index": 1, "process": 6, "f": "read",
                           "key": "k0", "value": 9, "outcome": "ok",
                           "invoke_time_s": 0.0, "complete_time_s": 0.1},
                    "minimized": []}}
            ]}}
        ]})
    }

    fn history() -> History {
        let ops = (0..4u64)
            .map(|i| {
                let ty = if i % 2 == 0 {
                    OpType::Invoke
                } else {
                    OpType::Ok
                };
                let mut o = Op::new(ty, Process::Client(0), "read", json!(null));
                o.time_ns = i * 100_000_000;
                o
            })
            .collect();
        History::from_ops(ops)
    }

    #[test]
    fn the_earliest_witness_of_an_invalid_checker_heads_the_page_with_its_table() {
        let mut out = String::new();
        verdict_section(&mut out, &results("invalid"), Some(&history()));
        let table = out.find("<td>linearizable</td>").unwrap();
        let first = out
            .find("<b>First witness</b> (linearizable) at 0.100 s:")
            .unwrap();
        assert!(table < first, "{out}");
        // The witness of k0 (earlier), not the part listed first.
        assert!(out.contains("Witness for key <code>k0</code>"), "{out}");
        assert!(!out.contains("key <code>k1</code>"), "{out}");
        assert!(out.contains("<td>cannot linearize</td>"));
        // Without a history: the first invalid part, no time.
        let mut out = String::new();
        verdict_section(&mut out, &results("invalid"), None);
        assert!(
            out.contains("<b>First witness</b> (linearizable):</p>"),
            "{out}"
        );
        assert!(out.contains("Witness for key <code>k1</code>"), "{out}");
    }

    #[test]
    fn a_session_violation_reads_as_a_sentence_naming_its_guarantee() {
        let r = json!({"valid": "invalid", "checkers": [
            {"checker": "session", "verdict": "invalid", "summary": "s", "details": {
                "guarantees": [{"guarantee": "monotonic-reads", "witnesses": [
                    {"key": "k<2>", "process": 7, "earlier_index": 1, "later_index": 3,
                     "earlier_version": 15, "later_version": 12}]}]}}
        ]});
        let mut out = String::new();
        verdict_section(&mut out, &r, Some(&history()));
        assert!(
            out.contains(
                "<b>First witness</b> (session, monotonic-reads) at 0.300 s, op 3: \
                 p7 k&lt;2&gt;: version 12 after 15</p>"
            ),
            "{out}"
        );
        assert!(!out.contains("<table><tr><th>role</th>"), "{out}");
    }

    #[test]
    fn a_valid_run_has_no_first_witness() {
        for h in [Some(history()), None] {
            let mut out = String::new();
            verdict_section(&mut out, &results("valid"), h.as_ref());
            assert!(out.contains("<td>linearizable</td>"));
            assert!(!out.contains("First witness"), "{out}");
        }
    }
}
