//! `shakedown chaos` flags and their conversion into a validated `chaos::run::ChaosConfig`,
//! including the safety rails that refuse before anything runs (exit 3): nodes must be given,
//! the blast-radius check of the schedule, faults chaos cannot serve.

use super::duration::parse_ms;
use super::{ClusterArgs, RunArgs, SandboxArgs};
use crate::chaos::run::{ChaosAbilities, ChaosConfig};
use crate::chaos::{ProbeTarget, Settings, rails, slo::Slo};
use crate::options::ConfigError;
use clap::Args;
use std::path::PathBuf;

/// `shakedown chaos` flags.
#[derive(Debug, Clone, Args)]
pub struct ChaosArgs {
    /// Which nodes (required: `--nodes` or `--nodes-file`; never the sandbox by itself) and how
    /// to reach them. A user other than root gets every fault command through `sudo -n`.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Faults: packages `partition,isolate,loss,bandwidth,delay,clock,ssh-drop` (and `pause` with
    /// --db), a name under nemeses/ or a path to a schedule.
    #[arg(long)]
    pub nemesis: String,
    /// Time between fault transitions (overrides the schedule's interval_s): seconds, or 30s, 2m….
    #[arg(long, value_parser = crate::cli::duration::seconds)]
    pub nemesis_interval: Option<f64>,
    /// How long to inject faults: 10m, 90s, 1h30m, or seconds.
    #[arg(long, default_value = "10m")]
    pub duration: String,
    /// Health probe: a shell command run on the controller (`sh -c`); exit status 0 = served.
    #[arg(
        long,
        conflicts_with = "probe_http",
        required_unless_present = "probe_http"
    )]
    pub probe: Option<String>,
    /// Health probe: an http:// URL fetched from the controller; a 2xx answer = served.
    #[arg(long, value_name = "URL")]
    pub probe_http: Option<String>,
    /// Time between probes (500ms, 1s, …).
    #[arg(long, default_value = "1s")]
    pub probe_interval: String,
    /// A probe not answered after this long fails (500ms, 2s, …).
    #[arg(long, default_value = "2s")]
    pub probe_timeout: String,
    /// Stop injecting, heal everything and end the experiment after this many failed probes in
    /// a row (at least 1).
    #[arg(long, default_value_t = 5)]
    pub abort_after: u32,
    /// Allow faults that can hit a majority of the nodes, or all of them (refused by default).
    #[arg(long)]
    pub allow_majority: bool,
    /// Print every command the experiment would run on every node, in order, and exit: no SSH
    /// connection, nothing written.
    #[arg(long)]
    pub dry_run: bool,
    /// SLO: largest allowed 99th percentile latency of served probes, in ms.
    #[arg(long)]
    pub slo_p99_ms: Option<f64>,
    /// SLO: smallest allowed fraction of served probes, e.g. 0.99.
    #[arg(long)]
    pub slo_availability: Option<f64>,
    /// Probing after the last heal (to see the system recover): seconds, or 30s, 2m….
    #[arg(long, default_value_t = 5.0, value_parser = crate::cli::duration::seconds)]
    pub settle: f64,
    /// A system shakedown knows (etcd, postgres, redis, or a systems/*.toml spec) whose
    /// processes `pause` stops and continues (found as shakedown's own runs start them) and
    /// whose leaders `primaries` targets ask for. Never installed, wiped, started or stopped.
    #[arg(long)]
    pub db: Option<String>,
    /// Random seed of the fault choices (default: random, printed and stored in test.json).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Directory holding run directories.
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    /// Experiment name (run directory under --reports).
    #[arg(long, default_value = "chaos")]
    pub name: String,
    /// No progress display; only the final summary.
    #[arg(long)]
    pub quiet: bool,
    /// Print the outcome as one JSON object (implies --quiet).
    #[arg(long)]
    pub json: bool,
}

/// A `--duration`-style flag in ms, at least 1 ms.
fn duration_flag(flag: &str, text: &str) -> Result<u64, ConfigError> {
    match parse_ms(text) {
        Ok(0) => Err(ConfigError::new(
            flag,
            format!("{text:?}: must be more than 0"),
        )),
        Ok(ms) => Ok(ms),
        Err(e) => Err(ConfigError::new(flag, e)),
    }
}

