//! The `stall` fault's schedule entry ([`StallSpec`]): hold one client thread back before its
//! next op for a time drawn in `[min_ms, max_ms]`, as a GC pause would. Client-side: no node is
//! touched; `stop-stall` waits for the stall to end.
//!
//! Pure: no IO. Does not own the board stalls are posted on or the gate that honours them
//! (`generator::stall`), nor waiting on it (the runner).

use super::Verb;
use super::def::{FaultDef, Needs, Ops};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The `stall` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const KIND: super::FaultKind = super::FaultKind {
    name: "stall",
    start_verbs: &[super::verb::START_STALL],
    stop_verbs: &[super::verb::STOP_STALL],
    label: "client stalled",
    color_rgb: (230, 90, 40),
};

/// Default shortest stall, in ms (above the lock workloads' default 2 s TTL).
pub const DEFAULT_MIN_MS: u64 = 3000;
/// Default longest stall, in ms.
pub const DEFAULT_MAX_MS: u64 = 5000;

/// Stall one client thread before its next protected op (lock workloads; any op otherwise)
/// for a duration drawn uniform in `[min_ms, max_ms]`, as a GC pause would: the op is held
/// back, not slowed. Client-side: no node is touched. `stop-stall` waits for the stall to end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StallSpec {
    /// Shortest stall, in ms.
    #[serde(default = "d_min_ms")]
    pub min_ms: u64,
    /// Longest stall, in ms.
    #[serde(default = "d_max_ms")]
    pub max_ms: u64,
}

fn d_min_ms() -> u64 {
    DEFAULT_MIN_MS
}
fn d_max_ms() -> u64 {
    DEFAULT_MAX_MS
}

impl Default for StallSpec {
    fn default() -> Self {
        StallSpec {
            min_ms: DEFAULT_MIN_MS,
            max_ms: DEFAULT_MAX_MS,
        }
    }
}

impl FaultDef for StallSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &KIND
    }
    fn ops(&self) -> Ops {
        Ops::new(
            Verb::StartStall,
            json!({ "min_ms": self.min_ms, "max_ms": self.max_ms }),
            Some(Verb::StopStall),
        )
    }
    fn keys(&self) -> &'static [&'static str] {
        &["min_ms", "max_ms"]
    }
    fn check(&self) -> Result<(), String> {
        let (min_ms, max_ms) = (self.min_ms, self.max_ms);
        if min_ms > max_ms || max_ms == 0 {
            return Err(format!(
                "min_ms {min_ms} / max_ms {max_ms}: expected 0 < max_ms and min_ms <= max_ms"
            ));
        }
        Ok(())
    }
    fn needs(&self) -> Needs {
        Needs {
            stall: true,
            ..Needs::default()
        }
    }
    fn chaos_refusal(&self) -> Option<&'static str> {
        Some(
            "a client stall holds back our own clients, and chaos runs none (the system's own \
             traffic is the workload)",
        )
    }
}
