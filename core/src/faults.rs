//! The fault vocabulary, defined once as pure data that the core (`spec`, `generator`), the
//! nemesis and the report all read: every nemesis verb ([`verb`], [`Verb`]: one line each in
//! `verbs!`), the table of fault kinds ([`KINDS`]: nemesis packages, the verbs that start and
//! stop each kind, its plot label and colour), and the keys of partly applied faults.
//!
//! Each fault's pure definition is one module beside this one (`faults::<name>`): its kind's row
//! of [`KINDS`], its schedule entry (the `[[faults]]` table) implementing [`def::FaultDef`] (ops,
//! checks, targets, what it needs from a system) and the parser of its op value.
//!
//! Owns the mapping nemesis verb → fault kind used by reports (fault bands, fault timeline) and
//! the package names accepted by `nemeses/*.toml` `kind = …` and `--nemesis`. Does not own
//! injecting faults (`nemesis`), parsing specs (`spec`) or drawing (`report`). Pure data: no IO,
//! imports nothing from the crate except in [`intervals`] (fault intervals read from a history).
//! The verbs are written in histories and fault journals
//! (`faults.jsonl`): they never change, or `shakedown heal` could not undo old journals.
//!
//! Verbs (ops with process `nemesis`; invoke and completion both typed `info`):
//!
//! | kind | start verbs | stop verbs |
//! |---|---|---|
//! | partition | `start-partition` | `stop-partition` |
//! | kill | `kill` | `start` |
//! | pause | `pause` | `resume` |
//! | clock | `bump-clock`, `strobe-clock` | `reset-clock` |
//! | loss | `start-loss` | `stop-loss` |
//! | bandwidth | `start-bandwidth` | `stop-bandwidth` |
//! | delay | `start-delay` | `stop-delay` |
//! | promote | `promote` (one-shot) | — |
//! | ssh-drop | `start-ssh-drop` | `stop-ssh-drop` |
//! | stall | `start-stall` | `stop-stall` |
//! | power-loss | `power-loss` | `power-on` |
//! | os-crash | `os-crash` | `reboot` |
//! | corrupt | `bitflip`, `truncate` | `start-corrupted` |
//! | disk | `start-disk-fault` | `stop-disk-fault` |
//! | membership | `shrink-cluster` | `grow-cluster` |
//!
//! `clock-offsets` and `db-status` are measurements, not faults: they are no kind's verbs (see
//! [`verb::CLOCK_OFFSETS`], [`verb::DB_STATUS`]).
//! `strobe-clock` and `start-stall` are in effect only while their op runs ([`SPANNING_VERBS`]).

pub mod clock;
pub mod corrupt;
pub mod def;
pub mod disk;
pub mod intervals;
pub mod membership;
pub mod packet;
pub mod partition;
pub mod process;
pub mod promote;
pub mod ssh_drop;
pub mod stall;

