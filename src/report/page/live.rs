//! The run page while the run goes on: `index.html` in the run directory, rewritten by live
//! checking each time it decides keys (`runner::live`), until the run's end writes the full page
//! over it.
//!
//! Owns rendering what `live.json` holds — keys checked, invalid, left unknown, not yet retired,
//! ops read, the first invalid key with a link to its witness — as a small self-contained page
//! that reloads itself every few seconds (a `meta` refresh: still no scripts). Does not own the
//! counts (`runner::live`) or the finished page (`page`). A page left behind by a controller
//! that was killed says how to get the full report, so it never passes for a result.

use super::{CSS, INDEX_FILE, esc, read_json, text_of};
use crate::store::{LINEAR_WITNESS_FILE, LIVE_FILE, RunDir, TEST_FILE};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// Seconds between the page's reloads.
const REFRESH_S: u32 = 5;

/// The run page of a run still going on, from its test.json and live.json.
pub fn render_live_page(run_dir: &Path) -> Result<String, String> {
    let test = read_json(run_dir, TEST_FILE)?;
    let live = read_json(run_dir, LIVE_FILE)?;
    let name = text_of(test.get("name"));
    let n = |k: &str| live.get(k).and_then(Value::as_u64).unwrap_or(0);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{REFRESH_S}\">\
         <title>shakedown — {} (running)</title><style>{CSS}</style></head><body>\n\
         <h1>shakedown — {} <span class=\"badge unknown\">running</span></h1>\n",
        esc(&name),
        esc(&name)
    );
    let at = live.get("updated_s").and_then(Value::as_f64).unwrap_or(0.0);
    let _ = writeln!(
        out,
        "<div class=\"notice\"><p>The run is going on: this page was written {at:.1} s after it \
         started and reloads every {REFRESH_S} s. The full report replaces it when the run \
         ends. If the run is no longer going (its controller was killed), \
         <code>shakedown report {}</code> writes the full report.</p></div>",
        esc(&run_dir.display().to_string())
    );
    let _ = writeln!(
        out,
        "<h2>Live checking</h2>\n<table>\
         <tr><th>keys checked</th><td>{}</td></tr>\
         <tr><th>invalid</th><td>{}</td></tr>\
         <tr><th>left unknown (checked again at the end)</th><td>{}</td></tr>\
         <tr><th>keys not yet retired</th><td>{}</td></tr>\
         <tr><th>ops read</th><td>{}</td></tr></table>",
        n("checked"),
        n("invalid"),
        n("unknown"),
        n("open_keys"),
        n("ops_read")
    );
    if let Some(k) = live.pointer("/first_invalid/key").and_then(Value::as_str) {
        let at = live
            .pointer("/first_invalid/at_s")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let _ = writeln!(
            out,
            "<p>First invalid key: <b>{}</b>, found {at:.1} s into the run: \
             <a href=\"{LINEAR_WITNESS_FILE}\">its witness</a>. The verdict is settled: the \
             history is not linearizable, whatever comes after.</p>",
            esc(k)
        );
    }
    if let Some(why) = live.get("gave_up").and_then(Value::as_str) {
        let _ = writeln!(out, "<p>Live checking stopped: {}.</p>", esc(why));
    }
    out.push_str("</body></html>\n");
    Ok(out)
}

/// Render and write the live page as the run directory's `index.html`.
pub fn write_live_page(run_dir: &Path) -> Result<(), String> {
    let html = render_live_page(run_dir)?;
    RunDir::open(run_dir)
        .write_text(INDEX_FILE, &html)
        .map_err(|e| format!("cannot write the live run page: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run_dir(live: Value) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let d = RunDir::open(dir.path());
        d.write_json(TEST_FILE, &json!({"name": "etcd <script>x</script>"}))
            .unwrap();
        d.write_json(LIVE_FILE, &live).unwrap();
        dir
    }

    #[test]
    fn the_live_page_shows_the_counts_so_far_and_reloads() {
        let dir = run_dir(json!({
            "checked": 12, "invalid": 1, "unknown": 2, "open_keys": 5, "ops_read": 4000,
            "updated_s": 3.5,
            "first_invalid": {"key": "k<7>", "at_s": 2.25}
        }));
        write_live_page(dir.path()).unwrap();
        let html = std::fs::read_to_string(dir.path().join(INDEX_FILE)).unwrap();
        assert!(html.contains("<meta http-equiv=\"refresh\" content=\"5\">"));
        assert!(html.contains("<tr><th>keys checked</th><td>12</td></tr>"));
        assert!(html.contains("<tr><th>invalid</th><td>1</td></tr>"));
        assert!(html.contains("<tr><th>keys not yet retired</th><td>5</td></tr>"));
        assert!(html.contains("<tr><th>ops read</th><td>4000</td></tr>"));
        assert!(html.contains("First invalid key: <b>k&lt;7&gt;</b>, found 2.2 s"));
        assert!(html.contains("href=\"linearizability.html\""));
        assert!(html.contains("written 3.5 s after it started"));
        assert!(!html.contains("<script>"), "names are escaped");
    }

    #[test]
    fn no_live_record_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        RunDir::open(dir.path())
            .write_json(TEST_FILE, &json!({"name": "t"}))
            .unwrap();
        let e = render_live_page(dir.path()).unwrap_err();
        assert!(e.contains(LIVE_FILE), "{e}");
    }
}
