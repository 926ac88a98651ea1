//! `shakedown chaos --dry-run`: every command the experiment would run on every node, in order,
//! without opening a single SSH connection, writing a run directory or a fault journal.
//!
//! How: the real nemesis code runs against [`Recorder`] remotes, which record each command
//! (as the SSH user would send it, `sudo -n` wrapping included) and answer it with exit status
//! 0 and no output, and the real schedule generators run in simulated time with the nemesis
//! seed stream a run uses, so a run with the same `--seed` makes the same fault choices in the
//! same order. Two read-only questions get canned answers so the fault steps after them show:
//! the clock probe answers "host" (a real host: NTP daemons are listed there, none here) and
//! `date +%s.%N` answers the controller's clock. Other steps that need a node's answer (who
//! leads) show the error the empty answer gives. Faults of earlier runs' journals are shown as
//! the heal commands a run would start with. Clock-offset readings a run takes every
//! `clock_offsets_interval_s` are mentioned once, not listed.

use super::run::ChaosConfig;
use crate::control::{Cmd, ExecError, ExecOutput, Remote};
use crate::generator::{self, Context, Generator, NEMESIS_THREAD, Next};
use crate::history::{Op, OpType, Process};
use crate::nemesis::{Nemesis, NemesisConfig, PartitionConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Commands recorded so far: (node index, shell text).
type Log = Arc<Mutex<Vec<(usize, String)>>>;

/// A remote that records commands instead of running them.
pub struct Recorder {
    node: String,
    index: usize,
    user: String,
    log: Log,
}

impl Recorder {
    fn record(&self, text: String) {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((self.index, text));
    }
}

/// Marks the clock probe script (`nemesis::clock`), the one question answered "host".
const CLOCK_PROBE_MARK: &str = "sandbox-without-shim";

impl Remote for Recorder {
    fn node(&self) -> &str {
        &self.node
    }

    fn exec(&self, cmd: &Cmd) -> Result<ExecOutput, ExecError> {
        let text = cmd.to_shell_as(&self.user);
        let stdout = if text.contains(CLOCK_PROBE_MARK) {
            "host\n".to_string()
        } else if text == "date +%s.%N" {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            format!("{}.{:09}\n", now.as_secs(), now.subsec_nanos())
        } else {
            String::new()
        };
        self.record(text);
        Ok(ExecOutput {
            status: 0,
            signal: None,
            stdout,
            stderr: String::new(),
        })
    }

    fn upload(&self, _: &[u8], remote_path: &str, _: u32) -> Result<(), ExecError> {
        self.record(format!("(upload a file to {remote_path})"));
        Ok(())
    }

    fn download(&self, remote_path: &str, _: &Path) -> Result<(), ExecError> {
        self.record(format!("(download {remote_path})"));
        Ok(())
    }
}

/// Append the commands recorded since the last call under `heading`: each distinct command once,
/// after the nodes that run it (`n1, n2: …`), in the order nodes first run them (each node's own
/// commands keep their order).
fn drain(out: &mut String, log: &Log, names: &[String], heading: &str) {
    let mut batch = std::mem::take(&mut *log.lock().unwrap_or_else(|p| p.into_inner()));
    batch.sort_by_key(|(i, _)| *i);
    let mut grouped: Vec<(Vec<usize>, String)> = Vec::new();
    for (i, text) in batch {
        match grouped
            .iter_mut()
            .find(|(nodes, t)| *t == text && !nodes.contains(&i))
        {
            Some((nodes, _)) => nodes.push(i),
            None => grouped.push((vec![i], text)),
        }
    }
    let _ = writeln!(out, "\n# {heading}");
    if grouped.is_empty() {
        out.push_str("  (no command)\n");
    }
    for (nodes, text) in grouped {
        let who: Vec<&str> = nodes.iter().map(|&i| names[i].as_str()).collect();
        let _ = writeln!(out, "{}: {text}", who.join(", "));
    }
}

/// The dry run's opening lines: what it is, the probe, the nodes, the SSH user, the faults.
fn header(cfg: &ChaosConfig) -> String {
    let s = &cfg.settings;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "dry run of chaos experiment {:?}: no SSH connection is opened and nothing is written; \
         a run with --seed {} makes these fault choices in this order",
        cfg.name, cfg.seed
    );
    let _ = writeln!(
        out,
        "probe, on the controller: {} every {} ms (timeout {} ms); abort after {} failed in a \
         row; SLO: {}",
        s.probe.describe(),
        s.probe_interval_ms,
        s.probe_timeout_ms,
        s.abort_after,
        s.slo.describe()
    );
    let nodes: Vec<String> = cfg
        .nodes
        .iter()
        .map(|n| format!("{} ({})", n.name, n.host))
        .collect();
    let _ = writeln!(out, "nodes: {}", nodes.join(", "));
    let _ = writeln!(
        out,
        "SSH user {}: {}",
        cfg.ssh.user,
        if cfg.ssh.user == "root" {
            "commands run as root"
        } else {
            "commands that need root are wrapped in `sudo -n` (no password prompt)"
        }
    );
    let _ = writeln!(
        out,
        "faults: {} for {} s, a transition every {} s",
        cfg.nemesis_name, s.duration_s, cfg.nemesis.interval_s
    );
    out
}

