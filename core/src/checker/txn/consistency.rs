//! Elle's consistency-model lattice, as one table: the model names (friendly, Adya's `PL-*`
//! canonical names and aliases), which model implies which, the anomalies each model directly
//! proscribes, and which anomaly implies which (G1a ⇒ G1, G-single-item ⇒ G2-item, …). From them:
//! the anomalies a set of models prohibits (Elle's `anomalies-prohibited-by`), the anomalies that
//! imply a set (`all-anomalies-implying`), and the boundary of a set of found anomalies — `not`,
//! the weakest models they rule out, and `also_not`, every stronger one (Elle's
//! `friendly-boundary`). Transcribed from `elle/consistency_model.clj` (jepsen-io/elle), every
//! model it names: also its single-object models (linearizable, sequential, causal, PRAM, …)
//! and view-serializable, session-serializable and 1SR, which proscribe nothing, so that the
//! relations are Elle's graph edge for edge. The tests check the table against a transcription
//! of Elle's three maps (`implied-anomalies`, `models`, `direct-proscribed-anomalies`) evaluated
//! as Elle evaluates them, model by model. Elle's friendly name for PL-SS is
//! `strong-serializable`; ours is `strict-serializable` (both parse). Elle's
//! `anomaly-severity-graph` (G1c above G-single and G2-item, …) orders its search and implies
//! nothing: it is not here.
//!
//! Two anomalies are shakedown's own, tied in where Elle would count them: `fuzzy-read` (Elle
//! reports a transaction's non-repeatable read as `internal`) implies `internal`, and
//! `garbage-read` (a list-append read of an element nobody appended) is proscribed by read
//! uncommitted, as Elle's `duplicate-elements` is. (An rw-register read of a value nobody wrote is
//! no anomaly, as in Elle: `register` notes it.)
//!
//! Owns names and relations. Does not own which anomalies the checker can find (`judge`) or
//! finding them. Pure.

use serde::{Serialize, Serializer};
use std::collections::BTreeSet;

/// An enum with one name per variant, every variant in `ALL`, and `name()` / `parse()`.
macro_rules! named {
    ($(#[$m:meta])* $ty:ident { $($(#[$vm:meta])* $v:ident = $n:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $ty { $($(#[$vm])* $v,)* }
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$v,)*];
            /// Its name, as Elle spells it.
            pub fn name(self) -> &'static str {
                match self { $($ty::$v => $n,)* }
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    };
}

