//! External systems: a database described by a TOML spec (`--db FILE.toml`, or `--db NAME` for
//! `systems/NAME.toml`) instead of Rust code, driven by a client program in any language that
//! speaks JSON lines over stdin/stdout (PROTOCOL.md).
//!
//! Owns the `System` of such a spec: its `Db` (`db`), its clients (`client`, one local process
//! per worker thread) and what test.json records about it. Submodules: `spec` (parsing,
//! file:line errors, `--db-opt`), `protocol` (message shapes, pure), `client` (process
//! manager), `db` (per-node commands and abilities).

pub mod client;
pub mod db;
pub mod freeze;
pub mod membership;
pub mod protocol;
pub mod spec;

use super::{RunOptions, Supports, System, SystemSettings};
use crate::client::{Client, ClientCtx, ClientOpenError};
use crate::control::Remote;
use crate::db::Abilities;
use crate::db::{Db, DbError};
use crate::node::Node;
use crate::options::{ConfigError, ReadFrom, ReadMode};
use crate::spec::WorkloadSpec;
use client::{Launch, ProtocolClient};
use db::ExternalDb;
use serde_json::{Value, json};
use spec::{CommandKind, ExternalConfig};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Record the client protocol errors of a run's history in its results (`client_protocol_errors`)
/// when the run tested an external system (its test.json names a client program) or any op
/// carries one.
pub fn record_protocol_errors(
    results: &mut Value,
    history: &crate::history::History,
    test_json: &std::path::Path,
) {
    record_protocol_counts(results, &protocol::count_errors(history), test_json);
}

/// [`record_protocol_errors`] with the counts already made (a history read as it streamed).
pub fn record_protocol_counts(
    results: &mut Value,
    counts: &std::collections::BTreeMap<protocol::ProtocolErrorKind, u64>,
    test_json: &std::path::Path,
) {
    let external = std::fs::read_to_string(test_json)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|t| t.pointer("/db/config/client").is_some());
    if external || !counts.is_empty() {
        results[protocol::RESULTS_KEY] = protocol::counts_json(counts);
    }
}

/// Least time a client process has to start and answer `init` (interpreters and libraries take
/// their time on a loaded machine); ops meanwhile fail unsent.
pub const CLIENT_INIT_TIMEOUT_MS: u64 = 10_000;

/// An external system: the spec's commands on the nodes, the spec's client program locally.
#[derive(Clone)]
pub struct ExternalSystem {
    db: ExternalDb,
    /// Where each client thread's stderr goes (`logs/clients/` of the run), once known.
    client_logs: Arc<OnceLock<PathBuf>>,
    /// Each thread's client process, frozen while the thread is stalled.
    client_pids: freeze::ClientPids,
}

impl ExternalSystem {
    /// The system `cfg` describes.
    pub fn new(cfg: ExternalConfig) -> ExternalSystem {
        ExternalSystem {
            db: ExternalDb::new(Arc::new(cfg)),
            client_logs: Arc::default(),
            client_pids: freeze::ClientPids::default(),
        }
    }

    /// The spec and option values.
    pub fn config(&self) -> &ExternalConfig {
        &self.db.cfg
    }

    /// How worker thread `thread` runs its client.
    pub fn launch(
        &self,
        thread: usize,
        nodes: &[Node],
        timeout_ms: u64,
        seed: u64,
        workload: &str,
    ) -> Launch {
        let cfg = self.config();
        let node = &nodes[thread % nodes.len()];
        Launch {
            argv: cfg.spec.client.clone(),
            cwd: cfg.spec.dir.clone(),
            init: protocol::Init {
                thread,
                node: node.name.clone(),
                nodes: nodes.to_vec(),
                options: cfg.options.clone(),
                timeout_ms,
                seed: seed.wrapping_add(1000 + thread as u64),
                workload: workload.to_string(),
            },
            timeout_ms,
            init_timeout_ms: timeout_ms.max(CLIENT_INIT_TIMEOUT_MS),
            stderr_log: self
                .client_logs
                .get()
                .map(|d| d.join(format!("thread-{thread}.log"))),
            pids: Some(self.client_pids.clone()),
        }
    }
}

impl Abilities for ExternalSystem {
    fn name(&self) -> &str {
        self.db.name()
    }
    fn as_kill(&self) -> Option<&dyn crate::db::Kill> {
        self.db.as_kill()
    }
    fn as_pause(&self) -> Option<&dyn crate::db::Pause> {
        self.db.as_pause()
    }
    fn as_primaries(&self) -> Option<&dyn crate::db::Primaries> {
        self.db.as_primaries()
    }
    fn as_promote(&self) -> Option<&dyn crate::db::Promote> {
        self.db.as_promote()
    }
    fn as_membership(&self) -> Option<&dyn crate::db::Membership> {
        self.db.as_membership()
    }
    fn data_dir(&self) -> Option<String> {
        self.db.data_dir()
    }
    fn data_files(&self) -> Vec<String> {
        self.db.data_files()
    }
    fn data_layer(&self) -> Option<crate::db::layer::DataLayer> {
        self.db.data_layer()
    }
}

