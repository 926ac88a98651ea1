//! Systems under test, one folder each: `systems/<name>/` holds its clap argument group, its
//! config, its `System` impl, its `Db` (with abilities) and its client.
//!
//! Owns the `System` trait (a `Db` plus readiness, validation and a per-thread client factory),
//! the serde-tagged [`SystemConfig`] enum and the [`registry`]: these two are the only places that
//! list systems. Also owns [`SystemFlags`], the clap group that gathers every system's flags for
//! `run`, `heal` and `doctor`, and [`Supports`], the checks a system's `validate` is made of.
//! The shared seam every system implements stays in `db` (the `Db` trait and abilities) and
//! `client` (the `Client` trait, `Completion`, `ClientCtx`). Does not own run sequencing
//! (`runner`) or fault injection (`nemesis`).
//!
//! Adding a system in Rust: a folder `systems/<name>/` (args, config, `Db`, client, `System`), a
//! variant of [`SystemConfig`] (with its arm in `SystemConfig::settings`) and a line in
//! [`registry`]. See ARCHITECTURE.md. Without Rust: a TOML spec and a client program
//! (`external`, `SystemConfig::External`; any `--db` that is not a registry name).

pub mod bare_loop;
pub mod etcd;
pub mod external;
pub mod http;
pub mod lifecycle;
pub mod mariadb;
pub mod nats;
pub mod postgres;
pub mod process_clock;
pub mod ready;
pub mod redis;
pub mod strays;

use crate::client::{Client, ClientCtx, ClientOpenError};
use crate::control::Remote;
use crate::db::{Db, DbError};
use crate::node::Node;
use crate::options::{ConfigError, ReadFrom, ReadMode};
use crate::spec::{FaultSpec, NemesisSpec, WorkloadSpec};
use serde_json::Value;
use std::sync::Arc;

/// A system under test: DB lifecycle plus its clients.
pub trait System: Db {
    /// Refuse, before any node is touched, what this system cannot serve: the workload, the read
    /// mode or read routing, a fault whose ability it lacks. The error names the flag, the system
    /// and what it can do instead.
    fn validate(&self, workload: &WorkloadSpec, options: &RunOptions) -> Result<(), ConfigError>;
    /// Block until `node` is ready for clients (healthy, streaming, …).
    fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError>;
    /// Block until `node` serves clients again after the run's faults were healed (before the
    /// final reads). Like [`System::await_ready`] (the default) but creating nothing: a system
    /// whose readiness creates state (NATS creates its streams) overrides it.
    fn await_recovered(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        self.await_ready(remote, node, cluster)
    }
    /// The client of one worker thread; nothing is contacted yet. The error says whether the
    /// settings or the client library is at fault, in words naming the client.
    fn client(&self, ctx: &ClientCtx) -> Result<Box<dyn Client>, ClientOpenError>;
    /// The settings recorded in test.json (`db.config`).
    fn config_json(&self, cluster: &[Node]) -> Value;
    /// An owned handle, for blocking tasks.
    fn to_arc(&self) -> Arc<dyn System>;
    /// This system as a plain `Db` (for the nemesis and cleanup).
    fn to_db(&self) -> Arc<dyn Db>;
    /// Its server programs that read the wall clock without libc (Go programs, static
    /// binaries): in the sandbox they see their node's clock only through the vDSO patch
    /// (`sandbox::clockpatch`), so where it cannot work clock faults against the system are
    /// refused ([`unpatched_clocks_refusal`]). Empty: every program reads time through libc
    /// (the preload shim serves it).
    fn clock_programs(&self) -> &'static [&'static str] {
        &[]
    }
    /// The run's directory for client-side logs (external systems' client stderr); once, before
    /// the first `client` call. Built-in clients log nothing locally.
    fn attach_client_logs(&self, _dir: &std::path::Path) {}
    /// The run's client stall board (`--nemesis stall`), once, after the clients are made.
    /// External systems freeze a stalled thread's client process; built-in clients run in
    /// process, where the generator's hold is the whole stall.
    fn attach_stalls(&self, _board: &crate::generator::stall::StallBoard) {}
    /// The consistency models this system claims for `workload`'s transactions with its
    /// settings (PostgreSQL's repeatable read is snapshot isolation), and the setting that
    /// makes the claim, in words; `None` = no claim (a transactional run is then checked for
    /// Elle's default, strict-serializable).
    fn claimed_consistency(
        &self,
        _workload: &WorkloadSpec,
    ) -> Option<(Vec<crate::checker::txn::consistency::Model>, String)> {
        None
    }
}