named! {
    /// A consistency model, by Elle's friendly name.
    Model {
        /// Adya PL-1: no G0.
        ReadUncommitted = "read-uncommitted",
        /// Adya PL-2: no G1.
        ReadCommitted = "read-committed",
        /// Adya PL-CS.
        CursorStability = "cursor-stability",
        /// Adya PL-2L.
        MonotonicView = "monotonic-view",
        /// Adya PL-MSR.
        MonotonicSnapshotRead = "monotonic-snapshot-read",
        /// Adya PL-2+.
        ConsistentView = "consistent-view",
        /// Adya PL-FCV.
        ForwardConsistentView = "forward-consistent-view",
        /// Adya PL-2.99.
        RepeatableRead = "repeatable-read",
        /// Adya PL-SI.
        SnapshotIsolation = "snapshot-isolation",
        /// Adya PL-3U.
        UpdateSerializable = "update-serializable",
        /// Adya PL-3 (conflict serializable).
        Serializable = "serializable",
        /// Adya PL-SS (also strong-serializable).
        StrictSerializable = "strict-serializable",
        /// Bailis.
        MonotonicAtomicView = "monotonic-atomic-view",
        /// Cerone.
        ReadAtomic = "read-atomic",
        /// Cerone.
        UpdateAtomic = "update-atomic",
        /// Cerone's causal consistency.
        CausalCerone = "causal-cerone",
        /// Cerone's prefix consistency.
        Prefix = "prefix",
        /// Cerone.
        ParallelSnapshotIsolation = "parallel-snapshot-isolation",
        /// PL-1 respecting process order.
        StrongSessionReadUncommitted = "strong-session-read-uncommitted",
        /// PL-2 respecting process order.
        StrongSessionReadCommitted = "strong-session-read-committed",
        /// PL-1 respecting real-time order.
        StrongReadUncommitted = "strong-read-uncommitted",
        /// PL-2 respecting real-time order.
        StrongReadCommitted = "strong-read-committed",
        /// Snapshot isolation respecting process order.
        StrongSessionSnapshotIsolation = "strong-session-snapshot-isolation",
        /// Snapshot isolation respecting real-time order.
        StrongSnapshotIsolation = "strong-snapshot-isolation",
        /// Serializable respecting process order.
        StrongSessionSerializable = "strong-session-serializable",
        /// Bernstein's view serializability (conflict serializable implies it).
        ViewSerializable = "view-serializable",
        /// Zuikeviciute & Pedone (strong serializable implies it).
        SessionSerializable = "session-serializable",
        /// One-copy serializability (Zuikeviciute & Pedone).
        OneCopySerializable = "1SR",
        /// Single-object: linearizable (Bailis; strict serializable implies it).
        Linearizable = "linearizable",
        /// Single-object: sequential consistency.
        Sequential = "sequential",
        /// Single-object: causal consistency.
        Causal = "causal",
        /// A session guarantee.
        WritesFollowReads = "writes-follow-reads",
        /// Pipelined RAM.
        Pram = "PRAM",
        /// A session guarantee.
        MonotonicReads = "monotonic-reads",
        /// A session guarantee.
        MonotonicWrites = "monotonic-writes",
        /// A session guarantee.
        ReadYourWrites = "read-your-writes",
    }
}