impl Db for ExternalSystem {
    fn packages(&self) -> Vec<String> {
        self.db.packages()
    }
    fn install(&self, remote: &dyn Remote) -> Result<(), DbError> {
        self.db.install(remote)
    }
    fn setup(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        self.db.setup(remote, node, cluster)
    }
    fn teardown(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError> {
        self.db.teardown(remote, node)
    }
    fn log_files(&self, node: &Node) -> Vec<String> {
        self.db.log_files(node)
    }
    fn version(&self, remote: &dyn Remote) -> Option<String> {
        self.db.version(remote)
    }
}

/// What every external system can serve besides its declared workloads and its commands'
/// faults: its client decides where reads go and how (through the spec's options), so only the
/// defaults of `--read-mode` and `--read-from`.
const SUPPORTS: Supports = Supports {
    workloads: &spec::WORKLOAD_KINDS,
    read_modes: &[ReadMode::Linearizable],
    read_from: &[ReadFrom::Own],
    read_nodes: false,
};

impl SystemSettings for ExternalConfig {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn db_arg(&self) -> String {
        crate::control::quote(&self.arg)
    }

    fn open(&self) -> Arc<dyn System> {
        Arc::new(ExternalSystem::new(self.clone()))
    }

    fn rerun_args(&self) -> Vec<String> {
        self.non_default_opts()
            .iter()
            .map(|o| format!("--db-opt {}", crate::control::quote(o)))
            .collect()
    }
}

impl System for ExternalSystem {
    fn validate(&self, workload: &WorkloadSpec, options: &RunOptions) -> Result<(), ConfigError> {
        // The spec's own words first (which command or declaration is missing), then the
        // common checks (read flags, abilities).
        self.config().validate_workload(workload)?;
        self.config().validate_faults(options.nemesis)?;
        self.config().validate_stall(workload, options.nemesis)?;
        SUPPORTS.check(self, workload, options)
    }

    fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        self.db.await_ready(remote, node, cluster)
    }

    fn client(&self, ctx: &ClientCtx) -> Result<Box<dyn Client>, ClientOpenError> {
        if ctx.nodes.is_empty() {
            return Err(ClientOpenError::Config(format!(
                "{}: no nodes for the clients",
                self.name()
            )));
        }
        Ok(Box::new(ProtocolClient::new(self.launch(
            ctx.thread,
            &ctx.nodes,
            ctx.op_timeout_ms,
            ctx.seed,
            &ctx.workload_kind,
        ))))
    }

    fn config_json(&self, _cluster: &[Node]) -> Value {
        let cfg = self.config();
        let abilities: Vec<&str> = [
            (self.db.as_kill().is_some(), "kill"),
            (self.db.as_pause().is_some(), "pause"),
            (self.db.as_primaries().is_some(), "primaries"),
            (self.db.as_promote().is_some(), "promote"),
            (self.db.as_membership().is_some(), "membership"),
        ]
        .into_iter()
        .filter_map(|(has, name)| has.then_some(name))
        .collect();
        let commands: Vec<&str> = CommandKind::ALL
            .into_iter()
            .filter(|k| self.db.has(*k))
            .map(CommandKind::as_str)
            .collect();
        json!({
            "spec": cfg.spec.path.display().to_string(),
            "packages": cfg.spec.packages,
            "data_dir": cfg.spec.data_dir,
            "durability": cfg.spec.durability.as_ref().map(|d| json!({
                "dir": d.dir,
                "files": d.files,
                "layer": cfg.lazyfs.is_some(),
            })),
            "options": cfg.options,
            "commands": commands,
            "abilities": abilities,
            "client": cfg.spec.client,
        })
    }

    fn to_arc(&self) -> Arc<dyn System> {
        Arc::new(self.clone())
    }

    fn to_db(&self) -> Arc<dyn Db> {
        Arc::new(self.clone())
    }

    fn attach_client_logs(&self, dir: &std::path::Path) {
        let _ = self.client_logs.set(dir.to_path_buf());
    }

