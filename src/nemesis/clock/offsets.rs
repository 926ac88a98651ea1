//! Clock offsets: reading a node's clock with `date +%s.%N` against the controller's (fastest of
//! [`OFFSET_SAMPLES`] readings, offset taken at the midpoint of send and receive), every node at
//! once, and the sampler a strobe runs beside itself. Does not step clocks (`nemesis::clock`).

use crate::control::{Cmd, Remote};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Parse `date +%s.%N` output (`"1795990824.639587165"`, surrounding whitespace allowed) into ns
/// since the epoch. `None` for anything else.
pub fn parse_epoch_ns(text: &str) -> Option<i128> {
    let text = text.trim();
    let (secs, frac) = text.split_once('.')?;
    let negative = secs.starts_with('-');
    let secs: i128 = secs.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nanos: i128 = format!("{frac:0<9}").parse().ok()?;
    Some(if negative {
        secs * 1_000_000_000 - nanos
    } else {
        secs * 1_000_000_000 + nanos
    })
}

/// Node clock minus the controller's, in ms, taking the node's reading to have happened at the
/// midpoint of the controller's send (`sent_ns`) and receive (`received_ns`) times. The error is
/// at most half the round trip.
pub fn offset_ms(node_ns: i128, sent_ns: i128, received_ns: i128) -> f64 {
    let midpoint = sent_ns + (received_ns - sent_ns) / 2;
    (node_ns - midpoint) as f64 / 1e6
}

/// The controller's wall clock in ns since the epoch.
pub fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// Samples per offset measurement; the one with the shortest round trip is kept (as NTP does).
pub const OFFSET_SAMPLES: usize = 3;
/// Longest one clock reading may take, in ms: its error bound is half its round trip, so a slower
/// one says little, and it holds the nemesis (or a strobe's sampler) while it waits.
pub(super) const OFFSET_READING_TIMEOUT_MS: u64 = 10_000;

/// `remote`'s clock minus the controller's, in ms, round-trip corrected, from the fastest of
/// [`OFFSET_SAMPLES`] readings; also returns that round trip in ms (the error bound is half of
/// it).
pub fn measure_offset(remote: &dyn Remote) -> Result<(f64, f64), String> {
    let cmd = Cmd::new("date")
        .arg("+%s.%N")
        .timeout_ms(OFFSET_READING_TIMEOUT_MS);
    measure_with(remote, &cmd, OFFSET_SAMPLES)
}

/// A clock read on `remote` by `cmd` (which prints `date +%s.%N`'s form) minus the
/// controller's, in ms, round-trip corrected, from the fastest of `samples` readings; also that
/// round trip in ms.
pub fn measure_with(remote: &dyn Remote, cmd: &Cmd, samples: usize) -> Result<(f64, f64), String> {
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..samples.max(1) {
        let sent = now_ns();
        let out = remote.exec_ok(cmd).map_err(|e| e.to_string())?;
        let received = now_ns();
        let node =
            parse_epoch_ns(&out).ok_or_else(|| format!("the clock reading printed {out:?}"))?;
        let sample = (
            offset_ms(node, sent, received),
            (received - sent) as f64 / 1e6,
        );
        if best.is_none_or(|(_, rtt)| sample.1 < rtt) {
            best = Some(sample);
        }
    }
    best.ok_or_else(|| "no clock reading".to_string())
}

/// Every listed node's offset and round trip in ms, measured in parallel: node → result.
pub(super) fn measure_all(
    nodes: &[(String, Arc<dyn Remote>)],
) -> BTreeMap<String, Result<(f64, f64), String>> {
    use crate::control::fanout;
    fanout::each(nodes, fanout::FAN_OUT, |(_, r)| measure_offset(r.as_ref()))
        .into_iter()
        .zip(nodes)
        .map(|(m, (name, _))| {
            let m = m.unwrap_or_else(|_| Err("clock measurement thread panicked".into()));
            (name.clone(), m)
        })
        .collect()
}

/// `{"offsets_ms":{node:ms},"rtt_ms":{node:ms}}` of the successful measurements, plus
/// `"errors":{node:text}` when some failed.
pub(super) fn offsets_value(found: &BTreeMap<String, Result<(f64, f64), String>>) -> Value {
    let ok = || {
        found
            .iter()
            .filter_map(|(n, m)| m.as_ref().ok().map(|m| (n, m)))
    };
    let offsets: BTreeMap<&String, f64> = ok().map(|(n, (o, _))| (n, *o)).collect();
    let rtts: BTreeMap<&String, f64> = ok().map(|(n, (_, r))| (n, *r)).collect();
    let mut v = json!({ "offsets_ms": offsets, "rtt_ms": rtts });
    let errors: BTreeMap<&String, &String> = found
        .iter()
        .filter_map(|(n, m)| m.as_ref().err().map(|e| (n, e)))
        .collect();
    if !errors.is_empty() {
        v["errors"] = json!(errors);
    }
    v
}

/// Set once the strobe ended; wakes the sampler at once.
#[derive(Default)]
pub(super) struct StopSignal {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl StopSignal {
    pub(super) fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.wake.notify_all();
    }

    /// Wait until `deadline` or the stop; true if stopped.
    pub(super) fn wait_until(&self, deadline: Instant) -> bool {
        let mut stopped = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if *stopped {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            stopped = self
                .wake
                .wait_timeout(stopped, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// Until `stop`: measure every node at `t0 + k·every` (k = 1, 2, …; a deadline already missed
/// is skipped). Each sample is `{"at_ms": ms after t0 (midpoint of the measurement),
/// "offsets_ms", "rtt_ms"[, "errors"]}`.
pub(super) fn sample_offsets(
    nodes: &[(String, Arc<dyn Remote>)],
    every: Duration,
    t0: Instant,
    stop: &StopSignal,
) -> Vec<Value> {
    let mut samples = Vec::new();
    let mut k = 1u32;
    loop {
        if stop.wait_until(t0 + every * k) {
            return samples;
        }
        let before = t0.elapsed();
        let found = measure_all(nodes);
        let at = before + (t0.elapsed() - before) / 2;
        let mut sample = offsets_value(&found);
        sample["at_ms"] = json!(ms_rounded(at));
        samples.push(sample);
        k = (t0.elapsed().as_nanos() / every.as_nanos().max(1)) as u32 + 1;
    }
}

/// `d` in ms, rounded to the microsecond.
pub(super) fn ms_rounded(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_parsing_and_offsets() {
        assert_eq!(
            parse_epoch_ns("1795990824.639587165\n"),
            Some(1_795_990_824_639_587_165)
        );
        assert_eq!(parse_epoch_ns("12.5"), Some(12_500_000_000));
        assert_eq!(parse_epoch_ns("-1.5"), Some(-1_500_000_000));
        for bad in ["", "12", "12.", "a.b", "1.2345678901", "1.-5", "Sun Nov 29"] {
            assert_eq!(parse_epoch_ns(bad), None, "{bad:?}");
        }
        // The node read its clock at the midpoint: 1000 ms ahead.
        let sent = 10_000_000_000;
        let received = sent + 4_000_000;
        assert_eq!(
            offset_ms(sent + 2_000_000 + 1_000_000_000, sent, received),
            1000.0
        );
        assert_eq!(offset_ms(sent + 2_000_000, sent, received), 0.0);
        assert_eq!(offset_ms(sent - 500_000_000, sent, received), -502.0);
    }
}
