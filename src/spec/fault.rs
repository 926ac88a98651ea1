//! The fault vocabulary of nemesis specs: [`FaultSpec`], one variant per fault a schedule can
//! hold (its TOML table, defaults and parameters), the ops that start and stop it, and what each
//! kind is (clock, packet, stall, …) for the runner and the systems' refusals.
//!
//! Does not own reading a spec file or naming its errors' lines (`spec`), nor applying a fault
//! (`nemesis`); the verbs themselves are `faults::verb`.

use crate::faults::{Targets, Verb};
use serde::{Deserialize, Serialize};

/// The ops that inject and undo one fault of a schedule, as the nemesis generator hands them out.
#[derive(Debug, Clone, PartialEq)]
pub struct Ops {
    /// The verb that starts the fault.
    pub start: Verb,
    /// The start op's value.
    pub value: serde_json::Value,
    /// The verb that undoes it; `None` for a one-shot fault (promote).
    pub stop: Option<Verb>,
}

impl Ops {
    fn new(start: Verb, value: serde_json::Value, stop: Option<Verb>) -> Ops {
        Ops { start, value, stop }
    }
}

/// One fault kind in a nemesis schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "lowercase")]
pub enum FaultSpec {
    /// Network partition of the given shape: `one` isolates a node, `halves` splits the cluster,
    /// `majorities-ring`, `bridge`, `minority-third`, `one-way` (asymmetric), `primaries` (the
    /// current leader(s), asked of the system, cut off from the rest).
    Partition {
        /// One of `faults::PARTITION_SHAPES`.
        shape: String,
    },
    /// kill -9 the DB process on the targets, restart on stop.
    Kill {
        /// Which nodes it hits (`one` by default).
        #[serde(default)]
        targets: Targets,
    },
    /// SIGSTOP the DB process on the targets, SIGCONT on stop.
    Pause {
        /// Which nodes it hits (`one` by default).
        #[serde(default)]
        targets: Targets,
    },
    /// Drop packets from the other nodes at random on the targets (iptables `statistic`).
    Loss {
        /// Which nodes it hits (`one` by default).
        #[serde(default)]
        targets: Targets,
        /// Probability in (0, 1] that a packet is dropped.
        #[serde(default = "d_probability")]
        probability: f64,
    },
    /// Limit the targets' egress bandwidth (tc tbf).
    Bandwidth {
        /// Which nodes it hits (`one` by default).
        #[serde(default)]
        targets: Targets,
        /// Rate limit in kbit/s.
        #[serde(default = "d_rate_kbit")]
        rate_kbit: u64,
    },
    /// Delay the targets' egress packets (tc netem where the kernel has it, else the tool's
    /// NFQUEUE delayer; `backend` chooses).
    Delay {
        /// Which nodes it hits (`one` by default).
        #[serde(default)]
        targets: Targets,
        /// Added delay in ms.
        #[serde(default = "d_delay_ms")]
        delay_ms: u64,
        /// Jitter around the delay in ms.
        #[serde(default)]
        jitter_ms: u64,
        /// Fraction of packets sent at once, overtaking the held ones (0 <= r < 1).
        #[serde(default)]
        reorder: f64,
        /// Fraction of packets sent twice (0 <= d < 1; netem only: the `nfqueue` backend
        /// refuses it).
        #[serde(default)]
        duplicate: f64,
        /// `auto` (netem, else NFQUEUE), `netem` or `nfqueue`.
        #[serde(default = "d_delay_backend")]
        backend: String,
    },
    /// Fail over: promote a replica (PostgreSQL) to primary. One-shot: no stop op; the old
    /// primary is not fenced, and clients send writes to the promoted node.
    Promote {
        /// The node to promote; default a random replica.
        #[serde(default)]
        node: Option<String>,
    },
    /// Kill the targets' sshd and every SSH connection to them; sshd comes back after
    /// `duration_ms` (sandbox nodes only: their PID 1 restarts it). Tests the controller's
    /// reconnects; the DB keeps running.
    #[serde(rename = "ssh-drop")]
    SshDrop {
        /// Which nodes it hits (`one` by default).
        #[serde(default)]
        targets: Targets,
        /// How long sshd stays away, in ms.
        #[serde(default = "d_ssh_drop_ms")]
        duration_ms: u64,
    },
    /// Stall one client thread before its next protected op (lock workloads; any op otherwise)
    /// for a duration drawn uniform in `[min_ms, max_ms]`, as a GC pause would: the op is held
    /// back, not slowed. Client-side: no node is touched. `stop-stall` waits for the stall to end.
    Stall {
        /// Shortest stall, in ms.
        #[serde(default = "d_stall_min_ms")]
        min_ms: u64,
        /// Longest stall, in ms.
        #[serde(default = "d_stall_max_ms")]
        max_ms: u64,
    },
    /// Power failure: SIGKILL the DB on the targets and drop every write it did not fsync (the
    /// run serves its data directory from the lose-unsynced layer, `crate::lazyfs`); `power-on`
    /// starts it again. `torn` keeps the first half of the last unsynced write (a torn write).
    #[serde(rename = "power-loss")]
    PowerLoss {
        /// Which nodes it hits (`one` by default).
        #[serde(default)]
        targets: Targets,
        /// Keep half of the last unsynced write.
        #[serde(default)]
        torn: bool,
    },
    /// An OS (kernel) crash: what `power-loss` does — SIGKILL the DB on the targets and drop
    /// every write it did not fsync, the page cache being gone — under its own name, verbs
    /// (`os-crash` / `reboot`) and plot band, one node by default.
    #[serde(rename = "os-crash")]
    OsCrash {
        /// Which nodes it hits (`one` by default).
        #[serde(default)]
        targets: Targets,
        /// Keep half of the last unsynced write.
        #[serde(default)]
        torn: bool,
    },
    /// Corrupt a data file (Jepsen's file nemesis): stop the DB on the targets (SIGKILL), then
    /// flip `bits` random bits in (`mode = "bitflip"`) or cut up to `bytes` from the tail of
    /// (`mode = "truncate"`) one file matching the system's declared data-file globs (or
    /// `files`, relative to its data directory), chosen at random; `start-corrupted` starts the
    /// DB again on the damaged files.
    Corrupt {
        /// `bitflip` or `truncate`.
        #[serde(default = "d_corrupt_mode")]
        mode: String,
        /// Which nodes it hits (`one` by default).
        #[serde(default)]
        targets: Targets,
        /// Bitflip: bits flipped in the chosen file.
        #[serde(default = "d_bits")]
        bits: u64,
        /// Truncate: most bytes cut from the chosen file's tail.
        #[serde(default = "d_bytes")]
        bytes: u64,
        /// Globs relative to the data directory; empty: the files the system declares.
        #[serde(default)]
        files: Vec<String>,
    },
    /// A faulty disk under the targets' data directories (served from the lose-unsynced layer
    /// for the run): writes and/or fsyncs fail with EIO or ENOSPC (all, or `probability` of
    /// them), a failed fsync may drop the file's unsynced writes, writes and fsyncs may be
    /// slowed; `stop-disk-fault` ends it. The fields mean what `faults::disk::DiskFault`'s do.
    Disk {
        /// Which nodes it hits (`one` by default).
        #[serde(default)]
        targets: Targets,
        /// `EIO` or `ENOSPC` for writes.
        #[serde(default)]
        write_error: Option<crate::faults::disk::DiskErrno>,
        /// `EIO` or `ENOSPC` for fsyncs.
        #[serde(default)]
        fsync_error: Option<crate::faults::disk::DiskErrno>,
        /// Fraction of the affected operations that fail.
        #[serde(default = "d_fraction_all")]
        probability: f64,
        /// A failed fsync drops the file's unsynced writes.
        #[serde(default)]
        drop_unsynced_on_fsync_error: bool,
        /// Added latency per write, in ms.
        #[serde(default)]
        write_delay_ms: u64,
        /// Added latency per fsync, in ms.
        #[serde(default)]
        fsync_delay_ms: u64,
    },
    /// Membership changes: `shrink-cluster` removes one member through another member's admin
    /// interface (stopped and wiped once the views confirm it), `grow-cluster` adds every
    /// removed node back fresh. The fields mean what `faults::membership::ShrinkParams`'s do.
    Membership {
        /// Remove members below a majority of the full cluster.
        #[serde(default)]
        allow_minority: bool,
        /// How long a change may take to show in the views, in ms.
        #[serde(default = "d_confirm_ms")]
        confirm_ms: u64,
    },
    /// Step the targets' wall clocks with `date -s` (`bump`), or flip them back and forth
    /// (`strobe`); `reset-clock` on stop. Magnitudes are drawn like Jepsen's: the exponent of two
    /// uniform between `min_delta_ms` and `max_delta_ms`, random sign.
    Clock {
        /// `bump` (one step) or `strobe` (flip every period for `duration_ms`).
        #[serde(default = "d_clock_mode")]
        mode: String,
        /// Which nodes it hits (`one` by default).
        #[serde(default)]
        targets: Targets,
        /// Smallest step magnitude, in ms.
        #[serde(default = "d_min_delta_ms")]
        min_delta_ms: u64,
        /// Largest step magnitude, in ms.
        #[serde(default = "d_max_delta_ms")]
        max_delta_ms: u64,
        /// Strobe: largest period drawn (exponent of two uniform from 1 ms), in ms.
        #[serde(default = "d_max_period_ms")]
        max_period_ms: u64,
        /// Strobe: how long to flip, in ms (at most 60000; the nemesis waits for it).
        #[serde(default = "d_strobe_duration_ms")]
        duration_ms: u64,
    },
}

