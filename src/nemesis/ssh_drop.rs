//! The `ssh-drop` fault: the targets' sshd and every established SSH connection to them die,
//! and sshd stays away for `duration_ms`; then it is back and the controller reconnects.
//!
//! Owns the verbs (`start-ssh-drop`, `stop-ssh-drop`), the command sent to a node; its parameters are the
//! core's (`faults::ssh_drop`). Works only where sshd has a supervisor that restarts it: the sandbox's PID 1 reaper
//! (`sandbox::REAPER_NAME`, see `src/sandbox/reaper.c`). The command writes the hold time to
//! `sandbox::SSHD_HOLD_FILE` and sends SIGUSR1 to PID 1; the reaper waits
//! `sandbox::DROP_DELAY_MS` (so this command's own answer reaches the controller first), kills
//! every sshd process of the node, and starts sshd again after the hold. The DB and everything
//! else on the node keep running. On a host whose PID 1 is not the reaper the op fails and
//! nothing is touched. `stop-ssh-drop` cannot shorten the hold (there is no SSH to ask with): it
//! waits until the node answers again, bounded by the hold left plus [`BACK_GRACE_MS`].
//! Does not own reconnecting (`control::SshRemote` does that on the next command) nor the
//! reaper (`sandbox`).

use super::cluster::Cluster;
use super::fault::{Fault, FaultError, active_line, nodes_of};
use crate::control::{Cmd, Remote};
use crate::faults::Verb;
pub use crate::faults::ssh_drop::{DEFAULT_DURATION_MS, DropParams, MAX_DURATION_MS};
use crate::faults::verb::{START_SSH_DROP as START, STOP_SSH_DROP as STOP};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long after the hold `stop-ssh-drop` keeps trying before it gives up, in ms.
pub const BACK_GRACE_MS: u64 = 15_000;
/// Pause between attempts to reach a dropped node, in ms.
const RETRY_EVERY_MS: u64 = 250;
/// Limit of one attempt's command (`true`), in ms.
const PROBE_TIMEOUT_MS: u64 = 3_000;

/// The start of the error when a node has no sshd supervisor (nothing was touched there).
pub const NO_SUPERVISOR: &str = "ssh-drop needs the sandbox's sshd supervisor";

/// `$1` hold in ms, `$2` the reaper's process name, `$3` the hold file. Exit 3 and the name of
/// PID 1 on stdout: no reaper.
const DROP_SCRIPT: &str = r#"p1=$(cat /proc/1/comm 2>/dev/null || echo unknown)
if [ "$p1" != "$2" ]; then
  echo "$p1"
  exit 3
fi
printf '%s\n' "$1" > "$3" && kill -USR1 1
"#;

/// Exit status of [`DROP_SCRIPT`] when PID 1 is not the reaper.
const NOT_SUPERVISED: i32 = 3;

/// Try `true` on `remote` until it runs or `deadline` passes.
fn wait_back(remote: &dyn Remote, deadline: Instant) -> Result<(), String> {
    loop {
        match remote.exec_ok(&Cmd::new("true").timeout_ms(PROBE_TIMEOUT_MS)) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() >= deadline => {
                return Err(format!("sshd did not answer again in time: {e}"));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(RETRY_EVERY_MS)),
        }
    }
}

/// The ssh-drop fault: which nodes have SSH dropped, and until when (the controller's
/// monotonic clock).
#[derive(Debug, Default)]
pub struct SshDrop {
    until: BTreeMap<String, Instant>,
}

