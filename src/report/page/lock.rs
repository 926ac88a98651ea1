//! The run page's "Locks" section: the lock checkers' counts (holds, failed and indeterminate
//! acquires, overlaps, refused stale writes), the holders of each two-holder anomaly with its
//! overlap window, ops and the faults active then, and stale writes a resource accepted.
//!
//! Owns only rendering the `mutual-exclusion` and `fencing` results' `details` (see
//! `checker::lock`) as HTML. Does not own the checkers or the rest of the page.

use super::{esc, text_of};
use serde_json::Value;
use std::fmt::Write as _;

/// At most this many anomalies are shown per checker.
pub const MAX_ANOMALY_ROWS: usize = 20;

const COUNTS: [(&str, &str); 9] = [
    ("acquired", "holds (acquires ok)"),
    ("failed_acquires", "acquires refused (held by another)"),
    ("indeterminate_acquires", "acquires with unknown outcome"),
    ("writes_ok", "protected writes ok"),
    ("overlaps", "overlapping holds"),
    ("two_holders", "two holders writing (anomalies)"),
    ("accepted", "fenced writes accepted"),
    ("refused_stale", "stale writes refused (fence worked)"),
    ("stale_accepted", "stale writes accepted (anomalies)"),
];

fn ops_cell(ops: &Value) -> String {
    ops.as_array()
        .map(|ops| {
            ops.iter()
                .map(|o| {
                    format!(
                        "{} {} {} {} at {:.3} s",
                        text_of(o.get("process")),
                        text_of(o.get("type")),
                        text_of(o.get("f")),
                        o.get("value").map(|v| v.to_string()).unwrap_or_default(),
                        o.get("time_s").and_then(Value::as_f64).unwrap_or(0.0)
                    )
                })
                .collect::<Vec<_>>()
                .join("<br>")
        })
        .unwrap_or_default()
}

fn faults_cell(faults: &Value) -> String {
    let labels: Vec<String> = faults
        .as_array()
        .map(|fs| fs.iter().map(|f| esc(&text_of(f.get("label")))).collect())
        .unwrap_or_default();
    if labels.is_empty() {
        "none".into()
    } else {
        labels.join("<br>")
    }
}

/// Render one lock checker's details (`checker` is its results.json name).
pub(super) fn lock_section(out: &mut String, checker: &str, details: &Value) {
    let _ = writeln!(out, "<h3 id=\"anomalies-{checker}\">Locks: {checker}</h3>");
    if let Some(e) = details.get("error").and_then(Value::as_str) {
        let _ = writeln!(
            out,
            "<p>history not checkable as a lock history: {}</p>",
            esc(e)
        );
        return;
    }
    out.push_str("<table><tr><th>count</th><th>n</th></tr>\n");
    for (key, words) in COUNTS {
        if let Some(v) = details.get(key) {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td></tr>",
                esc(words),
                esc(&text_of(Some(v)))
            );
        }
    }
    out.push_str("</table>\n");
    let anomalies = details["anomalies"].as_array().cloned().unwrap_or_default();
    if anomalies.is_empty() {
        return;
    }
    if checker == crate::checker::lock::MUTEX_NAME {
        out.push_str(
            "<table><tr><th>kind</th><th>lock</th><th>holders (process, token, held s)</th>\
             <th>overlap (s)</th><th>writes</th><th>faults then</th></tr>\n",
        );
        for a in anomalies.iter().take(MAX_ANOMALY_ROWS) {
            let holders: Vec<String> = a["holders"]
                .as_array()
                .map(|hs| {
                    hs.iter()
                        .map(|h| {
                            format!(
                                "process {} (token {}, {:.3}–{:.3})",
                                text_of(h.get("process")),
                                text_of(h.get("token")),
                                h["acquired_s"].as_f64().unwrap_or(0.0),
                                h["end_s"].as_f64().unwrap_or(0.0)
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3}–{:.3}</td><td>{}</td><td>{}</td></tr>",
                esc(&text_of(a.get("kind"))),
                esc(&text_of(a.get("lock"))),
                esc(&holders.join("; ")),
                a["window_s"][0].as_f64().unwrap_or(0.0),
                a["window_s"][1].as_f64().unwrap_or(0.0),
                esc(&ops_cell(&a["ops"])).replace("&lt;br&gt;", "<br>"),
                faults_cell(&a["faults"]),
            );
        }
    } else {
        out.push_str(
            "<table><tr><th>lock</th><th>stale token</th><th>accepted after token</th>\
             <th>ops</th><th>faults then</th></tr>\n",
        );
        for a in anomalies.iter().take(MAX_ANOMALY_ROWS) {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&text_of(a.get("lock"))),
                esc(&text_of(a.get("stale_token"))),
                esc(&text_of(a.get("after_token"))),
                esc(&ops_cell(&a["ops"])).replace("&lt;br&gt;", "<br>"),
                faults_cell(&a["faults"]),
            );
        }
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn anomalies_show_both_holders_the_window_and_the_faults() {
        let details = json!({
            "acquired": 3, "overlaps": 1, "two_holders": 1,
            "anomalies": [{
                "kind": "interleaved", "lock": "lock-0",
                "holders": [
                    {"process": "3", "token": 5, "acquired_s": 1.0, "end_s": 5.0},
                    {"process": "7", "token": 9, "acquired_s": 3.5, "end_s": 4.0}
                ],
                "window_s": [3.5, 4.0],
                "ops": [{"process": "7", "type": "ok", "f": "lock-write", "value": {"value": 1}, "time_s": 3.6}],
                "faults": [{"kind": "stall", "label": "stall process 3 3000 ms"}]
            }]
        });
        let mut out = String::new();
        lock_section(&mut out, crate::checker::lock::MUTEX_NAME, &details);
        for want in [
            "interleaved",
            "process 3 (token 5",
            "process 7",
            "3.500–4.000",
            "stall process 3",
            "two holders writing",
        ] {
            assert!(out.contains(want), "{want} missing: {out}");
        }
    }
}
