//! The `membership` fault: `shrink-cluster` removes one member through another member's admin
//! interface and, once the views confirm the removal, stops it and wipes its data;
//! `grow-cluster` adds every node it removed back as a fresh member (empty data, joining the
//! running cluster), one at a time, each confirmed by the views.
//!
//! Like Jepsen's membership nemesis it keeps a model of the membership
//! (`faults::membership::Membership`): every node's view is read around each change and merged;
//! a change the views do not show within `confirm_ms` ends the op unknown (`info`) and stays
//! pending, resolved by a later reading (a removal that committed late is then retired); no
//! change is issued while one is pending; shrinking stops at a majority of the full cluster
//! unless `allow_minority`. A change the system refused outright, or one the model refuses
//! before asking, fails definitely. A view counts the members that have started: an added
//! member joins the model once it has joined the cluster, so a `grow-cluster` is confirmed only
//! then, and one added but never started (its controller died in between) is still to be
//! started. An add that fails is asked again for a while (it may have committed: then only the
//! start is left). `heal` grows the cluster back; `shakedown heal` adopts the journal's removals
//! and grows them back (retiring first a node whose removal committed after its controller
//! died, starting first one whose add committed and whose start never came).
//!
//! Does not own how a system changes its membership (`db::Membership`) nor the model (pure, in
//! `faults::membership`).

use super::cluster::Cluster;
use super::fault::{Fault, FaultError, active_line, nodes_of};
use crate::db::{DbError, Membership as Ability};
use crate::faults::membership::timeline::{
    ASKED_AGAIN_KEY, MEMBERS_KEY, PENDING_KEY, VIA_KEY, via_value,
};
use crate::faults::membership::{Change, Membership, ShrinkParams};
use crate::faults::{Verb, verb};
use crate::node::Node;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Pause between two readings of the views while a change is awaited.
const POLL_EVERY: Duration = Duration::from_millis(500);

/// How long `grow-cluster` keeps asking to add one node back when an attempt fails (etcd:
/// "request timed out" while the cluster settles after a removal, a refusal while it calls
/// itself unhealthy); every attempt is journaled.
const ADD_TRIES_FOR: Duration = Duration::from_secs(20);

/// The membership fault: the model, and the nodes it removed and retired (stopped, wiped) that
/// are not members again yet.
#[derive(Debug, Default)]
pub struct MembershipFault {
    model: Option<Membership>,
    retired: BTreeSet<String>,
    /// Removals issued whose node is not retired yet (confirmed late, or adopted).
    removing: BTreeSet<String>,
    /// The nodes the last reading found listed as added and never started (an add that
    /// committed and whose start did not happen or has not joined yet): no members of the
    /// model, but members of the cluster a join must name.
    unstarted: BTreeSet<String>,
}

/// Why a system without the ability cannot serve the fault.
fn unserved(cx: &Cluster) -> String {
    format!("{} cannot change its membership", cx.db().name())
}

impl MembershipFault {
    fn model(&mut self, cx: &Cluster) -> &mut Membership {
        self.model
            .get_or_insert_with(|| Membership::new(cx.names()))
    }

    /// Read every node's view (nodes that do not answer are left out) into the model, each as
    /// the started members it lists (an added member counts once it has started, i.e. joined);
    /// note the added-and-never-started ones; retire the nodes whose removal the views now
    /// show. Returns the views read.
    fn observe(
        &mut self,
        cx: &mut Cluster,
        m: &dyn Ability,
    ) -> Result<BTreeMap<String, Vec<String>>, String> {
        let cluster = cx.nodes().to_vec();
        let views: Mutex<BTreeMap<String, BTreeSet<String>>> = Mutex::default();
        let unstarted: Mutex<BTreeSet<String>> = Mutex::default();
        // A view that cannot be read is no failure of the op: the node is left out.
        let _ = cx.read_nodes(&cx.all_idx(), |r, node| {
            let v = m.view(r, node, &cluster).map_err(|e| e.to_string())?;
            let (started, not): (Vec<_>, Vec<_>) = v.members.iter().partition(|x| x.started);
            let members: BTreeSet<String> =
                started.into_iter().filter_map(|x| x.node.clone()).collect();
            views
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(node.name.clone(), members);
            unstarted
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(not.into_iter().filter_map(|x| x.node.clone()));
            Ok(())
        });
        let views = views.into_inner().unwrap_or_else(|p| p.into_inner());
        self.unstarted = unstarted.into_inner().unwrap_or_else(|p| p.into_inner());
        let read: BTreeMap<String, Vec<String>> = views
            .iter()
            .map(|(n, v)| (n.clone(), v.iter().cloned().collect()))
            .collect();
        self.model(cx).observe(views);
        let members = self.model(cx).members();
        self.unstarted.retain(|n| !members.contains(n));
        let confirmed: Vec<String> = self
            .removing
            .iter()
            .filter(|n| !members.contains(*n) && !members.is_empty())
            .cloned()
            .collect();
        for n in confirmed {
            self.retire(cx, m, &n)?;
        }
        Ok(read)
    }

