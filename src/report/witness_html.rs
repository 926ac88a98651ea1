//! A self-contained HTML page explaining a linearizability result.
//!
//! Owns rendering a `LinearResult` plus the checked `History` into one HTML string: inline CSS and
//! inline SVG only (no scripts, fonts or external references), so the page opens from `file://`.
//! Does not own the check itself (`checker::linear`) or writing the file (callers do that).
//!
//! For each invalid part (at most `MAX_INVALID_PARTS`) the page draws a timeline: one lane per
//! process, each op a bar from invoke to completion (ops that ended `info` or never completed are
//! hatched and open-ended to the right edge), the ops of the minimized window emphasized, the op that
//! cannot be linearized in red (class `conflict`), and the tail of the longest linearizable prefix as
//! numbered points on the bars (placed left to right in linearization order, each inside its op's
//! interval where possible), followed by a table of that tail (order, op, state after each step), a
//! legend and the text explanation. Valid and unknown parts get a summary table (at most
//! `MAX_SUMMARY_ROWS` rows).
//!
//! Size is bounded whatever the history size (well under 1 MB): no further part is drawn once the
//! page passes `PAGE_BUDGET_BYTES`, and a timeline draws the witness ops (the blocked op, at
//! most `MAX_MINIMIZED_DRAWN` minimized ops, those nearest the blocked op, the prefix tail) plus at most `MAX_NEIGHBOURS` other ops
//! of the same part nearest in history position to the blocked op; descriptions and values are
//! truncated. The time axis is the ops' `time_ns` when they carry distinct times, otherwise history
//! positions.

use super::html::esc;
use crate::checker::Verdict;
use crate::checker::linear::{LinearResult, PartSummary, Witness};
use crate::history::{History, OpType};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

/// Invalid parts drawn as timelines; further invalid parts are only listed in the summary table.
pub const MAX_INVALID_PARTS: usize = 5;
/// Once the page is this long, no further invalid part is drawn (one part adds at most ~300 KB).
pub const PAGE_BUDGET_BYTES: usize = 400_000;
/// Ops drawn around a witness besides the witness ops themselves.
pub const MAX_NEIGHBOURS: usize = 300;
/// Minimized ops drawn per witness.
pub const MAX_MINIMIZED_DRAWN: usize = 200;
/// Rows of the per-part summary table.
pub const MAX_SUMMARY_ROWS: usize = 200;
/// Characters kept of any description, value or state shown.
const MAX_TEXT_CHARS: usize = 120;
/// Characters kept of the text explanation.
const MAX_EXPLAIN_CHARS: usize = 12_000;

const LANE_H: f64 = 22.0;
const BAR_H: f64 = 14.0;
const LABEL_W: f64 = 90.0;
/// Plot width bounds in pixels; the width grows with the number of ops drawn.
const PLOT_W_MIN: f64 = 1100.0;
const PLOT_W_MAX: f64 = 4000.0;
const AXIS_H: f64 = 30.0;

fn trunc(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
    }
}

