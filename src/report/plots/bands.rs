//! What charts draw behind their data: fault bands with their labels, the recovery strip along
//! the bottom (outages, recovering after a heal) and the band from where the main workload
//! stopped to the final reads (final heal, settle).
//!
//! Owns that drawing and the label lanes; each adds its legend entries. Pure, like the rest of
//! `plots`. Does not own the intervals (`report::faults`), outages and recovery
//! (`report::recovery`), the run's phases (`report::phases`) or the data series.

use super::*;

/// Draw fault bands spanning `y_lo..y_hi`, a legend entry per kind and a label per band.
/// Everything behind a latency chart's points: the quiet final phase, the fault bands and the
/// recovery strip along the bottom (a log-scale y axis from `y_lo` to `y_hi`).
pub(super) fn draw_backdrop<'a, DB: DrawingBackend + 'a, Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'a, DB, Y>,
    legend: &mut Legend,
    p: &Prepared,
    faults: &[FaultInterval],
    y_lo: f64,
    y_hi: f64,
) -> Result<(), String> {
    draw_quiet(chart, legend, p.quiet, y_lo, y_hi)?;
    draw_bands(chart, legend, faults, y_lo, y_hi)?;
    draw_recovery(chart, legend, &p.shades, y_lo, log_strip_top(y_lo, y_hi))
}

pub(super) fn draw_bands<'a, DB: DrawingBackend + 'a, Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'a, DB, Y>,
    legend: &mut Legend,
    faults: &[FaultInterval],
    y_lo: f64,
    y_hi: f64,
) -> Result<(), String> {
    let mut kinds: Vec<&str> = Vec::new();
    for iv in faults {
        if !kinds.contains(&iv.kind.as_str()) {
            kinds.push(&iv.kind);
        }
    }
    // One-shot events and very short faults stay visible: at least 0.3 % of the x range wide.
    let x_range = chart.as_coord_spec().get_x_range();
    let min_w = (x_range.end - x_range.start) * 0.003;
    for kind in kinds {
        let color = fault_color(kind);
        chart
            .draw_series(faults.iter().filter(|iv| iv.kind == kind).map(|iv| {
                Rectangle::new(
                    [(iv.start_s, y_lo), (iv.end_s.max(iv.start_s + min_w), y_hi)],
                    color.mix(0.18).filled(),
                )
            }))
            .map_err(err)?;
        legend.add(format!("fault: {kind}"), Swatch::Box(color, 0.4, 5));
    }
    let (plot_px, _) = chart.plotting_area().dim_in_pixel();
    let lanes = label_lanes(
        faults,
        plot_px as f64 / (x_range.end - x_range.start).max(1e-9),
    );
    chart
        .draw_series(faults.iter().zip(lanes).map(|(iv, lane)| {
            EmptyElement::at((iv.start_s, y_hi))
                + Text::new(
                    iv.label.clone(),
                    (2, 2 + 14 * lane as i32),
                    (FONT, 12).into_font().color(&fault_color(&iv.kind)),
                )
        }))
        .map_err(err)?;
    Ok(())
}

/// Share of a chart's height taken by the recovery strip at its bottom.
pub(super) const STRIP_FRACTION: f64 = 0.04;

/// Top of the recovery strip on a log axis from `lo` to `hi`.
pub(super) fn log_strip_top(lo: f64, hi: f64) -> f64 {
    lo * (hi / lo).powf(STRIP_FRACTION)
}

/// Colour and legend text of a recovery shade.
pub(super) fn shade_style(kind: ShadeKind) -> (RGBColor, &'static str) {
    match kind {
        ShadeKind::Outage => (RGBColor(200, 0, 0), "outage: an op kind served nowhere"),
        ShadeKind::Recovering => (RGBColor(255, 150, 0), "recovering after heal"),
    }
}

/// Outages and recovery periods (`report::recovery`) as a strip along the bottom of the chart
/// (`y_lo..y_top`), with a legend entry per kind present.
pub(super) fn draw_recovery<'a, DB: DrawingBackend + 'a, Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'a, DB, Y>,
    legend: &mut Legend,
    shades: &[Shade],
    y_lo: f64,
    y_top: f64,
) -> Result<(), String> {
    for kind in [ShadeKind::Recovering, ShadeKind::Outage] {
        if !shades.iter().any(|s| s.kind == kind) {
            continue;
        }
        let (color, label) = shade_style(kind);
        chart
            .draw_series(shades.iter().filter(|s| s.kind == kind).map(|s| {
                Rectangle::new(
                    [(s.start_s, y_lo), (s.end_s, y_top)],
                    color.mix(0.7).filled(),
                )
            }))
            .map_err(err)?;
        legend.add(label, Swatch::Box(color, 0.7, 3));
    }
    Ok(())
}

/// Colour of the span without client ops between the main workload and the final reads.
pub(super) const QUIET_COLOR: RGBColor = RGBColor(190, 160, 90);
/// Legend text of that span.
pub const QUIET_LABEL: &str = "no client ops: final heal, settle";

/// The span from where the main workload stopped to the final reads (`report::phases`) as a
/// light grey band over the chart's height, with its legend entry: a gap in the data that is
/// neither a fault nor an outage.
pub(super) fn draw_quiet<'a, DB: DrawingBackend + 'a, Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'a, DB, Y>,
    legend: &mut Legend,
    quiet: Option<(f64, f64)>,
    y_lo: f64,
    y_hi: f64,
) -> Result<(), String> {
    let Some((a, b)) = quiet.filter(|(a, b)| b > a) else {
        return Ok(());
    };
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(a, y_lo), (b, y_hi)],
            QUIET_COLOR.mix(0.12).filled(),
        )))
        .map_err(err)?;
    legend.add(QUIET_LABEL, Swatch::Box(QUIET_COLOR, 0.3, 5));
    Ok(())
}

/// Text lane (0 = top) of each fault label so labels of overlapping or close intervals do not
/// collide: the first lane whose previous label ends (estimated at 7 px per character) before
/// this one starts; at most [`MAX_LABEL_LANES`] lanes, then lanes are reused.
pub(super) fn label_lanes(faults: &[FaultInterval], px_per_s: f64) -> Vec<usize> {
    let mut lane_end_px: Vec<f64> = Vec::new();
    faults
        .iter()
        .map(|iv| {
            let start = iv.start_s * px_per_s;
            let end = start + 7.0 * iv.label.chars().count() as f64 + 8.0;
            let lane = match lane_end_px.iter().position(|&e| e <= start) {
                Some(l) => l,
                None if lane_end_px.len() < MAX_LABEL_LANES => {
                    lane_end_px.push(f64::NEG_INFINITY);
                    lane_end_px.len() - 1
                }
                None => {
                    // All lanes busy: the one that frees up first.
                    let mut best = 0;
                    for (i, e) in lane_end_px.iter().enumerate() {
                        if *e < lane_end_px[best] {
                            best = i;
                        }
                    }
                    best
                }
            };
            lane_end_px[lane] = end;
            lane
        })
        .collect()
}
