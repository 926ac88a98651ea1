//! The `partition` fault's schedule entry ([`PartitionSpec`]: a shape of `PARTITION_SHAPES`),
//! its ops (`start-partition` with the shape, `stop-partition`) and checks.
//!
//! Pure: no IO. Does not own building the grudge of a shape or cutting the network
//! (`nemesis::grudge`, `nemesis::partition`).

use super::def::{FaultDef, Needs, Ops};
use super::{PARTITION_SHAPES, PRIMARIES_SHAPE, Verb};
use serde::{Deserialize, Serialize};

/// The `partition` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const KIND: super::FaultKind = super::FaultKind {
    name: "partition",
    start_verbs: &[super::verb::START_PARTITION],
    stop_verbs: &[super::verb::STOP_PARTITION],
    label: "network partition",
    color_rgb: (60, 120, 230),
};

/// Network partition of the given shape: `one` isolates a node, `halves` splits the cluster,
/// `majorities-ring`, `bridge`, `minority-third`, `one-way` (asymmetric), `primaries` (the
/// current leader(s), asked of the system, cut off from the rest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionSpec {
    /// One of `faults::PARTITION_SHAPES`.
    pub shape: String,
}

impl PartitionSpec {
    /// A partition of `shape`.
    pub fn new(shape: &str) -> PartitionSpec {
        PartitionSpec {
            shape: shape.into(),
        }
    }
}

impl FaultDef for PartitionSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &KIND
    }

    fn ops(&self) -> Ops {
        Ops::new(
            Verb::StartPartition,
            self.shape.clone().into(),
            Some(Verb::StopPartition),
        )
    }

    fn keys(&self) -> &'static [&'static str] {
        &["shape"]
    }

    fn check(&self) -> Result<(), String> {
        if PARTITION_SHAPES.contains(&self.shape.as_str()) {
            return Ok(());
        }
        Err(format!(
            "partition shape {:?}: expected one of {}",
            self.shape,
            PARTITION_SHAPES.join(", ")
        ))
    }

    fn aims_at_primaries(&self) -> bool {
        self.shape == PRIMARIES_SHAPE
    }

    fn needs(&self) -> Needs {
        Needs {
            network: true,
            ..Needs::default()
        }
    }

    fn describe(&self) -> String {
        format!("partition (shape {})", self.shape)
    }
}