named! {
    /// An anomaly type, by Elle's name.
    Anomaly {
        /// Write cycle.
        G0 = "G0",
        /// G0 with process edges.
        G0Process = "G0-process",
        /// G0 with real-time edges.
        G0Realtime = "G0-realtime",
        /// Aborted read.
        G1a = "G1a",
        /// Intermediate read.
        G1b = "G1b",
        /// Circular information flow.
        G1c = "G1c",
        /// G1c with process edges.
        G1cProcess = "G1c-process",
        /// G1c with real-time edges.
        G1cRealtime = "G1c-realtime",
        /// G1a, G1b or G1c.
        G1 = "G1",
        /// G1 with process edges.
        G1Process = "G1-process",
        /// G1 with real-time edges.
        G1Realtime = "G1-realtime",
        /// A cycle with exactly one item anti-dependency edge.
        GSingleItem = "G-single-item",
        /// G-single-item with process edges.
        GSingleItemProcess = "G-single-item-process",
        /// G-single-item with real-time edges.
        GSingleItemRealtime = "G-single-item-realtime",
        /// A cycle with exactly one anti-dependency edge (item or predicate).
        GSingle = "G-single",
        /// G-single with process edges.
        GSingleProcess = "G-single-process",
        /// G-single with real-time edges.
        GSingleRealtime = "G-single-realtime",
        /// A cycle with two or more item anti-dependency edges, none adjacent.
        GNonadjacentItem = "G-nonadjacent-item",
        /// G-nonadjacent-item with process edges.
        GNonadjacentItemProcess = "G-nonadjacent-item-process",
        /// G-nonadjacent-item with real-time edges.
        GNonadjacentItemRealtime = "G-nonadjacent-item-realtime",
        /// A cycle with two or more anti-dependency edges, none adjacent.
        GNonadjacent = "G-nonadjacent",
        /// G-nonadjacent with process edges.
        GNonadjacentProcess = "G-nonadjacent-process",
        /// G-nonadjacent with real-time edges.
        GNonadjacentRealtime = "G-nonadjacent-realtime",
        /// An anti-dependency cycle (item or predicate).
        G2 = "G2",
        /// G2 with process edges.
        G2Process = "G2-process",
        /// G2 with real-time edges.
        G2Realtime = "G2-realtime",
        /// An item anti-dependency cycle.
        G2Item = "G2-item",
        /// G2-item with process edges.
        G2ItemProcess = "G2-item-process",
        /// G2-item with real-time edges.
        G2ItemRealtime = "G2-item-realtime",
        /// Adya's interference (SI).
        GSIa = "GSIa",
        /// Adya's missed effects (SI).
        GSIb = "GSIb",
        /// GSIa or GSIb.
        GSI = "GSI",
        /// Two reads no single order of appends explains.
        IncompatibleOrder = "incompatible-order",
        /// A read saw a write its own transaction made later.
        FutureRead = "future-read",
        /// A committed write built on an aborted one.
        DirtyUpdate = "dirty-update",
        /// Two committed transactions read the same version and both wrote the key.
        LostUpdate = "lost-update",
        /// Write skew.
        WriteSkew = "write-skew",
        /// A transaction's reads disagree with its own writes.
        Internal = "internal",
        /// Adya's cursor-stability anomaly.
        GCursor = "G-cursor",
        /// Adya's monotonic-view anomaly.
        GMonotonic = "G-monotonic",
        /// Adya's monotonic-snapshot-read anomaly.
        GMsr = "G-MSR",
        /// Adya's missed effects, as forward consistent view proscribes it.
        GSIbAdya = "G-SIb",
        /// Adya's snapshot-isolation anomaly.
        GSi = "G-SI",
        /// A predicate read missed a version every version of which matches.
        PredicateReadMiss = "predicate-read-miss",
        /// A read list holds an element twice.
        DuplicateElements = "duplicate-elements",
        /// A version order with a cycle.
        CyclicVersions = "cyclic-versions",
        /// Adya's update-serializability anomaly.
        GUpdate = "G-update",
        /// A cycle exists in the PL-1 graph.
        Pl1CycleExists = "PL-1-cycle-exists",
        /// A cycle exists in the PL-2 graph.
        Pl2CycleExists = "PL-2-cycle-exists",
        /// A cycle exists in the PL-2.99 graph.
        Pl299CycleExists = "PL-2.99-cycle-exists",
        /// A cycle exists in the PL-SI graph.
        PlSiCycleExists = "PL-SI-cycle-exists",
        /// A cycle exists in the PL-3 graph.
        Pl3CycleExists = "PL-3-cycle-exists",
        /// A cycle exists in the PL-SS graph.
        PlSsCycleExists = "PL-SS-cycle-exists",
        /// A cycle exists in the strong-session-PL-1 graph.
        StrongSessionPl1CycleExists = "strong-session-PL-1-cycle-exists",
        /// A cycle exists in the strong-session-PL-2 graph.
        StrongSessionPl2CycleExists = "strong-session-PL-2-cycle-exists",
        /// A cycle exists in the strong-PL-1 graph.
        StrongPl1CycleExists = "strong-PL-1-cycle-exists",
        /// A cycle exists in the strong-PL-2 graph.
        StrongPl2CycleExists = "strong-PL-2-cycle-exists",
        /// A cycle exists in the strong-session-SI graph.
        StrongSessionSiCycleExists = "strong-session-snapshot-isolation-cycle-exists",
        /// A cycle exists in the strong-SI graph.
        StrongSiCycleExists = "strong-snapshot-isolation-cycle-exists",
        /// A cycle exists in the strong-session-serializable graph.
        StrongSessionSerializableCycleExists = "strong-session-serializable-cycle-exists",
        /// shakedown's: a transaction read a key twice and saw others' writes in between.
        FuzzyRead = "fuzzy-read",
        /// shakedown's: a read of a value nobody wrote.
        GarbageRead = "garbage-read",
    }
}

