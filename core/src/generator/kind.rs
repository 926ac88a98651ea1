//! The workload kinds, once: each kind's name (a workload spec's `kind`, test.json's
//! `workload.spec.kind`) and the spec fields it reads (its knobs).
//!
//! Owns the vocabulary both sides of a run need: the spec (`src/spec.rs`) reads a kind and
//! records its knobs in test.json, and the run page lists only those knobs, also for a run
//! directory written before they were recorded. Does not own the spec's schema or its
//! validation (the binary's `spec`), the generators (their own modules) or the page.

use super::{lock, log, set, txn};

/// The register workload's kind: read / write / cas on independent keys.
pub const REGISTER: &str = "register";
/// The list-append workload's kind: append unique integers / read whole lists.
pub const LIST_APPEND: &str = "list-append";

/// A workload kind, typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    /// [`REGISTER`].
    Register,
    /// [`LIST_APPEND`].
    ListAppend,
    /// [`set::KIND`].
    Set,
    /// [`txn::KIND`].
    Txn,
    /// [`lock::KIND`].
    Lock,
    /// [`lock::FENCED_KIND`].
    FencedLock,
    /// [`lock::LWW_KIND`].
    Lww,
    /// [`log::KIND`].
    Log,
}

/// A field of a workload spec that some kind reads. [`Knob::field`] is the field's name in the
/// spec's TOML and in test.json (the spec's tests hold the two to each other).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Knob {
    /// Relative weight of reads.
    ReadWeight,
    /// Relative weight of writes.
    WriteWeight,
    /// Relative weight of compare-and-sets.
    CasWeight,
    /// Relative weight of appends.
    AppendWeight,
    /// Relative weight of adds.
    AddWeight,
    /// How the session checker orders versions.
    VersionSource,
    /// Values written are drawn from `0..=max_value`.
    MaxValue,
    /// Client threads sharing one key at a time.
    ThreadsPerKey,
    /// Ops on a key before a fresh one (txn: appends before a key retires).
    OpsPerKey,
    /// Keys in use at a time (txn).
    ActiveKeys,
    /// Micro-ops per transaction at most (txn).
    MaxMops,
    /// The `[lock]` table.
    Lock,
    /// The `[log]` table.
    Log,
}

impl Knob {
    /// Every knob, in the order a page lists them.
    pub const ALL: [Knob; 13] = [
        Knob::ReadWeight,
        Knob::WriteWeight,
        Knob::CasWeight,
        Knob::AppendWeight,
        Knob::AddWeight,
        Knob::MaxValue,
        Knob::ThreadsPerKey,
        Knob::OpsPerKey,
        Knob::ActiveKeys,
        Knob::MaxMops,
        Knob::VersionSource,
        Knob::Lock,
        Knob::Log,
    ];

    /// The spec field's name.
    pub const fn field(self) -> &'static str {
        match self {
            Knob::ReadWeight => "read_weight",
            Knob::WriteWeight => "write_weight",
            Knob::CasWeight => "cas_weight",
            Knob::AppendWeight => "append_weight",
            Knob::AddWeight => "add_weight",
            Knob::VersionSource => "version_source",
            Knob::MaxValue => "max_value",
            Knob::ThreadsPerKey => "threads_per_key",
            Knob::OpsPerKey => "ops_per_key",
            Knob::ActiveKeys => "active_keys",
            Knob::MaxMops => "max_mops",
            Knob::Lock => "lock",
            Knob::Log => "log",
        }
    }
}

impl WorkloadKind {
    /// Every kind, in the order an error message lists them.
    pub const ALL: [WorkloadKind; 8] = [
        WorkloadKind::Register,
        WorkloadKind::ListAppend,
        WorkloadKind::Set,
        WorkloadKind::Txn,
        WorkloadKind::Lock,
        WorkloadKind::FencedLock,
        WorkloadKind::Lww,
        WorkloadKind::Log,
    ];

    /// The kind's name in specs and test.json.
    pub const fn name(self) -> &'static str {
        match self {
            WorkloadKind::Register => REGISTER,
            WorkloadKind::ListAppend => LIST_APPEND,
            WorkloadKind::Set => set::KIND,
            WorkloadKind::Txn => txn::KIND,
            WorkloadKind::Lock => lock::KIND,
            WorkloadKind::FencedLock => lock::FENCED_KIND,
            WorkloadKind::Lww => lock::LWW_KIND,
            WorkloadKind::Log => log::KIND,
        }
    }

    /// The kind named `name`; `None` for a name this build does not know.
    pub fn parse(name: &str) -> Option<WorkloadKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The kinds' names quoted and joined for an error message: `"register", …, or "log"`.
    pub fn expected() -> String {
        let names: Vec<String> = Self::ALL
            .iter()
            .map(|k| format!("{:?}", k.name()))
            .collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.concat(),
        }
    }

    /// The spec fields this kind reads, in [`Knob::ALL`] order. Fields it ignores (a register
    /// run's append and add weights, max micro-ops) are not knobs of it.
    pub const fn knobs(self) -> &'static [Knob] {
        use Knob::*;
        match self {
            WorkloadKind::Register => &[
                ReadWeight,
                WriteWeight,
                CasWeight,
                MaxValue,
                ThreadsPerKey,
                OpsPerKey,
                VersionSource,
            ],
            WorkloadKind::Lww => &[
                ReadWeight,
                WriteWeight,
                MaxValue,
                ThreadsPerKey,
                OpsPerKey,
                VersionSource,
            ],
            WorkloadKind::ListAppend => &[ReadWeight, AppendWeight, ThreadsPerKey, OpsPerKey],
            WorkloadKind::Txn => &[ReadWeight, AppendWeight, OpsPerKey, ActiveKeys, MaxMops],
            WorkloadKind::Set => &[ReadWeight, AddWeight, ThreadsPerKey, OpsPerKey],
            WorkloadKind::Log => &[Log],
            WorkloadKind::Lock | WorkloadKind::FencedLock => &[Lock],
        }
    }

    /// Whether this kind reads the spec field named `field`.
    pub fn reads(self, field: &str) -> bool {
        self.knobs().iter().any(|k| k.field() == field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_are_distinct() {
        for k in WorkloadKind::ALL {
            assert_eq!(WorkloadKind::parse(k.name()), Some(k));
        }
        assert_eq!(WorkloadKind::parse("queue"), None);
        assert_eq!(WorkloadKind::parse(""), None);
        assert_eq!(
            WorkloadKind::expected(),
            "\"register\", \"list-append\", \"set\", \"txn\", \"lock\", \"fenced-lock\", \
             \"lww\" or \"log\""
        );
    }

    #[test]
    fn knobs_are_listed_in_page_order_without_repeats_and_every_knob_is_read() {
        for k in WorkloadKind::ALL {
            let at: Vec<usize> = k
                .knobs()
                .iter()
                .map(|n| Knob::ALL.iter().position(|a| a == n).unwrap())
                .collect();
            assert!(at.windows(2).all(|w| w[0] < w[1]), "{k:?}: {at:?}");
        }
        for n in Knob::ALL {
            assert!(
                WorkloadKind::ALL.iter().any(|k| k.knobs().contains(&n)),
                "{n:?} is read by no kind"
            );
        }
        assert!(WorkloadKind::Register.reads("read_weight"));
        for other in ["append_weight", "add_weight", "max_mops", "active_keys"] {
            assert!(!WorkloadKind::Register.reads(other), "{other}");
        }
    }
}
