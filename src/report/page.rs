//! The HTML pages of a report: one self-contained `index.html` per run directory and a
//! `reports/index.html` listing all runs.
//!
//! Owns reading a finished run directory (`test.json`, `results.json`, `history.jsonl`, the plot
//! SVGs, `logs/`) and rendering it as static HTML with inline CSS and inline SVG: no scripts, no
//! external references, opens from `file://`. Does not own the run layout (`store`), rendering the
//! plots (`plots`), or checking (`checker`); it only displays what those wrote.
//!
//! The page reads top-down for a person: a line of what ran, the verdict and the first witness
//! (`page::verdict`), the plots, then the tables (every checker's details, faults, membership,
//! recovery), the configuration folded away in a closed `<details>` (`page::config`), the files.
//!
//! This file renders the page, its order and its shared pieces (badges, escaping, the plots);
//! each section is a module of `page/` (`verdict`, `config`, `checkers`, `faults`, `recovery`,
//! one per checker with its own section), and `page::index` renders `reports/index.html`;
//! `page::live` the page a run has while it goes on (live checking's counts so far), which the
//! finished page replaces.

use crate::completion::CompletionRecord;
use crate::history::History;
use crate::report::html::esc;
use crate::report::{PLOT_FILES, omitted_reason};
use crate::store::{
    COMPLETION_FILE, FAULTS_FILE, HISTORY_FILE, LINEAR_WITNESS_FILE, LOGS_DIR, RESULTS_FILE,
    RunDir, TEST_FILE,
};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod chaos;
mod checkers;
mod config;
mod faults;
mod index;
mod live;
mod lock;
mod log;
mod membership;
mod recovery;
mod set;
mod txn;
mod verdict;

use checkers::checker_section;
use faults::fault_section;
pub use index::{render_reports_index, write_reports_index};
pub use live::{render_live_page, write_live_page};

/// A self-contained page of one transactional result (`shakedown check --html` on a
/// transaction history): the Transactions section of the run page — counts, the models checked
/// against and ruled out, each anomaly explained in words and each cycle drawn — for `source`.
pub fn txn_page(source: &str, verdict: &str, details: &serde_json::Value) -> String {
    let mut out = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">\
         <title>shakedown check — {}</title><style>{CSS}</style></head><body>\n\
         <h1>{} {}</h1>\n",
        esc(source),
        esc(source),
        badge(verdict)
    );
    txn::txn_section(&mut out, details);
    out.push_str("</body></html>\n");
    out
}

/// A plot larger than this is linked instead of embedded.
pub const MAX_EMBED_SVG_BYTES: u64 = 6 * 1024 * 1024;
/// At most this many session violations (and, separately, version conflicts) are tabulated.
pub const MAX_SESSION_WITNESSES: usize = 50;
/// At most this many invalid linearizability parts get a witness table.
pub const MAX_LINEAR_PARTS: usize = 20;
/// Explanations longer than this are cut (the full text stays in `results.json`).
pub const MAX_EXPLANATION_BYTES: usize = 64 * 1024;
/// At most this many log files are linked.
pub const MAX_LOG_LINKS: usize = 1000;
/// At most this many fault intervals are listed.
pub const MAX_FAULT_ROWS: usize = 1000;
/// At most this many runs are listed in the reports index.
pub const MAX_INDEX_ROWS: usize = 1000;
/// File name of a run page and of the reports index.
pub const INDEX_FILE: &str = "index.html";

