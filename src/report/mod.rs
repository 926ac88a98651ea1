//! The run report: plots of a history (and, later, the pages around them).
//!
//! Owns turning a finished run directory's `history.jsonl` into report files. The plot rendering
//! itself is pure and lives in [`plots`]; this module only reads the history and writes the SVG
//! files next to it. Does not own the run layout (that is `store`), the CLI (`cli`/`app`) or
//! checking (`checker`).

pub mod junit;
pub mod page;
pub mod plots;

pub use plots::{
    FaultInterval, fault_intervals, latency_quantiles_svg, latency_raw_svg, throughput_svg,
};

use crate::history::History;
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

/// Read `run_dir/history.jsonl` and write `latency-raw.svg`, `latency-quantiles.svg` and
/// `throughput.svg` into `run_dir`. Returns the written paths in that order.
pub fn render_run(run_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let history_path = run_dir.join("history.jsonl");
    let history = History::read_file(&history_path).map_err(|e| e.to_string())?;
    let duration_s = history.ops.iter().map(|o| o.time_ns).max().unwrap_or(0) as f64 / 1e9;
    let window_s = default_window_s(duration_s);
    let outputs = [
        ("latency-raw.svg", latency_raw_svg(&history)),
        (
            "latency-quantiles.svg",
            latency_quantiles_svg(&history, window_s),
        ),
        ("throughput.svg", throughput_svg(&history, window_s)),
    ];
    let mut written = Vec::with_capacity(outputs.len());
    for (name, svg) in outputs {
        let path = run_dir.join(name);
        std::fs::write(&path, svg)
            .map_err(|e| format!("{}: cannot write plot: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, OpType, Process};
    use serde_json::json;

    #[test]
    fn render_run_writes_three_svgs_from_history_file() {
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
            ["latency-raw.svg", "latency-quantiles.svg", "throughput.svg"]
        );
        for p in &paths {
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
