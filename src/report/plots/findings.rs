//! Charts of what the run measured and what the checkers found: clock offsets per node,
//! anomalies over time (witness marks, and every anomaly counted per time bucket when the marks
//! are a sample) and stale reads. Pure, like the rest of `plots` (shared drawing helpers, fault
//! bands and the SVG/PNG rendering live there); data comes from `report::anomalies`. Does not
//! own the latency and throughput charts.

use super::*;

/// Line colours for per-node and per-category series.
const SERIES_PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Clock offset of every node over time (one line with point markers per node) from the clock
/// nemesis's `clock-offsets` measurements, with fault bands behind; where the database reports
/// its own clock, a thin line of the node's colour beside it (`<node> db`). `None` when the history has
/// no measurements (the chart is then omitted, not drawn empty).
pub fn clock_offsets(history: &History, formats: Formats) -> Option<Figure> {
    let series = anomalies::clock_offsets(history);
    if series.is_empty() {
        return None;
    }
    let faults = fault_intervals(history);
    let end_s = history.ops.iter().map(|o| o.time_ns).max().unwrap_or(0) as f64 / 1e9;
    let xmax = x_max(end_s, &faults);
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for &(_, ms) in series.values().flatten() {
        lo = lo.min(ms);
        hi = hi.max(ms);
    }
    let span = (hi - lo).max(1.0);
    // Headroom above for band labels and the legend.
    let (ylo, yhi) = (lo - span * 0.1, hi + span * 0.45);
    Some(figure!(formats, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption("Clock offset per node (node minus controller)", (FONT, 20))
            .margin(12)
            .margin_right(LEGEND_PX)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..xmax, ylo..yhi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("offset (ms)")
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(err)?;
        let mut legend = Legend::default();
        draw_bands(&mut chart, &mut legend, &faults, ylo, yhi)?;
        // A node's `date` line and its database's own reading (`<node> db`, thin, no markers)
        // share the node's colour.
        let nodes: Vec<&str> = series
            .keys()
            .filter(|k| !k.ends_with(anomalies::DB_SERIES_SUFFIX))
            .map(String::as_str)
            .collect();
        for (name, pts) in &series {
            let node = name.strip_suffix(anomalies::DB_SERIES_SUFFIX);
            let i = nodes
                .iter()
                .position(|n| *n == node.unwrap_or(name))
                .unwrap_or(nodes.len());
            let color = SERIES_PALETTE[i % SERIES_PALETTE.len()];
            let (width, points) = if node.is_some() { (1, 0) } else { (2, 3) };
            chart
                .draw_series(
                    LineSeries::new(pts.iter().copied(), color.stroke_width(width))
                        .point_size(points),
                )
                .map_err(err)?;
            legend.add(name.as_str(), Swatch::Line(color, width, None));
        }
        draw_legend(root, &chart, &legend)
    }))
}

/// Colour of an anomaly category (checker or guarantee).
pub fn anomaly_color(category: &str) -> RGBColor {
    match category {
        anomalies::LINEARIZABLE => RGBColor(200, 30, 30),
        "read-your-writes" => RGBColor(230, 120, 0),
        "monotonic-reads" => RGBColor(30, 110, 200),
        "monotonic-writes" => RGBColor(120, 60, 180),
        "writes-follow-reads" => RGBColor(0, 140, 110),
        anomalies::VERSION_CONFLICT => RGBColor(120, 120, 0),
        anomalies::SET_LOST => RGBColor(160, 0, 90),
        other => {
            let h = other
                .bytes()
                .fold(0usize, |a, b| a.wrapping_mul(31).wrapping_add(b as usize));
            SERIES_PALETTE[h % SERIES_PALETTE.len()]
        }
    }
}

/// A bucket width for people: "50 ms", "1 s".
fn duration_text(s: f64) -> String {
    if s < 1.0 {
        format!("{} ms", num((s * 1e3).round()))
    } else {
        format!("{} s", num(s))
    }
}

