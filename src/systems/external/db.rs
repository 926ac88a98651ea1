//! An external system's `Db`: the spec's per-node commands run over SSH, and the abilities the
//! given commands make possible (`kill` + `start` → Kill, `pause` + `resume` → Pause,
//! `primaries` → Primaries, `promote` → Promote).
//!
//! Owns building each command with `Cmd` (the spec's script is constant text run by `sh -c`;
//! node name, index, node list, data dir and options arrive as positional parameters, never
//! spliced into the script), uploading its files, the setup
//! order (with `[durability]`: any old layer unmounted before `wipe`; in a run that serves it
//! from the lose-unsynced layer, a fresh layer mounted before the uploads and `setup`, and what
//! they wrote made durable before `start`), polling `ready`, and error messages naming the node
//! and the command. Does not own parsing the spec (`spec`), clients (`client`) or the layer's
//! scripts (`nemesis::power`).

use super::spec::{CommandKind, ExternalConfig};
use crate::control::{Cmd, ExecOutput, Remote};
use crate::db::Abilities;
use crate::db::{Db, DbError, Kill, Membership, Pause, Primaries, Promote};
use crate::node::Node;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Prints the installed version of package `$1`.
const PACKAGE_VERSION_SCRIPT: &str = r#"dpkg-query -W -f='${Version}' "$1""#;

/// Creates the data directory `$1`.
const MKDIR_SCRIPT: &str = r#"mkdir -p "$1""#;

/// How long package installation and the spec's `install` command may take.
const INSTALL_TIMEOUT_MS: u64 = 600_000;
/// Pause between two `ready` polls.
const READY_POLL: Duration = Duration::from_millis(500);
/// Timeout of one `primaries` command (asked during faults: keep it short).
const PRIMARIES_TIMEOUT_MS: u64 = 10_000;

/// The exit status by which a command says the system turned the request down and nothing
/// changed (a membership change it refused); any other failure leaves that open.
pub const REFUSED_STATUS: i32 = 3;

/// Removes the marker of a retired node, `$1`.
const UNRETIRE_SCRIPT: &str = r#"rm -f "$1""#;
/// Leaves the marker of a retired node, `$1`.
const RETIRE_SCRIPT: &str = r#"touch "$1""#;
/// Exits 0 when the marker `$1` is there.
const IS_RETIRED_SCRIPT: &str = r#"test -e "$1""#;

/// An external system's DB side.
#[derive(Clone)]
pub struct ExternalDb {
    /// The spec and option values.
    pub cfg: Arc<ExternalConfig>,
    /// The cluster of the last setup: commands that the `Db` traits call without the node list
    /// (stop, kill, pause, resume) still get `$2` and `$3` from it.
    cluster: Arc<Mutex<Vec<Node>>>,
}

impl ExternalDb {
    /// The DB side of `cfg`.
    pub fn new(cfg: Arc<ExternalConfig>) -> ExternalDb {
        ExternalDb {
            cfg,
            cluster: Arc::default(),
        }
    }

    fn remember(&self, cluster: &[Node]) {
        if let Ok(mut c) = self.cluster.lock() {
            *c = cluster.to_vec();
        }
    }