pub(super) fn d_probability() -> f64 {
    0.2
}
pub(super) fn d_rate_kbit() -> u64 {
    1000
}
fn d_delay_backend() -> String {
    "auto".into()
}
fn d_delay_ms() -> u64 {
    50
}

pub(super) fn d_ssh_drop_ms() -> u64 {
    crate::faults::ssh_drop::DEFAULT_DURATION_MS
}

fn d_stall_min_ms() -> u64 {
    crate::generator::stall::DEFAULT_MIN_MS
}
fn d_stall_max_ms() -> u64 {
    crate::generator::stall::DEFAULT_MAX_MS
}

fn d_fraction_all() -> f64 {
    1.0
}
fn d_corrupt_mode() -> String {
    "bitflip".into()
}
fn d_bits() -> u64 {
    crate::faults::corrupt::DEFAULT_BITS
}
fn d_bytes() -> u64 {
    crate::faults::corrupt::DEFAULT_BYTES
}

fn d_confirm_ms() -> u64 {
    crate::faults::membership::DEFAULT_CONFIRM_MS
}

fn d_clock_mode() -> String {
    "bump".into()
}
fn d_min_delta_ms() -> u64 {
    crate::faults::clock::DEFAULT_MIN_DELTA_MS
}
fn d_max_delta_ms() -> u64 {
    crate::faults::clock::DEFAULT_MAX_DELTA_MS
}
fn d_max_period_ms() -> u64 {
    crate::faults::clock::DEFAULT_MAX_PERIOD_MS
}
fn d_strobe_duration_ms() -> u64 {
    crate::faults::clock::DEFAULT_STROBE_DURATION_MS
}

