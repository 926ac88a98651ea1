//! The clock faults' parameters: the defaults and bounds of `bump-clock` and `strobe-clock`
//! (step magnitudes, strobe period and duration, offset sampling), read by the spec (`spec`)
//! and the nemesis alike, and the `clock` schedule entry ([`ClockSpec`]) with its ops.
//!
//! Pure: no IO. Does not own drawing a step or a strobe, or touching a node (`nemesis::clock`).

/// The `clock` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const KIND: super::FaultKind = super::FaultKind {
    name: "clock",
    start_verbs: &[super::verb::BUMP_CLOCK, super::verb::STROBE_CLOCK],
    stop_verbs: &[super::verb::RESET_CLOCK],
    label: "clock skew",
    color_rgb: (0, 150, 150),
};

/// Default smallest step magnitude drawn, in ms (Jepsen: 2^2).
pub const DEFAULT_MIN_DELTA_MS: u64 = 4;
/// Default largest step magnitude drawn, in ms (Jepsen: 2^18, about 4.4 minutes).
pub const DEFAULT_MAX_DELTA_MS: u64 = 262_144;
/// Default largest strobe period drawn, in ms (Jepsen: 2^10).
pub const DEFAULT_MAX_PERIOD_MS: u64 = 1_024;
/// Default strobe duration, in ms.
pub const DEFAULT_STROBE_DURATION_MS: u64 = 10_000;
/// Longest strobe accepted, in ms (the nemesis op blocks for the whole strobe).
pub const MAX_STROBE_DURATION_MS: u64 = 60_000;
/// Smallest sampling period accepted during a strobe, in ms.
pub const MIN_OFFSETS_EVERY_MS: u64 = 100;

/// Step the targets' wall clocks with `date -s` (`bump`), or flip them back and forth
/// (`strobe`); `reset-clock` on stop: the `clock` schedule entry. Magnitudes are drawn like
/// Jepsen's: the exponent of two uniform between `min_delta_ms` and `max_delta_ms`, random sign.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {
    /// `bump` (one step) or `strobe` (flip every period for `duration_ms`).
    #[serde(default = "d_mode")]
    pub mode: String,
    /// Which nodes it hits (`one` by default).
    #[serde(default)]
    pub targets: super::Targets,
    /// Smallest step magnitude, in ms.
    #[serde(default = "d_min_delta_ms")]
    pub min_delta_ms: u64,
    /// Largest step magnitude, in ms.
    #[serde(default = "d_max_delta_ms")]
    pub max_delta_ms: u64,
    /// Strobe: largest period drawn (exponent of two uniform from 1 ms), in ms.
    #[serde(default = "d_max_period_ms")]
    pub max_period_ms: u64,
    /// Strobe: how long to flip, in ms (at most 60000; the nemesis waits for it).
    #[serde(default = "d_strobe_duration_ms")]
    pub duration_ms: u64,
}

/// `mode = "bump"`: one step.
const BUMP: &str = "bump";
/// `mode = "strobe"`: flip back and forth.
const STROBE: &str = "strobe";

fn d_mode() -> String {
    BUMP.into()
}
fn d_min_delta_ms() -> u64 {
    DEFAULT_MIN_DELTA_MS
}
fn d_max_delta_ms() -> u64 {
    DEFAULT_MAX_DELTA_MS
}
fn d_max_period_ms() -> u64 {
    DEFAULT_MAX_PERIOD_MS
}
fn d_strobe_duration_ms() -> u64 {
    DEFAULT_STROBE_DURATION_MS
}

impl ClockSpec {
    /// A clock fault of `mode` on `targets` with the default magnitudes.
    pub fn new(mode: &str, targets: super::Targets) -> ClockSpec {
        ClockSpec {
            mode: mode.into(),
            targets,
            min_delta_ms: DEFAULT_MIN_DELTA_MS,
            max_delta_ms: DEFAULT_MAX_DELTA_MS,
            max_period_ms: DEFAULT_MAX_PERIOD_MS,
            duration_ms: DEFAULT_STROBE_DURATION_MS,
        }
    }
}

impl super::def::FaultDef for ClockSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &KIND
    }
    fn ops(&self) -> super::def::Ops {
        use super::Verb;
        let mut value = serde_json::json!({
            "targets": self.targets,
            "min_delta_ms": self.min_delta_ms,
            "max_delta_ms": self.max_delta_ms,
        });
        let start = if self.mode == STROBE {
            value["max_period_ms"] = self.max_period_ms.into();
            value["duration_ms"] = self.duration_ms.into();
            Verb::StrobeClock
        } else {
            Verb::BumpClock
        };
        super::def::Ops::new(start, value, Some(Verb::ResetClock))
    }
    fn keys(&self) -> &'static [&'static str] {
        &[
            "mode",
            "targets",
            "min_delta_ms",
            "max_delta_ms",
            "max_period_ms",
            "duration_ms",
        ]
    }
    fn check(&self) -> Result<(), String> {
        let s = self;
        if s.mode != BUMP && s.mode != STROBE {
            return Err(format!(
                "clock mode {:?}: expected \"bump\" or \"strobe\"",
                s.mode
            ));
        }
        if s.min_delta_ms > s.max_delta_ms || s.max_delta_ms == 0 {
            return Err(format!(
                "min_delta_ms {} / max_delta_ms {}: expected 0 < max and min <= max",
                s.min_delta_ms, s.max_delta_ms
            ));
        }
        if s.max_period_ms == 0 || s.duration_ms > MAX_STROBE_DURATION_MS {
            return Err(format!(
                "max_period_ms {} / duration_ms {}: expected a period of at least 1 and a duration of at most {MAX_STROBE_DURATION_MS}",
                s.max_period_ms, s.duration_ms
            ));
        }
        Ok(())
    }
    fn targets(&self) -> Option<super::Targets> {
        Some(self.targets)
    }
    fn needs(&self) -> super::def::Needs {
        super::def::Needs {
            clock: true,
            ..super::def::Needs::default()
        }
    }
    fn describe(&self) -> String {
        format!("clock {} (targets {})", self.mode, self.targets)
    }
}
