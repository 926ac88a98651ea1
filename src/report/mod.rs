//! The run report: plots of a history, the pages around them, and serving them.
//!
//! Owns turning a finished run directory's `history.jsonl` (and `results.json`, for the anomaly
//! and stale-read charts) into report files. The plot rendering itself is pure and lives in
//! [`plots`] (data extraction in [`anomalies`]); this module only reads those files and writes
//! the SVG and PNG files next to them. Does not own the run layout (that is `store`), the CLI (`cli`/`app`) or
//! checking (`checker`).

pub mod anomalies;
pub mod clock_seen;
pub mod digest;
pub mod html;
/// Fault intervals live in the pure core (`crate::faults::intervals`) so checkers can use them.
pub use crate::faults::intervals as faults;
pub mod junit;
pub mod page;
pub mod phases;
pub mod plots;
pub mod recovery;
pub mod serve;
pub mod witness_html;

pub use faults::{FaultInterval, fault_intervals};
pub use plots::{Figure, Formats};

use crate::history::History;
use crate::store::RunDir;
use std::path::{Path, PathBuf};

/// Window width for the quantile and throughput plots of a run lasting `duration_s` seconds:
/// 1 s for runs up to 200 s, then wide enough for about 200 windows.
pub fn default_window_s(duration_s: f64) -> f64 {
    if duration_s.is_finite() && duration_s > 200.0 {
        duration_s / 200.0
    } else {
        1.0
    }
}

/// Every chart of a run, in display order: (file stem, caption). Each is written as
/// `<stem>.svg` and `<stem>.png`. The last three are optional: they are written only when the run
/// has their data (clock-offset measurements, checker anomalies, stale reads) and otherwise
/// omitted (and older copies removed), never drawn empty.
pub const PLOT_FILES: [(&str, &str); 6] = [
    ("latency-raw", "Latency (raw)"),
    ("latency-quantiles", "Latency quantiles"),
    ("throughput", "Throughput"),
    ("clock-offsets", "Clock offsets"),
    ("anomalies", "Anomalies over time"),
    ("stale-reads", "Stale reads"),
];

/// Why an optional chart of [`PLOT_FILES`] is absent, by stem.
pub fn omitted_reason(stem: &str) -> &'static str {
    match stem {
        "clock-offsets" => "no clock-offsets measurements in the history",
        "anomalies" => "no checker reported a witness op",
        "stale-reads" => "no stale reads measured",
        _ => "not rendered",
    }
}

/// All charts of a history (and its results.json value, if any) in `formats`: (stem, figure)
/// in [`PLOT_FILES`] order, without the optional charts that have no data.
pub fn render_figures(
    history: &History,
    results: Option<&serde_json::Value>,
    formats: plots::Formats,
) -> Vec<(&'static str, plots::Figure)> {
    let end_ns = history.ops.iter().map(|o| o.time_ns).max().unwrap_or(0);
    // Pair the ops once for the three charts that use them; recovery as stored by the check.
    let shades = recovery::stored_or_analysed(results, history).shading();
    let prepared = plots::prepare_with_shades(history, shades);
    figures_of(history, prepared, end_ns, results, formats)
}

/// [`render_figures`] of a history read as it streamed: the charts from its `samples`, the
/// rest from its sparse history ([`digest`]) and `end_ns` (its last time); `shades` from its
/// recovery.
pub fn render_figures_digest(
    sparse: &History,
    samples: plots::Samples,
    end_ns: u64,
    shades: Vec<recovery::Shade>,
    results: Option<&serde_json::Value>,
    formats: plots::Formats,
) -> Vec<(&'static str, plots::Figure)> {
    let prepared = plots::prepare_parts(
        samples,
        fault_intervals(sparse),
        shades,
        phases::final_phase(sparse).map(|p| p.quiet_span_s()),
    );
    figures_of(sparse, prepared, end_ns, results, formats)
}

/// The charts of [`PLOT_FILES`]: the three from `prepared`, the optional ones from `history`
/// (its nemesis ops and the ops results.json names) and `results`.
fn figures_of(
    history: &History,
    prepared: plots::Prepared,
    end_ns: u64,
    results: Option<&serde_json::Value>,
    formats: plots::Formats,
) -> Vec<(&'static str, plots::Figure)> {
    let window_s = default_window_s(end_ns as f64 / 1e9);
    let mut out = vec![
        (
            "latency-raw",
            plots::latency_raw_prepared(&prepared, formats),
        ),
        (
            "latency-quantiles",
            plots::latency_quantiles_prepared(&prepared, window_s, formats),
        ),
        (
            "throughput",
            plots::throughput_prepared(&prepared, window_s, formats),
        ),
    ];
    out.extend(plots::clock_offsets(history, formats).map(|f| ("clock-offsets", f)));
    if let Some(results) = results {
        let marks = anomalies::anomaly_marks(history, results);
        let density = anomalies::anomaly_density(results);
        out.extend(
            plots::anomaly_timeline(history, &marks, &density, formats).map(|f| ("anomalies", f)),
        );
        out.extend(
            anomalies::stale_reads(results)
                .and_then(|s| plots::stale_reads(&s, formats))
                .map(|f| ("stale-reads", f)),
        );
    }
    out
}