/// What a run's leftovers heal would do, without its journal appends (`heal_leftovers` records
/// its undos in the old journals; a dry run writes nothing).
fn plan_leftovers(
    cfg: &ChaosConfig,
    remotes: &[Arc<dyn Remote>],
    db: &Arc<dyn crate::db::Abilities>,
    log: &Log,
    names: &[String],
    out: &mut String,
) {
    let leftovers = crate::nemesis::leftovers::leftover_journals(
        &cfg.reports_dir,
        &cfg.nodes,
        Path::new("/nonexistent/dry-run"),
    );
    for (journal, open) in &leftovers {
        let mut healer = Nemesis::new(NemesisConfig {
            helper_exe: None,
            nodes: cfg.nodes.clone(),
            remotes: remotes.to_vec(),
            db: db.clone(),
            partition: PartitionConfig::default(),
            rng: ChaCha8Rng::seed_from_u64(0),
            journal: None,
        });
        healer.adopt(open);
        let verbs = crate::nemesis::leftovers::undo_plan(open);
        for verb in verbs {
            let _ = healer.invoke(&verb, &serde_json::Value::Null);
            drain(
                out,
                log,
                names,
                &format!(
                    "{verb}: undo what {} shows still in effect",
                    journal.display()
                ),
            );
        }
    }
    if leftovers.is_empty() {
        out.push_str("\n# no earlier run's journal shows a fault left on these nodes\n");
    }
}

/// The plan of `cfg`, as text: header, then every command per step.
pub fn plan(cfg: &ChaosConfig) -> String {
    let names: Vec<String> = cfg.nodes.iter().map(|n| n.name.clone()).collect();
    let log: Log = Arc::default();
    let remotes: Vec<Arc<dyn Remote>> = cfg
        .nodes
        .iter()
        .enumerate()
        .map(|(index, n)| {
            Arc::new(Recorder {
                node: n.name.clone(),
                index,
                user: cfg.ssh.user.clone(),
                log: log.clone(),
            }) as Arc<dyn Remote>
        })
        .collect();
    let db: Arc<dyn crate::db::Abilities> = Arc::new(super::run::ChaosAbilities(cfg.db.clone()));
    let s = &cfg.settings;
    let mut out = header(cfg);
    plan_leftovers(cfg, &remotes, &db, &log, &names, &mut out);
    let mut nemesis = Nemesis::new(NemesisConfig {
        helper_exe: None,
        nodes: cfg.nodes.clone(),
        remotes: remotes.clone(),
        db,
        partition: PartitionConfig::default(),
        rng: ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(1)),
        journal: None,
    });
    if super::run::needs_chain(&cfg.nemesis) {
        let _ = nemesis.setup();
        drain(&mut out, &log, &names, "set up the tool's iptables chain");
    }
    let schedule = crate::runner::schedule_of(&cfg.nemesis);
    if cfg
        .nemesis
        .faults
        .iter()
        .any(crate::spec::FaultSpec::is_clock)
    {
        let _ = writeln!(
            out,
            "\n(clock faults: a run also reads every node's clock with `date +%s.%N` every {} s and after each clock op; read-only, not listed)",
            cfg.nemesis.clock_offsets_interval_s
        );
    }
    if !schedule.faults.is_empty() {
        let cycle: Box<dyn Generator> = if cfg.nemesis.order == crate::spec::FaultOrder::Stacked {
            Box::new(generator::nemesis_stack(schedule.clone()))
        } else {
            Box::new(generator::nemesis_cycle(schedule.clone()))
        };
        let main = generator::time_limit((s.duration_s * 1e9) as u64, cycle);
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        rng.set_stream(1);
        let end_ns = simulate(
            Box::new(main),
            &mut nemesis,
            &names,
            &mut rng,
            0,
            &log,
            &mut out,
        );
        // The heal phase starts when the duration is up.
        let heal_ns = end_ns.max((s.duration_s * 1e9) as u64);
        simulate(
            Box::new(generator::nemesis_heal(&schedule)),
            &mut nemesis,
            &names,
            &mut rng,
            heal_ns,
            &log,
            &mut out,
        );
    }
    let _ = nemesis.heal_all();
    drain(
        &mut out,
        &log,
        &names,
        "cleanup, on every exit path (also on abort, Ctrl-C, an error or a panic): heal everything",
    );
    if super::run::needs_chain(&cfg.nemesis) {
        let _ = nemesis.teardown();
        drain(&mut out, &log, &names, "remove the tool's iptables chain");
    }
    out
}