/// Declares every nemesis verb once, one line each: its constant in [`verb`] (the text histories
/// and journals hold), its [`Verb`] variant, its place in [`Verb::ALL`] and its [`Verb::as_str`].
macro_rules! verbs {
    ($( $(#[$doc:meta])* $variant:ident $konst:ident = $text:literal; )*) => {
        /// Nemesis verbs: the `f` of nemesis ops in histories and of fault-journal records.
        pub mod verb {
            $( $(#[$doc])* pub const $konst: &str = $text; )*
        }

        /// A nemesis verb, typed: what the nemesis dispatches on (`Nemesis::invoke`). Its text
        /// ([`Verb::as_str`], the [`verb`] constants) is what histories and journals hold; an `f` that
        /// is no verb parses to `None`, and the nemesis reports it as unknown.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Verb {
            $( #[doc = concat!("`", $text, "`.")] $variant, )*
        }

        impl Verb {
            /// Every verb, in declaration order.
            pub const ALL: &'static [Verb] = &[$( Verb::$variant, )*];

            /// The verb's text, as histories and journals hold it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Verb::$variant => verb::$konst, )*
                }
            }
        }
    };
}

verbs! {
    /// Cut the network along a grudge.
    StartPartition START_PARTITION = "start-partition";
    /// Heal every partition.
    StopPartition STOP_PARTITION = "stop-partition";
    /// SIGKILL the DB on the targets.
    Kill KILL = "kill";
    /// Start the DB again where it was killed.
    Start START = "start";
    /// SIGSTOP the DB on the targets.
    Pause PAUSE = "pause";
    /// SIGCONT every paused DB.
    Resume RESUME = "resume";
    /// Step the targets' clocks once.
    BumpClock BUMP_CLOCK = "bump-clock";
    /// Flip the targets' clocks back and forth for a while.
    StrobeClock STROBE_CLOCK = "strobe-clock";
    /// Undo `bump-clock` and `strobe-clock`.
    ResetClock RESET_CLOCK = "reset-clock";
    /// Measure every node's clock offset from the controller (a measurement, no fault).
    ClockOffsets CLOCK_OFFSETS = "clock-offsets";
    /// Ask every node whether its database runs (a measurement, no fault): the run does it
    /// after the final heal and settle, so a node that never came back is on record.
    DbStatus DB_STATUS = "db-status";
    /// Journal only: NTP daemons stopped on real hosts before the first clock fault.
    StopNtp STOP_NTP = "stop-ntp";
    /// Journal only: start the NTP daemons again.
    StartNtp START_NTP = "start-ntp";
    /// Drop packets at random on the targets.
    StartLoss START_LOSS = "start-loss";
    /// Remove every loss rule.
    StopLoss STOP_LOSS = "stop-loss";
    /// Limit the targets' egress bandwidth.
    StartBandwidth START_BANDWIDTH = "start-bandwidth";
    /// Remove the bandwidth limits.
    StopBandwidth STOP_BANDWIDTH = "stop-bandwidth";
    /// Delay the targets' egress packets.
    StartDelay START_DELAY = "start-delay";
    /// Remove the delays.
    StopDelay STOP_DELAY = "stop-delay";
    /// Fail over: make a replica the primary (one-shot).
    Promote PROMOTE = "promote";
    /// Drop SSH on the targets.
    StartSshDrop START_SSH_DROP = "start-ssh-drop";
    /// Wait until SSH is back on every dropped node.
    StopSshDrop STOP_SSH_DROP = "stop-ssh-drop";
    /// Stall one client thread before its next protected op (client-side, like a GC pause).
    StartStall START_STALL = "start-stall";
    /// Wait until the stalled thread runs again.
    StopStall STOP_STALL = "stop-stall";
    /// SIGKILL the DB on the targets and drop every write it did not fsync (its data directory
    /// is on the lose-unsynced layer).
    PowerLoss POWER_LOSS = "power-loss";
    /// Start the DB again where the power was lost.
    PowerOn POWER_ON = "power-on";
    /// The kernel crashed on the targets: what `power-loss` does (SIGKILL the DB, drop every
    /// write it did not fsync), told as a single node's crash (`nemeses/os-crash.toml`).
    OsCrash OS_CRASH = "os-crash";
    /// Start the DB again where the OS crashed.
    Reboot REBOOT = "reboot";
    /// Stop the DB on the targets and flip random bits in one of its data files.
    Bitflip BITFLIP = "bitflip";
    /// Stop the DB on the targets and cut bytes from the tail of one of its data files.
    Truncate TRUNCATE = "truncate";
    /// Start the DB again where its files were corrupted.
    StartCorrupted START_CORRUPTED = "start-corrupted";
    /// Make the targets' data directories fail or slow down writes and fsyncs (on the
    /// lose-unsynced layer).
    StartDiskFault START_DISK_FAULT = "start-disk-fault";
    /// End every disk fault.
    StopDiskFault STOP_DISK_FAULT = "stop-disk-fault";
    /// Remove one member from the cluster through another member's admin interface, then stop
    /// it and wipe its data once the removal shows in the views.
    ShrinkCluster SHRINK_CLUSTER = "shrink-cluster";
    /// Add every removed node back as a fresh member (empty data, joining the cluster).
    GrowCluster GROW_CLUSTER = "grow-cluster";
}

impl Verb {
    /// The verb an op's `f` names; `None` for anything else.
    pub fn parse(f: &str) -> Option<Verb> {
        Verb::ALL.iter().copied().find(|v| v.as_str() == f)
    }
}

impl std::fmt::Display for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Verbs after which a schedule with clock faults measures the clocks.
pub const CLOCK_VERBS: [&str; 3] = [verb::BUMP_CLOCK, verb::STROBE_CLOCK, verb::RESET_CLOCK];

/// Field of a `strobe-clock` op value: the period, in ms, at which the strobe measures every
/// node's clock offset while it runs (it holds the nemesis thread for its whole duration).
pub const STROBE_OFFSETS_EVERY: &str = "offsets_every_ms";

/// The partition shape that cuts the system's current primaries off (it needs the system to tell
/// who leads: `Db::as_primaries`).
pub const PRIMARIES_SHAPE: &str = "primaries";

/// Partition shapes by name, as used in schedules and op values.
pub const PARTITION_SHAPES: &[&str] = &[
    "one",
    "halves",
    "majorities-ring",
    "bridge",
    "minority-third",
    "one-way",
    PRIMARIES_SHAPE,
];

/// Which nodes a fault hits. Written in schedules and op values as its name
/// ([`TARGET_NAMES`]); reading any other name is an error that names it and the allowed ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Targets {
    /// One random node (the default).
    #[default]
    One,
    /// A random minority (fewer than half).
    Minority,
    /// A random majority.
    Majority,
    /// Every node.
    All,
    /// The system's current primaries (leaders), asked of the system at injection time.
    Primaries,
    /// The current primaries when the system can name them (and does), else one random node:
    /// for stock schedules that should reach a lock server or primary where there is one and
    /// still run everywhere.
    PrimariesOrOne,
}

/// Target names accepted in schedules and op values.
pub const TARGET_NAMES: &[&str] = &[
    "one",
    "minority",
    "majority",
    "primaries",
    "primaries-or-one",
    "all",
];

impl Targets {
    /// Parse a target name as used in schedules and op values.
    pub fn parse(s: &str) -> Option<Targets> {
        Some(match s {
            "one" => Targets::One,
            "minority" => Targets::Minority,
            "majority" => Targets::Majority,
            "all" => Targets::All,
            "primaries" => Targets::Primaries,
            "primaries-or-one" => Targets::PrimariesOrOne,
            _ => return None,
        })
    }

    /// The name schedules and op values write.
    pub fn as_str(self) -> &'static str {
        match self {
            Targets::One => "one",
            Targets::Minority => "minority",
            Targets::Majority => "majority",
            Targets::All => "all",
            Targets::Primaries => "primaries",
            Targets::PrimariesOrOne => "primaries-or-one",
        }
    }

    /// Parse a name; the error names it and the allowed ones.
    pub fn named(s: &str) -> Result<Targets, String> {
        Targets::parse(s)
            .ok_or_else(|| format!("targets {s:?}: expected one of {}", TARGET_NAMES.join(", ")))
    }

    /// The targets an op value names (the value itself, or its `"targets"` field: pass
    /// `&v["targets"]`); null is the default, one node. Anything else is an error naming it and
    /// the allowed names.
    pub fn of_value(v: &serde_json::Value) -> Result<Targets, String> {
        match v {
            serde_json::Value::Null => Ok(Targets::One),
            serde_json::Value::String(s) => Targets::named(s),
            other => Err(format!(
                "targets {other}: expected one of {}",
                TARGET_NAMES.join(", ")
            )),
        }
    }
}