/// Escaped and truncated.
fn et(s: &str) -> String {
    esc(&trunc(s, MAX_TEXT_CHARS))
}

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.6em;white-space:pre-wrap;font-size:.85em}
.verdict-valid{color:#1a7f37;font-weight:bold}.verdict-invalid{color:#c62828;font-weight:bold}
.verdict-unknown{color:#b26a00;font-weight:bold}
.scroll{overflow-x:auto;max-width:100%}
.timeline{border:1px solid #ddd;background:#fff}
.lane-label{font:11px monospace;fill:#444}
.lane-line{stroke:#eee}
.axis{stroke:#888}.tick{font:10px monospace;fill:#666}
.op rect{stroke:#555;stroke-width:.6}
.op.ok rect{fill:#cfe3f7}.op.fail rect{fill:#eee;stroke-dasharray:3 2}
.op.pending rect{fill:url(#hatch)}
.op.window rect{stroke:#000;stroke-width:1.6}
.op.window.ok rect{fill:#7fb3e8}
.op.conflict rect{fill:#e53935!important;stroke:#8b0000!important;stroke-width:2!important}
.op.conflict.pending rect{fill:url(#hatch-red)!important}
.op text{font:10px monospace;fill:#111;pointer-events:none}
.op.conflict text{fill:#fff;font-weight:bold}
.lin circle{fill:#2e7d32;stroke:#fff;stroke-width:1}
.lin text{font:9px monospace;fill:#fff}
.lin-path{fill:none;stroke:#2e7d32;stroke-width:1;stroke-dasharray:2 2}
tr.conflict td{background:#fde0dc}
.legend span{display:inline-block;margin-right:1.2em;font-size:.85em}
.sw{display:inline-block;width:2em;height:.9em;border:1px solid #555;vertical-align:middle;margin-right:.3em}
.note{color:#666;font-size:.85em}
"#;

/// Render the page. `history` must be the history `result` was computed from (witness op indices
/// are positions in it).
pub fn render_witness_html(result: &LinearResult, history: &History) -> String {
    render(result, result, history, &At(None))
}

/// [`render_witness_html`] from part of the history: `ops` holds (at least) every op of the
/// invalid parts' keys, in history order, and `positions[i]` is the position of `ops.ops[i]` in
/// the whole history `result` was computed from. The page is the one the whole history gives
/// (a long run's witness page, drawn without holding its history).
pub fn render_witness_html_at(result: &LinearResult, ops: &History, positions: &[u64]) -> String {
    let local_of: HashMap<u64, u64> = positions
        .iter()
        .enumerate()
        .map(|(i, &p)| (p, i as u64))
        .collect();
    let mut local = result.clone();
    // A position with no op here (a part not drawn) points past the ops: drawn as absent.
    let past = ops.ops.len() as u64;
    crate::stream::remap_positions_with(&mut local, |i| {
        Some(local_of.get(&i).copied().unwrap_or(past))
    });
    render(result, &local, ops, &At(Some(positions)))
}

/// Positions of a history's ops in the whole history: themselves, or (part of a history) from
/// a table.
struct At<'a>(Option<&'a [u64]>);

impl At<'_> {
    /// The whole history's position of op `i`.
    fn pos(&self, i: u64) -> u64 {
        match self.0 {
            Some(p) => p.get(i as usize).copied().unwrap_or(i),
            None => i,
        }
    }
}

/// The page: text from `result`, the drawings from `local` (the same result with positions in
/// `history`), labels through `at`.
fn render(result: &LinearResult, local: &LinearResult, history: &History, at: &At) -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = writeln!(
        out,
        "<title>shakedown: {} {}</title><style>{CSS}</style></head><body>",
        esc(&result.model),
        result.verdict
    );
    let _ = writeln!(
        out,
        "<h1>Linearizability ({}): <span class=\"verdict-{v}\">{v}</span></h1>",
        esc(&result.model),
        v = result.verdict
    );
    let _ = writeln!(out, "<p>{}</p>", et(&result.summary()));
    let mut explain = result.explain();
    if explain.chars().count() > MAX_EXPLAIN_CHARS {
        explain = trunc(&explain, MAX_EXPLAIN_CHARS);
    }
    let _ = writeln!(out, "<h2>Explanation</h2>\n<pre>{}</pre>", esc(&explain));

    let pairs = history.pairs().unwrap_or_default();
    let invalid: Vec<&PartSummary> = local
        .parts
        .iter()
        .filter(|p| p.verdict == Verdict::Invalid && p.witness.is_some())
        .collect();
    if !invalid.is_empty() {
        out.push_str(LEGEND);
    }
    let mut drawn_parts = 0;
    for p in &invalid {
        if drawn_parts == MAX_INVALID_PARTS || out.len() > PAGE_BUDGET_BYTES {
            break;
        }
        if let Some(w) = &p.witness {
            render_invalid_part(&mut out, p, w, history, &pairs, at);
            drawn_parts += 1;
        }
    }
    if invalid.len() > drawn_parts {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} more invalid parts not drawn (the page stays small); see the table below.</p>",
            invalid.len() - drawn_parts
        );
    }
    render_summary_table(&mut out, result);
    out.push_str("</body></html>\n");
    out
}

const LEGEND: &str = "<div class=\"legend\"><h2>Legend</h2>\
<span><i class=\"sw\" style=\"background:#cfe3f7\"></i>op (invoke → ok)</span>\
<span><i class=\"sw\" style=\"background:#7fb3e8;border:2px solid #000\"></i>op in the minimized window</span>\
<span><i class=\"sw\" style=\"background:#e53935\"></i>op that cannot be linearized</span>\
<span><i class=\"sw\" style=\"background:repeating-linear-gradient(45deg,#f2c94c 0 3px,#fff 3px 6px)\"></i>info / never completed (open-ended)</span>\
<span><i class=\"sw\" style=\"background:#eee;border-style:dashed\"></i>failed op</span>\
<span><i class=\"sw\" style=\"background:#2e7d32;border-radius:50%;width:.9em\"></i>linearization point (step of the longest linearizable prefix)</span>\
</div>\n";

fn key_text(k: &Option<String>) -> String {
    match k {
        Some(k) => format!("key {k}"),
        None => "whole history".to_string(),
    }
}

/// The minimized ops shown: all of them, or the `MAX_MINIMIZED_DRAWN` nearest the blocked op in
/// history position, in history order.
fn minimized_shown<'w>(w: &'w Witness, at: &At) -> Vec<&'w crate::checker::linear::WitnessOp> {
    let Some(m) = &w.minimized else {
        return Vec::new();
    };
    let mut v: Vec<&crate::checker::linear::WitnessOp> = m.iter().collect();
    if v.len() > MAX_MINIMIZED_DRAWN {
        let c = at.pos(w.op.index);
        v.sort_by_key(|o| at.pos(o.index).abs_diff(c));
        v.truncate(MAX_MINIMIZED_DRAWN);
        v.sort_by_key(|o| o.index);
    }
    v
}

/// Which ops of the part to draw: history positions of invokes.
fn select_ops(
    w: &Witness,
    key: &Option<String>,
    history: &History,
    at: &At,
) -> (Vec<usize>, usize) {
    let n = history.ops.len();
    let mut must: BTreeSet<usize> = BTreeSet::new();
    let mut push = |i: u64| {
        if (i as usize) < n {
            must.insert(i as usize);
        }
    };
    push(w.op.index);
    let mut minimized_hidden = 0;
    if let Some(m) = &w.minimized {
        for o in minimized_shown(w, at) {
            push(o.index);
        }
        minimized_hidden = m.len().saturating_sub(MAX_MINIMIZED_DRAWN);
    }
    for s in &w.prefix_tail {
        push(s.op.index);
    }
    let in_part = |i: usize| {
        let o = &history.ops[i];
        o.op_type == OpType::Invoke && o.is_client() && o.key.as_deref() == key.as_deref()
    };
    // Neighbours: the same-part invokes nearest the blocked op (by position in the whole
    // history), the earlier one first at equal distance.
    let centre = (w.op.index as usize).min(n.saturating_sub(1));
    let c = at.pos(centre as u64);
    let mut near: Vec<(u64, bool, usize)> = (0..n)
        .filter(|&i| i != centre && in_part(i))
        .map(|i| {
            let p = at.pos(i as u64);
            (p.abs_diff(c), p > c, i)
        })
        .collect();
    near.sort_unstable();
    let mut added = 0;
    for (_, _, i) in near {
        if added == MAX_NEIGHBOURS {
            break;
        }
        if must.insert(i) {
            added += 1;
        }
    }
    (must.into_iter().collect(), minimized_hidden)
}

/// The page section of one invalid part: what blocks, a timeline of the ops around it (bars
/// per process, the attempted linearization's points), then the attempt and the minimized
/// window as tables.
fn render_invalid_part(
    out: &mut String,
    p: &PartSummary,
    w: &Witness,
    history: &History,
    pairs: &[Option<usize>],
    at: &At,
) {
    let _ = writeln!(
        out,
        "<h2>Invalid: {} ({} ops, {} pending)</h2>",
        et(&key_text(&p.key)),
        p.op_count,
        p.pending_count
    );
    let o = &w.op;
    let _ = writeln!(
        out,
        "<p>Op <b>{}</b> (process {}, <code>{}</code>, {}) cannot be linearized: the longest \
         linearizable prefix found ({} ops) ends in state <code>{}</code>, and no linearization lets \
         this op take effect before its completion.</p>",
        at.pos(o.index),
        et(&o.process),
        et(&o.description),
        esc(&o.outcome),
        w.prefix_len,
        et(&w.last_state)
    );
    let (drawn, minimized_hidden) = select_ops(w, &p.key, history, at);
    let axis = Axis::of(&drawn, history, pairs, at);
    let _ = writeln!(
        out,
        "<p class=\"note\">Drawn: {} ops of this part (the witness ops plus up to {} neighbours nearest \
         the blocked op){}; time axis: {}.</p>",
        drawn.len(),
        MAX_NEIGHBOURS,
        if minimized_hidden > 0 {
            format!("; {minimized_hidden} further minimized ops not drawn")
        } else {
            String::new()
        },
        if axis.use_time {
            "seconds since the run started"
        } else {
            "history position (the ops carry no times)"
        }
    );
    render_timeline(out, w, history, pairs, &drawn, &axis);
    render_attempt(out, w, at);
}

/// The timeline's x axis: `time_ns` when the drawn ops carry distinct times, else history
/// positions; pending ops run to the right edge, a little past the last completion.
struct Axis<'a> {
    /// The whole history's positions of the ops.
    at: &'a At<'a>,
    /// Whether the axis is time (else history positions).
    use_time: bool,
    /// The axis value at the left edge.
    t_min: f64,
    /// The axis value at the right edge.
    t_edge: f64,
    /// Width of the plot area in px.
    plot_w: f64,
}

impl<'a> Axis<'a> {
    /// The axis of the ops `drawn` (indices into `history`, their completions from `pairs`).
    fn of(drawn: &[usize], history: &History, pairs: &[Option<usize>], at: &'a At<'a>) -> Axis<'a> {
        let mut raw_min = u64::MAX;
        let mut raw_max = 0u64;
        for &i in drawn {
            raw_min = raw_min.min(history.ops[i].time_ns);
            raw_max = raw_max.max(history.ops[i].time_ns);
            if let Some(j) = end_of(pairs, i) {
                raw_max = raw_max.max(history.ops[j].time_ns);
            }
        }
        let mut axis = Axis {
            at,
            use_time: !drawn.is_empty() && raw_max > raw_min,
            t_min: 0.0,
            t_edge: 0.0,
            plot_w: (drawn.len() as f64 * 6.0).clamp(PLOT_W_MIN, PLOT_W_MAX),
        };
        let mut t_min = f64::INFINITY;
        let mut t_max = f64::NEG_INFINITY;
        for &i in drawn {
            t_min = t_min.min(axis.t(history, i));
            t_max = t_max.max(axis.t(history, i));
            if let Some(j) = end_of(pairs, i) {
                t_max = t_max.max(axis.t(history, j));
            }
        }
        if !t_min.is_finite() {
            t_min = 0.0;
            t_max = 1.0;
        }
        if t_max <= t_min {
            t_max = t_min + 1.0;
        }
        let span = t_max - t_min;
        axis.t_min = t_min;
        axis.t_edge = t_max + span * 0.04;
        axis
    }

    /// The axis value of op `i`.
    fn t(&self, history: &History, i: usize) -> f64 {
        if self.use_time {
            history.ops[i].time_ns as f64
        } else {
            self.at.pos(i as u64) as f64
        }
    }

    /// The x coordinate of the axis value `tv`.
    fn x(&self, tv: f64) -> f64 {
        LABEL_W + (tv - self.t_min) / (self.t_edge - self.t_min) * self.plot_w
    }
}

/// The completion of the op at `i`, if any.
fn end_of(pairs: &[Option<usize>], i: usize) -> Option<usize> {
    pairs.get(i).copied().flatten()
}

/// The timeline's SVG: axis and ticks, a lane per process, a bar per drawn op, and the
/// linearization points of the attempt's tail.
fn render_timeline(
    out: &mut String,
    w: &Witness,
    history: &History,
    pairs: &[Option<usize>],
    drawn: &[usize],
    axis: &Axis,
) {
    // Lanes: one per process, in process order.
    let mut lanes: BTreeMap<crate::history::Process, usize> = BTreeMap::new();
    for &i in drawn {
        lanes.insert(history.ops[i].process, 0);
    }
    for (n, v) in lanes.values_mut().enumerate() {
        *v = n;
    }
    let height = AXIS_H + LANE_H * lanes.len() as f64 + 10.0;
    let width = LABEL_W + axis.plot_w + 20.0;
    let _ = writeln!(
        out,
        "<div class=\"scroll\"><svg class=\"timeline\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\">"
    );
    out.push_str(
        "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">\
<rect width=\"6\" height=\"6\" fill=\"#fff\"/><rect width=\"3\" height=\"6\" fill=\"#f2c94c\"/></pattern>\
<pattern id=\"hatch-red\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">\
<rect width=\"6\" height=\"6\" fill=\"#fff\"/><rect width=\"3\" height=\"6\" fill=\"#e53935\"/></pattern></defs>\n",
    );
    // Axis with ticks.
    let _ = writeln!(
        out,
        "<line class=\"axis\" x1=\"{LABEL_W}\" y1=\"{a:.1}\" x2=\"{:.1}\" y2=\"{a:.1}\"/>",
        LABEL_W + axis.plot_w,
        a = AXIS_H - 8.0
    );
    // Enough decimals that neighbouring tick labels differ.
    let step_s = (axis.t_edge - axis.t_min) / 8.0 / 1e9;
    let decimals = (-step_s.log10()).ceil().clamp(0.0, 9.0) as usize + 1;
    for k in 0..=8 {
        let tv = axis.t_min + (axis.t_edge - axis.t_min) * k as f64 / 8.0;
        let label = if axis.use_time {
            format!("{:.*}s", decimals, tv / 1e9)
        } else {
            format!("#{:.0}", tv)
        };
        let _ = writeln!(
            out,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>",
            axis.x(tv),
            AXIS_H - 12.0
        );
    }
    for (proc_, lane) in &lanes {
        let y = AXIS_H + LANE_H * *lane as f64;
        let _ = writeln!(
            out,
            "<text class=\"lane-label\" x=\"4\" y=\"{:.1}\">process {}</text><line class=\"lane-line\" x1=\"{LABEL_W}\" y1=\"{y2:.1}\" x2=\"{:.1}\" y2=\"{y2:.1}\"/>",
            y + BAR_H - 2.0,
            esc(&proc_.to_string()),
            LABEL_W + axis.plot_w,
            y2 = y + LANE_H - 2.0
        );
    }
    let bar_of = render_bars(out, w, history, pairs, drawn, axis, &lanes);
    render_linearization_points(out, w, &bar_of);
    out.push_str("</svg></div>\n");
}

/// A bar per drawn op in its process's lane (classed by outcome, the minimized window and the
/// blocked op; titled with the op); where each went (x0, x1, y), by op index.
fn render_bars(
    out: &mut String,
    w: &Witness,
    history: &History,
    pairs: &[Option<usize>],
    drawn: &[usize],
    axis: &Axis,
    lanes: &BTreeMap<crate::history::Process, usize>,
) -> HashMap<usize, (f64, f64, f64)> {
    let at = axis.at;
    let window: BTreeSet<u64> = w
        .minimized
        .iter()
        .flatten()
        .map(|m| m.index)
        .collect::<BTreeSet<_>>();
    let descriptions: HashMap<u64, &str> = w
        .minimized
        .iter()
        .flatten()
        .chain(w.prefix_tail.iter().map(|s| &s.op))
        .chain(std::iter::once(&w.op))
        .map(|m| (m.index, m.description.as_str()))
        .collect();

    let mut bar_of: HashMap<usize, (f64, f64, f64)> = HashMap::new();
    for &i in drawn {
        let inv = &history.ops[i];
        let comp = end_of(pairs, i).map(|j| &history.ops[j]);
        let pending = comp.is_none_or(|c| c.op_type == OpType::Info);
        let x0 = axis.x(axis.t(history, i));
        let x1 = match end_of(pairs, i) {
            Some(j) if !pending => axis.x(axis.t(history, j)),
            _ => axis.x(axis.t_edge),
        };
        let x1 = x1.max(x0 + 2.0);
        let y = AXIS_H + LANE_H * lanes[&inv.process] as f64;
        bar_of.insert(i, (x0, x1, y));
        let mut class = String::from("op");
        class.push_str(match comp.map(|c| c.op_type) {
            Some(OpType::Ok) => " ok",
            Some(OpType::Fail) => " fail",
            _ => " pending",
        });
        if window.contains(&(i as u64)) {
            class.push_str(" window");
        }
        if i as u64 == w.op.index {
            class.push_str(" conflict");
        }
        let desc = match descriptions.get(&(i as u64)) {
            Some(d) => d.to_string(),
            None => {
                let v = match comp {
                    Some(c) if c.op_type == OpType::Ok => &c.value,
                    _ => &inv.value,
                };
                format!("{} {}", inv.f, v)
            }
        };
        let outcome = match comp.map(|c| c.op_type) {
            Some(OpType::Ok) => "ok",
            Some(OpType::Fail) => "fail",
            Some(OpType::Info) => "info",
            _ => "never completed",
        };
        let title = format!(
            "op {} process {} {} ({outcome}){}",
            at.pos(i as u64),
            inv.process,
            trunc(&desc, MAX_TEXT_CHARS),
            match end_of(pairs, i) {
                Some(j) => format!(", completed at #{}", at.pos(j as u64)),
                None => String::new(),
            }
        );
        let _ = write!(
            out,
            "<g class=\"{class}\" data-op=\"{}\"><title>{}</title><rect x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{BAR_H}\" rx=\"2\"/>",
            at.pos(i as u64),
            esc(&title),
            x1 - x0
        );
        // Label only when there is room for a few characters.
        let room = ((x1 - x0 - 4.0) / 6.0).floor();
        if room >= 3.0 {
            let label = trunc(
                &format!("{}: {desc}", at.pos(i as u64)),
                (room as usize).min(60),
            );
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x0 + 2.0,
                y + BAR_H - 3.0,
                esc(&label)
            );
        }
        out.push_str("</g>\n");
    }
    bar_of
}

/// The points of the attempt's tail on their ops' bars, left to right in linearization order,
/// joined by a line.
fn render_linearization_points(
    out: &mut String,
    w: &Witness,
    bar_of: &HashMap<usize, (f64, f64, f64)>,
) {
    let mut prev_x = LABEL_W;
    let mut pts: Vec<(f64, f64, usize)> = Vec::new();
    let first_step = w.prefix_len.saturating_sub(w.prefix_tail.len());
    for (k, s) in w.prefix_tail.iter().enumerate() {
        if let Some(&(x0, x1, y)) = bar_of.get(&(s.op.index as usize)) {
            let px = prev_x.max(x0 + 3.0).min(x1 - 1.0).max(x0);
            prev_x = px;
            pts.push((px, y + BAR_H / 2.0, k + 1));
        }
    }
    if pts.len() > 1 {
        out.push_str("<polyline class=\"lin-path\" points=\"");
        for (px, py, _) in &pts {
            let _ = write!(out, "{px:.1},{py:.1} ");
        }
        out.push_str("\"/>\n");
    }
    for (px, py, step) in &pts {
        let _ = writeln!(
            out,
            "<g class=\"lin\"><title>point {step}: linearization step {}</title><circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"6\"/><text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{step}</text></g>",
            first_step + step,
            py + 3.0
        );
    }
}

/// The attempted linearization's tail and the blocked op, then the minimized window, as tables.
fn render_attempt(out: &mut String, w: &Witness, at: &At) {
    let first_step = w.prefix_len.saturating_sub(w.prefix_tail.len());
    // The attempted linearization.
    let _ = writeln!(
        out,
        "<h3>Attempted linearization (last {} of {} steps), then the blocked op</h3>",
        w.prefix_tail.len(),
        w.prefix_len
    );
    out.push_str(
        "<table><tr><th>point</th><th>step</th><th>op</th><th>process</th><th>operation</th><th>outcome</th><th>state after</th></tr>\n",
    );
    for (k, s) in w.prefix_tail.iter().enumerate() {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td></tr>",
            k + 1,
            first_step + k + 1,
            at.pos(s.op.index),
            et(&s.op.process),
            et(&s.op.description),
            esc(&s.op.outcome),
            et(&s.state_after)
        );
    }
    let _ = writeln!(
        out,
        "<tr class=\"conflict\"><td>✗</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>cannot be linearized from <code>{}</code></td></tr></table>",
        w.prefix_len + 1,
        at.pos(w.op.index),
        et(&w.op.process),
        et(&w.op.description),
        esc(&w.op.outcome),
        et(&w.last_state)
    );
    if let Some(m) = &w.minimized {
        let _ = writeln!(
            out,
            "<h3>Minimized window ({} ops, {})</h3><p class=\"note\">Essential ops: even if every \
             other read is ignored and every other write may take effect at any time after its invoke \
             or never, these ops cannot be linearized.</p><table><tr><th>op</th><th>process</th><th>operation</th><th>outcome</th></tr>",
            m.len(),
            if w.minimized_complete {
                "1-minimal"
            } else {
                "reduced; budget ran out"
            }
        );
        if m.len() > MAX_MINIMIZED_DRAWN {
            let _ = writeln!(
                out,
                "<tr><td colspan=\"4\" class=\"note\">showing the {MAX_MINIMIZED_DRAWN} nearest the blocked op</td></tr>"
            );
        }
        for o in minimized_shown(w, at) {
            let cls = if o.index == w.op.index {
                " class=\"conflict\""
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "<tr{cls}><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                at.pos(o.index),
                et(&o.process),
                et(&o.description),
                esc(&o.outcome)
            );
        }
        out.push_str("</table>\n");
    }
}

fn render_summary_table(out: &mut String, result: &LinearResult) {
    let _ = writeln!(
        out,
        "<h2>Parts</h2><table><tr><th>key</th><th>ops</th><th>pending</th><th>verdict</th><th>reason</th><th>time (ms)</th></tr>"
    );
    for p in result.parts.iter().take(MAX_SUMMARY_ROWS) {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"verdict-{v}\">{v}</td><td>{}</td><td>{}</td></tr>",
            et(&key_text(&p.key)),
            p.op_count,
            p.pending_count,
            et(p.reason.as_deref().unwrap_or(match p.verdict {
                Verdict::Invalid => "see the witness above",
                _ => "",
            })),
            p.time_ms,
            v = p.verdict
        );
    }
    out.push_str("</table>\n");
    if result.parts.len() > MAX_SUMMARY_ROWS {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} more parts not listed.</p>",
            result.parts.len() - MAX_SUMMARY_ROWS
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::linear::{Decide, LinearConfig, check_history};
    use crate::history::{Op, Process};
    use crate::model::{RegisterConfig, RegisterModel};
    use serde_json::json;
    use std::time::{Duration, Instant};

    fn op(t: OpType, p: u64, f: &str, v: serde_json::Value) -> Op {
        Op::new(t, Process::Client(p), f, v)
    }

    fn assert_self_contained(html: &str) {
        assert!(!html.contains("<script"), "no scripts");
        assert!(!html.contains("https://"), "no external references");
        assert!(!html.contains("http://"), "no external references");
    }

    /// Three keys, one process each, writes then reads; key `b`'s read at its op `bad` sees a
    /// value never written. Key `a` gets bursts of extra ops after `b`'s bad read, so positions
    /// in the whole history are not a stretch of the key's own.
    fn three_keys(per_key: usize, bad: usize) -> History {
        let mut ops = Vec::new();
        let mut push = |ty: OpType, p: u64, f: &str, key: &str, v: serde_json::Value| {
            let mut o = op(ty, p, f, v);
            o.key = Some(crate::history::Name::new(key));
            o.time_ns = (ops.len() as u64 + 1) * 1_000;
            ops.push(o);
        };
        for i in 0..per_key {
            for (p, key) in ["a", "b", "c"].iter().enumerate() {
                let p = p as u64;
                let extra = if *key == "a" && i > bad && i % 7 == 0 {
                    5
                } else {
                    1
                };
                for _ in 0..extra {
                    push(OpType::Invoke, p, "write", key, json!(i));
                    push(OpType::Ok, p, "write", key, json!(i));
                    let seen = if *key == "b" && i == bad { 999 } else { i };
                    push(OpType::Invoke, p, "read", key, json!(null));
                    push(OpType::Ok, p, "read", key, json!(seen));
                }
            }
        }
        History::from_ops(ops)
    }

    #[test]
    fn a_page_drawn_from_the_drawn_keys_ops_alone_is_the_whole_historys_page() {
        let h = three_keys(400, 150);
        let opts = crate::model::ModelOptions::preset(crate::model::SemanticsPreset::Etcd);
        let config = LinearConfig {
            decide: Decide::AllKeys,
            ..LinearConfig::default()
        };
        let r =
            crate::checker::compose::check_linear_with("cas-register", &h, &opts, config).unwrap();
        assert_eq!(r.verdict, Verdict::Invalid);
        let whole = render_witness_html(&r, &h);
        let (mut ops, mut positions) = (Vec::new(), Vec::new());
        for (i, o) in h.ops.iter().enumerate() {
            if o.key.as_deref() == Some("b") {
                ops.push(o.clone());
                positions.push(i as u64);
            }
        }
        let part = render_witness_html_at(&r, &History::from_ops(ops), &positions);
        assert!(whole.contains("<svg"), "the whole page draws the witness");
        // More same-key invokes than drawn neighbours: which ones are drawn depends on the
        // whole history's positions.
        let b_invokes = h
            .ops
            .iter()
            .filter(|o| o.op_type == OpType::Invoke && o.key.as_deref() == Some("b"))
            .count();
        assert!(b_invokes > MAX_NEIGHBOURS);
        if whole != part {
            let at = whole
                .bytes()
                .zip(part.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(whole.len().min(part.len()));
            panic!(
                "pages differ at byte {at}: whole {:?} part {:?}",
                &whole[at.saturating_sub(80)..(at + 80).min(whole.len())],
                &part[at.saturating_sub(80)..(at + 80).min(part.len())]
            );
        }
    }

    #[test]
    fn small_invalid_history_highlights_the_blocked_op() {
        // write 1, then a read of 2 that nothing explains.
        let h = History::from_ops(vec![
            op(OpType::Invoke, 0, "write", json!(1)),
            op(OpType::Ok, 0, "write", json!(1)),
            op(OpType::Invoke, 1, "write", json!(3)),
            op(OpType::Invoke, 0, "read", json!(null)),
            op(OpType::Ok, 0, "read", json!(2)),
        ]);
        let m = RegisterModel::cas_register(RegisterConfig::etcd());
        let r = check_history(&m, &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        let html = render_witness_html(&r, &h);
        assert_self_contained(&html);
        assert!(html.contains("<svg"));
        assert!(
            html.contains("class=\"op ok window conflict\" data-op=\"3\""),
            "{html}"
        );
        assert!(
            html.contains("op pending"),
            "the unfinished write is hatched"
        );
        assert!(html.contains("class=\"lin\""), "linearization points drawn");
        assert!(html.contains("Op <b>3</b>"));
    }

    #[test]
    fn mismatched_history_does_not_panic() {
        let h = History::from_ops(vec![
            op(OpType::Invoke, 0, "write", json!(1)),
            op(OpType::Ok, 0, "write", json!(1)),
            op(OpType::Invoke, 0, "read", json!(null)),
            op(OpType::Ok, 0, "read", json!(2)),
        ]);
        let m = RegisterModel::cas_register(RegisterConfig::etcd());
        let r = check_history(&m, &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Invalid);
        let empty = render_witness_html(&r, &History::default());
        assert!(
            empty.contains("Op <b>2</b>"),
            "the witness text is still shown"
        );
        let short = History::from_ops(h.ops[..1].to_vec());
        let page = render_witness_html(&r, &short);
        assert!(page.contains("</html>"));
    }

    #[test]
    fn valid_result_is_a_summary_table_and_escapes_keys() {
        let mut a = op(OpType::Invoke, 0, "write", json!(1));
        a.key = Some("<k>".into());
        let mut b = op(OpType::Ok, 0, "write", json!(1));
        b.key = Some("<k>".into());
        let h = History::from_ops(vec![a, b]);
        let m = RegisterModel::cas_register(RegisterConfig::etcd());
        let r = check_history(&m, &h, &LinearConfig::default());
        assert_eq!(r.verdict, Verdict::Valid);
        let html = render_witness_html(&r, &h);
        assert!(!html.contains("<svg"), "no timeline for valid parts");
        assert!(html.contains("key &lt;k&gt;"));
        assert!(html.contains("verdict-valid"));
        assert_self_contained(&html);
    }

    /// Worst case for size: 1,000,000 events of a kv history with 8 invalid keys, 4 concurrent
    /// writers per key, and 150-character values (longer than any text shown).
    #[test]
    fn many_invalid_parts_with_long_values_stay_under_a_megabyte() {
        use crate::model::KvModel;
        let keys = 8u64;
        let procs = 4u64;
        let events_per_round = (procs * 2 + 2) as usize;
        let rounds = 1_000_000 / keys as usize / events_per_round;
        let long = |k: u64, r: usize, p: u64| format!("{k}-{r}-{p}-{}", "x".repeat(150));
        let mut ops = Vec::with_capacity(1_000_000);
        let mut push = |t: OpType, p: u64, f: &str, k: u64, v: serde_json::Value| {
            let mut o = op(t, p, f, v);
            o.key = Some(k.to_string().into());
            ops.push(o);
        };
        for k in 0..keys {
            let base = k * 10;
            for r in 0..rounds {
                for p in 0..procs {
                    push(OpType::Invoke, base + p, "put", k, json!(long(k, r, p)));
                }
                for p in 0..procs {
                    push(OpType::Ok, base + p, "put", k, json!(long(k, r, p)));
                }
                let seen = if r == rounds / 2 {
                    format!("never written {}", "y".repeat(150))
                } else {
                    long(k, r, 2)
                };
                push(OpType::Invoke, base + 9, "get", k, json!(null));
                push(OpType::Ok, base + 9, "get", k, json!(seen));
            }
        }
        let h = History::from_ops(ops);
        let cfg = LinearConfig {
            decide: Decide::AllKeys,
            minimize_time_limit: Some(Duration::from_millis(200)),
            ..LinearConfig::default()
        };
        let r = check_history(&KvModel::default(), &h, &cfg);
        assert_eq!(
            r.parts
                .iter()
                .filter(|p| p.verdict == Verdict::Invalid)
                .count(),
            keys as usize
        );
        let t0 = Instant::now();
        let html = render_witness_html(&r, &h);
        eprintln!(
            "rendered {} events, {} invalid parts: {} bytes in {:?}",
            h.ops.len(),
            keys,
            html.len(),
            t0.elapsed()
        );
        assert!(html.len() < 1_000_000, "page is {} bytes", html.len());
        assert!(html.contains("more invalid parts not drawn"));
        assert_self_contained(&html);
    }

    /// 1,000,000 events: 50 keys × 10,000 sequential write/read pairs, with one bad read in the
    /// middle of one key. The page stays small.
    #[test]
    fn million_op_invalid_history_renders_under_a_megabyte() {
        let mut ops = Vec::with_capacity(1_000_000);
        let keys = 50u64;
        let per_key = 1_000_000 / keys as usize / 4;
        for k in 0..keys {
            let p = k;
            for n in 0..per_key {
                let v = json!(n);
                let read_v = if k == 7 && n == per_key / 2 {
                    json!(n + 1_000_000)
                } else {
                    v.clone()
                };
                for (t, f, val) in [
                    (OpType::Invoke, "write", v.clone()),
                    (OpType::Ok, "write", v.clone()),
                    (OpType::Invoke, "read", json!(null)),
                    (OpType::Ok, "read", read_v),
                ] {
                    let mut o = op(t, p, f, val);
                    o.key = Some(k.to_string().into());
                    o.time_ns = (ops.len() as u64) * 1000;
                    ops.push(o);
                }
            }
        }
        let h = History::from_ops(ops);
        assert_eq!(h.ops.len(), 1_000_000);
        let m = RegisterModel::cas_register(RegisterConfig::etcd());
        let cfg = LinearConfig {
            decide: Decide::AllKeys,
            minimize_time_limit: Some(Duration::from_millis(500)),
            ..LinearConfig::default()
        };
        let r = check_history(&m, &h, &cfg);
        assert_eq!(r.verdict, Verdict::Invalid);
        let t0 = Instant::now();
        let html = render_witness_html(&r, &h);
        let elapsed = t0.elapsed();
        eprintln!(
            "rendered 1M-op invalid history: {} bytes in {:?}",
            html.len(),
            elapsed
        );
        assert!(html.len() < 1_000_000, "page is {} bytes", html.len());
        assert!(html.contains("<svg"));
        assert!(html.contains("conflict"));
        assert_self_contained(&html);
    }
}
