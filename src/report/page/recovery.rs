//! The run page's Recovery section and its full outage list.
//!
//! Owns how `report::recovery` reads on the page: the one-line summary, what the columns mean,
//! a row per fault, the outages summarised per group (a kind of op on a node, or all of either:
//! how many, how long in total, the longest), and every outage in a folded `<details>` right
//! after them. Does not own computing recovery (`report::recovery`) or the rest
//! of the page (`report::page`).

use super::{MAX_FAULT_ROWS, esc};
use crate::report::recovery::{Outage, Recovery};
use std::fmt::Write as _;

/// Most outage groups summarised in the Recovery section (the worst ones).
pub const MAX_OUTAGE_GROUPS: usize = 8;
/// Most outages listed in the folded full list.
pub const MAX_OUTAGE_ROWS: usize = 1000;
/// Id of the folded full list of outages.
pub const OUTAGES_ID: &str = "outages";

/// The outages of one group (`Outage::group`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct OutageGroup {
    /// "write on n3", "all ops on all nodes".
    pub group: String,
    /// Outages of the group.
    pub count: usize,
    /// Their total length, s.
    pub total_s: f64,
    /// The longest one.
    pub longest: Outage,
}

/// Outages grouped per (node, kind of op): the all-nodes groups first (nothing was served
/// anywhere: the outages that matter most), then the per-node ones; each worst first, by the
/// longest outage, then the total, then all kinds before one kind.
pub(super) fn outage_groups(outages: &[Outage]) -> Vec<OutageGroup> {
    let mut groups: Vec<OutageGroup> = Vec::new();
    for o in outages {
        let g = o.group();
        match groups.iter_mut().find(|x| x.group == g) {
            Some(x) => {
                x.count += 1;
                x.total_s += o.duration_s();
                if o.duration_s() > x.longest.duration_s() {
                    x.longest = o.clone();
                }
            }
            None => groups.push(OutageGroup {
                group: g,
                count: 1,
                total_s: o.duration_s(),
                longest: o.clone(),
            }),
        }
    }
    groups.sort_by(|a, b| {
        (a.longest.node.is_some())
            .cmp(&b.longest.node.is_some())
            .then_with(|| b.longest.duration_s().total_cmp(&a.longest.duration_s()))
            .then_with(|| b.total_s.total_cmp(&a.total_s))
            .then_with(|| b.longest.f.is_none().cmp(&a.longest.f.is_none()))
            .then_with(|| a.group.cmp(&b.group))
    });
    groups
}

/// " (end of history)", " (workload stopped)" or nothing: how an outage's end came about.
fn end_note(o: &Outage) -> &'static str {
    if o.open {
        " (end of history)"
    } else if o.workload_stopped {
        " (workload stopped)"
    } else {
        ""
    }
}

/// Recovery and unavailability (`report::recovery`): the one-line summary, what the columns
/// mean, a row per fault, then the outages summarised per group (the full list follows,
/// folded: [`outage_details`]).
pub(super) fn recovery_section(out: &mut String, r: &Recovery) {
    let cfg = r.config;
    out.push_str("<h2 id=\"recovery\">Recovery and unavailability</h2>\n");
    if r.faults.is_empty() && r.outages.is_empty() {
        out.push_str("<p>No faults and no outages.</p>\n");
        return;
    }
    if let Some(line) = r.summary_line() {
        let _ = writeln!(out, "<p><b>{}</b></p>", esc(&line));
    }
    let _ = writeln!(
        out,
        "<p><small>Served: ok, or a cas whose compare did not match. Outage: {} ms or more \
         without a served op of a group (a kind of op, or all; one node, or all) while some \
         failed; the final heal and settle before the final reads attempt nothing and are no \
         outage. Recovered: from the heal, every {} ms window for {} ms holds at least {}% of \
         the served ops per second of the {} s before the fault (cut at earlier fault \
         changes), or until the next fault when that comes sooner but at least half that long; \
         recovery time runs from the heal to the first served op of that stretch.\
         </small></p>",
        cfg.min_outage_ms,
        cfg.window_ms,
        cfg.sustain_ms,
        (cfg.recovered_fraction * 100.0).round(),
        cfg.baseline_s
    );
    if !r.faults.is_empty() {
        fault_rows(out, r);
    }
    if r.outages.is_empty() {
        return;
    }
    let groups = outage_groups(&r.outages);
    let kept = if (r.outages.len() as u64) < r.outages_total {
        format!(
            " (the {} longest kept of {})",
            r.outages.len(),
            r.outages_total
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "<p>Outages: {} in {} group{}{kept}; below the {} worst groups (all nodes first), \
         <a href=\"#{OUTAGES_ID}\">every outage</a> folded after them.</p>",
        r.outages.len(),
        groups.len(),
        if groups.len() == 1 { "" } else { "s" },
        groups.len().min(MAX_OUTAGE_GROUPS),
    );
    out.push_str(
        "<table><tr><th>ops</th><th>outages</th><th>total (s)</th><th>longest (s)</th>\
         <th>longest from (s)</th></tr>\n",
    );
    for g in groups.iter().take(MAX_OUTAGE_GROUPS) {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}{}</td><td>{:.3}</td></tr>",
            esc(&g.group),
            g.count,
            g.total_s,
            g.longest.duration_s(),
            end_note(&g.longest),
            g.longest.start_s
        );
    }
    out.push_str("</table>\n");
    if groups.len() > MAX_OUTAGE_GROUPS {
        let _ = writeln!(
            out,
            "<p>… {} more groups in the full list.</p>",
            groups.len() - MAX_OUTAGE_GROUPS
        );
    }
}

