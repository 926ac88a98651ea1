//! Chart legends, drawn in a column right of the data area so they never cover data, fault
//! bands or their labels.
//!
//! Owns the legend's entries (a label and how its sample looks, collected while a chart draws
//! its series) and drawing them beside the chart. plotters' own series labels are drawn inside
//! the data area (anything outside it is clamped to its edge), which is why charts collect a
//! [`Legend`] instead. Does not own the charts or their colours (`plots`, `plots::findings`).

use super::{Chart, FONT, Marker, Root, err, legend_dashes};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Room right of every time chart's data area for its legend, in pixels (charts reserve it with
/// `margin_right`).
pub const LEGEND_PX: u32 = 270;

/// How a legend entry's sample is drawn.
#[derive(Debug, Clone, Copy)]
pub(super) enum Swatch {
    /// A filled box 14 px wide: colour, opacity, half its height in px.
    Box(RGBColor, f64, i32),
    /// A line 20 px long: colour, width, dash pattern (on, off) or solid.
    Line(RGBColor, u32, Option<(u32, u32)>),
    /// A point marker of the latency chart, at opacity 0.75.
    Point(Marker, RGBColor),
    /// A cross: colour, size, stroke width.
    Cross(RGBColor, i32, u32),
}

/// The entries of one chart's legend, in drawing order.
#[derive(Debug, Default)]
pub(super) struct Legend {
    entries: Vec<(String, Swatch)>,
}

impl Legend {
    /// Add an entry.
    pub(super) fn add(&mut self, label: impl Into<String>, swatch: Swatch) {
        self.entries.push((label.into(), swatch));
    }
}

/// Height of one legend line, in px.
const ROW_PX: i32 = 16;
/// Padding inside the legend box, in px.
const PAD_PX: i32 = 6;
/// Width of the sample column, in px.
const SAMPLE_PX: i32 = 26;

/// Draw `legend` on `area` (the area `chart` was built on), its box's top-left corner 12 px
/// right of the chart's data area, level with its top. Nothing for an empty legend.
pub(super) fn draw_legend<'a, DB: DrawingBackend + 'a, Y: Ranged<ValueType = f64>>(
    area: &Root<'_, DB>,
    chart: &Chart<'a, DB, Y>,
    legend: &Legend,
) -> Result<(), String> {
    if legend.entries.is_empty() {
        return Ok(());
    }
    let plot = chart.plotting_area();
    let ((px, py), (ax, ay)) = (plot.get_base_pixel(), area.get_base_pixel());
    let x0 = px - ax + plot.dim_in_pixel().0 as i32 + 12;
    let y0 = py - ay;
    let font = (FONT, 12).into_font();
    let style = TextStyle::from(font).pos(Pos::new(HPos::Left, VPos::Center));
    let mut text_px = 0;
    for (label, _) in &legend.entries {
        let (w, _) = area.estimate_text_size(label, &style).map_err(err)?;
        text_px = text_px.max(w as i32);
    }
    let (w, h) = (
        2 * PAD_PX + SAMPLE_PX + text_px,
        2 * PAD_PX + ROW_PX * legend.entries.len() as i32,
    );
    area.draw(&Rectangle::new(
        [(x0, y0), (x0 + w, y0 + h)],
        WHITE.filled(),
    ))
    .map_err(err)?;
    area.draw(&Rectangle::new(
        [(x0, y0), (x0 + w, y0 + h)],
        BLACK.mix(0.5).stroke_width(1),
    ))
    .map_err(err)?;
    for (i, (label, swatch)) in legend.entries.iter().enumerate() {
        let (x, y) = (x0 + PAD_PX, y0 + PAD_PX + ROW_PX * i as i32 + ROW_PX / 2);
        draw_swatch(area, *swatch, x, y)?;
        area.draw(&Text::new(
            label.as_str(),
            (x + SAMPLE_PX, y),
            style.clone(),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// One entry's sample, starting at `x`, centred on `y`.
fn draw_swatch<DB: DrawingBackend>(
    area: &Root<'_, DB>,
    swatch: Swatch,
    x: i32,
    y: i32,
) -> Result<(), String> {
    match swatch {
        Swatch::Box(color, alpha, half) => area.draw(&Rectangle::new(
            [(x, y - half), (x + 14, y + half)],
            color.mix(alpha).filled(),
        )),
        Swatch::Line(color, width, None) => area.draw(&PathElement::new(
            vec![(x, y), (x + 20, y)],
            color.stroke_width(width),
        )),
        Swatch::Line(color, width, dash) => {
            let style = color.stroke_width(width);
            for seg in legend_dashes(dash) {
                let pts: Vec<(i32, i32)> = seg.iter().map(|(dx, dy)| (x + dx, y + dy)).collect();
                area.draw(&PathElement::new(pts, style)).map_err(err)?;
            }
            Ok(())
        }
        Swatch::Point(m, color) => {
            let style = color.mix(0.75).filled();
            let stroke = ShapeStyle::from(color.mix(0.75)).stroke_width(1);
            match m {
                Marker::Circle => area.draw(&Circle::new((x + 7, y), 3, style)),
                Marker::Triangle => area.draw(&TriangleMarker::new((x + 7, y), 4, style)),
                Marker::Cross => area.draw(&Cross::new((x + 7, y), 4, stroke)),
                Marker::Square => {
                    area.draw(&Rectangle::new([(x + 4, y - 3), (x + 10, y + 3)], style))
                }
            }
        }
        Swatch::Cross(color, size, width) => {
            area.draw(&Cross::new((x + 7, y), size, color.stroke_width(width)))
        }
    }
    .map_err(err)
}
