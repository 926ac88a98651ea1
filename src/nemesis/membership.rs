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
//! before asking, fails definitely. `heal` grows the cluster back; `shakedown heal` adopts the
//! journal's removals and grows them back (retiring first a node whose removal committed after
//! its controller died).
//!
//! Does not own how a system changes its membership (`db::Membership`) nor the model (pure, in
//! `faults::membership`).

use super::cluster::Cluster;
use super::fault::{Fault, FaultError, active_line, nodes_of};
use crate::db::{DbError, Membership as Ability};
use crate::faults::membership::timeline::{MEMBERS_KEY, PENDING_KEY};
use crate::faults::membership::{Change, Membership, ShrinkParams};
use crate::faults::{Verb, verb};
use crate::node::Node;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Pause between two readings of the views while a change is awaited.
const POLL_EVERY: Duration = Duration::from_millis(500);

/// The membership fault: the model, and the nodes it removed and retired (stopped, wiped) that
/// are not members again yet.
#[derive(Debug, Default)]
pub struct MembershipFault {
    model: Option<Membership>,
    retired: BTreeSet<String>,
    /// Removals issued whose node is not retired yet (confirmed late, or adopted).
    removing: BTreeSet<String>,
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

    /// Read every node's view (nodes that do not answer are left out) into the model; retire
    /// the nodes whose removal the views now show. Returns the views read.
    fn observe(
        &mut self,
        cx: &mut Cluster,
        m: &dyn Ability,
    ) -> Result<BTreeMap<String, Vec<String>>, String> {
        let cluster = cx.nodes().to_vec();
        let views: Mutex<BTreeMap<String, BTreeSet<String>>> = Mutex::default();
        // A view that cannot be read is no failure of the op: the node is left out.
        let _ = cx.read_nodes(&cx.all_idx(), |r, node| {
            let v = m.view(r, node, &cluster).map_err(|e| e.to_string())?;
            let members: BTreeSet<String> =
                v.members.iter().filter_map(|x| x.node.clone()).collect();
            views
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(node.name.clone(), members);
            Ok(())
        });
        let views = views.into_inner().unwrap_or_else(|p| p.into_inner());
        let read: BTreeMap<String, Vec<String>> = views
            .iter()
            .map(|(n, v)| (n.clone(), v.iter().cloned().collect()))
            .collect();
        self.model(cx).observe(views);
        let members = self.model(cx).members();
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

    /// Stop and wipe `name` (no longer a member).
    fn retire(&mut self, cx: &mut Cluster, m: &dyn Ability, name: &str) -> Result<(), String> {
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
        let candidates = self
            .model(cx)
            .removable(p.allow_minority)
            .map_err(|e| FaultError::Refused(e.to_string()))?;
        let pick = |cx: &mut Cluster, from: &[String]| -> String {
            let i = rand::RngExt::random_range(cx.rng(), 0..from.len());
            from[i].clone()
        };
        let target = pick(cx, &candidates);
        let others: Vec<String> = candidates.into_iter().filter(|n| *n != target).collect();
        let via = pick(cx, &others);
        let (via_i, via_node) = Self::node(cx, &via)?;
        let (_, target_node) = Self::node(cx, &target)?;
        let cluster = cx.nodes().to_vec();
        let change = Change::Remove(target.clone());
        self.model(cx).issue(change.clone());
        self.removing.insert(target.clone());
        let refused: Mutex<Option<String>> = Mutex::default();
        let detail = json!({ "node": target, "via": via, "members": self.model(cx).members() });
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
                // It did not happen: nothing is pending, nothing to undo.
                self.model(cx).withdraw(&change);
                self.removing.remove(&target);
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

    /// Add back every node this fault removed and retired, one at a time.
    fn grow(&mut self, cx: &mut Cluster) -> Result<Value, FaultError> {
        let db = cx.db();
        let Some(m) = db.as_membership() else {
            return Ok(json!({ "added": [] }));
        };
        let mut last = self.observe(cx, m)?;
        // A journal's removal that never committed leaves a member: nothing to undo there.
        let members = self.model(cx).members();
        self.removing.retain(|n| !members.contains(n));
        // One whose removal committed but was never retired is retired first.
        for n in self.removing.clone() {
            self.retire(cx, m, &n)?;
        }
        let mut added = Vec::new();
        for target in self.retired.clone() {
            let members = self.model(cx).members();
            let via =
                members.iter().next().cloned().ok_or_else(|| {
                    "no member answers: nothing to add a node through".to_string()
                })?;
            let (via_i, via_node) = Self::node(cx, &via)?;
            let (target_i, target_node) = Self::node(cx, &target)?;
            let member_nodes: Vec<Node> = cx
                .nodes()
                .iter()
                .filter(|n| members.contains(&n.name))
                .cloned()
                .collect();
            let via_remote = cx.cfg.remotes[via_i].clone();
            let change = Change::Add(target.clone());
            self.model(cx).issue(change.clone());
            cx.journaled(
                "undo",
                verb::GROW_CLUSTER,
                json!({ "node": target, "via": via, "members": members }),
                None,
                |cx| {
                    cx.on_nodes(&[target_i], |r, _| {
                        m.add(
                            via_remote.as_ref(),
                            &via_node,
                            r,
                            &target_node,
                            &member_nodes,
                        )
                        .map_err(|e| e.to_string())
                    })
                },
            )?;
            let confirm = Duration::from_millis(crate::faults::membership::DEFAULT_CONFIRM_MS);
            let (views, confirmed) = self.await_change(cx, m, &change, confirm)?;
            last = views;
            if !confirmed {
                let out = self.outcome(cx, json!({ "node": target, "added": added }), &last);
                return Err(Self::unconfirmed(&change, confirm, out));
            }
            self.retired.remove(&target);
            added.push(target);
        }
        Ok(self.outcome(cx, json!({ "added": added }), &last))
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
