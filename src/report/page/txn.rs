//! The run page's "Transactions" section: the transactional checker's counts (and, for
//! rw-register histories, how many keys' version orders it could infer), anomaly counts,
//! the consistency models ruled out ("not read-committed", …), components left unsearched, and
//! each anomaly explained in words — every cycle also drawn as a small self-contained SVG
//! (transactions on a circle, one arrow per dependency, labelled and coloured by edge type; no
//! external JS or CSS).
//!
//! Owns only rendering `checker::txn`'s `details` as HTML. Does not own the checker or the rest
//! of the page.

use super::esc;
use serde_json::Value;
use std::fmt::Write as _;

/// At most this many anomalies are drawn (the checker keeps a few per type).
const MAX_ANOMALIES: usize = 40;

fn edge_colour(edge: &str) -> &'static str {
    match edge {
        "ww" => "#c0392b",
        "wr" => "#2471a3",
        "rw" => "#d68910",
        "process" => "#7d3c98",
        _ => "#566573",
    }
}

/// The models a result was checked against: `consistency-models` (a list), or an older
/// result's single `model`.
fn checked_against(details: &Value) -> String {
    let models = strs(details.get("consistency-models"));
    if !models.is_empty() {
        return match details.get("claimed-by").and_then(Value::as_str) {
            Some(by) => format!("{} ({by})", models.join(" + ")),
            None => models.join(" + "),
        };
    }
    details
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string()
}