impl ChaosArgs {
    /// The command line that repeats this experiment (same nodes, faults, seed, probe, rails).
    fn rerun_command(&self, nodes: &[crate::node::Node], seed: u64) -> String {
        let nodes: Vec<String> = nodes
            .iter()
            .map(|n| match n.name == n.host {
                true => n.host.clone(),
                false => format!("{}={}", n.name, n.host),
            })
            .collect();
        let mut args: Vec<String> = vec![
            "shakedown".into(),
            "chaos".into(),
            "--nodes".into(),
            nodes.join(","),
            "--nemesis".into(),
            self.nemesis.clone(),
            "--duration".into(),
            self.duration.clone(),
        ];
        let mut flag = |name: &str, value: Option<String>| {
            if let Some(v) = value {
                args.push(name.into());
                args.push(v);
            }
        };
        flag(
            "--username",
            Some(self.cluster.username.clone()).filter(|u| u != "root"),
        );
        flag(
            "--ssh-key",
            self.cluster
                .ssh_key
                .as_ref()
                .map(|p| p.display().to_string()),
        );
        flag(
            "--known-hosts",
            self.cluster
                .known_hosts
                .as_ref()
                .map(|p| p.display().to_string()),
        );
        flag(
            "--nemesis-interval",
            self.nemesis_interval.map(|i| i.to_string()),
        );
        flag("--probe", self.probe.clone());
        flag("--probe-http", self.probe_http.clone());
        flag("--probe-interval", Some(self.probe_interval.clone()));
        flag("--probe-timeout", Some(self.probe_timeout.clone()));
        flag("--abort-after", Some(self.abort_after.to_string()));
        flag("--slo-p99-ms", self.slo_p99_ms.map(|v| v.to_string()));
        flag(
            "--slo-availability",
            self.slo_availability.map(|v| v.to_string()),
        );
        flag("--db", self.db.clone());
        flag("--seed", Some(seed.to_string()));
        if self.allow_majority {
            args.push("--allow-majority".into());
        }
        args.iter()
            .map(|a| crate::control::quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Validate everything, rails included, before any node is touched.
    pub fn into_config(self) -> Result<ChaosConfig, ConfigError> {
        let mut cluster = self.cluster.to_cluster()?;
        if let Some(nodes) = &cluster.nodes {
            sandbox_credentials(&mut cluster.ssh, &cluster.sandbox, nodes);
        }
        let Some(nodes) = cluster.nodes else {
            return Err(ConfigError::new(
                "--nodes",
                "chaos needs the nodes named explicitly (--nodes or --nodes-file); it never \
                 picks the sandbox by itself (for the sandbox, pass its node addresses)",
            ));
        };
        let seed = self.seed.unwrap_or_else(rand::random);
        let rerun = self.rerun_command(&nodes, seed);
        let duration_ms = duration_flag("--duration", &self.duration)?;
        let probe_interval_ms = duration_flag("--probe-interval", &self.probe_interval)?;
        let probe_timeout_ms = duration_flag("--probe-timeout", &self.probe_timeout)?;
        let probe = match (self.probe, self.probe_http) {
            (Some(cmd), _) if cmd.trim().is_empty() => {
                return Err(ConfigError::new("--probe", "the command is empty"));
            }
            (Some(cmd), _) => ProbeTarget::Command(cmd),
            (None, Some(url)) if url.starts_with("http://") => ProbeTarget::Http(url),
            (None, Some(url)) => {
                return Err(ConfigError::new(
                    "--probe-http",
                    format!(
                        "{url:?}: expected an http:// URL (for https, use --probe 'curl -fsS URL')"
                    ),
                ));
            }
            (None, None) => {
                return Err(ConfigError::new(
                    "--probe",
                    "give a health probe: --probe 'CMD' or --probe-http URL",
                ));
            }
        };
        if self.abort_after == 0 {
            return Err(ConfigError::new(
                "--abort-after",
                "must be at least 1 (the abort rail cannot be turned off)",
            ));
        }
        if let Some(p) = self.slo_p99_ms
            && !(p.is_finite() && p > 0.0)
        {
            return Err(ConfigError::new(
                "--slo-p99-ms",
                format!("{p}: expected a positive number of ms"),
            ));
        }
        if let Some(a) = self.slo_availability
            && !(a > 0.0 && a <= 1.0)
        {
            return Err(ConfigError::new(
                "--slo-availability",
                format!("{a}: expected a fraction in (0, 1], e.g. 0.99"),
            ));
        }
        if !(self.settle.is_finite() && self.settle >= 0.0) {
            return Err(ConfigError::new(
                "--settle",
                format!("{}: expected a non-negative number of seconds", self.settle),
            ));
        }
        if self.name.is_empty() || self.name.contains('/') || self.name.starts_with('.') {
            return Err(ConfigError::new(
                "--name",
                format!("{:?}: expected a plain directory name", self.name),
            ));
        }
        let mut nemesis = crate::spec::load_nemesis(&self.nemesis)?;
        if let Some(i) = self.nemesis_interval {
            if !(i.is_finite() && i > 0.0) {
                return Err(ConfigError::new(
                    "--nemesis-interval",
                    format!("{i}: expected a positive number"),
                ));
            }
            nemesis.interval_s = i;
        }
        let db = match &self.db {
            None => None,
            Some(name) => {
                let mut run = RunArgs::defaults(SandboxArgs {
                    sandbox_name: String::new(),
                    sandbox_subnet: String::new(),
                    sandbox_nodes: 0,
                    sandbox_no_clock_patch: false,
                });
                run.db.name = name.clone();
                Some(run.db.system()?)
            }
        };
        let abilities = ChaosAbilities(db.clone()).abilities();
        let refused = rails::check(&nemesis, nodes.len(), abilities, self.allow_majority);
        if !refused.is_empty() {
            let list: Vec<String> = refused.iter().map(|r| r.to_string()).collect();
            return Err(ConfigError::new(
                format!("--nemesis {}", self.nemesis),
                format!("refused on {} nodes: {}", nodes.len(), list.join("; ")),
            ));
        }
        Ok(ChaosConfig {
            name: self.name,
            nodes,
            ssh: cluster.ssh,
            nemesis_name: self.nemesis,
            nemesis,
            settings: Settings {
                probe,
                probe_interval_ms,
                probe_timeout_ms,
                abort_after: self.abort_after,
                allow_majority: self.allow_majority,
                slo: Slo {
                    p99_ms: self.slo_p99_ms,
                    availability: self.slo_availability,
                },
                duration_s: duration_ms as f64 / 1000.0,
                settle_s: self.settle,
            },
            seed,
            reports_dir: self.reports,
            db,
            rerun,
        })
    }
}

/// Nodes that all belong to the sandbox `--sandbox-name` names (up, by address): its SSH key and
/// known_hosts, unless `--ssh-key` / `--known-hosts` were given. The sandbox's own credentials for
/// its own nodes only; any other node list is left to the flags, the agent and
/// `~/.ssh/known_hosts`.
fn sandbox_credentials(
    ssh: &mut crate::control::SshConfig,
    sandbox: &crate::sandbox::SandboxConfig,
    nodes: &[crate::node::Node],
) {
    if ssh.private_key.is_some() && ssh.known_hosts.is_some() {
        return;
    }
    let Ok(info) = crate::sandbox::load(&sandbox.state_dir()) else {
        return;
    };
    let ours = nodes
        .iter()
        .all(|n| info.nodes.iter().any(|s| s.address.to_string() == n.host));
    if ours && ssh.port == info.ssh_port {
        info.fill_ssh(ssh);
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn config(args: &[&str]) -> Result<crate::chaos::run::ChaosConfig, String> {
        let cli = Cli::try_parse_from(["shakedown", "chaos"].iter().chain(args))
            .map_err(|e| e.to_string())?;
        let Command::Chaos(c) = cli.command else {
            panic!("not chaos")
        };
        c.into_config().map_err(|e| e.to_string())
    }

    /// The error of a refused command line.
    fn refused(args: &[&str]) -> String {
        match config(args) {
            Ok(_) => panic!("accepted: {args:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn nodes_and_a_probe_are_required() {
        let e = refused(&["--nemesis", "partition", "--probe", "true"]);
        assert!(e.contains("--nodes") && e.contains("never"), "{e}");
        let e = refused(&["--nodes", "a,b,c", "--nemesis", "partition"]);
        assert!(e.contains("--probe"), "{e}");
    }

    #[test]
    fn flags_reach_the_config() {
        let c = config(&[
            "--nodes",
            "a,b,c,d,e",
            "--nemesis",
            "partition,clock",
            "--probe-http",
            "http://a:2379/health",
            "--duration",
            "2m",
            "--probe-interval",
            "250ms",
            "--slo-p99-ms",
            "80",
            "--slo-availability",
            "0.95",
            "--abort-after",
            "3",
            "--seed",
            "7",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.settings.duration_s, 120.0);
        assert_eq!(c.settings.probe_interval_ms, 250);
        assert_eq!(c.settings.abort_after, 3);
        assert_eq!(c.settings.slo.availability, Some(0.95));
        assert_eq!(c.nodes.len(), 5);
        assert!(
            c.rerun
                .starts_with("shakedown chaos --nodes a,b,c,d,e --nemesis partition,clock"),
            "{}",
            c.rerun
        );
        assert!(
            c.rerun.contains("--probe-http http://a:2379/health") && c.rerun.contains("--seed 7"),
            "{}",
            c.rerun
        );
    }

    #[test]
    fn bad_values_and_big_blasts_are_refused_naming_the_flag() {
        let base = ["--nodes", "a,b,c", "--probe", "true"];
        for (extra, needle) in [
            (
                vec!["--nemesis", "partition", "--duration", "soon"],
                "--duration",
            ),
            (
                vec!["--nemesis", "partition", "--abort-after", "0"],
                "--abort-after",
            ),
            (
                vec!["--nemesis", "partition", "--slo-availability", "99"],
                "--slo-availability",
            ),
            (vec!["--nemesis", "kill"], "kill (targets one)"),
            (vec!["--nemesis", "pause"], "--db"),
            (vec!["--nemesis", "meteor"], "meteor"),
        ] {
            let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
            let e = refused(&args);
            assert!(e.contains(needle), "{args:?}: {e}");
        }
        let e = refused(&["--nodes", "a,b", "--probe", "true", "--nemesis", "isolate"]);
        assert!(
            e.contains("partition (shape one)") && e.contains("--allow-majority"),
            "{e}"
        );
        assert!(
            config(&[
                "--nodes",
                "a,b",
                "--probe",
                "true",
                "--nemesis",
                "isolate",
                "--allow-majority"
            ])
            .is_ok()
        );
        assert!(
            config(&[
                "--nodes",
                "a,b,c",
                "--probe",
                "true",
                "--nemesis",
                "pause",
                "--db",
                "etcd"
            ])
            .is_ok()
        );
    }

    #[test]
    fn a_dry_run_as_another_user_shows_every_root_command_through_sudo() {
        let c = config(&[
            "--nodes",
            "n1=10.0.0.1,n2=10.0.0.2,n3=10.0.0.3",
            "--username",
            "deploy",
            "--nemesis",
            "isolate,clock",
            "--probe",
            "true",
            "--duration",
            "60s",
            "--nemesis-interval",
            "2",
            "--seed",
            "1",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let plan = crate::chaos::dry_run::plan(&c);
        assert!(plan.contains("SSH user deploy"), "{plan}");
        let commands: Vec<&str> = plan
            .lines()
            .filter(|l| l.starts_with("n1") || l.starts_with("n2") || l.starts_with("n3"))
            .collect();
        assert!(!commands.is_empty(), "{plan}");
        // Every command that changes something goes through sudo; only read-only clock reads
        // (the probe of how the clock is set, `date +%s.%N`) do not.
        for line in commands {
            let cmd = line.split_once(": ").unwrap().1;
            assert!(
                cmd.starts_with("sudo -n -- sh -c ")
                    || cmd == "date +%s.%N"
                    || cmd.starts_with("sh -c 'if [ -n \"${SHAKEDOWN_CLOCK_FILE"),
                "{line}"
            );
        }
        assert!(
            plan.contains("sudo -n -- sh -c") && plan.contains("start-partition"),
            "{plan}"
        );
        assert!(
            plan.contains("bump-clock") || plan.contains("strobe-clock"),
            "{plan}"
        );
    }
}
