//! The single table of fault kinds (nemesis packages): name, the history verbs that start and stop
//! each kind, its plot label and its colour.
//!
//! Owns the mapping nemesis verb → fault kind used by reports (fault bands, fault timeline) and
//! the package names accepted by `nemeses/*.toml` `kind = …` and `--nemesis`. Does not own
//! injecting faults (the rest of `nemesis`), parsing specs (`spec`) or drawing (`report`). Pure
//! data: no IO.
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
//!
//! `clock-offsets` is a measurement, not a fault: it is no kind's verb (see [`CLOCK_OFFSETS_VERB`]).
//! `strobe-clock` is in effect only while its op runs ([`SPANNING_VERBS`]).

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

/// Whether a nemesis op's completion value says the fault took effect on at least one node
/// although the op reported an error (a partly applied fault).
pub fn applied_somewhere(value: &serde_json::Value) -> bool {
    value[APPLIED_KEY].as_array().is_some_and(|a| !a.is_empty())
}

/// Nemesis op `f` of clock-offset measurements; completion value `{"offsets_ms": {node: ms}}`.
pub const CLOCK_OFFSETS_VERB: &str = "clock-offsets";

/// Start verbs whose fault lasts exactly as long as the op itself: the clock strobe flips the
/// clock for its duration and leaves it where it was, all before its completion. Such a fault is
/// in effect from the op's start to its completion; its kind's stop verb (`reset-clock`) that
/// follows finds nothing left to heal.
pub const SPANNING_VERBS: &[&str] = &[crate::generator::STROBE_VERB];

/// True for a [`SPANNING_VERBS`] verb.
pub fn spans_its_op(f: &str) -> bool {
    SPANNING_VERBS.contains(&f)
}

/// Every fault kind, in display order.
pub const KINDS: [FaultKind; 9] = [
    FaultKind {
        name: "partition",
        start_verbs: &["start-partition"],
        stop_verbs: &["stop-partition"],
        label: "network partition",
        color_rgb: (60, 120, 230),
    },
    FaultKind {
        name: "kill",
        start_verbs: &["kill"],
        stop_verbs: &["start"],
        label: "process killed",
        color_rgb: (160, 60, 200),
    },
    FaultKind {
        name: "pause",
        start_verbs: &["pause"],
        stop_verbs: &["resume"],
        label: "process paused",
        color_rgb: (110, 110, 110),
    },
    FaultKind {
        name: "clock",
        start_verbs: &["bump-clock", "strobe-clock"],
        stop_verbs: &["reset-clock"],
        label: "clock skew",
        color_rgb: (0, 150, 150),
    },
    FaultKind {
        name: "loss",
        start_verbs: &["start-loss"],
        stop_verbs: &["stop-loss"],
        label: "packet loss",
        color_rgb: (200, 60, 140),
    },
    FaultKind {
        name: "bandwidth",
        start_verbs: &["start-bandwidth"],
        stop_verbs: &["stop-bandwidth"],
        label: "bandwidth limit",
        color_rgb: (90, 140, 30),
    },
    FaultKind {
        name: "delay",
        start_verbs: &["start-delay"],
        stop_verbs: &["stop-delay"],
        label: "packet delay",
        color_rgb: (150, 100, 40),
    },
    FaultKind {
        name: "promote",
        start_verbs: &["promote"],
        stop_verbs: &[],
        label: "failover (promote)",
        color_rgb: (20, 40, 130),
    },
    FaultKind {
        name: "ssh-drop",
        start_verbs: &[super::ssh_drop::START],
        stop_verbs: &[super::ssh_drop::STOP],
        label: "SSH dropped",
        color_rgb: (200, 170, 0),
    },
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
        ];
        for (verb, name, role) in cases {
            let (k, r) = classify_verb(verb).unwrap_or_else(|| panic!("{verb} unclassified"));
            assert_eq!((k.name, r), (name, role), "{verb}");
        }
        assert_eq!(classify_verb(CLOCK_OFFSETS_VERB), None);
        assert_eq!(classify_verb("read"), None);
        assert_eq!(classify_verb("start-clock"), None);
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
                "ssh-drop"
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