fn strs(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// An SVG of a cycle: `steps` are `{from, to, edge}` objects.
pub fn cycle_svg(steps: &[Value]) -> String {
    let nodes: Vec<u64> = steps
        .iter()
        .filter_map(|s| s.get("from").and_then(Value::as_u64))
        .collect();
    let n = nodes.len().max(1);
    let (w, h, r) = (320.0f64, 240.0f64, 80.0f64);
    let (cx, cy) = (w / 2.0, h / 2.0);
    let pos = |i: usize| {
        let a = std::f64::consts::TAU * i as f64 / n as f64 - std::f64::consts::FRAC_PI_2;
        (cx + r * a.cos(), cy + r * a.sin())
    };
    let index_of = |t: u64| nodes.iter().position(|&x| x == t).unwrap_or(0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\">\n<defs>"
    );
    for e in ["ww", "wr", "rw", "process", "realtime"] {
        let _ = write!(
            s,
            "<marker id=\"arrow-{e}\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"{}\"/></marker>",
            edge_colour(e)
        );
    }
    s.push_str("</defs>\n");
    let node_r = 20.0;
    for step in steps {
        let (Some(a), Some(b)) = (
            step.get("from").and_then(Value::as_u64),
            step.get("to").and_then(Value::as_u64),
        ) else {
            continue;
        };
        let edge = step.get("edge").and_then(Value::as_str).unwrap_or("");
        let (x1, y1) = pos(index_of(a));
        let (x2, y2) = pos(index_of(b));
        let (dx, dy) = (x2 - x1, y2 - y1);
        let len = (dx * dx + dy * dy).sqrt().max(1.0);
        let (ux, uy) = (dx / len, dy / len);
        // Bend two-node cycles apart: offset each arrow to its left.
        let (ox, oy) = if n == 2 {
            (-uy * 12.0, ux * 12.0)
        } else {
            (0.0, 0.0)
        };
        let (sx, sy) = (x1 + ux * node_r + ox, y1 + uy * node_r + oy);
        let (ex, ey) = (x2 - ux * node_r + ox, y2 - uy * node_r + oy);
        let colour = edge_colour(edge);
        let _ = writeln!(
            s,
            "<line x1=\"{sx:.1}\" y1=\"{sy:.1}\" x2=\"{ex:.1}\" y2=\"{ey:.1}\" stroke=\"{colour}\" stroke-width=\"2\" marker-end=\"url(#arrow-{})\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" font-family=\"sans-serif\" fill=\"{colour}\" text-anchor=\"middle\">{}</text>",
            esc(edge),
            (sx + ex) / 2.0 + ox,
            (sy + ey) / 2.0 + oy - 3.0,
            esc(edge)
        );
    }
    for (i, t) in nodes.iter().enumerate() {
        let (x, y) = pos(i);
        let _ = writeln!(
            s,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{node_r}\" fill=\"#fdfefe\" stroke=\"#1c2833\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" font-family=\"sans-serif\" text-anchor=\"middle\">T{t}</text>",
            y + 4.0
        );
    }
    s.push_str("</svg>");
    s
}

/// Render the transactional checker's details.
pub(super) fn txn_section(out: &mut String, details: &Value) {
    out.push_str("<h3 id=\"anomalies-txn\">Transactions</h3>\n");
    if let Some(e) = details.get("error").and_then(Value::as_str) {
        let _ = writeln!(
            out,
            "<p>history not checkable as transactions: {}</p>",
            esc(e)
        );
        return;
    }
    let num = |k: &str| details.get(k).and_then(Value::as_u64).unwrap_or(0);
    let _ = writeln!(
        out,
        "<p>{} committed, {} failed, {} indeterminate transactions over {} keys; {} dependency edges; \
         {} cyclic component(s); checked against {}.</p>",
        num("committed"),
        num("failed"),
        num("indeterminate"),
        num("keys"),
        num("edges"),
        num("components"),
        esc(&checked_against(details))
    );
    if let Some(v) = details.get("versions").filter(|v| v.is_object()) {
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        let _ = writeln!(
            out,
            "<p>rw-register: versions totally ordered for {} of {} keys (from {}); ww and rw \
             dependencies exist only where a key's version order is known.</p>",
            n("keys_totally_ordered"),
            n("keys"),
            esc(&strs(v.get("sources")).join(", "))
        );
    }
    let not = strs(details.get("not"));
    if !not.is_empty() {
        let also = strs(details.get("also-not").or_else(|| details.get("also_not")));
        let _ = writeln!(
            out,
            "<p><b>not {}</b>{}</p>",
            esc(&not.join(", not ")),
            if also.is_empty() {
                String::new()
            } else {
                format!(" (hence also not {})", esc(&also.join(", ")))
            }
        );
    }
    if let Some(counts) = details.get("anomaly_counts").and_then(Value::as_object)
        && !counts.is_empty()
    {
        out.push_str("<table><tr><th>anomaly</th><th>found</th></tr>\n");
        for (k, v) in counts {
            let _ = writeln!(out, "<tr><td>{}</td><td>{v}</td></tr>", esc(k));
        }
        out.push_str("</table>\n");
    }
    for u in details
        .get("unsearched")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let _ = writeln!(
            out,
            "<p>unsearched component of {} transactions ({}): {}</p>",
            u.get("size").and_then(Value::as_u64).unwrap_or(0),
            esc(&strs(u.get("shapes")).join(", ")),
            esc(u.get("reason").and_then(Value::as_str).unwrap_or(""))
        );
    }
    let anomalies = details
        .get("anomalies")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for a in anomalies.iter().take(MAX_ANOMALIES) {
        let name = a.get("type").and_then(Value::as_str).unwrap_or("?");
        let _ = writeln!(out, "<h4>{}</h4>", esc(name));
        if let Some(steps) = a.get("cycle").and_then(Value::as_array) {
            out.push_str(&cycle_svg(steps));
            out.push('\n');
        }
        out.push_str("<ol>");
        for line in strs(a.get("explanation")) {
            let _ = write!(out, "<li>{}</li>", esc(&line));
        }
        out.push_str("</ol>\n");
    }
    if anomalies.len() > MAX_ANOMALIES {
        let _ = writeln!(
            out,
            "<p>{} more anomalies in results.json.</p>",
            anomalies.len() - MAX_ANOMALIES
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_section_names_models_counts_and_draws_each_cycle() {
        let details = json!({
            "committed": 3, "failed": 0, "indeterminate": 0, "keys": 2, "edges": 4,
            "components": 1, "model": "strict-serializable",
            "not": ["repeatable-read"], "also_not": ["serializable"],
            "anomaly_counts": {"G2-item": 1},
            "anomalies": [{"type": "G2-item", "ops": [0, 1],
                "explanation": ["T0 read x <empty> without 1, so T0 → T1 (rw)"],
                "cycle": [{"from": 0, "to": 1, "edge": "rw", "because": "…"},
                          {"from": 1, "to": 0, "edge": "rw", "because": "…"}]}],
            "unsearched": []
        });
        let mut out = String::new();
        txn_section(&mut out, &details);
        assert!(out.contains("<b>not repeatable-read</b>"), "{out}");
        assert!(out.contains("hence also not serializable"));
        assert!(out.contains("<h4>G2-item</h4>"));
        assert!(out.contains("&lt;empty&gt;"), "explanations are escaped");
        assert_eq!(out.matches("<svg").count(), 1);
        assert_eq!(out.matches("<line").count(), 2);
        assert!(out.contains(">T1</text>"));
        assert!(!out.contains("<script") && !out.contains("href=\"http"));
        assert!(!out.contains("rw-register"), "{out}");
        let mut out = String::new();
        let register = json!({"kind": "rw-register", "committed": 2,
            "versions": {"sources": ["initial-state", "wfr-keys"], "keys": 10,
                         "keys_totally_ordered": 3, "version_edges": 12}});
        txn_section(&mut out, &register);
        assert!(
            out.contains(
                "versions totally ordered for 3 of 10 keys (from initial-state, wfr-keys)"
            ),
            "{out}"
        );
        let mut out = String::new();
        txn_section(&mut out, &json!({"error": "op 3: bad"}));
        assert!(out.contains("not checkable") && out.contains("op 3: bad"));
    }
}
