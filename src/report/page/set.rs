//! The run page's "Set" section: the set checker's counts, per-key rows and witnesses (lost
//! elements with when they were acknowledged relative to the faults, unexpected and
//! failed-but-present elements).
//!
//! Owns only rendering the set checker's `details` (see `checker::set`) as HTML. Does not own the
//! checker, the anomaly timeline marks (`report::anomalies`) or the rest of the page.

use super::{esc, text_of};
use serde_json::Value;
use std::fmt::Write as _;

/// At most this many per-key rows are shown (the rest are counted).
pub const MAX_KEY_ROWS: usize = 50;
/// At most this many witness rows per anomaly class are shown.
pub const MAX_WITNESS_ROWS: usize = 50;

const COUNTS: [(&str, &str); 11] = [
    ("attempted", "adds attempted"),
    ("acknowledged", "acknowledged (ok)"),
    ("failed", "failed (definitely not added)"),
    ("indeterminate", "indeterminate (info)"),
    ("lost", "lost: acknowledged, absent from the final read"),
    (
        "lost_after_read",
        "lost after being read (not acknowledged)",
    ),
    ("unexpected", "unexpected: read, never attempted"),
    ("failed_but_present", "failed but present"),
    ("recovered", "recovered: indeterminate adds present"),
    ("stale", "stale: read, then missing from a later read"),
    ("keys_unknown", "keys without a final read"),
];

/// Render the set checker's details.
pub(super) fn set_section(out: &mut String, details: &Value) {
    out.push_str("<h3 id=\"anomalies-set\">Set</h3>\n");
    if let Some(e) = details.get("error").and_then(Value::as_str) {
        let _ = writeln!(out, "<p>history not checkable as a set: {}</p>", esc(e));
        return;
    }
    if let Some(r) = details.get("unknown_reason").and_then(Value::as_str) {
        let _ = writeln!(out, "<p class=\"notice\">unknown: {}</p>", esc(r));
    }
    out.push_str("<table><tr><th>count</th><th>elements</th></tr>\n");
    for (key, words) in COUNTS {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td></tr>",
            esc(words),
            esc(&text_of(details.get(key)))
        );
    }
    out.push_str("</table>\n");
    lost_rows(out, details);
    for (key, left_off, title) in [
        (
            "unexpected_elements",
            "unexpected_left_off",
            "Unexpected elements",
        ),
        (
            "failed_but_present_elements",
            "failed_but_present_left_off",
            "Failed adds that were present",
        ),
        (
            "stale_elements",
            "stale_left_off",
            "Stale reads (element missing from a later read)",
        ),
    ] {
        witness_list(out, details, key, left_off, title);
    }
    key_rows(out, details);
}

fn left_off_note(out: &mut String, shown: usize, total_rows: usize, left_off: u64) {
    let more = (total_rows - shown) as u64 + left_off;
    if more > 0 {
        let _ = writeln!(
            out,
            "<p>… and {more} more (results.json keeps the first ones)</p>"
        );
    }
}

fn lost_rows(out: &mut String, details: &Value) {
    let rows = details
        .get("lost_elements")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "<h4>Lost elements</h4>\n<table><tr><th>key</th><th>element</th><th>process</th>\
         <th>node</th><th>invoked (s)</th><th>acknowledged (s)</th><th>faults active</th>\
         <th>witness</th></tr>\n",
    );
    for r in rows.iter().take(MAX_WITNESS_ROWS) {
        let invoked = r
            .get("invoke_ns")
            .and_then(Value::as_u64)
            .map(|t| format!("{:.3}", t as f64 / 1e9))
            .unwrap_or_default();
        let acked = r
            .get("ack_s")
            .and_then(Value::as_f64)
            .map(|t| format!("{t:.3}"))
            .unwrap_or_default();
        let active: Vec<String> = r
            .get("faults_active")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|f| text_of(Some(f)))
            .collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{invoked}</td><td>{acked}</td>\
             <td>{}</td><td>{}</td></tr>",
            esc(&text_of(r.get("key"))),
            esc(&text_of(r.get("element"))),
            esc(&text_of(r.get("process"))),
            esc(&text_of(r.get("node"))),
            esc(&active.join(", ")),
            esc(&text_of(r.get("witness")))
        );
    }
    out.push_str("</table>\n");
    let left = details
        .get("lost_left_off")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    left_off_note(out, rows.len().min(MAX_WITNESS_ROWS), rows.len(), left);
}

