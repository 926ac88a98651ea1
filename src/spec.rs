//! Declarative workload and nemesis specs: the TOML files under `workloads/` and `nemeses/`.
//!
//! Owns their schema, validation and lookup (a path, a name under the project's folders, or a
//! built-in copy compiled into the binary so it runs from any directory). Errors name the file
//! and line. Turning a spec into generators happens in `runner`; this module only parses.

use crate::config::ConfigError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A workload spec (`workloads/*.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Which op family: currently `register` (read / write / cas on independent keys).
    pub kind: String,
    /// Relative weight of reads.
    #[serde(default = "d_read")]
    pub read_weight: u32,
    /// Relative weight of writes.
    #[serde(default = "d_one")]
    pub write_weight: u32,
    /// Relative weight of compare-and-sets.
    #[serde(default = "d_one")]
    pub cas_weight: u32,
    /// Values written are drawn from `0..=max_value`.
    #[serde(default = "d_max_value")]
    pub max_value: u32,
    /// Client threads sharing one key at a time (bounds per-key concurrency for the checker).
    #[serde(default = "d_threads_per_key")]
    pub threads_per_key: usize,
    /// Ops a group of threads performs on a key before moving to a fresh key.
    #[serde(default = "d_ops_per_key")]
    pub ops_per_key: u64,
}

fn d_read() -> u32 {
    2
}
fn d_one() -> u32 {
    1
}
fn d_max_value() -> u32 {
    5
}
fn d_threads_per_key() -> usize {
    5
}
fn d_ops_per_key() -> u64 {
    200
}

/// One fault kind in a nemesis schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "lowercase")]
pub enum FaultKind {
    /// Network partition of the given shape: `one` isolates a node, `halves` splits the cluster,
    /// `majorities-ring`, `bridge`, `minority-third`, `one-way` (asymmetric).
    Partition {
        /// One of `nemesis::PARTITION_SHAPES`.
        shape: String,
    },
    /// kill -9 the DB process on the targets, restart on stop.
    Kill {
        /// `one`, `minority`, `majority` or `all`.
        #[serde(default = "d_targets")]
        targets: String,
    },
    /// SIGSTOP the DB process on the targets, SIGCONT on stop.
    Pause {
        /// `one`, `minority`, `majority` or `all`.
        #[serde(default = "d_targets")]
        targets: String,
    },
}

fn d_targets() -> String {
    "one".into()
}

impl FaultKind {
    /// The (start f, start value, stop f) ops that inject and undo this fault.
    pub fn ops(&self) -> (&'static str, serde_json::Value, &'static str) {
        match self {
            FaultKind::Partition { shape } => {
                ("start-partition", shape.clone().into(), "stop-partition")
            }
            FaultKind::Kill { targets } => ("kill", targets.clone().into(), "start"),
            FaultKind::Pause { targets } => ("pause", targets.clone().into(), "resume"),
        }
    }

    fn validate(&self) -> Result<(), String> {
        match self {
            FaultKind::Partition { shape }
                if !crate::nemesis::PARTITION_SHAPES.contains(&shape.as_str()) =>
            {
                Err(format!(
                    "partition shape {shape:?}: expected one of {}",
                    crate::nemesis::PARTITION_SHAPES.join(", ")
                ))
            }
            FaultKind::Kill { targets } | FaultKind::Pause { targets }
                if crate::nemesis::Targets::parse(targets).is_none() =>
            {
                Err(format!(
                    "targets {targets:?}: expected one, minority, majority or all"
                ))
            }
            _ => Ok(()),
        }
    }
}

/// A nemesis schedule (`nemeses/*.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NemesisSpec {
    /// Seconds between fault transitions (start → stop → start …).
    #[serde(default = "d_interval")]
    pub interval_s: f64,
    /// Fault kinds to start.
    #[serde(default)]
    pub faults: Vec<FaultKind>,
    /// Which fault to start next: `random` (default) or `sequential` (list order, round-robin).
    #[serde(default)]
    pub order: FaultOrder,
}

/// How a schedule picks the next fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultOrder {
    /// Uniformly at random (seeded).
    #[default]
    Random,
    /// In list order, round-robin.
    Sequential,
}

fn d_interval() -> f64 {
    5.0
}

const BUILTIN_WORKLOADS: &[(&str, &str)] = &[
    ("register", include_str!("../workloads/register.toml")),
    ("session", include_str!("../workloads/session.toml")),
];
const BUILTIN_NEMESES: &[(&str, &str)] = &[
    (
        "partition-kill-pause",
        include_str!("../nemeses/partition-kill-pause.toml"),
    ),
    ("isolate", include_str!("../nemeses/isolate.toml")),
    ("partitions", include_str!("../nemeses/partitions.toml")),
    ("none", include_str!("../nemeses/none.toml")),
];

fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, label: &str) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let mut line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        // toml reports unknown fields of the top-level table with a span over the whole
        // document; find the key's own line instead.
        let field = e
            .message()
            .strip_prefix("unknown field `")
            .and_then(|m| m.split('`').next());
        if let Some(field) = field
            && let Some(i) = text.lines().position(|l| l.trim_start().starts_with(field))
        {
            line = Some(i + 1);
        }
        let what = match line {
            Some(l) => format!("{label}:{l}"),
            None => label.to_string(),
        };
        ConfigError::new(what, e.message().to_string())
    })
}

/// Where a spec came from and its text.
fn locate(
    arg: &str,
    folder: &str,
    builtins: &[(&str, &str)],
) -> Result<(String, String), ConfigError> {
    let as_path = Path::new(arg);
    let candidates: Vec<PathBuf> = if arg.ends_with(".toml") || arg.contains('/') {
        vec![as_path.to_path_buf()]
    } else {
        vec![Path::new(folder).join(format!("{arg}.toml"))]
    };
    for p in &candidates {
        if p.is_file() {
            let text = std::fs::read_to_string(p)
                .map_err(|e| ConfigError::new(p.display().to_string(), e.to_string()))?;
            return Ok((p.display().to_string(), text));
        }
    }
    if let Some((name, text)) = builtins.iter().find(|(n, _)| *n == arg) {
        return Ok((format!("built-in {folder}/{name}.toml"), text.to_string()));
    }
    let known: Vec<&str> = builtins.iter().map(|(n, _)| *n).collect();
    Err(ConfigError::new(
        arg,
        format!(
            "no such file, and not a known {folder} name (known: {})",
            known.join(", ")
        ),
    ))
}

/// Load a workload spec by path or name.
pub fn load_workload(arg: &str) -> Result<WorkloadSpec, ConfigError> {
    let (label, text) = locate(arg, "workloads", BUILTIN_WORKLOADS)?;
    let spec: WorkloadSpec = parse_toml(&text, &label)?;
    if spec.kind != "register" {
        return Err(ConfigError::new(
            label,
            format!("kind {:?}: expected \"register\"", spec.kind),
        ));
    }
    if spec.read_weight + spec.write_weight + spec.cas_weight == 0 {
        return Err(ConfigError::new(label, "all op weights are 0"));
    }
    if spec.threads_per_key == 0 || spec.ops_per_key == 0 {
        return Err(ConfigError::new(
            label,
            "threads_per_key and ops_per_key must be at least 1",
        ));
    }
    Ok(spec)
}

/// Load a nemesis schedule: a path, a name under `nemeses/`, `none`, or a comma-separated list of
/// packages (`partition`, `kill`, `pause`, `isolate`) composed into one schedule.
pub fn load_nemesis(arg: &str) -> Result<NemesisSpec, ConfigError> {
    let packages: Vec<&str> = arg.split(',').map(str::trim).collect();
    let known = ["partition", "kill", "pause", "isolate"];
    if packages.iter().all(|p| known.contains(p)) {
        let mut faults = Vec::new();
        for p in packages {
            match p {
                "partition" => {
                    faults.push(FaultKind::Partition {
                        shape: "one".into(),
                    });
                    faults.push(FaultKind::Partition {
                        shape: "halves".into(),
                    });
                }
                "isolate" => faults.push(FaultKind::Partition {
                    shape: "one".into(),
                }),
                "kill" => faults.push(FaultKind::Kill {
                    targets: "one".into(),
                }),
                "pause" => faults.push(FaultKind::Pause {
                    targets: "one".into(),
                }),
                _ => unreachable!("filtered by known"),
            }
        }
        return Ok(NemesisSpec {
            interval_s: d_interval(),
            faults,
            order: FaultOrder::Random,
        });
    }
    let (label, text) = locate(arg, "nemeses", BUILTIN_NEMESES).map_err(|e| {
        ConfigError::new(
            e.what,
            format!(
                "{}; or a comma-separated list of {}",
                e.message,
                known.join(", ")
            ),
        )
    })?;
    let spec: NemesisSpec = parse_toml(&text, &label)?;
    if !(spec.interval_s.is_finite() && spec.interval_s > 0.0) {
        return Err(ConfigError::new(
            label,
            format!("interval_s {}: expected a positive number", spec.interval_s),
        ));
    }
    for f in &spec.faults {
        f.validate()
            .map_err(|m| ConfigError::new(label.clone(), m))?;
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_specs_parse() {
        let w = load_workload("register").unwrap();
        assert_eq!(w.kind, "register");
        let n = load_nemesis("partition-kill-pause").unwrap();
        assert_eq!(n.faults.len(), 4);
        assert!(load_nemesis("none").unwrap().faults.is_empty());
        let all = load_nemesis("partitions").unwrap();
        assert_eq!(all.faults.len(), crate::nemesis::PARTITION_SHAPES.len());
        assert_eq!(all.order, FaultOrder::Sequential);
    }

    #[test]
    fn packages_compose() {
        let n = load_nemesis("partition,kill").unwrap();
        assert_eq!(n.faults.len(), 3);
        assert_eq!(
            n.faults[2],
            FaultKind::Kill {
                targets: "one".into()
            }
        );
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.toml");
        std::fs::write(
            &p,
            "interval_s = 1\n\n[[faults]]\nkind = \"partition\"\nshape = \"triangle\"\n",
        )
        .unwrap();
        let e = load_nemesis(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("triangle"), "{e}");
        std::fs::write(&p, "interval_s = 1\nfautls = []\n").unwrap();
        let e = load_nemesis(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("bad.toml:2"), "{e}");
        let e = load_workload("nonexistent").unwrap_err().to_string();
        assert!(e.contains("known: register"), "{e}");
    }
}
