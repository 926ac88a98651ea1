//! The `membership` fault's pure part: its parameters (the op value of `shrink-cluster`, parsed
//! and checked once for the spec and the nemesis) and the nemesis's model of the cluster's
//! membership ([`Membership`]), after Jepsen's `jepsen.nemesis.membership`: each node's view
//! (who it says the members are), merged into one; changes issued and not yet seen in the views
//! stay pending; what may be removed or added next.
//!
//! Merging: a node that does not list itself (a removed node that has not noticed, or one that
//! never joined) does not vote; of the others, the view most of them hold wins (ties: the
//! larger view, then the smaller names first, so the merge is deterministic). A removal is
//! resolved when the merged view no longer lists the node, an addition when it does.
//!
//! Pure: no IO, no clock. Does not own asking the nodes (`nemesis::membership`) nor how a system
//! changes its membership (`db::Membership`).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The `membership` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const KIND: super::FaultKind = super::FaultKind {
    name: "membership",
    start_verbs: &[super::verb::SHRINK_CLUSTER],
    stop_verbs: &[super::verb::GROW_CLUSTER],
    label: "cluster shrunk (member removed)",
    color_rgb: (70, 160, 200),
};

pub mod timeline;

/// Longest wait for a change to show in the views, in ms, by default.
pub const DEFAULT_CONFIRM_MS: u64 = 30_000;

/// Parameters of `shrink-cluster`: `{"allow_minority": false, "confirm_ms": 30000}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShrinkParams {
    /// Remove members even when fewer than a majority of the full cluster would remain.
    pub allow_minority: bool,
    /// How long a change may take to show in the views before the op ends unknown (`info`) and
    /// the change stays pending.
    pub confirm_ms: u64,
}

impl Default for ShrinkParams {
    fn default() -> Self {
        ShrinkParams {
            allow_minority: false,
            confirm_ms: DEFAULT_CONFIRM_MS,
        }
    }
}

impl ShrinkParams {
    /// Parse an op value (null: the defaults).
    pub fn from_value(v: &Value) -> Result<ShrinkParams, String> {
        let mut p = ShrinkParams::default();
        match v {
            Value::Null => {}
            Value::Object(m) => {
                for (k, x) in m {
                    match k.as_str() {
                        "allow_minority" => {
                            p.allow_minority = x.as_bool().ok_or_else(|| {
                                format!("allow_minority must be true or false, got {x}")
                            })?
                        }
                        "confirm_ms" => {
                            p.confirm_ms = x.as_u64().filter(|&ms| ms > 0).ok_or_else(|| {
                                format!("confirm_ms must be a positive whole number of ms, got {x}")
                            })?
                        }
                        other => {
                            return Err(format!(
                                "unknown membership parameter {other:?}: expected allow_minority or confirm_ms"
                            ));
                        }
                    }
                }
            }
            other => return Err(format!("membership: expected an object, got {other}")),
        }
        Ok(p)
    }

    /// The op value these parameters are written as.
    pub fn to_value(&self) -> Value {
        serde_json::json!({ "allow_minority": self.allow_minority, "confirm_ms": self.confirm_ms })
    }
}

/// One membership change the nemesis issued.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(tag = "change", content = "node", rename_all = "lowercase")]
pub enum Change {
    /// The node is being removed.
    Remove(String),
    /// The node is being added back.
    Add(String),
}

impl Change {
    /// The node it changes.
    pub fn node(&self) -> &str {
        match self {
            Change::Remove(n) | Change::Add(n) => n,
        }
    }

    /// Whether the merged view `members` shows it done.
    pub fn done_in(&self, members: &BTreeSet<String>) -> bool {
        match self {
            Change::Remove(n) => !members.contains(n),
            Change::Add(n) => members.contains(n),
        }
    }
}

/// The membership as the nemesis knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// Every node that may be a member (the cluster as configured).
    all: Vec<String>,
    /// Each node's latest view; a node that did not answer has none.
    views: BTreeMap<String, BTreeSet<String>>,
    /// Changes issued and not yet seen.
    pending: Vec<Change>,
}

/// Why no node can be removed now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A change is still pending.
    #[error("a membership change is still pending ({0:?}): no other until the views show it")]
    Pending(Change),
    /// Removing one more would leave fewer than a majority of the full cluster.
    #[error(
        "{members} member(s) of {all}: removing one more would leave fewer than a majority of the cluster (allow_minority = true permits it)"
    )]
    Quorum {
        /// Members now.
        members: usize,
        /// The full cluster.
        all: usize,
    },
    /// The views agree on no member at all (no node answered, or none lists itself).
    #[error("no node's view of the membership is known: nothing to remove")]
    NoView,
}