pub(crate) const CSS: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1300px}\
table{border-collapse:collapse;margin:0.5em 0 1.2em}\
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}td{overflow-wrap:anywhere}\
th{background:#f2f2f2}pre,code{background:#f6f6f6;font-size:90%}\
pre{padding:0.6em;overflow-x:auto;white-space:pre-wrap}\
.badge{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-size:80%;vertical-align:middle}\
.valid{background:#2e7d32}.invalid{background:#c62828}.unknown{background:#ef8f00}\
svg{max-width:100%;height:auto;display:block;margin:0.5em 0}\
.timeline{margin:0.5em 0 1em;max-width:1200px}.tl-axis{font-size:80%;color:#666;margin-left:11em;position:relative}\
.tl-axis span{position:absolute;right:0}.tl-row{display:flex;align-items:center;margin:2px 0}\
.tl-name{width:11em;font-size:85%}.tl-track{position:relative;flex:1;height:14px;background:#f4f4f4}\
.tl-bar{position:absolute;top:0;height:14px;opacity:0.8}\
.swatch{display:inline-block;width:10px;height:10px;margin-right:5px;vertical-align:middle}\
.notice{border-left:4px solid #ef8f00;background:#fff8e1;padding:0.2em 1em;margin:0.5em 0 1em}\
table.kv{margin:0.3em 0 0;font-size:90%}table.kv th{background:none;font-weight:normal;color:#555}\
details{margin:0.5em 0 1.2em}summary{cursor:pointer;font-weight:bold}summary h2{display:inline}\
.what{color:#444;margin-top:-0.4em}\
.witness{border-left:4px solid #c62828;background:#fdf3f3;padding:0.2em 1em;margin:0.5em 0 1em}";

/// Percent-encode one relative path for an `href` (keeps `/` and unreserved characters), so a
/// file name can never become a scheme or break out of the attribute.
fn href(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for b in rel.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    // A leading segment with a colon is impossible now (':' is encoded); guard "//" anyway.
    if out.starts_with("//") {
        out.insert_str(0, "./");
    }
    out
}

/// Verdict badge; unknown strings are shown as `unknown`-coloured.
fn badge(verdict: &str) -> String {
    let class = match verdict {
        "valid" => "valid",
        "invalid" => "invalid",
        _ => "unknown",
    };
    format!("<span class=\"badge {class}\">{}</span>", esc(verdict))
}

/// A badge for a run that did not complete ("interrupted", "incomplete", …); empty otherwise.
fn status_badge(c: &CompletionRecord) -> String {
    if c.is_complete() {
        return String::new();
    }
    format!(
        " <span class=\"badge unknown\" title=\"{}\">{}</span>",
        esc(&c.reason),
        esc(c.status.label())
    )
}

/// How the run ended: `completion` in results.json, else the run directory's completion record
/// (missing = the controller was killed).
fn completion_of(run_dir: &Path, results: &Value) -> CompletionRecord {
    results
        .get("completion")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_else(|| RunDir::open(run_dir).read_completion())
}

/// What live checking decided while the run went on (`runner::live`; results.json `live`).
fn live_section(out: &mut String, results: &Value) {
    let Some(live) = results.get(crate::store::LIVE_KEY) else {
        return;
    };
    let n = |k: &str| live.get(k).and_then(Value::as_u64).unwrap_or(0);
    let first = live
        .pointer("/first_invalid/key")
        .and_then(Value::as_str)
        .map_or(String::new(), |k| {
            let at = live.pointer("/first_invalid/at_s").and_then(Value::as_f64);
            format!(
                "; first invalid: key {} at {:.1} s",
                esc(k),
                at.unwrap_or(0.0)
            )
        });
    // Older runs' live.json has no `reused_valid`: their valid keys were all checked again.
    let valid = n("checked").saturating_sub(n("invalid") + n("unknown"));
    let reused = n("reused_valid").min(valid);
    let later = n("reused_with_later_ops").min(valid - reused);
    let again = match (reused, later) {
        (0, 0) => "valid and unknown keys checked again at the end".to_string(),
        (_, 0) => format!(
            "{reused} of the {valid} valid keys had no later op and were not searched again; \
             the others checked again at the end"
        ),
        _ => format!(
            "of the {valid} valid keys, {reused} had no later op and were not searched again, \
             and {later} had later ops (final reads) that fitted the linearization found live, \
             so only those were checked; the others checked again at the end"
        ),
    };
    let _ = writeln!(
        out,
        "<p>Live checking: {} keys checked while the run went on, {} invalid, {} left unknown \
         ({again}){first}.</p>",
        n("checked"),
        n("invalid"),
        n("unknown")
    );
}

/// Why the verdict is not the checkers' (an incomplete run, no client ops), and what cleanup
/// left behind; nothing for a complete, clean run.
fn completion_section(out: &mut String, results: &Value, c: &CompletionRecord) {
    let reason = results.get("reason").and_then(Value::as_str);
    if reason.is_none() && c.is_complete() && c.cleanup_ok() {
        return;
    }
    out.push_str("<div class=\"notice\">\n");
    if let Some(reason) = reason {
        let _ = writeln!(
            out,
            "<p><b>Verdict {}:</b> {}</p>",
            esc(&text_of(results.get("valid"))),
            esc(reason)
        );
    }
    if !c.is_complete() {
        let _ = writeln!(
            out,
            "<p><b>Run {}</b> — {}. The checkers looked only at what was recorded; faults \
             still active when the run ended are drawn to the end of the history.</p>",
            esc(c.status.label()),
            esc(&c.reason)
        );
    }
    if !c.cleanup_ok() {
        out.push_str(
            "<p><b>Cleanup failed</b> — left behind (run <code>shakedown heal</code>):</p><ul>\n",
        );
        for f in &c.cleanup_failures {
            let _ = writeln!(out, "<li>{}</li>", esc(f));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</div>\n");
}

/// Read and parse a JSON object file of the run (through `store`); errors name the file.
fn read_json(run_dir: &Path, name: &str) -> Result<Value, String> {
    RunDir::open(run_dir)
        .read_object(name)
        .map_err(|e| e.to_string())
}

/// A JSON value as display text: strings unquoted, null as empty, others as compact JSON.
fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn row(out: &mut String, key: &str, value_html: &str) {
    let _ = writeln!(out, "<tr><th>{}</th><td>{value_html}</td></tr>", esc(key));
}

/// Cut `s` to at most `max` bytes at a char boundary, noting the cut.
fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… ({} more bytes, see results.json)",
        &s[..end],
        s.len() - end
    )
}

/// An SVG file ready to embed inline, or `None` when it should only be linked (too large,
/// unreadable, not an SVG, or containing scripts/external references).
fn embeddable_svg(run_dir: &Path, name: &str) -> Option<String> {
    let text = RunDir::open(run_dir).read_text_upto(name, MAX_EMBED_SVG_BYTES)?;
    let text = text.trim_start();
    if !text.starts_with("<svg") {
        return None;
    }
    // The HTML parser puts <svg> in the SVG namespace itself; dropping the declaration keeps the
    // page free of any URL.
    let text = text.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    let lower = text.to_ascii_lowercase();
    if lower.contains("<script")
        || lower.contains("http:")
        || lower.contains("https:")
        || lower.contains("javascript:")
        || lower.contains("<foreignobject")
    {
        return None;
    }
    Some(text)
}

/// The Plots section: every plot the run has, inline (or linked when it cannot be embedded),
/// then the optional plots not drawn and why; nothing when the run has no plots.
fn plots_section(out: &mut String, run_dir: &Path) {
    let present: Vec<_> = PLOT_FILES
        .iter()
        .filter(|(stem, _)| run_dir.join(format!("{stem}.svg")).is_file())
        .collect();
    if present.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"plots\">Plots</h2>\n");
    for (stem, caption) in &present {
        let (svg_file, png_file) = (format!("{stem}.svg"), format!("{stem}.png"));
        let _ = write!(out, "<h3 id=\"plot-{stem}\">{}", esc(caption));
        if run_dir.join(&png_file).is_file() {
            let _ = write!(
                out,
                " <small><a href=\"{}\">PNG</a></small>",
                href(&png_file)
            );
        }
        out.push_str("</h3>\n");
        match embeddable_svg(run_dir, &svg_file) {
            Some(svg) => {
                out.push_str(&svg);
                out.push('\n');
            }
            None => {
                let _ = writeln!(
                    out,
                    "<p><a href=\"{}\">{}</a> (not embedded: too large or not a plain SVG)</p>",
                    href(&svg_file),
                    esc(&svg_file)
                );
            }
        }
    }
    let absent: Vec<String> = PLOT_FILES
        .iter()
        .skip(3)
        .filter(|(stem, _)| !present.iter().any(|(s, _)| s == stem))
        .map(|(stem, caption)| format!("{} ({})", esc(caption), esc(omitted_reason(stem))))
        .collect();
    if !absent.is_empty() {
        let _ = writeln!(out, "<p>Not drawn: {}.</p>", absent.join("; "));
    }
}

/// Render the self-contained `index.html` of one run directory. `test.json` and `results.json`
/// are required (an error names the missing or malformed file); everything else is optional.
pub fn render_run_page(run_dir: &Path) -> Result<String, String> {
    render_run_page_with(run_dir, None)
}

/// [`render_run_page`] with the history already read: `Some` of a digest's sparse history
/// (`report::digest`) for a long run, whose sections read only the ops it keeps.
pub fn render_run_page_with(run_dir: &Path, sparse: Option<&History>) -> Result<String, String> {
    let test = read_json(run_dir, TEST_FILE)?;
    let results = read_json(run_dir, RESULTS_FILE)?;
    let name = text_of(test.get("name"));
    let verdict = text_of(results.get("valid"));
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
         <title>shakedown — {}</title><style>{CSS}</style></head><body>\n",
        esc(&name)
    );
    let completion = completion_of(run_dir, &results);
    let _ = writeln!(
        out,
        "<h1>shakedown — {} {}{}</h1>",
        esc(&name),
        badge(&verdict),
        status_badge(&completion)
    );
    let what_ran = config::what_ran_line(&test);
    if !what_ran.is_empty() {
        let _ = writeln!(out, "<p class=\"what\">{}</p>", esc(&what_ran));
    }
    completion_section(&mut out, &results, &completion);
    let _ = writeln!(
        out,
        "<p><a href=\"#{}\">Verdict</a> · <a href=\"#plots\">Plots</a> · \
         <a href=\"#checkers\">Checkers</a> · <a href=\"#faults\">Faults</a> · \
         <a href=\"#recovery\">Recovery</a> · <a href=\"#{}\">Configuration</a> · \
         <a href=\"#files\">Files (history, fault journal, logs)</a></p>",
        verdict::VERDICT_ID,
        config::CONFIG_ID
    );

    // Top-down for a person: the verdict and the first witness, then the plots, then the
    // tables (every checker's details, faults, recovery), the configuration folded, the files.
    let dir = RunDir::open(run_dir);
    let history = match sparse {
        Some(h) => Some(Ok(std::borrow::Cow::Borrowed(h))),
        None => dir
            .has(HISTORY_FILE)
            .then(|| dir.read_history().map(std::borrow::Cow::Owned)),
    };
    let readable = history
        .as_ref()
        .and_then(|h| h.as_ref().ok())
        .map(|h| h.as_ref());
    verdict::verdict_section(&mut out, &results, readable);
    live_section(&mut out, &results);
    plots_section(&mut out, run_dir);
    checker_section(&mut out, run_dir, &results, readable);

    let recovery = readable
        .map(|history| crate::report::recovery::stored_or_analysed(Some(&results), history));
    match &history {
        None => {}
        Some(Ok(history)) => {
            fault_section(&mut out, history, &results);
            let end_s = history.ops.iter().map(|o| o.time_ns).max().unwrap_or(0) as f64 / 1e9;
            membership::membership_section(
                &mut out,
                &crate::faults::membership::timeline::timeline(history),
                end_s,
            );
            if let Some(r) = &recovery {
                recovery::recovery_section(&mut out, r);
                recovery::outage_details(&mut out, r);
            }
        }
        Some(Err(e)) => {
            let _ = writeln!(
                out,
                "<h2 id=\"faults\">Faults</h2>\n<p>history unreadable: {}</p>",
                esc(&e.to_string())
            );
        }
    }
    config::config_section(&mut out, &test, &results);

    // Files.
    out.push_str("<h2 id=\"files\">Files</h2>\n<ul>\n");
    let mut files: Vec<String> = [
        HISTORY_FILE,
        TEST_FILE,
        RESULTS_FILE,
        COMPLETION_FILE,
        FAULTS_FILE,
        LINEAR_WITNESS_FILE,
    ]
    .iter()
    .filter(|f| run_dir.join(f).is_file())
    .map(|f| f.to_string())
    .collect();
    files.extend(dir.files_under(LOGS_DIR, MAX_LOG_LINKS));
    for f in &files {
        let _ = writeln!(out, "<li><a href=\"{}\">{}</a></li>", href(f), esc(f));
    }
    out.push_str("</ul>\n</body></html>\n");
    Ok(out)
}

/// Render and write `run_dir/index.html`; returns its path.
pub fn write_run_page(run_dir: &Path) -> Result<PathBuf, String> {
    write_run_page_with(run_dir, None)
}

/// [`write_run_page`] with the history already read (see [`render_run_page_with`]).
pub fn write_run_page_with(run_dir: &Path, sparse: Option<&History>) -> Result<PathBuf, String> {
    let html = render_run_page_with(run_dir, sparse)?;
    RunDir::open(run_dir)
        .write_text(INDEX_FILE, &html)
        .map_err(|e| format!("cannot write the run page: {e}"))?;
    Ok(run_dir.join(INDEX_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Op;
    use crate::history::{OpType, Process};
    use serde_json::json;

    fn history_text(ops: &[(u64, OpType, Process, &str, Value)]) -> String {
        let mut text = String::new();
        for (i, (t, ty, p, f, v)) in ops.iter().enumerate() {
            let mut op = Op::new(*ty, *p, *f, v.clone());
            op.index = i as u64;
            op.time_ns = *t;
            text.push_str(&serde_json::to_string(&op).unwrap());
            text.push('\n');
        }
        text
    }

    /// A small run dir: test.json, results.json, a history with a partition, plots, a log.
    pub(super) fn write_run(dir: &Path, name: &str, start_time: &str, seed: u64) {
        std::fs::create_dir_all(dir).unwrap();
        let test = json!({
            "name": name, "seed": seed, "start_time": start_time,
            "shakedown_version": "0.1.0",
            "db": {"name": "etcd", "version": "3.4.23"},
            "nodes": [{"name": "n1", "host": "10.0.0.1"}, {"name": "n2", "host": "10.0.0.2"}],
            "concurrency": 4, "rate": 100.0, "time_limit_s": 10.0, "read_mode": "serializable",
            "workload": {"name": "register", "spec": {"kind": "register"}},
            "nemesis": {"name": "isolate", "spec": null},
            "rerun": "shakedown run --seed 42 --workload register"
        });
        std::fs::write(dir.join(TEST_FILE), test.to_string()).unwrap();
        let results = json!({
            "valid": "invalid",
            "checkers": [
                {"checker": "linearizable", "verdict": "invalid",
                 "summary": "invalid: 2 ops in 1 part",
                 "details": {"explanation": "key 2: cannot linearize op 976 <read>"}},
                {"checker": "session", "verdict": "valid", "summary": "4 session guarantees held",
                 "details": {
                    "guarantees": [
                        {"guarantee": "monotonic-reads", "checks": 17, "violations": 3,
                         "witnesses": [{"guarantee": "monotonic-reads", "key": "k1",
                                        "session": 1, "process": 1, "earlier_index": 1,
                                        "later_index": 5, "earlier_version": 3,
                                        "later_version": 2,
                                        "witness": "session 1 read v3 then v2"}],
                         "timeline": {"bucket_ms": 10, "buckets": [[0, 3]]}},
                        {"guarantee": "read-your-writes", "checks": 5, "violations": 0,
                         "witnesses": []}
                    ],
                    "stale": {"reads_measured": 40, "stale_reads": 7,
                              "ms_behind": {"p50": 0.0, "p90": 1.5, "p99": 9.25, "max": 12.0}}
                 }}
            ]
        });
        std::fs::write(dir.join(RESULTS_FILE), results.to_string()).unwrap();
        let ops = [
            (
                0u64,
                OpType::Invoke,
                Process::Client(0),
                "read",
                Value::Null,
            ),
            (
                1_000_000,
                OpType::Ok,
                Process::Client(0),
                "read",
                Value::Null,
            ),
            (
                1_500_000_000,
                OpType::Info,
                Process::Nemesis,
                "start-partition",
                json!("isolate n2"),
            ),
            (
                1_600_000_000,
                OpType::Info,
                Process::Nemesis,
                "start-partition",
                json!("isolate n2"),
            ),
            (
                2_000_000_000,
                OpType::Invoke,
                Process::Client(1),
                "write",
                json!(3),
            ),
            (
                2_100_000_000,
                OpType::Ok,
                Process::Client(1),
                "write",
                json!(3),
            ),
            (
                3_000_000_000,
                OpType::Info,
                Process::Nemesis,
                "stop-partition",
                Value::Null,
            ),
            (
                3_250_000_000,
                OpType::Info,
                Process::Nemesis,
                "stop-partition",
                Value::Null,
            ),
        ];
        std::fs::write(dir.join(HISTORY_FILE), history_text(&ops)).unwrap();
        crate::report::render_run(dir).unwrap();
        std::fs::create_dir_all(dir.join("logs/n1")).unwrap();
        std::fs::write(dir.join("logs/n1/etcd.log"), "started\n").unwrap();
        std::fs::write(dir.join(LINEAR_WITNESS_FILE), "<html></html>").unwrap();
    }

    #[test]
    fn run_page_shows_config_verdicts_faults_plots_and_links() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        write_run(
            &dir,
            "etcd-register",
            "2026-11-29T21:29:52Z",
            7952273444010470980,
        );
        let html = render_run_page(&dir).unwrap();
        assert!(html.contains("shakedown — etcd-register"), "title");
        assert!(html.contains("<span class=\"badge invalid\">invalid</span>"));
        assert!(html.contains("7952273444010470980"), "seed");
        assert!(html.contains("<tr><th>db</th><td>etcd 3.4.23</td></tr>"));
        assert!(html.contains("<tr><th>workload</th><td><b>register</b></td></tr>"));
        assert!(html.contains("<tr><th>nemesis</th><td><b>isolate</b></td></tr>"));
        assert!(html.contains("n1 (10.0.0.1), n2 (10.0.0.2)"));
        assert!(html.contains("<code>shakedown run --seed 42 --workload register</code>"));
        assert!(html.contains(
            "<tr><td>linearizable</td><td><span class=\"badge invalid\">invalid</span></td>\
             <td>invalid: 2 ops in 1 part</td></tr>"
        ));
        assert!(html.contains("<td>session</td><td><span class=\"badge valid\">valid</span>"));
        assert!(html.contains("<pre>key 2: cannot linearize op 976 &lt;read&gt;</pre>"));
        assert!(html.contains("href=\"linearizability.html\""));
        assert!(html.contains("<tr><td>monotonic-reads</td><td>17</td><td>3</td></tr>"));
        assert!(
            html.contains(
                "<tr><td>monotonic-reads</td><td>1</td><td>k1</td><td>1 → 5</td>\
                 <td>0.001 → 2.100</td><td>3</td><td>2</td><td>session 1 read v3 then v2</td></tr>"
            ),
            "session witness row"
        );
        assert!(html.contains("Violations (1 of 3 shown"));
        assert!(html.contains("the anomaly timeline counts all of them over time"));
        assert!(html.contains("p99 9.25"));
        // Partition effective at 1.6 s, healed at 3.25 s.
        assert!(
            html.contains(
                "<tr><td>1.600</td><td>3.250</td><td>1.650</td><td><span class=\"swatch\""
            ),
            "fault row missing"
        );
        // Recovery: one served op in the 1.6 s before the partition, then the workload idles.
        assert!(html.contains("<h2 id=\"recovery\">Recovery and unavailability</h2>"));
        assert!(
            html.contains(
                "<tr><td>partition isolate n2</td><td>1.600–3.250</td><td>–</td>\
                 <td>0.6</td><td>–</td><td>not measured: only 0.0 s from the heal until the \
                 workload stopped, 3 s needed</td><td>–</td></tr>"
            ),
            "recovery row missing"
        );
        assert!(html.contains(
            "<b>recovery after heal: none measured (0 of 1 fault recovered; 1 not measured — \
             partition isolate n2 at 1.6 s: the workload stopped before recovery could be seen)</b>"
        ));
        // Raw, quantiles, throughput, anomalies (the session violation), stale reads; no clock
        // measurements, so no clock plot, and the page says so.
        assert_eq!(html.matches("<svg").count(), 5, "five inline plots");
        for stem in ["latency-raw", "anomalies", "stale-reads"] {
            assert!(html.contains(&format!("id=\"plot-{stem}\"")), "{stem}");
            assert!(
                html.contains(&format!("href=\"{stem}.png\"")),
                "{stem} png link"
            );
        }
        assert!(html.contains("Not drawn: Clock offsets (no clock-offsets measurements"));
        assert!(html.contains("class=\"tl-bar\" style=\"left:49.231%;width:50.769%"));
        assert!(html.contains("href=\"logs/n1/etcd.log\""));
        for f in ["history.jsonl", "test.json", "results.json"] {
            assert!(html.contains(&format!("href=\"{f}\"")), "{f} link");
        }
        assert!(!html.contains("<script"));
        assert!(!html.contains("http://"));
        assert!(!html.contains("https://"));
        // Top-down for a person: what ran and the verdict, then the plots, then the tables;
        // the configuration folded away (closed) before the files.
        assert!(html.contains(
            "</h1>\n<p class=\"what\">etcd 3.4.23 · workload register · nemesis isolate · 10 s \
             · seed 7952273444010470980</p>"
        ));
        let at = |s: &str| {
            html.find(s)
                .unwrap_or_else(|| panic!("{s} missing: {html}"))
        };
        let order = [
            at("<h2 id=\"verdict\">"),
            at("<td>linearizable</td><td><span class=\"badge invalid\">"),
            at("<h2 id=\"plots\">"),
            at("<h2 id=\"checkers\">"),
            at("<h2 id=\"faults\">"),
            at("<h2 id=\"recovery\">"),
            at("<details id=\"configuration\">"),
            at("<h2 id=\"files\">"),
        ];
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        let config = at("<details id=\"configuration\"><summary><h2>Configuration</h2></summary>");
        let config_end = config + html[config..].find("</details>").unwrap();
        for row in [
            "<tr><th>seed</th>",
            "<tr><th>db</th>",
            "<tr><th>workload</th>",
        ] {
            assert!(
                (config..config_end).contains(&at(row)),
                "{row} outside the folded config"
            );
        }
        assert!(
            !html.contains("<details open"),
            "the configuration starts closed"
        );
        let path = write_run_page(&dir).unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), html);
    }

    /// A run whose controller was killed mid-fault: the fault runs to the end of the history,
    /// and the table says it was never healed in it.
    #[test]
    fn a_fault_never_healed_is_tabled_to_the_end_of_the_history() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        write_run(&dir, "killed", "2026-11-29T21:29:52Z", 1);
        let ops = [
            (
                0u64,
                OpType::Invoke,
                Process::Client(0),
                "read",
                Value::Null,
            ),
            (
                1_000_000,
                OpType::Ok,
                Process::Client(0),
                "read",
                Value::Null,
            ),
            (
                500_000_000,
                OpType::Info,
                Process::Nemesis,
                "kill",
                json!("one"),
            ),
            (
                600_000_000,
                OpType::Info,
                Process::Nemesis,
                "kill",
                json!({"nodes": ["n3"]}),
            ),
            (
                2_000_000_000,
                OpType::Invoke,
                Process::Client(1),
                "read",
                Value::Null,
            ),
        ];
        std::fs::write(dir.join(HISTORY_FILE), history_text(&ops)).unwrap();
        let html = render_run_page(&dir).unwrap();
        assert!(
            html.contains(
                "<tr><td>0.600</td><td>2.000 (end of history: never healed in it)</td>\
                 <td>1.400</td>"
            ),
            "fault row"
        );
        assert!(
            html.contains("<td>0.600–2.000 (never healed)</td>"),
            "recovery row"
        );
    }

    #[test]
    fn optional_files_missing_are_omitted() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join(TEST_FILE), r#"{"name": "bare"}"#).unwrap();
        std::fs::write(
            dir.join(RESULTS_FILE),
            r#"{"valid": "unknown", "checkers": []}"#,
        )
        .unwrap();
        let html = render_run_page(dir).unwrap();
        assert!(html.contains("badge unknown"));
        assert!(!html.contains("<svg"));
        assert!(
            !html.contains("<h2 id=\"faults\">"),
            "no history → no fault section"
        );
        assert!(
            !html.contains("<h2 id=\"plots\">"),
            "no plots → no plot section"
        );
        assert!(!html.contains("history.jsonl"));
        assert!(!html.contains("linearizability.html"));
    }

    #[test]
    fn oversized_or_scripted_plot_is_linked_not_embedded() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join(TEST_FILE), r#"{"name": "x"}"#).unwrap();
        std::fs::write(
            dir.join(RESULTS_FILE),
            r#"{"valid": "valid", "checkers": []}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("throughput.svg"),
            "<svg><script>alert(1)</script></svg>",
        )
        .unwrap();
        let big = format!(
            "<svg>{}</svg>",
            " ".repeat(MAX_EMBED_SVG_BYTES as usize + 1)
        );
        std::fs::write(dir.join("latency-raw.svg"), big).unwrap();
        let html = render_run_page(dir).unwrap();
        assert!(!html.contains("<svg"));
        assert!(!html.contains("<script"));
        assert!(html.contains("href=\"throughput.svg\""));
        assert!(html.contains("href=\"latency-raw.svg\""));
        assert!(html.len() < 100_000);
    }

    #[test]
    fn missing_or_malformed_required_files_name_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join(TEST_FILE), r#"{"name": "x"}"#).unwrap();
        let err = render_run_page(dir).unwrap_err();
        assert!(err.contains("results.json"), "{err}");
        std::fs::write(dir.join(RESULTS_FILE), "{not json").unwrap();
        let err = render_run_page(dir).unwrap_err();
        assert!(
            err.contains("results.json") && err.contains("malformed"),
            "{err}"
        );
        std::fs::write(dir.join(RESULTS_FILE), r#"{"valid": "valid"}"#).unwrap();
        std::fs::write(dir.join(TEST_FILE), "[1, 2]").unwrap();
        let err = render_run_page(dir).unwrap_err();
        assert!(err.contains("test.json"), "{err}");
        std::fs::remove_file(dir.join(TEST_FILE)).unwrap();
        let err = render_run_page(dir).unwrap_err();
        assert!(err.contains("test.json"), "{err}");
        assert!(write_run_page(dir).is_err());
        assert!(!dir.join(INDEX_FILE).exists());
    }

    #[test]
    fn nasty_text_is_escaped() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let test = json!({"name": "<script>alert('x')</script>", "rerun": "a && b \"c\""});
        std::fs::write(dir.join(TEST_FILE), test.to_string()).unwrap();
        let results = json!({"valid": "<b>", "checkers": [
            {"checker": "<i>c</i>", "verdict": "valid", "summary": "1 < 2 & 3 > 2", "details": null},
            "not an object", 17
        ]});
        std::fs::write(dir.join(RESULTS_FILE), results.to_string()).unwrap();
        std::fs::create_dir_all(dir.join("logs/n\"1")).unwrap();
        std::fs::write(dir.join("logs/n\"1/a b<.log"), "x").unwrap();
        let html = render_run_page(dir).unwrap();
        assert!(!html.contains("<script"));
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        assert!(html.contains("<code>a &amp;&amp; b &quot;c&quot;</code>"));
        assert!(html.contains("badge unknown\">&lt;b&gt;</span>"));
        assert!(html.contains("<td>&lt;i&gt;c&lt;/i&gt;</td>"));
        assert!(html.contains("1 &lt; 2 &amp; 3 &gt; 2"));
        assert!(html.contains("href=\"logs/n%221/a%20b%3C.log\""));
    }

    /// Text a database, an operator or a spec author controls reaches the page only escaped:
    /// node names (in test.json, ops and fault values), error texts (op errors, checker
    /// summaries and explanations, the completion's reason and cleanup failures) and spec names
    /// (system, workload, nemesis, test) carrying tags, quotes and ampersands.
    #[test]
    fn hostile_names_errors_and_spec_names_are_escaped_in_the_run_page() {
        const P: &str = "<script>alert(\"x&'y\")</script><img src=x onerror=alert(1)>";
        let escaped = crate::report::html::esc(P);
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        write_run(&dir, P, "2026-11-29T21:29:52Z", 1);
        let node = format!("n1{P}");
        let mut test: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(TEST_FILE)).unwrap()).unwrap();
        test["db"] = json!({"name": format!("spec{P}"), "version": P});
        test["nodes"] = json!([{"name": node, "host": P}]);
        test["workload"] = json!({"name": format!("w{P}"), "spec": {"kind": P}});
        test["nemesis"] = json!({"name": format!("f{P}"), "spec": {"faults": [{"kind": P}]}});
        test["rerun"] = json!(P);
        std::fs::write(dir.join(TEST_FILE), test.to_string()).unwrap();
        let c = CompletionRecord::interrupted(1.0, 10.0)
            .with_cleanup_failures(vec![format!("{node}: {P}")]);
        let results = json!({"valid": "invalid", "reason": P, "completion": c, "checkers": [
            {"checker": "linearizable", "verdict": "invalid", "summary": format!("error {P}"),
             "details": {"explanation": format!("op on {node}: {P}")}},
            {"checker": P, "verdict": P, "summary": P, "details": {"error": P}}
        ]});
        std::fs::write(dir.join(RESULTS_FILE), results.to_string()).unwrap();
        let mut ops = Vec::new();
        for (i, (t, ty, p, f, v)) in [
            (0, OpType::Invoke, Process::Client(0), "write", json!(1)),
            (
                1_000_000,
                OpType::Info,
                Process::Client(0),
                "write",
                json!(1),
            ),
            (
                2_000_000,
                OpType::Info,
                Process::Nemesis,
                "kill",
                json!({ &node: P }),
            ),
            (
                3_000_000,
                OpType::Info,
                Process::Nemesis,
                "kill",
                json!({ &node: P }),
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let mut op = Op::new(ty, p, f, v);
            op.index = i as u64;
            op.time_ns = t;
            op.node = Some(node.as_str().into());
            if ty == OpType::Info {
                op.error = Some(P.to_string());
            }
            ops.push(serde_json::to_string(&op).unwrap());
        }
        std::fs::write(dir.join(HISTORY_FILE), ops.join("\n") + "\n").unwrap();
        let html = render_run_page(&dir).unwrap();
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("\"x&'y\""), "{html}");
        for shown in [
            format!("shakedown — {escaped}"),
            format!("spec{escaped}"),
            format!("n1{escaped}"),
            format!("w{escaped}"),
            format!("f{escaped}"),
            format!("error {escaped}"),
            format!("n1{escaped}: {escaped}"),
        ] {
            assert!(html.contains(&shown), "{shown} missing from {html}");
        }
    }

    #[test]
    fn a_fault_started_at_the_very_end_of_a_killed_run_renders() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join(TEST_FILE), r#"{"name": "killed"}"#).unwrap();
        std::fs::write(
            dir.join(RESULTS_FILE),
            r#"{"valid": "unknown", "checkers": []}"#,
        )
        .unwrap();
        let ops = [
            (0, OpType::Invoke, Process::Client(0), "read", Value::Null),
            (
                1_000_000_000,
                OpType::Ok,
                Process::Client(0),
                "read",
                Value::Null,
            ),
            (
                9_000_000_000,
                OpType::Info,
                Process::Nemesis,
                "kill",
                json!("one"),
            ),
            (
                10_000_000_000,
                OpType::Info,
                Process::Nemesis,
                "kill",
                json!({"n1": "killed"}),
            ),
        ];
        std::fs::write(dir.join(HISTORY_FILE), history_text(&ops)).unwrap();
        let html = render_run_page(dir).unwrap();
        assert!(html.contains("tl-bar"), "{html}");
    }

    #[test]
    fn a_run_stopped_on_an_anomaly_says_why_and_what_live_checking_found() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("stop/20261129T100000.000Z");
        write_run(&dir, "stop", "2026-11-29T10:00:00Z", 1);
        let c =
            CompletionRecord::stopped_on_anomaly("key 17 not linearizable at 12.3 s", 12.5, 60.0);
        let results = json!({"valid": "invalid", "completion": c,
            "live": {"checked": 40, "invalid": 1, "unknown": 0,
                     "first_invalid": {"key": "17", "at_s": 12.3}},
            "checkers": [{"checker": "linearizable", "verdict": "invalid", "summary": "bad"}]});
        std::fs::write(dir.join(RESULTS_FILE), results.to_string()).unwrap();
        let html = render_run_page(&dir).unwrap();
        assert!(html.contains(">stopped on anomaly</span></h1>"), "{html}");
        assert!(html.contains("stopped early: key 17 not linearizable at 12.3 s"));
        assert!(
            html.contains("Live checking: 40 keys checked while the run went on, 1 invalid"),
            "{html}"
        );
        assert!(html.contains("first invalid: key 17 at 12.3 s"), "{html}");
    }

    #[test]
    fn live_checking_says_how_many_valid_keys_the_final_check_did_not_search_again() {
        let section = |live: Value| {
            let mut out = String::new();
            live_section(&mut out, &json!({ "live": live }));
            out
        };
        // An older run's live.json: no reuse counts.
        let old = section(json!({"checked": 40, "invalid": 1, "unknown": 0}));
        assert!(
            old.contains("(valid and unknown keys checked again at the end)"),
            "{old}"
        );
        let unchanged = section(json!({"checked": 40, "invalid": 1, "unknown": 0,
            "reused_valid": 3, "reused_with_later_ops": 0}));
        assert!(
            unchanged.contains("3 of the 39 valid keys had no later op"),
            "{unchanged}"
        );
        let both = section(json!({"checked": 40, "invalid": 1, "unknown": 0,
            "reused_valid": 3, "reused_with_later_ops": 30}));
        assert!(
            both.contains("of the 39 valid keys, 3 had no later op and were not searched again, and 30 had later ops (final reads) that fitted the linearization found live"),
            "{both}"
        );
        // Counts beyond the valid keys (a damaged file) are capped, never underflow.
        let odd = section(json!({"checked": 2, "invalid": 0, "unknown": 0,
            "reused_valid": 5, "reused_with_later_ops": 9}));
        assert!(
            odd.contains("2 of the 2 valid keys had no later op"),
            "{odd}"
        );
    }

    #[test]
    fn incomplete_runs_are_marked_on_the_page_and_in_the_index() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        // Interrupted: results.json carries the completion and the reason.
        let cut = root.join("cut/20261129T100000.000Z");
        write_run(&cut, "cut", "2026-11-29T10:00:00Z", 1);
        let c = CompletionRecord::interrupted(5.1, 60.0)
            .with_cleanup_failures(vec!["n3: removing iptables chain: busy".into()]);
        let results = json!({"valid": "unknown", "reason": c.reason, "completion": c,
            "checkers": [{"checker": "linearizable", "verdict": "valid", "summary": "ok"}]});
        std::fs::write(cut.join(RESULTS_FILE), results.to_string()).unwrap();
        let html = render_run_page(&cut).unwrap();
        assert!(
            html.contains("<span class=\"badge unknown\">unknown</span>"),
            "{html}"
        );
        assert!(html.contains(">interrupted</span></h1>"), "{html}");
        assert!(html.contains("interrupted after 5.1 s of 60 s"));
        assert!(html.contains("Cleanup failed") && html.contains("n3: removing iptables chain"));
        // Killed: only test.json and a history, no completion record, no results.
        let killed = root.join("killed/20261129T110000.000Z");
        write_run(&killed, "killed", "2026-11-29T11:00:00Z", 2);
        std::fs::remove_file(killed.join(RESULTS_FILE)).unwrap();
        // Aborted: a completion record, no results.
        let aborted = root.join("aborted/20261129T120000.000Z");
        write_run(&aborted, "aborted", "2026-11-29T12:00:00Z", 3);
        std::fs::remove_file(aborted.join(RESULTS_FILE)).unwrap();
        RunDir::open(&aborted)
            .write_completion(&CompletionRecord::aborted(3.0, 60.0))
            .unwrap();
        let index = render_reports_index(root).unwrap();
        let row = |name: &str| {
            index
                .lines()
                .find(|l| l.starts_with(&format!("<tr><td>{name}</td>")))
                .unwrap_or_else(|| panic!("no row for {name}: {index}"))
                .to_string()
        };
        assert!(row("cut").contains(">interrupted</span>"), "{}", row("cut"));
        assert!(row("cut").contains("badge unknown\">unknown</span>"));
        assert!(
            row("killed").contains(">incomplete</span>"),
            "{}",
            row("killed")
        );
        assert!(row("killed").contains("controller killed"));
        assert!(
            row("aborted").contains(">aborted</span>"),
            "{}",
            row("aborted")
        );
        // A complete run gets no status badge.
        let done = root.join("done/20261129T130000.000Z");
        write_run(&done, "done", "2026-11-29T13:00:00Z", 4);
        let c = CompletionRecord::completed(10.0, 10.0);
        let results = json!({"valid": "valid", "completion": c, "checkers": []});
        std::fs::write(done.join(RESULTS_FILE), results.to_string()).unwrap();
        let html = render_run_page(&done).unwrap();
        assert!(!html.contains("class=\"notice\""), "{html}");
        let index = render_reports_index(root).unwrap();
        assert!(!row_of(&index, "done").contains("badge unknown"));
    }

    fn row_of(index: &str, name: &str) -> String {
        index
            .lines()
            .find(|l| l.starts_with(&format!("<tr><td>{name}</td>")))
            .unwrap_or_default()
            .to_string()
    }
}
