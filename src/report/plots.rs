//! Report plots: fault intervals and SVG/PNG charts of latency, throughput, clock offsets,
//! anomalies and stale reads, rendered with `plotters`.
//!
//! Owns pure functions from a [`History`] (and data from `report::anomalies`) to rendered
//! [`Figure`]s (`latency_raw`, `latency_quantiles`, `throughput` here; `clock_offsets`,
//! `anomaly_timeline`, `stale_reads` in `plots::findings`) and the drawing
//! they share (fault bands, the recovery strip, legends, SVG/PNG rendering). Does no IO: the
//! caller writes the returned text and bytes (see `report::render_run`). Does not own reading
//! histories, checking, fault intervals (`report::faults`) or recovery (`report::recovery`).
//!
//! Conventions shared by all charts:
//! - x is the time since the run started in seconds; latency is completion time minus invoke time.
//! - Client ops are paired per process (invoke, then the next completion of that process). Invokes
//!   that never complete are not plotted; stray completions are ignored.
//! - Fault intervals are drawn as translucent coloured bands behind the data, one colour per fault
//!   kind, labelled at their top-left with what was done (e.g. "isolate n5"), with a legend entry per
//!   kind.
//! - Legends sit in a column right of the data area ([`LEGEND_PX`], reserved with the chart's
//!   right margin), never over data, bands or labels.
//! - The x axis runs from 0 to 2 % past the last op's completion or fault end, so the final
//!   reads are drawn whole; a window the data only partly covers is drawn at the middle of the
//!   covered part.
//! - The latency and throughput charts shade a strip along their bottom (`report::recovery`):
//!   red where no op of some kind was served on any node (an outage), amber from a heal to the
//!   workload's recovery; and the span without client ops from where the main workload stopped
//!   to the final reads (final heal, settle: `report::phases`) as a light grey band.
//! - At most [`MAX_F_SERIES`] distinct `f` values get their own series; further ones are merged
//!   into "other".
//! - Text is laid out and (in PNGs) rasterized with DejaVu Sans bundled in the binary
//!   (`assets/fonts`, plotters' `ab_glyph` feature), so no system font libraries are needed and
//!   output is the same on every machine; SVGs carry `<text>` elements the viewer renders.
//! - Every chart renders to SVG and, on request ([`Formats`]), to PNG from the same drawing code.
//! - Charts whose data is absent (clock offsets, anomalies, stale reads) are not drawn at all
//!   (`None`), never as empty images.
//! - Nothing here panics on odd input: an empty history or one without client ops renders a chart
//!   that says "no data"; a rendering error yields a small SVG naming the error.
//!
//! Bounding output for huge histories: `latency_raw` plots at most [`MAX_OK_POINTS`] ok points
//! and [`MAX_FAILED_POINTS`] fail and info points each (about 100 bytes of SVG per point, so at most
//! about 5 MB). When an outcome has n > cap ops, it keeps exactly cap of them, evenly spread in
//! history order (op k is kept iff `k * cap mod n < cap`), which is deterministic and keeps the time
//! distribution; the chart caption then says "sampled". The quantile and throughput charts use at
//! most [`MAX_WINDOWS`] time windows (wider windows than requested if needed).
//!
//! Memory and size for very big histories: past [`DENSITY_FROM`] completed client ops
//! (`plots::samples`) no sample per op is kept; every op is folded into a fixed-size
//! [`Summary`] (`plots::density`) and the charts draw from it: latency as a heat map of ok ops
//! against time with p50 / p99 / max lines and the [`SLOWEST`] slowest ops as points (failed and
//! crashed ops as thinned points), quantiles from a log histogram (±8 %, the maximum exact),
//! throughput exact, in windows that are a whole number of the summary's columns.

use crate::faults as kinds;
use crate::history::History;
use crate::report::anomalies::{self, AnomalyDensity, AnomalyMark, StaleReads};
use crate::report::faults::num;
pub use crate::report::faults::{FaultInterval, fault_intervals};

use crate::report::phases;
use crate::report::recovery::{self, Shade, ShadeKind};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Chart width in pixels.
pub const WIDTH_PX: u32 = 1200;
/// Chart height in pixels.
pub const HEIGHT_PX: u32 = 600;
/// Maximum plotted `ok` points in `latency_raw`.
pub const MAX_OK_POINTS: usize = 20_000;
/// Maximum plotted `fail` points, and separately `info` points, in `latency_raw`.
pub const MAX_FAILED_POINTS: usize = 10_000;
/// Maximum number of time windows in the windowed charts.
pub const MAX_WINDOWS: usize = 2_000;
/// Fault labels are stacked in at most this many text lines at the top of a chart.
pub const MAX_LABEL_LANES: usize = 4;
/// Maximum number of distinct `f` values drawn as their own series.
pub const MAX_F_SERIES: usize = 6;
/// Smallest latency drawn on the log axis, in ms (zero latencies are clamped up to it).
const MIN_LATENCY_MS: f64 = 1e-3;
const FONT: &str = "sans-serif";
/// DejaVu Sans (Bitstream Vera licence, assets/fonts/LICENSE-DejaVu.txt), bundled so PNG text
/// needs no system font libraries.
const FONT_BYTES: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Band colour of a fault kind (see [`kinds::color_of`]).
pub fn fault_color(kind: &str) -> RGBColor {
    let (r, g, b) = kinds::color_of(kind);
    RGBColor(r, g, b)
}

/// How a client op ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Outcome {
    Ok,
    Fail,
    Info,
}

impl Outcome {
    const ALL: [Outcome; 3] = [Outcome::Ok, Outcome::Fail, Outcome::Info];
    fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Fail => "fail",
            Outcome::Info => "info",
        }
    }
    fn color(self) -> RGBColor {
        match self {
            Outcome::Ok => RGBColor(30, 150, 60),
            Outcome::Fail => RGBColor(215, 50, 50),
            Outcome::Info => RGBColor(240, 160, 0),
        }
    }
}

/// What the latency and throughput charts all derive from a history, computed once per history
/// by [`prepare`] (pairing 1M ops is the bulk of their work).
pub struct Prepared {
    faults: Vec<FaultInterval>,
    samples: Samples,
    /// Outages and recovery periods, shaded along the bottom.
    shades: Vec<Shade>,
    /// From where the main workload stopped to the final reads (`report::phases`), s.
    quiet: Option<(f64, f64)>,
}

/// Fault intervals, paired client ops and recovery shading of `history`, for the `*_prepared`
/// chart functions.
pub fn prepare(history: &History) -> Prepared {
    let shades = recovery::analyse(history, &Default::default()).shading();
    prepare_with_shades(history, shades)
}

/// [`prepare`] with the recovery shading already known (e.g. from results.json).
pub fn prepare_with_shades(history: &History, shades: Vec<Shade>) -> Prepared {
    Prepared {
        faults: fault_intervals(history),
        samples: samples(history),
        shades,
        quiet: phases::final_phase(history).map(|p| p.quiet_span_s()),
    }
}

