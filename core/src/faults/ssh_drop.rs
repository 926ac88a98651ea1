//! The `ssh-drop` fault's parameters: the op value of `start-ssh-drop` parsed and checked once,
//! for the spec (`spec`) and the nemesis, with its defaults and limits.
//!
//! Pure: no IO. Does not own the node command or waiting for sshd to come back
//! (`nemesis::ssh_drop`).

use crate::faults::verb::START_SSH_DROP as START;
use serde_json::Value;

/// The `ssh-drop` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const KIND: super::FaultKind = super::FaultKind {
    name: "ssh-drop",
    start_verbs: &[super::verb::START_SSH_DROP],
    stop_verbs: &[super::verb::STOP_SSH_DROP],
    label: "SSH dropped",
    color_rgb: (200, 170, 0),
};

/// Default hold: how long sshd stays away, in ms.
pub const DEFAULT_DURATION_MS: u64 = 5_000;
/// Longest hold accepted, in ms.
pub const MAX_DURATION_MS: u64 = 600_000;
/// Parameters of `start-ssh-drop`: `{"targets": "one", "duration_ms": 5000}` or
/// `{"nodes": ["n3"], "duration_ms": 5000}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropParams {
    /// Which nodes, unless `nodes` is given.
    pub targets: super::Targets,
    /// Explicit nodes.
    pub nodes: Option<Vec<String>>,
    /// How long sshd stays away, in ms.
    pub duration_ms: u64,
}

impl DropParams {
    /// Parse an op value; a bare string is a target name.
    pub fn from_value(v: &Value) -> Result<DropParams, String> {
        let mut p = DropParams {
            targets: super::Targets::One,
            nodes: None,
            duration_ms: DEFAULT_DURATION_MS,
        };
        match v {
            Value::Null => {}
            Value::String(s) => p.targets = super::Targets::named(s)?,
            Value::Object(m) => {
                if let Some(t) = m.get("targets") {
                    p.targets = super::Targets::of_value(t).map_err(|e| format!("{START}: {e}"))?;
                }
                if let Some(n) = m.get("nodes") {
                    let list = n
                        .as_array()
                        .and_then(|a| {
                            a.iter()
                                .map(|x| x.as_str().map(str::to_string))
                                .collect::<Option<Vec<_>>>()
                        })
                        .ok_or_else(|| {
                            format!("{START}: nodes must be a list of names, got {n}")
                        })?;
                    p.nodes = Some(list);
                }
                if let Some(d) = m.get("duration_ms") {
                    p.duration_ms = d.as_u64().ok_or_else(|| {
                        format!("{START}: duration_ms must be a whole number of ms, got {d}")
                    })?;
                }
            }
            other => return Err(format!("{START}: expected an object, got {other}")),
        }
        if p.duration_ms == 0 || p.duration_ms > MAX_DURATION_MS {
            return Err(format!(
                "{START}: duration_ms {}: expected 1 to {MAX_DURATION_MS}",
                p.duration_ms
            ));
        }
        Ok(p)
    }
}

/// Kill the targets' sshd and every SSH connection to them; sshd comes back after
/// `duration_ms` (sandbox nodes only: their PID 1 restarts it): the `ssh-drop` schedule entry.
/// Tests the controller's reconnects; the DB keeps running.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SshDropSpec {
    /// Which nodes it hits (`one` by default).
    #[serde(default)]
    pub targets: super::Targets,
    /// How long sshd stays away, in ms.
    #[serde(default = "d_duration_ms")]
    pub duration_ms: u64,
}

fn d_duration_ms() -> u64 {
    DEFAULT_DURATION_MS
}

impl Default for SshDropSpec {
    fn default() -> Self {
        SshDropSpec {
            targets: super::Targets::One,
            duration_ms: DEFAULT_DURATION_MS,
        }
    }
}

impl super::def::FaultDef for SshDropSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &KIND
    }
    fn ops(&self) -> super::def::Ops {
        super::def::Ops::new(
            super::Verb::StartSshDrop,
            serde_json::json!({ "targets": self.targets, "duration_ms": self.duration_ms }),
            Some(super::Verb::StopSshDrop),
        )
    }
    fn keys(&self) -> &'static [&'static str] {
        &["targets", "duration_ms"]
    }
    fn check(&self) -> Result<(), String> {
        DropParams::from_value(&self.ops().value).map(|_| ())
    }
    fn targets(&self) -> Option<super::Targets> {
        Some(self.targets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn params_parse_and_reject_bad_values() {
        let p = DropParams::from_value(&Value::Null).unwrap();
        assert_eq!(
            (p.targets.as_str(), p.duration_ms),
            ("one", DEFAULT_DURATION_MS)
        );
        let p = DropParams::from_value(&json!({"nodes": ["n3"], "duration_ms": 2500})).unwrap();
        assert_eq!(p.nodes, Some(vec!["n3".to_string()]));
        assert_eq!(p.duration_ms, 2500);
        assert_eq!(
            DropParams::from_value(&json!("minority")).unwrap().targets,
            super::super::Targets::Minority
        );
        for (bad, needle) in [
            (json!({"duration_ms": 0}), "expected 1 to"),
            (json!({"duration_ms": 700_000}), "expected 1 to"),
            (json!({"duration_ms": "5s"}), "whole number of ms"),
            (json!({"nodes": "n1"}), "list of names"),
            (json!([1]), "expected an object"),
        ] {
            let e = DropParams::from_value(&bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }
}
