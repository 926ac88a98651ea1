//! The membership fault as a history shows it: every change the nemesis issued
//! (`shrink-cluster` / `grow-cluster`) with its outcome — ok (the views confirmed it), fail (the
//! system or the model refused it: nothing changed) or info (issued, not confirmed: it may still
//! commit) — and each node's membership over the run, for the run page's strip and the counts in
//! results.json.
//!
//! Nemesis ops are `info` on both ends (Jepsen's convention), so the outcome is read from the
//! completion: no `error` is ok; an error with [`REFUSED_KEY`] is a definite fail; any other
//! error is unknown. The node states come from what the completions carry: the merged view
//! (`members`) and the changes still pending (`pending`) after each change; while a change's op
//! runs its node is changing. Histories written before completions carried `pending` still give
//! members and removed nodes.
//!
//! Pure: reads a [`History`], no IO. Does not own the model the nemesis keeps while it runs
//! (`faults::membership::Membership`) nor the drawing (the shell's report).

use super::Change;
use crate::faults::{REFUSED_KEY, verb};
use crate::history::{History, Op, OpType, Process};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Key of the changes still pending after a membership op, in its completion value.
pub const PENDING_KEY: &str = "pending";
/// Key of the merged view (the members) after a membership op, in its completion value.
pub const MEMBERS_KEY: &str = "members";
/// Key of the member a change went through, in its completion value (see [`via_value`]).
pub const VIA_KEY: &str = "via";
/// Key marking a removal asked again (it was still pending from an earlier op), in its
/// completion value.
pub const ASKED_AGAIN_KEY: &str = "asked_again";

/// The [`VIA_KEY`] value for the members a change's requests went through, in order: the name
/// when they all went through one member (a shrink always; a grow usually), else the distinct
/// names in order; `None` when no request was sent.
pub fn via_value(vias: &[String]) -> Option<Value> {
    let mut distinct: Vec<&String> = Vec::new();
    for v in vias {
        if !distinct.contains(&v) {
            distinct.push(v);
        }
    }
    match distinct.as_slice() {
        [] => None,
        [one] => Some(Value::String(one.to_string())),
        many => Some(Value::from(
            many.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
        )),
    }
}

/// The members a completion value says the change went through ([`via_value`]'s forms: a name
/// or a list of names); empty when it does not say.
pub fn via_of(value: &Value) -> Vec<String> {
    match value.get(VIA_KEY) {
        Some(Value::String(one)) => vec![one.clone()],
        Some(many) => strings(many).unwrap_or_default(),
        None => Vec::new(),
    }
}

/// What became of one change, as the history says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The views confirmed it.
    Ok,
    /// Refused before anything changed.
    Fail,
    /// Issued, not confirmed (or the op never completed): it may have taken effect.
    Info,
}

/// One membership op of the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangeRecord {
    /// `shrink-cluster` or `grow-cluster`.
    pub f: String,
    /// The nodes it removed or added (empty when the history does not say: refused, or a grow
    /// with nothing to add).
    pub nodes: Vec<String>,
    /// The members the requests went through, in order, each once (a shrink's one member; a
    /// grow's, one per node added, usually the same); empty when the history does not say.
    pub via: Vec<String>,
    /// When it was invoked and when it completed (the end of the history if it never did), s.
    pub start_s: f64,
    /// See `start_s`.
    pub end_s: f64,
    /// What became of it.
    pub outcome: Outcome,
    /// The members after it, when the completion says.
    pub members: Option<Vec<String>>,
    /// Why it failed or is unknown.
    pub error: Option<String>,
}

/// A node's place in the cluster over one stretch of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeState {
    /// A member.
    Member,
    /// Being removed: the op runs, or the removal is pending.
    Leaving,
    /// Not a member.
    Removed,
    /// Being added: the op runs, or the addition is pending.
    Joining,
}

impl NodeState {
    /// Words for a legend or a tooltip.
    pub fn describe(self) -> &'static str {
        match self {
            NodeState::Member => "member",
            NodeState::Leaving => "being removed (pending)",
            NodeState::Removed => "removed",
            NodeState::Joining => "being added (pending)",
        }
    }
}

/// One stretch of one node's membership.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Segment {
    /// The node.
    pub node: String,
    /// Its state from `from_s` to `to_s` (seconds since the run started).
    pub state: NodeState,
    /// See `state`.
    pub from_s: f64,
    /// See `state`.
    pub to_s: f64,
}

/// Every change and every node's membership over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timeline {
    /// The changes, in the order they were invoked.
    pub changes: Vec<ChangeRecord>,
    /// The nodes the changes and views name, in natural order.
    pub nodes: Vec<String>,
    /// Each node's stretches, in time order per node; a node in none was a member throughout.
    pub segments: Vec<Segment>,
}

