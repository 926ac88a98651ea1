//! The disk faults' pure part (package `disk`; `disk-error`, `disk-full` and `slow-disk` are
//! schedules of it): what the lose-unsynced layer (`lazyfs`) is told to do to the operations on a
//! node's data directory while the fault lasts — fail writes or fsyncs with EIO or ENOSPC (all,
//! or a fraction drawn from a seeded generator), drop a file's unsynced writes when its fsync
//! fails (the "fsync failed, then the dirty pages were silently dropped" case: the retried fsync
//! succeeds and the data is gone), and add latency to writes and fsyncs.
//!
//! Owns [`DiskFault`] (one definition: the schedule's op value, the journal's detail and the
//! layer's `inject` command all carry it as JSON) and its validation. Does not own applying it
//! (`lazyfs::inject`) or sending it to nodes (`nemesis::disk`).

use serde::{Deserialize, Serialize};

/// The `disk` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const KIND: super::FaultKind = super::FaultKind {
    name: "disk",
    start_verbs: &[super::verb::START_DISK_FAULT],
    stop_verbs: &[super::verb::STOP_DISK_FAULT],
    label: "faulty disk (errors or latency)",
    color_rgb: (200, 120, 60),
};

/// An error a faulty disk returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DiskErrno {
    /// I/O error: a failing device.
    #[serde(rename = "EIO")]
    Eio,
    /// No space left on device: a full disk.
    #[serde(rename = "ENOSPC")]
    Enospc,
}

impl std::fmt::Display for DiskErrno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DiskErrno::Eio => "EIO",
            DiskErrno::Enospc => "ENOSPC",
        })
    }
}

impl DiskErrno {
    /// The errno value.
    pub fn code(self) -> i32 {
        match self {
            DiskErrno::Eio => 5,
            DiskErrno::Enospc => 28,
        }
    }
}

/// What the layer does to data-directory operations while a disk fault lasts. All fields
/// default to "no effect".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskFault {
    /// `write` (and `fallocate`, `truncate` growing a file) fails with this errno.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_error: Option<DiskErrno>,
    /// `fsync` / `fdatasync` (and `O_SYNC` writes' sync) fail with this errno.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsync_error: Option<DiskErrno>,
    /// Fraction of the affected operations that fail, in (0, 1].
    #[serde(default = "one")]
    pub probability: f64,
    /// A failed fsync also rolls the file back to its last successful sync (its unsynced writes
    /// are gone, from reads too), so a retried fsync succeeds on the old data.
    #[serde(default)]
    pub drop_unsynced_on_fsync_error: bool,
    /// Added latency per write, in ms.
    #[serde(default)]
    pub write_delay_ms: u64,
    /// Added latency per fsync, in ms.
    #[serde(default)]
    pub fsync_delay_ms: u64,
    /// Seed of the layer's draws (`probability`); the nemesis draws it from the run's seed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn one() -> f64 {
    1.0
}

/// Longest added latency per operation (a minute): longer is a hang, not a slow disk.
pub const MAX_DELAY_MS: u64 = 60_000;

impl DiskFault {
    /// Check the values; an error names the field and why.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.probability > 0.0 && self.probability <= 1.0) {
            return Err(format!(
                "probability {}: expected a fraction above 0 and at most 1",
                self.probability
            ));
        }
        for (key, ms) in [
            ("write_delay_ms", self.write_delay_ms),
            ("fsync_delay_ms", self.fsync_delay_ms),
        ] {
            if ms > MAX_DELAY_MS {
                return Err(format!("{key} {ms}: at most {MAX_DELAY_MS} ms"));
            }
        }
        if self.drop_unsynced_on_fsync_error && self.fsync_error.is_none() {
            return Err(
                "drop_unsynced_on_fsync_error needs fsync_error (the fsyncs that fail)".into(),
            );
        }
        if self.write_error.is_none()
            && self.fsync_error.is_none()
            && self.write_delay_ms == 0
            && self.fsync_delay_ms == 0
        {
            return Err("write_error, fsync_error, write_delay_ms, fsync_delay_ms: a disk fault needs at least one of them".into());
        }
        Ok(())
    }

    /// Read an op value or journal detail.
    pub fn from_value(v: &serde_json::Value) -> Result<DiskFault, String> {
        let f: DiskFault =
            serde_json::from_value(v.clone()).map_err(|e| format!("disk fault {v}: {e}"))?;
        f.validate()?;
        Ok(f)
    }

    /// A few words for the fault ("fsync EIO (drop unsynced), writes +5 ms").
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let p = if self.probability < 1.0 {
            format!(" {:.0}%", self.probability * 100.0)
        } else {
            String::new()
        };
        if let Some(e) = self.write_error {
            parts.push(format!("writes {e}{p}"));
        }
        if let Some(e) = self.fsync_error {
            let drop = if self.drop_unsynced_on_fsync_error {
                " (unsynced writes dropped)"
            } else {
                ""
            };
            parts.push(format!("fsync {e}{p}{drop}"));
        }
        if self.write_delay_ms > 0 {
            parts.push(format!("writes +{} ms", self.write_delay_ms));
        }
        if self.fsync_delay_ms > 0 {
            parts.push(format!("fsync +{} ms", self.fsync_delay_ms));
        }
        parts.join(", ")
    }
}

