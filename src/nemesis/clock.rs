//! Clock faults: step a node's wall clock (`bump-clock`), flip it back and forth (`strobe-clock`),
//! put it back (`reset-clock`) and measure every node's offset from the controller
//! (`clock-offsets`). Everything goes through `date`, so the same code drives the sandbox and
//! real hosts.
//!
//! Pure part (unit-tested): Jepsen-like magnitude draws (the exponent of two is uniform, so steps
//! from milliseconds to minutes are equally likely per octave, with a random sign), the strobe
//! plan, the `date -s` relative argument, parsing `date +%s.%N` and the round-trip-corrected
//! offset (node time minus the midpoint of the controller's send and receive times).
//!
//! Impure part: scripts over `Remote` and the [`Clock`] fault, which journals each
//! inject before applying it (undone by `reset-clock`) and remember which nodes they touched so
//! a reset (and `heal_all`, and `shakedown heal` from the journal) puts back only those.
//!
//! A strobe holds the nemesis thread for its whole duration, so it measures for itself: when its
//! op value asks for `offsets_every_ms`, a sampler thread measures every node's offset at that
//! period while the strobe runs, and the completion value reports the samples (`offsets`, each
//! `at_ms` after the strobe began), how long the strobe ran (`ran_ms`) and how long before the
//! op's completion it ended (`ended_ms_before`: the wait for the last sample), from which reports
//! place the fault band and the samples in time.
//!
//! Where the clock lives:
//! - In the sandbox every node's sshd preloads `clockshim.c` (see `sandbox`), so `date -s` on a
//!   node rewrites that node's offset file, never the host clock (the nodes lack CAP_SYS_TIME: a
//!   `date -s` that bypasses the shim fails with EPERM). Programs that read the clock without
//!   libc (Go programs such as etcd, static binaries) see it through the vDSO patch the shim
//!   starts them with (`sandbox::clockpatch`).
//! - On real hosts `date -s` steps the kernel clock (needs root). Running NTP daemons (chrony,
//!   chronyd, ntp, ntpd, ntpsec, systemd-timesyncd, openntpd, via systemd) are stopped before the
//!   first clock fault on a node (journaled as `stop-ntp`) and started again by `heal_all`.
//!   A reset sets the node's clock to the controller's time with `date -s @<secs.nanos>`.
//!
//! Needs GNU `date` on the nodes (fractional relative steps such as `date -s "+1.5 seconds"`).
//! Does not own the fault journal format, scheduling, or partitions/processes.
//!
//! This file holds the scripts and the fault's state and ops; the draws and request parsing are
//! `clock::request`, offset measurement (and the strobe's sampler) `clock::offsets`.

mod offsets;
mod request;

use super::cluster::{Cluster, HealLog};
use super::fault::{Fault, FaultError, JournalView, active_line};
use crate::control::{Cmd, Remote};
use crate::faults::STROBE_OFFSETS_EVERY as OFFSETS_EVERY_FIELD;
use crate::faults::Verb;
use crate::faults::verb::{
    BUMP_CLOCK as BUMP, RESET_CLOCK as RESET, START_NTP, STOP_NTP, STROBE_CLOCK as STROBE,
};
pub use offsets::{OFFSET_SAMPLES, measure_offset, now_ns, offset_ms, parse_epoch_ns};
use offsets::{StopSignal, ms_rounded, sample_offsets};
pub use request::{
    ClockRequest, DEFAULT_MAX_DELTA_MS, DEFAULT_MAX_PERIOD_MS, DEFAULT_MIN_DELTA_MS,
    DEFAULT_STROBE_DURATION_MS, MAX_STROBE_DURATION_MS, MIN_OFFSETS_EVERY_MS, draw_delta_ms,
    draw_period_ms, parse_request,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The relative `date -s` argument for a step of `delta_ms`: `"+1.234 seconds"`,
/// `"-0.004 seconds"`.
pub fn relative_date_arg(delta_ms: i64) -> String {
    let sign = if delta_ms < 0 { '-' } else { '+' };
    let abs = delta_ms.unsigned_abs();
    format!("{sign}{}.{:03} seconds", abs / 1000, abs % 1000)
}

/// The absolute `date -s` argument for `time_ns` since the epoch: `"@1795990824.500000000"`.
pub fn absolute_date_arg(time_ns: i128) -> String {
    let secs = time_ns.div_euclid(1_000_000_000);
    let nanos = time_ns.rem_euclid(1_000_000_000);
    format!("@{secs}.{nanos:09}")
}
/// How a node's clock is controlled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockHost {
    /// A sandbox node: the preload shim and its offset file handle `date -s`.
    Shim,
    /// A real host: `date -s` steps the kernel clock; these NTP services were active.
    Host {
        /// systemd units of NTP daemons found active.
        ntp_services: Vec<String>,
    },
}