    /// Stop and wipe `name` (no longer a member). Client threads bound to it move to another
    /// member first (the board, `members::MemberBoard`).
    fn retire(&mut self, cx: &mut Cluster, m: &dyn Ability, name: &str) -> Result<(), String> {
        cx.members().retire(name);
        let idx = cx.idx_of([&name.to_string()]);
        cx.on_nodes(&idx, |r, node| m.retire(r, node).map_err(|e| e.to_string()))?;
        self.removing.remove(name);
        self.retired.insert(name.to_string());
        Ok(())
    }

    /// Read the views until `change` shows in them (true) or `confirm` passes (false: it stays
    /// pending). Returns the last views read too.
    fn await_change(
        &mut self,
        cx: &mut Cluster,
        m: &dyn Ability,
        change: &Change,
        confirm: Duration,
    ) -> Result<(BTreeMap<String, Vec<String>>, bool), String> {
        let deadline = Instant::now() + confirm;
        loop {
            let views = self.observe(cx, m)?;
            if !self.model(cx).pending().contains(change) {
                return Ok((views, true));
            }
            if Instant::now() >= deadline {
                return Ok((views, false));
            }
            std::thread::sleep(POLL_EVERY);
        }
    }

    /// What a change's completion says: `detail` with the merged view, the changes still
    /// pending (`faults::membership::timeline` reads both) and the views read.
    fn outcome(
        &mut self,
        cx: &Cluster,
        mut detail: Value,
        views: &BTreeMap<String, Vec<String>>,
    ) -> Value {
        detail[MEMBERS_KEY] = json!(self.model(cx).members());
        detail[PENDING_KEY] = json!(self.model(cx).pending());
        detail["views"] = json!(views);
        detail
    }

    /// The error of a change the views did not show within `confirm`.
    fn unconfirmed(change: &Change, confirm: Duration, out: Value) -> FaultError {
        FaultError::Unknown {
            error: format!(
                "{change:?} did not show in the views within {} ms (views: {}); it stays pending",
                confirm.as_millis(),
                out["views"]
            ),
            value: out,
        }
    }

    fn node(cx: &Cluster, name: &str) -> Result<(usize, Node), String> {
        let i = cx
            .index_of(name)
            .ok_or_else(|| format!("membership: unknown node {name:?}"))?;
        Ok((i, cx.nodes()[i].clone()))
    }

