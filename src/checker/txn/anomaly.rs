//! The anomaly vocabulary of the transactional checker, once: cycle shapes (G0, G1c, G-single,
//! G2-item) with their process / real-time variants, the non-cycle anomalies, the dependency edge
//! types, and which consistency models each anomaly rules out (Elle's `not` / `also-not`).
//!
//! Owns names and the anomaly → model mapping. Does not own finding anomalies (`infer`, `cycles`).

use serde::Serialize;
use std::collections::BTreeSet;

/// A dependency edge type, as a bit so an edge between two transactions can carry several.
pub mod edge {
    /// Write-write: the first appended an element the second's element follows.
    pub const WW: u8 = 1;
    /// Write-read: the second read what the first appended.
    pub const WR: u8 = 2;
    /// Read-write (anti-dependency): the first read a version the second's append overwrote.
    pub const RW: u8 = 4;
    /// The same process ran the first, then the second.
    pub const PROCESS: u8 = 8;
    /// The first completed before the second began.
    pub const REALTIME: u8 = 16;
    /// The data dependencies.
    pub const DATA: u8 = WW | WR | RW;

    /// The name of one edge type bit.
    pub fn name(bit: u8) -> &'static str {
        match bit {
            WW => "ww",
            WR => "wr",
            RW => "rw",
            PROCESS => "process",
            _ => "realtime",
        }
    }

    /// The most telling type among `mask & allowed` (data before order, ww first), if any.
    pub fn pick(mask: u8, allowed: u8) -> Option<u8> {
        let m = mask & allowed;
        (m != 0).then(|| m & m.wrapping_neg())
    }
}

/// The shape of a dependency cycle, by its data edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CycleShape {
    /// Write cycle: ww edges only.
    G0,
    /// Circular information flow: ww and wr edges, at least one wr.
    G1c,
    /// Read skew: exactly one rw edge.
    GSingle,
    /// Anti-dependency cycle with two or more rw edges (write skew).
    G2Item,
}

/// Which non-data edges a cycle needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    /// Data edges only.
    Plain,
    /// At least one process-order edge (no real-time edge).
    Process,
    /// At least one real-time edge.
    Realtime,
}

/// The anomalies that are not cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Other {
    /// Aborted read: a committed read saw an element a failed transaction appended.
    G1a,
    /// Intermediate read: a read ended at an element its writer later followed with another
    /// append to the same key.
    G1b,
    /// A transaction's read of a key lacks its own earlier appends to it.
    Internal,
    /// A transaction read a key twice and saw other transactions' appends appear in between
    /// (a non-repeatable read, ANSI P2; allowed by read committed). Elle counts these as
    /// `internal`; they are split out here because read committed permits them.
    FuzzyRead,
    /// A read list holds an element twice.
    DuplicateElements,
    /// Two reads of a key are not prefixes of one another: no single order of appends.
    IncompatibleOrder,
    /// Two committed transactions read the same version of a key and both appended to it.
    LostUpdate,
    /// A read holds an element nobody appended (rw-register: a value nobody wrote).
    GarbageRead,
    /// rw-register: the version order a key's versions get from an assumed source (writes
    /// follow reads, per-key sequential or linearizable) has a cycle, so the assumption does not
    /// hold; the source is then left out of the inference (as Elle does).
    CyclicVersions(VersionSource),
}

/// Where an rw-register version order comes from (Elle's `:wfr-keys?`, `:sequential-keys?`,
/// `:linearizable-keys?`; the initial state always).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionSource {
    /// The initial state nil precedes every written value.
    InitialState,
    /// A transaction that reads a key and then writes it wrote the version after the one it read.
    WritesFollowReads,
    /// Each key is sequentially consistent: a process sees a key's versions in order.
    SequentialKeys,
    /// Each key is linearizable: a transaction that ends before another begins saw or wrote an
    /// earlier version of every key both touch.
    LinearizableKeys,
}

impl VersionSource {
    /// Elle's name for the source: `initial-state`, `wfr-keys`, `sequential-keys`,
    /// `linearizable-keys`.
    pub fn name(self) -> &'static str {
        match self {
            VersionSource::InitialState => "initial-state",
            VersionSource::WritesFollowReads => "wfr-keys",
            VersionSource::SequentialKeys => "sequential-keys",
            VersionSource::LinearizableKeys => "linearizable-keys",
        }
    }
}

/// One anomaly type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A dependency cycle.
    Cycle(CycleShape, Variant),
    /// A non-cycle anomaly.
    Other(Other),
}

impl Kind {
    /// Elle's name: `G0`, `G1c-process`, `G-single-realtime`, `G2-item`, `lost-update`, ….
    pub fn name(self) -> String {
        match self {
            Kind::Cycle(shape, variant) => {
                let base = match shape {
                    CycleShape::G0 => "G0",
                    CycleShape::G1c => "G1c",
                    CycleShape::GSingle => "G-single",
                    CycleShape::G2Item => "G2-item",
                };
                match variant {
                    Variant::Plain => base.to_string(),
                    Variant::Process => format!("{base}-process"),
                    Variant::Realtime => format!("{base}-realtime"),
                }
            }
            Kind::Other(o) => match o {
                Other::G1a => "G1a",
                Other::G1b => "G1b",
                Other::Internal => "internal",
                Other::FuzzyRead => "fuzzy-read",
                Other::DuplicateElements => "duplicate-elements",
                Other::IncompatibleOrder => "incompatible-order",
                Other::LostUpdate => "lost-update",
                Other::GarbageRead => "garbage-read",
                Other::CyclicVersions(_) => "cyclic-versions",
            }
            .to_string(),
        }
    }