/// What the charts draw, from parts computed elsewhere: client ops paired as they streamed by
/// ([`SampleBuilder`]), fault intervals, recovery shading and the quiet final span (s), if any.
pub fn prepare_parts(
    samples: Samples,
    faults: Vec<FaultInterval>,
    shades: Vec<Shade>,
    quiet: Option<(f64, f64)>,
) -> Prepared {
    Prepared {
        faults,
        samples,
        shades,
        quiet,
    }
}

type Chart<'a, DB, Y> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>;
type Root<'r, DB> = DrawingArea<DB, Shift>;

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("plot rendering failed: {e}")
}

fn draw_no_data<'a, DB: DrawingBackend + 'a, Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'a, DB, Y>,
    x: f64,
    y: f64,
) -> Result<(), String> {
    chart
        .draw_series(std::iter::once(Text::new(
            "no data: no completed client operations",
            (x, y),
            (FONT, 20).into_font().color(&BLACK.mix(0.6)),
        )))
        .map_err(err)?;
    Ok(())
}

/// Register the bundled DejaVu Sans as plotters' "sans-serif" (once per process). Text layout in
/// both backends and glyph rasterization in PNGs use it, so output does not depend on system fonts.
fn ensure_font() -> Result<(), String> {
    static FONT_READY: OnceLock<Result<(), String>> = OnceLock::new();
    FONT_READY
        .get_or_init(|| {
            plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).map_err(|_| {
                "bundled font assets/fonts/DejaVuSans.ttf is not a valid font".to_string()
            })
        })
        .clone()
}

/// Render with `draw` into an SVG string; a rendering error becomes a small SVG naming it.
fn render_svg(draw: impl FnOnce(&Root<'_, SVGBackend<'_>>) -> Result<(), String>) -> String {
    let mut buf = String::new();
    let result = ensure_font().and_then(|_| {
        let root = SVGBackend::with_string(&mut buf, (WIDTH_PX, HEIGHT_PX)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(err)
            .and_then(|_| draw(&root))
            .and_then(|_| root.present().map_err(err))
    });
    match result {
        Ok(()) => buf,
        Err(e) => {
            let escaped = e
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            format!(
                "<svg width=\"{WIDTH_PX}\" height=\"{HEIGHT_PX}\" viewBox=\"0 0 {WIDTH_PX} {HEIGHT_PX}\" xmlns=\"http://www.w3.org/2000/svg\">\n<text x=\"20\" y=\"40\">{escaped}</text>\n</svg>\n"
            )
        }
    }
}

/// Render with `draw` into an RGB bitmap and encode it as PNG.
fn render_png(
    draw: impl FnOnce(&Root<'_, BitMapBackend<'_>>) -> Result<(), String>,
) -> Result<Vec<u8>, String> {
    ensure_font()?;
    let mut pixels = vec![0u8; WIDTH_PX as usize * HEIGHT_PX as usize * 3];
    {
        let root =
            BitMapBackend::with_buffer(&mut pixels, (WIDTH_PX, HEIGHT_PX)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root)?;
        root.present().map_err(err)?;
    }
    encode_png(&pixels, WIDTH_PX, HEIGHT_PX)
}

/// Encode 8-bit RGB pixels as a PNG (fast compression: plots are flat colours and compress well).
fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Fast);
    let mut w = enc
        .write_header()
        .map_err(|e| format!("png encoding failed: {e}"))?;
    w.write_image_data(rgb)
        .map_err(|e| format!("png encoding failed: {e}"))?;
    w.finish()
        .map_err(|e| format!("png encoding failed: {e}"))?;
    Ok(out)
}

/// Which files a chart is rendered to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Formats {
    /// SVG only (the run page embeds SVG).
    Svg,
    /// SVG and PNG.
    SvgAndPng,
}

/// One rendered chart.
#[derive(Debug, Clone)]
pub struct Figure {
    /// SVG text (always present; a rendering error yields an SVG naming it).
    pub svg: String,
    /// PNG bytes when asked for with [`Formats::SvgAndPng`]; `Err` names a rendering failure.
    pub png: Option<Result<Vec<u8>, String>>,
}

/// Render one drawing closure body to the requested formats (the body is instantiated once per
/// backend, which is why this is a macro and not a function taking a generic closure).
macro_rules! figure {
    ($formats:expr, |$root:ident| $body:expr) => {{
        match $formats {
            Formats::Svg => Figure {
                svg: render_svg(|$root| $body),
                png: None,
            },
            Formats::SvgAndPng => {
                let (svg, png) =
                    rayon::join(|| render_svg(|$root| $body), || render_png(|$root| $body));
                Figure {
                    svg,
                    png: Some(png),
                }
            }
        }
    }};
}

// After `figure!`: macros are visible to modules declared below their definition.
mod bands;
mod density;
mod findings;
mod legend;
mod samples;
pub use bands::QUIET_LABEL;
use bands::{STRIP_FRACTION, draw_backdrop, draw_bands, draw_quiet, draw_recovery};
pub use density::{SLOWEST, Summary};
pub use findings::{anomaly_color, anomaly_timeline, clock_offsets, stale_reads};
pub use legend::LEGEND_PX;
use legend::{Legend, Swatch, draw_legend};
pub use samples::{DENSITY_FROM, SampleBuilder, Samples};
use samples::{Sample, samples};

/// Extent of the data on the x axis: the whole history (its last op's completion) and every
/// fault, never empty.
fn x_extent(end_s: f64, faults: &[FaultInterval]) -> f64 {
    let m = faults.iter().map(|f| f.end_s).fold(end_s, f64::max);
    if m.is_finite() && m > 0.0 { m } else { 1.0 }
}

/// Upper end of the x axis for data up to `extent`: 2 % more, so the last ops (the final reads)
/// are drawn whole instead of clipped at the edge.
fn x_hi(extent: f64) -> f64 {
    extent * 1.02
}

/// x range: [`x_extent`] with the margin of [`x_hi`].
fn x_max(end_s: f64, faults: &[FaultInterval]) -> f64 {
    x_hi(x_extent(end_s, faults))
}

/// Where window `i` of width `w` is drawn: the middle of the part of it before `extent` (a last
/// window the data only partly covers is drawn at the middle of that part, not past the data).
fn window_mid(i: usize, w: f64, extent: f64) -> f64 {
    let a = i as f64 * w;
    (a + ((i + 1) as f64 * w).min(extent).max(a)) / 2.0
}

/// Log-axis latency range covering `values` (ms), padded, never empty.
fn log_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values {
        let v = v.max(MIN_LATENCY_MS);
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() || hi <= 0.0 {
        return (0.1, 10.0);
    }
    let lo = lo / 2.0;
    // Headroom for band labels and the legend.
    let hi = hi * 4.0;
    if hi <= lo { (lo, lo * 10.0) } else { (lo, hi) }
}

/// Marker of the `f` with index `i`.
#[derive(Debug, Clone, Copy)]
enum Marker {
    Circle,
    Triangle,
    Cross,
    Square,
}