/// `run_dir/results.json`, `None` when absent; an error names the file when it is unreadable
/// or malformed.
pub fn read_results(run_dir: &Path) -> Result<Option<serde_json::Value>, String> {
    RunDir::open(run_dir)
        .read_results()
        .map_err(|e| e.to_string())
}

/// Read `run_dir/history.jsonl` (and `results.json` when present) and write every chart of
/// [`PLOT_FILES`] that has data as `<stem>.svg` and `<stem>.png` into `run_dir`, removing files
/// of optional charts that no longer have data. Returns the written paths (SVG then PNG per
/// chart, in [`PLOT_FILES`] order).
pub fn render_run(run_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let dir = RunDir::open(run_dir);
    let history = dir.read_history().map_err(|e| e.to_string())?;
    let results = read_results(run_dir)?;
    let figures = render_figures(&history, results.as_ref(), plots::Formats::SvgAndPng);
    write_figures(run_dir, &figures)
}

/// [`render_run`] from a digest of the run's history (read once as it streamed; see
/// [`render_figures_digest`]).
pub fn render_run_digest(
    run_dir: &Path,
    sparse: &History,
    samples: plots::Samples,
    end_ns: u64,
    shades: Vec<recovery::Shade>,
) -> Result<Vec<PathBuf>, String> {
    let results = read_results(run_dir)?;
    let figures = render_figures_digest(
        sparse,
        samples,
        end_ns,
        shades,
        results.as_ref(),
        plots::Formats::SvgAndPng,
    );
    write_figures(run_dir, &figures)
}

/// Write `figures` into `run_dir` and remove the optional charts they lack.
fn write_figures(
    run_dir: &Path,
    figures: &[(&'static str, plots::Figure)],
) -> Result<Vec<PathBuf>, String> {
    let dir = RunDir::open(run_dir);
    let mut written = Vec::with_capacity(figures.len() * 2);
    let cannot = |e: crate::store::StoreError| format!("cannot write plot: {e}");
    for (stem, fig) in figures {
        let svg = format!("{stem}.svg");
        dir.write_text(&svg, &fig.svg).map_err(cannot)?;
        written.push(run_dir.join(svg));
        let png_path = run_dir.join(format!("{stem}.png"));
        match &fig.png {
            Some(Ok(bytes)) => {
                dir.write_bytes(&format!("{stem}.png"), bytes)
                    .map_err(cannot)?;
                written.push(png_path);
            }
            Some(Err(e)) => return Err(format!("{}: {e}", png_path.display())),
            None => {}
        }
    }
    for (stem, _) in PLOT_FILES {
        if figures.iter().any(|(s, _)| *s == stem) {
            continue;
        }
        for ext in ["svg", "png"] {
            dir.remove(&format!("{stem}.{ext}"))
                .map_err(|e| format!("cannot remove old plot: {e}"))?;
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, OpType, Process};
    use serde_json::json;

    #[test]
    fn render_run_writes_three_svgs_and_pngs_from_history_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        let ops = [
            (0u64, OpType::Invoke, Process::Client(0), "read"),
            (2_000_000, OpType::Ok, Process::Client(0), "read"),
            (3_000_000, OpType::Info, Process::Nemesis, "kill"),
            (4_000_000, OpType::Info, Process::Nemesis, "kill"),
        ];
        for (i, (t, ty, p, f)) in ops.into_iter().enumerate() {
            let mut op = Op::new(ty, p, f, json!(null));
            op.index = i as u64;
            op.time_ns = t;
            text.push_str(&serde_json::to_string(&op).unwrap());
            text.push('\n');
        }
        std::fs::write(dir.path().join("history.jsonl"), text).unwrap();
        let paths = render_run(dir.path()).unwrap();
        let names: Vec<_> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "latency-raw.svg",
                "latency-raw.png",
                "latency-quantiles.svg",
                "latency-quantiles.png",
                "throughput.svg",
                "throughput.png"
            ]
        );
        // Stale optional plots from an earlier render are removed.
        std::fs::write(dir.path().join("clock-offsets.svg"), "<svg/>").unwrap();
        std::fs::write(dir.path().join("anomalies.png"), "x").unwrap();
        render_run(dir.path()).unwrap();
        assert!(!dir.path().join("clock-offsets.svg").exists());
        assert!(!dir.path().join("anomalies.png").exists());
        for p in paths.iter().filter(|p| p.extension().unwrap() == "png") {
            let bytes = std::fs::read(p).unwrap();
            assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{}", p.display());
        }
        for p in paths.iter().filter(|p| p.extension().unwrap() == "svg") {
            let s = std::fs::read_to_string(p).unwrap();
            assert!(s.starts_with("<svg"), "{}", p.display());
            assert!(s.contains("kill"), "{}: fault label missing", p.display());
        }
    }

    #[test]
    fn render_run_names_missing_history_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = render_run(dir.path()).unwrap_err();
        assert!(err.contains("history.jsonl"), "{err}");
    }

    #[test]
    fn default_window_grows_for_long_runs() {
        assert_eq!(default_window_s(30.0), 1.0);
        assert_eq!(default_window_s(0.0), 1.0);
        assert_eq!(default_window_s(f64::NAN), 1.0);
        assert_eq!(default_window_s(1000.0), 5.0);
    }
}
