//! The `loss` fault: the targets drop packets from every other node at random (`start-loss`,
//! iptables `statistic` rules in the tool's chain, marked with `packet::LOSS_COMMENT`; never the
//! controller's packets), and `stop-loss` removes those rules from every node.
//!
//! Owns the ops' values; the node commands are `packet`'s, the parameters `faults::packet`'s.

use super::cluster::{Cluster, HealLog};
use super::fault::{Fault, FaultError, JournalView, active_line};
use super::packet;
use crate::faults::packet::LossParams;
use crate::faults::{Verb, verb};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The loss fault and the nodes with its rules.
#[derive(Debug, Default)]
pub struct Loss {
    lossy: BTreeSet<String>,
}

impl Loss {
    fn start(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, String> {
        let p = LossParams::from_value(value)?;
        let idx = cx.choose_targets(p.targets)?;
        let names = cx.node_names(&idx);
        let chain = cx.cfg.partition.chain.clone();
        // Each target drops packets from every other node's address (never the controller's).
        let peers: BTreeMap<String, Vec<String>> = names
            .iter()
            .map(|me| {
                let others: BTreeSet<String> = cx.names().into_iter().filter(|n| n != me).collect();
                (me.clone(), cx.hosts_of(&others))
            })
            .collect();
        self.lossy.extend(names.iter().cloned());
        let detail = json!({ "nodes": names, "probability": p.probability });
        cx.journaled(
            "inject",
            verb::START_LOSS,
            detail.clone(),
            Some(verb::STOP_LOSS),
            |cx| {
                cx.on_nodes(&idx, |r, node| {
                    packet::start_loss(r, &chain, &peers[&node.name], p.probability)
                        .map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(detail)
    }

    /// Remove the loss rules on every node.
    fn stop(&mut self, cx: &mut Cluster) -> Result<Value, String> {
        let chain = cx.cfg.partition.chain.clone();
        let (all, lossy) = (cx.all_idx(), self.lossy.clone());
        cx.journaled(
            "undo",
            verb::STOP_LOSS,
            json!({ "nodes": lossy }),
            None,
            |cx| {
                cx.on_nodes(&all, |r, _| {
                    packet::stop_loss(r, &chain)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            },
        )?;
        self.lossy.clear();
        Ok(json!({ "nodes": lossy }))
    }
}

impl Fault for Loss {
    fn name(&self) -> &'static str {
        "loss"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::StartLoss, Verb::StopLoss]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        Ok(match v {
            Verb::StartLoss => self.start(cx, value)?,
            _ => self.stop(cx)?,
        })
    }

    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        if self.lossy.is_empty() {
            return Ok(());
        }
        self.stop(cx).map(|_| ())
    }

    fn heal_what(&self) -> &'static str {
        "stop loss"
    }

    fn active(&self) -> Option<String> {
        active_line("loss", &self.lossy)
    }

    /// Every node, journal or not; the line counts the rules the survey found.
    fn heal_from_journal(&mut self, cx: &mut Cluster, j: &JournalView<'_>, log: &mut HealLog) {
        cx.heal_step(
            log,
            "remove loss rules",
            |cx| self.stop(cx).map(|_| ()),
            |n| match j.found(n).chain {
                Some((_, loss)) if loss > 0 => Some(format!("removed {loss} loss rule(s)")),
                _ => None,
            },
        );
    }
}
