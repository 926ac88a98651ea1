//! The latency and throughput charts of a big history, from a fixed-size summary instead of a
//! sample per op: a 2-D histogram of latency against time (drawn as a heat map), quantile lines
//! read from it, exact per-window maxima and completion counts, the slowest ops and a thinned
//! set of failed and crashed ops as points.
//!
//! Owns [`Summary`] (what `plots::samples` folds every completed op into past
//! `DENSITY_FROM`) and drawing from it. Memory is fixed: [`COLS`] time columns (a column doubles
//! its width, merging neighbours, when the run outgrows them) × [`BINS`] log-latency bins, a few
//! MiB whatever the run's length. Quantiles from the histogram are within half a bin (±8 %) of
//! the exact ones; maxima and throughput counts are exact. Does not own pairing ops
//! (`plots::samples`), the backdrop (`plots::bands`) or the exact charts (`plots`).

use super::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Time columns the summary keeps; their width doubles as the run grows past them.
pub(super) const COLS: usize = 4096;
/// Log-latency bins per decade.
const PER_DECADE: usize = 16;
/// Log-latency bins: 10 decades from [`LO_MS`] (1 µs to 10,000 s); slower ops fall in the last.
pub(super) const BINS: usize = 10 * PER_DECADE;
/// Lower edge of the first latency bin, in ms.
const LO_MS: f64 = MIN_LATENCY_MS;
/// Width of a column before the run outgrows [`COLS`] of them: 1 ms.
const BASE_NS: u64 = 1_000_000;
/// The slowest ok ops drawn as points over the heat map.
pub const SLOWEST: usize = 200;
/// Failed ops, and separately crashed ops, drawn as points at most (thinned): few enough to
/// leave the heat map under them readable.
const FAILED_POINTS: usize = 1_000;
/// Heat-map columns drawn at most (summary columns are merged to fit).
const HEAT_COLS: usize = 240;
/// Latency bins merged into one heat-map row (8 rows per decade).
const HEAT_ROW_BINS: usize = 2;
/// Outcome index of a throughput series.
fn outcome_idx(o: Outcome) -> usize {
    match o {
        Outcome::Ok => 0,
        Outcome::Fail => 1,
        Outcome::Info => 2,
    }
}

/// Points of one outcome, thinned to at most a cap: every `stride`-th op is kept, and the
/// stride doubles (every other kept point dropped) when the cap is reached. Deterministic, and
/// spread over the run as the ops are.
#[derive(Debug, Clone)]
pub(super) struct Thinned {
    stride: u64,
    seen: u64,
    cap: usize,
    pub(super) pts: Vec<(usize, f64, f64)>,
}

impl Thinned {
    fn new(cap: usize) -> Thinned {
        Thinned {
            stride: 1,
            seen: 0,
            cap: cap.max(2),
            pts: Vec::new(),
        }
    }

