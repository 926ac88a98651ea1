//! The run page's Faults section: requested faults that never took effect, database processes
//! that did not see their node's clock (`report::clock_seen`), a bar row per fault
//! kind over the run, and the table of fault intervals. The intervals come from
//! `report::fault_intervals`; recovery is `page::recovery`.

use super::{MAX_FAULT_ROWS, esc};
use crate::history::History;
use crate::report::{fault_intervals, plots};
use serde_json::Value;
use std::fmt::Write as _;

/// Where a timeline bar from `from_s` to `to_s` sits on a track of `span_s` seconds: left edge
/// and width in %. At least 0.3 % wide, but never past the end (a fault started at the very end
/// of a killed run's history leaves less than that; f64::clamp would panic).
pub(super) fn bar_place(from_s: f64, to_s: f64, span_s: f64) -> (f64, f64) {
    let left = (from_s / span_s * 100.0).clamp(0.0, 100.0);
    let width = ((to_s - from_s) / span_s * 100.0)
        .max(0.3)
        .min(100.0 - left);
    (left, width)
}

/// Fault timeline: the requested faults that never took effect (results.json's
/// `store::NEVER_RAN_KEY`, which `runner::requested` wrote), one bar
/// row per fault kind (CSS only, positions in % of the run), then the table of intervals, at
/// most [`MAX_FAULT_ROWS`].
pub(super) fn fault_section(out: &mut String, history: &History, results: &Value) {
    let faults = fault_intervals(history);
    out.push_str("<h2 id=\"faults\">Faults</h2>\n");
    let never = crate::store::never_ran_in(results);
    if !never.is_empty() {
        out.push_str("<div class=\"notice\"><p><b>Requested but never in effect:</b></p><ul>\n");
        for n in &never {
            let _ = writeln!(out, "<li><b>{}</b>: {}</li>", esc(&n.fault), esc(&n.why));
        }
        out.push_str("</ul></div>\n");
    }
    let unseen = crate::report::clock_seen::unseen_clocks(history);
    if !unseen.is_empty() {
        out.push_str("<div class=\"notice\"><p><b>Clocks the database did not see:</b></p><ul>\n");
        for u in &unseen {
            let _ = writeln!(
                out,
                "<li>{}</li>",
                esc(&crate::report::clock_seen::describe(u))
            );
        }
        out.push_str("</ul></div>\n");
    }
    if faults.is_empty() {
        out.push_str("<p>No faults injected.</p>\n");
        return;
    }
    let end_s = history.ops.iter().map(|o| o.time_ns).max().unwrap_or(0) as f64 / 1e9;
    let span_s = faults
        .iter()
        .map(|f| f.end_s)
        .fold(end_s, f64::max)
        .max(1e-9);
    let shown = &faults[..faults.len().min(MAX_FAULT_ROWS)];
    let mut kinds: Vec<&str> = Vec::new();
    for f in shown {
        if !kinds.contains(&f.kind.as_str()) {
            kinds.push(&f.kind);
        }
    }
    let _ = writeln!(
        out,
        "<div class=\"timeline\"><div class=\"tl-axis\">0 s<span>{span_s:.1} s</span></div>"
    );
    for kind in &kinds {
        let c = plots::fault_color(kind);
        let label = crate::faults::kind(kind).map_or(*kind, |k| k.label);
        let _ = write!(
            out,
            "<div class=\"tl-row\"><span class=\"tl-name\">{}</span><div class=\"tl-track\">",
            esc(label)
        );
        for f in shown.iter().filter(|f| f.kind == *kind) {
            let (left, width) = bar_place(f.start_s, f.end_s, span_s);
            let _ = write!(
                out,
                "<span class=\"tl-bar\" style=\"left:{left:.3}%;width:{width:.3}%;\
                 background:#{:02x}{:02x}{:02x}\" title=\"{} {:.3}–{:.3} s\"></span>",
                c.0,
                c.1,
                c.2,
                esc(&f.label),
                f.start_s,
                f.end_s
            );
        }
        out.push_str("</div></div>\n");
    }
    out.push_str("</div>\n");
    out.push_str(
        "<table><tr><th>start (s)</th><th>end (s)</th><th>duration (s)</th><th>kind</th>\
         <th>label</th></tr>\n",
    );
    for f in shown {
        let c = plots::fault_color(&f.kind);
        let _ = writeln!(
            out,
            "<tr><td>{:.3}</td><td>{:.3}{}</td><td>{:.3}</td><td><span class=\"swatch\" \
             style=\"background:#{:02x}{:02x}{:02x}\"></span>{}</td><td>{}</td></tr>",
            f.start_s,
            f.end_s,
            if f.open {
                " (end of history: never healed in it)"
            } else {
                ""
            },
            f.end_s - f.start_s,
            c.0,
            c.1,
            c.2,
            esc(&f.kind),
            esc(&f.label)
        );
    }
    out.push_str("</table>\n");
    if faults.len() > MAX_FAULT_ROWS {
        let _ = writeln!(
            out,
            "<p>… {} more intervals not shown</p>",
            faults.len() - MAX_FAULT_ROWS
        );
    }
}