fn marker(i: usize) -> Marker {
    [
        Marker::Circle,
        Marker::Triangle,
        Marker::Cross,
        Marker::Square,
    ][i % 4]
}

fn draw_points<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB, LogCoord<f64>>,
    legend: &mut Legend,
    pts: &[(f64, f64)],
    m: Marker,
    color: RGBColor,
    label: String,
) -> Result<(), String> {
    let style = color.mix(0.75).filled();
    let stroke = ShapeStyle::from(color.mix(0.75)).stroke_width(1);
    match m {
        Marker::Circle => chart.draw_series(pts.iter().map(|&p| Circle::new(p, 2, style))),
        Marker::Triangle => {
            chart.draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 3, style)))
        }
        Marker::Cross => chart.draw_series(pts.iter().map(|&p| Cross::new(p, 3, stroke))),
        Marker::Square => chart.draw_series(
            pts.iter()
                .map(|&p| EmptyElement::at(p) + Rectangle::new([(-2, -2), (2, 2)], style)),
        ),
    }
    .map_err(err)?;
    legend.add(label, Swatch::Point(m, color));
    Ok(())
}

/// A chart of latency (ms, log axis, `ylo..yhi`) against time (s, `0..xmax`) on `root`, with
/// its caption, axes and mesh drawn and room for the legend on its right.
fn latency_chart<'a, DB: DrawingBackend + 'a>(
    root: &'a DrawingArea<DB, Shift>,
    caption: &str,
    caption_px: u32,
    xmax: f64,
    (ylo, yhi): (f64, f64),
) -> Result<Chart<'a, DB, LogCoord<f64>>, String> {
    let mut chart = ChartBuilder::on(root)
        .caption(caption, (FONT, caption_px))
        .margin(12)
        .margin_right(LEGEND_PX)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..xmax, (ylo..yhi).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("latency (ms)")
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// Every completed client op as a point at (invoke time s, latency ms) on a log latency axis,
/// coloured by outcome (ok green, fail red, info orange), one marker shape per `f`, with fault
/// bands behind. Downsampled per outcome beyond [`MAX_OK_POINTS`] / [`MAX_FAILED_POINTS`] (see the
/// module doc). In the requested formats.
pub fn latency_raw(history: &History, formats: Formats) -> Figure {
    latency_raw_prepared(&prepare(history), formats)
}

/// [`latency_raw`] of a [`prepare`]d history.
pub fn latency_raw_prepared(p: &Prepared, formats: Formats) -> Figure {
    let (faults, s) = (&p.faults, &p.samples);
    if let Some(summary) = &s.summary {
        return density::latency_density(p, summary, formats);
    }
    let xmax = x_max(s.end_s, faults);
    let (ylo, yhi) = log_range(s.samples.iter().map(|x| x.latency_ms));
    let mut counts: HashMap<Outcome, usize> = HashMap::new();
    for x in &s.samples {
        *counts.entry(x.outcome).or_default() += 1;
    }
    let cap = |o: Outcome| {
        if o == Outcome::Ok {
            MAX_OK_POINTS
        } else {
            MAX_FAILED_POINTS
        }
    };
    let total = |o: Outcome| counts.get(&o).copied().unwrap_or(0);
    // Keep the k-th op of an outcome iff (k * cap) mod total < cap: exactly `cap` ops, evenly spread.
    let keep = |o: Outcome, k: usize| {
        let (c, n) = (cap(o) as u128, total(o) as u128);
        n <= c || (k as u128 * c) % n < c
    };
    let sampled = Outcome::ALL.iter().any(|&o| total(o) > cap(o));
    // (f, outcome) → points, keeping the sampled ops of each outcome.
    let mut seen: HashMap<Outcome, usize> = HashMap::new();
    let mut series: HashMap<(usize, Outcome), Vec<(f64, f64)>> = HashMap::new();
    for x in &s.samples {
        let n = seen.entry(x.outcome).or_default();
        let kept = keep(x.outcome, *n);
        *n += 1;
        if kept {
            series
                .entry((x.f_idx, x.outcome))
                .or_default()
                .push((x.invoke_s, x.latency_ms.max(MIN_LATENCY_MS)));
        }
    }
    let mut keys: Vec<_> = series.keys().copied().collect();
    keys.sort();
    let kept: usize = series.values().map(Vec::len).sum();
    let caption = if sampled {
        format!(
            "Latency of every operation (sampled: {} of {} ops)",
            kept,
            s.samples.len()
        )
    } else {
        "Latency of every operation".to_string()
    };
    figure!(formats, |root| {
        let mut chart = latency_chart(root, &caption, 20, xmax, (ylo, yhi))?;
        let mut legend = Legend::default();
        draw_backdrop(&mut chart, &mut legend, p, faults, ylo, yhi)?;
        for &(f_idx, outcome) in &keys {
            let f = s.f_names.get(f_idx).map(String::as_str).unwrap_or("other");
            draw_points(
                &mut chart,
                &mut legend,
                &series[&(f_idx, outcome)],
                marker(f_idx),
                outcome.color(),
                format!("{f} {}", outcome.name()),
            )?;
        }
        if s.is_empty() {
            draw_no_data(&mut chart, xmax * 0.3, (ylo * yhi).sqrt())?;
        }
        draw_legend(root, &chart, &legend)
    })
}

/// Window width actually used: `window_s` if sane, widened so there are at most [`MAX_WINDOWS`].
fn window_width(window_s: f64, xmax: f64) -> f64 {
    let w = if window_s.is_finite() && window_s > 0.0 {
        window_s
    } else {
        1.0
    };
    w.max(xmax / MAX_WINDOWS as f64)
}

fn window_count(xmax: f64, w: f64) -> usize {
    ((xmax / w).ceil() as usize).clamp(1, MAX_WINDOWS + 1)
}

fn window_of(t_s: f64, w: f64, n: usize) -> usize {
    ((t_s / w) as usize).min(n - 1)
}