    pub(super) fn known_cluster(&self) -> Vec<Node> {
        self.cluster.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The spec's `[durability]` directory on the node (absolute), if declared.
    fn durable_dir(&self) -> Option<String> {
        self.cfg.spec.durability.as_ref().map(|d| d.dir.clone())
    }

    /// Whether the spec gives `kind`.
    pub fn has(&self, kind: CommandKind) -> bool {
        self.cfg.spec.commands.contains_key(&kind)
    }

    /// The positional parameters of every command: `$1` node name, `$2` its 1-based index in
    /// the node list, `$3` the node list (`name=host` separated by spaces), `$4` the data
    /// directory, `$5…` the options as `key=value` in key order. `$2` and `$3` are empty
    /// when the node list is not known (`shakedown heal` after a killed controller).
    pub fn params(&self, node: &Node, cluster: &[Node]) -> Vec<String> {
        let index = cluster
            .iter()
            .position(|n| n.name == node.name)
            .map(|i| (i + 1).to_string())
            .unwrap_or_default();
        let list: Vec<String> = cluster
            .iter()
            .map(|n| format!("{}={}", n.name, n.host))
            .collect();
        let mut p = vec![
            node.name.clone(),
            index,
            list.join(" "),
            self.cfg.spec.data_dir.clone(),
        ];
        p.extend(self.cfg.options.iter().map(|(k, v)| format!("{k}={v}")));
        p
    }

    /// The command `kind` for `node`, or `None` when the spec does not give it.
    pub fn command(&self, kind: CommandKind, node: &Node, cluster: &[Node]) -> Option<Cmd> {
        self.command_with(kind, node, cluster, &[])
    }

    /// [`ExternalDb::command`] with environment variables (the membership commands' target and
    /// members: values, never spliced into the script).
    pub fn command_with(
        &self,
        kind: CommandKind,
        node: &Node,
        cluster: &[Node],
        env: &[(&str, String)],
    ) -> Option<Cmd> {
        let script = self.cfg.spec.commands.get(&kind)?;
        let timeout_ms = match kind {
            CommandKind::Install => INSTALL_TIMEOUT_MS,
            CommandKind::Primaries => PRIMARIES_TIMEOUT_MS,
            _ => (self.cfg.spec.command_timeout_s * 1000.0) as u64,
        };
        // `sh -c SCRIPT NAME ARGS…`: the script is the spec's constant text, `$0` names the
        // command in the shell's own messages, every value is one quoted argument.
        let mut cmd = Cmd::new("sh");
        for (k, v) in env {
            cmd = cmd.env(*k, v.clone());
        }
        Some(
            cmd.arg("-c")
                .arg(script.clone())
                .arg(format!("{}-{}", self.cfg.spec.name, kind.as_str()))
                .args(self.params(node, cluster))
                .sudo(true)
                .timeout_ms(timeout_ms),
        )
    }

    /// Run `kind` on `node`; a non-zero exit is an error naming the node, the command and what
    /// it printed. `Ok(None)` when the spec does not give `kind`.
    pub(super) fn run(
        &self,
        remote: &dyn Remote,
        kind: CommandKind,
        node: &Node,
        cluster: &[Node],
    ) -> Result<Option<ExecOutput>, DbError> {
        self.run_with(remote, kind, node, cluster, &[])
    }

    /// [`ExternalDb::run`] with environment variables. From a membership change
    /// (`remove_member`, `add_member`), exit status [`REFUSED_STATUS`] is [`DbError::Refused`]
    /// (the script says nothing changed); from any other command it is a failure like others.
    pub(super) fn run_with(
        &self,
        remote: &dyn Remote,
        kind: CommandKind,
        node: &Node,
        cluster: &[Node],
        env: &[(&str, String)],
    ) -> Result<Option<ExecOutput>, DbError> {
        let Some(cmd) = self.command_with(kind, node, cluster, env) else {
            return Ok(None);
        };
        let out = remote.exec(&cmd)?;
        if !out.success() {
            let change = matches!(kind, CommandKind::RemoveMember | CommandKind::AddMember);
            if change && out.status == REFUSED_STATUS && out.signal.is_none() {
                return Err(DbError::Refused {
                    node: node.name.clone(),
                    message: format!(
                        "{} `{}` command refused (exit status {REFUSED_STATUS}: nothing changed){}",
                        self.cfg.spec.name,
                        kind.as_str(),
                        output_hint(&out)
                    ),
                });
            }
            return Err(DbError::Other {
                node: node.name.clone(),
                message: format!(
                    "{} `{}` command failed ({}){}",
                    self.cfg.spec.name,
                    kind.as_str(),
                    exit_words(&out),
                    output_hint(&out)
                ),
            });
        }
        Ok(Some(out))
    }

    fn node_of(remote: &dyn Remote, cluster: &[Node]) -> Node {
        cluster
            .iter()
            .find(|n| n.name == remote.node())
            .cloned()
            .unwrap_or_else(|| Node {
                name: remote.node().to_string(),
                host: String::new(),
            })
    }

    /// Poll `ready` on `node` until it exits 0 or `ready_timeout_s` passes.
    pub fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        let started = Instant::now();
        let limit = Duration::from_secs_f64(self.cfg.spec.ready_timeout_s);
        loop {
            let last = match self.run(remote, CommandKind::Ready, node, cluster) {
                Ok(_) => return Ok(()),
                Err(e) => e.to_string(),
            };
            if started.elapsed() >= limit {
                return Err(DbError::NotReady {
                    node: node.name.clone(),
                    what: self.cfg.spec.name.clone(),
                    waited_ms: started.elapsed().as_millis() as u64,
                    detail: last,
                });
            }
            std::thread::sleep(READY_POLL);
        }
    }
}