impl std::fmt::Display for Targets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Targets {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Targets {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Targets, D::Error> {
        let s = String::deserialize(d)?;
        Targets::named(&s).map_err(serde::de::Error::custom)
    }
}

/// One fault kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultKind {
    /// Package name, as in `nemeses/*.toml` `kind = …` and `--nemesis`.
    pub name: &'static str,
    /// Nemesis verbs (`f`) whose completion puts this fault into effect.
    pub start_verbs: &'static [&'static str],
    /// Nemesis verbs whose completion ends it; empty for one-shot kinds.
    pub stop_verbs: &'static [&'static str],
    /// Human label for plot legends and tables, e.g. "network partition".
    pub label: &'static str,
    /// Band and marker colour as (red, green, blue).
    pub color_rgb: (u8, u8, u8),
}

impl FaultKind {
    /// True when the kind has no stop verb: its start is an instantaneous event (e.g. promote).
    pub fn one_shot(&self) -> bool {
        self.stop_verbs.is_empty()
    }
}

/// Whether a verb starts or stops its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerbRole {
    /// The verb puts the fault into effect.
    Start,
    /// The verb heals it.
    Stop,
}

/// Key of the nodes a partly applied fault took effect on, in a nemesis op's completion value
/// and in fault-journal records: `{"applied": ["n1", "n2"], "failed": {"n3": "why"}}`.
pub const APPLIED_KEY: &str = "applied";
/// Key of the nodes a fault step failed on (node → why), next to [`APPLIED_KEY`].
pub const FAILED_KEY: &str = "failed";

