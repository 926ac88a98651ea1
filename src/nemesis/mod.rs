//! Fault injection: network partitions (iptables in a chain the tool owns), process kills and
//! pauses through the `Db` abilities, power losses (`power`: kill + drop unsynced writes on the
//! lose-unsynced layer), data-file corruption (`corrupt`: bitflip / truncate with the DB
//! stopped), faulty disks (`disk`: errors and latency from the layer), and healing all of them.
//!
//! Pure part: grudges (node → nodes it must not hear from, in `grudge`) built by small
//! functions, target selection, and per-node outcomes of fault steps (`outcomes`), all
//! unit-tested and driven by a seeded RNG. Impure part: `Nemesis`, which applies
//! faults over `Remote`s and remembers what it did so `heal_all` can undo exactly that. The
//! controller's own SSH traffic is never dropped: rules match only the nodes' addresses.
//! Packet faults (loss, bandwidth, delay) are in `packet`; every fault is journaled before it is
//! applied. Targets `primaries` and the `primaries` partition shape ask the system for its current
//! leader(s) through the `Abilities::as_primaries` ability.

//! Clock faults (`bump-clock`, `strobe-clock`, `reset-clock`, `clock-offsets`) live in `clock`.

pub mod clock;
mod corrupt;
pub mod disk;
mod grudge;
pub mod heal;
pub mod leftovers;
mod outcomes;
pub mod packet;
mod packet_faults;
pub mod power;
mod process;
pub mod ssh_drop;
pub mod stall;

pub use grudge::*;
pub use outcomes::NodeOutcomes;
use outcomes::strip_node_prefix;

use crate::client::Completion;
use crate::control::{Cmd, Remote};
use crate::db::Abilities;
use crate::faults::corrupt::CorruptMode;
use crate::faults::{PARTITION_SHAPES, PRIMARIES_SHAPE, Targets, Verb, verb};
use crate::node::Node;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Faults a journal (`faults.jsonl` records, in order) shows as possibly still in effect: every
/// inject that began — done, failed (it may have been partly applied) or cut off — and was not
/// followed by a completed undo of its `undo_with` op. Returns their `begin` records.
pub fn outstanding_faults(records: &[Value]) -> Vec<Value> {
    let mut open: Vec<Value> = Vec::new();
    for r in records {
        match (r["action"].as_str(), r["event"].as_str()) {
            // A one-shot fault (promote) has no undo: nothing stays outstanding.
            (Some("inject"), Some("begin")) if !r["undo_with"].is_null() => open.push(r.clone()),
            (Some("undo"), Some("done")) => open.retain(|o| o["undo_with"] != r["f"]),
            _ => {}
        }
    }
    open
}

/// Choose the nodes a fault hits. `Primaries` here knows no leader and chooses none: use
/// [`select_targets_with`].
pub fn select_targets(targets: Targets, nodes: &[String], rng: &mut ChaCha8Rng) -> Vec<String> {
    select_targets_with(targets, nodes, &[], rng)
}

/// Choose the nodes a fault hits, given the system's current primaries (for
/// `Targets::Primaries`: those of them that are cluster nodes, sorted; the RNG is not used).
pub fn select_targets_with(
    targets: Targets,
    nodes: &[String],
    primaries: &[String],
    rng: &mut ChaCha8Rng,
) -> Vec<String> {
    if matches!(targets, Targets::Primaries | Targets::PrimariesOrOne) {
        let mut v: Vec<String> = nodes
            .iter()
            .filter(|n| primaries.contains(n))
            .cloned()
            .collect();
        v.sort();
        if !v.is_empty() || targets == Targets::Primaries {
            return v;
        }
    }
    let mut shuffled = nodes.to_vec();
    shuffled.shuffle(rng);
    let n = nodes.len();
    let k = match targets {
        Targets::One | Targets::PrimariesOrOne => 1.min(n),
        Targets::Minority => (n.saturating_sub(1) / 2).max(1).min(n),
        Targets::Majority => n / 2 + 1,
        Targets::All => n,
        Targets::Primaries => 0,
    };
    shuffled.truncate(k.min(n));
    shuffled.sort();
    shuffled
}

