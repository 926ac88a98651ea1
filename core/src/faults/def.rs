//! What a fault is before it runs: [`FaultDef`], the one trait every fault's schedule entry (its
//! `[[faults]]` table in `nemeses/*.toml`, a struct beside the fault's parameters in
//! `faults::<name>`) implements — the ops that start and stop it ([`Ops`]), its values checked,
//! whom it hits, how a person names it, and what it needs from a system ([`Needs`]).
//!
//! The spec's `FaultSpec` lists the implementations (one line each); everything that asks
//! "what does this fault need, whom does it hit, what ops does it make" asks through this trait
//! instead of matching on fault kinds. Pure: no IO. Does not own reading a spec file or naming
//! its lines (`spec`), nor performing a fault (`nemesis`).

use super::{FaultKind, Targets, Verb};
use serde_json::Value;

/// The ops that inject and undo one fault of a schedule, as the nemesis generator hands them out.
#[derive(Debug, Clone, PartialEq)]
pub struct Ops {
    /// The verb that starts the fault.
    pub start: Verb,
    /// The start op's value.
    pub value: Value,
    /// The verb that undoes it; `None` for a one-shot fault (promote).
    pub stop: Option<Verb>,
}

impl Ops {
    /// Start with `value`, undo with `stop`.
    pub fn new(start: Verb, value: Value, stop: Option<Verb>) -> Ops {
        Ops { start, value, stop }
    }
}

/// What a fault needs from a system (and from the harness) to be served: the capability
/// interface a system's abilities are checked against before a run starts, and chaos's rails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Kill the server and start it again (kill, power loss, OS crash, a corrupted file).
    pub kill: bool,
    /// SIGSTOP and SIGCONT the server.
    pub pause: bool,
    /// Make a replica the primary.
    pub promote: bool,
    /// Remove a member and add it back.
    pub membership: bool,
    /// The data directory served from the lose-unsynced layer (power loss, OS crash, a disk).
    pub data_layer: bool,
    /// Drops every write not fsynced (power loss, OS crash): nothing undoes it.
    pub loses_unsynced: bool,
    /// A declared data directory whose files it damages (corruption).
    pub data_dir: bool,
    /// Declared data files (corruption without `files` of its own).
    pub data_files: bool,
    /// Steps clocks (the run then measures clock offsets).
    pub clock: bool,
    /// Holds back one of our own clients (client-side: no node is touched).
    pub stall: bool,
    /// Cuts or drops the nodes' traffic (partitions, packet loss): iptables on the nodes.
    pub network: bool,
}

/// One fault of a schedule, as its table declares it.
pub trait FaultDef {
    /// Its row of the vocabulary (`faults::KINDS`): package name, verbs, plot label, colour.
    fn kind(&self) -> &'static FaultKind;

    /// Its package name, `kind = …` in a schedule.
    fn name(&self) -> &'static str {
        self.kind().name
    }

    /// The ops that inject and undo it.
    fn ops(&self) -> Ops;

    /// Its table's keys; the first is the one an error that names no key is about.
    fn keys(&self) -> &'static [&'static str];

    /// Check its values; the error starts with the key it is about, when it is about one.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    /// The target name of a fault that hits chosen nodes (`None`: partitions, promote, stall,
    /// membership).
    fn targets(&self) -> Option<Targets> {
        None
    }

    /// Whether it is aimed at the system's primaries (`targets = "primaries"`; a partition
    /// says so by its shape), so only a system that names its primaries can serve it.
    fn aims_at_primaries(&self) -> bool {
        self.targets() == Some(Targets::Primaries)
    }

    /// What it needs from a system.
    fn needs(&self) -> Needs {
        Needs::default()
    }

    /// The fault as a user wrote it: its kind and the key that says whom it hits
    /// (`kill (targets one)`).
    fn describe(&self) -> String {
        match self.targets() {
            Some(t) => format!("{} (targets {t})", self.name()),
            None => self.name().to_string(),
        }
    }

    /// Why chaos (faults on a cluster that is not ours, undone by `heal`) cannot run it, in
    /// words with what to do instead; `None`: chaos may.
    fn chaos_refusal(&self) -> Option<&'static str> {
        None
    }
}

/// `def`'s values checked, the error as (the key it is about, the message): the longest of the
/// fault's keys the message starts with, else its first key.
pub fn validate(def: &dyn FaultDef) -> Result<(), (&'static str, String)> {
    def.check().map_err(|m| {
        let named = def
            .keys()
            .iter()
            .filter(|k| m.starts_with(*k))
            .max_by_key(|k| k.len());
        (named.copied().unwrap_or(def.keys()[0]), m)
    })
}