impl Model {
    /// Adya's canonical name, where Elle has one (`PL-2.99` for repeatable-read).
    pub fn canonical(self) -> Option<&'static str> {
        use Model::*;
        Some(match self {
            ReadUncommitted => "PL-1",
            ReadCommitted => "PL-2",
            CursorStability => "PL-CS",
            MonotonicView => "PL-2L",
            MonotonicSnapshotRead => "PL-MSR",
            ConsistentView => "PL-2+",
            ForwardConsistentView => "PL-FCV",
            RepeatableRead => "PL-2.99",
            SnapshotIsolation => "PL-SI",
            UpdateSerializable => "PL-3U",
            Serializable => "PL-3",
            StrictSerializable => "PL-SS",
            StrongSessionReadUncommitted => "strong-session-PL-1",
            StrongSessionReadCommitted => "strong-session-PL-2",
            StrongReadUncommitted => "strong-PL-1",
            StrongReadCommitted => "strong-PL-2",
            _ => return None,
        })
    }

    /// The model named `s`: a friendly name, a canonical name or one of Elle's aliases
    /// (`conflict-serializable`, `strong-serializable`).
    pub fn parse(s: &str) -> Option<Model> {
        match s {
            "conflict-serializable" => return Some(Model::Serializable),
            "strong-serializable" => return Some(Model::StrictSerializable),
            _ => {}
        }
        Model::ALL
            .iter()
            .copied()
            .find(|m| m.name() == s || m.canonical() == Some(s))
    }

    /// Every name `parse` accepts, friendly names first.
    pub fn all_names() -> Vec<&'static str> {
        let mut v: Vec<&'static str> = Model::ALL.iter().map(|m| m.name()).collect();
        v.extend(["conflict-serializable", "strong-serializable"]);
        v.extend(Model::ALL.iter().filter_map(|m| m.canonical()));
        v
    }

    /// The models this one directly implies (Elle's `models` graph).
    fn implies(self) -> &'static [Model] {
        use Model::*;
        match self {
            ReadUncommitted => &[],
            ReadCommitted => &[ReadUncommitted],
            CursorStability => &[ReadCommitted],
            MonotonicView | MonotonicSnapshotRead => &[ReadCommitted],
            ConsistentView => &[CursorStability, MonotonicView],
            ForwardConsistentView => &[ConsistentView],
            RepeatableRead => &[CursorStability, MonotonicAtomicView],
            SnapshotIsolation => &[
                ForwardConsistentView,
                MonotonicAtomicView,
                MonotonicSnapshotRead,
                ParallelSnapshotIsolation,
                Prefix,
            ],
            UpdateSerializable => &[ForwardConsistentView],
            Serializable => &[
                RepeatableRead,
                UpdateSerializable,
                SnapshotIsolation,
                ViewSerializable,
            ],
            // Elle's `:strong-serializable [:session-serializable]` names PL-SS too.
            StrictSerializable => &[
                Serializable,
                Linearizable,
                SnapshotIsolation,
                StrongSnapshotIsolation,
                StrongSessionSerializable,
                SessionSerializable,
            ],
            MonotonicAtomicView => &[ReadCommitted],
            ReadAtomic => &[MonotonicAtomicView],
            UpdateAtomic => &[ReadAtomic],
            CausalCerone => &[ReadAtomic],
            Prefix => &[CausalCerone],
            ParallelSnapshotIsolation => &[CausalCerone, UpdateAtomic],
            StrongSessionReadUncommitted => &[ReadUncommitted],
            StrongSessionReadCommitted => &[ReadCommitted, StrongSessionReadUncommitted],
            StrongReadUncommitted => &[StrongSessionReadUncommitted],
            StrongReadCommitted => &[StrongSessionReadCommitted, StrongReadUncommitted],
            StrongSessionSnapshotIsolation => &[SnapshotIsolation, StrongSessionReadCommitted],
            StrongSnapshotIsolation => &[StrongSessionSnapshotIsolation, StrongReadCommitted],
            StrongSessionSerializable => &[Serializable, StrongSessionSnapshotIsolation],
            SessionSerializable => &[OneCopySerializable],
            Linearizable => &[Sequential],
            Sequential => &[Causal],
            Causal => &[WritesFollowReads, Pram],
            Pram => &[MonotonicReads, MonotonicWrites, ReadYourWrites],
            ViewSerializable | OneCopySerializable | WritesFollowReads | MonotonicReads
            | MonotonicWrites | ReadYourWrites => &[],
        }
    }

    /// The anomalies this model proscribes over the models it implies (Elle's
    /// `direct-proscribed-anomalies`, plus shakedown's `garbage-read`).
    fn proscribes(self) -> &'static [Anomaly] {
        use Anomaly::*;
        use Model::*;
        match self {
            CausalCerone | ParallelSnapshotIsolation | Prefix => &[Internal, G1a],
            CursorStability => &[G1, GCursor, LostUpdate],
            MonotonicView => &[G1, GMonotonic],
            MonotonicSnapshotRead => &[G1, GMsr],
            ConsistentView => &[G1, GSingle],
            ForwardConsistentView => &[G1, GSIbAdya],
            Serializable => &[G1, G2, PredicateReadMiss, Pl3CycleExists, Internal],
            ReadCommitted => &[G1, Pl2CycleExists],
            ReadUncommitted => &[
                G0,
                DuplicateElements,
                CyclicVersions,
                Pl1CycleExists,
                GarbageRead,
            ],
            SnapshotIsolation => &[Internal, G1, GSi, GNonadjacent, PlSiCycleExists],
            ReadAtomic => &[Internal, G1a, FutureRead],
            RepeatableRead => &[G1, G2Item, Pl299CycleExists, LostUpdate],
            UpdateAtomic => &[LostUpdate],
            StrictSerializable => &[G1, G1cRealtime, G2Realtime, PlSsCycleExists],
            StrongSessionReadUncommitted => &[StrongSessionPl1CycleExists, G0Process],
            StrongSessionReadCommitted => &[StrongSessionPl2CycleExists, G1cProcess],
            StrongReadUncommitted => &[StrongPl1CycleExists, G0Realtime],
            StrongReadCommitted => &[StrongPl2CycleExists, G1cRealtime],
            StrongSessionSnapshotIsolation => &[
                Internal,
                G1Process,
                GNonadjacentProcess,
                StrongSessionSiCycleExists,
            ],
            StrongSnapshotIsolation => &[
                Internal,
                G1Realtime,
                GNonadjacentRealtime,
                StrongSiCycleExists,
            ],
            StrongSessionSerializable => {
                &[G1Process, G2Process, StrongSessionSerializableCycleExists]
            }
            UpdateSerializable => &[G1, GUpdate],
            // Elle proscribes nothing directly for these: what they forbid comes from the
            // models they imply (monotonic atomic view) or from none (the single-object and
            // session models, view serializability, 1SR).
            MonotonicAtomicView | ViewSerializable | SessionSerializable | OneCopySerializable
            | Linearizable | Sequential | Causal | WritesFollowReads | Pram | MonotonicReads
            | MonotonicWrites | ReadYourWrites => &[],
        }
    }

    /// Whether this model implies `weaker` (reflexively).
    pub fn implies_model(self, weaker: Model) -> bool {
        self == weaker || self.implies().iter().any(|m| m.implies_model(weaker))
    }
}

