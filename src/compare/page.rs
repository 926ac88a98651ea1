//! The pages of `shakedown compare`: `index.html` (claimed vs observed per cell, with links to
//! every run page and the first refuting run) and `junit.xml` (one test case per cell and claim:
//! refuted is a failure, unknown an error). Self-contained HTML like the run page: inline CSS,
//! no scripts.
//!
//! Owns rendering a [`MatrixRecord`]. Does not run, judge or fold (`compare`, `app::compare`)
//! or write files. Pure: text out; `href` maps a run directory to a link. Lives with compare,
//! not in `report`: the report renders run directories and imports nothing from compare; this
//! page borrows the report's escaping and style.

use crate::compare::outcome::{CellRecord, MatrixRecord};
use crate::report::html::esc;
use crate::report::page::CSS;
use std::fmt::Write as _;

fn class(status: &str) -> &'static str {
    match status {
        "held" => "valid",
        "refuted" => "invalid",
        _ => "unknown",
    }
}

/// The matrix page. `href(run_dir)` is the link to a run's directory, relative to the page;
/// `resume` the command that continues this compare.
pub fn page(m: &MatrixRecord, href: &dyn Fn(&str) -> String, resume: &str) -> String {
    let mut out = String::new();
    write_header(&mut out, m);
    // Flags every cell shares go in the header; the table shows what differs.
    let common = common_flags(m);
    if !common.is_empty() || !m.run_args.is_empty() {
        let _ = write!(
            out,
            "<p>Every cell runs <code>shakedown run {}",
            esc(&flags_words(&common))
        );
        if !m.run_args.is_empty() {
            let _ = write!(out, " … {}", esc(&m.run_args.join(" ")));
        }
        out.push_str("</code> plus its own flags");
        if !m.run_args.is_empty() {
            out.push_str(" (flags after <code>…</code> were given on the command line and replace the spec's)");
        }
        out.push_str(".</p>\n");
    }
    if m.interrupted {
        let _ = writeln!(
            out,
            "<p class=\"notice\">Interrupted before every run was done; continue with \
             <code>{}</code></p>",
            esc(resume)
        );
    }
    out.push_str(
        "<table><tr><th>cell</th><th>flags</th><th>claim</th><th>observed</th><th>runs</th></tr>\n",
    );
    for c in &m.cells {
        write_cell_rows(&mut out, c, &common, href);
    }
    out.push_str("</table>\n");
    out.push_str(
        "<p>A claim <b>held</b> only when every seed's run completed and its checker found no \
         violation; one violation in any seed <b>refutes</b> it; anything else (an interrupted \
         run, a checker that could not decide, a seed not run) leaves it <b>unknown</b>. \
         <code>matrix.json</code> holds the same data; <code>junit.xml</code> has one test case per \
         cell and claim.</p>\n</body></html>\n",
    );
    out
}