/// A faulty disk under the targets' data directories (served from the lose-unsynced layer for
/// the run): writes and/or fsyncs fail with EIO or ENOSPC (all, or `probability` of them), a
/// failed fsync may drop the file's unsynced writes, writes and fsyncs may be slowed;
/// `stop-disk-fault` ends it. The `disk` schedule entry; the fields mean what [`DiskFault`]'s do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSpec {
    /// Which nodes it hits (`one` by default).
    #[serde(default)]
    pub targets: super::Targets,
    /// `EIO` or `ENOSPC` for writes.
    #[serde(default)]
    pub write_error: Option<DiskErrno>,
    /// `EIO` or `ENOSPC` for fsyncs.
    #[serde(default)]
    pub fsync_error: Option<DiskErrno>,
    /// Fraction of the affected operations that fail.
    #[serde(default = "d_fraction_all")]
    pub probability: f64,
    /// A failed fsync drops the file's unsynced writes.
    #[serde(default)]
    pub drop_unsynced_on_fsync_error: bool,
    /// Added latency per write, in ms.
    #[serde(default)]
    pub write_delay_ms: u64,
    /// Added latency per fsync, in ms.
    #[serde(default)]
    pub fsync_delay_ms: u64,
}

fn d_fraction_all() -> f64 {
    1.0
}

impl DiskSpec {
    /// Its effect on the layer; the seed is the nemesis's to draw.
    pub fn fault(&self) -> DiskFault {
        DiskFault {
            write_error: self.write_error,
            fsync_error: self.fsync_error,
            probability: self.probability,
            drop_unsynced_on_fsync_error: self.drop_unsynced_on_fsync_error,
            write_delay_ms: self.write_delay_ms,
            fsync_delay_ms: self.fsync_delay_ms,
            seed: 0,
        }
    }
}

impl super::def::FaultDef for DiskSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &KIND
    }
    fn ops(&self) -> super::def::Ops {
        let mut v = serde_json::to_value(self.fault()).unwrap_or_default();
        v["targets"] = self.targets.as_str().into();
        super::def::Ops::new(
            super::Verb::StartDiskFault,
            v,
            Some(super::Verb::StopDiskFault),
        )
    }
    fn keys(&self) -> &'static [&'static str] {
        &[
            "write_error",
            "targets",
            "fsync_error",
            "probability",
            "drop_unsynced_on_fsync_error",
            "write_delay_ms",
            "fsync_delay_ms",
        ]
    }
    fn check(&self) -> Result<(), String> {
        self.fault().validate()
    }
    fn targets(&self) -> Option<super::Targets> {
        Some(self.targets)
    }
    fn needs(&self) -> super::def::Needs {
        super::def::Needs {
            data_layer: true,
            ..super::def::Needs::default()
        }
    }
    fn chaos_refusal(&self) -> Option<&'static str> {
        Some(
            "a disk fault needs the data directory on shakedown's lose-unsynced layer, which \
             only `shakedown run` mounts (at the system's setup)",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_round_trip_and_bad_ones_name_their_field() {
        let f = DiskFault::from_value(&json!({
            "fsync_error": "EIO", "drop_unsynced_on_fsync_error": true, "write_delay_ms": 5
        }))
        .unwrap();
        assert_eq!(f.fsync_error, Some(DiskErrno::Eio));
        assert_eq!(f.probability, 1.0);
        assert_eq!(
            DiskFault::from_value(&serde_json::to_value(&f).unwrap()).unwrap(),
            f
        );
        assert_eq!(
            f.describe(),
            "fsync EIO (unsynced writes dropped), writes +5 ms"
        );
        for (v, needle) in [
            (json!({"write_error": "EPERM"}), "EPERM"),
            (
                json!({"write_error": "ENOSPC", "probability": 0}),
                "probability",
            ),
            (json!({"fsync_delay_ms": 3_600_000}), "fsync_delay_ms"),
            (
                json!({"drop_unsynced_on_fsync_error": true}),
                "needs fsync_error",
            ),
            (json!({}), "at least one"),
            (json!({"write_eror": "EIO"}), "write_eror"),
        ] {
            let e = DiskFault::from_value(&v).unwrap_err();
            assert!(e.contains(needle), "{v}: {e}");
        }
        assert_eq!(DiskErrno::Enospc.code(), libc::ENOSPC);
        assert_eq!(DiskErrno::Eio.code(), libc::EIO);
    }
}
