//! The run page's Checkers section, after the plots: every checker's details — the
//! linearizability witness tables, the session guarantees' violations with their ops, and the
//! section of each checker that has one. Does not check anything (`checker`); it shows what
//! results.json holds. The verdicts and the first witness head the page (`page::verdict`).

use super::{
    MAX_EXPLANATION_BYTES, MAX_LINEAR_PARTS, MAX_SESSION_WITNESSES, esc, href, lock, log, row, set,
    text_of, truncate, txn,
};
use crate::history::History;
use crate::report::anomalies;
use crate::store::LINEAR_WITNESS_FILE;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

/// Every checker's details (witness tables, violations, the sections of checkers that have
/// one), after the plots; the verdicts themselves head the page (`page::verdict`), and so does
/// the chaos experiment's judgement.
pub(super) fn checker_section(
    out: &mut String,
    run_dir: &Path,
    results: &Value,
    history: Option<&History>,
) {
    let checkers: &[Value] = results
        .get("checkers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    out.push_str("<h2 id=\"checkers\">Checkers</h2>\n");
    for c in checkers {
        let name = text_of(c.get("checker"));
        let details = c.get("details").unwrap_or(&Value::Null);
        match name.as_str() {
            anomalies::LINEARIZABLE => linear_section(out, run_dir, details),
            anomalies::SESSION => {
                // Times of the ops the session witnesses name.
                let mut wanted = HashSet::new();
                for (_, w) in anomalies::session_violations(results)
                    .iter()
                    .take(MAX_SESSION_WITNESSES)
                {
                    for k in ["earlier_index", "later_index"] {
                        wanted.extend(w.get(k).and_then(Value::as_u64));
                    }
                }
                let times = history
                    .map(|h| anomalies::op_times_ns(h, &wanted))
                    .unwrap_or_default();
                session_section(out, results, details, &times)
            }
            crate::checker::set::NAME => set::set_section(out, details),
            crate::checker::log::NAME => log::log_section(out, details),
            crate::checker::txn::CHECKER => txn::txn_section(out, details),
            name @ (crate::checker::lock::MUTEX_NAME | crate::checker::lock::FENCING_NAME) => {
                lock::lock_section(out, name, details)
            }
            _ => {}
        }
    }
}

/// Table header and rows of linearizability witness ops.
pub(super) fn witness_op_rows(out: &mut String, ops: &[(&str, &Value)]) {
    out.push_str(
        "<table><tr><th>role</th><th>op</th><th>process</th><th>f</th><th>value</th>\
         <th>outcome</th><th>invoked (s)</th><th>completed (s)</th></tr>\n",
    );
    for (role, op) in ops {
        let secs = |k: &str| {
            op.get(k)
                .and_then(Value::as_f64)
                .map(|t| format!("{t:.3}"))
                .unwrap_or_default()
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            esc(role),
            esc(&text_of(op.get("index"))),
            esc(&text_of(op.get("process"))),
            esc(&text_of(op.get("f"))),
            esc(&text_of(op.get("value"))),
            esc(&text_of(op.get("outcome"))),
            secs("invoke_time_s"),
            secs("complete_time_s")
        );
    }
    out.push_str("</table>\n");
}

pub(super) fn linear_section(out: &mut String, run_dir: &Path, details: &Value) {
    out.push_str("<h3 id=\"anomalies-linearizable\">linearizable</h3>\n");
    let invalid: Vec<&Value> = details
        .get("parts")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter(|p| p.get("witness").is_some_and(Value::is_object))
                .collect()
        })
        .unwrap_or_default();
    for part in invalid.iter().take(MAX_LINEAR_PARTS) {
        linear_witness(out, part);
    }
    if invalid.len() > MAX_LINEAR_PARTS {
        let _ = writeln!(
            out,
            "<p>… {} more invalid keys not shown (see results.json)</p>",
            invalid.len() - MAX_LINEAR_PARTS
        );
    }
    if let Some(expl) = details.get("explanation").and_then(Value::as_str) {
        let _ = writeln!(
            out,
            "<pre>{}</pre>",
            esc(&truncate(expl, MAX_EXPLANATION_BYTES))
        );
    }
    if run_dir.join(LINEAR_WITNESS_FILE).is_file() {
        let _ = writeln!(
            out,
            "<p><a href=\"{}\">linearizability witness ({})</a></p>",
            href(LINEAR_WITNESS_FILE),
            esc(LINEAR_WITNESS_FILE)
        );
    }
}

/// One invalid part's linearizability witness: the sentence, then the op that cannot be
/// linearized and the minimal witness ops.
pub(super) fn linear_witness(out: &mut String, part: &Value) {
    let w = &part["witness"];
    let key = text_of(part.get("key"));
    let _ = writeln!(
        out,
        "<p>Witness for {}: no linearization of the first {} ops can include the op below \
         (model state then: <code>{}</code>).</p>",
        if key.is_empty() {
            "the history".to_string()
        } else {
            format!("key <code>{}</code>", esc(&key))
        },
        esc(&text_of(w.get("prefix_len"))),
        esc(&text_of(w.get("last_state")))
    );
    let mut ops: Vec<(&str, &Value)> = Vec::new();
    if let Some(op) = w.get("op") {
        ops.push(("cannot linearize", op));
    }
    for op in w
        .get("minimized")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .take(MAX_SESSION_WITNESSES)
    {
        ops.push(("minimal witness", op));
    }
    witness_op_rows(out, &ops);
    let minimized = w
        .get("minimized")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if minimized > MAX_SESSION_WITNESSES {
        let _ = writeln!(
            out,
            "<p>… {} more minimal witness ops not shown (see {} or results.json)</p>",
            minimized - MAX_SESSION_WITNESSES,
            esc(LINEAR_WITNESS_FILE)
        );
    }
}