impl FaultSpec {
    /// A clock fault with the default magnitudes.
    pub fn clock(mode: &str, targets: Targets) -> FaultSpec {
        FaultSpec::Clock {
            mode: mode.into(),
            targets,
            min_delta_ms: d_min_delta_ms(),
            max_delta_ms: d_max_delta_ms(),
            max_period_ms: d_max_period_ms(),
            duration_ms: d_strobe_duration_ms(),
        }
    }
}

impl FaultSpec {
    /// The ops that inject and undo this fault.
    pub fn ops(&self) -> Ops {
        use serde_json::json;
        match self {
            FaultSpec::Partition { shape } => Ops::new(
                Verb::StartPartition,
                shape.clone().into(),
                Some(Verb::StopPartition),
            ),
            FaultSpec::Kill { targets } => {
                Ops::new(Verb::Kill, targets.as_str().into(), Some(Verb::Start))
            }
            FaultSpec::PowerLoss { targets, torn } => Ops::new(
                Verb::PowerLoss,
                json!({ "targets": targets, "torn": torn }),
                Some(Verb::PowerOn),
            ),
            FaultSpec::OsCrash { targets, torn } => Ops::new(
                Verb::OsCrash,
                json!({ "targets": targets, "torn": torn }),
                Some(Verb::Reboot),
            ),
            FaultSpec::Pause { targets } => {
                Ops::new(Verb::Pause, targets.as_str().into(), Some(Verb::Resume))
            }
            FaultSpec::Disk { targets, .. } => {
                let mut v = serde_json::to_value(self.disk_fault()).unwrap_or_default();
                v["targets"] = targets.as_str().into();
                Ops::new(Verb::StartDiskFault, v, Some(Verb::StopDiskFault))
            }
            FaultSpec::Corrupt { .. } => match self.corrupt_params() {
                Some(p) => Ops::new(
                    p.mode.start_verb(),
                    p.to_value(),
                    Some(Verb::StartCorrupted),
                ),
                // An unknown mode (refused by `validate`) still names a verb.
                None => Ops::new(Verb::Bitflip, json!({}), Some(Verb::StartCorrupted)),
            },
            // One-shot: no stop op.
            FaultSpec::Promote { node } => Ops::new(
                Verb::Promote,
                node.as_ref().map_or(json!({}), |n| json!({ "node": n })),
                None,
            ),
            FaultSpec::Loss {
                targets,
                probability,
            } => Ops::new(
                Verb::StartLoss,
                json!({ "targets": targets, "probability": probability }),
                Some(Verb::StopLoss),
            ),
            FaultSpec::Bandwidth { targets, rate_kbit } => Ops::new(
                Verb::StartBandwidth,
                json!({ "targets": targets, "rate_kbit": rate_kbit }),
                Some(Verb::StopBandwidth),
            ),
            FaultSpec::Delay {
                targets,
                delay_ms,
                jitter_ms,
                reorder,
                duplicate,
                backend,
            } => Ops::new(
                Verb::StartDelay,
                {
                    // Defaults are left out, so the op value is the one runs always recorded.
                    let mut v = json!({
                        "targets": targets,
                        "delay_ms": delay_ms,
                        "jitter_ms": jitter_ms,
                    });
                    if *reorder != 0.0 {
                        v["reorder"] = json!(reorder);
                    }
                    if *duplicate != 0.0 {
                        v["duplicate"] = json!(duplicate);
                    }
                    if backend != "auto" {
                        v["backend"] = json!(backend);
                    }
                    v
                },
                Some(Verb::StopDelay),
            ),
            FaultSpec::SshDrop {
                targets,
                duration_ms,
            } => Ops::new(
                Verb::StartSshDrop,
                json!({ "targets": targets, "duration_ms": duration_ms }),
                Some(Verb::StopSshDrop),
            ),
            FaultSpec::Membership {
                allow_minority,
                confirm_ms,
            } => Ops::new(
                Verb::ShrinkCluster,
                crate::faults::membership::ShrinkParams {
                    allow_minority: *allow_minority,
                    confirm_ms: *confirm_ms,
                }
                .to_value(),
                Some(Verb::GrowCluster),
            ),
            FaultSpec::Stall { min_ms, max_ms } => Ops::new(
                Verb::StartStall,
                json!({ "min_ms": min_ms, "max_ms": max_ms }),
                Some(Verb::StopStall),
            ),
            FaultSpec::Clock {
                mode,
                targets,
                min_delta_ms,
                max_delta_ms,
                max_period_ms,
                duration_ms,
            } => {
                let mut value = serde_json::json!({
                    "targets": targets,
                    "min_delta_ms": min_delta_ms,
                    "max_delta_ms": max_delta_ms,
                });
                if mode == "strobe" {
                    value["max_period_ms"] = (*max_period_ms).into();
                    value["duration_ms"] = (*duration_ms).into();
                    Ops::new(Verb::StrobeClock, value, Some(Verb::ResetClock))
                } else {
                    Ops::new(Verb::BumpClock, value, Some(Verb::ResetClock))
                }
            }
        }
    }

