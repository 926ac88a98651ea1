//! The run page's "Log" section: the log checker's counts (sends attempted, acknowledged, failed,
//! indeterminate; each anomaly class, violation or allowed), per-log rows (which nodes gave a
//! final read) and the witnesses of each class in words (a lost send with its ack time, node
//! and the faults around it; both witnesses of an inconsistent offset).
//!
//! Owns only rendering the log checker's `details` (see `checker::log`) as HTML. Does not own the
//! checker, the anomaly timeline marks (`report::anomalies`) or the rest of the page.

use super::{esc, text_of};
use crate::checker::log::Anomaly;
use serde_json::Value;
use std::fmt::Write as _;

/// At most this many witness rows per anomaly class are shown.
pub const MAX_WITNESS_ROWS: usize = 50;

const SENDS: [(&str, &str); 4] = [
    ("attempted", "sends attempted"),
    ("acknowledged", "acknowledged (ok, with an offset)"),
    ("failed", "failed (definitely not appended)"),
    ("indeterminate", "indeterminate (info)"),
];

/// What each class means, in the words of the table.
fn meaning(c: Anomaly) -> &'static str {
    match c {
        Anomaly::Lost => "lost: acknowledged, absent from every final read",
        Anomaly::InconsistentOffset => "inconsistent offsets: two values at one offset",
        Anomaly::AckedElsewhere => "read only away from the acknowledged offset",
        Anomaly::Nonmonotonic => "non-monotonic: offsets going backwards",
        Anomaly::Skipped => "skipped: a known offset passed over",
        Anomaly::Unexpected => "unexpected: read, never sent",
        Anomaly::Duplicated => "duplicated: at more than one offset (allowed)",
        Anomaly::MissingOnNode => "missing from some nodes' final reads only (allowed)",
    }
}

/// Render the log checker's details.
pub(super) fn log_section(out: &mut String, details: &Value) {
    out.push_str("<h3 id=\"anomalies-log\">Log</h3>\n");
    if let Some(e) = details.get("error").and_then(Value::as_str) {
        let _ = writeln!(out, "<p>history not checkable as a log: {}</p>", esc(e));
        return;
    }
    out.push_str("<table><tr><th>count</th><th>ops</th></tr>\n");
    for (key, words) in SENDS {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td></tr>",
            esc(words),
            esc(&text_of(details.get(key)))
        );
    }
    for c in Anomaly::ALL {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td></tr>",
            esc(meaning(c)),
            esc(&text_of(details[c.name()].get("count")))
        );
    }
    out.push_str("</table>\n");
    if let Some(keys) = details.get("keys").and_then(Value::as_array) {
        out.push_str(
            "<table><tr><th>log</th><th>sends</th><th>acknowledged</th><th>polls</th>\
             <th>final reads from</th></tr>\n",
        );
        for k in keys {
            let nodes: Vec<String> = k["final_read_nodes"]
                .as_array()
                .map(|a| a.iter().map(|n| text_of(Some(n))).collect())
                .unwrap_or_default();
            let finals = if nodes.is_empty() {
                "none: unknown".to_string()
            } else {
                nodes.join(", ")
            };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&text_of(k.get("key"))),
                esc(&text_of(k.get("attempted"))),
                esc(&text_of(k.get("acknowledged"))),
                esc(&text_of(k.get("polls"))),
                esc(&finals)
            );
        }
        out.push_str("</table>\n");
    }
    for c in Anomaly::ALL {
        let d = &details[c.name()];
        let rows = d["witnesses"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "<h4>{}</h4>\n<ul>", esc(meaning(c)));
        for r in rows.iter().take(MAX_WITNESS_ROWS) {
            let _ = writeln!(out, "<li>{}</li>", esc(&text_of(r.get("witness"))));
        }
        let more = d["count"].as_u64().unwrap_or(0) as usize;
        let shown = rows.len().min(MAX_WITNESS_ROWS);
        if more > shown {
            let _ = writeln!(out, "<li>… and {} more</li>", more - shown);
        }
        out.push_str("</ul>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_section_shows_counts_logs_and_witnesses() {
        let d = json!({
            "attempted": 10, "acknowledged": 9, "failed": 0, "indeterminate": 1,
            "lost": {"count": 2, "witnesses": [{"witness": "send 3 to log 0: acknowledged <x>"}]},
            "keys": [{"key": "0", "attempted": 10, "acknowledged": 9, "polls": 3,
                      "final_read_nodes": ["n1", "n2"]}],
        });
        let mut out = String::new();
        log_section(&mut out, &d);
        assert!(out.contains("<h3 id=\"anomalies-log\">Log</h3>"), "{out}");
        assert!(
            out.contains("send 3 to log 0: acknowledged &lt;x&gt;"),
            "{out}"
        );
        assert!(out.contains("… and 1 more"), "{out}");
        assert!(out.contains("<td>n1, n2</td>"), "{out}");
    }
}