/// Anomalies pinned to time: one row per checker or session guarantee, a cross at each
/// proving op (the unlinearizable op, the violating read or write), a circle at each supporting
/// op (minimized linearizability witness ops), a thin line over each evidence span (invoke to
/// completion, or earlier op to later op), with fault bands behind. Where a category had more
/// anomalies than it has marks (the checker keeps only the first witnesses), every anomaly is
/// drawn as well, aggregated: one bar per time bucket of `density`, as tall as its count allows
/// (relative to the row's fullest bucket); the caption and the legend then say so. `None` when
/// there is nothing to draw (the chart is then omitted).
pub fn anomaly_timeline(
    history: &History,
    marks: &[AnomalyMark],
    density: &[AnomalyDensity],
    formats: Formats,
) -> Option<Figure> {
    let primaries_of = |c: &str| {
        marks
            .iter()
            .filter(|m| m.primary && m.category == c)
            .count() as u64
    };
    let aggregated: Vec<&AnomalyDensity> = density
        .iter()
        .filter(|d| d.total > primaries_of(&d.category))
        .collect();
    if marks.is_empty() && aggregated.is_empty() {
        return None;
    }
    let faults = fault_intervals(history);
    let end_s = history.ops.iter().map(|o| o.time_ns).max().unwrap_or(0) as f64 / 1e9;
    let last_s = marks
        .iter()
        .map(|m| m.time_s)
        .chain(
            aggregated
                .iter()
                .flat_map(|d| d.buckets.last().map(|b| b.0 + d.bucket_s)),
        )
        .fold(end_s, f64::max);
    let xmax = x_max(last_s, &faults);
    let mut cats: Vec<&str> = Vec::new();
    for c in marks
        .iter()
        .map(|m| m.category.as_str())
        .chain(aggregated.iter().map(|d| d.category.as_str()))
    {
        if !cats.contains(&c) {
            cats.push(c);
        }
    }
    let n = cats.len();
    // Rows 0..n from the top; headroom above the top row for band labels and the legend.
    let row = |c: &str| (n - 1 - cats.iter().position(|x| *x == c).unwrap_or(0)) as f64;
    let (ylo, yhi) = (-0.6, n as f64 - 0.4 + 0.5 + 0.15 * n as f64);
    let names: Vec<String> = cats.iter().map(|c| c.to_string()).collect();
    let y_label = move |y: &f64| -> String {
        let r = y.round();
        if (y - r).abs() < 1e-6 && r >= 0.0 && (r as usize) < names.len() {
            names[names.len() - 1 - r as usize].clone()
        } else {
            String::new()
        }
    };
    let caption = if aggregated.is_empty() {
        format!("Anomalies over time ({} witness ops)", marks.len())
    } else {
        format!(
            "Anomalies over time ({} witness ops; bars: every anomaly, counted per time bucket)",
            marks.len()
        )
    };
    Some(figure!(formats, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(caption.as_str(), (FONT, 20))
            .margin(12)
            .margin_right(LEGEND_PX)
            .x_label_area_size(45)
            .y_label_area_size(150)
            .build_cartesian_2d(0.0..xmax, ylo..yhi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels((yhi - ylo).ceil() as usize * 4)
            .y_label_formatter(&y_label)
            .x_desc("time (s)")
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(err)?;
        let mut legend = Legend::default();
        draw_bands(&mut chart, &mut legend, &faults, ylo, yhi)?;
        for d in &aggregated {
            let color = anomaly_color(&d.category);
            let y = row(&d.category);
            let fullest = d.buckets.iter().map(|b| b.1).max().unwrap_or(1).max(1) as f64;
            chart
                .draw_series(d.buckets.iter().map(|&(t, count)| {
                    let h = 0.08 + 0.32 * count as f64 / fullest;
                    Rectangle::new(
                        [(t, y - h), (t + d.bucket_s, y + h)],
                        color.mix(0.45).filled(),
                    )
                }))
                .map_err(err)?;
        }
        for &c in &cats {
            let color = anomaly_color(c);
            let y = row(c);
            let of_cat = || marks.iter().filter(move |m| m.category == c);
            chart
                .draw_series(of_cat().filter_map(|m| {
                    let from = m.from_s?;
                    Some(PathElement::new(
                        vec![(from.min(m.time_s), y), (from.max(m.time_s), y)],
                        color.mix(0.6).stroke_width(2),
                    ))
                }))
                .map_err(err)?;
            chart
                .draw_series(
                    of_cat()
                        .filter(|m| !m.primary)
                        .map(|m| Circle::new((m.time_s, y), 4, color.stroke_width(2))),
                )
                .map_err(err)?;
            let primaries = primaries_of(c);
            let label = match aggregated.iter().find(|d| d.category == c) {
                Some(d) => format!(
                    "{c} ({}; {primaries} marked, bars per {})",
                    d.total,
                    duration_text(d.bucket_s)
                ),
                None => format!("{c} ({primaries})"),
            };
            chart
                .draw_series(
                    of_cat()
                        .filter(|m| m.primary)
                        .map(|m| Cross::new((m.time_s, y), 6, color.stroke_width(3))),
                )
                .map_err(err)?;
            legend.add(label, Swatch::Cross(color, 5, 3));
        }
        draw_legend(root, &chart, &legend)
    }))
}