    fn attach_stalls(&self, board: &crate::generator::stall::StallBoard) {
        self.client_pids.watch(board.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::config::TestConfig;
    use crate::systems::SystemConfig;
    use clap::Parser;

    fn external(cfg: &TestConfig) -> &ExternalConfig {
        match &cfg.system {
            SystemConfig::External(e) => e,
            other => panic!("not external: {other:?}"),
        }
    }

    fn run_config(args: &[&str]) -> Result<TestConfig, String> {
        let cli = Cli::try_parse_from(["shakedown", "run"].iter().chain(args))
            .map_err(|e| e.to_string())?;
        let Command::Run(r) = cli.command else {
            panic!("not run")
        };
        r.into_config().map_err(|e| e.to_string())
    }

    fn toykv() -> String {
        format!("{}/tests/data/toykv/toykv.toml", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn a_spec_path_becomes_the_run_system_with_its_options_in_the_rerun_line() {
        let spec = toykv();
        let cfg = run_config(&[
            "--db",
            &spec,
            "--db-opt",
            "misbehave=yes",
            "--nemesis",
            "kill",
        ])
        .unwrap();
        assert_eq!(cfg.name, "toykv-register");
        let ext = external(&cfg);
        assert_eq!(ext.options["misbehave"], "yes");
        let rerun = cfg.rerun_command();
        assert!(
            rerun.contains(&format!("--db {spec} --db-opt 'misbehave=yes'")),
            "{rerun}"
        );
        let sys = cfg.system.open();
        assert_eq!(sys.name(), "toykv");
        assert!(sys.as_kill().is_some() && sys.as_primaries().is_none());
        let nodes: Vec<Node> = (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.0.0.{i}"),
            })
            .collect();
        assert!(sys.client(&cfg.client_ctx(4, &nodes)).is_ok());
        let v = sys.config_json(&nodes);
        assert_eq!(v["abilities"], json!(["kill", "pause"]));
        assert_eq!(v["options"]["misbehave"], "yes");
        // The default value is not repeated in the rerun line.
        let cfg = run_config(&["--db", &spec, "--db-opt", "misbehave=no"]).unwrap();
        assert!(!cfg.rerun_command().contains("--db-opt"));
    }

    #[test]
    fn each_thread_gets_its_node_and_the_spec_folder() {
        let spec = toykv();
        let cfg = run_config(&["--db", &spec]).unwrap();
        let sys = ExternalSystem::new(external(&cfg).clone());
        let nodes: Vec<Node> = (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.0.0.{i}"),
            })
            .collect();
        let l = sys.launch(4, &nodes, 1500, 7, "register");
        assert_eq!(l.init.node, "n2");
        assert_eq!(l.init.thread, 4);
        assert_eq!(l.timeout_ms, 1500);
        assert!(l.cwd.ends_with("tests/data/toykv"));
        assert_eq!(l.stderr_log, None);
        sys.attach_client_logs(std::path::Path::new("/r/logs/clients"));
        let l = sys.launch(4, &nodes, 1500, 7, "register");
        assert_eq!(
            l.stderr_log.unwrap(),
            std::path::Path::new("/r/logs/clients/thread-4.log")
        );
    }

    #[test]
    fn workloads_the_client_does_not_declare_are_refused() {
        let spec = toykv();
        let e = run_config(&["--db", &spec, "--workload", "list-append"]).unwrap_err();
        assert!(
            e.contains("--workload") && e.contains("toykv's client performs register"),
            "{e}"
        );
        assert!(run_config(&["--db", &spec, "--workload", "session"]).is_ok());
        let e = run_config(&["--db", &spec, "--workload", "set"]).unwrap_err();
        assert!(e.contains("toykv's client performs register"), "{e}");
    }

    #[test]
    fn lock_workloads_and_stalls_need_a_client_that_declares_them() {
        let zk = format!("{}/systems/zookeeper.toml", env!("CARGO_MANIFEST_DIR"));
        for w in ["lock", "fenced-lock"] {
            run_config(&["--db", &zk, "--workload", w, "--nemesis", "stall"])
                .unwrap_or_else(|e| panic!("{w}: {e}"));
        }
        let e = run_config(&["--db", &zk, "--nemesis", "stall"]).unwrap_err();
        assert!(
            e.contains("--nemesis") && e.contains("stall") && e.contains("--workload lock"),
            "{e}"
        );
        // toykv declares register only; a spec that declares nothing still does not get the
        // lock ops, which no client serves by accident.
        let e = run_config(&["--db", &toykv(), "--workload", "lock"]).unwrap_err();
        assert!(e.contains("toykv's client performs register"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let bare = dir.path().join("bare.toml");
        std::fs::write(
            &bare,
            "name = \"bare\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\n",
        )
        .unwrap();
        let bare = bare.to_str().unwrap();
        run_config(&["--db", bare, "--workload", "set", "--nemesis", "none"]).unwrap();
        let e = run_config(&[
            "--db",
            bare,
            "--workload",
            "fenced-lock",
            "--nemesis",
            "none",
        ])
        .unwrap_err();
        assert!(
            e.contains("bare's client does not declare the fenced-lock workload"),
            "{e}"
        );
    }

    #[test]
    fn faults_need_their_commands() {
        let spec = toykv();
        let dir = tempfile::tempdir().unwrap();
        let leader_kill = dir.path().join("leader-kill.toml");
        std::fs::write(
            &leader_kill,
            "[[faults]]\nkind = \"kill\"\ntargets = \"primaries\"\n",
        )
        .unwrap();
        for (nemesis, words) in [
            ("promote", "toykv has no `promote` command"),
            ("partition,pause", ""),
            (leader_kill.to_str().unwrap(), "no `primaries` command"),
        ] {
            let r = run_config(&["--db", &spec, "--nemesis", nemesis]);
            match (words, r) {
                ("", Ok(_)) => {}
                ("", Err(e)) => panic!("{nemesis}: {e}"),
                (w, Err(e)) => assert!(e.contains(w) && e.contains("toykv"), "{nemesis}: {e}"),
                (_, Ok(_)) => panic!("{nemesis} accepted"),
            }
        }
    }
}
