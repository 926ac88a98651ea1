//! `shakedown bench`'s flags and the run config of the benchmark's controller side (the
//! register workload, no faults, unlimited rate). The measurement itself is `bench`.

use super::{ReadFromArg, RunArgs, SandboxArgs};
use crate::config::TestConfig;
use crate::options::ConfigError;
use clap::Args;
use std::path::PathBuf;

/// `shakedown bench` flags.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// System to measure: etcd (bare loop: etcd clients) or redis (bare loop: plain `redis`
    /// crate connections to the primary).
    #[arg(long, value_parser = ["etcd", "redis"], default_value = "etcd")]
    pub db: String,
    /// Time per measurement: seconds, or 500ms, 10s….
    #[arg(long, default_value_t = 3.0, value_parser = crate::cli::duration::seconds)]
    pub duration: f64,
    /// Concurrent clients.
    #[arg(long, default_value_t = 10)]
    pub concurrency: usize,
    /// Paired measurements (one bare, one controller each, alternating which goes first); the
    /// loss reported is the median of the rounds', with a 95 % confidence interval from 6
    /// rounds on. Many short rounds beat a few long ones: the host's throughput drifts, and
    /// the median of many pairs shrugs off the rounds a neighbour disturbed.
    #[arg(long, default_value_t = 20)]
    pub rounds: usize,
    /// Leave out (and run again) a round during which the hypervisor took more than this share
    /// of the machine's CPU, in percent (`steal` in `/proc/stat`): it measured the host, not
    /// the controller. At most `--rounds` extra rounds are run.
    #[arg(long = "max-steal", default_value_t = 5.0)]
    pub max_steal: f64,
    /// Where to write the JSON report (default: print only).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Sandbox selection.
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

impl BenchArgs {
    /// The config of the full run side of the benchmark: `--db` (etcd or redis, default
    /// settings; Redis reads from the primary, as its bare loop's), the register workload with
    /// no faults at an unlimited rate, for `--duration` seconds at `--concurrency`.
    pub fn to_config(&self) -> Result<TestConfig, ConfigError> {
        if !(self.max_steal.is_finite() && self.max_steal >= 0.0) {
            return Err(ConfigError::new(
                "bench",
                format!(
                    "--max-steal must be a percentage (0 or more), got {}",
                    self.max_steal
                ),
            ));
        }
        if !(self.duration.is_finite() && self.duration > 0.0)
            || self.concurrency == 0
            || self.rounds == 0
        {
            return Err(ConfigError::new(
                "bench",
                "--duration, --concurrency and --rounds must be positive",
            ));
        }
        let mut run = RunArgs {
            nemesis: "none".into(),
            rate: 0.0,
            time_limit: self.duration,
            concurrency: self.concurrency,
            settle: 0.0,
            quiet: true,
            ..RunArgs::defaults(self.sandbox.clone())
        };
        run.db.name = self.db.clone();
        if self.db == "redis" {
            // Redis's bare loop sends every op to the primary; so must the run (the default,
            // each thread's own node, would spread reads over the replicas).
            run.read_from = ReadFromArg::Primary;
        }
        run.into_config()
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    #[test]
    fn bench_flags_make_a_run_config_with_the_bare_loops_reads() {
        let bench = |args: &[&str]| {
            let argv = std::iter::once("shakedown").chain(args.iter().copied());
            let Command::Bench(b) = Cli::try_parse_from(argv).unwrap().command else {
                panic!("not bench")
            };
            b
        };
        let b = bench(&["bench", "--db", "redis", "--duration", "3"]);
        assert_eq!(b.rounds, 20);
        let cfg = b.to_config().unwrap();
        // Redis's bare loop reads from the primary; so must the run side.
        assert_eq!(cfg.read_from, crate::options::ReadFrom::Primary);
        assert_eq!((cfg.time_limit_s, cfg.rate), (3.0, 0.0));
        assert!(cfg.nemesis.faults.is_empty());
        let etcd = bench(&["bench"]).to_config().unwrap();
        assert_eq!(etcd.read_from, crate::options::ReadFrom::Own);
        let e = bench(&["bench", "--rounds", "0"]).to_config().unwrap_err();
        assert!(e.to_string().contains("--rounds"), "{e}");
        let e = bench(&["bench", "--max-steal", "NaN"])
            .to_config()
            .unwrap_err();
        assert!(e.to_string().contains("--max-steal"), "{e}");
    }
}