    /// [`Self::ops`] as the text histories hold: (start verb, value, stop verb or "").
    #[cfg(test)]
    pub fn ops_text(&self) -> (&'static str, serde_json::Value, &'static str) {
        let o = self.ops();
        (o.start.as_str(), o.value, o.stop.map_or("", |v| v.as_str()))
    }

    /// Check the fault's values; an error names the key at fault (for its line) and why.
    pub(super) fn validate(&self) -> Result<(), (&'static str, String)> {
        let key = match self {
            FaultSpec::Partition { .. } => "shape",
            FaultSpec::Loss { .. } => "probability",
            FaultSpec::Bandwidth { .. } => "rate_kbit",
            FaultSpec::Delay { .. } => "delay_ms",
            FaultSpec::Clock { .. } => "mode",
            FaultSpec::Membership { .. } => "confirm_ms",
            FaultSpec::Stall { .. } => "min_ms",
            FaultSpec::Corrupt { .. } => "mode",
            FaultSpec::Disk { .. } => "write_error",
            _ => "targets",
        };
        self.check_values().map_err(|m| {
            // The message starts with the key it is about, when it names one.
            let named = [
                "targets",
                "min_delta_ms",
                "max_delta_ms",
                "max_period_ms",
                "duration_ms",
                "jitter_ms",
                "reorder",
                "duplicate",
                "backend",
                "bits",
                "bytes",
                "files",
                "probability",
                "fsync_error",
                "write_delay_ms",
                "fsync_delay_ms",
                "drop_unsynced_on_fsync_error",
                "allow_minority",
                "confirm_ms",
            ]
            .into_iter()
            .find(|k| m.starts_with(k) || m.starts_with(&format!("{k} ")));
            (named.unwrap_or(key), m)
        })
    }