fn witness_list(out: &mut String, details: &Value, key: &str, left_off: &str, title: &str) {
    let rows = details
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h4>{}</h4>\n<ul>", esc(title));
    for r in rows.iter().take(MAX_WITNESS_ROWS) {
        let _ = writeln!(out, "<li>{}</li>", esc(&text_of(r.get("witness"))));
    }
    out.push_str("</ul>\n");
    let left = details.get(left_off).and_then(Value::as_u64).unwrap_or(0);
    left_off_note(out, rows.len().min(MAX_WITNESS_ROWS), rows.len(), left);
}

fn key_rows(out: &mut String, details: &Value) {
    let keys = details
        .get("keys")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if keys.is_empty() {
        return;
    }
    out.push_str(
        "<h4>Per key</h4>\n<table><tr><th>key</th><th>verdict</th><th>attempted</th><th>ok</th>\
         <th>fail</th><th>info</th><th>final read (elements)</th><th>lost</th>\
         <th>unexpected</th><th>recovered</th><th>failed but present</th><th>stale</th></tr>\n",
    );
    for k in keys.iter().take(MAX_KEY_ROWS) {
        let final_read = match k.get("final_read") {
            Some(Value::Object(f)) => text_of(f.get("size")),
            _ => "none".to_string(),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td>",
            esc(&text_of(k.get("key"))),
            super::badge(&text_of(k.get("verdict")))
        );
        for c in ["attempted", "acknowledged", "failed", "indeterminate"] {
            let _ = write!(out, "<td>{}</td>", esc(&text_of(k.get(c))));
        }
        let _ = write!(out, "<td>{}</td>", esc(&final_read));
        for c in [
            "lost",
            "unexpected",
            "recovered",
            "failed_but_present",
            "stale",
        ] {
            let _ = write!(out, "<td>{}</td>", esc(&text_of(k.get(c))));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    let left = details
        .get("keys_left_off")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    left_off_note(out, keys.len().min(MAX_KEY_ROWS), keys.len(), left);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_lost_witnesses_and_keys_are_rendered_and_escaped() {
        let d = json!({
            "attempted": 4, "acknowledged": 3, "lost": 1, "keys_unknown": 0,
            "lost_elements": [{"key": "k<1>", "element": 7, "process": 2, "node": "n2",
                "invoke_ns": 1_500_000_000u64, "ack_s": 1.75, "faults_active": ["isolate n1"],
                "witness": "add 7 on key k<1> by process 2: ok at 1.8 s"}],
            "lost_left_off": 3,
            "unexpected_elements": [{"witness": "element 99 on key k: read but never attempted"}],
            "keys": [{"key": "k<1>", "verdict": "invalid", "attempted": 4, "final_read": {"size": 2}}],
        });
        let mut out = String::new();
        set_section(&mut out, &d);
        assert!(out.contains("<h3 id=\"anomalies-set\">Set</h3>"), "{out}");
        assert!(out.contains("<td>adds attempted</td><td>4</td>"), "{out}");
        assert!(out.contains("<td>k&lt;1&gt;</td><td>7</td><td>2</td><td>n2</td><td>1.500</td><td>1.750</td><td>isolate n1</td>"), "{out}");
        assert!(out.contains("… and 3 more"), "{out}");
        assert!(
            out.contains("<li>element 99 on key k: read but never attempted</li>"),
            "{out}"
        );
        assert!(
            out.contains("<span class=\"badge invalid\">invalid</span>"),
            "{out}"
        );
        let mut out = String::new();
        set_section(&mut out, &json!({"error": "op 3: bad"}));
        assert!(out.contains("not checkable as a set: op 3: bad"), "{out}");
    }
}
