//! The `partition` fault: cut the network along a grudge drawn from a named shape
//! (`start-partition`; each node drops the packets of the nodes it holds a grudge against, in
//! the tool's iptables chain) and heal every partition (`stop-partition`: the chain's rules go,
//! except the loss fault's).
//!
//! Does not own the shapes (`grudge`), the chain's set-up and removal (`Nemesis::setup`,
//! `teardown`) or the loss rules sharing the chain (`loss`).

use super::cluster::{Cluster, HealLog};
use super::fault::{Fault, FaultError, JournalView};
use super::{grudge_for_with, packet};
use crate::control::Cmd;
use crate::faults::{PARTITION_SHAPES, PRIMARIES_SHAPE, Verb, verb};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// All rules in one `iptables-restore --noflush` (one process, one ruleset commit per node).
const DROP_FROM: &str = r#"set -e
c="$1"; shift
[ $# -gt 0 ] || exit 0
{ echo '*filter'; for src in "$@"; do echo "-A $c -s $src -j DROP"; done; echo COMMIT; } | iptables-restore -w -n
"#;

/// Remove the partition rules: flush the chain if it exists (no chain = nothing to heal); when it
/// also holds loss rules (comment `$2`), delete only the other rules, in one iptables-restore.
const FLUSH_CHAIN: &str = r#"c="$1"; k="$2"
rules=$(iptables -w -S "$c" 2>/dev/null) || exit 0
if printf '%s\n' "$rules" | grep -qF -- "--comment $k"; then
  r=$(printf '%s\n' "$rules" | grep '^-A ' | grep -vF -- "--comment $k" | sed 's/^-A /-D /')
  [ -z "$r" ] || printf '*filter\n%s\nCOMMIT\n' "$r" | iptables-restore -w -n
else
  iptables -w -F "$c"
fi
"#;

/// The partition fault, and whether it cut the network since its last heal.
#[derive(Debug, Default)]
pub struct Partition {
    partitioned: bool,
}

impl Partition {
    fn start(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, FaultError> {
        let names = cx.names();
        let shape = value.as_str().ok_or_else(|| {
            FaultError::Refused(format!(
                "partition shape {value}: expected one of {}",
                PARTITION_SHAPES.join(", ")
            ))
        })?;
        let primaries = if shape == PRIMARIES_SHAPE {
            cx.primaries()
                .map_err(|e| FaultError::Refused(e.to_string()))?
        } else {
            Vec::new()
        };
        let grudge = grudge_for_with(shape, &names, &primaries, cx.rng()).ok_or_else(|| {
            FaultError::Refused(format!(
                "unknown partition shape {shape:?}: expected one of {}",
                PARTITION_SHAPES.join(", ")
            ))
        })?;
        let detail = json!({ "grudge": grudge });
        let chain = cx.cfg.partition.chain.clone();
        let hosts: BTreeMap<String, String> = cx
            .nodes()
            .iter()
            .map(|n| (n.name.clone(), n.host.clone()))
            .collect();
        let idx = cx.idx_of(grudge.keys());
        self.partitioned = true;
        cx.journaled(
            "inject",
            verb::START_PARTITION,
            detail.clone(),
            Some(verb::STOP_PARTITION),
            |cx| {
                cx.run_on(&idx, |node| {
                    let mut args = vec![chain.clone()];
                    args.extend(
                        grudge[&node.name]
                            .iter()
                            .filter_map(|n| hosts.get(n).cloned()),
                    );
                    Cmd::script(DROP_FROM, args).sudo(true)
                })
            },
        )?;
        Ok(detail)
    }

    /// Remove every partition rule (the tool's chain on every node, loss rules kept).
    fn stop(&mut self, cx: &mut Cluster) -> Result<(), String> {
        let chain = cx.cfg.partition.chain.clone();
        let all = cx.all_idx();
        cx.journaled(
            "undo",
            verb::STOP_PARTITION,
            json!({ "chain": chain }),
            None,
            |cx| {
                cx.run_on(&all, |_| {
                    Cmd::script(FLUSH_CHAIN, [chain.as_str(), packet::LOSS_COMMENT]).sudo(true)
                })
            },
        )?;
        self.partitioned = false;
        Ok(())
    }
}

impl Fault for Partition {
    fn name(&self) -> &'static str {
        "partition"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::StartPartition, Verb::StopPartition]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        match v {
            Verb::StartPartition => self.start(cx, value),
            _ => {
                self.stop(cx)?;
                Ok(json!("healed"))
            }
        }
    }

    /// Always: flushing the rules is harmless, and rules of a controller that died before
    /// journaling them go too.
    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        self.stop(cx)
    }

    fn heal_what(&self) -> &'static str {
        "heal partition"
    }

    fn active(&self) -> Option<String> {
        self.partitioned.then(|| "partition".to_string())
    }

    fn heal_from_journal(&mut self, cx: &mut Cluster, j: &JournalView<'_>, log: &mut HealLog) {
        cx.heal_step(
            log,
            "remove partition rules",
            |cx| self.stop(cx),
            |n| match j.found(n).chain {
                Some((rules, _)) if rules > 0 => Some(format!("removed {rules} partition rule(s)")),
                _ => None,
            },
        );
    }
}