impl Anomaly {
    /// Whether only real-time order can show it: the `-realtime` cycles and the cycle-exists
    /// markers of the models that respect real time (`PL-SS`, `strong-PL-1`, `strong-PL-2`,
    /// `strong-snapshot-isolation`).
    pub fn needs_realtime(self) -> bool {
        use Anomaly::*;
        self.name().ends_with("-realtime")
            || matches!(
                self,
                PlSsCycleExists | StrongPl1CycleExists | StrongPl2CycleExists | StrongSiCycleExists
            )
    }

    /// Whether seeing it takes process order (a `-process` cycle, or a strong-session model's
    /// cycle-exists marker): Elle's `process-anomaly-types`.
    pub fn needs_process(self) -> bool {
        use Anomaly::*;
        self.name().ends_with("-process")
            || matches!(
                self,
                StrongSessionPl1CycleExists
                    | StrongSessionPl2CycleExists
                    | StrongSessionSiCycleExists
                    | StrongSessionSerializableCycleExists
            )
    }

    /// The anomalies this one directly implies (Elle's `implied-anomalies`).
    fn implies(self) -> &'static [Anomaly] {
        use Anomaly::*;
        match self {
            G0 => &[G1c, G0Process],
            G0Process => &[G1cProcess, G0Realtime],
            G0Realtime => &[G1cRealtime],
            G1a | G1b => &[G1],
            G1c => &[G1, G1cProcess],
            G1cProcess => &[G1cRealtime, G1Process],
            G1cRealtime => &[G1Realtime],
            G1 => &[G1Process],
            G1Process => &[G1Realtime],
            GSingleItem => &[GSingle, GSingleItemProcess, GNonadjacentItem],
            GSingleItemProcess => &[GSingleProcess, GSingleItemRealtime, GNonadjacentItemProcess],
            GSingleItemRealtime => &[GSingleRealtime, GNonadjacentItemRealtime],
            GSingle => &[GNonadjacent, GSIb, GSingleProcess],
            GSingleProcess => &[GNonadjacentProcess, GSingleRealtime],
            GSingleRealtime => &[GNonadjacentRealtime],
            GNonadjacentItem => &[GNonadjacent, G2Item, GNonadjacentItemProcess],
            GNonadjacentItemProcess => {
                &[GNonadjacentProcess, G2ItemProcess, GNonadjacentItemRealtime]
            }
            GNonadjacentItemRealtime => &[G2ItemRealtime, GNonadjacentRealtime],
            GNonadjacent => &[G2, GNonadjacentProcess],
            GNonadjacentProcess => &[G2Process, GNonadjacentRealtime],
            GNonadjacentRealtime => &[G2Realtime],
            G2 => &[G2Process],
            G2Item => &[G2, G2ItemProcess],
            G2ItemProcess => &[G2Process, G2ItemRealtime],
            G2ItemRealtime => &[G2Realtime],
            G2Process => &[G2Realtime],
            GSIa | GSIb => &[GSI],
            IncompatibleOrder | DirtyUpdate => &[G1a],
            FutureRead => &[G1c],
            LostUpdate => &[WriteSkew, G2Item],
            WriteSkew => &[G2],
            FuzzyRead => &[Internal],
            _ => &[],
        }
    }

    /// The anomaly named `s`.
    pub fn parse(s: &str) -> Option<Anomaly> {
        Anomaly::ALL.iter().copied().find(|a| a.name() == s)
    }
}