    fn check_values(&self) -> Result<(), String> {
        match self {
            FaultSpec::Stall { min_ms, max_ms } if min_ms > max_ms || *max_ms == 0 => Err(format!(
                "min_ms {min_ms} / max_ms {max_ms}: expected 0 < max_ms and min_ms <= max_ms"
            )),
            FaultSpec::Partition { shape }
                if !crate::faults::PARTITION_SHAPES.contains(&shape.as_str()) =>
            {
                Err(format!(
                    "partition shape {shape:?}: expected one of {}",
                    crate::faults::PARTITION_SHAPES.join(", ")
                ))
            }
            FaultSpec::Disk { .. } => self
                .disk_fault()
                .map(|f| f.validate())
                .unwrap_or_else(|| Err("not a disk fault".into())),
            FaultSpec::Corrupt { mode, .. } => {
                match crate::faults::corrupt::CorruptMode::parse(mode) {
                    None => Err(format!(
                        "corrupt mode {mode:?}: expected \"bitflip\" or \"truncate\""
                    )),
                    Some(m) => {
                        let value = self.ops().value;
                        crate::faults::corrupt::CorruptParams::from_value(m, &value).map(|_| ())
                    }
                }
            }
            FaultSpec::Membership { .. } => {
                crate::faults::membership::ShrinkParams::from_value(&self.ops().value).map(|_| ())
            }
            FaultSpec::SshDrop { .. } => {
                let value = self.ops().value;
                crate::faults::ssh_drop::DropParams::from_value(&value).map(|_| ())
            }
            FaultSpec::Loss { .. } | FaultSpec::Bandwidth { .. } | FaultSpec::Delay { .. } => {
                let value = self.ops().value;
                match self {
                    FaultSpec::Loss { .. } => {
                        crate::faults::packet::LossParams::from_value(&value).map(|_| ())
                    }
                    FaultSpec::Bandwidth { .. } => {
                        crate::faults::packet::BandwidthParams::from_value(&value).map(|_| ())
                    }
                    _ => crate::faults::packet::DelayParams::from_value(&value).map(|_| ()),
                }
            }
            FaultSpec::Clock { mode, .. } if mode != "bump" && mode != "strobe" => Err(format!(
                "clock mode {mode:?}: expected \"bump\" or \"strobe\""
            )),
            FaultSpec::Clock {
                min_delta_ms,
                max_delta_ms,
                ..
            } if min_delta_ms > max_delta_ms || *max_delta_ms == 0 => Err(format!(
                "min_delta_ms {min_delta_ms} / max_delta_ms {max_delta_ms}: expected 0 < max and min <= max"
            )),
            FaultSpec::Clock {
                max_period_ms,
                duration_ms,
                ..
            } if *max_period_ms == 0
                || *duration_ms > crate::faults::clock::MAX_STROBE_DURATION_MS =>
            {
                Err(format!(
                    "max_period_ms {max_period_ms} / duration_ms {duration_ms}: expected a period of at least 1 and a duration of at most {}",
                    crate::faults::clock::MAX_STROBE_DURATION_MS
                ))
            }
            _ => Ok(()),
        }
    }

    /// A corruption fault's parameters (`None` for other faults and an unknown mode).
    pub fn corrupt_params(&self) -> Option<crate::faults::corrupt::CorruptParams> {
        let FaultSpec::Corrupt {
            mode,
            targets,
            bits,
            bytes,
            files,
        } = self
        else {
            return None;
        };
        Some(crate::faults::corrupt::CorruptParams {
            mode: crate::faults::corrupt::CorruptMode::parse(mode)?,
            targets: *targets,
            bits: *bits,
            bytes: *bytes,
            files: files.clone(),
        })
    }