impl Membership {
    /// Every node a member, nothing pending.
    pub fn new(all: Vec<String>) -> Membership {
        let everyone: BTreeSet<String> = all.iter().cloned().collect();
        Membership {
            views: all.iter().map(|n| (n.clone(), everyone.clone())).collect(),
            all,
            pending: Vec::new(),
        }
    }

    /// Replace the views with a fresh reading (node → members it lists; nodes that did not
    /// answer are left out), then resolve the pending changes the merged view shows done;
    /// returns those.
    pub fn observe(&mut self, views: BTreeMap<String, BTreeSet<String>>) -> Vec<Change> {
        self.views = views;
        let members = self.members();
        let (done, still): (Vec<Change>, Vec<Change>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|c| c.done_in(&members));
        self.pending = still;
        done
    }

    /// The merged view (see the module doc); empty when no node votes.
    pub fn members(&self) -> BTreeSet<String> {
        let mut votes: BTreeMap<&BTreeSet<String>, usize> = BTreeMap::new();
        for (node, view) in &self.views {
            if view.contains(node) {
                *votes.entry(view).or_default() += 1;
            }
        }
        votes
            .into_iter()
            .max_by(|(a, na), (b, nb)| na.cmp(nb).then(a.len().cmp(&b.len())).then(b.cmp(a)))
            .map(|(v, _)| v.clone())
            .unwrap_or_default()
    }

    /// The nodes of the cluster that are not members now.
    pub fn removed(&self) -> Vec<String> {
        let members = self.members();
        self.all
            .iter()
            .filter(|n| !members.contains(*n))
            .cloned()
            .collect()
    }

    /// The changes still pending.
    pub fn pending(&self) -> &[Change] {
        &self.pending
    }

    /// Record a change as issued (pending until the views show it).
    pub fn issue(&mut self, change: Change) {
        if !self.pending.contains(&change) {
            self.pending.push(change);
        }
    }

    /// Forget a change that definitely did not happen (the system refused it).
    pub fn withdraw(&mut self, change: &Change) {
        self.pending.retain(|c| c != change);
    }

    /// The node of the first pending removal, if any: the next shrink asks for it again
    /// (Jepsen re-issues a pending change: one that neither committed nor was refused, e.g.
    /// asked while a majority was down, would otherwise block every later change).
    pub fn pending_removal(&self) -> Option<&str> {
        self.pending.iter().find_map(|c| match c {
            Change::Remove(n) => Some(n.as_str()),
            Change::Add(_) => None,
        })
    }

    /// The members that may be removed now (empty with why when none may).
    pub fn removable(&self, allow_minority: bool) -> Result<Vec<String>, Refusal> {
        if let Some(c) = self.pending.first() {
            return Err(Refusal::Pending(c.clone()));
        }
        let members = self.members();
        if members.is_empty() {
            return Err(Refusal::NoView);
        }
        let floor = if allow_minority {
            1
        } else {
            self.all.len() / 2 + 1
        };
        if members.len() <= floor {
            return Err(Refusal::Quorum {
                members: members.len(),
                all: self.all.len(),
            });
        }
        Ok(members.into_iter().collect())
    }

    /// The merged view and each node's, as an op value or journal detail.
    pub fn to_value(&self) -> Value {
        serde_json::json!({
            "members": self.members(),
            "views": self.views,
            "pending": self.pending,
        })
    }
}

/// Membership changes: `shrink-cluster` removes one member through another member's admin
/// interface (stopped and wiped once the views confirm it), `grow-cluster` adds every removed
/// node back fresh: the `membership` schedule entry. The fields mean what [`ShrinkParams`]'s do.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MembershipSpec {
    /// Remove members below a majority of the full cluster.
    #[serde(default)]
    pub allow_minority: bool,
    /// How long a change may take to show in the views, in ms.
    #[serde(default = "d_confirm_ms")]
    pub confirm_ms: u64,
}

fn d_confirm_ms() -> u64 {
    DEFAULT_CONFIRM_MS
}