/// `seeds` and every anomaly they imply (Elle's `all-implied-anomalies`).
pub fn implied_by(seeds: impl IntoIterator<Item = Anomaly>) -> BTreeSet<Anomaly> {
    let mut out = BTreeSet::new();
    let mut todo: Vec<Anomaly> = seeds.into_iter().collect();
    while let Some(a) = todo.pop() {
        if out.insert(a) {
            todo.extend(a.implies().iter().copied());
        }
    }
    out
}

/// `targets` and every anomaly that implies one of them (Elle's `all-anomalies-implying`).
pub fn implying(targets: impl IntoIterator<Item = Anomaly>) -> BTreeSet<Anomaly> {
    let targets: BTreeSet<Anomaly> = targets.into_iter().collect();
    Anomaly::ALL
        .iter()
        .copied()
        .filter(|a| implied_by([*a]).intersection(&targets).next().is_some())
        .collect()
}

/// The anomalies that cannot be present if all of `models` hold (Elle's
/// `anomalies-prohibited-by`): the direct proscriptions of every model they imply, and every
/// anomaly implying one of those.
pub fn prohibited_by(models: &[Model]) -> BTreeSet<Anomaly> {
    implying(
        Model::ALL
            .iter()
            .filter(|m| models.iter().any(|r| r.implies_model(**m)))
            .flat_map(|m| m.proscribes().iter().copied()),
    )
}