/// Settings for the partitioner.
#[derive(Debug, Clone)]
pub struct PartitionConfig {
    /// Name of the iptables chain the tool owns (jumped to from INPUT).
    pub chain: String,
}

impl Default for PartitionConfig {
    fn default() -> Self {
        PartitionConfig {
            chain: "SHAKEDOWN".into(),
        }
    }
}

const SETUP_CHAIN: &str = r#"set -e
c="$1"
iptables -w -N "$c" 2>/dev/null || true
iptables -w -C INPUT -j "$c" 2>/dev/null || iptables -w -I INPUT 1 -j "$c"
iptables -w -F "$c"
"#;

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

const TEARDOWN_CHAIN: &str = r#"c="$1"
iptables -w -F "$c" 2>/dev/null || true
while iptables -w -D INPUT -j "$c" 2>/dev/null; do :; done
iptables -w -X "$c" 2>/dev/null || true
"#;

/// Everything a fault needs to reach the cluster.
pub struct NemesisConfig {
    /// Cluster nodes, in the same order as `remotes`.
    pub nodes: Vec<Node>,
    /// One remote per node.
    pub remotes: Vec<Arc<dyn Remote>>,
    /// What the faults need from the system under test (its abilities and data directory),
    /// not its lifecycle: a `Db` coerces to it.
    pub db: Arc<dyn Abilities>,
    /// Partition settings.
    pub partition: PartitionConfig,
    /// Seeded RNG for target choice.
    pub rng: ChaCha8Rng,
    /// Where fault records go (the run's `faults.jsonl`); `None` records nothing.
    pub journal: Option<JournalSink>,
    /// The shakedown binary as the nodes see it, for faults that run it there (the NFQUEUE
    /// delayer); `None` where no such fault can be served.
    pub helper_exe: Option<String>,
}

/// Receives one JSON record per fault step: `{"time", "action": "inject"|"undo", "f", "detail",
/// "undo_with", "event": "begin"|"done"|"failed", "error"}`. An inject is recorded *before* it is
/// applied, with the op that undoes it.
pub type JournalSink = crate::store::JsonlSink;

/// Why the system's primaries are not known ([`Nemesis::primaries`]). A fault aimed at
/// `primaries` fails with it; `primaries-or-one` takes one random node instead, whichever it is.
#[derive(Debug, thiserror::Error)]
pub enum PrimariesError {
    /// The system has no `Primaries` ability.
    #[error("{system} cannot tell its primaries")]
    NotServed {
        /// The system's name.
        system: String,
    },
    /// It has one, and asking it failed.
    #[error(transparent)]
    Asked(#[from] crate::db::DbError),
}

/// Applies and heals faults, remembering what is active.
pub struct Nemesis {
    cfg: NemesisConfig,
    partitioned: bool,
    killed: BTreeSet<String>,
    /// Nodes whose power this nemesis cut or whose OS it crashed (DB killed, unsynced writes
    /// dropped), each with the verb that undoes that cut (`power-on`, `reboot`): a node cut
    /// both ways owes both.
    powered_off: BTreeSet<(String, &'static str)>,
    /// Nodes whose DB this nemesis stopped to damage a data file (`corrupt`).
    corrupted: BTreeSet<String>,
    /// Nodes whose data directory's layer this nemesis made faulty (`disk`).
    disk_faulted: BTreeSet<String>,
    paused: BTreeSet<String>,
    /// Nodes with the tool's loss rules.
    lossy: BTreeSet<String>,
    /// Nodes with the tool's tbf qdisc.
    shaped: BTreeSet<String>,
    /// Nodes with a delay (netem qdisc or NFQUEUE delayer).
    delayed: BTreeSet<String>,
    clock: clock::ClockState,
    /// Nodes whose SSH this nemesis dropped.
    ssh_drop: ssh_drop::DropState,
    /// What the steps of the current op did on each node (reset at the start of `invoke`).
    outcomes: std::sync::Mutex<NodeOutcomes>,
}

impl Nemesis {
    /// A nemesis over the given cluster. Call `setup` before use.
    pub fn new(cfg: NemesisConfig) -> Nemesis {
        Nemesis {
            cfg,
            partitioned: false,
            killed: BTreeSet::new(),
            powered_off: BTreeSet::new(),
            corrupted: BTreeSet::new(),
            disk_faulted: BTreeSet::new(),
            paused: BTreeSet::new(),
            lossy: BTreeSet::new(),
            shaped: BTreeSet::new(),
            delayed: BTreeSet::new(),
            clock: clock::ClockState::default(),
            ssh_drop: ssh_drop::DropState::default(),
            outcomes: std::sync::Mutex::new(NodeOutcomes::default()),
        }
    }

