//! The faults on the system's server process, as schedule entries: `kill` ([`KillSpec`]: kill -9,
//! start again on stop), `pause` ([`PauseSpec`]: SIGSTOP, SIGCONT on stop) and the two names of
//! losing what was not fsynced, `power-loss` and `os-crash` ([`PowerLossSpec`],
//! [`OsCrashSpec`]: SIGKILL and drop the unsynced writes; start again on stop).
//!
//! Pure: no IO. Does not own signalling a process or the lose-unsynced layer (`nemesis::kill`,
//! `nemesis::pause`, `nemesis::power`, `db::layer`).

use super::def::{FaultDef, Needs, Ops};
use super::{Targets, Verb};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The `kill` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const KILL_KIND: super::FaultKind = super::FaultKind {
    name: "kill",
    start_verbs: &[super::verb::KILL],
    stop_verbs: &[super::verb::START],
    label: "process killed",
    color_rgb: (160, 60, 200),
};

/// The `pause` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const PAUSE_KIND: super::FaultKind = super::FaultKind {
    name: "pause",
    start_verbs: &[super::verb::PAUSE],
    stop_verbs: &[super::verb::RESUME],
    label: "process paused",
    color_rgb: (110, 110, 110),
};

/// The `power-loss` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const POWER_LOSS_KIND: super::FaultKind = super::FaultKind {
    name: "power-loss",
    start_verbs: &[super::verb::POWER_LOSS],
    stop_verbs: &[super::verb::POWER_ON],
    label: "power lost (unsynced writes dropped)",
    color_rgb: (120, 20, 20),
};

/// The `os-crash` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const OS_CRASH_KIND: super::FaultKind = super::FaultKind {
    name: "os-crash",
    start_verbs: &[super::verb::OS_CRASH],
    stop_verbs: &[super::verb::REBOOT],
    label: "OS crashed (unsynced writes dropped)",
    color_rgb: (190, 30, 90),
};

/// kill -9 the DB process on the targets, restart on stop.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillSpec {
    /// Which nodes it hits (`one` by default).
    #[serde(default)]
    pub targets: Targets,
}

impl FaultDef for KillSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &KILL_KIND
    }
    fn ops(&self) -> Ops {
        Ops::new(Verb::Kill, self.targets.as_str().into(), Some(Verb::Start))
    }
    fn keys(&self) -> &'static [&'static str] {
        &["targets"]
    }
    fn targets(&self) -> Option<Targets> {
        Some(self.targets)
    }
    fn needs(&self) -> Needs {
        Needs {
            kill: true,
            ..Needs::default()
        }
    }
    fn chaos_refusal(&self) -> Option<&'static str> {
        Some(
            "chaos never restarts a system (the restart would start it with shakedown's own \
             settings, not yours); use pause, partition or loss",
        )
    }
}

/// SIGSTOP the DB process on the targets, SIGCONT on stop.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseSpec {
    /// Which nodes it hits (`one` by default).
    #[serde(default)]
    pub targets: Targets,
}

impl FaultDef for PauseSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &PAUSE_KIND
    }
    fn ops(&self) -> Ops {
        Ops::new(
            Verb::Pause,
            self.targets.as_str().into(),
            Some(Verb::Resume),
        )
    }
    fn keys(&self) -> &'static [&'static str] {
        &["targets"]
    }
    fn targets(&self) -> Option<Targets> {
        Some(self.targets)
    }
    fn needs(&self) -> Needs {
        Needs {
            pause: true,
            ..Needs::default()
        }
    }
}

/// Power failure (`OS_CRASH = false`, [`PowerLossSpec`]): SIGKILL the DB on the targets and drop
/// every write it did not fsync (the run serves its data directory from the lose-unsynced
/// layer); `power-on` starts it again. An OS (kernel) crash (`OS_CRASH = true`,
/// [`OsCrashSpec`]) does the same — the page cache is gone — under its own name, verbs
/// (`os-crash` / `reboot`) and plot band, one node by default. `torn` keeps the first half of
/// the last unsynced write (a torn write).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoseUnsyncedSpec<const OS_CRASH: bool> {
    /// Which nodes it hits (`one` by default).
    #[serde(default)]
    pub targets: Targets,
    /// Keep half of the last unsynced write.
    #[serde(default)]
    pub torn: bool,
}

/// The `power-loss` schedule entry.
pub type PowerLossSpec = LoseUnsyncedSpec<false>;
/// The `os-crash` schedule entry.
pub type OsCrashSpec = LoseUnsyncedSpec<true>;

impl<const OS_CRASH: bool> FaultDef for LoseUnsyncedSpec<OS_CRASH> {
    fn kind(&self) -> &'static super::FaultKind {
        if OS_CRASH {
            &OS_CRASH_KIND
        } else {
            &POWER_LOSS_KIND
        }
    }
    fn ops(&self) -> Ops {
        let (start, stop) = if OS_CRASH {
            (Verb::OsCrash, Verb::Reboot)
        } else {
            (Verb::PowerLoss, Verb::PowerOn)
        };
        let value = json!({ "targets": self.targets, "torn": self.torn });
        Ops::new(start, value, Some(stop))
    }
    fn keys(&self) -> &'static [&'static str] {
        &["targets", "torn"]
    }
    fn targets(&self) -> Option<Targets> {
        Some(self.targets)
    }
    fn needs(&self) -> Needs {
        Needs {
            kill: true,
            data_layer: true,
            loses_unsynced: true,
            ..Needs::default()
        }
    }
    fn chaos_refusal(&self) -> Option<&'static str> {
        Some(
            "a power loss or OS crash drops writes for good and restarts the system; chaos \
             injects only faults it can undo",
        )
    }
}