/// Key a nemesis completion's value carries (`true`) when the fault refused before touching any
/// node: a definite failure. Nemesis ops are `info` on both ends (Jepsen's convention), so
/// without it a refusal and an unknown outcome read alike.
pub const REFUSED_KEY: &str = "refused";

/// Whether a nemesis op's completion value says the fault took effect on at least one node
/// although the op reported an error (a partly applied fault).
pub fn applied_somewhere(value: &serde_json::Value) -> bool {
    value[APPLIED_KEY].as_array().is_some_and(|a| !a.is_empty())
}

/// Start verbs whose fault lasts exactly as long as the op itself: the clock strobe flips the
/// clock for its duration and leaves it where it was, all before its completion. Such a fault is
/// in effect from the op's start to its completion; its kind's stop verb (`reset-clock`) that
/// follows finds nothing left to heal.
/// A client stall (`start-stall`) likewise lasts while its op runs: the op waits for a thread to
/// claim the stall and for the stall to end.
pub const SPANNING_VERBS: &[&str] = &[verb::STROBE_CLOCK, verb::START_STALL];

/// True for a [`SPANNING_VERBS`] verb.
pub fn spans_its_op(f: &str) -> bool {
    SPANNING_VERBS.contains(&f)
}

/// Every fault kind, in display order: each fault's row is defined with it (`faults::<name>`).
pub const KINDS: [FaultKind; 15] = [
    partition::KIND,
    process::KILL_KIND,
    process::PAUSE_KIND,
    clock::KIND,
    packet::LOSS_KIND,
    packet::BANDWIDTH_KIND,
    packet::DELAY_KIND,
    promote::KIND,
    ssh_drop::KIND,
    stall::KIND,
    process::POWER_LOSS_KIND,
    process::OS_CRASH_KIND,
    corrupt::KIND,
    disk::KIND,
    membership::KIND,
];

/// The kind named `name` (a package name such as `"clock"`).
pub fn kind(name: &str) -> Option<&'static FaultKind> {
    KINDS.iter().find(|k| k.name == name)
}

/// The kind a nemesis verb belongs to and whether it starts or stops it; `None` for verbs that
/// are no fault's (e.g. `clock-offsets`).
pub fn classify_verb(f: &str) -> Option<(&'static FaultKind, VerbRole)> {
    KINDS.iter().find_map(|k| {
        if k.start_verbs.contains(&f) {
            Some((k, VerbRole::Start))
        } else if k.stop_verbs.contains(&f) {
            Some((k, VerbRole::Stop))
        } else {
            None
        }
    })
}

