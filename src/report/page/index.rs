//! `reports/index.html`: one row per run directory under the reports root (newest first, its
//! verdict and how it ended), at most [`MAX_INDEX_ROWS`]. Does not render a run's own page
//! (`report::page`).

use super::{
    CSS, INDEX_FILE, MAX_INDEX_ROWS, badge, completion_of, esc, href, read_json, status_badge,
    text_of,
};
use crate::completion::CompletionRecord;
use crate::history::{OpType, Process};
use crate::store::{RESULTS_FILE, RunDir, TEST_FILE};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One row of the reports index.
struct IndexRow {
    /// Run directory relative to the reports root, `/`-separated.
    rel: String,
    /// Test name from test.json.
    name: String,
    /// Start time from test.json (RFC 3339 text, sorts chronologically).
    start_time: String,
    /// Time of the last history event, seconds; `None` without a readable history.
    duration_s: Option<f64>,
    /// Client invocations in the history.
    client_ops: Option<u64>,
    /// (checker, verdict) pairs; `None` without a readable results.json.
    verdicts: Option<Vec<(String, String)>>,
    /// The run's verdict (results.json `valid`), when checked.
    verdict: Option<String>,
    /// How the run ended.
    completion: CompletionRecord,
}

/// (duration, client invocations) as results.json records them.
fn history_size(results: &Value) -> Option<(Option<f64>, Option<u64>)> {
    let h = results.get(crate::store::HISTORY_SIZE_KEY)?;
    Some((
        Some(h.get("end_s")?.as_f64()?),
        Some(h.get("client_invokes")?.as_u64()?),
    ))
}

/// (duration, client invocations) counted from the history as it streams (runs checked before
/// results.json recorded them); both `None` when it is unreadable.
fn counted(dir: &Path) -> (Option<f64>, Option<u64>) {
    let (mut end_ns, mut invokes) = (0u64, 0u64);
    let read = crate::report::digest::each_op(&RunDir::open(dir).history_path(), |op| {
        end_ns = end_ns.max(op.time_ns);
        invokes += u64::from(op.op_type == OpType::Invoke && op.process != Process::Nemesis);
    });
    match read {
        Ok(_) => (Some(end_ns as f64 / 1e9), Some(invokes)),
        Err(_) => (None, None),
    }
}

fn index_row(dir: &Path, test_dir: &str, stamp: &str) -> Option<IndexRow> {
    let test = read_json(dir, TEST_FILE).ok()?;
    let results = read_json(dir, RESULTS_FILE).ok();
    let (duration_s, client_ops) = match results.as_ref().and_then(history_size) {
        Some(size) => size,
        None => counted(dir),
    };
    let completion = match &results {
        Some(r) => completion_of(dir, r),
        None => RunDir::open(dir).read_completion(),
    };
    let verdict = results.as_ref().map(|r| text_of(r.get("valid")));
    let verdicts = results.map(|r| {
        r.get("checkers")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| (text_of(c.get("checker")), text_of(c.get("verdict"))))
                    .collect()
            })
            .unwrap_or_default()
    });
    Some(IndexRow {
        rel: format!("{test_dir}/{stamp}"),
        name: text_of(test.get("name")),
        start_time: text_of(test.get("start_time")),
        duration_s,
        client_ops,
        verdicts,
        verdict,
        completion,
    })
}

