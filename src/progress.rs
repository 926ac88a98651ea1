//! What a running test tells the person watching it: the phase it is in and what that phase
//! waits for, time elapsed against the limit, client op counts, throughput and active faults.
//!
//! Owns the three display modes: an indicatif bar redrawn every 200 ms when stderr is a
//! terminal; plain lines on stderr otherwise (one per phase change, then one every
//! [`LINE_INTERVAL`] while a phase lasts, so no phase is silent for long); nothing when quiet.
//! Also records how long each phase took ([`Progress::timings`]). Does not own the phases'
//! work (`runner`), the op counters (`interpreter::Stats`, read here) or what a [`Segment`]
//! counts (live checking's, kept by the runner).

use crate::interpreter::Stats;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a plain-line display repeats the current state while a phase lasts.
pub const LINE_INTERVAL: Duration = Duration::from_secs(5);

/// A part of the workload line that another part keeps current (the runner's live checking
/// counts): shown as its text, every time the line is drawn. So progress names no part above it.
pub trait Segment: Send + Sync {
    /// The words shown, e.g. `live: 12 keys checked, 1 invalid`.
    fn text(&self) -> String;
}
/// How often the terminal bar is redrawn.
const BAR_TICK: Duration = Duration::from_millis(200);
/// Throughput is measured over at least this window.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// The phases of a run, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Installing missing packages on this machine (for the sandbox's nodes).
    Packages,
    /// Bringing the built-in sandbox up.
    Sandbox,
    /// Opening SSH sessions.
    Connect,
    /// Undoing faults earlier runs left on these nodes.
    Leftovers,
    /// Installing the DB.
    Install,
    /// Wiping and starting the DB, setting up the fault tooling.
    Start,
    /// Waiting until every node is healthy.
    ReadyWait,
    /// The client workload under faults.
    Workload,
    /// Stopping faults through the history.
    Heal,
    /// Letting the cluster settle.
    Settle,
    /// Waiting until every node serves again after the heal, before the final reads.
    Recovery,
    /// One read of every key.
    FinalReads,
    /// Healing everything, removing the tool's rules.
    Cleanup,
    /// Downloading DB logs.
    Logs,
    /// Stopping the DB.
    Teardown,
    /// Checking the history.
    Check,
    /// Writing plots and pages.
    Report,
}

impl Phase {
    /// The phase's name as shown.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Packages => "packages",
            Phase::Sandbox => "sandbox",
            Phase::Connect => "connect",
            Phase::Leftovers => "leftovers",
            Phase::Install => "install",
            Phase::Start => "start",
            Phase::ReadyWait => "ready-wait",
            Phase::Workload => "workload",
            Phase::Heal => "heal",
            Phase::Settle => "settle",
            Phase::Recovery => "recovery",
            Phase::FinalReads => "final reads",
            Phase::Cleanup => "cleanup",
            Phase::Logs => "logs",
            Phase::Teardown => "teardown",
            Phase::Check => "check",
            Phase::Report => "report",
        }
    }
}

enum Mode {
    Bar(ProgressBar),
    Lines,
}

struct State {
    phase: Option<Phase>,
    /// What the phase waits for, in words.
    waiting_for: String,
    phase_start: Instant,
    stats: Option<Arc<Stats>>,
    workload_start: Option<Instant>,
    last_line: Instant,
    /// (when, completed client ops) at the start of the current rate window.
    rate_mark: (Instant, u64),
    rate_per_s: f64,
    timings: Vec<(Phase, Duration)>,
    /// The nemesis op in flight and since when (a strobe holds the nemesis for its duration).
    nemesis_op: Option<(String, Instant)>,
    /// Live checking's counts, when the run checks keys as they retire (`runner::live`).
    live: Option<Arc<dyn Segment>>,
}