impl super::def::FaultDef for MembershipSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &KIND
    }
    fn ops(&self) -> super::def::Ops {
        let p = ShrinkParams {
            allow_minority: self.allow_minority,
            confirm_ms: self.confirm_ms,
        };
        super::def::Ops::new(
            super::Verb::ShrinkCluster,
            p.to_value(),
            Some(super::Verb::GrowCluster),
        )
    }
    fn keys(&self) -> &'static [&'static str] {
        &["confirm_ms", "allow_minority"]
    }
    fn check(&self) -> Result<(), String> {
        ShrinkParams::from_value(&self.ops().value).map(|_| ())
    }
    fn needs(&self) -> super::def::Needs {
        super::def::Needs {
            membership: true,
            ..super::def::Needs::default()
        }
    }
    fn chaos_refusal(&self) -> Option<&'static str> {
        Some(
            "a membership change restarts a member with empty data and shakedown's own \
             settings, not yours; chaos injects only faults it can undo",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn five() -> Membership {
        Membership::new((1..=5).map(|i| format!("n{i}")).collect())
    }

    #[test]
    fn the_merged_view_is_what_most_members_say_and_stale_nodes_do_not_vote() {
        let mut m = five();
        assert_eq!(m.members().len(), 5);
        let four = set(&["n1", "n2", "n3", "n4"]);
        let views = BTreeMap::from([
            ("n1".to_string(), four.clone()),
            ("n2".to_string(), four.clone()),
            // n5 was removed and has not noticed: it does not vote even with a bigger view
            // (it lists itself), and n3 lags.
            ("n3".to_string(), set(&["n1", "n2", "n3", "n4", "n5"])),
            ("n5".to_string(), set(&["n1", "n2", "n3", "n4", "n5"])),
            ("n4".to_string(), four.clone()),
        ]);
        m.issue(Change::Remove("n5".into()));
        let done = m.observe(views);
        assert_eq!(done, vec![Change::Remove("n5".into())]);
        assert_eq!(m.members(), four);
        assert_eq!(m.removed(), vec!["n5"]);
        assert!(m.pending().is_empty());
        // A node that does not list itself does not vote.
        let mut m = five();
        m.observe(BTreeMap::from([("n5".to_string(), set(&["n1"]))]));
        assert!(m.members().is_empty());
        assert_eq!(m.removable(false), Err(Refusal::NoView));
    }

    #[test]
    fn a_pending_change_blocks_the_next_until_the_views_show_it() {
        let mut m = five();
        m.issue(Change::Remove("n2".into()));
        assert!(matches!(m.removable(false), Err(Refusal::Pending(_))));
        // The views still list n2: still pending.
        let all = set(&["n1", "n2", "n3", "n4", "n5"]);
        let views: BTreeMap<String, BTreeSet<String>> =
            all.iter().map(|n| (n.clone(), all.clone())).collect();
        assert!(m.observe(views).is_empty());
        assert_eq!(m.pending().len(), 1);
        assert_eq!(m.pending_removal(), Some("n2"));
        m.withdraw(&Change::Remove("n2".into()));
        assert_eq!(m.pending_removal(), None);
        assert_eq!(m.removable(false).unwrap().len(), 5);
    }

    #[test]
    fn shrinking_stops_at_a_majority_of_the_full_cluster_unless_minority_is_allowed() {
        let mut m = five();
        let three = set(&["n1", "n2", "n3"]);
        m.observe(three.iter().map(|n| (n.clone(), three.clone())).collect());
        assert_eq!(
            m.removable(false),
            Err(Refusal::Quorum { members: 3, all: 5 })
        );
        assert_eq!(m.removable(true).unwrap(), vec!["n1", "n2", "n3"]);
        let one = set(&["n1"]);
        m.observe(BTreeMap::from([("n1".to_string(), one)]));
        assert!(m.removable(true).is_err());
    }

    #[test]
    fn parameters_parse_with_defaults_and_refuse_bad_values() {
        assert_eq!(
            ShrinkParams::from_value(&Value::Null).unwrap(),
            ShrinkParams::default()
        );
        let p = ShrinkParams::from_value(
            &serde_json::json!({"allow_minority": true, "confirm_ms": 500}),
        )
        .unwrap();
        assert!(p.allow_minority && p.confirm_ms == 500);
        assert_eq!(ShrinkParams::from_value(&p.to_value()).unwrap(), p);
        for bad in [
            serde_json::json!({"allow_minority": 1}),
            serde_json::json!({"confirm_ms": 0}),
            serde_json::json!({"nodes": 2}),
            serde_json::json!("one"),
        ] {
            assert!(ShrinkParams::from_value(&bad).is_err(), "{bad}");
        }
    }
}