    fn add(&mut self, f_idx: usize, t_s: f64, latency_ms: f64) {
        if self.seen.is_multiple_of(self.stride) {
            self.pts.push((f_idx, t_s, latency_ms));
            if self.pts.len() >= self.cap {
                let kept: Vec<_> = self.pts.iter().copied().step_by(2).collect();
                self.pts = kept;
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }
}

/// Every completed op of a big history, folded: see the module doc.
pub struct Summary {
    /// Column width is `BASE_NS << shift`.
    shift: u32,
    /// Ok ops per (column by invoke time, latency bin): `ok[col * BINS + bin]`.
    ok: Vec<u32>,
    /// Failed and crashed ops, the same way (the quantile chart counts every outcome).
    other: Vec<u32>,
    /// Per column: the slowest op of any outcome, and the slowest ok op, in ms (0: none).
    max_all: Vec<f64>,
    max_ok: Vec<f64>,
    /// Completions per column by completion time, per (f index, outcome): `done[f * 3 + o]`.
    done: Vec<Option<Vec<u64>>>,
    /// Columns in use (the highest one touched, plus one).
    used: usize,
    min_ms: f64,
    top_ms: f64,
    /// The [`SLOWEST`] slowest ok ops: (latency bits, invoke time bits, f index).
    slowest: BinaryHeap<Reverse<(u64, u64, usize)>>,
    /// Fail and info points, thinned.
    pub(super) failed: [Thinned; 2],
}

impl Default for Summary {
    fn default() -> Self {
        Summary::new()
    }
}

impl Summary {
    /// An empty summary.
    pub fn new() -> Summary {
        Summary {
            shift: 0,
            ok: vec![0; COLS * BINS],
            other: vec![0; COLS * BINS],
            max_all: vec![0.0; COLS],
            max_ok: vec![0.0; COLS],
            done: vec![None; (MAX_F_SERIES + 1) * 3],
            used: 0,
            min_ms: f64::INFINITY,
            top_ms: 0.0,
            slowest: BinaryHeap::new(),
            failed: [Thinned::new(FAILED_POINTS), Thinned::new(FAILED_POINTS)],
        }
    }

    /// Width of one column, in seconds.
    pub(super) fn col_s(&self) -> f64 {
        (BASE_NS << self.shift) as f64 / 1e9
    }

    fn col_of(&self, t_s: f64) -> usize {
        let ns = (t_s.max(0.0) * 1e9).round() as u64;
        (ns / (BASE_NS << self.shift)) as usize
    }

    /// Halve the column count: column i becomes columns 2i and 2i + 1.
    fn coarsen(&mut self) {
        for grid in [&mut self.ok, &mut self.other] {
            for i in 0..COLS / 2 {
                for b in 0..BINS {
                    grid[i * BINS + b] =
                        grid[2 * i * BINS + b].saturating_add(grid[(2 * i + 1) * BINS + b]);
                }
            }
            grid[COLS / 2 * BINS..].fill(0);
        }
        for v in [&mut self.max_all, &mut self.max_ok] {
            for i in 0..COLS / 2 {
                v[i] = v[2 * i].max(v[2 * i + 1]);
            }
            v[COLS / 2..].fill(0.0);
        }
        for v in self.done.iter_mut().flatten() {
            for i in 0..COLS / 2 {
                v[i] = v[2 * i] + v[2 * i + 1];
            }
            v[COLS / 2..].fill(0);
        }
        self.used = self.used.div_ceil(2);
        self.shift += 1;
    }

    /// Fold one completed op in.
    pub(super) fn add(&mut self, s: &Sample) {
        while self.col_of(s.invoke_s.max(s.complete_s)) >= COLS && self.shift < 40 {
            self.coarsen();
        }
        let (ci, cd) = (
            self.col_of(s.invoke_s).min(COLS - 1),
            self.col_of(s.complete_s).min(COLS - 1),
        );
        self.used = self.used.max(ci.max(cd) + 1);
        let lat = s.latency_ms.max(LO_MS);
        let cell = ci * BINS + bin_of(lat);
        self.min_ms = self.min_ms.min(lat);
        self.top_ms = self.top_ms.max(lat);
        self.max_all[ci] = self.max_all[ci].max(lat);
        match s.outcome {
            Outcome::Ok => {
                self.ok[cell] = self.ok[cell].saturating_add(1);
                self.max_ok[ci] = self.max_ok[ci].max(lat);
                let entry = Reverse((lat.to_bits(), s.invoke_s.to_bits(), s.f_idx));
                if self.slowest.len() < SLOWEST {
                    self.slowest.push(entry);
                } else if self.slowest.peek().is_some_and(|min| entry < *min) {
                    self.slowest.pop();
                    self.slowest.push(entry);
                }
            }
            Outcome::Fail | Outcome::Info => {
                self.other[cell] = self.other[cell].saturating_add(1);
                let t = if s.outcome == Outcome::Fail { 0 } else { 1 };
                self.failed[t].add(s.f_idx, s.invoke_s, lat);
            }
        }
        let series = s.f_idx.min(MAX_F_SERIES) * 3 + outcome_idx(s.outcome);
        self.done[series].get_or_insert_with(|| vec![0; COLS])[cd] += 1;
    }

    /// The slowest ok ops kept: (invoke time s, latency ms, f index), slowest first.
    pub(super) fn slowest(&self) -> Vec<(f64, f64, usize)> {
        let mut v: Vec<_> = self
            .slowest
            .iter()
            .map(|Reverse((l, t, f))| (f64::from_bits(*t), f64::from_bits(*l), *f))
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v
    }

    /// Summary columns per window for a requested window of `w_req` s, and the window width.
    pub(super) fn window(&self, w_req: f64) -> (usize, f64) {
        let cw = self.col_s();
        let k = ((w_req / cw).ceil() as usize).max(1);
        (k, k as f64 * cw)
    }

    /// Latencies (ms) of all outcomes in columns `cols`, per bin.
    fn merged(&self, cols: std::ops::Range<usize>, grids: &[&[u32]]) -> [u64; BINS] {
        let mut h = [0u64; BINS];
        for c in cols {
            for g in grids {
                for (b, n) in g[c * BINS..(c + 1) * BINS].iter().enumerate() {
                    h[b] += *n as u64;
                }
            }
        }
        h
    }

    /// The quantile chart's lines (per entry of `QS`, segments over consecutive non-empty
    /// windows of `k` columns, `n` windows), every outcome counted: quantiles from the
    /// histogram, the maximum exact.
    pub(super) fn quantile_lines(
        &self,
        k: usize,
        n: usize,
        extent: f64,
    ) -> Vec<Vec<Vec<(f64, f64)>>> {
        let w = k as f64 * self.col_s();
        let mut lines: Vec<Vec<Vec<(f64, f64)>>> = vec![Vec::new(); QS.len()];
        let mut prev_empty = true;
        for i in 0..n {
            let cols = (i * k).min(COLS)..((i + 1) * k).min(COLS);
            let h = self.merged(cols.clone(), &[&self.ok, &self.other]);
            let count: u64 = h.iter().sum();
            if count == 0 {
                prev_empty = true;
                continue;
            }
            let max = cols.map(|c| self.max_all[c]).fold(0.0, f64::max);
            let x = window_mid(i, w, extent);
            for (qi, (_, q, _)) in QS.iter().enumerate() {
                if prev_empty {
                    lines[qi].push(Vec::new());
                }
                let v = if *q >= 1.0 {
                    max
                } else {
                    hist_quantile(&h, count, *q).min(max)
                };
                if let Some(seg) = lines[qi].last_mut() {
                    seg.push((x, v));
                }
            }
            prev_empty = false;
        }
        lines
    }

    /// Completions per window of `k` columns (`n` windows), per (f index, outcome): exact.
    pub(super) fn throughput_counts(
        &self,
        k: usize,
        n: usize,
    ) -> HashMap<(usize, Outcome), Vec<u64>> {
        let mut out = HashMap::new();
        for (series, v) in self.done.iter().enumerate() {
            let Some(v) = v else { continue };
            let mut w = vec![0u64; n];
            for (c, &count) in v.iter().enumerate().take(self.used) {
                w[(c / k).min(n - 1)] += count;
            }
            out.insert((series / 3, Outcome::ALL[series % 3]), w);
        }
        out
    }

    /// Smallest and largest latency seen, in ms.
    pub(super) fn latency_span(&self) -> (f64, f64) {
        (self.min_ms, self.top_ms)
    }
}

/// The bin of a latency of `ms` (at least [`LO_MS`]).
fn bin_of(ms: f64) -> usize {
    let d = (ms / LO_MS).log10() * PER_DECADE as f64;
    if d.is_finite() && d > 0.0 {
        (d as usize).min(BINS - 1)
    } else {
        0
    }
}

/// Lower edge of bin `b`, in ms.
fn bin_lo(b: usize) -> f64 {
    LO_MS * 10f64.powf(b as f64 / PER_DECADE as f64)
}

/// Nearest-rank quantile `q` of the `count` latencies in histogram `h`: the geometric middle of
/// the bin holding that rank.
fn hist_quantile(h: &[u64; BINS], count: u64, q: f64) -> f64 {
    let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
    let mut seen = 0;
    for (b, &n) in h.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return (bin_lo(b) * bin_lo(b + 1)).sqrt();
        }
    }
    bin_lo(BINS)
}