/// Render `reports/index.html`: every `<root>/<test>/<timestamp>/` holding a `test.json`
/// (symlinks such as `latest` skipped), newest first, at most [`MAX_INDEX_ROWS`] rows.
pub fn render_reports_index(reports_root: &Path) -> Result<String, String> {
    // Collect candidate dirs first (cheap), sort newest first by timestamp dir name, then read
    // at most MAX_INDEX_ROWS of them.
    let mut candidates: Vec<(String, String, PathBuf)> = crate::store::runs_in(reports_root)
        .map_err(|e| format!("cannot list reports: {e}"))?
        .into_iter()
        .map(|r| (r.stamp, r.test, r.dir.path))
        .collect();
    // Timestamp directory names are UTC and sort chronologically: keep the newest before reading.
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
    let total = candidates.len();
    candidates.truncate(MAX_INDEX_ROWS);
    let mut rows: Vec<IndexRow> = candidates
        .iter()
        .filter_map(|(stamp, test_dir, path)| index_row(path, test_dir, stamp))
        .collect();
    // Newest first: by start time, then directory name.
    rows.sort_by(|a, b| {
        b.start_time
            .cmp(&a.start_time)
            .then_with(|| b.rel.cmp(&a.rel))
    });

    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>shakedown reports</title>\
         <style>{CSS}</style></head><body>\n<h1>shakedown reports</h1>\n"
    );
    let runs = |n: usize| {
        if n == 1 {
            "1 run".to_string()
        } else {
            format!("{n} runs")
        }
    };
    let _ = writeln!(out, "<p>{}.</p>", runs(total));
    out.push_str(
        "<table><tr><th>test</th><th>start time</th><th>duration (s)</th><th>client ops</th>\
         <th>verdict</th><th>verdicts</th><th>run</th></tr>\n",
    );
    for r in &rows {
        let verdicts = match &r.verdicts {
            None => "no results".to_string(),
            Some(vs) => vs
                .iter()
                .map(|(c, v)| format!("{} {}", esc(c), badge(v)))
                .collect::<Vec<_>>()
                .join("<br>"),
        };
        let verdict = format!(
            "{}{}",
            r.verdict.as_deref().map(badge).unwrap_or_default(),
            status_badge(&r.completion)
        );
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{verdict}</td><td>{verdicts}</td>\
             <td><a href=\"{}\">{}</a></td></tr>",
            esc(&r.name),
            esc(&r.start_time),
            r.duration_s.map(|d| format!("{d:.1}")).unwrap_or_default(),
            r.client_ops.map(|n| n.to_string()).unwrap_or_default(),
            href(&format!("{}/{INDEX_FILE}", r.rel)),
            esc(&r.rel)
        );
    }
    out.push_str("</table>\n");
    if total > MAX_INDEX_ROWS {
        let _ = writeln!(
            out,
            "<p>… {} older than these not listed</p>",
            runs(total - MAX_INDEX_ROWS)
        );
    }
    out.push_str("</body></html>\n");
    Ok(out)
}

/// Render and write `reports_root/index.html`; returns its path.
pub fn write_reports_index(reports_root: &Path) -> Result<PathBuf, String> {
    let html = render_reports_index(reports_root)?;
    crate::store::write_reports_file(reports_root, INDEX_FILE, &html)
        .map_err(|e| format!("cannot write the reports index: {e}"))
}

#[cfg(test)]
mod tests {
    use super::super::tests::write_run;
    use super::*;

    #[test]
    fn reports_index_counts_one_run_in_the_singular() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let html = render_reports_index(root).unwrap();
        assert!(html.contains("<p>0 runs.</p>"), "{html}");
        write_run(
            &root.join("alpha/20261129T100000.000Z"),
            "alpha",
            "2026-11-29T10:00:00Z",
            1,
        );
        let html = render_reports_index(root).unwrap();
        assert!(html.contains("<p>1 run.</p>"), "{html}");
        assert!(!html.contains("1 runs"), "{html}");
    }

    #[test]
    fn reports_index_lists_runs_newest_first_and_skips_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write_run(
            &root.join("alpha/20261129T100000.000Z"),
            "alpha",
            "2026-11-29T10:00:00Z",
            1,
        );
        write_run(
            &root.join("beta/20261129T110000.000Z"),
            "beta",
            "2026-11-29T11:00:00Z",
            2,
        );
        // Not a run: no test.json.
        std::fs::create_dir_all(root.join("beta/20261129T120000.000Z")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("beta/20261129T110000.000Z"), root.join("latest"))
            .unwrap();
        let html = render_reports_index(root).unwrap();
        let beta = html
            .find("href=\"beta/20261129T110000.000Z/index.html\"")
            .expect("beta link");
        let alpha = html
            .find("href=\"alpha/20261129T100000.000Z/index.html\"")
            .expect("alpha link");
        assert!(beta < alpha, "newest first");
        assert_eq!(
            html.matches("/index.html\"").count(),
            2,
            "latest symlink skipped"
        );
        assert!(html.contains("<p>2 runs.</p>"), "{html}");
        // Duration 3.25 s, two client invokes, both checker verdicts.
        assert!(
            html.contains("<td>3.2</td><td>2</td>"),
            "duration and op count"
        );
        assert!(html.contains("linearizable <span class=\"badge invalid\">invalid</span>"));
        assert!(html.contains("session <span class=\"badge valid\">valid</span>"));
        let path = write_reports_index(root).unwrap();
        assert_eq!(path, root.join(INDEX_FILE));
    }

    #[test]
    fn reports_index_of_missing_root_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err = render_reports_index(&tmp.path().join("nope")).unwrap_err();
        assert!(err.contains("nope"), "{err}");
    }
}