/// Width of the legend column right of the two stale-read panels, in pixels.
const STALE_LEGEND_PX: u32 = 170;

/// Stale reads as measured by the session checker: versions behind and ms behind at p50, p90,
/// p99 and max, over all measured reads and over stale reads only, as grouped bars in two
/// panels. Not a time series, so no fault bands. `None` when no read was stale (omitted).
pub fn stale_reads(stats: &StaleReads, formats: Formats) -> Option<Figure> {
    if stats.stale_reads == 0 {
        return None;
    }
    let panels = [
        (
            "versions behind",
            stats.versions_behind,
            stats.stale_versions_behind,
        ),
        ("ms behind", stats.ms_behind, stats.stale_ms_behind),
    ];
    let caption = format!(
        "Stale reads: {} of {} measured reads missed an acknowledged newer version",
        stats.stale_reads, stats.reads_measured
    );
    let all_color = RGBColor(120, 120, 120);
    let stale_color = RGBColor(215, 50, 50);
    let x_label = |x: &f64| -> String {
        let r = x.round();
        if (x - r).abs() < 1e-6 && r >= 0.0 && (r as usize) < anomalies::QUANTILE_NAMES.len() {
            anomalies::QUANTILE_NAMES[r as usize].to_string()
        } else {
            String::new()
        }
    };
    Some(figure!(formats, |root| {
        let root = root.titled(&caption, (FONT, 20)).map_err(err)?;
        // One legend for both panels, in a column right of them.
        let (panels_area, _) = root.split_horizontally(root.dim_in_pixel().0 - STALE_LEGEND_PX);
        let halves = panels_area.split_evenly((1, 2));
        for (k, ((title, all, stale), area)) in panels.iter().zip(halves.iter()).enumerate() {
            let peak = all.iter().chain(stale).copied().fold(0.0, f64::max);
            let yhi = if peak > 0.0 { peak * 1.3 } else { 1.0 };
            let mut legend = Legend::default();
            let mut chart = ChartBuilder::on(area)
                .caption(*title, (FONT, 16))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(-0.6..3.6, 0.0..yhi)
                .map_err(err)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(9)
                .x_label_formatter(&x_label)
                .y_desc(*title)
                .axis_desc_style((FONT, 14))
                .draw()
                .map_err(err)?;
            for (values, color, dx, label) in [
                (all, all_color, -0.2, "all measured reads"),
                (stale, stale_color, 0.2, "stale reads only"),
            ] {
                chart
                    .draw_series(values.iter().enumerate().map(|(i, &v)| {
                        let x = i as f64 + dx;
                        Rectangle::new([(x - 0.17, 0.0), (x + 0.17, v)], color.filled())
                    }))
                    .map_err(err)?;
                legend.add(label, Swatch::Box(color, 1.0, 5));
                chart
                    .draw_series(values.iter().enumerate().map(|(i, &v)| {
                        Text::new(
                            // Whole numbers from 100 on: labels of neighbouring bars stay apart.
                            if v >= 100.0 {
                                format!("{v:.0}")
                            } else {
                                format!("{}", (v * 100.0).round() / 100.0)
                            },
                            (i as f64 + dx - 0.15, v + yhi * 0.05),
                            (FONT, 12).into_font(),
                        )
                    }))
                    .map_err(err)?;
            }
            if k + 1 == panels.len() {
                draw_legend(&root, &chart, &legend)?;
            }
        }
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use serde_json::json;

    fn mark(category: &str, time_s: f64, from_s: Option<f64>, primary: bool) -> AnomalyMark {
        AnomalyMark {
            category: category.into(),
            checker: crate::report::anomalies::LINEARIZABLE,
            time_s,
            from_s,
            op_index: 0,
            primary,
            label: String::new(),
        }
    }

    #[test]
    fn anomaly_timeline_has_a_row_legend_and_markers_per_category() {
        let h = faulty();
        assert!(
            anomaly_timeline(&h, &[], &[], Formats::Svg).is_none(),
            "no marks → no chart"
        );
        let marks = [
            mark("linearizable", 2.0, Some(1.9), true),
            mark("linearizable", 1.5, Some(1.4), false),
            mark("linearizable", 1.6, None, false),
            mark("monotonic-reads", 3.5, Some(1.0), true),
            mark("monotonic-reads", 4.0, Some(3.9), true),
            mark("version-conflict", 4.5, None, true),
        ];
        let fig = anomaly_timeline(&h, &marks, &[], Formats::SvgAndPng).unwrap();
        let svg = &fig.svg;
        assert_well_formed(svg);
        for text in [
            "linearizable (1)",
            "monotonic-reads (2)",
            "version-conflict (1)",
            "Anomalies over time (6 witness ops)",
            "isolate n5",
            "fault: kill",
        ] {
            assert!(svg.contains(text), "missing {text:?}");
        }
        // Category names label the rows (y axis).
        for cat in ["linearizable", "monotonic-reads", "version-conflict"] {
            assert!(
                svg.contains(&format!("\n{cat}\n</text>")),
                "row label {cat}"
            );
        }
        // Supporting ops are circles (no other circles on this chart).
        assert_eq!(svg.matches("<circle").count(), 2);
        // Primary marks are crosses: two lines each, plus one legend cross per category.
        let c = anomaly_color("monotonic-reads");
        let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        let cross_lines = svg
            .lines()
            .filter(|l| l.starts_with("<line") && l.contains(&stroke))
            .count();
        assert_eq!(cross_lines, 2 * (2 + 1), "monotonic-reads crosses");
        assert_eq!(band_rect_count(svg, "partition"), 1);
        assert!(fig.png.unwrap().is_ok());
    }

    /// Issue 15: only the first 100 witnesses per guarantee were drawn, so violations seemed to
    /// stop early. Every anomaly is drawn as counts per bucket when the marks are a sample.
    #[test]
    fn anomaly_timeline_draws_every_anomaly_when_marks_are_a_sample() {
        let h = faulty();
        let density = |cat: &str, buckets: Vec<(f64, u64)>| AnomalyDensity {
            category: cat.into(),
            bucket_s: 0.05,
            total: buckets.iter().map(|b| b.1).sum(),
            buckets,
        };
        let marks = [
            mark("monotonic-reads", 0.5, None, true),
            mark("read-your-writes", 0.6, None, true),
        ];
        let dens = [
            // 300 violations, one of them marked; the last ones long after the mark.
            density("monotonic-reads", vec![(0.5, 1), (2.0, 99), (4.5, 200)]),
            // Exactly as many as marked: nothing aggregated.
            density("read-your-writes", vec![(0.6, 1)]),
            // No marks at all (witnesses missing): still drawn.
            density("version-conflict", vec![(3.0, 7)]),
        ];
        let svg = anomaly_timeline(&h, &marks, &dens, Formats::Svg)
            .unwrap()
            .svg;
        assert_well_formed(&svg);
        for text in [
            "bars: every anomaly, counted per time bucket",
            "monotonic-reads (300; 1 marked, bars per 50 ms)",
            "read-your-writes (1)",
            "version-conflict (7; 0 marked, bars per 50 ms)",
        ] {
            assert!(svg.contains(text), "missing {text:?}");
        }
        let bars = |cat: &str| {
            let c = anomaly_color(cat);
            let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
            svg.lines()
                .filter(|l| l.starts_with("<rect") && l.contains(&fill))
                .count()
        };
        assert_eq!(bars("monotonic-reads"), 3);
        assert_eq!(bars("read-your-writes"), 0);
        assert_eq!(bars("version-conflict"), 1);
        // Density alone is enough for a chart; nothing at all gives none.
        assert!(anomaly_timeline(&h, &[], &dens[2..], Formats::Svg).is_some());
        assert!(anomaly_timeline(&h, &marks[1..], &dens[1..2], Formats::Svg).is_some());
        assert!(anomaly_timeline(&h, &[], &[], Formats::Svg).is_none());
    }

    #[test]
    fn clock_offsets_chart_has_a_line_per_node_or_is_omitted() {
        assert!(clock_offsets(&faulty(), Formats::Svg).is_none());
        let svg = clock_offsets(&all_kinds(), Formats::Svg);
        assert!(svg.is_none(), "all_kinds has no measurements");
        let mut ops = all_kinds().ops;
        for (t, n3) in [(650u64, 0.5), (750, -249.5), (850, 0.25)] {
            ops.push(nem(t, "clock-offsets", json!(null)));
            ops.push(nem(
                t + 1,
                "clock-offsets",
                json!({"offsets_ms": {"n3": n3, "n1": 1.0}}),
            ));
        }
        let h = sorted(ops);
        // Interleaving measurements do not disturb fault pairing.
        assert_eq!(fault_intervals(&h).len(), 16);
        let svg = clock_offsets(&h, Formats::Svg).unwrap().svg;
        assert_well_formed(&svg);
        for text in [
            "offset (ms)",
            "n1",
            "n3",
            "bump-clock n3 -250 ms",
            "fault: clock",
        ] {
            assert!(svg.contains(text), "missing {text:?}");
        }
        // Per node (n1 blue, n3 orange): one polyline of three points plus its legend sample.
        for stroke in ["stroke=\"#1F77B4\"", "stroke=\"#FF7F0E\""] {
            let lines = svg
                .lines()
                .filter(|l| l.starts_with("<polyline") && l.contains(stroke))
                .count();
            assert_eq!(lines, 2, "{stroke}");
        }
        assert_eq!(svg.matches("<circle").count(), 6);
    }

    #[test]
    fn stale_read_chart_shows_both_samples_or_is_omitted() {
        let mut stats = StaleReads {
            reads_measured: 40,
            stale_reads: 0,
            versions_behind: [0.0, 1.0, 3.0, 4.0],
            ms_behind: [0.0, 1.5, 9.25, 12.0],
            stale_versions_behind: [2.0, 3.0, 4.0, 4.0],
            stale_ms_behind: [5.0, 9.0, 12.0, 12.0],
        };
        assert!(
            stale_reads(&stats, Formats::Svg).is_none(),
            "no stale reads → omitted"
        );
        stats.stale_reads = 7;
        let svg = stale_reads(&stats, Formats::Svg).unwrap().svg;
        assert_well_formed(&svg);
        for text in [
            "7 of 40 measured reads",
            "versions behind",
            "ms behind",
            "all measured reads",
            "stale reads only",
            "\np99\n</text>",
            "\n9.25\n</text>",
        ] {
            assert!(svg.contains(text), "missing {text:?}");
        }
        // 2 panels × 2 samples × 4 quantiles bars.
        let bars = svg
            .lines()
            .filter(|l| l.starts_with("<rect") && l.contains("fill=\"#D73232\""))
            .count();
        assert_eq!(
            bars,
            2 * 4 + 1,
            "stale bars plus one legend swatch for both panels"
        );
    }
}