/// Colour of a heat-map cell holding a share `t` (0..=1, log-scaled count) of the fullest one
/// (drawn at 85 % opacity, so fault bands show through).
fn heat(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t).round() as u8;
    RGBColor(mix(222, 8), mix(235, 48), mix(247, 107))
}

/// Colour of the heat map's legend sample.
const DENSITY_DARK: RGBColor = RGBColor(8, 48, 107);
/// Colour of the maximum line and the slowest ops.
const SLOW: RGBColor = RGBColor(120, 30, 150);

/// The latency chart of a big history: ok ops as a heat map of latency against invoke time,
/// their p50 and p99 from it and their exact maximum per column as lines, the [`SLOWEST`]
/// slowest ok ops as points, failed and crashed ops as thinned points, fault bands behind.
pub(super) fn latency_density(p: &Prepared, sum: &Summary, formats: Formats) -> Figure {
    let (faults, s) = (&p.faults, &p.samples);
    let extent = x_extent(s.end_s, faults);
    let xmax = x_hi(extent);
    let (min_ms, top_ms) = sum.latency_span();
    let (ylo, yhi) = log_range([min_ms, top_ms].into_iter());
    let kd = sum.used.div_ceil(HEAT_COLS).max(1);
    let cw = sum.col_s() * kd as f64;
    // Heat cells: (x0, x1, bin range, count).
    let mut cells = Vec::new();
    let mut lines: [Vec<(f64, f64)>; 3] = Default::default();
    for i in 0..sum.used.div_ceil(kd) {
        let cols = i * kd..((i + 1) * kd).min(COLS);
        let h = sum.merged(cols.clone(), &[&sum.ok]);
        let count: u64 = h.iter().sum();
        if count == 0 {
            continue;
        }
        let (x0, x1) = (i as f64 * cw, ((i + 1) as f64 * cw).min(xmax));
        for r in 0..BINS / HEAT_ROW_BINS {
            let c: u64 = h[r * HEAT_ROW_BINS..(r + 1) * HEAT_ROW_BINS].iter().sum();
            if c > 0 {
                cells.push((x0, x1, r * HEAT_ROW_BINS, c));
            }
        }
        let max = cols.map(|c| sum.max_ok[c]).fold(0.0, f64::max);
        let x = window_mid(i, cw, extent);
        lines[0].push((x, hist_quantile(&h, count, 0.5).min(max)));
        lines[1].push((x, hist_quantile(&h, count, 0.99).min(max)));
        lines[2].push((x, max));
    }
    let fullest = cells.iter().map(|c| c.3).max().unwrap_or(1) as f64;
    let slowest = sum.slowest();
    let ok_total: u64 = sum.ok.iter().map(|&n| n as u64).sum();
    let caption = format!(
        "Latency of {} ops: density of {} ok, {} slowest as points, fail and info sampled",
        s.total,
        ok_total,
        slowest.len()
    );
    figure!(formats, |root| {
        let mut chart = latency_chart(root, &caption, 18, xmax, (ylo, yhi))?;
        let mut legend = Legend::default();
        draw_backdrop(&mut chart, &mut legend, p, faults, ylo, yhi)?;
        chart
            .draw_series(cells.iter().map(|&(x0, x1, b, c)| {
                let t = (1.0 + c as f64).ln() / (1.0 + fullest).ln();
                let (y0, y1) = (
                    bin_lo(b).clamp(ylo, yhi),
                    bin_lo(b + HEAT_ROW_BINS).clamp(ylo, yhi),
                );
                Rectangle::new([(x0, y0), (x1, y1)], heat(0.1 + 0.9 * t).mix(0.85).filled())
            }))
            .map_err(err)?;
        legend.add(
            "ok ops: density (darker: more)",
            Swatch::Box(DENSITY_DARK, 0.8, 5),
        );
        let styles = [
            ("ok p50", BLACK, 2, None),
            ("ok p99", BLACK, 2, Some((6, 3))),
            ("ok max", SLOW, 1, Some((2, 2))),
        ];
        for ((name, color, width, dash), pts) in styles.into_iter().zip(&lines) {
            let style = color.stroke_width(width);
            match dash {
                None => chart.draw_series(LineSeries::new(pts.iter().copied(), style)),
                Some((on, off)) => {
                    chart.draw_series(DashedLineSeries::new(pts.iter().copied(), on, off, style))
                }
            }
            .map_err(err)?;
            legend.add(name, Swatch::Line(color, width, dash));
        }
        let slow: Vec<(f64, f64)> = slowest.iter().map(|&(t, l, _)| (t, l)).collect();
        draw_points(
            &mut chart,
            &mut legend,
            &slow,
            Marker::Circle,
            SLOW,
            format!("{} slowest ok", slow.len()),
        )?;
        for (t, outcome) in [(0, Outcome::Fail), (1, Outcome::Info)] {
            let mut by_f: Vec<Vec<(f64, f64)>> = vec![Vec::new(); MAX_F_SERIES + 1];
            for &(f, x, y) in &sum.failed[t].pts {
                by_f[f.min(MAX_F_SERIES)].push((x, y));
            }
            for (f_idx, pts) in by_f.iter().enumerate().filter(|(_, v)| !v.is_empty()) {
                let f = s.f_names.get(f_idx).map(String::as_str).unwrap_or("other");
                draw_points(
                    &mut chart,
                    &mut legend,
                    pts,
                    marker(f_idx),
                    outcome.color(),
                    format!("{f} {}", outcome.name()),
                )?;
            }
        }
        draw_legend(root, &chart, &legend)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::OpType;

    fn sample(t_s: f64, lat_ms: f64, outcome: Outcome, f_idx: usize) -> Sample {
        Sample {
            f_idx,
            invoke_s: t_s,
            complete_s: t_s + lat_ms / 1e3,
            latency_ms: lat_ms,
            outcome,
        }
    }

    /// A small deterministic pseudo-random sequence (xorshift).
    fn rng(seed: u64) -> impl FnMut() -> f64 {
        let mut x = seed.max(1);
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    #[test]
    fn coarsening_keeps_every_count_and_maximum() {
        let mut s = Summary::new();
        let mut r = rng(3);
        let n = 50_000;
        let mut top = 0.0f64;
        // Spread over 3 hours: the 1 ms columns double eleven times or so.
        for i in 0..n {
            let lat = 0.5 + 20.0 * r();
            top = top.max(lat);
            s.add(&sample(i as f64 * 0.2, lat, Outcome::Ok, i % 3));
        }
        assert!(s.shift > 0, "the columns widened");
        assert!(s.used <= COLS);
        let cells: u64 = s.ok.iter().map(|&c| c as u64).sum();
        assert_eq!(cells, n as u64, "no op lost to coarsening");
        let done: u64 = s.done.iter().flatten().flatten().sum();
        assert_eq!(done, n as u64);
        let max = s.max_ok.iter().copied().fold(0.0, f64::max);
        assert_eq!(max, top, "the maximum stays exact");
    }

    #[test]
    fn histogram_quantiles_are_within_half_a_bin_of_exact_ones() {
        let mut r = rng(11);
        let mut s = Summary::new();
        let mut exact: Vec<f64> = Vec::new();
        for i in 0..20_000 {
            // Log-uniform over 0.1 ms – 1 s.
            let lat = 0.1 * 10f64.powf(4.0 * r());
            exact.push(lat);
            s.add(&sample(i as f64 * 1e-4, lat, Outcome::Ok, 0));
        }
        exact.sort_by(f64::total_cmp);
        let lines = s.quantile_lines(COLS, 1, 2.0);
        for (qi, (name, q, _)) in QS.iter().enumerate() {
            let got = lines[qi][0][0].1;
            let want = quantile(&exact, *q);
            let ratio = got / want;
            let half_bin = 10f64.powf(0.5 / PER_DECADE as f64);
            assert!(
                ratio <= half_bin * 1.0001 && ratio >= 1.0 / (half_bin * 1.0001),
                "{name}: {got} vs exact {want}"
            );
        }
        assert_eq!(lines[3][0][0].1, *exact.last().unwrap(), "max is exact");
    }

    #[test]
    fn the_slowest_ops_are_kept_exactly() {
        let mut s = Summary::new();
        for i in 0..10_000 {
            s.add(&sample(
                i as f64 * 0.01,
                1.0 + (i % 97) as f64 * 0.01,
                Outcome::Ok,
                0,
            ));
        }
        // Outliers anywhere in the run, the slowest in the middle.
        s.add(&sample(3.0, 9_000.0, Outcome::Ok, 1));
        s.add(&sample(90.0, 500.0, Outcome::Ok, 0));
        let slow = s.slowest();
        assert_eq!(slow.len(), SLOWEST);
        assert_eq!((slow[0].0, slow[0].1, slow[0].2), (3.0, 9_000.0, 1));
        assert_eq!(slow[1].1, 500.0);
        assert!(slow.iter().all(|x| x.1 >= 1.95), "{:?}", slow.last());
    }

    #[test]
    fn failed_points_thin_deterministically_and_stay_spread() {
        let mut t = Thinned::new(100);
        for i in 0..10_000 {
            t.add(0, i as f64, 1.0);
        }
        assert!(t.pts.len() < 100 && t.pts.len() >= 50, "{}", t.pts.len());
        let last = t.pts.last().unwrap().1;
        assert!(
            last > 9_000.0,
            "the end of the run is still sampled: {last}"
        );
        let mut u = Thinned::new(100);
        for i in 0..10_000 {
            u.add(0, i as f64, 1.0);
        }
        assert_eq!(t.pts, u.pts);
    }

    #[test]
    fn throughput_windows_merge_columns_exactly() {
        let mut s = Summary::new();
        for i in 0..3_000 {
            let o = if i % 10 == 0 {
                Outcome::Info
            } else {
                Outcome::Ok
            };
            s.add(&sample(i as f64 * 0.001, 0.2, o, 0));
        }
        let (k, w) = s.window(1.0);
        assert_eq!((k, w), (1000, 1.0));
        let c = s.throughput_counts(k, 3);
        assert_eq!(c[&(0, Outcome::Ok)], vec![900, 900, 900]);
        assert_eq!(c[&(0, Outcome::Info)], vec![100, 100, 100]);
    }

    /// A history of `n` reads on 10 processes, 1–3 ms each, every 50th crashed, one read of
    /// 4 s in the middle, and a partition.
    fn big(n: u64) -> History {
        use crate::report::plots::tests::{client, isolate_n5, nem, sorted};
        let mut ops = vec![
            nem(1_000, "start-partition", serde_json::json!("one")),
            nem(1_100, "start-partition", isolate_n5()),
            nem(3_000, "stop-partition", serde_json::json!(null)),
        ];
        for i in 0..n {
            let (p, t) = (i % 10, i / 10 * 4);
            let end = if i % 50 == 7 {
                OpType::Info
            } else {
                OpType::Ok
            };
            client(&mut ops, p, "read", t, t + 1 + i % 3, end);
        }
        client(
            &mut ops,
            10,
            "read",
            n / 20 * 4,
            n / 20 * 4 + 4_000,
            OpType::Ok,
        );
        {}
        sorted(ops)
    }

    fn prepared(h: &History, dense_from: usize) -> Prepared {
        let mut b = SampleBuilder::with_dense_from(dense_from);
        for op in &h.ops {
            b.push(op);
        }
        prepare_parts(b.finish(), fault_intervals(h), Vec::new(), None)
    }

    #[test]
    fn past_the_threshold_the_charts_draw_a_density_and_agree_with_the_exact_ones() {
        use crate::report::plots::tests::assert_well_formed;
        let h = big(20_000);
        let (dense, exact) = (prepared(&h, 1_000), prepared(&h, usize::MAX));
        assert!(dense.samples.dense() && !exact.samples.dense());
        assert!(dense.samples.samples.is_empty(), "no sample per op kept");
        assert_eq!(dense.samples.total, exact.samples.total);

        let raw = latency_raw_prepared(&dense, Formats::Svg).svg;
        assert_well_formed(&raw);
        assert!(raw.contains("density of"), "caption names the density");
        assert!(raw.contains("slowest ok") && raw.contains("read info"));
        assert!(raw.contains("isolate n5"), "fault bands are drawn behind");
        let exact_raw = latency_raw_prepared(&exact, Formats::Svg).svg;
        assert!(!exact_raw.contains("density of"));
        // The 4 s outlier is the slowest point kept.
        let sum = dense.samples.summary.as_deref().unwrap();
        assert_eq!(sum.slowest()[0].1, 4_000.0);

        // Throughput: same counts as the exact chart, in the same (1 ms-column) windows.
        let extent = x_extent(exact.samples.end_s, &exact.faults);
        let (k, w) = sum.window(1.0);
        assert_eq!(w, 1.0);
        let n = window_count(extent, w);
        assert_eq!(
            sum.throughput_counts(k, n),
            throughput_counts(&exact.samples.samples, w, n)
        );
        // Quantile lines: the same windows, values within half a bin, max exact.
        let q_dense = sum.quantile_lines(k, n, extent);
        let q_exact = quantile_lines(&exact.samples.samples, w, n, extent);
        let half_bin = 10f64.powf(0.5 / PER_DECADE as f64) * 1.0001;
        for qi in 0..QS.len() {
            let (a, b): (Vec<_>, Vec<_>) = (
                q_dense[qi].iter().flatten().collect(),
                q_exact[qi].iter().flatten().collect(),
            );
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(x.0, y.0);
                assert!(
                    x.1 / y.1 <= half_bin && y.1 / x.1 <= half_bin,
                    "{x:?} {y:?}"
                );
            }
        }
        for chart in [
            latency_quantiles_prepared(&dense, 1.0, Formats::SvgAndPng),
            throughput_prepared(&dense, 1.0, Formats::SvgAndPng),
        ] {
            assert_well_formed(&chart.svg);
            assert!(chart.png.unwrap().is_ok());
        }
    }

    #[test]
    fn bins_cover_their_decades() {
        assert_eq!(bin_of(LO_MS), 0);
        assert_eq!(bin_of(0.0), 0);
        assert_eq!(bin_of(f64::NAN.max(0.0)), 0);
        assert_eq!(bin_of(1e9), BINS - 1);
        for b in [0, 17, 80, BINS - 1] {
            let mid = (bin_lo(b) * bin_lo(b + 1)).sqrt();
            assert_eq!(bin_of(mid), b);
        }
    }
}