/// The page's head, title with the overall verdict, and the line of what was run.
fn write_header(out: &mut String, m: &MatrixRecord) {
    let overall = match m.exit_code() {
        0 => "held",
        1 => "refuted",
        _ => "unknown",
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>shakedown compare — {}</title>\
         <style>{CSS}</style></head><body>\n<h1>{} <span class=\"badge {}\">{}</span></h1>\n",
        esc(&m.title),
        esc(&m.title),
        class(overall),
        if overall == "held" {
            "every claim held"
        } else if overall == "refuted" {
            "claims refuted"
        } else {
            "undecided"
        }
    );
    let runs: usize = m.cells.iter().map(|c| c.runs.len()).sum();
    let _ = writeln!(
        out,
        "<p>Spec <code>{}</code> · {} cells × {} seeds ({}) · {} runs done · {:.0} s of runs · {}</p>",
        esc(&m.spec),
        m.cells.len(),
        m.seeds.len(),
        esc(&m
            .seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")),
        runs,
        m.total_s,
        esc(&m.totals_text())
    );
}

/// The flags every cell shares (none when there is one cell).
fn common_flags(m: &MatrixRecord) -> Vec<(String, String)> {
    match m.cells.first() {
        Some(first) if m.cells.len() > 1 => first
            .cell
            .flags
            .iter()
            .filter(|f| m.cells.iter().all(|c| c.cell.flags.contains(f)))
            .cloned()
            .collect(),
        _ => vec![],
    }
}

/// `flags` as `shakedown run` words.
fn flags_words(flags: &[(String, String)]) -> String {
    crate::compare::spec::Cell {
        name: String::new(),
        flags: flags.to_vec(),
        claims: vec![],
    }
    .flags_text()
}

/// A cell's rows: one per claim, the cell's name, its own flags and its runs' badges spanning
/// them.
fn write_cell_rows(
    out: &mut String,
    c: &CellRecord,
    common: &[(String, String)],
    href: &dyn Fn(&str) -> String,
) {
    let runs_html = run_badges(c, href);
    let span = c.outcomes.len().max(1);
    for (i, o) in c.outcomes.iter().enumerate() {
        let witness = o
            .witness_run
            .as_deref()
            .map(|d| format!(" <a href=\"{}/index.html\">witness →</a>", esc(&href(d))))
            .unwrap_or_default();
        let head = if i == 0 {
            let versions = match c.versions().as_slice() {
                [] => String::new(),
                vs => format!(
                    "<br><small class=\"version\">tested: {}</small>",
                    esc(&vs.join("; "))
                ),
            };
            format!(
                "<td rowspan=\"{span}\">{}{versions}</td><td rowspan=\"{span}\"><code>{}</code></td>",
                esc(&c.cell.name),
                esc(&flags_words(
                    &c.cell
                        .flags
                        .iter()
                        .filter(|f| !common.contains(f))
                        .cloned()
                        .collect::<Vec<_>>()
                ))
            )
        } else {
            String::new()
        };
        let tail = if i == 0 {
            format!("<td rowspan=\"{span}\">{runs_html}</td>")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<tr>{head}<td>{}</td><td><span class=\"badge {}\">{}</span> {}{witness}</td>{tail}</tr>",
            esc(o.claim.name()),
            class(&o.status),
            esc(&o.status),
            esc(&o.text)
        );
    }
}

/// A badge per run of the cell (seed and verdict), linking to its run page when it has one.
fn run_badges(c: &CellRecord, href: &dyn Fn(&str) -> String) -> String {
    c
        .runs
        .iter()
        .map(|r| {
            let mark = match r.verdict {
                crate::checker::Verdict::Valid => "valid",
                crate::checker::Verdict::Invalid => "invalid",
                crate::checker::Verdict::Unknown => "unknown",
            };
            let label = format!("seed {} {}", r.seed, mark);
            let title = match &r.error {
                Some(e) => format!("{} · {}", r.completion, e),
                None => format!("{} · {:.1} s", r.completion, r.duration_s),
            };
            match &r.run_dir {
                Some(d) => format!(
                    "<a href=\"{}/index.html\" title=\"{}\"><span class=\"badge {mark}\">{}</span></a>",
                    esc(&href(d)),
                    esc(&title),
                    esc(&label)
                ),
                None => format!(
                    "<span class=\"badge {mark}\" title=\"{}\">{}</span>",
                    esc(&title),
                    esc(&label)
                ),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One `<testcase>` per cell and claim: refuted → failure, unknown → error.
pub fn junit(m: &MatrixRecord) -> String {
    let esc = crate::report::html::esc_xml;
    let cases: Vec<_> = m
        .cells
        .iter()
        .flat_map(|c| c.outcomes.iter().map(move |o| (c, o)))
        .collect();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuite name=\"compare: {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3}\">",
        esc(&m.title),
        cases.len(),
        m.refuted,
        m.unknown,
        m.total_s
    );
    for (c, o) in cases {
        let _ = write!(
            xml,
            "  <testcase classname=\"{}\" name=\"{}\">",
            esc(&c.cell.name),
            esc(o.claim.name())
        );
        match o.status.as_str() {
            "held" => {}
            "refuted" => {
                let _ = write!(
                    xml,
                    "\n    <failure message=\"{}\">{}</failure>\n  ",
                    esc(&o.text),
                    esc(&o.witness_run.clone().unwrap_or_default())
                );
            }
            _ => {
                let _ = write!(xml, "\n    <error message=\"{}\"/>\n  ", esc(&o.text));
            }
        }
        xml.push_str("</testcase>\n");
    }
    xml.push_str("</testsuite>\n");
    xml
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::Verdict;
    use crate::compare::claim::{Claim, Observed};
    use crate::compare::outcome::{CellRecord, RunRecord};
    use crate::compare::spec::Cell;

    fn matrix() -> MatrixRecord {
        let cell = |name: &str, o: Observed| {
            let mut c = CellRecord::new(Cell {
                name: name.into(),
                flags: vec![("read-mode".into(), "serializable".into())],
                claims: vec![Claim::Linearizable],
            });
            c.runs.push(RunRecord {
                seed: 1,
                run_dir: Some(format!("/r/{name}")),
                exit_code: Some(1),
                verdict: Verdict::Invalid,
                completion: "completed".into(),
                duration_s: 5.0,
                observed: vec![(Claim::Linearizable, o)],
                error: None,
                version: Some(format!("etcd {name} 3.5.0")),
            });
            c
        };
        let mut m = MatrixRecord {
            title: "etcd <reads>".into(),
            spec: "compare/etcd-reads.toml".into(),
            seeds: vec![1],
            cells: vec![
                cell("ser", Observed::Refuted("stale read".into())),
                cell("lin", Observed::Held),
                cell("cut", Observed::Unknown("run not completed".into())),
            ],
            run_args: vec!["--time-limit".into(), "5".into()],
            total_s: 15.0,
            interrupted: true,
            held: 0,
            refuted: 0,
            unknown: 0,
        };
        m.refold();
        m
    }

    #[test]
    fn the_page_shows_claimed_vs_observed_links_runs_and_escapes() {
        let html = page(
            &matrix(),
            &|d| format!("..{d}"),
            "shakedown compare x --resume y",
        );
        assert!(html.contains("etcd &lt;reads&gt;"), "title escaped");
        assert!(html.contains("refuted in 1/1: seed 1: stale read"));
        assert!(html.contains("<a href=\"../r/ser/index.html\">witness →</a>"));
        assert!(html.contains("held in 1/1 seeds"));
        assert!(
            html.contains("<small class=\"version\">tested: etcd ser 3.5.0</small>"),
            "each cell shows the version its runs tested"
        );
        assert!(
            html.contains("--resume y"),
            "an interrupted compare says how to resume"
        );
        assert!(
            html.contains("<code>shakedown run --read-mode serializable … --time-limit 5</code>"),
            "shared and command-line flags are shown once: {html}"
        );
        assert!(!html.contains("<script"));
    }

    #[test]
    fn junit_fails_refuted_claims_and_errors_unknown_ones() {
        let xml = junit(&matrix());
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let suite = doc.root_element();
        assert_eq!(suite.attribute("tests"), Some("3"));
        assert_eq!(suite.attribute("failures"), Some("1"));
        assert_eq!(suite.attribute("errors"), Some("1"));
        let failed: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("failure"))
            .map(|n| n.parent().unwrap().attribute("classname").unwrap())
            .collect();
        assert_eq!(failed, ["ser"]);
    }
}
