//! The anomaly vocabulary of the transactional checker, once: cycle shapes (G0, G1c, G-single-item,
//! G-nonadjacent-item, G2-item) with their process / real-time variants, the non-cycle anomalies, the dependency edge
//! types, and which of Elle's anomalies (`consistency::Anomaly`) each kind found is.
//!
//! Owns the kinds the checker finds. Does not own their names or what they rule out
//! (`consistency`), or finding them (`infer`, `cycles`).

use super::consistency::Anomaly;
use serde::Serialize;

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
    /// Two or more rw edges, no two adjacent (what snapshot isolation forbids besides G-single).
    GNonadjacent,
    /// Two or more rw edges, two of them adjacent (write skew; allowed by snapshot isolation).
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
    /// In a key's version order a committed append follows a failed one (Elle's
    /// `dirty-update`): the committed transaction built on an aborted state.
    DirtyUpdate,
    /// A list-append read holds an element nobody appended (an rw-register read of a value
    /// nobody wrote is no anomaly, as in Elle: `register` notes it).
    GarbageRead,
    /// A read saw a write its own transaction made later (Elle's `future-read`).
    FutureRead,
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
    /// The anomaly of Elle's vocabulary this is: a cycle with one item anti-dependency is
    /// `G-single-item`; one with two or more is `G-nonadjacent-item` when no two are adjacent,
    /// else `G2-item`.
    pub fn anomaly(self) -> Anomaly {
        use Anomaly as A;
        match self {
            Kind::Cycle(shape, variant) => {
                let [plain, process, realtime] = match shape {
                    CycleShape::G0 => [A::G0, A::G0Process, A::G0Realtime],
                    CycleShape::G1c => [A::G1c, A::G1cProcess, A::G1cRealtime],
                    CycleShape::GSingle => [
                        A::GSingleItem,
                        A::GSingleItemProcess,
                        A::GSingleItemRealtime,
                    ],
                    CycleShape::GNonadjacent => [
                        A::GNonadjacentItem,
                        A::GNonadjacentItemProcess,
                        A::GNonadjacentItemRealtime,
                    ],
                    CycleShape::G2Item => [A::G2Item, A::G2ItemProcess, A::G2ItemRealtime],
                };
                match variant {
                    Variant::Plain => plain,
                    Variant::Process => process,
                    Variant::Realtime => realtime,
                }
            }
            Kind::Other(o) => match o {
                Other::G1a => A::G1a,
                Other::G1b => A::G1b,
                Other::Internal => A::Internal,
                Other::FuzzyRead => A::FuzzyRead,
                Other::FutureRead => A::FutureRead,
                Other::DuplicateElements => A::DuplicateElements,
                Other::IncompatibleOrder => A::IncompatibleOrder,
                Other::LostUpdate => A::LostUpdate,
                Other::DirtyUpdate => A::DirtyUpdate,
                Other::GarbageRead => A::GarbageRead,
                Other::CyclicVersions(_) => A::CyclicVersions,
            },
        }
    }

    /// Elle's name: `G0`, `G1c-process`, `G-single-item-realtime`, `G2-item`, `lost-update`, ….
    pub fn name(self) -> &'static str {
        self.anomaly().name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_elles_anomalies() {
        let rt = Kind::Cycle(CycleShape::G1c, Variant::Realtime);
        assert_eq!(rt.name(), "G1c-realtime");
        assert_eq!(
            Kind::Cycle(CycleShape::GSingle, Variant::Process).name(),
            "G-single-item-process"
        );
        assert_eq!(Kind::Other(Other::LostUpdate).name(), "lost-update");
        let cyclic = Kind::Other(Other::CyclicVersions(VersionSource::SequentialKeys));
        assert_eq!(cyclic.anomaly(), Anomaly::CyclicVersions);
        assert_eq!(edge::pick(edge::WW | edge::PROCESS, edge::PROCESS), Some(8));
        assert_eq!(edge::pick(edge::WW | edge::PROCESS, edge::DATA), Some(1));
    }
}