/// Nearest-rank quantile of sorted, non-empty `v`.
fn quantile(v: &[f64], q: f64) -> f64 {
    let rank = (q * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Quantiles drawn by `latency_quantiles`: name, quantile, colour.
const QS: [(&str, f64, RGBColor); 4] = [
    ("p50", 0.5, RGBColor(30, 150, 60)),
    ("p95", 0.95, RGBColor(230, 140, 0)),
    ("p99", 0.99, RGBColor(215, 50, 50)),
    ("max", 1.0, RGBColor(90, 30, 120)),
];

/// Per entry of `QS`: line segments of (window midpoint s, latency ms) over consecutive non-empty
/// windows (bucketed by invoke time); see [`window_mid`] for a last window past `extent`.
fn quantile_lines(samples: &[Sample], w: f64, n: usize, extent: f64) -> Vec<Vec<Vec<(f64, f64)>>> {
    let mut buckets: Vec<Vec<f64>> = vec![Vec::new(); n];
    for x in samples {
        buckets[window_of(x.invoke_s, w, n)].push(x.latency_ms.max(MIN_LATENCY_MS));
    }
    // Per quantile: line segments of consecutive non-empty windows.
    let mut lines: Vec<Vec<Vec<(f64, f64)>>> = vec![Vec::new(); QS.len()];
    let mut prev_empty = true;
    for (i, b) in buckets.iter_mut().enumerate() {
        if b.is_empty() {
            prev_empty = true;
            continue;
        }
        b.sort_by(f64::total_cmp);
        let x = window_mid(i, w, extent);
        for (qi, (_, q, _)) in QS.iter().enumerate() {
            if prev_empty {
                lines[qi].push(Vec::new());
            }
            if let Some(seg) = lines[qi].last_mut() {
                seg.push((x, quantile(b, *q)));
            }
        }
        prev_empty = false;
    }
    lines
}

/// p50/p95/p99/max latency of completed client ops (all outcomes), bucketed by invoke time into
/// windows of `window_s` seconds, as lines on a log latency axis, with fault bands behind. Windows
/// with no ops break the lines. In the requested formats.
pub fn latency_quantiles(history: &History, window_s: f64, formats: Formats) -> Figure {
    latency_quantiles_prepared(&prepare(history), window_s, formats)
}

/// [`latency_quantiles`] of a [`prepare`]d history.
pub fn latency_quantiles_prepared(p: &Prepared, window_s: f64, formats: Formats) -> Figure {
    let (faults, s) = (&p.faults, &p.samples);
    let extent = x_extent(s.end_s, faults);
    let xmax = x_hi(extent);
    let (w, lines, how) = match &s.summary {
        None => {
            let w = window_width(window_s, extent);
            let n = window_count(extent, w);
            (w, quantile_lines(&s.samples, w, n, extent), "")
        }
        Some(summary) => {
            let (k, w) = summary.window(window_width(window_s, extent));
            let lines = summary.quantile_lines(k, window_count(extent, w), extent);
            (w, lines, " (from a log histogram: ±8 %)")
        }
    };
    let (ylo, yhi) = log_range(lines.iter().flatten().flatten().map(|p| p.1));
    figure!(formats, |root| {
        let caption = format!("Latency quantiles per {w:.3} s window{how}");
        let mut chart = latency_chart(root, &caption, 20, xmax, (ylo, yhi))?;
        let mut legend = Legend::default();
        draw_backdrop(&mut chart, &mut legend, p, faults, ylo, yhi)?;
        for (qi, (name, _, color)) in QS.iter().enumerate() {
            let color = *color;
            let mut first = true;
            for seg in &lines[qi] {
                chart
                    .draw_series(
                        LineSeries::new(seg.iter().copied(), color.stroke_width(2)).point_size(2),
                    )
                    .map_err(err)?;
                if first {
                    legend.add(*name, Swatch::Line(color, 2, None));
                    first = false;
                }
            }
        }
        if s.is_empty() {
            draw_no_data(&mut chart, xmax * 0.3, (ylo * yhi).sqrt())?;
        }
        draw_legend(root, &chart, &legend)
    })
}

/// Shade `c` darker for the `k`-th `f`, so series of one outcome stay distinguishable.
fn shade(c: RGBColor, k: usize) -> RGBColor {
    let factor = 1.0 - 0.14 * (k % 5) as f64;
    let s = |v: u8| (v as f64 * factor).round() as u8;
    RGBColor(s(c.0), s(c.1), s(c.2))
}

/// Dash pattern (on px, off px) of the `k`-th `f` in the throughput chart; `None` is solid.
fn dash(k: usize) -> Option<(u32, u32)> {
    [
        None,
        Some((8, 4)),
        Some((2, 3)),
        Some((12, 3)),
        Some((4, 8)),
        Some((1, 6)),
    ][k % 6]
}

/// Three dashes (repeated in place when the pattern is long) of a 20 px legend sample of a line
/// with dash pattern `d`, relative to the legend anchor.
fn legend_dashes(d: Option<(u32, u32)>) -> [Vec<(i32, i32)>; 3] {
    let (on, off) = d.map(|(a, b)| (a as i32, b as i32)).unwrap_or((7, 0));
    let seg = |i: i32| {
        let from = (i * (on + off)).min(20 - on.min(20));
        vec![(from, 0), ((from + on).min(20), 0)]
    };
    [seg(0), seg(1), seg(2)]
}

/// Completions per window (bucketed by completion time) for each (f index, outcome) that occurs.
fn throughput_counts(samples: &[Sample], w: f64, n: usize) -> HashMap<(usize, Outcome), Vec<u64>> {
    let mut counts: HashMap<(usize, Outcome), Vec<u64>> = HashMap::new();
    for x in samples {
        counts
            .entry((x.f_idx, x.outcome))
            .or_insert_with(|| vec![0; n])[window_of(x.complete_s, w, n)] += 1;
    }
    counts
}

/// Completions per second of client ops by `f` and outcome, bucketed by completion time into
/// windows of `window_s` seconds, as lines, with fault bands behind. In the requested formats.
pub fn throughput(history: &History, window_s: f64, formats: Formats) -> Figure {
    throughput_prepared(&prepare(history), window_s, formats)
}

/// [`throughput`] of a [`prepare`]d history.
pub fn throughput_prepared(p: &Prepared, window_s: f64, formats: Formats) -> Figure {
    let (faults, s) = (&p.faults, &p.samples);
    let extent = x_extent(s.end_s, faults);
    let xmax = x_hi(extent);
    let (w, counts) = match &s.summary {
        None => {
            let w = window_width(window_s, extent);
            (w, throughput_counts(&s.samples, w, window_count(extent, w)))
        }
        Some(summary) => {
            let (k, w) = summary.window(window_width(window_s, extent));
            (w, summary.throughput_counts(k, window_count(extent, w)))
        }
    };
    let mut keys: Vec<_> = counts.keys().copied().collect();
    keys.sort();
    let peak = counts.values().flatten().copied().max().unwrap_or(0) as f64 / w;
    let yhi = if peak > 0.0 { peak * 1.35 } else { 1.0 };
    figure!(formats, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(format!("Throughput per {w:.3} s window"), (FONT, 20))
            .margin(12)
            .margin_right(LEGEND_PX)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..xmax, 0.0..yhi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("completions per second")
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(err)?;
        let mut legend = Legend::default();
        draw_quiet(&mut chart, &mut legend, p.quiet, 0.0, yhi)?;
        draw_bands(&mut chart, &mut legend, faults, 0.0, yhi)?;
        draw_recovery(
            &mut chart,
            &mut legend,
            &p.shades,
            0.0,
            yhi * STRIP_FRACTION,
        )?;
        for &(f_idx, outcome) in &keys {
            let f = s.f_names.get(f_idx).map(String::as_str).unwrap_or("other");
            let color = shade(outcome.color(), f_idx);
            let pts = counts[&(f_idx, outcome)]
                .iter()
                .enumerate()
                .map(|(i, &c)| (window_mid(i, w, extent), c as f64 / w));
            let style = color.stroke_width(2);
            match dash(f_idx) {
                None => chart.draw_series(LineSeries::new(pts, style)),
                Some((on, off)) => chart.draw_series(DashedLineSeries::new(pts, on, off, style)),
            }
            .map_err(err)?;
            legend.add(
                format!("{f} {}", outcome.name()),
                Swatch::Line(color, 2, dash(f_idx)),
            );
        }
        if s.is_empty() {
            draw_no_data(&mut chart, xmax * 0.3, yhi / 2.0)?;
        }
        draw_legend(root, &chart, &legend)
    })
}

#[cfg(test)]
mod tests {
    use super::bands::{QUIET_COLOR, shade_style};
    use super::*;
    use crate::history::{Op, OpType, Process};
    use serde_json::{Value, json};

    /// An op at `t_ms` milliseconds.
    pub(super) fn op(t_ms: u64, ty: OpType, p: Process, f: &str, v: Value) -> Op {
        let mut o = Op::new(ty, p, f, v);
        o.time_ns = t_ms * 1_000_000;
        o
    }

    pub(super) fn nem(t_ms: u64, f: &str, v: Value) -> Op {
        op(t_ms, OpType::Info, Process::Nemesis, f, v)
    }

    pub(super) fn client(h: &mut Vec<Op>, p: u64, f: &str, t0_ms: u64, t1_ms: u64, end: OpType) {
        h.push(op(
            t0_ms,
            OpType::Invoke,
            Process::Client(p),
            f,
            json!(null),
        ));
        h.push(op(t1_ms, end, Process::Client(p), f, json!(1)));
    }

    pub(super) fn sorted(mut ops: Vec<Op>) -> History {
        ops.sort_by_key(|o| o.time_ns);
        History::from_ops(ops)
    }

    pub(super) fn isolate_n5() -> Value {
        json!({"grudge": {"n1": ["n5"], "n2": ["n5"], "n3": ["n5"], "n4": ["n5"],
                          "n5": ["n1", "n2", "n3", "n4"]}})
    }

    /// A history with client ops of three kinds and outcomes, a partition and a kill.
    pub(super) fn faulty() -> History {
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
            client(&mut ops, 1, "write", t + 10, t + 40, OpType::Ok);
            let end = if i % 3 == 0 {
                OpType::Fail
            } else {
                OpType::Info
            };
            client(&mut ops, 2 + i, "cas", t + 20, t + 90, end);
        }
        sorted(ops)
    }

    /// Structural checks: one root `<svg>`, balanced tags, no NaN/inf coordinates.
    pub(super) fn assert_well_formed(svg: &str) {
        assert!(
            svg.starts_with("<svg"),
            "does not start with <svg: {}",
            &svg[..svg.len().min(80)]
        );
        assert!(
            svg.trim_end().ends_with("</svg>"),
            "does not end with </svg>"
        );
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = svg;
        while let Some(i) = rest.find('<') {
            let j = rest[i..].find('>').expect("unterminated tag") + i;
            let tag = &rest[i + 1..j];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop(), Some(name.trim()), "mismatched </{name}>");
            } else if !tag.ends_with('/') && !tag.starts_with('?') && !tag.starts_with('!') {
                stack.push(tag.split_whitespace().next().unwrap_or(""));
            }
            rest = &rest[j + 1..];
        }
        assert!(stack.is_empty(), "unclosed tags: {stack:?}");
        for bad in ["NaN", "inf\"", "=\"-inf"] {
            assert!(!svg.contains(bad), "svg contains {bad}");
        }
    }

    pub(super) fn band_rect_count(svg: &str, kind: &str) -> usize {
        let c = fault_color(kind);
        let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        svg.lines()
            .filter(|l| {
                l.starts_with("<rect") && l.contains(&fill) && l.contains("opacity=\"0.18\"")
            })
            .count()
    }

    #[test]
    fn raw_latency_svg_has_bands_labels_axes_and_legend() {
        let svg = latency_raw(&faulty(), Formats::Svg).svg;
        assert_well_formed(&svg);
        assert_eq!(band_rect_count(&svg, "partition"), 1);
        assert_eq!(band_rect_count(&svg, "kill"), 1);
        for text in [
            "isolate n5",
            "kill n1",
            "time (s)",
            "latency (ms)",
            "fault: partition",
            "fault: kill",
            "read ok",
            "write ok",
            "cas fail",
            "cas info",
            "Latency of every operation",
        ] {
            assert!(svg.contains(text), "missing {text:?}");
        }
        assert!(!svg.contains("sampled") && !svg.contains("no data"));
        // Markers by f in order of appearance: read circles, write triangles, cas crosses (two
        // lines each); plus one legend marker per series.
        assert_eq!(svg.matches("<circle").count(), 50 + 1, "read markers");
        assert_eq!(svg.matches("<polygon").count(), 50 + 1, "write markers");
        let cross_lines = svg
            .lines()
            .filter(|l| l.starts_with("<line opacity=\"0.75\""))
            .count();
        assert_eq!(cross_lines, 2 * (50 + 2), "cas markers (fail and info)");
    }

    /// The etcd pattern of issue 15 (nothing served for 4 s after a heal) is shaded on the
    /// latency and throughput charts: an outage and the recovery period.
    #[test]
    fn outages_and_recovery_are_shaded_along_the_bottom() {
        let mut ops = vec![
            nem(9_990, "start-partition", json!("one")),
            nem(10_000, "start-partition", isolate_n5()),
            nem(19_990, "stop-partition", json!(null)),
            nem(20_000, "stop-partition", json!("healed")),
        ];
        let mut t = 0;
        let mut p = 0;
        while t < 40_000 {
            if (20_000..24_000).contains(&t) {
                client(&mut ops, p, "read", t, t + 500, OpType::Info);
                p += 1;
                t += 500;
            } else {
                client(&mut ops, p, "read", t, t + 2, OpType::Ok);
                t += 50;
            }
        }
        let h = sorted(ops);
        let strip = |svg: &str, kind: ShadeKind| {
            let (c, _) = shade_style(kind);
            let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
            svg.lines()
                .filter(|l| l.starts_with("<rect") && l.contains(&fill))
                .count()
        };
        for svg in [
            latency_raw(&h, Formats::Svg).svg,
            latency_quantiles(&h, 1.0, Formats::Svg).svg,
            throughput(&h, 1.0, Formats::Svg).svg,
        ] {
            assert_well_formed(&svg);
            assert!(svg.contains("recovering after heal"), "legend");
            assert!(svg.contains("outage: an op kind served nowhere"), "legend");
            // One shade each, plus its legend swatch.
            assert_eq!(strip(&svg, ShadeKind::Outage), 2);
            assert_eq!(strip(&svg, ShadeKind::Recovering), 2);
        }
        // Nothing to shade: no strip, no legend entry.
        let mut ops = vec![
            nem(100, "kill", json!("one")),
            nem(110, "kill", json!({"nodes": ["n1"]})),
        ];
        for i in 0..50 {
            client(&mut ops, 0, "read", i * 100, i * 100 + 3, OpType::Ok);
        }
        let svg = latency_raw(&sorted(ops), Formats::Svg).svg;
        assert!(!svg.contains("recovering after heal") && !svg.contains("(outage)"));
    }

    /// The x attribute of the `<text>` element holding `label`.
    fn text_x(svg: &str, label: &str) -> i32 {
        let at = svg.find(&format!(">\n{label}\n</text>")).expect(label);
        let open = svg[..at].rfind("<text x=\"").expect("text element") + "<text x=\"".len();
        let end = svg[open..].find('"').unwrap() + open;
        svg[open..end].parse().unwrap()
    }

    /// The end of a run: ops fail from 4.5 s until the time limit (5 s), the final heal, a
    /// settle, one final read at 8 s. The legend sits right of the data area, the final heal
    /// and settle are a band of their own (not an outage), and the final read is inside the
    /// x range, not on its edge.
    #[test]
    fn the_end_of_a_run_is_drawn_whole_with_the_legend_beside_it() {
        let mut ops = vec![
            nem(990, "start-partition", json!("one")),
            nem(1_000, "start-partition", isolate_n5()),
            nem(2_990, "stop-partition", json!(null)),
            nem(3_000, "stop-partition", json!("healed")),
        ];
        for i in 0..50u64 {
            let t = i * 100;
            let end = if t >= 4_500 { OpType::Info } else { OpType::Ok };
            client(&mut ops, i, "read", t, t + 3, end);
        }
        ops.push(nem(5_050, "stop-partition", json!(null)));
        ops.push(nem(5_100, "stop-partition", json!("healed")));
        let mut h = sorted(ops).ops;
        for (t, ty) in [(8_000, OpType::Invoke), (8_010, OpType::Ok)] {
            let mut o = op(t, ty, Process::Client(99), "read", json!(null));
            o.key = Some("k1".into());
            h.push(o);
        }
        let h = History::from_ops(h);
        let quiet = format!(
            "fill=\"#{:02X}{:02X}{:02X}\"",
            QUIET_COLOR.0, QUIET_COLOR.1, QUIET_COLOR.2
        );
        let data_right = (WIDTH_PX - LEGEND_PX) as i32;
        for svg in [
            latency_raw(&h, Formats::Svg).svg,
            latency_quantiles(&h, 1.0, Formats::Svg).svg,
            throughput(&h, 1.0, Formats::Svg).svg,
        ] {
            assert_well_formed(&svg);
            for label in ["fault: partition", QUIET_LABEL] {
                assert!(
                    text_x(&svg, label) > data_right,
                    "{label} inside the data area"
                );
            }
            // The band (opacity 0.12) and its legend sample.
            let bands = svg
                .lines()
                .filter(|l| l.starts_with("<rect") && l.contains(&quiet))
                .count();
            assert_eq!(bands, 2, "quiet band and its legend sample");
        }
        // The final read's marker (at 8.0 s) is drawn whole, left of the data area's edge.
        let svg = latency_raw(&h, Formats::Svg).svg;
        let cx: Vec<i32> = svg
            .match_indices("<circle cx=\"")
            .map(|(i, m)| {
                let rest = &svg[i + m.len()..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            })
            .filter(|&x| x < data_right + 5)
            .collect();
        let last = cx.iter().copied().max().unwrap();
        assert!(last < data_right - 5 && last > data_right - 60, "{last}");
        assert_eq!(x_hi(10.0), 10.2);
        assert_eq!(window_mid(2, 1.0, 2.5), 2.25);
        assert_eq!(window_mid(1, 1.0, 2.5), 1.5);
        assert_eq!(
            window_mid(3, 1.0, 2.5),
            3.0,
            "a window past the data: its start"
        );
    }

    #[test]
    fn quantile_and_throughput_svgs_have_bands_and_legend() {
        let h = faulty();
        let q = latency_quantiles(&h, 1.0, Formats::Svg).svg;
        assert_well_formed(&q);
        for text in [
            "p50",
            "p95",
            "p99",
            "max",
            "isolate n5",
            "fault: kill",
            "latency (ms)",
            "time (s)",
        ] {
            assert!(q.contains(text), "quantiles: missing {text:?}");
        }
        assert_eq!(band_rect_count(&q, "partition"), 1);
        let t = throughput(&h, 1.0, Formats::Svg).svg;
        assert_well_formed(&t);
        for text in [
            "completions per second",
            "read ok",
            "cas info",
            "kill n1",
            "fault: partition",
        ] {
            assert!(t.contains(text), "throughput: missing {text:?}");
        }
        assert_eq!(band_rect_count(&t, "kill"), 1);
    }

    #[test]
    fn empty_history_renders_no_data_charts() {
        let h = History::default();
        for svg in [
            latency_raw(&h, Formats::Svg).svg,
            latency_quantiles(&h, 1.0, Formats::Svg).svg,
            throughput(&h, 1.0, Formats::Svg).svg,
        ] {
            assert_well_formed(&svg);
            assert!(svg.contains("no data"), "{svg}");
            assert!(svg.contains("time (s)"));
        }
        assert!(fault_intervals(&h).is_empty());
    }

    #[test]
    fn nemesis_only_history_shows_bands_and_no_data() {
        let h = sorted(vec![
            nem(0, "kill", json!("one")),
            nem(500, "kill", json!({"nodes": ["n4"]})),
        ]);
        let svg = throughput(&h, 0.0, Formats::Svg).svg;
        assert_well_formed(&svg);
        assert!(svg.contains("no data") && svg.contains("kill n4"));
    }

    #[test]
    fn only_failures_renders_points() {
        let mut ops = Vec::new();
        for i in 0..20 {
            client(&mut ops, i, "write", i * 10, i * 10 + 5, OpType::Fail);
        }
        let h = sorted(ops);
        let raw = latency_raw(&h, Formats::Svg).svg;
        assert_well_formed(&raw);
        assert!(raw.contains("write fail") && !raw.contains("no data"));
        assert_eq!(raw.matches("<circle").count(), 20 + 1);
        let q = latency_quantiles(&h, 0.05, Formats::Svg).svg;
        assert_well_formed(&q);
        assert!(q.contains("p99") && !q.contains("no data"));
        let t = throughput(&h, f64::NAN, Formats::Svg).svg;
        assert_well_formed(&t);
        assert!(t.contains("write fail"));
    }

    #[test]
    fn zero_latency_and_odd_text_do_not_break_the_svg() {
        let mut ops = Vec::new();
        client(&mut ops, 0, "read<&>", 5, 5, OpType::Ok);
        ops.push(nem(1, "kill", json!("one")));
        ops.push(nem(2, "kill", json!({"nodes": ["<n1&>"]})));
        let h = sorted(ops);
        let svg = latency_raw(&h, Formats::Svg).svg;
        assert_well_formed(&svg);
        assert!(svg.contains("read&lt;&amp;&gt; ok") && svg.contains("kill &lt;n1&amp;&gt;"));
    }

    #[test]
    fn huge_histories_are_downsampled_deterministically() {
        let mut ops = Vec::new();
        for i in 0..(MAX_OK_POINTS as u64 * 2 + 10) {
            client(&mut ops, 0, "read", i, i + 1, OpType::Ok);
        }
        for i in 0..100 {
            client(&mut ops, 1, "write", i * 3, i * 3 + 2, OpType::Info);
        }
        let h = sorted(ops);
        let svg = latency_raw(&h, Formats::Svg).svg;
        assert_well_formed(&svg);
        assert!(svg.contains("sampled"), "caption should say sampled");
        let reads = svg.matches("<circle").count() - 1;
        assert_eq!(reads, MAX_OK_POINTS);
        // Info ops are under their cap and all kept.
        assert_eq!(svg.matches("<polygon").count(), 100 + 1);
        assert_eq!(
            svg,
            latency_raw(&h, Formats::Svg).svg,
            "rendering is deterministic"
        );
    }

    #[test]
    fn quantile_lines_break_on_empty_windows() {
        let mut ops = Vec::new();
        for (i, lat) in [1u64, 2, 3, 4].into_iter().enumerate() {
            client(&mut ops, i as u64, "read", 100, 100 + lat, OpType::Ok);
        }
        client(&mut ops, 9, "read", 2_500, 2_510, OpType::Info);
        let h = sorted(ops);
        let s = samples(&h);
        let lines = quantile_lines(&s.samples, 1.0, 3, 3.0);
        // p50 of [1, 2, 3, 4] ms is 2 ms (nearest rank); window 1 is empty, so two segments.
        assert_eq!(lines[0], vec![vec![(0.5, 2.0)], vec![(2.5, 10.0)]]);
        assert_eq!(lines[3], vec![vec![(0.5, 4.0)], vec![(2.5, 10.0)]]);
        // The data ends at 2.51 s: the last window is drawn in the middle of what it covers.
        let lines = quantile_lines(&s.samples, 1.0, 3, 2.51);
        assert_eq!(lines[0], vec![vec![(0.5, 2.0)], vec![(2.255, 10.0)]]);
    }

    #[test]
    fn throughput_counts_by_completion_window() {
        let mut ops = Vec::new();
        client(&mut ops, 0, "read", 900, 1_100, OpType::Ok);
        client(&mut ops, 1, "read", 100, 200, OpType::Ok);
        client(&mut ops, 2, "write", 100, 2_900, OpType::Fail);
        let h = sorted(ops);
        let s = samples(&h);
        let c = throughput_counts(&s.samples, 1.0, 3);
        assert_eq!(c[&(0, Outcome::Ok)], vec![1, 1, 0]);
        assert_eq!(c[&(1, Outcome::Fail)], vec![0, 0, 1]);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn quantile_and_window_helpers() {
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.0);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.99), 4.0);
        assert_eq!(quantile(&[7.0], 0.0), 7.0);
        assert_eq!(window_width(0.0, 10.0), 1.0);
        assert_eq!(window_width(-3.0, 10.0), 1.0);
        assert_eq!(window_width(f64::INFINITY, 10.0), 1.0);
        assert_eq!(window_width(0.5, 10_000.0), 5.0);
        assert_eq!(window_count(10_000.0, 5.0), MAX_WINDOWS);
        assert_eq!(window_of(10_000.0, 5.0, MAX_WINDOWS), MAX_WINDOWS - 1);
    }

    #[test]
    fn stray_completions_and_unfinished_invokes_are_skipped() {
        let h = sorted(vec![
            op(0, OpType::Ok, Process::Client(3), "read", json!(1)),
            op(1, OpType::Invoke, Process::Client(4), "read", json!(null)),
        ]);
        assert!(samples(&h).samples.is_empty());
        assert!(latency_raw(&h, Formats::Svg).svg.contains("no data"));
    }

    #[test]
    fn many_f_values_merge_into_other() {
        let mut ops = Vec::new();
        for i in 0..(MAX_F_SERIES as u64 + 3) {
            client(&mut ops, i, &format!("f{i}"), i, i + 1, OpType::Ok);
        }
        let s = samples(&sorted(ops));
        assert_eq!(s.f_names.len(), MAX_F_SERIES + 1);
        assert_eq!(s.f_names.last().map(String::as_str), Some("other"));
        assert_eq!(
            s.samples.iter().filter(|x| x.f_idx == MAX_F_SERIES).count(),
            3
        );
    }

    /// A history with every kind of the fault table, each started and stopped once (promote is
    /// one-shot), around some client ops.
    pub(super) fn all_kinds() -> History {
        let mut ops = vec![
            nem(100, "start-partition", json!("one")),
            nem(110, "start-partition", isolate_n5()),
            nem(200, "stop-partition", json!(null)),
            nem(210, "stop-partition", json!("healed")),
            nem(300, "kill", json!("one")),
            nem(310, "kill", json!({"nodes": ["n1"]})),
            nem(400, "start", json!("all")),
            nem(410, "start", json!({"nodes": ["n1"]})),
            nem(500, "pause", json!("one")),
            nem(510, "pause", json!({"nodes": ["n2"]})),
            nem(600, "resume", json!("all")),
            nem(610, "resume", json!({"nodes": ["n2"]})),
            nem(
                700,
                "bump-clock",
                json!({"nodes": ["n3"], "delta_ms": -250}),
            ),
            nem(
                710,
                "bump-clock",
                json!({"nodes": ["n3"], "delta_ms": -250}),
            ),
            nem(800, "reset-clock", json!(null)),
            nem(810, "reset-clock", json!({"nodes": ["n3"]})),
            nem(
                900,
                "start-loss",
                json!({"nodes": ["n4"], "probability": 0.2}),
            ),
            nem(
                910,
                "start-loss",
                json!({"nodes": ["n4"], "probability": 0.2}),
            ),
            nem(1000, "stop-loss", json!(null)),
            nem(1010, "stop-loss", json!(null)),
            nem(
                1100,
                "start-bandwidth",
                json!({"nodes": ["n1", "n2"], "rate_kbit": 100}),
            ),
            nem(
                1110,
                "start-bandwidth",
                json!({"nodes": ["n1", "n2"], "rate_kbit": 100}),
            ),
            nem(1200, "stop-bandwidth", json!(null)),
            nem(1210, "stop-bandwidth", json!(null)),
            nem(
                1300,
                "start-delay",
                json!({"nodes": ["n5"], "delay_ms": 50, "jitter_ms": 10}),
            ),
            nem(
                1310,
                "start-delay",
                json!({"nodes": ["n5"], "delay_ms": 50, "jitter_ms": 10}),
            ),
            nem(1400, "stop-delay", json!(null)),
            nem(1410, "stop-delay", json!(null)),
            nem(1500, "promote", json!({"node": "n2"})),
            nem(1510, "promote", json!({"node": "n2"})),
            nem(
                1600,
                "strobe-clock",
                json!({"nodes": ["n1"], "delta_ms": 100, "period_ms": 10, "duration_ms": 500}),
            ),
            nem(
                1900,
                "strobe-clock",
                json!({"nodes": ["n1"], "delta_ms": 100, "period_ms": 10, "duration_ms": 500,
                       "ran_ms": 250}),
            ),
            nem(1920, "start-ssh-drop", json!({"targets": "minority"})),
            // Partly applied: an error, and the nodes it took effect on.
            Op {
                error: Some("n4: not reached".into()),
                ..nem(
                    1930,
                    "start-ssh-drop",
                    json!({"applied": ["n3"], "failed": {"n4": "not reached"}}),
                )
            },
            nem(1940, "stop-ssh-drop", json!(null)),
            nem(1950, "stop-ssh-drop", json!(null)),
            nem(1960, "start-stall", json!({"min_ms": 3000, "max_ms": 5000})),
            nem(
                1970,
                "start-stall",
                json!({"process": 4, "thread": 4, "duration_ms": 3500, "ran_ms": 5}),
            ),
            nem(1980, "stop-stall", json!(null)),
            nem(1990, "stop-stall", json!({"ended": []})),
            nem(1992, "power-loss", json!({"targets": "all", "torn": false})),
            nem(
                1994,
                "power-loss",
                json!({"nodes": ["n1", "n2"], "torn": false, "lost": {}}),
            ),
            nem(1996, "power-on", json!(null)),
            nem(1998, "power-on", json!({"nodes": ["n1", "n2"]})),
            nem(2000, "bitflip", json!({"targets": "one", "bits": 8})),
            nem(
                2002,
                "bitflip",
                json!({"nodes": ["n3"], "damaged": {"n3": {"file": "/d/x.wal"}}}),
            ),
            nem(2004, "start-corrupted", json!(null)),
            nem(2006, "start-corrupted", json!({"nodes": ["n3"]})),
            nem(2008, "start-disk-fault", json!({"targets": "one"})),
            nem(
                2010,
                "start-disk-fault",
                json!({"nodes": ["n4"], "fault": "fsync EIO"}),
            ),
            nem(2012, "stop-disk-fault", json!(null)),
            nem(2014, "stop-disk-fault", json!({"nodes": ["n4"]})),
            nem(2016, "os-crash", json!({"targets": "one", "torn": false})),
            nem(
                2018,
                "os-crash",
                json!({"nodes": ["n5"], "torn": false, "lost": {}}),
            ),
            nem(2020, "reboot", json!(null)),
            nem(2022, "reboot", json!({"nodes": ["n5"]})),
            nem(2024, "shrink-cluster", json!({"allow_minority": false})),
            nem(
                2026,
                "shrink-cluster",
                json!({"node": "n3", "via": "n1", "retired": true}),
            ),
            nem(2028, "grow-cluster", json!(null)),
            nem(2030, "grow-cluster", json!({"added": ["n3"]})),
        ];
        for i in 0..40u64 {
            client(&mut ops, i, "read", i * 50, i * 50 + 5, OpType::Ok);
        }
        sorted(ops)
    }

    #[test]
    fn every_fault_kind_gets_an_interval_label_and_band() {
        let h = all_kinds();
        let got: Vec<(String, String, f64, f64)> = fault_intervals(&h)
            .into_iter()
            .map(|i| (i.kind, i.label, i.start_s, i.end_s))
            .collect();
        let want = [
            ("partition", "isolate n5", 0.11, 0.21),
            ("kill", "kill n1", 0.31, 0.41),
            ("pause", "pause n2", 0.51, 0.61),
            ("clock", "bump-clock n3 -250 ms", 0.71, 0.81),
            ("loss", "loss 20% n4", 0.91, 1.01),
            ("bandwidth", "bandwidth 100 kbit/s n1 n2", 1.11, 1.21),
            ("delay", "delay 50±10 ms n5", 1.31, 1.41),
            ("promote", "promote n2", 1.51, 1.51),
            // In effect while its op ran: the 250 ms before its completion.
            ("clock", "strobe-clock n1 +100 ms every 10 ms", 1.65, 1.9),
            // Partly applied: in effect where it was applied.
            ("ssh-drop", "ssh-drop n3", 1.93, 1.95),
            ("stall", "stall process 4 3500 ms", 1.965, 1.97),
            ("power-loss", "power-loss n1 n2", 1.994, 1.998),
            ("corrupt", "bitflip n3", 2.002, 2.006),
            ("disk", "disk fsync EIO n4", 2.010, 2.014),
            ("os-crash", "os-crash n5", 2.018, 2.022),
            ("membership", "membership n3", 2.026, 2.030),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0.as_str(), g.1.as_str()), (w.0, w.1));
            assert!(
                (g.2 - w.2).abs() < 1e-9 && (g.3 - w.3).abs() < 1e-9,
                "{g:?}"
            );
        }
        let svg = latency_raw(&h, Formats::Svg).svg;
        assert_well_formed(&svg);
        for k in kinds::KINDS {
            let want = if k.name == "clock" { 2 } else { 1 };
            assert_eq!(band_rect_count(&svg, k.name), want, "{} bands", k.name);
            assert!(
                svg.contains(&format!("fault: {}", k.name)),
                "{} legend",
                k.name
            );
        }
        // The one-shot promote band is drawn with a visible width.
        let c = fault_color("promote");
        let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        let rect = svg
            .lines()
            .find(|l| l.starts_with("<rect") && l.contains(&fill) && l.contains("opacity=\"0.18\""))
            .unwrap();
        let width: f64 = rect
            .split("width=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|w| w.parse().ok())
            .unwrap();
        assert!(width >= 1.0, "{rect}");
    }

    /// Decode a PNG: (width, height, RGB(A) pixels, bytes per pixel).
    pub(super) fn decode_png(bytes: &[u8]) -> (u32, u32, Vec<u8>, usize) {
        let mut dec = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .unwrap();
        let mut buf = vec![0; dec.output_buffer_size().unwrap()];
        let info = dec.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf, info.color_type.samples())
    }

    #[test]
    fn png_output_decodes_and_shows_bands_and_text() {
        let h = all_kinds();
        let fig = latency_raw(&h, Formats::SvgAndPng);
        assert_eq!(
            fig.svg,
            latency_raw(&h, Formats::Svg).svg,
            "same SVG either way"
        );
        let png = fig.png.unwrap().unwrap();
        let (w, ht, px, bpp) = decode_png(&png);
        assert_eq!((w, ht, bpp), (WIDTH_PX, HEIGHT_PX, 3));
        let mut colours: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
        for p in px.chunks(3) {
            colours.insert(p);
        }
        // Bands blended over white, text antialiasing, points: many distinct colours.
        assert!(colours.len() > 50, "{} colours", colours.len());
        // Dark text pixels exist (the font rendered glyphs): near-black in the caption area.
        let dark = px[..(w as usize * 40 * 3)]
            .chunks(3)
            .filter(|p| p.iter().all(|&c| c < 80))
            .count();
        assert!(dark > 100, "caption glyph pixels: {dark}");
        assert!(latency_raw(&h, Formats::Svg).png.is_none());
    }
}