    fn lock_outcomes(&self) -> std::sync::MutexGuard<'_, NodeOutcomes> {
        self.outcomes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The per-node outcomes recorded since the last call (and forget them).
    pub fn take_outcomes(&self) -> NodeOutcomes {
        std::mem::take(&mut *self.lock_outcomes())
    }

    fn names(&self) -> Vec<String> {
        self.cfg.nodes.iter().map(|n| n.name.clone()).collect()
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        self.cfg.nodes.iter().position(|n| n.name == name)
    }

    /// Run `f` on the given node indices in parallel; every node is tried whatever happens on
    /// the others. Each node's result is recorded (see `take_outcomes`); the errors come back as
    /// one "node: error; node: error" string.
    fn on_nodes<F>(&self, idx: &[usize], f: F) -> Result<(), String>
    where
        F: Fn(&dyn Remote, &Node) -> Result<(), String> + Sync,
    {
        let results: Vec<(String, Result<(), String>)> = std::thread::scope(|s| {
            let handles: Vec<_> = idx
                .iter()
                .map(|&i| {
                    let f = &f;
                    let remote = self.cfg.remotes[i].clone();
                    let node = &self.cfg.nodes[i];
                    s.spawn(crate::control::deadline::carry(move || {
                        f(remote.as_ref(), node).map_err(|e| strip_node_prefix(&node.name, e))
                    }))
                })
                .collect();
            handles
                .into_iter()
                .zip(idx)
                .map(|(h, &i)| {
                    let r = h
                        .join()
                        .unwrap_or_else(|_| Err("fault thread panicked".into()));
                    (self.cfg.nodes[i].name.clone(), r)
                })
                .collect()
        });
        let mut outcomes = self.lock_outcomes();
        let mut errs = Vec::new();
        for (name, r) in results {
            if let Err(e) = &r {
                errs.push(format!("{name}: {e}"));
            }
            outcomes.record(&name, r);
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }

    /// Record `begin`, run `step`, record `done` or `failed`.
    fn journaled<T>(
        &mut self,
        action: &str,
        f: &str,
        detail: Value,
        undo_with: Option<&str>,
        step: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut record = json!({
            "time": chrono::Utc::now().to_rfc3339(),
            "action": action,
            "f": f,
            "detail": detail,
            "undo_with": undo_with,
            "event": "begin",
        });
        if let Some(sink) = self.cfg.journal.as_mut() {
            sink(&record);
        }
        // This step's own per-node outcomes go into its record; the op's keep accumulating.
        let before = self.take_outcomes();
        let result = step(self);
        let mine = self.take_outcomes();
        {
            let mut all = self.lock_outcomes();
            *all = before;
            all.merge(mine.clone());
        }
        if let Some(sink) = self.cfg.journal.as_mut() {
            record["time"] = chrono::Utc::now().to_rfc3339().into();
            if !mine.is_empty() {
                record[crate::faults::APPLIED_KEY] = json!(mine.applied);
                record[crate::faults::FAILED_KEY] = json!(mine.failed);
            }
            match &result {
                Ok(_) => record["event"] = "done".into(),
                Err(e) => {
                    record["event"] = "failed".into();
                    record["error"] = e.clone().into();
                }
            }
            sink(&record);
        }
        result
    }

    /// Run the command built for each node on the given nodes in parallel.
    fn run_on(&self, idx: &[usize], cmd: impl Fn(&Node) -> Cmd + Sync) -> Result<(), String> {
        self.on_nodes(idx, |r, n| {
            r.exec_ok(&cmd(n)).map(|_| ()).map_err(|e| e.to_string())
        })
    }

    fn all_idx(&self) -> Vec<usize> {
        (0..self.cfg.nodes.len()).collect()
    }

    /// Create the tool's iptables chain on every node (flushed, jumped to from INPUT).
    pub fn setup(&mut self) -> Result<(), String> {
        let chain = self.cfg.partition.chain.clone();
        self.run_on(&self.all_idx(), |_| {
            Cmd::script(SETUP_CHAIN, [chain.as_str()]).sudo(true)
        })
    }

    /// Apply a grudge: each node drops packets from the nodes it holds a grudge against.
    pub fn partition(&mut self, grudge: &Grudge) -> Result<(), String> {
        let chain = self.cfg.partition.chain.clone();
        let hosts: BTreeMap<String, String> = self
            .cfg
            .nodes
            .iter()
            .map(|n| (n.name.clone(), n.host.clone()))
            .collect();
        let idx: Vec<usize> = grudge.keys().filter_map(|n| self.index_of(n)).collect();
        self.partitioned = true;
        self.run_on(&idx, |node| {
            let mut args = vec![chain.clone()];
            args.extend(
                grudge[&node.name]
                    .iter()
                    .filter_map(|n| hosts.get(n).cloned()),
            );
            Cmd::script(DROP_FROM, args).sudo(true)
        })
    }

    /// Remove every partition rule (flush the tool's chain on every node).
    pub fn heal_partition(&mut self) -> Result<(), String> {
        let chain = self.cfg.partition.chain.clone();
        let all = self.all_idx();
        self.journaled(
            "undo",
            verb::STOP_PARTITION,
            json!({ "chain": chain }),
            None,
            |n| {
                n.run_on(&all, |_| {
                    Cmd::script(FLUSH_CHAIN, [chain.as_str(), packet::LOSS_COMMENT]).sudo(true)
                })
            },
        )?;
        self.partitioned = false;
        Ok(())
    }

    /// Remove the chain and its jump from every node.
    pub fn teardown(&mut self) -> Result<(), String> {
        let chain = self.cfg.partition.chain.clone();
        self.run_on(&self.all_idx(), |_| {
            Cmd::script(TEARDOWN_CHAIN, [chain.as_str()]).sudo(true)
        })
    }

    /// The nodes an op value naming targets hits (null: one node); any other value is an
    /// error naming it, never a fallback.
    fn targets(&mut self, value: &Value) -> Result<Vec<usize>, String> {
        self.choose_targets(Targets::of_value(value)?)
    }

    /// The system's current primaries (asked of it), as node names.
    pub fn primaries(&self) -> Result<Vec<String>, PrimariesError> {
        let db = self.cfg.db.clone();
        let p = db.as_primaries().ok_or_else(|| PrimariesError::NotServed {
            system: db.name().to_string(),
        })?;
        Ok(p.primaries(&self.cfg.remotes, &self.cfg.nodes)?)
    }

    fn choose_targets(&mut self, t: Targets) -> Result<Vec<usize>, String> {
        let primaries = match t {
            Targets::Primaries => self.primaries().map_err(|e| e.to_string())?,
            // No primaries ability, or no answer: one random node instead.
            Targets::PrimariesOrOne => self.primaries().unwrap_or_default(),
            _ => Vec::new(),
        };
        let names = self.names();
        let chosen = select_targets_with(t, &names, &primaries, &mut self.cfg.rng);
        if chosen.is_empty() {
            return Err(format!("targets {:?} chose no node", t.as_str()));
        }
        Ok(chosen.iter().filter_map(|n| self.index_of(n)).collect())
    }

    fn node_names(&self, idx: &[usize]) -> Vec<String> {
        idx.iter()
            .map(|&i| self.cfg.nodes[i].name.clone())
            .collect()
    }

    /// Perform one nemesis op. Unknown ops and failures are reported, never panicked on.
    ///
    /// A fault that took effect on some nodes and failed on others completes with the error
    /// and the value `{"applied": [..], "failed": {node: why}}`. It is carried by
    /// `Completion::Fail` (the variant with both an error and a value); the interpreter records
    /// every nemesis completion as `info`, so the history says "info, partly applied".
    pub fn invoke(&mut self, f: &str, value: &Value) -> Completion {
        self.take_outcomes();
        let Some(v) = Verb::parse(f) else {
            return Completion::Info {
                error: format!("unknown nemesis op {f:?}"),
            };
        };
        let result: Result<Value, String> = match v {
            Verb::StartPartition => {
                let names = self.names();
                let Some(shape) = value.as_str() else {
                    return Completion::Fail {
                        error: format!(
                            "partition shape {value}: expected one of {}",
                            PARTITION_SHAPES.join(", ")
                        ),
                        value: value.clone(),
                    };
                };
                let primaries = if shape == PRIMARIES_SHAPE {
                    match self.primaries() {
                        Ok(p) => p,
                        Err(error) => {
                            return Completion::Fail {
                                error: error.to_string(),
                                value: value.clone(),
                            };
                        }
                    }
                } else {
                    Vec::new()
                };
                let Some(grudge) = grudge_for_with(shape, &names, &primaries, &mut self.cfg.rng)
                else {
                    return Completion::Fail {
                        error: format!(
                            "unknown partition shape {shape:?}: expected one of {}",
                            PARTITION_SHAPES.join(", ")
                        ),
                        value: value.clone(),
                    };
                };
                let detail = json!({ "grudge": grudge });
                self.journaled(
                    "inject",
                    f,
                    detail.clone(),
                    Some(verb::STOP_PARTITION),
                    |n| n.partition(&grudge),
                )
                .map(|()| detail)
            }
            Verb::StopPartition => self.heal_partition().map(|()| json!("healed")),
            Verb::Kill => self.kill(value),
            Verb::Start => self.start_all().map(|nodes| json!({ "nodes": nodes })),
            Verb::PowerLoss => self.power_loss(verb::POWER_LOSS, verb::POWER_ON, value),
            Verb::OsCrash => self.power_loss(verb::OS_CRASH, verb::REBOOT, value),
            Verb::PowerOn | Verb::Reboot => self
                .power_on_as(Some(f))
                .map(|nodes| json!({ "nodes": nodes })),
            Verb::Bitflip | Verb::Truncate => match CorruptMode::of_verb(f) {
                Some(mode) => self.corrupt(mode, value),
                None => Err(format!("unknown nemesis op {f:?}")),
            },
            Verb::StartDiskFault => self.start_disk_fault(value),
            Verb::StopDiskFault => self
                .stop_disk_fault()
                .map(|nodes| json!({ "nodes": nodes })),
            Verb::StartCorrupted => self
                .start_corrupted()
                .map(|nodes| json!({ "nodes": nodes })),
            Verb::Pause => self.pause(value),
            Verb::Promote => self.promote(value),
            Verb::Resume => self.resume_all().map(|nodes| json!({ "nodes": nodes })),
            Verb::StartLoss => self.start_loss(value),
            Verb::StopLoss => self.stop_loss(),
            Verb::StartBandwidth => self.start_bandwidth(value),
            Verb::StopBandwidth => self.stop_bandwidth(),
            Verb::StartDelay => self.start_delay(value),
            Verb::StopDelay => self.stop_delay(),
            Verb::BumpClock => self.bump_clock(value),
            Verb::StrobeClock => self.strobe_clock(value),
            Verb::ResetClock => self.reset_clocks(value),
            Verb::ClockOffsets => self.clock_offsets(),
            Verb::DbStatus => Ok(self.db_status()),
            Verb::StartSshDrop => self.drop_ssh(value),
            Verb::StopSshDrop => self.restore_ssh(value),
            // Served by the runner's nemesis client (stalls), or written to journals only.
            Verb::StartStall | Verb::StopStall | Verb::StopNtp | Verb::StartNtp => {
                Err(format!("unknown nemesis op {f:?}"))
            }
        };
        let outcomes = self.take_outcomes();
        match result {
            Ok(value) => Completion::Ok {
                value,
                version: None,
            },
            Err(error) if !outcomes.applied.is_empty() => Completion::Fail {
                error,
                value: outcomes.to_json(),
            },
            // Nothing was applied anywhere: a definite failure, not an unknown outcome.
            Err(error)
                if error.starts_with(packet::NETEM_UNAVAILABLE)
                    || (f == verb::START_SSH_DROP
                        && !outcomes.failed.is_empty()
                        && outcomes
                            .failed
                            .values()
                            .all(|e| e.starts_with(ssh_drop::NO_SUPERVISOR))) =>
            {
                Completion::Fail {
                    error,
                    value: value.clone(),
                }
            }
            Err(error) => Completion::Info { error },
        }
    }

    fn hosts_of(&self, names: &BTreeSet<String>) -> Vec<String> {
        self.cfg
            .nodes
            .iter()
            .filter(|n| names.contains(&n.name))
            .map(|n| n.host.clone())
            .collect()
    }

    /// Undo every fault: remove packet faults this nemesis applied, heal partitions, resume paused
    /// and restart killed processes, reset stepped clocks and start the NTP daemons it stopped.
    /// Tries all even if one fails; returns
    /// the errors.
    pub fn heal_all(&mut self) -> Vec<String> {
        let mut errs = Vec::new();
        if !self.lossy.is_empty()
            && let Err(e) = self.stop_loss()
        {
            errs.push(format!("stop loss: {e}"));
        }
        if !self.shaped.is_empty()
            && let Err(e) = self.stop_bandwidth()
        {
            errs.push(format!("stop bandwidth: {e}"));
        }
        if !self.delayed.is_empty()
            && let Err(e) = self.stop_delay()
        {
            errs.push(format!("stop delay: {e}"));
        }
        if let Err(e) = self.heal_partition() {
            errs.push(format!("heal partition: {e}"));
        }
        if let Err(e) = self.resume_all() {
            errs.push(format!("resume: {e}"));
        }
        if let Err(e) = self.start_all() {
            errs.push(format!("restart: {e}"));
        }
        if !self.powered_off.is_empty()
            && let Err(e) = self.power_on()
        {
            errs.push(format!("power on: {e}"));
        }
        if self.has_disk_fault()
            && let Err(e) = self.stop_disk_fault()
        {
            errs.push(format!("stop disk fault: {e}"));
        }
        if self.has_corrupted()
            && let Err(e) = self.start_corrupted()
        {
            errs.push(format!("start after corruption: {e}"));
        }
        if let Err(e) = self.reset_clocks(&Value::Null) {
            errs.push(format!("reset clocks: {e}"));
        }
        if let Err(e) = self.restore_ntp() {
            errs.push(format!("restart NTP: {e}"));
        }
        if !self.ssh_dropped().is_empty()
            && let Err(e) = self.restore_ssh(&Value::Null)
        {
            errs.push(format!("wait for sshd: {e}"));
        }
        errs
    }

    /// Names of faults currently active, for the progress display.
    pub fn active(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.partitioned {
            v.push("partition".to_string());
        }
        if !self.killed.is_empty() {
            v.push(format!(
                "killed {}",
                self.killed.iter().cloned().collect::<Vec<_>>().join(",")
            ));
        }
        for (undo, kind) in [
            (verb::POWER_ON, verb::POWER_LOSS),
            (verb::REBOOT, verb::OS_CRASH),
        ] {
            let nodes: Vec<&str> = self
                .powered_off
                .iter()
                .filter(|(_, u)| *u == undo)
                .map(|(n, _)| n.as_str())
                .collect();
            if !nodes.is_empty() {
                v.push(format!("{kind} {}", nodes.join(",")));
            }
        }
        if !self.disk_faulted.is_empty() {
            v.push(format!(
                "disk fault {}",
                self.disk_faulted
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        if !self.corrupted.is_empty() {
            v.push(format!(
                "corrupted {}",
                self.corrupted.iter().cloned().collect::<Vec<_>>().join(",")
            ));
        }
        if !self.paused.is_empty() {
            v.push(format!(
                "paused {}",
                self.paused.iter().cloned().collect::<Vec<_>>().join(",")
            ));
        }
        for (label, set) in [
            ("loss", &self.lossy),
            ("bandwidth", &self.shaped),
            ("delay", &self.delayed),
        ] {
            if !set.is_empty() {
                v.push(format!(
                    "{label} {}",
                    set.iter().cloned().collect::<Vec<_>>().join(",")
                ));
            }
        }
        if !self.clocked().is_empty() {
            v.push(format!(
                "clock {}",
                self.clocked().iter().cloned().collect::<Vec<_>>().join(",")
            ));
        }
        if !self.ssh_dropped().is_empty() {
            v.push(format!("ssh-drop {}", self.ssh_dropped().join(",")));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn nodes(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    /// Who can hear whom under a grudge: `hears(g, a, b)` = a accepts packets from b.
    fn hears(g: &Grudge, a: &str, b: &str) -> bool {
        g.get(a).is_none_or(|s| !s.contains(b))
    }

    #[test]
    fn outstanding_faults_are_injects_without_a_later_undo() {
        let rec = |action: &str, event: &str, f: &str, undo: Option<&str>| json!({ "action": action, "event": event, "f": f, "undo_with": undo });
        let journal = vec![
            rec("inject", "begin", "kill", Some("start")),
            rec("inject", "done", "kill", Some("start")),
            rec("undo", "begin", "start", None),
            rec("undo", "done", "start", None),
            rec("inject", "begin", "start-partition", Some("stop-partition")),
            rec("inject", "done", "start-partition", Some("stop-partition")),
            rec("undo", "begin", "stop-partition", None),
            rec("undo", "failed", "stop-partition", None),
            rec("inject", "begin", "pause", Some("resume")),
            // One-shot (promote): nothing to undo, never outstanding.
            rec("inject", "begin", "promote", None),
            rec("inject", "done", "promote", None),
        ];
        let open = outstanding_faults(&journal);
        let fs: Vec<&str> = open.iter().map(|r| r["f"].as_str().unwrap()).collect();
        assert_eq!(fs, vec!["start-partition", "pause"]);
        assert!(outstanding_faults(&journal[..4]).is_empty());
    }

    #[test]
    fn primaries_targets_and_shape_use_the_leaders_given() {
        let n = nodes(5);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let leaders = vec!["n3".to_string(), "n9".to_string()];
        assert_eq!(
            select_targets_with(Targets::Primaries, &n, &leaders, &mut rng),
            vec!["n3"]
        );
        assert!(select_targets(Targets::Primaries, &n, &mut rng).is_empty());
        assert_eq!(Targets::parse("primaries"), Some(Targets::Primaries));
        // primaries-or-one: the primaries when known, else one random node.
        assert_eq!(
            select_targets_with(Targets::PrimariesOrOne, &n, &leaders, &mut rng),
            select_targets_with(Targets::Primaries, &n, &leaders, &mut rng)
        );
        assert_eq!(
            select_targets_with(Targets::PrimariesOrOne, &n, &[], &mut rng).len(),
            1
        );
        assert_eq!(
            Targets::parse("primaries-or-one"),
            Some(Targets::PrimariesOrOne)
        );
        for name in crate::faults::TARGET_NAMES {
            assert!(Targets::parse(name).is_some(), "{name}");
        }
        // Other targets ignore the primaries.
        assert_eq!(
            select_targets_with(Targets::Majority, &n, &leaders, &mut rng).len(),
            3
        );
        let g = grudge_for_with("primaries", &n, &["n2".to_string()], &mut rng).unwrap();
        assert_eq!(g["n2"].len(), 4, "{g:?}");
        for other in ["n1", "n3", "n4", "n5"] {
            assert_eq!(g[other], BTreeSet::from(["n2".to_string()]), "{g:?}");
        }
        // Two leaders (a deposed one that has not noticed) are cut off together.
        let g = isolate_nodes(&["n1".to_string(), "n4".to_string()], &n);
        assert!(hears(&g, "n1", "n4") && hears(&g, "n4", "n1"));
        assert!(!hears(&g, "n1", "n2") && !hears(&g, "n5", "n4"));
        // No leader known, or everyone a leader: nothing to cut.
        assert!(grudge_for("primaries", &n, &mut rng).unwrap().is_empty());
        assert!(isolate_nodes(&n, &n).is_empty());
    }

    #[test]
    fn target_sizes() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = nodes(5);
        assert_eq!(select_targets(Targets::One, &n, &mut rng).len(), 1);
        assert_eq!(select_targets(Targets::Minority, &n, &mut rng).len(), 2);
        assert_eq!(select_targets(Targets::Majority, &n, &mut rng).len(), 3);
        assert_eq!(select_targets(Targets::All, &n, &mut rng).len(), 5);
        assert_eq!(
            select_targets(Targets::Minority, &nodes(1), &mut rng).len(),
            1
        );
        assert!(Targets::parse("most").is_none());
    }
}