/// Colour of a kind by name; kinds outside the table get a stable colour from a small palette
/// (hash of the name) distinct from the table's.
pub fn color_of(name: &str) -> (u8, u8, u8) {
    if let Some(k) = kind(name) {
        return k.color_rgb;
    }
    const PALETTE: [(u8, u8, u8); 4] = [(230, 120, 0), (120, 90, 200), (0, 110, 80), (170, 40, 40)];
    let h = name
        .bytes()
        .fold(0usize, |a, b| a.wrapping_mul(31).wrapping_add(b as usize));
    PALETTE[h % PALETTE.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_contract_verb_classifies_to_its_kind() {
        let cases = [
            ("start-partition", "partition", VerbRole::Start),
            ("stop-partition", "partition", VerbRole::Stop),
            ("kill", "kill", VerbRole::Start),
            ("start", "kill", VerbRole::Stop),
            ("pause", "pause", VerbRole::Start),
            ("resume", "pause", VerbRole::Stop),
            ("bump-clock", "clock", VerbRole::Start),
            ("strobe-clock", "clock", VerbRole::Start),
            ("reset-clock", "clock", VerbRole::Stop),
            ("start-loss", "loss", VerbRole::Start),
            ("stop-loss", "loss", VerbRole::Stop),
            ("start-bandwidth", "bandwidth", VerbRole::Start),
            ("stop-bandwidth", "bandwidth", VerbRole::Stop),
            ("start-delay", "delay", VerbRole::Start),
            ("stop-delay", "delay", VerbRole::Stop),
            ("promote", "promote", VerbRole::Start),
            ("start-ssh-drop", "ssh-drop", VerbRole::Start),
            ("stop-ssh-drop", "ssh-drop", VerbRole::Stop),
            ("start-stall", "stall", VerbRole::Start),
            ("stop-stall", "stall", VerbRole::Stop),
            ("power-loss", "power-loss", VerbRole::Start),
            ("power-on", "power-loss", VerbRole::Stop),
            ("os-crash", "os-crash", VerbRole::Start),
            ("reboot", "os-crash", VerbRole::Stop),
            ("bitflip", "corrupt", VerbRole::Start),
            ("truncate", "corrupt", VerbRole::Start),
            ("start-corrupted", "corrupt", VerbRole::Stop),
            ("start-disk-fault", "disk", VerbRole::Start),
            ("stop-disk-fault", "disk", VerbRole::Stop),
            ("shrink-cluster", "membership", VerbRole::Start),
            ("grow-cluster", "membership", VerbRole::Stop),
        ];
        for (verb, name, role) in cases {
            let (k, r) = classify_verb(verb).unwrap_or_else(|| panic!("{verb} unclassified"));
            assert_eq!((k.name, r), (name, role), "{verb}");
        }
        assert_eq!(classify_verb(verb::CLOCK_OFFSETS), None);
        assert_eq!(classify_verb(verb::DB_STATUS), None);
        assert_eq!(classify_verb("read"), None);
        assert_eq!(classify_verb("start-clock"), None);
    }

    #[test]
    fn every_verb_parses_back_and_every_kind_verb_is_one() {
        for &v in Verb::ALL {
            assert_eq!(Verb::parse(v.as_str()), Some(v));
        }
        let mut texts: Vec<&str> = Verb::ALL.iter().map(|v| v.as_str()).collect();
        texts.sort();
        texts.dedup();
        assert_eq!(texts.len(), Verb::ALL.len(), "two verbs share a text");
        for k in &KINDS {
            for f in k.start_verbs.iter().chain(k.stop_verbs) {
                assert!(Verb::parse(f).is_some(), "{f}");
            }
        }
        assert_eq!(Verb::parse("frobnicate"), None);
    }

    #[test]
    fn table_is_consistent() {
        let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        assert_eq!(
            names,
            [
                "partition",
                "kill",
                "pause",
                "clock",
                "loss",
                "bandwidth",
                "delay",
                "promote",
                "ssh-drop",
                "stall",
                "power-loss",
                "os-crash",
                "corrupt",
                "disk",
                "membership"
            ]
        );
        // No verb belongs to two kinds or to both roles.
        let mut verbs: Vec<&str> = KINDS
            .iter()
            .flat_map(|k| k.start_verbs.iter().chain(k.stop_verbs))
            .copied()
            .collect();
        let n = verbs.len();
        verbs.sort();
        verbs.dedup();
        assert_eq!(verbs.len(), n, "a verb is listed twice");
        // Colours are pairwise distinct, and labels non-empty.
        for (i, a) in KINDS.iter().enumerate() {
            assert!(
                !a.label.is_empty() && !a.start_verbs.is_empty(),
                "{}",
                a.name
            );
            for b in &KINDS[i + 1..] {
                assert_ne!(a.color_rgb, b.color_rgb, "{} and {}", a.name, b.name);
            }
        }
        assert!(kind("promote").unwrap().one_shot());
        assert!(KINDS.iter().filter(|k| k.one_shot()).count() == 1);
    }

    #[test]
    fn colours_of_unknown_kinds_are_stable_and_not_from_the_table() {
        assert_eq!(color_of("kill"), (160, 60, 200));
        let c = color_of("frobnicate");
        assert_eq!(c, color_of("frobnicate"));
        assert!(KINDS.iter().all(|k| k.color_rgb != c));
        assert!(kind("nope").is_none());
    }
}