    fn shrink(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, FaultError> {
        let p = ShrinkParams::from_value(value).map_err(FaultError::Refused)?;
        let db = cx.db();
        let m = db
            .as_membership()
            .ok_or_else(|| FaultError::Refused(unserved(cx)))?;
        self.observe(cx, m)?;
        let pick = |cx: &mut Cluster, from: &[String]| -> String {
            let i = rand::RngExt::random_range(cx.rng(), 0..from.len());
            from[i].clone()
        };
        // A removal still pending is asked again, through a member chosen afresh; else a
        // member is picked.
        let again = self.model(cx).pending_removal().map(String::from);
        let (target, candidates) = match &again {
            Some(node) => {
                let members: Vec<String> = self.model(cx).members().into_iter().collect();
                (node.clone(), members)
            }
            None => {
                let candidates = self
                    .model(cx)
                    .removable(p.allow_minority)
                    .map_err(|e| FaultError::Refused(e.to_string()))?;
                (pick(cx, &candidates), candidates)
            }
        };
        let others: Vec<String> = candidates.into_iter().filter(|n| *n != target).collect();
        if others.is_empty() {
            return Err(FaultError::Refused(format!(
                "no member to ask for the removal of {target}: the views agree on none besides it"
            )));
        }
        let via = pick(cx, &others);
        let (via_i, via_node) = Self::node(cx, &via)?;
        let (_, target_node) = Self::node(cx, &target)?;
        let cluster = cx.nodes().to_vec();
        let change = Change::Remove(target.clone());
        self.model(cx).issue(change.clone());
        self.removing.insert(target.clone());
        let refused: Mutex<Option<String>> = Mutex::default();
        let mut detail =
            json!({ "node": target, VIA_KEY: via, "members": self.model(cx).members() });
        if again.is_some() {
            detail[ASKED_AGAIN_KEY] = json!(true);
        }
        let asked = cx.journaled(
            "inject",
            verb::SHRINK_CLUSTER,
            detail.clone(),
            Some(verb::GROW_CLUSTER),
            |cx| {
                cx.on_nodes(&[via_i], |r, _| {
                    m.remove(r, &via_node, &target_node, &cluster).map_err(|e| {
                        if matches!(e, DbError::Refused { .. }) {
                            *refused.lock().unwrap_or_else(|p| p.into_inner()) =
                                Some(e.to_string());
                        }
                        e.to_string()
                    })
                })
            },
        );
        if let Err(e) = asked {
            if refused
                .into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .is_some()
            {
                if again.is_none() {
                    // It did not happen: nothing is pending, nothing to undo.
                    self.model(cx).withdraw(&change);
                    self.removing.remove(&target);
                }
                // Asked again: this request did not happen, the earlier one may still commit.
                return Err(FaultError::Refused(e));
            }
            return Err(e.into());
        }
        let confirm = Duration::from_millis(p.confirm_ms);
        let (views, confirmed) = self.await_change(cx, m, &change, confirm)?;
        let mut out = self.outcome(cx, detail, &views);
        out["retired"] = json!(self.retired.contains(&target));
        if !confirmed {
            return Err(Self::unconfirmed(&change, confirm, out));
        }
        Ok(out)
    }

    /// Add back every node this fault removed and retired, one at a time: those the views list
    /// as added and never started first (only their start is left), each confirmed once the
    /// views list it started.
    fn grow(&mut self, cx: &mut Cluster) -> Result<Value, FaultError> {
        let db = cx.db();
        let Some(m) = db.as_membership() else {
            return Ok(json!({ "added": [] }));
        };
        let mut last = self.observe(cx, m)?;
        // A journal's removal that never committed leaves a started member: nothing to undo
        // there. One added back whose start never came is no member yet: it stays.
        let members = self.model(cx).members();
        self.removing.retain(|n| !members.contains(n));
        // One whose removal committed but was never retired is retired first.
        for n in self.removing.clone() {
            self.retire(cx, m, &n)?;
        }
        let mut targets: Vec<String> = self.retired.iter().cloned().collect();
        targets.sort_by_key(|n| !self.unstarted.contains(n));
        let mut added = Vec::new();
        let mut vias = Vec::new();
        for target in targets {
            let change = Change::Add(target.clone());
            self.model(cx).issue(change.clone());
            vias.push(self.add_back(cx, m, &target)?);
            let confirm = Duration::from_millis(crate::faults::membership::DEFAULT_CONFIRM_MS);
            let (views, confirmed) = self.await_change(cx, m, &change, confirm)?;
            last = views;
            if !confirmed {
                let mut detail = json!({ "node": target, "added": added });
                if let Some(via) = via_value(&vias) {
                    detail[VIA_KEY] = via;
                }
                let out = self.outcome(cx, detail, &last);
                return Err(Self::unconfirmed(&change, confirm, out));
            }
            self.retired.remove(&target);
            cx.members().restore(&target);
            added.push(target);
        }
        let mut detail = json!({ "added": added });
        if let Some(via) = via_value(&vias) {
            detail[VIA_KEY] = via;
        }
        Ok(self.outcome(cx, detail, &last))
    }

    /// Ask a member to add `target` back and start it, again while an attempt fails, for at
    /// most [`ADD_TRIES_FOR`] (a failed attempt may still have committed the add: the next
    /// one then only starts the node, as `db::Membership::add` does). Every attempt is
    /// journaled; the op's per-node outcomes are the last attempt's. Returns the member it
    /// went through.
    fn add_back(
        &mut self,
        cx: &mut Cluster,
        m: &dyn Ability,
        target: &str,
    ) -> Result<String, FaultError> {
        let deadline = Instant::now() + ADD_TRIES_FOR;
        let (target_i, target_node) = Self::node(cx, target)?;
        loop {
            let members = self.model(cx).members();
            let via =
                members.iter().next().cloned().ok_or_else(|| {
                    "no member answers: nothing to add a node through".to_string()
                })?;
            if members.contains(target) {
                // An earlier attempt's start joined after all.
                return Ok(via);
            }
            let (via_i, via_node) = Self::node(cx, &via)?;
            // The join names every member of the cluster: the started ones and those added
            // and never started.
            let member_nodes: Vec<Node> = cx
                .nodes()
                .iter()
                .filter(|n| {
                    n.name != target
                        && (members.contains(&n.name) || self.unstarted.contains(&n.name))
                })
                .cloned()
                .collect();
            let via_remote = cx.cfg.remotes[via_i].clone();
            let cluster = cx.nodes().to_vec();
            let before = cx.take_outcomes();
            let asked = cx.journaled(
                "undo",
                verb::GROW_CLUSTER,
                json!({ "node": target, VIA_KEY: via, "members": members }),
                None,
                |cx| {
                    cx.on_nodes(&[target_i], |r, _| {
                        m.add(
                            via_remote.as_ref(),
                            &via_node,
                            r,
                            &target_node,
                            &member_nodes,
                            &cluster,
                        )
                        .map_err(|e| e.to_string())
                    })
                },
            );
            let mine = cx.take_outcomes();
            let again = asked.is_err() && Instant::now() < deadline;
            let mut outcomes = before;
            if !again {
                outcomes.merge(mine);
            }
            *cx.lock_outcomes() = outcomes;
            match asked {
                Ok(()) => return Ok(via),
                Err(e) if !again => return Err(e.into()),
                Err(_) => {
                    std::thread::sleep(POLL_EVERY);
                    self.observe(cx, m)?;
                }
            }
        }
    }
}

impl Fault for MembershipFault {
    fn name(&self) -> &'static str {
        "membership"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::ShrinkCluster, Verb::GrowCluster]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        match v {
            Verb::ShrinkCluster => self.shrink(cx, value),
            _ => self.grow(cx),
        }
    }

    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        if self.retired.is_empty() && self.removing.is_empty() {
            return Ok(());
        }
        self.grow(cx).map(|_| ()).map_err(|e| e.to_string())
    }

    fn heal_what(&self) -> &'static str {
        "grow the cluster back"
    }

    fn active(&self) -> Option<String> {
        active_line("removed", self.retired.iter().chain(&self.removing))
    }

    fn adopt(&mut self, outstanding: &[Value]) -> Vec<String> {
        let nodes = nodes_of(outstanding, Verb::ShrinkCluster);
        self.removing.extend(nodes.iter().cloned());
        nodes
    }

    fn healed(&self, db_name: &str) -> String {
        format!("added back to {db_name} as a fresh member (removed per the journal)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Remote;
    use crate::control::canned::Canned;
    use crate::db::{Abilities, Member, MemberView};
    use crate::nemesis::{Nemesis, NemesisConfig};
    use rand::SeedableRng;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A cluster's membership in memory, as etcd keeps it: member → started. A node that is no
    /// started member does not answer (its server is down); an add commits the member unstarted
    /// and the start makes it started. `lose_next_add`: the next add commits and then reports a
    /// timeout, as etcd's "request timed out" may.
    /// `lose_next_remove`: the next removal is accepted and never happens (asked while a
    /// majority was down: neither committed nor refused).
    #[derive(Default)]
    struct Cluster {
        members: Mutex<BTreeMap<String, bool>>,
        lose_next_add: AtomicBool,
        lose_next_remove: AtomicBool,
    }

    impl Cluster {
        fn of(started: &[&str], unstarted: &[&str]) -> Cluster {
            let c = Cluster::default();
            let mut m = c.members.lock().unwrap();
            m.extend(started.iter().map(|n| (n.to_string(), true)));
            m.extend(unstarted.iter().map(|n| (n.to_string(), false)));
            drop(m);
            c
        }

        fn started(&self) -> Vec<String> {
            let m = self.members.lock().unwrap();
            m.iter()
                .filter(|(_, s)| **s)
                .map(|(n, _)| n.clone())
                .collect()
        }
    }

    impl Abilities for Cluster {
        fn name(&self) -> &str {
            "memdb"
        }
        fn as_membership(&self) -> Option<&dyn Ability> {
            Some(self)
        }
    }

    impl Ability for Cluster {
        fn view(&self, _: &dyn Remote, node: &Node, _: &[Node]) -> Result<MemberView, DbError> {
            let m = self.members.lock().unwrap();
            if m.get(&node.name) != Some(&true) {
                return Err(DbError::Other {
                    node: node.name.clone(),
                    message: "not running".into(),
                });
            }
            let members = m
                .iter()
                .map(|(n, &started)| Member {
                    node: Some(n.clone()),
                    id: n.clone(),
                    name: if started { n.clone() } else { String::new() },
                    learner: false,
                    started,
                })
                .collect();
            Ok(MemberView { members })
        }
        fn remove(
            &self,
            _: &dyn Remote,
            _: &Node,
            target: &Node,
            _: &[Node],
        ) -> Result<(), DbError> {
            if !self.lose_next_remove.swap(false, Ordering::SeqCst) {
                self.members.lock().unwrap().remove(&target.name);
            }
            Ok(())
        }
        fn retire(&self, _: &dyn Remote, _: &Node) -> Result<(), DbError> {
            Ok(())
        }
        fn add(
            &self,
            _: &dyn Remote,
            via: &Node,
            _: &dyn Remote,
            target: &Node,
            members: &[Node],
            _: &[Node],
        ) -> Result<(), DbError> {
            let mut m = self.members.lock().unwrap();
            let mut named: Vec<&str> = members.iter().map(|n| n.name.as_str()).collect();
            named.push(&target.name);
            named.sort();
            let mut listed: Vec<&str> = m.keys().map(String::as_str).collect();
            if !listed.contains(&target.name.as_str()) {
                listed.push(&target.name);
                listed.sort();
            }
            assert_eq!(
                named, listed,
                "the join names other members than the cluster has"
            );
            if !m.contains_key(&target.name) {
                m.insert(target.name.clone(), false);
                if self.lose_next_add.swap(false, Ordering::SeqCst) {
                    return Err(DbError::Other {
                        node: via.name.clone(),
                        message: "member add: request timed out".into(),
                    });
                }
            }
            m.insert(target.name.clone(), true);
            Ok(())
        }
    }

    /// A nemesis over n1..n5 of `db`, and its journal.
    fn nemesis(db: Arc<Cluster>) -> (Nemesis, Arc<Mutex<Vec<Value>>>) {
        let nodes: Vec<Node> = (1..=5)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.0.0.{i}"),
            })
            .collect();
        let remotes: Vec<Arc<dyn Remote>> = nodes
            .iter()
            .map(|n| Arc::new(Canned::quiet(n.name.clone())) as Arc<dyn Remote>)
            .collect();
        let journal: Arc<Mutex<Vec<Value>>> = Arc::default();
        let sink = journal.clone();
        let n = Nemesis::new(NemesisConfig {
            helper_exe: None,
            nodes,
            remotes,
            db,
            partition: Default::default(),
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(1),
            journal: Some(Box::new(move |r: &Value| {
                sink.lock().unwrap().push(r.clone())
            })),
        });
        (n, journal)
    }

    /// A killed controller's journal: the removal of n5, never undone.
    fn removal_of_n5() -> Vec<Value> {
        vec![
            json!({"action": "inject", "event": "done", "f": verb::SHRINK_CLUSTER,
            "undo_with": verb::GROW_CLUSTER, "detail": {"node": "n5", "via": "n1"}}),
        ]
    }

    const FIVE: [&str; 5] = ["n1", "n2", "n3", "n4", "n5"];

    /// `shakedown heal` over the journal of n5's removal: it completes, every node is a
    /// started member and n5 was added back. Returns heal's own journal records.
    fn heal_n5_back(db: &Arc<Cluster>) -> Arc<Mutex<Vec<Value>>> {
        let (mut n, journal) = nemesis(db.clone());
        let report = n.heal_nodes(&BTreeMap::new(), &removal_of_n5(), None);
        let text = report.lines.join("\n");
        assert!(report.complete(), "{text}\n{:?}", report.left);
        assert_eq!(db.started(), FIVE, "{text}");
        assert!(
            text.contains("n5: added back to memdb as a fresh member"),
            "{text}"
        );
        journal
    }

    /// The controller died after n5's add committed and before its start: the others list n5
    /// as added and never started. heal starts it (a started member listing it is no member).
    #[test]
    fn heal_starts_a_node_whose_add_committed_and_whose_start_never_came() {
        let db = Arc::new(Cluster::of(&["n1", "n2", "n3", "n4"], &["n5"]));
        let journal = heal_n5_back(&db);
        let records = journal.lock().unwrap().clone();
        let mut all = removal_of_n5();
        all.extend(records);
        assert!(
            crate::nemesis::outstanding_faults(&all).is_empty(),
            "{all:?}"
        );
    }

    /// A shrink names the member it went through; the grow that adds the node back names its
    /// member too, under the same key (the run page's change table reads both).
    #[test]
    fn shrink_and_grow_completions_name_the_member_they_went_through() {
        let db = Arc::new(Cluster::of(&FIVE, &[]));
        let (mut n, _) = nemesis(db.clone());
        let shrink = n.invoke(verb::SHRINK_CLUSTER, &json!({"confirm_ms": 1000}));
        let crate::client::Completion::Ok { value, .. } = shrink else {
            panic!("shrink: {shrink:?}");
        };
        let removed = value["node"].as_str().unwrap().to_string();
        assert_eq!(db.started().len(), 4, "{value}");
        assert!(
            value[VIA_KEY].is_string() && value[VIA_KEY] != removed,
            "{value}"
        );
        let grow = n.invoke(verb::GROW_CLUSTER, &Value::Null);
        let crate::client::Completion::Ok { value, .. } = grow else {
            panic!("grow: {grow:?}");
        };
        assert_eq!(value["added"], json!([removed]), "{value}");
        let via = value[VIA_KEY]
            .as_str()
            .unwrap_or_else(|| panic!("no via: {value}"));
        assert!(FIVE.contains(&via) && via != removed, "{value}");
        assert_eq!(db.started(), FIVE);
    }

    /// An add that commits and reports a timeout is asked again: the second attempt only
    /// starts the node. The op's per-node outcome is the last attempt's (n5 added, no failure);
    /// the journal keeps both attempts.
    #[test]
    fn an_add_that_timed_out_after_committing_is_asked_again_and_only_started() {
        let db = Arc::new(Cluster::of(&["n1", "n2", "n3", "n4"], &[]));
        db.lose_next_add.store(true, Ordering::SeqCst);
        let journal = heal_n5_back(&db);
        let attempts: Vec<Value> = journal
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r["f"] == verb::GROW_CLUSTER && r["event"] != "begin")
            .map(|r| r["event"].clone())
            .collect();
        assert_eq!(attempts, [json!("failed"), json!("done")]);
    }

    /// A removal that never shows in the views ends unknown and stays pending; the next shrink
    /// asks for the same node again (through a member), and that one is confirmed: the node is
    /// retired once, and a grow brings it back.
    #[test]
    fn a_pending_removal_is_asked_again_by_the_next_shrink() {
        let db = Arc::new(Cluster::of(&FIVE, &[]));
        db.lose_next_remove.store(true, Ordering::SeqCst);
        let (mut n, journal) = nemesis(db.clone());
        let first = n.invoke(verb::SHRINK_CLUSTER, &json!({"confirm_ms": 600}));
        let crate::client::Completion::Fail { value, .. } = first else {
            panic!("first shrink: {first:?}");
        };
        let node = value["node"].as_str().unwrap().to_string();
        assert_eq!(value[PENDING_KEY][0]["node"], node.as_str(), "{value}");
        assert_eq!(db.started().len(), 5);
        let second = n.invoke(verb::SHRINK_CLUSTER, &json!({"confirm_ms": 1000}));
        let crate::client::Completion::Ok { value, .. } = second else {
            panic!("second shrink: {second:?}");
        };
        assert_eq!(value["node"], node.as_str(), "{value}");
        assert_eq!(value[ASKED_AGAIN_KEY], true, "{value}");
        assert_ne!(value[VIA_KEY], node.as_str(), "{value}");
        assert_eq!(value["retired"], true, "{value}");
        assert_eq!(db.started().len(), 4);
        let grow = n.invoke(verb::GROW_CLUSTER, &Value::Null);
        assert!(
            matches!(grow, crate::client::Completion::Ok { .. }),
            "{grow:?}"
        );
        assert_eq!(db.started(), FIVE);
        let records = journal.lock().unwrap().clone();
        assert!(
            crate::nemesis::outstanding_faults(&records).is_empty(),
            "{records:?}"
        );
    }
}