/// What a run asks of the system besides its workload (the flags `validate` judges).
#[derive(Debug, Clone, Copy)]
pub struct RunOptions<'a> {
    /// `--read-mode`.
    pub read_mode: ReadMode,
    /// `--read-from`.
    pub read_from: ReadFrom,
    /// `--read-nodes` (empty: not given).
    pub read_nodes: &'a [String],
    /// The nemesis schedule (`--nemesis`), its faults in order.
    pub nemesis: &'a NemesisSpec,
    /// `--nemesis` as given, for messages.
    pub nemesis_name: &'a str,
    /// Nodes in the cluster (`--nodes`, else the sandbox's node count).
    pub node_count: usize,
    /// The nodes are the sandbox's (no `--nodes`): they run this machine's packages.
    pub sandbox: bool,
    /// How long the run lasts before its final reads at the least, in s: `--time-limit` plus
    /// `--settle` (a retention shorter than that expires data the checkers would call lost).
    pub run_s: f64,
}

/// What a system can serve, as data: [`Supports::check`] is the common part of every
/// `System::validate` (workload kinds, read modes, read routing, and faults against the `Db`'s
/// abilities).
#[derive(Debug, Clone, Copy)]
pub struct Supports {
    /// Workload kinds (`WorkloadSpec::kind`) its client performs.
    pub workloads: &'static [&'static str],
    /// Read modes it serves.
    pub read_modes: &'static [ReadMode],
    /// Where its clients can send reads.
    pub read_from: &'static [ReadFrom],
    /// Whether its clients honour `--read-nodes`.
    pub read_nodes: bool,
}

