//! The run page's "Chaos experiment" section: what the probe saw (probes, served, failed,
//! availability, latency quantiles, the longest run of failures), the SLO and each violation,
//! and the abort rail (its limit and when it tripped).
//!
//! Owns only rendering the `slo` judgement's `details` and results.json `chaos` (see
//! `chaos::slo`, `chaos::run::write_results`) as HTML. Does not own the judgement.

use super::{esc, text_of};
use serde_json::Value;
use std::fmt::Write as _;

fn ms(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |x| format!("{x:.1} ms"))
}

/// The section, from the judgement's `details` and results.json.
pub fn chaos_section(out: &mut String, details: &Value, results: &Value) {
    let p = &details["probes"];
    let slo = &details["slo"];
    out.push_str(
        "<h3 id=\"chaos\">Chaos experiment</h3>\n<p>No workload of ours and no consistency \
         checker: the probe's answers are the history, judged against the SLO.</p>\n<table>\n",
    );
    let mut row = |k: &str, v: String| {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    };
    row(
        "probes",
        format!(
            "{} ({} served, {} failed or timed out)",
            text_of(p.get("probes")),
            text_of(p.get("served")),
            text_of(p.get("failed"))
        ),
    );
    row(
        "availability",
        p["availability"]
            .as_f64()
            .map_or("-".into(), |a| format!("{a:.4}")),
    );
    row(
        "latency of served probes",
        format!(
            "p50 {}, p99 {}, max {}",
            ms(&p["p50_ms"]),
            ms(&p["p99_ms"]),
            ms(&p["max_ms"])
        ),
    );
    row(
        "longest run of failed probes",
        text_of(p.get("longest_failure_run")),
    );
    let mut wanted = Vec::new();
    if let Some(x) = slo["p99_ms"].as_f64() {
        wanted.push(format!("p99 ≤ {x} ms"));
    }
    if let Some(x) = slo["availability"].as_f64() {
        wanted.push(format!("availability ≥ {x}"));
    }
    row(
        "SLO",
        if wanted.is_empty() {
            "none given (judged by running to the end without an abort)".into()
        } else {
            wanted.join(", ")
        },
    );
    if let Some(vs) = details["violations"].as_array().filter(|v| !v.is_empty()) {
        let list: Vec<String> = vs.iter().map(|v| text_of(Some(v))).collect();
        row("violated", list.join("; "));
    }
    let abort = &results["chaos"]["abort"];
    row(
        "abort rail",
        match abort["at_s"].as_f64() {
            Some(at) => format!(
                "tripped at {at:.1} s after {} failed probes in a row: faults stopped and healed",
                text_of(abort.get("after"))
            ),
            None => format!(
                "not tripped (trips after {} failed probes in a row)",
                text_of(abort.get("after"))
            ),
        },
    );
    out.push_str("</table>\n");
}