/// The models that cannot hold given `found` (Elle's `anomalies->impossible-models`).
pub fn impossible(found: impl IntoIterator<Item = Anomaly>) -> BTreeSet<Model> {
    let all = implied_by(found);
    let direct: Vec<Model> = Model::ALL
        .iter()
        .copied()
        .filter(|m| m.proscribes().iter().any(|a| all.contains(a)))
        .collect();
    Model::ALL
        .iter()
        .copied()
        .filter(|m| direct.iter().any(|d| m.implies_model(*d)))
        .collect()
}

/// Elle's `friendly-boundary`: `not` = the weakest models `found` rules out, `also_not` = the
/// other models it rules out (all stronger than one of `not`), each in table order.
pub fn boundary(found: impl IntoIterator<Item = Anomaly>) -> (Vec<Model>, Vec<Model>) {
    let all = impossible(found);
    let (not, also_not): (Vec<Model>, Vec<Model>) = all
        .iter()
        .copied()
        .partition(|m| !all.iter().any(|w| w != m && m.implies_model(*w)));
    (not, also_not)
}

#[cfg(test)]
mod tests {
    use super::Anomaly::*;
    use super::Model::*;
    use super::*;

    fn names(ms: &[Model]) -> BTreeSet<&'static str> {
        ms.iter().map(|m| m.name()).collect()
    }

    fn set(v: &[&'static str]) -> BTreeSet<&'static str> {
        v.iter().copied().collect()
    }

    #[test]
    fn every_name_parses_back_and_is_unique() {
        for a in Anomaly::ALL {
            assert_eq!(Anomaly::parse(a.name()), Some(*a));
        }
        for m in Model::ALL {
            assert_eq!(Model::parse(m.name()), Some(*m));
        }
        let names = Model::all_names();
        assert_eq!(names.len(), names.iter().collect::<BTreeSet<_>>().len());
        assert_eq!(Model::parse("PL-2.99"), Some(RepeatableRead));
        assert_eq!(
            Model::parse("strong-serializable"),
            Some(StrictSerializable)
        );
        assert_eq!(Model::parse("PL-3"), Some(Serializable));
        assert_eq!(Model::parse("linearizable"), Some(Linearizable));
        assert_eq!(Model::parse("1SR"), Some(OneCopySerializable));
        assert_eq!(Model::parse("snapshot"), None);
    }

    #[test]
    fn the_model_order_is_elles() {
        assert!(StrictSerializable.implies_model(ReadUncommitted));
        assert!(Serializable.implies_model(SnapshotIsolation));
        assert!(ReadAtomic.implies_model(ReadCommitted));
        assert!(!SnapshotIsolation.implies_model(RepeatableRead));
        assert!(!RepeatableRead.implies_model(SnapshotIsolation));
        assert!(StrongSnapshotIsolation.implies_model(StrongReadCommitted));
        // Every model that proscribes anything implies read uncommitted; the single-object
        // ones sit apart, under strict serializable.
        assert!(
            Model::ALL
                .iter()
                .filter(|m| !prohibited_by(&[**m]).is_empty())
                .all(|m| m.implies_model(ReadUncommitted))
        );
        assert!(StrictSerializable.implies_model(ReadYourWrites));
        assert!(!Linearizable.implies_model(ReadUncommitted));
    }

    // Golden cases: what Elle's `friendly-boundary` gives, worked through its tables.
    #[test]
    fn g_single_boundary_is_elles_test_case() {
        // elle.consistency-model-test, "G-single".
        let (not, also) = boundary([GSingle]);
        assert_eq!(names(&not), set(&["consistent-view"]));
        assert_eq!(
            names(&also),
            set(&[
                "snapshot-isolation",
                "serializable",
                "strict-serializable",
                "strong-session-snapshot-isolation",
                "strong-snapshot-isolation",
                "strong-session-serializable",
                "forward-consistent-view",
                "update-serializable",
            ])
        );
    }

    #[test]
    fn item_cycles_rule_out_repeatable_read() {
        let (not, also) = boundary([G2Item]);
        assert_eq!(not, vec![RepeatableRead]);
        assert_eq!(
            names(&also),
            set(&[
                "serializable",
                "strict-serializable",
                "strong-session-serializable"
            ])
        );
        // G-single-item ⇒ G-single and G-nonadjacent-item ⇒ G2-item.
        let (not, also) = boundary([GSingleItem]);
        assert_eq!(names(&not), set(&["consistent-view", "repeatable-read"]));
        assert_eq!(also.len(), 8, "{also:?}");
        assert!(also.contains(&SnapshotIsolation));
    }

    #[test]
    fn internal_and_g1a_and_cyclic_versions() {
        // Elle's "internal" case; update-atomic (which implies read-atomic) came with it later.
        let (not, also) = boundary([Internal]);
        assert_eq!(not, vec![ReadAtomic]);
        assert_eq!(
            names(&also),
            set(&[
                "causal-cerone",
                "parallel-snapshot-isolation",
                "prefix",
                "serializable",
                "snapshot-isolation",
                "strict-serializable",
                "strong-session-serializable",
                "strong-session-snapshot-isolation",
                "strong-snapshot-isolation",
                "update-atomic",
            ])
        );
        assert_eq!(boundary([G2, Internal]).0, vec![ReadAtomic]);
        // G1a rules out read atomic too, which implies read committed: `not` is the weakest.
        let (not, also) = boundary([G1a]);
        assert_eq!(not, vec![ReadCommitted]);
        assert!(also.contains(&ReadAtomic) && also.contains(&StrongReadCommitted));
        assert!(!also.contains(&ReadUncommitted));
        // cyclic-versions: read uncommitted, and every other transactional model implies it.
        let (not, also) = boundary([CyclicVersions]);
        assert_eq!(not, vec![ReadUncommitted]);
        let transactional = Model::ALL
            .iter()
            .filter(|m| !prohibited_by(&[**m]).is_empty())
            .count();
        assert_eq!(also.len(), transactional - 1);
        assert_eq!(boundary([]), (vec![], vec![]));
    }

    #[test]
    fn realtime_and_process_cycles() {
        let (not, also) = boundary([G1cRealtime]);
        assert_eq!(names(&not), set(&["strong-read-committed"]));
        assert_eq!(
            names(&also),
            set(&["strong-snapshot-isolation", "strict-serializable"])
        );
        let (not, _) = boundary([G2ItemProcess]);
        assert_eq!(not, vec![StrongSessionSerializable]);
        let (not, _) = boundary([G0Process]);
        assert_eq!(not, vec![StrongSessionReadUncommitted]);
    }

    #[test]
    fn prohibited_anomalies_of_read_committed() {
        // Elle's anomalies-prohibited-by-test, plus what its tables added since (future-read,
        // the cycle-exists markers) and shakedown's garbage-read.
        let got: BTreeSet<&str> = prohibited_by(&[ReadCommitted])
            .into_iter()
            .map(|a| a.name())
            .collect();
        assert_eq!(
            got,
            set(&[
                "dirty-update",
                "G1a",
                "G1b",
                "G1c",
                "G1",
                "G0",
                "cyclic-versions",
                "duplicate-elements",
                "incompatible-order",
                "future-read",
                "PL-1-cycle-exists",
                "PL-2-cycle-exists",
                "garbage-read",
            ])
        );
        let ser = prohibited_by(&[Serializable]);
        assert!(ser.contains(&GSingleItem) && ser.contains(&LostUpdate));
        assert!(!ser.contains(&G2ItemRealtime) && !ser.contains(&GSingleProcess));
        assert!(prohibited_by(&[StrictSerializable]).contains(&G0Realtime));
        assert!(implying([G2]).contains(&LostUpdate));
        assert!(!implying([G2Item]).contains(&GSingle));
    }
}