    /// The weakest consistency models this anomaly directly rules out.
    fn rules_out(self) -> &'static [Model] {
        use Model::*;
        match self {
            Kind::Cycle(_, Variant::Realtime) => &[StrictSerializable],
            Kind::Cycle(_, Variant::Process) => &[StrongSessionSerializable],
            Kind::Cycle(CycleShape::G0, _) => &[ReadUncommitted],
            Kind::Cycle(CycleShape::G1c, _) | Kind::Other(Other::G1a | Other::G1b) => {
                &[ReadCommitted]
            }
            Kind::Cycle(CycleShape::GSingle, _)
            | Kind::Other(Other::LostUpdate | Other::FuzzyRead) => {
                &[SnapshotIsolation, RepeatableRead]
            }
            Kind::Cycle(CycleShape::G2Item, _) => &[RepeatableRead],
            // The weakest model that guarantees the violated assumption.
            Kind::Other(Other::CyclicVersions(source)) => match source {
                VersionSource::InitialState => &[ReadUncommitted],
                VersionSource::WritesFollowReads => &[Serializable],
                VersionSource::SequentialKeys => &[StrongSessionSerializable],
                VersionSource::LinearizableKeys => &[StrictSerializable],
            },
            Kind::Other(
                Other::Internal
                | Other::DuplicateElements
                | Other::IncompatibleOrder
                | Other::GarbageRead,
            ) => &[ReadUncommitted],
        }
    }
}

/// The consistency models anomalies are mapped onto, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// Read uncommitted (no G0).
    ReadUncommitted,
    /// Read committed (no G1).
    ReadCommitted,
    /// Repeatable read (no G1, no G2-item).
    RepeatableRead,
    /// Snapshot isolation (no G1, no G-single, no lost update).
    SnapshotIsolation,
    /// Serializable (no G0–G2 cycles of data dependencies).
    Serializable,
    /// Serializable, respecting each process's order.
    StrongSessionSerializable,
    /// Serializable, respecting real-time order.
    StrictSerializable,
}

impl Model {
    /// Every model, weakest first.
    pub const ALL: [Model; 7] = [
        Model::ReadUncommitted,
        Model::ReadCommitted,
        Model::RepeatableRead,
        Model::SnapshotIsolation,
        Model::Serializable,
        Model::StrongSessionSerializable,
        Model::StrictSerializable,
    ];

    /// Its name, as Elle spells it (`snapshot-isolation`).
    pub fn name(self) -> &'static str {
        match self {
            Model::ReadUncommitted => "read-uncommitted",
            Model::ReadCommitted => "read-committed",
            Model::RepeatableRead => "repeatable-read",
            Model::SnapshotIsolation => "snapshot-isolation",
            Model::Serializable => "serializable",
            Model::StrongSessionSerializable => "strong-session-serializable",
            Model::StrictSerializable => "strict-serializable",
        }
    }

    /// The model named `s`.
    pub fn parse(s: &str) -> Option<Model> {
        Model::ALL.into_iter().find(|m| m.name() == s)
    }

    /// The models this one directly implies (one step weaker).
    fn implies(self) -> &'static [Model] {
        use Model::*;
        match self {
            ReadUncommitted => &[],
            ReadCommitted => &[ReadUncommitted],
            RepeatableRead | SnapshotIsolation => &[ReadCommitted],
            Serializable => &[RepeatableRead, SnapshotIsolation],
            StrongSessionSerializable => &[Serializable],
            StrictSerializable => &[StrongSessionSerializable],
        }
    }

    /// Whether this model implies `weaker` (reflexively).
    pub fn implies_model(self, weaker: Model) -> bool {
        self == weaker || self.implies().iter().any(|m| m.implies_model(weaker))
    }
}

/// What the anomalies `kinds` rule out: `not` = the weakest models ruled out, `also_not` = the
/// stronger ones ruled out because they imply one of those.
pub fn ruled_out(kinds: impl IntoIterator<Item = Kind>) -> (Vec<Model>, Vec<Model>) {
    let direct: BTreeSet<Model> = kinds
        .into_iter()
        .flat_map(|k| k.rules_out().iter().copied())
        .collect();
    let all: BTreeSet<Model> = Model::ALL
        .into_iter()
        .filter(|m| direct.iter().any(|d| m.implies_model(*d)))
        .collect();
    let not: Vec<Model> = all
        .iter()
        .copied()
        .filter(|m| !all.iter().any(|w| w != m && m.implies_model(*w)))
        .collect();
    let also_not = all.into_iter().filter(|m| !not.contains(m)).collect();
    (not, also_not)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anomalies_rule_out_the_models_elle_names() {
        let g2 = Kind::Cycle(CycleShape::G2Item, Variant::Plain);
        let (not, also) = ruled_out([g2]);
        assert_eq!(not, vec![Model::RepeatableRead]);
        assert_eq!(
            also,
            vec![
                Model::Serializable,
                Model::StrongSessionSerializable,
                Model::StrictSerializable
            ]
        );
        let (not, _) = ruled_out([Kind::Other(Other::G1a), g2]);
        assert_eq!(not, vec![Model::ReadCommitted]);
        let rt = Kind::Cycle(CycleShape::G1c, Variant::Realtime);
        assert_eq!(ruled_out([rt]), (vec![Model::StrictSerializable], vec![]));
        assert_eq!(rt.name(), "G1c-realtime");
        assert_eq!(Kind::Other(Other::LostUpdate).name(), "lost-update");
        assert!(ruled_out([]).0.is_empty());
        assert_eq!(Model::parse("serializable"), Some(Model::Serializable));
        assert_eq!(edge::pick(edge::WW | edge::PROCESS, edge::PROCESS), Some(8));
        assert_eq!(edge::pick(edge::WW | edge::PROCESS, edge::DATA), Some(1));
    }
}