/// Run `g` (nemesis ops only) in simulated time from `start_ns`, each op taking no time, and
/// append each op's commands. Returns the time it ended.
fn simulate(
    mut g: Box<dyn Generator>,
    nemesis: &mut Nemesis,
    names: &[String],
    rng: &mut ChaCha8Rng,
    start_ns: u64,
    log: &Log,
    out: &mut String,
) -> u64 {
    /// Simulated step when a generator has nothing yet.
    const TICK_NS: u64 = 100_000_000;
    let mut ctx = Context::new(0, names.to_vec());
    ctx.time_ns = start_ns;
    // A generous bound on steps, so a generator that never ends cannot hang the dry run.
    for _ in 0..10_000_000u64 {
        match g.next(&ctx, rng) {
            Next::Done => break,
            Next::Pending => ctx.time_ns += TICK_NS,
            Next::Op(inv) => {
                ctx.time_ns = ctx.time_ns.max(inv.time_ns);
                let mut op = Op::new(
                    OpType::Info,
                    Process::Nemesis,
                    inv.f.clone(),
                    inv.value.clone(),
                );
                op.time_ns = ctx.time_ns;
                ctx.free.remove(&NEMESIS_THREAD);
                g.update(&ctx, &op);
                let completion = nemesis.invoke(&inv.f, &inv.value);
                let value = if inv.value.is_null() {
                    String::new()
                } else {
                    format!(" {}", inv.value)
                };
                let mut heading = format!("{:.1} s: {}{value}", ctx.time_ns as f64 / 1e9, inv.f);
                if let Some(e) = completion.error() {
                    let _ = write!(heading, " (in a dry run: {e})");
                }
                drain(out, log, names, &heading);
                // As the interpreter records nemesis completions.
                op.op_type = OpType::Info;
                ctx.free.insert(NEMESIS_THREAD);
                g.update(&ctx, &op);
            }
        }
    }
    ctx.time_ns
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    #[test]
    fn leftovers_of_earlier_runs_are_shown_and_their_journals_left_untouched() {
        let reports = tempfile::tempdir().unwrap();
        let old = reports.path().join("chaos").join("20260101T000000.000Z");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(
            old.join("test.json"),
            r#"{"nodes":[{"name":"n1","host":"10.0.0.1"},{"name":"n2","host":"10.0.0.2"},{"name":"n3","host":"10.0.0.3"}]}"#,
        )
        .unwrap();
        let journal = old.join("faults.jsonl");
        let text = r#"{"action":"inject","event":"begin","f":"start-partition","detail":{},"undo_with":"stop-partition"}
"#;
        std::fs::write(&journal, text).unwrap();
        let cli = Cli::try_parse_from([
            "shakedown",
            "chaos",
            "--nodes",
            "n1=10.0.0.1,n2=10.0.0.2,n3=10.0.0.3",
            "--nemesis",
            "isolate",
            "--probe",
            "true",
            "--reports",
            reports.path().to_str().unwrap(),
        ])
        .unwrap();
        let Command::Chaos(args) = cli.command else {
            panic!("not chaos")
        };
        let Ok(cfg) = args.into_config() else {
            panic!("refused")
        };
        let plan = plan(&cfg);
        assert!(plan.contains("stop-partition: undo what"), "{plan}");
        assert_eq!(std::fs::read_to_string(&journal).unwrap(), text);
    }
}