/// A row per fault: when, how soon it hurt, the level before and during, recovery, the longest
/// all-nodes outage.
fn fault_rows(out: &mut String, r: &Recovery) {
    let opt = |x: Option<f64>, digits: usize| match x {
        Some(v) => format!("{v:.digits$}"),
        None => "–".to_string(),
    };
    out.push_str(
        "<table><tr><th>fault</th><th>in effect (s)</th><th>first failure after (s)</th>\
         <th>served ops/s before</th><th>during</th><th>recovery after heal (s)</th>\
         <th>longest outage (all nodes)</th></tr>\n",
    );
    for f in r.faults.iter().take(MAX_FAULT_ROWS) {
        let recovery = match (f.recovery_s, &f.not_recovered) {
            (Some(v), _) => match f.sustained_s {
                // Cut short by the next fault: say how long it was seen to hold.
                Some(held) if held + 1e-9 < r.config.sustain_ms as f64 / 1e3 => {
                    format!("{v:.3} (held {held:.1} s until the next fault)")
                }
                _ => format!("{v:.3}"),
            },
            (None, Some(why)) if f.measured => format!("not recovered: {why}"),
            (None, Some(why)) => format!("not measured: {why}"),
            (None, None) => "–".to_string(),
        };
        let outage = f.longest_outage.as_ref().map_or("–".to_string(), |o| {
            format!(
                "{:.3} s ({}, from {:.3} s)",
                o.duration_s(),
                o.group(),
                o.start_s
            )
        });
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{:.3}–{:.3}{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td></tr>",
            // "pause n3", not "pause pause n3"; "partition n1 n2 | n3 n4 n5".
            if f.label.starts_with(f.kind.as_str()) {
                esc(&f.label)
            } else {
                format!("{} {}", esc(&f.kind), esc(&f.label))
            },
            f.start_s,
            f.end_s,
            if f.healed { "" } else { " (never healed)" },
            opt(f.first_failure_s, 3),
            opt(f.baseline_ops_per_s, 1)
                + if f.baseline_inherited {
                    " (the previous fault's: it never recovered)"
                } else {
                    ""
                },
            opt(f.during_ops_per_s, 1),
            esc(&recovery),
            esc(&outage)
        );
    }
    out.push_str("</table>\n");
}