pub(super) fn session_section(
    out: &mut String,
    results: &Value,
    details: &Value,
    times: &HashMap<u64, u64>,
) {
    out.push_str("<h3 id=\"anomalies-session\">session</h3>\n");
    let guarantees: &[Value] = details
        .get("guarantees")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if !guarantees.is_empty() {
        out.push_str("<table><tr><th>guarantee</th><th>checks</th><th>violations</th></tr>\n");
        for g in guarantees {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&text_of(g.get("guarantee"))),
                esc(&text_of(g.get("checks"))),
                esc(&text_of(g.get("violations")))
            );
        }
        out.push_str("</table>\n");
    }
    let violations = anomalies::session_violations(results);
    if !violations.is_empty() {
        let total: u64 = guarantees
            .iter()
            .filter_map(|g| g.get("violations").and_then(Value::as_u64))
            .sum();
        let shown = violations.len().min(MAX_SESSION_WITNESSES);
        let all_on_timeline = if anomalies::anomaly_density(results).is_empty() {
            ""
        } else {
            "; the anomaly timeline counts all of them over time"
        };
        let _ = writeln!(
            out,
            "<p>Violations ({shown} of {total} shown; the checker keeps the first of each \
             guarantee{all_on_timeline}):</p>"
        );
        out.push_str(
            "<table><tr><th>guarantee</th><th>process</th><th>key</th><th>ops</th>\
             <th>times (s)</th><th>version expected ≥</th><th>version seen</th>\
             <th>witness</th></tr>\n",
        );
        for (g, w) in violations.iter().take(MAX_SESSION_WITNESSES) {
            let idx = |k: &str| w.get(k).and_then(Value::as_u64);
            let t = |i: Option<u64>| {
                i.and_then(|i| times.get(&i))
                    .map(|&ns| format!("{:.3}", ns as f64 / 1e9))
                    .unwrap_or_else(|| "?".into())
            };
            let (e, l) = (idx("earlier_index"), idx("later_index"));
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} → {}</td><td>{} → {}</td>\
                 <td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(g),
                esc(&text_of(w.get("process"))),
                esc(&text_of(w.get("key"))),
                esc(&text_of(w.get("earlier_index"))),
                esc(&text_of(w.get("later_index"))),
                t(e),
                t(l),
                esc(&text_of(w.get("earlier_version"))),
                esc(&text_of(w.get("later_version"))),
                esc(&truncate(&text_of(w.get("witness")), 2048))
            );
        }
        out.push_str("</table>\n");
        if violations.len() > shown {
            let _ = writeln!(
                out,
                "<p>… {} more recorded violations not shown (see results.json)</p>",
                violations.len() - shown
            );
        }
    }
    let conflicts = anomalies::version_conflicts(results);
    if !conflicts.is_empty() {
        let total = details
            .get("version_conflicts")
            .and_then(Value::as_u64)
            .unwrap_or(conflicts.len() as u64);
        let shown = conflicts.len().min(MAX_SESSION_WITNESSES);
        let _ = writeln!(out, "<p>Version conflicts ({shown} of {total} shown):</p>");
        out.push_str(
            "<table><tr><th>key</th><th>version</th><th>ops</th><th>values</th>\
             <th>witness</th></tr>\n",
        );
        for c in conflicts.iter().take(MAX_SESSION_WITNESSES) {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{} → {}</td><td>{} vs {}</td><td>{}</td></tr>",
                esc(&text_of(c.get("key"))),
                esc(&text_of(c.get("version"))),
                esc(&text_of(c.get("first_index"))),
                esc(&text_of(c.get("later_index"))),
                esc(&text_of(c.get("first_value"))),
                esc(&text_of(c.get("later_value"))),
                esc(&truncate(&text_of(c.get("witness")), 2048))
            );
        }
        out.push_str("</table>\n");
    }
    if let Some(stale) = details.get("stale").filter(|s| s.is_object()) {
        out.push_str("<p>Stale reads:</p>\n<table>\n");
        row(
            out,
            "reads measured",
            &esc(&text_of(stale.get("reads_measured"))),
        );
        row(out, "stale reads", &esc(&text_of(stale.get("stale_reads"))));
        for (key, label) in [
            ("versions_behind", "versions behind (all reads)"),
            ("ms_behind", "ms behind (all reads)"),
            ("stale_versions_behind", "versions behind (stale reads)"),
            ("stale_ms_behind", "ms behind (stale reads)"),
        ] {
            if let Some(p) = stale.get(key) {
                let cell = ["p50", "p90", "p99", "max"]
                    .iter()
                    .map(|q| format!("{q} {}", text_of(p.get(*q))))
                    .collect::<Vec<_>>()
                    .join(", ");
                row(out, label, &esc(&cell));
            }
        }
        out.push_str("</table>\n");
    }
}