/// "exit status 3" / "killed by signal KILL".
fn exit_words(out: &ExecOutput) -> String {
    match &out.signal {
        Some(sig) => format!("killed by signal {sig}"),
        None => format!("exit status {}", out.status),
    }
}

/// The last lines of stderr (else stdout), for an error message.
fn output_hint(out: &ExecOutput) -> String {
    let text = if out.stderr.trim().is_empty() {
        &out.stdout
    } else {
        &out.stderr
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    let cut: String = tail.chars().take(400).collect();
    format!(": {cut}")
}

impl Abilities for ExternalDb {
    fn name(&self) -> &str {
        &self.cfg.spec.name
    }
    fn data_dir(&self) -> Option<String> {
        self.durable_dir()
    }
    fn data_files(&self) -> Vec<String> {
        self.cfg
            .spec
            .durability
            .as_ref()
            .map(|d| d.files.clone())
            .unwrap_or_default()
    }
    fn data_layer(&self) -> Option<crate::db::layer::DataLayer> {
        crate::db::layer::DataLayer::over(self.cfg.lazyfs.as_deref(), self.durable_dir()?)
    }
    fn as_kill(&self) -> Option<&dyn Kill> {
        self.has(CommandKind::Kill).then_some(self as &dyn Kill)
    }
    fn as_pause(&self) -> Option<&dyn Pause> {
        (self.has(CommandKind::Pause) && self.has(CommandKind::Resume))
            .then_some(self as &dyn Pause)
    }
    fn as_primaries(&self) -> Option<&dyn Primaries> {
        self.has(CommandKind::Primaries)
            .then_some(self as &dyn Primaries)
    }
    fn as_promote(&self) -> Option<&dyn Promote> {
        self.has(CommandKind::Promote)
            .then_some(self as &dyn Promote)
    }
    fn as_membership(&self) -> Option<&dyn Membership> {
        CommandKind::MEMBERSHIP
            .iter()
            .all(|k| self.has(*k))
            .then_some(self as &dyn Membership)
    }
}

impl Db for ExternalDb {
    fn packages(&self) -> Vec<String> {
        self.cfg.spec.packages.clone()
    }

    fn install(&self, _remote: &dyn Remote) -> Result<(), DbError> {
        // The spec's packages come through `provision`; its own `install` command runs in setup.
        Ok(())
    }

    fn setup(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        self.remember(cluster);
        self.fresh_start(remote, node, cluster, &[])
    }

    fn teardown(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError> {
        if self.has(CommandKind::Resume) {
            // A paused server may not stop on a polite signal.
            self.run(remote, CommandKind::Resume, node, &self.known_cluster())?;
        }
        self.run(remote, CommandKind::Stop, node, &self.known_cluster())?;
        if let Some(dir) = self.durable_dir() {
            crate::db::layer::unmount(remote, &dir)?;
        }
        Ok(())
    }

    fn log_files(&self, _node: &Node) -> Vec<String> {
        self.cfg.spec.logs.clone()
    }

    fn version(&self, remote: &dyn Remote) -> Option<String> {
        let cluster = self.known_cluster();
        let node = Self::node_of(remote, &cluster);
        let out = match self.run(remote, CommandKind::Version, &node, &cluster) {
            Ok(Some(out)) => out.stdout,
            Ok(None) => {
                let first = self.cfg.spec.packages.first()?;
                remote
                    .exec_ok(&Cmd::script(PACKAGE_VERSION_SCRIPT, [first.clone()]))
                    .ok()
                    .map(|v| format!("{first} {v}"))?
            }
            Err(_) => return None,
        };
        out.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(String::from)
    }
}

impl ExternalDb {
    /// The marker a retired node leaves beside its data directory: `Kill::start` does not
    /// start a node that has it (only the membership fault's add does, which removes it).
    pub(super) fn retired_marker(&self) -> String {
        format!("{}.retired", self.cfg.spec.data_dir.trim_end_matches('/'))
    }

    /// Leave or remove the retired marker on the node behind `remote`.
    pub(super) fn mark_retired(&self, remote: &dyn Remote, retired: bool) -> Result<(), DbError> {
        let script = if retired {
            RETIRE_SCRIPT
        } else {
            UNRETIRE_SCRIPT
        };
        remote.exec_ok(&Cmd::script(script, [self.retired_marker()]).sudo(true))?;
        Ok(())
    }

    /// Everything setup does on one node, with `env` for `setup` and `start` (a member joining
    /// a running cluster gets `SHAKEDOWN_JOIN`): install, stop what runs, wipe, upload, setup,
    /// start. Removes the retired marker (a system with membership).
    pub(super) fn fresh_start(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
        env: &[(&str, String)],
    ) -> Result<(), DbError> {
        if self.as_membership().is_some() {
            self.mark_retired(remote, false)?;
        }
        self.run(remote, CommandKind::Install, node, cluster)?;
        // Whatever an earlier run left running goes first, then a layer it left mounted (stale
        // or not: `wipe` could not remove a stale mount point), then its data.
        self.run(remote, CommandKind::Stop, node, cluster)?;
        if let Some(dir) = self.durable_dir() {
            crate::db::layer::unmount(remote, &dir)?;
        }
        self.run(remote, CommandKind::Wipe, node, cluster)?;
        remote.exec_ok(&Cmd::script(MKDIR_SCRIPT, [self.cfg.spec.data_dir.clone()]).sudo(true))?;
        // A fresh layer before the uploads and `setup`, which may write into it (ZooKeeper's
        // `myid`).
        let layer = self.data_layer();
        if let Some(layer) = &layer {
            layer.mount(remote, true)?;
        }
        for f in &self.cfg.spec.files {
            if let Some(parent) = std::path::Path::new(&f.dest).parent() {
                remote.exec_ok(
                    &Cmd::script(MKDIR_SCRIPT, [parent.display().to_string()]).sudo(true),
                )?;
            }
            remote.upload(&f.contents, &f.dest, f.mode)?;
        }
        self.run_with(remote, CommandKind::Setup, node, cluster, env)?;
        if let Some(layer) = &layer {
            // What setup wrote is durable: a power loss never reaches back before the start.
            layer.sync_all(remote)?;
        }
        self.run_with(remote, CommandKind::Start, node, cluster, env)?;
        Ok(())
    }
}

impl Kill for ExternalDb {
    fn kill(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError> {
        self.run(remote, CommandKind::Kill, node, &self.known_cluster())?;
        Ok(())
    }

    /// Start the server again; with the lose-unsynced layer, remount it first if its process
    /// died (a stale mount), keeping its files.
    fn start(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        if self.as_membership().is_some()
            && remote
                .exec(&Cmd::script(IS_RETIRED_SCRIPT, [self.retired_marker()]).sudo(true))?
                .success()
        {
            // Retired by the membership fault: it comes back only as a new member.
            return Ok(());
        }
        if let Some(layer) = self.data_layer() {
            layer.mount(remote, false)?;
        }
        self.run(remote, CommandKind::Start, node, cluster)?;
        Ok(())
    }
}

impl Pause for ExternalDb {
    fn pause(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError> {
        self.run(remote, CommandKind::Pause, node, &self.known_cluster())?;
        Ok(())
    }

    fn resume(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError> {
        self.run(remote, CommandKind::Resume, node, &self.known_cluster())?;
        Ok(())
    }
}

impl Primaries for ExternalDb {
    /// Runs `primaries` on every node at once and takes the union of the node names they
    /// print (a node typically prints its own name when it leads); names not in the cluster
    /// are ignored. An error when no node answered or none named a primary.
    fn primaries(
        &self,
        remotes: &[Arc<dyn Remote>],
        nodes: &[Node],
    ) -> Result<Vec<String>, DbError> {
        use crate::control::fanout;
        let pairs: Vec<(&Arc<dyn Remote>, &Node)> = remotes.iter().zip(nodes).collect();
        let answers: Vec<Result<Option<ExecOutput>, DbError>> =
            fanout::each(&pairs, fanout::FAN_OUT, |(r, n)| {
                self.run(r.as_ref(), CommandKind::Primaries, n, nodes)
            })
            .into_iter()
            .map(|a| {
                a.unwrap_or_else(|_| {
                    Err(DbError::Other {
                        node: "?".into(),
                        message: "primaries command panicked".into(),
                    })
                })
            })
            .collect();
        let mut names: Vec<String> = Vec::new();
        let mut errors = Vec::new();
        for a in answers {
            match a {
                Ok(Some(out)) => {
                    for w in out.stdout.split_whitespace() {
                        if nodes.iter().any(|n| n.name == w) && !names.iter().any(|x| x == w) {
                            names.push(w.to_string());
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => errors.push(e.to_string()),
            }
        }
        if names.is_empty() {
            let first = nodes.first().map(|n| n.name.clone()).unwrap_or_default();
            return Err(DbError::Other {
                node: first,
                message: format!(
                    "{}: no node named a primary{}",
                    self.cfg.spec.name,
                    if errors.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", errors.join("; "))
                    }
                ),
            });
        }
        names.sort();
        Ok(names)
    }
}

impl Promote for ExternalDb {
    fn candidates(&self, cluster: &[Node]) -> Vec<String> {
        cluster.iter().map(|n| n.name.clone()).collect()
    }

    fn promote(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        self.run(remote, CommandKind::Promote, node, cluster)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems::external::spec::parse;
    use std::path::Path;

    fn db(extra: &str) -> ExternalDb {
        let text = format!(
            "name = \"toy\"\n[options.reads]\ndefault = \"plain\"\n[options.port]\ndefault = \"2181\"\n[commands]\nstart = \"echo \\\"$1\\\"\"\nstop = \"true\"\nready = \"true\"\n{extra}\n[client]\ncommand = [\"c\"]\n"
        );
        let spec = parse(&text, Path::new("toy.toml")).unwrap();
        let options = spec
            .options
            .iter()
            .map(|(k, o)| (k.clone(), o.default.clone()))
            .collect();
        ExternalDb::new(Arc::new(ExternalConfig {
            arg: "toy.toml".into(),
            spec,
            options,
            lazyfs: None,
        }))
    }

    fn nodes() -> Vec<Node> {
        (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.9.0.{i}"),
            })
            .collect()
    }

    #[test]
    fn values_reach_scripts_only_as_quoted_positional_parameters() {
        let d = db("");
        let n = nodes();
        assert_eq!(
            d.params(&n[1], &n),
            vec![
                "n2",
                "2",
                "n1=10.9.0.1 n2=10.9.0.2 n3=10.9.0.3",
                "/tmp/shakedown-toy",
                "port=2181",
                "reads=plain"
            ]
        );
        let shell = d.command(CommandKind::Start, &n[0], &n).unwrap().to_shell();
        assert!(
            shell.starts_with("sh -c 'echo \"$1\"' toy-start n1 1 'n1=10.9.0.1 n2=10.9.0.2 n3=10.9.0.3' /tmp/shakedown-toy"),
            "{shell}"
        );
        // Run it: the script sees the node name as $1.
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&shell)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "n1\n");
        // Unknown node list (heal): index and list are empty, not wrong.
        assert_eq!(d.params(&n[0], &[])[1..3], ["", ""]);
    }

    #[test]
    fn abilities_follow_the_commands_given() {
        let d = db("");
        assert!(d.as_kill().is_none() && d.as_pause().is_none());
        assert!(d.as_primaries().is_none() && d.as_promote().is_none());
        assert!(
            d.command(CommandKind::Kill, &nodes()[0], &nodes())
                .is_none()
        );
        let d =
            db("kill = \"x\"\npause = \"x\"\nresume = \"x\"\nprimaries = \"x\"\npromote = \"x\"");
        assert!(d.as_kill().is_some() && d.as_pause().is_some());
        assert!(d.as_primaries().is_some() && d.as_promote().is_some());
    }

    #[test]
    fn failures_name_the_command_and_show_its_output() {
        let out = ExecOutput {
            status: 3,
            signal: None,
            stdout: String::new(),
            stderr: "a\nb\n\nc\nd\n".into(),
        };
        assert_eq!(exit_words(&out), "exit status 3");
        assert_eq!(output_hint(&out), ": b | c | d");
    }
}
