//! The faults a nemesis schedule can hold: [`FaultSpec`], the one list of every fault's schedule
//! entry (its `[[faults]]` table, `kind = …`), each a type of the core's `faults::<name>`
//! implementing `faults::def::FaultDef` (ops, checks, targets, needs). Adding a fault to
//! schedules is one line in [`fault_specs!`]'s list; nothing here matches on fault kinds.
//!
//! Does not own reading a spec file or naming its errors' lines (`spec`), nor applying a fault
//! (`nemesis`); the verbs themselves are `faults::verb`.

use crate::faults::def::{FaultDef, Needs};
use crate::faults::{self, Targets};
use serde::{Deserialize, Serialize};

pub use crate::faults::def::Ops;

/// Declares [`FaultSpec`] (one variant per fault, its TOML `kind` the variant's name in lower
/// case unless renamed) and [`FaultSpec::def`], the one match over the variants.
macro_rules! fault_specs {
    ($( $(#[$meta:meta])* $variant:ident($ty:ty), )*) => {
        /// One fault kind in a nemesis schedule.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "lowercase")]
        pub enum FaultSpec {
            $( $(#[$meta])* $variant($ty), )*
        }

        impl FaultSpec {
            /// What this fault is: its ops, checks, targets and needs.
            pub fn def(&self) -> &dyn FaultDef {
                match self {
                    $( FaultSpec::$variant(f) => f, )*
                }
            }
        }
    };
}

fault_specs! {
    /// A network partition of a shape.
    Partition(faults::partition::PartitionSpec),
    /// kill -9 the server, start it again on stop.
    Kill(faults::process::KillSpec),
    /// SIGSTOP the server, SIGCONT on stop.
    Pause(faults::process::PauseSpec),
    /// Drop packets at random.
    Loss(faults::packet::LossSpec),
    /// Limit egress bandwidth.
    Bandwidth(faults::packet::BandwidthSpec),
    /// Delay egress packets.
    Delay(faults::packet::DelaySpec),
    /// Fail over (one-shot).
    Promote(faults::promote::PromoteSpec),
    /// Kill sshd and the controller's connections for a while.
    #[serde(rename = "ssh-drop")]
    SshDrop(faults::ssh_drop::SshDropSpec),
    /// Hold one client thread back (client-side).
    Stall(faults::stall::StallSpec),
    /// Lose power: SIGKILL and drop unsynced writes.
    #[serde(rename = "power-loss")]
    PowerLoss(faults::process::PowerLossSpec),
    /// Crash the OS: what power loss does, under its own name.
    #[serde(rename = "os-crash")]
    OsCrash(faults::process::OsCrashSpec),
    /// Corrupt a data file (bit flips or a cut tail).
    Corrupt(faults::corrupt::CorruptSpec),
    /// A failing or slow disk.
    Disk(faults::disk::DiskSpec),
    /// Remove members and add them back.
    Membership(faults::membership::MembershipSpec),
    /// Step or strobe clocks.
    Clock(faults::clock::ClockSpec),
}

impl FaultSpec {
    /// A clock fault with the default magnitudes.
    pub fn clock(mode: &str, targets: Targets) -> FaultSpec {
        FaultSpec::Clock(faults::clock::ClockSpec::new(mode, targets))
    }

    /// The ops that inject and undo this fault.
    pub fn ops(&self) -> Ops {
        self.def().ops()
    }

    /// [`Self::ops`] as the text histories hold: (start verb, value, stop verb or "").
    #[cfg(test)]
    pub fn ops_text(&self) -> (&'static str, serde_json::Value, &'static str) {
        let o = self.ops();
        (o.start.as_str(), o.value, o.stop.map_or("", |v| v.as_str()))
    }

    /// Check the fault's values; an error names the key at fault (for its line) and why.
    pub(super) fn validate(&self) -> Result<(), (&'static str, String)> {
        faults::def::validate(self.def())
    }

    /// Its package name (`kind = …`).
    pub fn name(&self) -> &'static str {
        self.def().name()
    }

    /// What it needs from a system.
    pub fn needs(&self) -> Needs {
        self.def().needs()
    }

    /// The target name of a fault that hits chosen nodes (`None`: partitions, promote, stall).
    pub fn targets(&self) -> Option<Targets> {
        self.def().targets()
    }

    /// Whether the fault is aimed at the system's primaries (the `primaries` partition, or
    /// `targets = "primaries"`), so only a system that names its primaries can serve it.
    pub fn aims_at_primaries(&self) -> bool {
        self.def().aims_at_primaries()
    }

    /// Whether this fault needs the system's data directory on the lose-unsynced layer.
    pub fn needs_data_layer(&self) -> bool {
        self.needs().data_layer
    }

    /// Whether this fault steps clocks (the run then measures clock offsets).
    pub fn is_clock(&self) -> bool {
        self.needs().clock
    }

    /// True for a client stall fault.
    pub fn is_stall(&self) -> bool {
        self.needs().stall
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of the vocabulary is a schedule entry, whose definition is that kind's row
    /// and whose ops are that kind's verbs; and the spec's list names no other kind.
    #[test]
    fn every_kind_is_one_schedule_entry_whose_ops_are_its_verbs() {
        for kind in faults::KINDS.iter() {
            let extra = match kind.name {
                "partition" => serde_json::json!({"shape": "one"}),
                _ => serde_json::json!({}),
            };
            let mut table = extra;
            table["kind"] = kind.name.into();
            let spec: FaultSpec = serde_json::from_value(table)
                .unwrap_or_else(|e| panic!("{}: no schedule entry: {e}", kind.name));
            assert_eq!(spec.def().kind(), kind);
            assert_eq!(spec.name(), kind.name);
            let ops = spec.ops();
            assert!(
                kind.start_verbs.contains(&ops.start.as_str()),
                "{}",
                kind.name
            );
            match ops.stop {
                Some(stop) => assert!(kind.stop_verbs.contains(&stop.as_str()), "{}", kind.name),
                None => assert!(kind.one_shot(), "{}", kind.name),
            }
            let back = serde_json::to_value(&spec).unwrap();
            assert_eq!(back["kind"], kind.name);
            assert_eq!(serde_json::from_value::<FaultSpec>(back).unwrap(), spec);
        }
        let unknown = serde_json::json!({"kind": "flood"});
        assert!(serde_json::from_value::<FaultSpec>(unknown).is_err());
        // A schedule an older binary recorded in test.json reads back with every value it
        // recorded (fields added since, such as delay's `reorder`, come in at their defaults).
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/reports/all-faults/test.json"
        );
        let test: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
        let recorded = &test["nemesis"]["spec"]["faults"];
        let read: Vec<FaultSpec> = serde_json::from_value(recorded.clone()).unwrap();
        assert_eq!(read.len(), 8);
        let written = serde_json::to_value(&read).unwrap();
        for (was, is) in recorded
            .as_array()
            .unwrap()
            .iter()
            .zip(written.as_array().unwrap())
        {
            for (key, value) in was.as_object().unwrap() {
                assert_eq!(&is[key], value, "{key} of {was}");
            }
        }
        let stray = serde_json::json!({"kind": "kill", "shape": "one"});
        let e = serde_json::from_value::<FaultSpec>(stray).unwrap_err();
        assert!(e.to_string().contains("unknown field `shape`"), "{e}");
    }

    #[test]
    fn primaries_and_kill_needs_follow_the_shape_and_targets() {
        let partition =
            |shape: &str| FaultSpec::Partition(faults::partition::PartitionSpec::new(shape));
        let kill = |targets: &str| {
            FaultSpec::Kill(faults::process::KillSpec {
                targets: Targets::parse(targets).unwrap(),
            })
        };
        assert!(partition("primaries").aims_at_primaries());
        assert!(!partition("halves").aims_at_primaries());
        assert!(kill("primaries").aims_at_primaries());
        assert!(!kill("primaries-or-one").aims_at_primaries());
        assert!(!FaultSpec::Promote(Default::default()).aims_at_primaries());
        assert!(kill("one").needs().kill);
        assert!(!partition("primaries").needs().kill);
        let pause = FaultSpec::Pause(faults::process::PauseSpec {
            targets: Targets::Primaries,
        });
        assert!(pause.aims_at_primaries() && !pause.needs().kill);
    }
}