impl SshDrop {
    /// `start-ssh-drop`: see the module doc.
    fn drop_ssh(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, FaultError> {
        let p = DropParams::from_value(value)?;
        let idx = match &p.nodes {
            Some(list) => list
                .iter()
                .map(|n| {
                    cx.index_of(n)
                        .ok_or_else(|| format!("{START}: unknown node {n:?}"))
                })
                .collect::<Result<Vec<_>, String>>()?,
            None => cx.choose_targets(p.targets)?,
        };
        let names = cx.node_names(&idx);
        let until =
            Instant::now() + Duration::from_millis(p.duration_ms + crate::sandbox::DROP_DELAY_MS);
        for n in &names {
            self.until.insert(n.clone(), until);
        }
        let detail = json!({ "nodes": names, "duration_ms": p.duration_ms });
        let hold = p.duration_ms.to_string();
        cx.journaled("inject", START, detail.clone(), Some(STOP), |cx| {
            cx.on_nodes(&idx, |r, _| {
                let cmd = Cmd::script(
                    DROP_SCRIPT,
                    [
                        hold.as_str(),
                        crate::sandbox::REAPER_NAME,
                        crate::sandbox::SSHD_HOLD_FILE,
                    ],
                )
                .sudo(true);
                let out = r.exec(&cmd).map_err(|e| e.to_string())?;
                match out.status {
                    0 if out.signal.is_none() => Ok(()),
                    NOT_SUPERVISED => Err(format!(
                        "{NO_SUPERVISOR} ({}) as PID 1, and PID 1 is {}; it works only on sandbox nodes (a sandbox made by an older shakedown: `sandbox down`, then up again)",
                        crate::sandbox::REAPER_NAME,
                        out.stdout.trim()
                    )),
                    status => Err(format!(
                        "the ssh-drop command exited with status {status}: {}",
                        out.stderr.trim()
                    )),
                }
            })
        })
        .map_err(|e| {
            // Nodes where the drop failed were not dropped.
            let outcomes = cx.lock_outcomes().clone();
            for n in outcomes.failed.keys() {
                self.until.remove(n);
            }
            // No node has the supervisor: nothing was touched anywhere.
            if outcomes.applied.is_empty()
                && !outcomes.failed.is_empty()
                && outcomes.failed.values().all(|e| e.starts_with(NO_SUPERVISOR))
            {
                FaultError::Refused(e)
            } else {
                FaultError::Failed(e)
            }
        })?;
        Ok(detail)
    }

    /// `stop-ssh-drop`: wait until every dropped node (and those in `value.nodes`) answers over
    /// SSH again. `value.duration_ms` (from a journal) bounds the wait for nodes this nemesis
    /// did not drop itself.
    fn restore_ssh(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, String> {
        let extra_ms = value["duration_ms"].as_u64().unwrap_or(0);
        let mut until = self.until.clone();
        for n in value["nodes"].as_array().into_iter().flatten() {
            if let Some(n) = n.as_str() {
                until
                    .entry(n.to_string())
                    .or_insert_with(|| Instant::now() + Duration::from_millis(extra_ms));
            }
        }
        let idx: Vec<usize> = until.keys().filter_map(|n| cx.index_of(n)).collect();
        if idx.is_empty() {
            return Ok(json!({ "nodes": [] }));
        }
        let names = cx.node_names(&idx);
        let grace = Duration::from_millis(BACK_GRACE_MS);
        let detail = json!({ "nodes": names });
        cx.journaled("undo", STOP, detail.clone(), None, |cx| {
            cx.on_nodes(&idx, |r, node| {
                let deadline = until.get(&node.name).copied().unwrap_or_else(Instant::now) + grace;
                wait_back(r, deadline)
            })
        })?;
        self.until.clear();
        Ok(detail)
    }
}

impl Fault for SshDrop {
    fn name(&self) -> &'static str {
        "ssh-drop"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::StartSshDrop, Verb::StopSshDrop]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        match v {
            Verb::StartSshDrop => self.drop_ssh(cx, value),
            _ => Ok(self.restore_ssh(cx, value)?),
        }
    }

    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        if self.until.is_empty() {
            return Ok(());
        }
        self.restore_ssh(cx, &Value::Null).map(|_| ())
    }

    fn heal_what(&self) -> &'static str {
        "wait for sshd"
    }

    fn active(&self) -> Option<String> {
        active_line("ssh-drop", self.until.keys())
    }

    /// The hold may still be running (the controller died mid-drop): wait at most its full
    /// length plus the grace.
    fn adopt(&mut self, outstanding: &[Value]) -> Vec<String> {
        let nodes = nodes_of(outstanding, Verb::StartSshDrop);
        let hold_ms = outstanding
            .iter()
            .filter(|r| r["f"] == START)
            .filter_map(|r| r["detail"]["duration_ms"].as_u64())
            .max()
            .unwrap_or(0);
        let until = Instant::now() + Duration::from_millis(hold_ms);
        for n in &nodes {
            self.until.entry(n.clone()).or_insert(until);
        }
        nodes
    }

    fn healed(&self, _: &str) -> String {
        "sshd answers again".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{ExecError, ExecOutput};
    use crate::nemesis::Nemesis;
    use rand::SeedableRng;
    use std::sync::Arc;

    /// A real host: PID 1 is systemd, not the sandbox's reaper.
    struct RealHost(String);

    impl Remote for RealHost {
        fn node(&self) -> &str {
            &self.0
        }
        fn exec(&self, _cmd: &Cmd) -> Result<ExecOutput, ExecError> {
            Ok(ExecOutput {
                status: NOT_SUPERVISED,
                signal: None,
                stdout: "systemd\n".into(),
                stderr: String::new(),
            })
        }
        fn upload(&self, _: &[u8], _: &str, _: u32) -> Result<(), ExecError> {
            Ok(())
        }
        fn download(&self, _: &str, _: &std::path::Path) -> Result<(), ExecError> {
            Ok(())
        }
    }

    #[test]
    fn without_the_reaper_ssh_drop_fails_definitely_and_says_why() {
        let mut n = Nemesis::new(super::super::NemesisConfig {
            helper_exe: None,
            nodes: vec![crate::node::Node {
                name: "n1".into(),
                host: "10.0.0.1".into(),
            }],
            remotes: vec![Arc::new(RealHost("n1".into()))],
            db: Arc::new(crate::systems::etcd::Etcd::new(Default::default())),
            partition: Default::default(),
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(1),
            journal: None,
        });
        let c = n.invoke(START, &json!({"nodes": ["n1"], "duration_ms": 1000}));
        let crate::client::Completion::Fail { error, .. } = &c else {
            panic!("expected a definite failure, got {c:?}");
        };
        assert!(
            error.starts_with(&format!(
                "n1: {NO_SUPERVISOR} (sd-reaper) as PID 1, and PID 1 is systemd"
            )),
            "{error}"
        );
        assert!(n.active().is_empty(), "nothing was dropped");
        // Nothing to wait for.
        assert!(matches!(
            n.invoke(STOP, &Value::Null),
            crate::client::Completion::Ok { .. }
        ));
    }
}