/// Changes by verb and outcome.
pub type Counts = BTreeMap<String, BTreeMap<Outcome, u64>>;

impl Timeline {
    /// Nothing to show: the history has no membership op.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// How many changes of each verb ended with each outcome (every outcome listed, 0 too).
    pub fn counts(&self) -> Counts {
        let mut out = Counts::new();
        for c in &self.changes {
            let per = out.entry(c.f.clone()).or_insert_with(|| {
                [Outcome::Ok, Outcome::Fail, Outcome::Info]
                    .into_iter()
                    .map(|o| (o, 0))
                    .collect()
            });
            *per.entry(c.outcome).or_default() += 1;
        }
        out
    }
}

fn is_membership(f: &str) -> bool {
    f == verb::SHRINK_CLUSTER || f == verb::GROW_CLUSTER
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array().map(|a| {
        a.iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect()
    })
}

/// What a nemesis completion says happened: ok without an error, fail when it refused
/// ([`REFUSED_KEY`]), info otherwise.
pub fn outcome_of(done: &Op) -> Outcome {
    match &done.error {
        None if done.op_type != OpType::Fail => Outcome::Ok,
        _ if done.value[REFUSED_KEY] == Value::Bool(true) || done.op_type == OpType::Fail => {
            Outcome::Fail
        }
        _ => Outcome::Info,
    }
}

fn record(invoke: &Op, done: Option<&Op>, end_ns: u64) -> ChangeRecord {
    let v = done.map_or(&Value::Null, |d| &d.value);
    let nodes = match (v.get("node").and_then(Value::as_str), strings(&v["added"])) {
        (Some(n), _) => vec![n.to_string()],
        (None, Some(added)) => added,
        (None, None) => Vec::new(),
    };
    ChangeRecord {
        f: invoke.f.to_string(),
        nodes,
        via: via_of(v),
        start_s: invoke.time_ns as f64 / 1e9,
        end_s: done.map_or(end_ns, |d| d.time_ns) as f64 / 1e9,
        outcome: done.map_or(Outcome::Info, outcome_of),
        members: strings(&v[MEMBERS_KEY]),
        error: done.and_then(|d| d.error.clone()),
    }
}

/// Natural order: `n2` before `n10`.
fn natural(a: &String, b: &String) -> std::cmp::Ordering {
    let split = |s: &str| {
        let d = s.trim_end_matches(|c: char| c.is_ascii_digit());
        (d.to_string(), s[d.len()..].parse::<u64>().ok())
    };
    split(a).cmp(&split(b)).then_with(|| a.cmp(b))
}

/// The membership changes of `history` and every node's state over the run.
pub fn timeline(history: &History) -> Timeline {
    let end_ns = history.ops.iter().map(|o| o.time_ns).max().unwrap_or(0);
    let mut changes = Vec::new();
    // (record, pending changes after it) in invocation order.
    let mut after: Vec<Option<Vec<Change>>> = Vec::new();
    // The membership op invoked and not completed yet. Nemesis ops are `info` on both ends:
    // the op after an invocation with the same `f` is its completion (as in
    // `faults::intervals`); any other nemesis op is an invocation.
    let mut open: Option<&Op> = None;
    let mut last_f: Option<&str> = None;
    for op in &history.ops {
        if op.process != Process::Nemesis {
            continue;
        }
        let completes = op.op_type != OpType::Invoke && last_f == Some(op.f.as_str());
        if completes {
            last_f = None;
            if let Some(i) = open.take() {
                changes.push(record(i, Some(op), end_ns));
                after.push(
                    serde_json::from_value::<Vec<Change>>(op.value[PENDING_KEY].clone()).ok(),
                );
            }
            continue;
        }
        // A nemesis op invoked while a membership op never completed: that one never will.
        if let Some(i) = open.take() {
            changes.push(record(i, None, end_ns));
            after.push(None);
        }
        last_f = Some(op.f.as_str());
        if is_membership(&op.f) {
            open = Some(op);
        }
    }
    if let Some(i) = open {
        changes.push(record(i, None, end_ns));
        after.push(None);
    }
    let mut names: BTreeSet<String> = BTreeSet::new();
    for c in &changes {
        names.extend(c.nodes.iter().cloned());
        names.extend(c.via.iter().cloned());
        names.extend(c.members.iter().flatten().cloned());
    }
    let mut nodes: Vec<String> = names.into_iter().collect();
    nodes.sort_by(natural);
    let segments = segments(&nodes, &changes, &after, end_ns as f64 / 1e9);
    Timeline {
        changes,
        nodes,
        segments,
    }
}