/// Every outage (at most [`MAX_OUTAGE_ROWS`]), by start time, folded in a `<details>`; nothing
/// without outages.
pub(super) fn outage_details(out: &mut String, r: &Recovery) {
    if r.outages.is_empty() {
        return;
    }
    let mut all: Vec<&Outage> = r.outages.iter().collect();
    all.sort_by(|a, b| {
        a.start_s
            .total_cmp(&b.start_s)
            .then_with(|| b.duration_s().total_cmp(&a.duration_s()))
    });
    let shown = all.len().min(MAX_OUTAGE_ROWS);
    let _ = writeln!(
        out,
        "<details id=\"{OUTAGES_ID}\"><summary>Every outage ({} of {}, by start time)</summary>\n\
         <table><tr><th>ops</th><th>from (s)</th><th>to (s)</th><th>length (s)</th>\
         <th>failed ops</th></tr>",
        shown, r.outages_total
    );
    for o in all.into_iter().take(shown) {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{:.3}</td><td>{:.3}{}</td><td>{:.3}</td><td>{}</td></tr>",
            esc(&o.group()),
            o.start_s,
            o.end_s,
            end_note(o),
            o.duration_s(),
            o.failed_ops
        );
    }
    out.push_str("</table></details>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outage(node: Option<&str>, f: Option<&str>, start_s: f64, end_s: f64) -> Outage {
        Outage {
            node: node.map(str::to_string),
            f: f.map(str::to_string),
            start_s,
            end_s,
            open: false,
            workload_stopped: false,
            failed_ops: 3,
        }
    }

    #[test]
    fn outages_group_per_node_and_kind_worst_first() {
        let outages = [
            outage(Some("n1"), Some("read"), 1.0, 2.0),
            outage(Some("n1"), Some("read"), 5.0, 8.0),
            outage(None, None, 5.5, 7.5),
            outage(Some("n2"), None, 3.0, 6.0),
            outage(None, Some("write"), 10.0, 11.0),
        ];
        let groups = outage_groups(&outages);
        let got: Vec<(&str, usize, f64, f64)> = groups
            .iter()
            .map(|g| (g.group.as_str(), g.count, g.total_s, g.longest.duration_s()))
            .collect();
        assert_eq!(
            got,
            [
                // All nodes first, then per node: longest 3 s, total 4 s, before all ops on n2
                // (longest 3 s, total 3 s).
                ("all ops on all nodes", 1, 2.0, 2.0),
                ("write on all nodes", 1, 1.0, 1.0),
                ("read on n1", 2, 4.0, 3.0),
                ("all ops on n2", 1, 3.0, 3.0),
            ]
        );
        assert_eq!(groups[2].longest.start_s, 5.0);
    }

    fn recovery_with(outages: Vec<Outage>) -> Recovery {
        let total = outages.len() as u64;
        Recovery {
            config: Default::default(),
            faults: Vec::new(),
            outages,
            outages_total: total,
            recovery_p50_s: None,
            recovery_max_s: None,
            recovered: 0,
            not_recovered: 0,
            not_measured: 0,
            down_at_end: Vec::new(),
        }
    }

    #[test]
    fn many_outages_are_summarised_and_listed_in_full_folded() {
        // 90 outages over 30 groups (3 kinds × 10 nodes), 3 each.
        let mut outages = Vec::new();
        for n in 0..10 {
            for f in ["read", "write", "cas"] {
                for k in 0..3 {
                    let start = (n * 3 + k) as f64;
                    let node = format!("n{n}");
                    outages.push(outage(
                        Some(&node),
                        Some(f),
                        start,
                        start + 1.0 + n as f64 / 10.0,
                    ));
                }
            }
        }
        let mut last = outage(None, None, 60.0, 63.0);
        last.workload_stopped = true;
        outages.push(last);
        let r = recovery_with(outages);
        let mut html = String::new();
        recovery_section(&mut html, &r);
        assert!(
            html.contains("Outages: 91 in 31 groups; below the 8 worst groups (all nodes first)"),
            "{html}"
        );
        assert_eq!(
            html.matches("<tr><td>").count(),
            MAX_OUTAGE_GROUPS,
            "{html}"
        );
        assert!(html.contains("… 23 more groups in the full list."));
        assert!(html.contains("<td>all ops on all nodes</td><td>1</td><td>3.000</td><td>3.000 (workload stopped)</td>"), "{html}");
        assert!(!html.contains("<details"));
        let mut details = String::new();
        outage_details(&mut details, &r);
        assert!(details.starts_with(
            "<details id=\"outages\"><summary>Every outage (91 of 91, by start time)</summary>"
        ));
        assert_eq!(details.matches("<tr><td>").count(), 91);
        let mut none = String::new();
        outage_details(&mut none, &recovery_with(Vec::new()));
        assert_eq!(none, "");
    }
}
