//! Golden fault transcripts: for every shipped nemesis schedule (`nemeses/*.toml`), every
//! built-in `--nemesis` package and a few compositions, the exact nemesis ops (time, `f`, value)
//! that a run's schedule hands out over 60 s and in the final heal, for several seeds, against
//! a 5-node cluster, compared with the files under `tests/data/fault_transcripts/`.
//!
//! Owns only that comparison. Pure: it drives the spec parser and the schedule generators in
//! simulated time (every nemesis op completes 100 ms after it starts), as a run composes them
//! (`runner::schedule_of`, the stacked or one-at-a-time cycle, `runner::with_offsets_of`, the
//! time limit, then the heal); no node, SSH or nemesis code is touched. The verbs and values
//! are written into histories and fault journals (`faults.jsonl`), so a change here is a change
//! of what runs record: `SHAKEDOWN_BLESS_TRANSCRIPTS=1 cargo test --test fault_transcript`
//! rewrites the files, and the diff shows what changed.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shakedown::generator::{self, Context, Generator, NEMESIS_THREAD, Next};
use shakedown::history::{Op, OpType, Process};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The run's seeds the transcripts are taken with.
const SEEDS: [u64; 3] = [1, 7, 42];
/// How long the main phase runs, in s (the default `--time-limit`).
const TIME_LIMIT_S: f64 = 60.0;
/// How long every nemesis op takes in the simulation.
const OP_NS: u64 = 100_000_000;
/// Simulated step when the generator has nothing yet.
const TICK_NS: u64 = 100_000_000;

/// The `--nemesis` packages that have no file of their own, and compositions runs use.
const PACKAGES: &[&str] = &[
    "partition",
    "kill",
    "pause",
    "loss",
    "bandwidth",
    "promote",
    "ssh-drop",
    "partition,kill",
    "partition,kill,pause",
    "partition,promote",
    "partition,clock",
    "loss,bandwidth,delay",
    "kill,pause,power-loss,os-crash",
    "bitflip,truncate,disk-error,disk-full,slow-disk",
    "partition,kill,pause,isolate,loss,bandwidth,delay,clock,promote,ssh-drop,stall,power-loss,os-crash,bitflip,truncate,disk-error,disk-full,slow-disk",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every schedule shipped in `nemeses/`, by name.
fn shipped() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("nemeses"))
        .expect("nemeses/")
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "toml").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    names
}

/// Drive `g` in simulated time from `start_ns`, appending one line per op to `out`; returns
/// the time it ended.
fn simulate(
    mut g: Box<dyn Generator>,
    ctx: &mut Context,
    rng: &mut ChaCha8Rng,
    out: &mut String,
) -> u64 {
    for _ in 0..1_000_000u32 {
        match g.next(ctx, rng) {
            Next::Done => return ctx.time_ns,
            Next::Pending => ctx.time_ns += TICK_NS,
            Next::Op(inv) => {
                assert_eq!(
                    inv.thread, NEMESIS_THREAD,
                    "a nemesis op on a client thread"
                );
                ctx.time_ns = ctx.time_ns.max(inv.time_ns);
                let _ = writeln!(
                    out,
                    "{:>8.3} {} {}",
                    ctx.time_ns as f64 / 1e9,
                    inv.f,
                    serde_json::to_string(&inv.value).expect("json")
                );
                let mut op = Op::new(OpType::Invoke, Process::Nemesis, inv.f.clone(), inv.value);
                op.time_ns = ctx.time_ns;
                ctx.free.remove(&NEMESIS_THREAD);
                g.update(ctx, &op);
                ctx.time_ns += OP_NS;
                op.op_type = OpType::Info;
                op.time_ns = ctx.time_ns;
                ctx.free.insert(NEMESIS_THREAD);
                g.update(ctx, &op);
            }
        }
    }
    panic!("the generator never finished");
}

/// The transcript of one `--nemesis` argument, every seed.
fn transcript(arg: &str) -> String {
    let spec = shakedown::spec::load_nemesis(arg).unwrap_or_else(|e| panic!("{arg}: {e}"));
    let schedule = shakedown::runner::schedule_of(&spec);
    let nodes: Vec<String> = (1..=5).map(|i| format!("n{i}")).collect();
    let mut out = format!("# --nemesis {arg}: {TIME_LIMIT_S} s, nodes n1..n5\n");
    for seed in SEEDS {
        let _ = writeln!(out, "## seed {seed}");
        if schedule.faults.is_empty() {
            out.push_str("(no faults)\n");
            continue;
        }
        // As the interpreter seeds the nemesis's stream.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(1);
        let mut ctx = Context::new(0, nodes.clone());
        let cycle: Box<dyn Generator> = if spec.order == shakedown::spec::FaultOrder::Stacked {
            Box::new(generator::nemesis_stack(schedule.clone()))
        } else {
            Box::new(generator::nemesis_cycle(schedule.clone()))
        };
        let main = Box::new(generator::time_limit(
            (TIME_LIMIT_S * 1e9) as u64,
            shakedown::runner::with_offsets_of(&spec, cycle, true),
        ));
        let end = simulate(main, &mut ctx, &mut rng, &mut out);
        ctx.time_ns = end.max((TIME_LIMIT_S * 1e9) as u64);
        out.push_str("### heal\n");
        let heal = shakedown::runner::with_offsets_of(
            &spec,
            Box::new(generator::nemesis_heal(&schedule)),
            false,
        );
        simulate(heal, &mut ctx, &mut rng, &mut out);
    }
    out
}

fn golden_path(arg: &str) -> PathBuf {
    let name = if arg.len() > 60 {
        "every-package".to_string()
    } else {
        arg.replace(',', "+")
    };
    root()
        .join("tests/data/fault_transcripts")
        .join(format!("{name}.txt"))
}

#[test]
fn fault_transcripts_are_unchanged() {
    // `load_nemesis` finds `nemeses/NAME.toml` relative to the working directory.
    std::env::set_current_dir(root()).expect("cd to the package");
    let bless = std::env::var_os("SHAKEDOWN_BLESS_TRANSCRIPTS").is_some();
    let mut args: Vec<String> = shipped();
    args.extend(PACKAGES.iter().map(|s| s.to_string()));
    let mut differ = Vec::new();
    for arg in &args {
        let got = transcript(arg);
        let path = golden_path(arg);
        if bless {
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, &got).expect("write golden");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if want != got {
            let line = want
                .lines()
                .zip(got.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(want.lines().count().min(got.lines().count()));
            differ.push(format!(
                "{} (first difference at line {}: want {:?}, got {:?})",
                rel(&path),
                line + 1,
                want.lines().nth(line).unwrap_or("<end>"),
                got.lines().nth(line).unwrap_or("<end>"),
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "fault transcripts changed (SHAKEDOWN_BLESS_TRANSCRIPTS=1 rewrites them):\n{}",
        differ.join("\n")
    );
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}