/// Every node's stretches: a member until the history says otherwise.
fn segments(
    nodes: &[String],
    changes: &[ChangeRecord],
    after: &[Option<Vec<Change>>],
    end_s: f64,
) -> Vec<Segment> {
    let mut state: BTreeMap<&str, (NodeState, f64)> = nodes
        .iter()
        .map(|n| (n.as_str(), (NodeState::Member, 0.0)))
        .collect();
    let mut out = Vec::new();
    let mut set = |state: &mut BTreeMap<&str, (NodeState, f64)>, n: &str, s: NodeState, t: f64| {
        if let Some((old, since)) = state.get(n).copied()
            && old != s
        {
            out.push(Segment {
                node: n.to_string(),
                state: old,
                from_s: since,
                to_s: t,
            });
            if let Some(e) = state.get_mut(n) {
                *e = (s, t);
            }
        }
    };
    for (c, pending) in changes.iter().zip(after) {
        if c.outcome == Outcome::Fail {
            continue;
        }
        let moving = if c.f == verb::SHRINK_CLUSTER {
            NodeState::Leaving
        } else {
            NodeState::Joining
        };
        for n in &c.nodes {
            set(&mut state, n, moving, c.start_s);
        }
        let Some(members) = &c.members else {
            continue;
        };
        for n in nodes {
            let s = match pending.iter().flatten().find(|p| p.node() == n) {
                Some(Change::Remove(_)) => NodeState::Leaving,
                Some(Change::Add(_)) => NodeState::Joining,
                None if members.contains(n) => NodeState::Member,
                // No pending list (an older history): a node still changing stays so.
                None if pending.is_none() && state.get(n.as_str()).map(|s| s.0) == Some(moving) => {
                    moving
                }
                None => NodeState::Removed,
            };
            set(&mut state, n, s, c.end_s);
        }
    }
    for (n, (s, since)) in state {
        if s != NodeState::Member || since > 0.0 {
            out.push(Segment {
                node: n.to_string(),
                state: s,
                from_s: since,
                to_s: end_s.max(since),
            });
        }
    }
    out.sort_by(|a, b| natural(&a.node, &b.node).then_with(|| a.from_s.total_cmp(&b.from_s)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nem(t_ms: u64, ty: OpType, f: &str, v: Value, error: Option<&str>) -> Op {
        let mut o = Op::new(ty, Process::Nemesis, f, v);
        o.time_ns = t_ms * 1_000_000;
        o.error = error.map(str::to_string);
        o
    }

    /// An invocation as the interpreter writes it: nemesis ops are `info` on both ends.
    fn inv(t: u64, f: &str) -> Op {
        nem(t, OpType::Info, f, json!({"allow_minority": false}), None)
    }

    fn done(t: u64, f: &str, v: Value) -> Op {
        nem(t, OpType::Info, f, v, None)
    }

    fn history(ops: Vec<Op>) -> History {
        History::from_ops(ops)
    }

    /// Shrink n1 (confirmed), a refused shrink, grow n1 back: outcomes, counts and n1's strip.
    #[test]
    fn confirmed_changes_give_leaving_removed_joining_member() {
        let five = json!(["n1", "n2", "n3", "n4", "n5"]);
        let h = history(vec![
            inv(1_000, verb::SHRINK_CLUSTER),
            done(
                1_500,
                verb::SHRINK_CLUSTER,
                json!({"node": "n1", "via": "n4", "members": ["n2", "n3", "n4", "n5"],
                       "pending": []}),
            ),
            inv(2_000, verb::SHRINK_CLUSTER),
            nem(
                2_100,
                OpType::Info,
                verb::SHRINK_CLUSTER,
                json!({REFUSED_KEY: true}),
                Some("a membership change is still pending"),
            ),
            inv(3_000, verb::GROW_CLUSTER),
            done(
                3_400,
                verb::GROW_CLUSTER,
                json!({"added": ["n1"], "via": "n2", "members": five, "pending": []}),
            ),
            nem(5_000, OpType::Invoke, "start-partition", json!("one"), None),
        ]);
        let t = timeline(&h);
        assert_eq!(t.nodes, ["n1", "n2", "n3", "n4", "n5"]);
        let outcomes: Vec<Outcome> = t.changes.iter().map(|c| c.outcome).collect();
        assert_eq!(outcomes, [Outcome::Ok, Outcome::Fail, Outcome::Ok]);
        assert_eq!(t.changes[0].via, ["n4"]);
        assert_eq!(t.changes[2].via, ["n2"], "the grow's member");
        let counts = t.counts();
        assert_eq!(counts[verb::SHRINK_CLUSTER][&Outcome::Ok], 1);
        assert_eq!(counts[verb::SHRINK_CLUSTER][&Outcome::Fail], 1);
        assert_eq!(counts[verb::GROW_CLUSTER][&Outcome::Info], 0);
        let n1: Vec<(NodeState, f64, f64)> = t
            .segments
            .iter()
            .filter(|s| s.node == "n1")
            .map(|s| (s.state, s.from_s, s.to_s))
            .collect();
        assert_eq!(
            n1,
            [
                (NodeState::Member, 0.0, 1.0),
                (NodeState::Leaving, 1.0, 1.5),
                (NodeState::Removed, 1.5, 3.0),
                (NodeState::Joining, 3.0, 3.4),
                (NodeState::Member, 3.4, 5.0),
            ]
        );
        assert!(
            t.segments.iter().all(|s| s.node == "n1"),
            "{:?}",
            t.segments
        );
    }

    /// A removal the views did not confirm is info and stays pending until a later reading
    /// (the next change's completion) shows it done; an op that never completes is info.
    #[test]
    fn an_unconfirmed_removal_is_pending_until_the_views_show_it() {
        let h = history(vec![
            inv(1_000, verb::SHRINK_CLUSTER),
            nem(
                4_000,
                OpType::Info,
                verb::SHRINK_CLUSTER,
                json!({"node": "n2", "via": "n1", "members": ["n1", "n2", "n3"],
                       "pending": [{"change": "remove", "node": "n2"}]}),
                Some("did not show in the views within 3000 ms"),
            ),
            inv(6_000, verb::GROW_CLUSTER),
            done(
                6_200,
                verb::GROW_CLUSTER,
                json!({"added": [], "members": ["n1", "n3"], "pending": []}),
            ),
            inv(8_000, verb::SHRINK_CLUSTER),
        ]);
        let t = timeline(&h);
        let outcomes: Vec<Outcome> = t.changes.iter().map(|c| c.outcome).collect();
        assert_eq!(outcomes, [Outcome::Info, Outcome::Ok, Outcome::Info]);
        assert_eq!(t.changes[2].end_s, 8.0, "never completed: runs to the end");
        let n2: Vec<(NodeState, f64, f64)> = t
            .segments
            .iter()
            .filter(|s| s.node == "n2")
            .map(|s| (s.state, s.from_s, s.to_s))
            .collect();
        assert_eq!(
            n2,
            [
                (NodeState::Member, 0.0, 1.0),
                (NodeState::Leaving, 1.0, 6.2),
                (NodeState::Removed, 6.2, 8.0),
            ]
        );
    }

    /// A grow whose adds went through several members names each once, in order; one member
    /// is written as its name; no request, no key.
    #[test]
    fn via_is_one_name_or_the_distinct_members_in_order() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(via_value(&[]), None);
        assert_eq!(via_value(&names(&["n2", "n2"])), Some(json!("n2")));
        let several = via_value(&names(&["n3", "n1", "n3"])).unwrap();
        assert_eq!(several, json!(["n3", "n1"]));
        assert_eq!(via_of(&json!({ VIA_KEY: several })), ["n3", "n1"]);
        assert_eq!(via_of(&json!({ VIA_KEY: "n2" })), ["n2"]);
        assert!(via_of(&json!({"added": []})).is_empty());
        // A grow through two members: the change names both, the nodes are the cluster's.
        let h = history(vec![
            inv(1_000, verb::GROW_CLUSTER),
            done(
                2_000,
                verb::GROW_CLUSTER,
                json!({"added": ["n4", "n5"], "via": several, "members": ["n1", "n2", "n3", "n4", "n5"], "pending": []}),
            ),
        ]);
        let t = timeline(&h);
        assert_eq!(t.changes[0].via, ["n3", "n1"]);
        assert_eq!(t.nodes, ["n1", "n2", "n3", "n4", "n5"]);
    }

    #[test]
    fn a_history_without_membership_ops_is_empty() {
        let h = history(vec![
            nem(1_000, OpType::Invoke, "kill", json!("one"), None),
            done(1_100, "kill", json!({"nodes": ["n1"]})),
        ]);
        let t = timeline(&h);
        assert!(t.is_empty());
        assert!(t.segments.is_empty() && t.counts().is_empty());
    }

    #[test]
    fn natural_order_puts_n2_before_n10() {
        let mut v = vec!["n10".to_string(), "n2".to_string(), "a".to_string()];
        v.sort_by(natural);
        assert_eq!(v, ["a", "n2", "n10"]);
    }
}
