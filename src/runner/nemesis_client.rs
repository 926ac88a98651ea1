//! The nemesis as the interpreter's client (also `shakedown chaos`'s): every op runs on a
//! blocking thread, under a time bound that its node commands obey, so an op that overruns ends
//! soon after its bound and does not hold the nemesis (and every heal after it) for as long as
//! its commands' own timeouts add up to.
//!
//! Owns [`NemesisClient`], the per-op bound and the phase budget ([`Budget`]: the final heal's
//! ops share one), waiting a bounded time for the nemesis ([`lock_within`]) and the in-flight op
//! shown on the progress line. Does not own what an op does (`nemesis`), the bound's mechanism on
//! commands (`control::deadline`) or the phases (`runner`).

use crate::client::{Client, Completion};
use crate::control::deadline;
use crate::generator;
use crate::interpreter::{Stats, Worker};
use crate::nemesis::Nemesis;
use crate::progress::Progress;
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How much longer than an op's bound the interpreter waits for it: the op's own commands are
/// cut off at the bound, so it normally ends with its own (more telling) error first.
const SLACK: Duration = Duration::from_secs(5);

/// An end shared by every op of a phase (the final heal's): no op runs past it. Unset, ops
/// have only their own bound.
#[derive(Clone, Default)]
pub(crate) struct Budget(Arc<Mutex<Option<(Instant, &'static str)>>>);

impl Budget {
    /// From now on, no op runs past `until`; `what` names the phase in messages.
    pub(crate) fn set(&self, until: Instant, what: &'static str) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((until, what));
    }

    /// Ops have only their own bound again.
    pub(crate) fn clear(&self) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn get(&self) -> Option<(Instant, &'static str)> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A `Client` that performs nemesis ops on a blocking thread, each under its bound.
pub(crate) struct NemesisClient {
    pub(crate) nemesis: Arc<Mutex<Nemesis>>,
    /// The client generator's stall board, when the schedule has client stalls (their verbs
    /// are served here, not by `Nemesis`: they touch no node).
    pub(crate) stalls: Option<generator::stall::StallBoard>,
    pub(crate) stats: Arc<Stats>,
    /// Told which nemesis op is in flight (a long one holds up the end of a phase).
    pub(crate) progress: Progress,
    /// One op's bound (`--nemesis-timeout`).
    pub(crate) bound: Duration,
    /// The phase's budget, when one is set.
    pub(crate) budget: Budget,
}

impl NemesisClient {
    /// The interpreter's nemesis thread running this client.
    pub(crate) fn worker(self) -> Worker {
        let timeout = self.bound + SLACK;
        Worker {
            client: Box::new(self),
            node: None,
            timeout,
        }
    }
}

#[async_trait::async_trait]
impl Client for NemesisClient {
    async fn invoke(&mut self, f: &str, _key: Option<&str>, value: &Value) -> Completion {
        if let Some(board) = &self.stalls {
            use crate::faults::verb::{START_STALL, STOP_STALL};
            match f {
                START_STALL => return crate::nemesis::stall::start(board, value).await,
                STOP_STALL => return crate::nemesis::stall::stop(board).await,
                _ => {}
            }
        }
        let now = Instant::now();
        let (deadline, ran_out) = match self.budget.get() {
            Some((end, phase)) if end < now + self.bound => (
                end,
                format!("the {phase}'s budget of {} ran out", secs(self.bound)),
            ),
            _ => (
                now + self.bound,
                format!("its bound of {} ran out", secs(self.bound)),
            ),
        };
        if deadline <= now {
            return Completion::Info {
                error: format!("not run: {ran_out}"),
            };
        }
        let nemesis = self.nemesis.clone();
        let stats = self.stats.clone();
        let progress = self.progress.clone();
        let (f, value) = (f.to_string(), value.clone());
        tokio::task::spawn_blocking(move || {
            // An earlier op abandoned by its bound may still be ending: wait for it only until
            // this op's own end.
            let Some(mut n) = lock_within(&nemesis, deadline.saturating_duration_since(now)) else {
                let busy = progress
                    .nemesis_op_in_flight()
                    .map(|(op, since)| format!("`{op}` (running for {})", secs(since)))
                    .unwrap_or_else(|| "an earlier op".into());
                return Completion::Info {
                    error: format!(
                        "not run: the nemesis was still busy with {busy} when {ran_out}"
                    ),
                };
            };
            // Shown until the op's work ends, not when the interpreter stops waiting for it:
            // whatever waits for the nemesis next (a heal, the cleanup) waits for this, and the
            // progress line names it and for how long.
            progress.nemesis_op(Some(&f));
            let _done = NemesisOpDone(progress);
            let mut c = deadline::within(deadline, || n.invoke(&f, &value));
            if Instant::now() >= deadline
                && let Completion::Info { error } | Completion::Fail { error, .. } = &mut c
            {
                // Say why commands were cut off, once, after whatever the op reported.
                error.push_str(&format!(" ({ran_out})"));
            }
            *stats
                .active_faults
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = n.active().join(" ");
            c
        })
        .await
        .unwrap_or_else(|e| Completion::Info {
            error: format!("nemesis task failed: {e}"),
        })
    }
}

/// `d` in words for messages: "120 s", "2.5 s".
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// The lock of `m` within `wait`, or `None` (a poisoned lock is taken: healing must still run).
pub(crate) fn lock_within<T>(m: &Mutex<T>, wait: Duration) -> Option<MutexGuard<'_, T>> {
    let deadline = Instant::now() + wait;
    loop {
        match m.try_lock() {
            Ok(g) => return Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20).min(wait));
            }
            Err(std::sync::TryLockError::WouldBlock) => return None,
        }
    }
}

/// Clears the progress display's in-flight nemesis op when dropped: when the op's blocking work
/// ends (also by a panic), even after the interpreter stopped waiting for it.
struct NemesisOpDone(Progress);

impl Drop for NemesisOpDone {
    fn drop(&mut self) {
        self.0.nemesis_op(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_given_up_on_after_the_wait_and_taken_once_free() {
        let m = Arc::new(Mutex::new(1));
        let held = m.lock().unwrap();
        let t0 = Instant::now();
        assert!(lock_within(&m, Duration::from_millis(50)).is_none());
        assert!(t0.elapsed() >= Duration::from_millis(50));
        drop(held);
        assert_eq!(
            lock_within(&m, Duration::from_millis(50)).map(|g| *g),
            Some(1)
        );
        // Poisoned by a panicking holder: still taken (healing must run).
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("holder died");
        })
        .join();
        assert!(lock_within(&m, Duration::from_millis(50)).is_some());
    }

    #[test]
    fn durations_read_as_seconds() {
        assert_eq!(secs(Duration::from_secs(120)), "120 s");
        assert_eq!(secs(Duration::from_millis(2500)), "2.5 s");
    }
}