fn spelled<T: Copy>(items: &[T], name: impl Fn(T) -> &'static str) -> String {
    items
        .iter()
        .map(|&i| name(i))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Supports {
    /// Refuse what `db` (named `db.name()`) cannot serve of `workload` and `options`.
    pub fn check(
        &self,
        db: &dyn Db,
        workload: &WorkloadSpec,
        options: &RunOptions,
    ) -> Result<(), ConfigError> {
        let name = db.name();
        if !self.workloads.contains(&workload.kind.as_str()) {
            return Err(ConfigError::new(
                "--workload",
                format!(
                    "{name} cannot serve the {} workload (its client performs: {})",
                    workload.kind,
                    self.workloads.join(", ")
                ),
            ));
        }
        if !self.read_modes.contains(&options.read_mode) {
            return Err(ConfigError::new(
                "--read-mode",
                format!(
                    "{}: {name} supports {}",
                    options.read_mode,
                    spelled(self.read_modes, ReadMode::as_str)
                ),
            ));
        }
        if !self.read_from.contains(&options.read_from) {
            return Err(ConfigError::new(
                "--read-from",
                format!(
                    "{}: {name} supports {}",
                    options.read_from.as_str(),
                    spelled(self.read_from, ReadFrom::as_str)
                ),
            ));
        }
        if !self.read_nodes && !options.read_nodes.is_empty() {
            return Err(ConfigError::new(
                "--read-nodes",
                format!("{name} does not choose read nodes"),
            ));
        }
        for fault in &options.nemesis.faults {
            if let Some(ability) = missing_ability(db, fault) {
                return Err(ConfigError::new(
                    "--nemesis",
                    format!(
                        "{}: {name} cannot serve the {} fault: it has no {ability} ability",
                        options.nemesis_name,
                        fault.name()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Whether a run needs the sandbox's vDSO patch to test what it asks: clock faults on the
/// sandbox's nodes against a system whose programs read time without libc.
pub fn needs_clock_patch(system: &dyn System, options: &RunOptions) -> bool {
    options.sandbox
        && !system.clock_programs().is_empty()
        && options.nemesis.faults.iter().any(FaultSpec::is_clock)
}

/// The refusal of such a run where the patch cannot work (`why`): the clocks of `nodes` would
/// not move for the system's programs, and the run would test nothing of clocks.
pub fn unpatched_clocks_refusal(
    system: &dyn System,
    options: &RunOptions,
    nodes: &str,
    why: &str,
) -> ConfigError {
    ConfigError::new(
        "--nemesis",
        format!(
            "{}: {nodes}: {} ({}, reading time without libc) would not see clock faults on the sandbox's nodes: {why}. Run clock faults against real nodes (--nodes), or against a system whose programs read time through libc",
            options.nemesis_name,
            system.name(),
            system.clock_programs().join(", ")
        ),
    )
}

/// The `Db` ability `fault` needs and `db` lacks, if any.
fn missing_ability(db: &dyn Db, fault: &FaultSpec) -> Option<&'static str> {
    let n = fault.needs();
    let lacks = [
        (n.kill && db.as_kill().is_none(), "kill and restart"),
        (
            n.data_layer && db.data_dir().is_none(),
            "declared data directory (to serve from the lose-unsynced layer)",
        ),
        (
            n.data_dir && db.data_dir().is_none(),
            "declared data directory (whose files are corrupted)",
        ),
        (
            n.data_files && db.data_files().is_empty(),
            "declared data files (globs of the files to corrupt; or name them with `files = [...]` in the fault)",
        ),
        (n.pause && db.as_pause().is_none(), "pause and resume"),
        (n.promote && db.as_promote().is_none(), "promote (failover)"),
        (
            n.membership && db.as_membership().is_none(),
            "membership changes (remove a member, add it back)",
        ),
        (
            fault.aims_at_primaries() && db.as_primaries().is_none(),
            "primaries (who leads)",
        ),
    ];
    lacks
        .into_iter()
        .find_map(|(lacking, what)| lacking.then_some(what))
}

/// One system's settings, behind [`SystemConfig`]: its name, the system it opens, and the flags
/// that rerun it.
pub trait SystemSettings {
    /// The system's name (an external system's spec name).
    fn name(&self) -> &str;
    /// `--db` as the rerun command line gives it (the name; an external spec's path or name).
    fn db_arg(&self) -> String {
        self.name().to_string()
    }
    /// The system these settings describe.
    fn open(&self) -> Arc<dyn System>;
    /// Flags after `--db NAME` in the rerun command line (only non-default ones).
    fn rerun_args(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The system under test and its settings. Tagged like test.json's `db` object
/// (`{"name": "etcd", "config": {…}}`), so a run's recorded system reads back as one.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(tag = "name", content = "config", rename_all = "lowercase")]
pub enum SystemConfig {
    /// etcd (`systems::etcd`).
    Etcd(etcd::EtcdConfig),
    /// PostgreSQL primary + streaming replicas (`systems::postgres`).
    Postgres(postgres::PostgresConfig),
    /// A system described by a TOML spec (`systems::external`), recorded as its spec path and
    /// options (test.json's `db` object names the spec's system instead).
    /// Boxed: a spec is much larger than the built-in systems' settings.
    External(Box<external::spec::ExternalConfig>),
    /// Redis primary + replicas watched by Sentinels (`systems::redis`).
    Redis(redis::RedisConfig),
    /// NATS JetStream (`--db nats`).
    Nats(nats::NatsConfig),
    /// MariaDB Galera Cluster, every node a primary (`systems::mariadb`).
    Galera(mariadb::MariaDbConfig),
    /// MariaDB primary + asynchronous GTID replicas (`systems::mariadb::replication`).
    Mariadb(mariadb::ReplicatedConfig),
}

impl SystemConfig {
    fn settings(&self) -> &dyn SystemSettings {
        match self {
            SystemConfig::Etcd(c) => c,
            SystemConfig::Postgres(c) => c,
            SystemConfig::External(c) => c.as_ref(),
            SystemConfig::Redis(c) => c,
            SystemConfig::Nats(c) => c,
            SystemConfig::Galera(c) => c,
            SystemConfig::Mariadb(c) => c,
        }
    }

    /// The system's name.
    pub fn name(&self) -> &str {
        self.settings().name()
    }

    /// `--db` as the rerun command line gives it.
    pub fn db_arg(&self) -> String {
        self.settings().db_arg()
    }

    /// The system these settings describe.
    pub fn open(&self) -> Arc<dyn System> {
        self.settings().open()
    }

    /// Flags after `--db NAME` in the rerun command line.
    pub fn rerun_args(&self) -> Vec<String> {
        self.settings().rerun_args()
    }

    /// Serve the data directory from the lose-unsynced layer run by the binary `exe` (a run
    /// with the `power-loss`, `os-crash` or a `disk` fault). Systems without a declared data
    /// directory (an external spec without `[durability]`) ignore it; their `validate` refuses
    /// the fault.
    pub fn serve_data_from_layer(&mut self, exe: &str) {
        match self {
            SystemConfig::Etcd(c) => c.lazyfs = Some(exe.to_string()),
            SystemConfig::Redis(c) => c.lazyfs = Some(exe.to_string()),
            SystemConfig::Nats(c) => c.lazyfs = Some(exe.to_string()),
            SystemConfig::Galera(c) => c.lazyfs = Some(exe.to_string()),
            SystemConfig::Mariadb(c) => c.0.lazyfs = Some(exe.to_string()),
            SystemConfig::Postgres(c) => c.lazyfs = Some(exe.to_string()),
            SystemConfig::External(c) => c.lazyfs = Some(exe.to_string()),
        }
    }
}

impl Default for SystemConfig {
    fn default() -> Self {
        SystemConfig::Etcd(etcd::EtcdConfig::default())
    }
}

/// A system's clap argument group: its flags and how they become its [`SystemConfig`].
pub trait SystemArgs: clap::Args + clap::FromArgMatches + 'static {
    /// The `--db` name.
    const NAME: &'static str;
    /// How its settings are called in messages and `--help` (e.g. "PostgreSQL").
    const LABEL: &'static str;
    /// Validate the flags into settings.
    fn into_config(self) -> Result<SystemConfig, ConfigError>;
}

/// One built-in system, as the registry lists it.
#[derive(Clone, Copy)]
pub struct Registration {
    /// The `--db` name.
    pub name: &'static str,
    /// Its settings' name in messages.
    pub label: &'static str,
    augment: fn(clap::Command) -> clap::Command,
    config: fn(&clap::ArgMatches) -> Result<SystemConfig, ConfigError>,
}

impl Registration {
    /// The registration of the system whose argument group is `A`.
    pub fn of<A: SystemArgs>() -> Registration {
        Registration {
            name: A::NAME,
            label: A::LABEL,
            augment: A::augment_args,
            config: |m| {
                A::from_arg_matches(m)
                    .map_err(|e| ConfigError::new("--db", e.to_string()))?
                    .into_config()
            },
        }
    }

    /// The long flags of its argument group, with their clap ids.
    fn flags(&self) -> Vec<(String, String)> {
        (self.augment)(clap::Command::new("flags"))
            .get_arguments()
            .filter_map(|a| Some((a.get_id().to_string(), format!("--{}", a.get_long()?))))
            .collect()
    }
}

/// Every built-in system. With [`SystemConfig`], the only place that lists systems.
pub fn registry() -> Vec<Registration> {
    vec![
        Registration::of::<etcd::EtcdArgs>(),
        Registration::of::<postgres::PostgresArgs>(),
        Registration::of::<redis::RedisArgs>(),
        Registration::of::<nats::NatsArgs>(),
        Registration::of::<mariadb::GaleraArgs>(),
        Registration::of::<mariadb::MariaDbArgs>(),
    ]
}

/// The names `--db` accepts, for help and messages (`etcd, postgres`).
pub fn names() -> String {
    registry()
        .iter()
        .map(|r| r.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Help of the `--db` flag.
pub fn db_flag_help() -> String {
    format!(
        "System under test: {}, or an external system: a spec under systems/ (zookeeper) or a FILE.toml",
        names()
    )
}

/// Every system's flags, flattened into `run`, `heal` and `doctor`; [`SystemFlags::config`]
/// picks the one `--db` names. Flags of another system than the chosen one are refused.
#[derive(Debug, Clone)]
pub struct SystemFlags {
    matches: clap::ArgMatches,
}

impl clap::FromArgMatches for SystemFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(SystemFlags {
            matches: matches.clone(),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.matches = matches.clone();
        Ok(())
    }
}

impl clap::Args for SystemFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        // Each group sets its own help heading; the flags after them go back to the default one.
        // A flag two systems share (`--isolation`: same id, same values) is added once, with
        // the first group that declares it.
        registry()
            .iter()
            .fold(cmd, |c, r| {
                let group = (r.augment)(clap::Command::new("flags"));
                let new: Vec<clap::Arg> = group
                    .get_arguments()
                    .filter(|a| c.get_arguments().all(|b| b.get_id() != a.get_id()))
                    .cloned()
                    .collect();
                new.into_iter().fold(c, |c, a| c.arg(a))
            })
            .next_help_heading(None::<&str>)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl SystemFlags {
    /// The settings of the system named `db` (a `--db` value), from its flags, or of the
    /// external system `db` names (`systems/NAME.toml` or a `FILE.toml`) with `db_opts`
    /// (`--db-opt key=value`). Refuses a name that is neither, options for a built-in system, and
    /// a flag of another system given on the command line.
    pub fn config(&self, db: &str, db_opts: &[String]) -> Result<SystemConfig, ConfigError> {
        let systems = registry();
        let chosen = systems.iter().find(|r| r.name == db);
        if chosen.is_some() && !db_opts.is_empty() {
            return Err(ConfigError::new(
                "--db-opt",
                format!("{db} has no options (--db-opt is for systems/*.toml specs)"),
            ));
        }
        let shared: Vec<String> = chosen
            .map(|c| c.flags().into_iter().map(|(id, _)| id).collect())
            .unwrap_or_default();
        for other in systems.iter().filter(|r| r.name != db) {
            for (id, flag) in other.flags() {
                if shared.contains(&id) {
                    continue;
                }
                let given = self.matches.ids().any(|i| i.as_str() == id)
                    && self.matches.value_source(&id)
                        == Some(clap::parser::ValueSource::CommandLine);
                if given {
                    return Err(ConfigError::new(
                        flag,
                        format!("{} settings need --db {}", other.label, other.name),
                    ));
                }
            }
        }
        match chosen {
            Some(chosen) => (chosen.config)(&self.matches),
            None => {
                external::spec::configure(db, db_opts).map(|c| SystemConfig::External(Box::new(c)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_match_the_config_tags() {
        let names: Vec<&str> = registry().iter().map(|r| r.name).collect();
        assert_eq!(
            names,
            ["etcd", "postgres", "redis", "nats", "galera", "mariadb"]
        );
        for (cfg, name) in [
            (SystemConfig::Etcd(Default::default()), "etcd"),
            (SystemConfig::Postgres(Default::default()), "postgres"),
            (SystemConfig::Redis(Default::default()), "redis"),
            (SystemConfig::Nats(Default::default()), "nats"),
            (SystemConfig::Galera(Default::default()), "galera"),
            (SystemConfig::Mariadb(Default::default()), "mariadb"),
        ] {
            assert_eq!(cfg.name(), name);
            assert_eq!(cfg.open().name(), name);
            let v = serde_json::to_value(&cfg).unwrap();
            assert_eq!(v["name"], name, "the serde tag is the --db name");
        }
    }

    #[test]
    fn a_recorded_db_object_reads_back_as_its_config() {
        // test.json's `db` object, as runs wrote it (postgres adds two effective settings).
        let v = serde_json::json!({
            "name": "postgres", "version": "15.4",
            "config": {"base_dir": "/tmp/x", "bin_dir": "/usr/lib/postgresql/15/bin",
                       "os_user": "postgres", "port": 5432, "primary": null,
                       "synchronous_commit": "remote_apply", "synchronous_standby_names": null,
                       "init_sql": "", "ready_timeout_ms": 60000,
                       "effective_synchronous_standby_names": "FIRST 1 (n2)", "primary_node": "n1"}
        });
        let SystemConfig::Postgres(pg) = serde_json::from_value::<SystemConfig>(v).unwrap() else {
            panic!("not postgres")
        };
        assert_eq!(pg.base_dir, "/tmp/x");
        assert_eq!(
            pg.synchronous_commit,
            postgres::SynchronousCommit::RemoteApply
        );
        let v = serde_json::json!({"name": "etcd", "config": {"base_dir": "/d"}});
        let SystemConfig::Etcd(e) = serde_json::from_value::<SystemConfig>(v).unwrap() else {
            panic!("not etcd")
        };
        assert_eq!((e.base_dir.as_str(), e.client_port), ("/d", 2379));
    }

    fn options<'a>(nemesis: &'a NemesisSpec, read_from: ReadFrom) -> RunOptions<'a> {
        RunOptions {
            read_mode: ReadMode::Linearizable,
            read_from,
            read_nodes: &[],
            nemesis,
            nemesis_name: "test",
            node_count: 5,
            sandbox: false,
            run_s: 60.0,
        }
    }

    #[test]
    fn only_clock_faults_in_the_sandbox_against_go_systems_need_the_clock_patch() {
        let clock = crate::spec::load_nemesis("partition,clock").unwrap();
        let plain = crate::spec::load_nemesis("partition,kill").unwrap();
        let etcd = SystemConfig::Etcd(Default::default()).open();
        let nats = SystemConfig::Nats(Default::default()).open();
        let pg = SystemConfig::Postgres(Default::default()).open();
        let sandbox = |n| RunOptions {
            sandbox: true,
            ..options(n, ReadFrom::Any)
        };
        assert!(needs_clock_patch(etcd.as_ref(), &sandbox(&clock)));
        assert!(needs_clock_patch(nats.as_ref(), &sandbox(&clock)));
        // libc programs keep the preload shim; real nodes step real clocks; no clock fault.
        assert!(!needs_clock_patch(pg.as_ref(), &sandbox(&clock)));
        assert!(!needs_clock_patch(
            etcd.as_ref(),
            &options(&clock, ReadFrom::Any)
        ));
        assert!(!needs_clock_patch(etcd.as_ref(), &sandbox(&plain)));
        let e =
            unpatched_clocks_refusal(etcd.as_ref(), &sandbox(&clock), "n1, n2", "ptrace refused");
        assert_eq!(e.what, "--nemesis");
        assert!(
            e.to_string()
                .contains("n1, n2: etcd (etcd, reading time without libc)")
                && e.to_string().contains("ptrace refused"),
            "{e}"
        );
    }

    #[test]
    fn each_system_accepts_what_it_serves_and_names_itself_when_refusing() {
        let register = crate::spec::load_workload("register").unwrap();
        let append = crate::spec::load_workload("list-append").unwrap();
        let promote = crate::spec::load_nemesis("partition,kill,pause,promote").unwrap();
        let plain = crate::spec::load_nemesis("partition,kill,pause").unwrap();
        let etcd = SystemConfig::Etcd(Default::default()).open();
        let pg = SystemConfig::Postgres(Default::default()).open();
        for w in [&register, &append] {
            etcd.validate(w, &options(&plain, ReadFrom::Any)).unwrap();
        }
        pg.validate(&register, &options(&promote, ReadFrom::Replica))
            .unwrap();
        let e = etcd
            .validate(&register, &options(&promote, ReadFrom::Own))
            .unwrap_err();
        assert_eq!(e.what, "--nemesis");
        assert!(
            e.message.contains("etcd") && e.message.contains("promote"),
            "{e}"
        );
        let e = pg
            .validate(&append, &options(&plain, ReadFrom::Own))
            .unwrap_err();
        assert_eq!(e.what, "--workload");
        assert!(e.message.contains("postgres"), "{e}");
        let e = etcd
            .validate(&register, &options(&plain, ReadFrom::Primary))
            .unwrap_err();
        assert_eq!(e.what, "--read-from");
    }
}