    /// The target name of a fault that hits chosen nodes (`None`: partitions, promote, stall).
    pub fn targets(&self) -> Option<Targets> {
        match self {
            FaultSpec::Kill { targets }
            | FaultSpec::PowerLoss { targets, .. }
            | FaultSpec::OsCrash { targets, .. }
            | FaultSpec::Corrupt { targets, .. }
            | FaultSpec::Disk { targets, .. }
            | FaultSpec::Pause { targets }
            | FaultSpec::Loss { targets, .. }
            | FaultSpec::Bandwidth { targets, .. }
            | FaultSpec::Delay { targets, .. }
            | FaultSpec::SshDrop { targets, .. }
            | FaultSpec::Clock { targets, .. } => Some(*targets),
            FaultSpec::Partition { .. }
            | FaultSpec::Promote { .. }
            | FaultSpec::Stall { .. }
            | FaultSpec::Membership { .. } => None,
        }
    }

    /// Whether the fault stops the server and starts it again (kill, power loss, OS crash, a
    /// corrupted file), so only a system that can kill and restart serves it.
    pub fn needs_kill(&self) -> bool {
        matches!(
            self,
            FaultSpec::Kill { .. }
                | FaultSpec::PowerLoss { .. }
                | FaultSpec::OsCrash { .. }
                | FaultSpec::Corrupt { .. }
        )
    }

    /// Whether the fault is aimed at the system's primaries (the `primaries` partition, or
    /// `targets = "primaries"`), so only a system that names its primaries can serve it.
    pub fn aims_at_primaries(&self) -> bool {
        match self {
            FaultSpec::Partition { shape } => shape == crate::faults::PRIMARIES_SHAPE,
            other => other.targets() == Some(Targets::Primaries),
        }
    }

    /// A disk fault's effect on the layer (`None` for other faults); the seed is the
    /// nemesis's to draw.
    pub fn disk_fault(&self) -> Option<crate::faults::disk::DiskFault> {
        let FaultSpec::Disk {
            write_error,
            fsync_error,
            probability,
            drop_unsynced_on_fsync_error,
            write_delay_ms,
            fsync_delay_ms,
            ..
        } = self
        else {
            return None;
        };
        Some(crate::faults::disk::DiskFault {
            write_error: *write_error,
            fsync_error: *fsync_error,
            probability: *probability,
            drop_unsynced_on_fsync_error: *drop_unsynced_on_fsync_error,
            write_delay_ms: *write_delay_ms,
            fsync_delay_ms: *fsync_delay_ms,
            seed: 0,
        })
    }

    /// Whether this fault needs the system's data directory on the lose-unsynced layer.
    pub fn needs_data_layer(&self) -> bool {
        self.loses_unsynced() || matches!(self, FaultSpec::Disk { .. })
    }

    /// Whether this fault kills the DB and drops its unsynced writes (`power-loss`,
    /// `os-crash`): one mechanism under two names.
    pub fn loses_unsynced(&self) -> bool {
        matches!(
            self,
            FaultSpec::PowerLoss { .. } | FaultSpec::OsCrash { .. }
        )
    }

    /// Whether this fault steps clocks (the run then measures clock offsets).
    pub fn is_clock(&self) -> bool {
        matches!(self, FaultSpec::Clock { .. })
    }

    /// True for a client stall fault.
    pub fn is_stall(&self) -> bool {
        matches!(self, FaultSpec::Stall { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primaries_and_kill_needs_follow_the_shape_and_targets() {
        let partition = |shape: &str| FaultSpec::Partition {
            shape: shape.into(),
        };
        let kill = |targets: &str| FaultSpec::Kill {
            targets: Targets::parse(targets).unwrap(),
        };
        assert!(partition("primaries").aims_at_primaries());
        assert!(!partition("halves").aims_at_primaries());
        assert!(kill("primaries").aims_at_primaries());
        assert!(!kill("primaries-or-one").aims_at_primaries());
        assert!(!FaultSpec::Promote { node: None }.aims_at_primaries());
        assert!(kill("one").needs_kill());
        assert!(!partition("primaries").needs_kill());
        let pause = FaultSpec::Pause {
            targets: Targets::Primaries,
        };
        assert!(pause.aims_at_primaries() && !pause.needs_kill());
    }
}
