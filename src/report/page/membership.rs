//! The run page's Membership part (under Faults, for runs with the `membership` fault): a strip
//! per node over the run — member, being removed (pending), removed, being added (pending) —
//! and a table of every change with its outcome (ok: confirmed by the views; fail: refused,
//! nothing changed; info: not confirmed, it may still commit), the node it went through and the
//! members after it.
//!
//! The analysis is the core's (`faults::membership::timeline`); this file only draws it.

use super::esc;
use crate::faults::membership::timeline::{NodeState, Outcome, Timeline};
use std::fmt::Write as _;

/// The colour of a state, as CSS.
fn colour(s: NodeState) -> &'static str {
    match s {
        NodeState::Member => "#8fd19e",
        NodeState::Leaving => "#f0ad4e",
        NodeState::Removed => "#b0b0b0",
        NodeState::Joining => "#5bc0de",
    }
}

fn outcome_words(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok (confirmed)",
        Outcome::Fail => "fail (refused: nothing changed)",
        Outcome::Info => "info (not confirmed: may still commit)",
    }
}

/// The membership strip and table, when the history has membership changes; `end_s` is the
/// end of the run's time axis (the fault timeline's, so the two line up).
pub(super) fn membership_section(out: &mut String, t: &Timeline, end_s: f64) {
    if t.is_empty() {
        return;
    }
    let span = t
        .segments
        .iter()
        .map(|s| s.to_s)
        .chain(t.changes.iter().map(|c| c.end_s))
        .fold(end_s, f64::max)
        .max(1e-9);
    out.push_str("<h3 id=\"membership\">Membership</h3>\n<p class=\"legend\">");
    for s in [
        NodeState::Member,
        NodeState::Leaving,
        NodeState::Removed,
        NodeState::Joining,
    ] {
        let _ = write!(
            out,
            "<span class=\"swatch\" style=\"background:{}\"></span>{} ",
            colour(s),
            s.describe()
        );
    }
    out.push_str("</p>\n");
    let _ = writeln!(
        out,
        "<div class=\"timeline\"><div class=\"tl-axis\">0 s<span>{span:.1} s</span></div>"
    );
    for node in &t.nodes {
        let _ = write!(
            out,
            "<div class=\"tl-row\"><span class=\"tl-name\">{}</span><div class=\"tl-track\" \
             style=\"background:{}\">",
            esc(node),
            colour(NodeState::Member)
        );
        for s in t.segments.iter().filter(|s| &s.node == node) {
            if s.state == NodeState::Member {
                continue;
            }
            let (left, width) = super::faults::bar_place(s.from_s, s.to_s, span);
            let _ = write!(
                out,
                "<span class=\"tl-bar\" style=\"left:{left:.3}%;width:{width:.3}%;\
                 background:{};opacity:1\" title=\"{} {}: {:.3}–{:.3} s\"></span>",
                colour(s.state),
                esc(node),
                s.state.describe(),
                s.from_s,
                s.to_s
            );
        }
        out.push_str("</div></div>\n");
    }
    out.push_str("</div>\n");
    out.push_str(
        "<table><tr><th>start (s)</th><th>end (s)</th><th>change</th><th>node</th>\
         <th>through</th><th>outcome</th><th>members after / why</th></tr>\n",
    );
    for c in &t.changes {
        let after = match (&c.error, &c.members) {
            (Some(e), _) => e.clone(),
            (None, Some(m)) => m.join(" "),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "<tr><td>{:.3}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            c.start_s,
            c.end_s,
            esc(&c.f),
            esc(&c.nodes.join(" ")),
            esc(&c.via.join(" ")),
            outcome_words(c.outcome),
            esc(&after)
        );
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::membership::timeline::timeline;
    use crate::faults::verb;
    use crate::history::{History, Op, OpType, Process};
    use serde_json::json;

    fn nem(t_ms: u64, ty: OpType, f: &str, v: serde_json::Value) -> Op {
        let mut o = Op::new(ty, Process::Nemesis, f, v);
        o.time_ns = t_ms * 1_000_000;
        o
    }

    #[test]
    fn a_removal_and_its_return_are_drawn_per_node_and_listed() {
        let h = History::from_ops(vec![
            nem(1_000, OpType::Invoke, verb::SHRINK_CLUSTER, json!(null)),
            nem(
                2_000,
                OpType::Info,
                verb::SHRINK_CLUSTER,
                json!({"node": "n3", "via": "n1", "members": ["n1", "n2"], "pending": []}),
            ),
            nem(6_000, OpType::Invoke, verb::GROW_CLUSTER, json!(null)),
            nem(
                8_000,
                OpType::Info,
                verb::GROW_CLUSTER,
                json!({"added": ["n3"], "members": ["n1", "n2", "n3"], "pending": []}),
            ),
        ]);
        let mut html = String::new();
        membership_section(&mut html, &timeline(&h), 10.0);
        assert_eq!(html.matches("class=\"tl-row\"").count(), 3, "{html}");
        // n3 removed from 2 s to 6 s: 20 % from the left, 40 % wide.
        assert!(
            html.contains("left:20.000%;width:40.000%;background:#b0b0b0"),
            "{html}"
        );
        assert!(html.contains("<td>shrink-cluster</td><td>n3</td><td>n1</td><td>ok (confirmed)"));
        assert!(html.contains("<td>n1 n2 n3</td>"), "{html}");
        let mut none = String::new();
        membership_section(&mut none, &Timeline::default(), 10.0);
        assert!(none.is_empty());
    }
}