// ---------------------------------------------------------------------------------------------
// Scripts (constant text; values arrive as positional parameters)

/// A node whose PID 1 is sshd is a sandbox node: without the shim it must not touch systemd,
/// which (through the shared /run) is the host's.
const PROBE: &str = r#"if [ -n "${SHAKEDOWN_CLOCK_FILE:-}" ] && [ -f "$SHAKEDOWN_CLOCK_FILE" ]; then
  echo shim; exit 0
fi
if [ "$(cat /proc/1/comm 2>/dev/null)" = sshd ]; then echo sandbox-without-shim; exit 0; fi
echo host
command -v systemctl >/dev/null 2>&1 || exit 0
for s in chrony chronyd ntp ntpd ntpsec systemd-timesyncd openntpd; do
  if systemctl is-active --quiet "$s" 2>/dev/null; then echo "$s"; fi
done
"#;

const STOP_SERVICES: &str = r#"set -e
for s in "$@"; do systemctl stop "$s"; done
"#;

const START_SERVICES: &str = r#"rc=0
for s in "$@"; do systemctl start "$s" || rc=1; done
exit $rc
"#;

const BUMP_SCRIPT: &str = r#"date -s "$1" >/dev/null
"#;

/// The strobe loop runs on the node; its pid file lets a reset (also one by `shakedown heal`
/// after a killed controller) stop it. The marker comment identifies it in /proc/PID/cmdline.
/// It flips the clock by `$1`, then back by `$2`, sleeping `$3` seconds between flips, until its
/// deadline: `$4` centiseconds of `/proc/uptime` (which the clock shim and `date -s` do not move)
/// after it began, plus one so the coarse clock never ends it early. The last sleep is cut to
/// the deadline (`$5` is the period in centiseconds), so a period longer than the duration does
/// not stretch it. Then it flips back once more if it stopped on an odd flip, so the clock ends
/// where it started. (A count of flips would end it early: each forked `date` and `sleep` costs
/// milliseconds.)
const STROBE_SCRIPT: &str = r#"# shakedown-strobe
f=/tmp/shakedown-strobe.pid
echo $$ > "$f"
read -r up _ < /proc/uptime
end=$(( ${up%.*}${up#*.} + $4 + 1 ))
i=0
while :; do
  if [ $((i % 2)) -eq 0 ]; then date -s "$1" >/dev/null; else date -s "$2" >/dev/null; fi
  i=$((i + 1))
  read -r up _ < /proc/uptime
  left=$(( end - ${up%.*}${up#*.} ))
  [ "$left" -gt 0 ] || break
  if [ "$left" -lt "$5" ]; then
    sleep "$((left / 100)).$((left % 100 / 10))$((left % 10))"
  else
    sleep "$3"
  fi
done
if [ $((i % 2)) -eq 1 ]; then date -s "$2" >/dev/null; fi
rm -f "$f"
"#;

const RESET_SCRIPT: &str = r#"f=/tmp/shakedown-strobe.pid
if [ -f "$f" ]; then
  pid=$(cat "$f")
  if [ -n "$pid" ] && grep -qa shakedown-strobe "/proc/$pid/cmdline" 2>/dev/null; then
    kids=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null || true)
    kill "$pid" 2>/dev/null || true
    for k in $kids; do kill "$k" 2>/dev/null || true; done
    sleep 0.02
  fi
  rm -f "$f"
fi
date -s "$1" >/dev/null
"#;

/// How `remote`'s clock is controlled, and which NTP services run there.
pub fn probe(remote: &dyn Remote) -> Result<ClockHost, String> {
    let out = remote.exec_ok(&Cmd::sh(PROBE)).map_err(|e| e.to_string())?;
    let mut lines = out.lines().map(str::trim).filter(|l| !l.is_empty());
    match lines.next() {
        Some("shim") => Ok(ClockHost::Shim),
        Some("sandbox-without-shim") => Err(
            "sandbox node without the clock shim (made by an older shakedown?): run \
             `shakedown sandbox down` and `sandbox up` again"
                .to_string(),
        ),
        Some("host") => Ok(ClockHost::Host {
            ntp_services: lines.map(str::to_string).collect(),
        }),
        _ => Err(format!("clock probe printed {out:?}")),
    }
}

/// Step `remote`'s clock by `delta_ms` (`date -s "+N seconds"`: read and set in one process).
pub fn bump(remote: &dyn Remote, delta_ms: i64) -> Result<(), String> {
    remote
        .exec_ok(&Cmd::script(BUMP_SCRIPT, [relative_date_arg(delta_ms)]).sudo(true))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Flip `remote`'s clock by `+delta_ms`, then back, every `period_ms`, for `duration_ms` (at
/// least, by the node's monotonic clock), ending where it started; blocks until the loop on the
/// node ends.
pub fn strobe(
    remote: &dyn Remote,
    delta_ms: i64,
    period_ms: u64,
    duration_ms: u64,
) -> Result<(), String> {
    remote
        .exec_ok(&strobe_cmd(delta_ms, period_ms, duration_ms))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The command that runs [`STROBE_SCRIPT`] for one strobe.
fn strobe_cmd(delta_ms: i64, period_ms: u64, duration_ms: u64) -> Cmd {
    Cmd::script(STROBE_SCRIPT, strobe_args(delta_ms, period_ms, duration_ms))
        .sudo(true)
        .timeout_ms(duration_ms + period_ms + 30_000)
}

/// [`STROBE_SCRIPT`]'s positional arguments.
fn strobe_args(delta_ms: i64, period_ms: u64, duration_ms: u64) -> [String; 5] {
    let period_ms = period_ms.max(1);
    [
        relative_date_arg(delta_ms),
        relative_date_arg(-delta_ms),
        format!("{}.{:03}", period_ms / 1000, period_ms % 1000),
        duration_ms.div_ceil(10).to_string(),
        period_ms.div_ceil(10).to_string(),
    ]
}

/// Stop a strobe loop left on `remote` (if any) and set its clock to the controller's: first
/// `date -s @<controller time>` (late by the time the command takes to reach `date`), then
/// measure the offset and step by minus it (to the millisecond) when it is 1 ms or more.
pub fn reset(remote: &dyn Remote) -> Result<(), String> {
    let cmd = Cmd::script(RESET_SCRIPT, [absolute_date_arg(now_ns())]).sudo(true);
    remote.exec_ok(&cmd).map_err(|e| e.to_string())?;
    let (offset_ms, _) = measure_offset(remote)?;
    let fix_ms = -offset_ms.round() as i64;
    if fix_ms != 0 {
        bump(remote, fix_ms)?;
    }
    Ok(())
}

/// The clock fault and what it remembers.
#[derive(Debug, Default)]
pub struct Clock {
    /// Nodes whose clock a fault touched since the last reset.
    touched: BTreeSet<String>,
    /// Probe results per node.
    hosts: BTreeMap<String, ClockHost>,
    /// NTP services this nemesis stopped, per node.
    ntp_stopped: BTreeMap<String, Vec<String>>,
}

impl Clock {
    /// Probe the given nodes once each; on real hosts stop running NTP daemons (journaled as
    /// `stop-ntp`, undone by `start-ntp` in `heal_all`).
    fn take_clock_control(&mut self, cx: &mut Cluster, idx: &[usize]) -> Result<(), String> {
        let unprobed: Vec<usize> = idx
            .iter()
            .copied()
            .filter(|&i| !self.hosts.contains_key(&cx.cfg.nodes[i].name))
            .collect();
        if unprobed.is_empty() {
            return Ok(());
        }
        let found = std::sync::Mutex::new(Vec::new());
        cx.on_nodes(&unprobed, |r, node| {
            let host = probe(r)?;
            found
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((node.name.clone(), host));
            Ok(())
        })?;
        let found = found.into_inner().unwrap_or_else(|p| p.into_inner());
        let mut to_stop: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, host) in found {
            if let ClockHost::Host { ntp_services } = &host
                && !ntp_services.is_empty()
            {
                to_stop.insert(name.clone(), ntp_services.clone());
            }
            self.hosts.insert(name, host);
        }
        if to_stop.is_empty() {
            return Ok(());
        }
        let stop_idx: Vec<usize> = to_stop.keys().filter_map(|n| cx.index_of(n)).collect();
        for (n, s) in &to_stop {
            self.ntp_stopped
                .entry(n.clone())
                .or_default()
                .extend(s.iter().cloned());
        }
        let detail = json!({ "services": to_stop });
        cx.journaled("inject", STOP_NTP, detail, Some(START_NTP), |cx| {
            cx.on_nodes(&stop_idx, |r, node| {
                let services = to_stop.get(&node.name).cloned().unwrap_or_default();
                r.exec_ok(&Cmd::script(STOP_SERVICES, services).sudo(true))
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
        })
    }

    /// A drawn request's `targets` resolved to `nodes` by the nemesis's own target selection (which
    /// can ask the system for its primaries); explicit `nodes` and other values pass through.
    fn resolve_clock_targets(cx: &mut Cluster, value: &Value) -> Result<Value, String> {
        match value.get("targets") {
            Some(spec) if value.get("nodes").is_none() => {
                let idx = cx.choose_targets(crate::faults::Targets::of_value(spec)?)?;
                let mut v = value.clone();
                v["nodes"] = json!(cx.node_names(&idx));
                Ok(v)
            }
            _ => Ok(value.clone()),
        }
    }

    /// `bump-clock`: step the chosen nodes' clocks by one drawn (or given) delta.
    fn bump_clock(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, String> {
        let names = cx.names();
        let value = &Self::resolve_clock_targets(cx, value)?;
        let req = parse_request(value, false, &names, cx.rng())?;
        let idx: Vec<usize> = req.nodes.iter().filter_map(|n| cx.index_of(n)).collect();
        self.take_clock_control(cx, &idx)?;
        self.touched.extend(req.nodes.iter().cloned());
        let detail = json!({ "nodes": req.nodes, "delta_ms": req.delta_ms });
        let delta = req.delta_ms;
        cx.journaled("inject", BUMP, detail.clone(), Some(RESET), |cx| {
            cx.on_nodes(&idx, |r, _| bump(r, delta))
        })?;
        Ok(detail)
    }

    /// `strobe-clock`: flip the chosen nodes' clocks by ±delta every period for the duration
    /// (blocks until done).
    fn strobe_clock(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, String> {
        let names = cx.names();
        let value = &Self::resolve_clock_targets(cx, value)?;
        let req = parse_request(value, true, &names, cx.rng())?;
        let idx: Vec<usize> = req.nodes.iter().filter_map(|n| cx.index_of(n)).collect();
        self.take_clock_control(cx, &idx)?;
        self.touched.extend(req.nodes.iter().cloned());
        let detail = json!({
            "nodes": req.nodes,
            "delta_ms": req.delta_ms,
            "period_ms": req.period_ms,
            "duration_ms": req.duration_ms,
        });
        let (delta, period, duration) = (req.delta_ms, req.period_ms, req.duration_ms);
        let every = value
            .get(OFFSETS_EVERY_FIELD)
            .and_then(Value::as_u64)
            .filter(|&ms| ms > 0)
            .map(|ms| Duration::from_millis(ms.max(MIN_OFFSETS_EVERY_MS)));
        let all: Vec<(String, Arc<dyn Remote>)> = cx
            .cfg
            .nodes
            .iter()
            .zip(&cx.cfg.remotes)
            .map(|(n, r)| (n.name.clone(), r.clone()))
            .collect();
        let (t0, ended, samples) =
            cx.journaled("inject", STROBE, detail.clone(), Some(RESET), |cx| {
                let stop = StopSignal::default();
                let t0 = Instant::now();
                let (result, ended, samples) = std::thread::scope(|s| {
                    let (all, stop) = (&all, &stop);
                    let sampler = every.map(|every| {
                        s.spawn(crate::control::deadline::carry(move || {
                            sample_offsets(all, every, t0, stop)
                        }))
                    });
                    let result = cx.on_nodes(&idx, |r, _| strobe(r, delta, period, duration));
                    let ended = Instant::now();
                    stop.stop();
                    // The last measurement may still be running: its sample is kept.
                    let samples = sampler
                        .map(|h| h.join().unwrap_or_default())
                        .unwrap_or_default();
                    (result, ended, samples)
                });
                result.map(|()| (t0, ended, samples))
            })?;
        let mut out = detail;
        out["ran_ms"] = json!(ms_rounded(ended - t0));
        if every.is_some() {
            out["offsets"] = Value::Array(samples);
        }
        // From the strobe's end to this op's completion (the last sample, the journal record).
        out["ended_ms_before"] = json!(ms_rounded(ended.elapsed()));
        Ok(out)
    }

    /// `reset-clock`: set every touched node's clock (or the nodes listed in `value.nodes`) to
    /// the controller's time, stopping a strobe loop first. Nothing touched: no-op.
    fn reset_clocks(&mut self, cx: &mut Cluster, value: &Value) -> Result<Value, String> {
        let mut names: BTreeSet<String> = self.touched.clone();
        if let Some(list) = value.get("nodes").and_then(Value::as_array) {
            names.extend(list.iter().filter_map(|v| v.as_str().map(str::to_string)));
        }
        let idx: Vec<usize> = names.iter().filter_map(|n| cx.index_of(n)).collect();
        if idx.is_empty() {
            return Ok(json!({ "nodes": [] }));
        }
        let detail = json!({ "nodes": names });
        cx.journaled("undo", RESET, detail.clone(), None, |cx| {
            cx.on_nodes(&idx, |r, _| reset(r))
        })?;
        for n in &names {
            self.touched.remove(n);
        }
        Ok(detail)
    }

    /// Start the NTP services this nemesis (or, after `adopt_ntp_stopped`, an earlier controller)
    /// stopped. Nothing stopped: no-op.
    fn restore_ntp(&mut self, cx: &mut Cluster) -> Result<Vec<String>, String> {
        if self.ntp_stopped.is_empty() {
            return Ok(vec![]);
        }
        let stopped = self.ntp_stopped.clone();
        let idx: Vec<usize> = stopped.keys().filter_map(|n| cx.index_of(n)).collect();
        cx.journaled(
            "undo",
            START_NTP,
            json!({ "services": stopped }),
            None,
            |cx| {
                cx.on_nodes(&idx, |r, node| {
                    let services = stopped.get(&node.name).cloned().unwrap_or_default();
                    r.exec_ok(&Cmd::script(START_SERVICES, services).sudo(true))
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            },
        )?;
        let names = std::mem::take(&mut self.ntp_stopped)
            .into_iter()
            .map(|(n, s)| format!("{n}: {}", s.join(" ")))
            .collect();
        Ok(names)
    }

    /// `clock-offsets`: every node's clock minus the controller's, in ms, round-trip corrected,
    /// as `{"offsets_ms":{"n1":f64,..},"rtt_ms":{"n1":f64,..}}`; where the system reports its
    /// own time ([`crate::db::Abilities::process_clock`]), also the database process's clock
    /// the same way: `"db_offsets_ms"`, `"db_rtt_ms"`, `"db_clock"` (what was read, its
    /// resolution) and `"db_errors"` per node that did not answer (a killed or paused process:
    /// the op stays ok, the node's `date` reading stands).
    pub fn clock_offsets(cx: &Cluster) -> Result<Value, String> {
        type Reading = ((f64, f64), Option<Result<(f64, f64), String>>);
        let found: std::sync::Mutex<BTreeMap<String, Reading>> = Default::default();
        let system = cx.db();
        cx.on_nodes(&cx.all_idx(), |r, node| {
            let m = measure_offset(r)?;
            let db = system
                .process_clock(node)
                .map(|c| offsets::measure_with(r, &c.cmd, 1));
            found
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(node.name.clone(), (m, db));
            Ok(())
        })?;
        let found = found.into_inner().unwrap_or_else(|p| p.into_inner());
        let offsets: BTreeMap<&String, f64> =
            found.iter().map(|(n, ((o, _), _))| (n, *o)).collect();
        let rtts: BTreeMap<&String, f64> = found.iter().map(|(n, ((_, r), _))| (n, *r)).collect();
        let mut value = json!({ "offsets_ms": offsets, "rtt_ms": rtts });
        if let Some(clock) = cx
            .cfg
            .nodes
            .first()
            .and_then(|n| cx.cfg.db.process_clock(n))
        {
            let ok = |f: fn(&(f64, f64)) -> f64| -> BTreeMap<&String, f64> {
                found
                    .iter()
                    .filter_map(|(n, (_, db))| match db {
                        Some(Ok(m)) => Some((n, f(m))),
                        _ => None,
                    })
                    .collect()
            };
            let errors: BTreeMap<&String, &String> = found
                .iter()
                .filter_map(|(n, (_, db))| match db {
                    Some(Err(e)) => Some((n, e)),
                    _ => None,
                })
                .collect();
            value["db_offsets_ms"] = json!(ok(|m| m.0));
            value["db_rtt_ms"] = json!(ok(|m| m.1));
            value["db_clock"] =
                json!({ "source": clock.source, "resolution_ms": clock.resolution_ms });
            if !errors.is_empty() {
                value["db_errors"] = json!(errors);
            }
        }
        Ok(value)
    }
}

impl Fault for Clock {
    fn name(&self) -> &'static str {
        "clock"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[
            Verb::BumpClock,
            Verb::StrobeClock,
            Verb::ResetClock,
            Verb::ClockOffsets,
        ]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        Ok(match v {
            Verb::BumpClock => self.bump_clock(cx, value)?,
            Verb::StrobeClock => self.strobe_clock(cx, value)?,
            Verb::ResetClock => self.reset_clocks(cx, value)?,
            _ => Self::clock_offsets(cx)?,
        })
    }

    /// Reset every stepped clock, then start the NTP daemons it stopped.
    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        let mut errs = Vec::new();
        if let Err(e) = self.reset_clocks(cx, &Value::Null) {
            errs.push(e);
        }
        if let Err(e) = self.restore_ntp(cx) {
            errs.push(format!("restart NTP: {e}"));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }

    fn heal_what(&self) -> &'static str {
        "reset clocks"
    }

    fn active(&self) -> Option<String> {
        active_line("clock", &self.touched)
    }

    fn adopt(&mut self, outstanding: &[Value]) -> Vec<String> {
        let (clocked, ntp) = journal_clock_leftovers(outstanding);
        self.touched.extend(clocked.iter().cloned());
        let mut nodes: BTreeSet<String> = clocked;
        for (n, s) in ntp {
            nodes.insert(n.clone());
            self.ntp_stopped.entry(n).or_default().extend(s);
        }
        nodes.into_iter().collect()
    }

    fn healed(&self, _: &str) -> String {
        "reset the clock to the controller's".to_string()
    }

    /// Two steps, each said apart: the stepped clocks, then the NTP daemons.
    fn heal_from_journal(&mut self, cx: &mut Cluster, j: &JournalView<'_>, log: &mut HealLog) {
        self.adopt(j.outstanding);
        if !self.touched.is_empty() {
            cx.heal_step(
                log,
                "reset the clock",
                |cx| self.reset_clocks(cx, &Value::Null).map(|_| ()),
                |_| Some("reset the clock to the controller's".to_string()),
            );
        }
        if !self.ntp_stopped.is_empty() {
            let services = self.ntp_stopped.clone();
            cx.heal_step(
                log,
                "start NTP",
                |cx| self.restore_ntp(cx).map(|_| ()),
                |n| {
                    services
                        .get(n)
                        .map(|s| format!("started NTP again ({})", s.join(" ")))
                },
            );
        }
    }
}

/// From a fault journal's outstanding records (`outstanding_faults`): the nodes whose clocks
/// were stepped and not reset, and the NTP services stopped and not started.
pub fn journal_clock_leftovers(
    outstanding: &[Value],
) -> (BTreeSet<String>, BTreeMap<String, Vec<String>>) {
    let mut nodes = BTreeSet::new();
    let mut ntp: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in outstanding {
        match r["f"].as_str() {
            Some(BUMP) | Some(STROBE) => nodes.extend(
                r["detail"]["nodes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|n| n.as_str().map(str::to_string)),
            ),
            Some(STOP_NTP) => {
                if let Some(map) = r["detail"]["services"].as_object() {
                    for (node, list) in map {
                        ntp.entry(node.clone()).or_default().extend(
                            list.as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|s| s.as_str().map(str::to_string)),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    (nodes, ntp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nemesis::Nemesis;

    /// The clock ops through the nemesis, their completion value or what it was instead.
    trait ClockOps {
        fn op(&mut self, f: &str, v: &Value) -> Result<Value, String>;
        fn bump_clock(&mut self, v: &Value) -> Result<Value, String> {
            self.op(BUMP, v)
        }
        fn strobe_clock(&mut self, v: &Value) -> Result<Value, String> {
            self.op(STROBE, v)
        }
        fn clock_offsets(&mut self) -> Result<Value, String> {
            self.op(crate::faults::verb::CLOCK_OFFSETS, &Value::Null)
        }
    }

    impl ClockOps for Nemesis {
        fn op(&mut self, f: &str, v: &Value) -> Result<Value, String> {
            match self.invoke(f, v) {
                crate::client::Completion::Ok { value, .. } => Ok(value),
                other => Err(format!("{other:?}")),
            }
        }
    }
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use std::sync::Arc;

    pub(super) fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    /// Runs the real strobe script under `sh` with a `date` that logs its arguments (and the
    /// pid file in a temporary directory), as the node would.
    fn run_strobe_script(period_ms: u64, duration_ms: u64) -> (f64, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("date.log");
        let fake = dir.path().join("date");
        std::fs::write(
            &fake,
            format!("#!/bin/sh\necho \"$2\" >> {}\n", log.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let pid_file = dir.path().join("strobe.pid");
        let script = STROBE_SCRIPT.replace("/tmp/shakedown-strobe.pid", pid_file.to_str().unwrap());
        let path = format!(
            "{}:{}",
            dir.path().display(),
            std::env::var("PATH").unwrap()
        );
        let t0 = std::time::Instant::now();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .arg("sh")
            .args(strobe_args(300, period_ms, duration_ms))
            .env("PATH", path)
            .output()
            .unwrap();
        let ran_ms = t0.elapsed().as_secs_f64() * 1e3;
        assert!(out.status.success(), "{out:?}");
        assert!(!pid_file.exists(), "the pid file is removed at the end");
        let flips = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        (ran_ms, flips)
    }

    /// CI saw a strobe of 6 s end after 5.9997 s: a count of flips (duration / period) ended it
    /// before its deadline, as each `date` and `sleep` costs time. The deadline governs now.
    #[test]
    fn strobe_script_runs_its_whole_duration_and_ends_where_it_started() {
        for (period_ms, duration_ms) in [(120, 500), (7, 300), (2_000, 300)] {
            let (ran_ms, flips) = run_strobe_script(period_ms, duration_ms);
            assert!(
                ran_ms >= duration_ms as f64 && ran_ms < duration_ms as f64 + 400.0,
                "period {period_ms} ms: ran {ran_ms} ms for {duration_ms} ms"
            );
            assert!(flips.len() >= 2 && flips.len() % 2 == 0, "{flips:?}");
            for (i, f) in flips.iter().enumerate() {
                let want = if i % 2 == 0 {
                    "+0.300 seconds"
                } else {
                    "-0.300 seconds"
                };
                assert_eq!(f, want, "flip {i} of {flips:?}");
            }
            if period_ms == 120 {
                assert!((4..=6).contains(&flips.len()), "{flips:?}");
            }
        }
    }

    #[test]
    fn date_arguments() {
        assert_eq!(relative_date_arg(1234), "+1.234 seconds");
        assert_eq!(relative_date_arg(-4), "-0.004 seconds");
        assert_eq!(relative_date_arg(0), "+0.000 seconds");
        assert_eq!(relative_date_arg(-262_144), "-262.144 seconds");
        assert_eq!(
            absolute_date_arg(1_795_990_824_500_000_000),
            "@1795990824.500000000"
        );
        assert_eq!(absolute_date_arg(1_000_000_007), "@1.000000007");
    }

    /// A real host as seen over `Remote`: chrony runs, `date` prints a clock `offset_ms` ahead.
    struct FakeHost {
        name: String,
        offset_ms: i64,
        /// How long the strobe script takes, in ms.
        strobe_ms: u64,
        log: std::sync::Mutex<Vec<String>>,
    }

    impl Remote for FakeHost {
        fn node(&self) -> &str {
            &self.name
        }
        fn exec(&self, cmd: &Cmd) -> Result<crate::control::ExecOutput, crate::control::ExecError> {
            let text = cmd.to_shell();
            self.log.lock().unwrap().push(text.clone());
            if text.contains("# shakedown-strobe") && !text.contains("kill") {
                std::thread::sleep(std::time::Duration::from_millis(self.strobe_ms));
            }
            let stdout = if text.contains("SHAKEDOWN_CLOCK_FILE") {
                "host\nchrony\n".to_string()
            } else if text.starts_with("date ") {
                format!(
                    "{}\n",
                    &absolute_date_arg(now_ns() + i128::from(self.offset_ms) * 1_000_000)[1..]
                )
            } else {
                String::new()
            };
            Ok(crate::control::ExecOutput {
                status: 0,
                signal: None,
                stdout,
                stderr: String::new(),
            })
        }
        fn upload(&self, _: &[u8], _: &str, _: u32) -> Result<(), crate::control::ExecError> {
            Ok(())
        }
        fn download(&self, _: &str, _: &std::path::Path) -> Result<(), crate::control::ExecError> {
            Ok(())
        }
    }

    #[test]
    fn real_hosts_get_ntp_stopped_before_the_first_step_and_restarted_at_heal() {
        let hosts: Vec<Arc<FakeHost>> = (1..=2)
            .map(|i| {
                Arc::new(FakeHost {
                    name: format!("n{i}"),
                    offset_ms: 250 * i,
                    strobe_ms: 0,
                    log: Default::default(),
                })
            })
            .collect();
        let journal: Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
        let sink = journal.clone();
        let mut n = Nemesis::new(super::super::NemesisConfig {
            helper_exe: None,
            nodes: (1..=2)
                .map(|i| crate::node::Node {
                    name: format!("n{i}"),
                    host: format!("10.0.0.{i}"),
                })
                .collect(),
            remotes: hosts.iter().map(|h| h.clone() as Arc<dyn Remote>).collect(),
            db: Arc::new(crate::systems::etcd::Etcd::new(Default::default())),
            partition: Default::default(),
            rng: ChaCha8Rng::seed_from_u64(1),
            journal: Some(Box::new(move |r: &Value| {
                sink.lock().unwrap().push(r.clone())
            })),
        });
        let v = n
            .bump_clock(&json!({"nodes": ["n2"], "delta_ms": 1500}))
            .unwrap();
        assert_eq!(v, json!({"nodes": ["n2"], "delta_ms": 1500}));
        // Second step: already probed, NTP already stopped.
        n.bump_clock(&json!({"nodes": ["n2"], "delta_ms": -20}))
            .unwrap();
        let offsets = n.clock_offsets().unwrap();
        let n2 = offsets["offsets_ms"]["n2"].as_f64().unwrap();
        assert!((n2 - 500.0).abs() < 50.0, "{offsets}");
        assert!(n.heal_all().is_empty());
        let log = hosts[1].log.lock().unwrap().clone();
        let pos = |needle: &str| {
            log.iter()
                .position(|c| c.contains(needle))
                .unwrap_or_else(|| panic!("no {needle:?} in {log:#?}"))
        };
        assert!(pos("systemctl stop") < pos("+1.500 seconds"));
        assert!(pos("-0.020 seconds") < pos("shakedown-strobe.pid"));
        assert!(pos("shakedown-strobe.pid") < pos("systemctl start"));
        assert!(
            log.iter()
                .any(|c| c.contains("date -s \"$1\" >/dev/null\n' sh @17"))
        );
        assert!(
            log.iter()
                .filter(|c| c.contains("SHAKEDOWN_CLOCK_FILE"))
                .count()
                == 1
        );
        // n1's clock was never touched: no step, no reset, no NTP change.
        assert!(
            hosts[0]
                .log
                .lock()
                .unwrap()
                .iter()
                .all(|c| !c.contains("date -s") && !c.contains("systemctl"))
        );
        // The reset corrected the fake host's 500 ms lead with a relative step.
        assert!(log.iter().any(|c| c.contains("-0.500 seconds")), "{log:#?}");
        let records = journal.lock().unwrap().clone();
        let steps: Vec<String> = records
            .iter()
            .filter(|r| r["event"] == "done")
            .map(|r| r["f"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            steps,
            [
                "stop-ntp",
                "bump-clock",
                "bump-clock",
                "stop-partition",
                "resume",
                "start",
                "reset-clock",
                "start-ntp"
            ]
        );
        assert_eq!(
            records[0]["detail"],
            json!({"services": {"n2": ["chrony"]}})
        );
        assert!(crate::nemesis::outstanding_faults(&records).is_empty());
    }

    #[test]
    fn journal_leftovers_name_stepped_nodes_and_stopped_ntp() {
        let open = vec![
            json!({"f": "bump-clock", "detail": {"nodes": ["n1", "n3"], "delta_ms": 5}}),
            json!({"f": "strobe-clock", "detail": {"nodes": ["n2"], "delta_ms": 5}}),
            json!({"f": "stop-ntp", "detail": {"services": {"n1": ["chrony"]}}}),
            json!({"f": "pause", "detail": {"nodes": ["n4"]}}),
        ];
        let (nodes, ntp) = journal_clock_leftovers(&open);
        assert_eq!(
            nodes.into_iter().collect::<Vec<_>>(),
            vec!["n1", "n2", "n3"]
        );
        assert_eq!(ntp["n1"], vec!["chrony"]);
        assert_eq!(ntp.len(), 1);
    }

    fn fake_nemesis(hosts: &[Arc<FakeHost>]) -> Nemesis {
        Nemesis::new(super::super::NemesisConfig {
            helper_exe: None,
            nodes: hosts
                .iter()
                .enumerate()
                .map(|(i, h)| crate::node::Node {
                    name: h.name.clone(),
                    host: format!("10.0.0.{}", i + 1),
                })
                .collect(),
            remotes: hosts.iter().map(|h| h.clone() as Arc<dyn Remote>).collect(),
            db: Arc::new(crate::systems::etcd::Etcd::new(Default::default())),
            partition: Default::default(),
            rng: ChaCha8Rng::seed_from_u64(1),
            journal: None,
        })
    }

    /// Issue 15: no clock offsets were measured while a strobe held the nemesis thread. Asked
    /// to, the strobe samples every node in parallel with itself and reports when it ran.
    #[test]
    fn strobe_samples_offsets_while_it_runs_and_reports_its_duration() {
        let hosts: Vec<Arc<FakeHost>> = (1..=3)
            .map(|i| {
                Arc::new(FakeHost {
                    name: format!("n{i}"),
                    offset_ms: 100 * i,
                    strobe_ms: 550,
                    log: Default::default(),
                })
            })
            .collect();
        let mut n = fake_nemesis(&hosts);
        let v = n
            .strobe_clock(&json!({"nodes": ["n2"], "delta_ms": 200, "period_ms": 100,
                                  "duration_ms": 500, "offsets_every_ms": 100}))
            .unwrap();
        let ran_ms = v["ran_ms"].as_f64().unwrap();
        assert!((550.0..2_000.0).contains(&ran_ms), "{v}");
        let after_ms = v["ended_ms_before"].as_f64().unwrap();
        assert!((0.0..500.0).contains(&after_ms), "{v}");
        let samples = v["offsets"].as_array().unwrap();
        assert!((3..=6).contains(&samples.len()), "{v}");
        let mut last = 0.0;
        for s in samples {
            let at = s["at_ms"].as_f64().unwrap();
            assert!(at > last && at < ran_ms, "{v}");
            last = at;
            for i in 1..=3 {
                let off = s["offsets_ms"][format!("n{i}")].as_f64().unwrap();
                assert!((off - 100.0 * i as f64).abs() < 50.0, "{s}");
            }
        }
        assert!(samples[0]["at_ms"].as_f64().unwrap() >= 100.0, "{v}");
        // Without a sampling period: no samples, still the duration.
        let v = n
            .strobe_clock(&json!({"nodes": ["n1"], "delta_ms": 5, "period_ms": 100,
                                  "duration_ms": 200}))
            .unwrap();
        assert!(
            v.get("offsets").is_none() && v["ran_ms"].as_f64().unwrap() >= 550.0,
            "{v}"
        );
    }
}