struct Inner {
    mode: Mode,
    run_start: Instant,
    time_limit_s: f64,
    state: Mutex<State>,
    stop: std::sync::atomic::AtomicBool,
    ticker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// A run's progress display; cheap to clone, shared by the phases. `Progress::quiet()` shows
/// nothing but still records phase timings.
#[derive(Clone)]
pub struct Progress {
    inner: Arc<Inner>,
    shown: bool,
}

fn ops_text(stats: &Stats) -> (u64, String) {
    let (ok, fail, info) = stats.counts();
    (ok + fail + info, format!("ok {ok} fail {fail} info {info}"))
}

impl Progress {
    fn with_mode(mode: Option<Mode>, time_limit_s: f64) -> Progress {
        let now = Instant::now();
        let shown = mode.is_some();
        let inner = Arc::new(Inner {
            mode: mode.unwrap_or(Mode::Lines),
            run_start: now,
            time_limit_s,
            state: Mutex::new(State {
                phase: None,
                waiting_for: String::new(),
                phase_start: now,
                stats: None,
                workload_start: None,
                last_line: now,
                rate_mark: (now, 0),
                rate_per_s: 0.0,
                timings: Vec::new(),
                nemesis_op: None,
                live: None,
            }),
            stop: std::sync::atomic::AtomicBool::new(false),
            ticker: Mutex::new(None),
        });
        let p = Progress { inner, shown };
        if shown {
            let weak = Arc::downgrade(&p.inner);
            let handle = std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(BAR_TICK);
                        let Some(inner) = weak.upgrade() else { return };
                        if inner.stop.load(Ordering::Relaxed) {
                            return;
                        }
                        Progress { inner, shown: true }.tick(false);
                    }
                })
                .ok();
            *p.inner.ticker.lock().unwrap_or_else(|e| e.into_inner()) = handle;
        }
        p
    }

    /// Show nothing (`--quiet`, `--json`); phase timings are still recorded.
    pub fn quiet() -> Progress {
        Self::with_mode(None, 0.0)
    }

    /// Plain lines on stderr, whatever stderr is.
    pub fn lines(time_limit_s: f64) -> Progress {
        Self::with_mode(Some(Mode::Lines), time_limit_s)
    }

    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn for_stderr(time_limit_s: f64) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Self::lines(time_limit_s);
        }
        let pb = ProgressBar::with_draw_target(
            Some((time_limit_s * 1000.0) as u64),
            ProgressDrawTarget::stderr(),
        );
        pb.set_style(bar_style(false));
        Self::with_mode(Some(Mode::Bar(pb)), time_limit_s)
    }

    /// Enter `phase`, saying what it waits for (shown while it lasts).
    pub fn phase(&self, phase: Phase, waiting_for: impl Into<String>) {
        if let Mode::Bar(pb) = &self.inner.mode
            && self.shown
        {
            pb.set_style(bar_style(phase == Phase::Workload));
        }
        {
            let mut s = self.state();
            let now = Instant::now();
            if let Some(prev) = s.phase {
                let took = now - s.phase_start;
                s.timings.push((prev, took));
            }
            s.phase = Some(phase);
            s.waiting_for = waiting_for.into();
            s.phase_start = now;
        }
        self.tick(true);
    }

    /// Enter the workload phase, reading op counts (and active faults) from `stats`.
    pub fn workload(&self, stats: Arc<Stats>) {
        {
            let mut s = self.state();
            let now = Instant::now();
            s.workload_start = Some(now);
            s.rate_mark = (now, 0);
            s.stats = Some(stats);
        }
        self.phase(Phase::Workload, "clients and nemesis running");
    }

    /// Show live checking's counts on the workload line.
    pub fn live(&self, counts: Arc<dyn Segment>) {
        self.state().live = Some(counts);
    }

    /// The nemesis op in flight and how long it has run.
    pub fn nemesis_op_in_flight(&self) -> Option<(String, Duration)> {
        self.state()
            .nemesis_op
            .as_ref()
            .map(|(f, since)| (f.clone(), since.elapsed()))
    }

    /// The nemesis started op `f` (`Some`) or finished its op (`None`).
    pub fn nemesis_op(&self, f: Option<&str>) {
        self.state().nemesis_op = f.map(|f| (f.to_string(), Instant::now()));
    }

    /// A line for people about the cluster (a heal, a cleanup failure) on stderr, above the bar
    /// when there is one; shown also when quiet, since it is not progress.
    pub fn note(&self, line: &str) {
        match &self.inner.mode {
            Mode::Bar(pb) if self.shown => pb.println(line),
            _ => eprintln!("{line}"),
        }
    }

    /// Stop the display (clears the bar); the last phase's time is recorded.
    pub fn finish(&self) {
        {
            let mut s = self.state();
            if let Some(prev) = s.phase.take() {
                let took = s.phase_start.elapsed();
                s.timings.push((prev, took));
            }
        }
        self.inner.stop.store(true, Ordering::Relaxed);
        if let Mode::Bar(pb) = &self.inner.mode {
            pb.finish_and_clear();
        }
        if let Some(h) = self
            .inner
            .ticker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            && h.thread().id() != std::thread::current().id()
        {
            let _ = h.join();
        }
    }

    /// How long each finished phase took, in order (a phase entered twice appears twice).
    pub fn timings(&self) -> Vec<(Phase, Duration)> {
        self.state().timings.clone()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current state as one line (without the run's elapsed prefix); a phase other than
    /// the workload shows how long it has lasted when `lasted` (not on the line entering it).
    fn status(&self, s: &mut State, lasted: bool) -> Option<String> {
        let phase = s.phase?;
        let now = Instant::now();
        let in_phase_s = (now - s.phase_start).as_secs_f64();
        let nemesis = s
            .nemesis_op
            .as_ref()
            .filter(|(_, since)| now - *since >= Duration::from_secs(2))
            .map(|(f, since)| {
                format!(
                    "nemesis {f} running for {:.0} s",
                    (now - *since).as_secs_f64()
                )
            });
        if phase != Phase::Workload {
            let mut line = format!("{}: {}", phase.name(), s.waiting_for);
            if lasted {
                line.push_str(&format!(" (for {in_phase_s:.0} s)"));
            }
            if let Some(n) = &nemesis {
                line.push_str(&format!("; {n}"));
            }
            return Some(line);
        }
        let mut line = format!("workload {in_phase_s:.1} s / {} s", self.inner.time_limit_s);
        if let Some(stats) = s.stats.clone() {
            let (total, ops) = ops_text(&stats);
            let window = now - s.rate_mark.0;
            if window >= RATE_WINDOW {
                s.rate_per_s = total.saturating_sub(s.rate_mark.1) as f64 / window.as_secs_f64();
                s.rate_mark = (now, total);
            }
            let faults = stats
                .active_faults
                .lock()
                .map(|f| f.clone())
                .unwrap_or_default();
            line.push_str(&format!(
                " | {ops} | {:.0} ops/s | faults: {}",
                s.rate_per_s,
                if faults.is_empty() { "none" } else { &faults }
            ));
        }
        if let Some(live) = &s.live {
            line.push_str(&format!(" | {}", live.text()));
        }
        if in_phase_s > self.inner.time_limit_s {
            line.push_str(" | time limit reached: waiting for in-flight ops");
            if let Some(n) = &nemesis {
                line.push_str(&format!(" ({n})"));
            }
        }
        Some(line)
    }

    /// Redraw the bar, or print a line when the phase changed (`changed`) or the last line is
    /// older than [`LINE_INTERVAL`].
    fn tick(&self, changed: bool) {
        if !self.shown {
            return;
        }
        let mut s = self.state();
        let Some(line) = self.status(&mut s, !changed) else {
            return;
        };
        let phase = s.phase;
        match &self.inner.mode {
            Mode::Bar(pb) => {
                if phase == Some(Phase::Workload)
                    && let Some(start) = s.workload_start
                {
                    pb.set_position(start.elapsed().as_millis() as u64);
                }
                pb.set_prefix(format!(
                    "{:.1} s",
                    self.inner.run_start.elapsed().as_secs_f64()
                ));
                pb.set_message(line);
                pb.tick();
            }
            Mode::Lines => {
                let now = Instant::now();
                if changed || now - s.last_line >= LINE_INTERVAL {
                    s.last_line = now;
                    eprintln!(
                        "shakedown: [{:.1} s] {line}",
                        self.inner.run_start.elapsed().as_secs_f64()
                    );
                }
            }
        }
    }
}

/// The terminal style: a bar of the time limit during the workload, a spinner otherwise.
fn bar_style(workload: bool) -> ProgressStyle {
    let template = if workload {
        "{spinner} {prefix:>8} [{bar:20}] {wide_msg}"
    } else {
        "{spinner} {prefix:>8} {wide_msg}"
    };
    ProgressStyle::with_template(template)
        .expect("static template")
        .progress_chars("=> ")
}

/// "setup 3.1 s, workload 60.0 s, …": each phase's time, for the end-of-run summary.
pub fn timings_text(timings: &[(Phase, Duration)]) -> String {
    timings
        .iter()
        .map(|(p, d)| format!("{} {:.1} s", p.name(), d.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_each_phase_in_order() {
        let p = Progress::quiet();
        p.phase(Phase::Connect, "ssh");
        p.phase(Phase::Install, "apt-get");
        p.workload(Arc::new(Stats::default()));
        p.finish();
        let names: Vec<&str> = p.timings().iter().map(|(ph, _)| ph.name()).collect();
        assert_eq!(names, ["connect", "install", "workload"]);
        assert!(timings_text(&p.timings()).starts_with("connect 0.0 s, install"));
    }

    #[test]
    fn workload_status_shows_counts_rate_and_faults() {
        let p = Progress::quiet();
        let stats = Arc::new(Stats::default());
        stats.ok.store(7, Ordering::Relaxed);
        stats.info.store(1, Ordering::Relaxed);
        *stats.active_faults.lock().unwrap() = "partition".into();
        p.workload(stats);
        let line = p.status(&mut p.state(), true).unwrap();
        assert!(line.starts_with("workload 0.0 s / 0 s"), "{line}");
        assert!(line.contains("ok 7 fail 0 info 1"), "{line}");
        assert!(line.contains("faults: partition"), "{line}");
        assert!(!line.contains("live:"), "{line}");
        struct Live;
        impl Segment for Live {
            fn text(&self) -> String {
                "live: 12 keys checked, 1 invalid".into()
            }
        }
        p.live(Arc::new(Live));
        let line = p.status(&mut p.state(), true).unwrap();
        assert!(
            line.contains("| live: 12 keys checked, 1 invalid"),
            "{line}"
        );
        p.phase(Phase::Settle, "letting the cluster settle for 3 s");
        let line = p.status(&mut p.state(), true).unwrap();
        assert_eq!(line, "settle: letting the cluster settle for 3 s (for 0 s)");
        let line = p.status(&mut p.state(), false).unwrap();
        assert_eq!(line, "settle: letting the cluster settle for 3 s");
        p.state().nemesis_op = Some(("strobe-clock".into(), Instant::now() - LINE_INTERVAL));
        let line = p.status(&mut p.state(), false).unwrap();
        assert!(
            line.ends_with("; nemesis strobe-clock running for 5 s"),
            "{line}"
        );
    }
}
