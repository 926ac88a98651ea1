//! A time bound on a whole piece of remote work (a nemesis op, a heal), carried by the thread
//! doing it: every command sent under it is cut off when the bound passes, and a command that
//! would start after it is not sent at all. This is what lets an op abandoned by its bound end
//! soon after, instead of running on (and holding the nemesis) for as long as its commands'
//! own timeouts add up to.
//!
//! Owns: the thread's deadline ([`within`], [`current`]), carrying it into worker threads
//! ([`carry`]) and clipping a command's timeout to it ([`clip`]). Does not own the bounds
//! themselves (the runner sets them) or running commands (`ssh`).

use std::cell::Cell;
use std::time::{Duration, Instant};

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The deadline of the work this thread is doing, if any.
pub fn current() -> Option<Instant> {
    DEADLINE.with(Cell::get)
}

/// Run `f` with `deadline` as this thread's bound (the earlier of it and an enclosing one), then
/// restore the enclosing bound (also when `f` panics).
pub fn within<T>(deadline: Instant, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEADLINE.with(|d| d.set(self.0));
        }
    }
    let outer = current();
    let _restore = Restore(outer);
    DEADLINE.with(|d| d.set(Some(outer.map_or(deadline, |o| o.min(deadline)))));
    f()
}

/// `f` wrapped to run under this thread's current deadline, for a thread it spawns (a deadline
/// is per thread, so work fanned out to one thread per node must carry it).
pub fn carry<T>(f: impl FnOnce() -> T) -> impl FnOnce() -> T {
    let deadline = current();
    move || match deadline {
        Some(d) => within(d, f),
        None => f(),
    }
}

/// How long a command with timeout `timeout_ms` (0: none) may run when it starts at `now` under
/// `deadline`: `Err(())` when the deadline has already passed (the command must not be sent),
/// else the clipped timeout in ms (0 still meaning none).
#[allow(clippy::result_unit_err)]
pub fn clip(timeout_ms: u64, deadline: Option<Instant>, now: Instant) -> Result<u64, ()> {
    let Some(deadline) = deadline else {
        return Ok(timeout_ms);
    };
    let left = deadline.saturating_duration_since(now);
    if left.is_zero() {
        return Err(());
    }
    // Rounded up, so a command cut off by the bound ends at or after it (the nemesis client
    // names the bound exactly when the work ran up to it); at least 1 ms, so a positive bound
    // never reads as "no timeout".
    let left_ms = left.as_micros().div_ceil(1000).max(1) as u64;
    Ok(if timeout_ms == 0 {
        left_ms
    } else {
        timeout_ms.min(left_ms)
    })
}

/// The time left before this thread's deadline (`None`: no deadline).
pub fn left(now: Instant) -> Option<Duration> {
    current().map(|d| d.saturating_duration_since(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_nests_to_the_earlier_bound_and_restores_the_outer_one() {
        let now = Instant::now();
        assert_eq!(current(), None);
        within(now + Duration::from_secs(10), || {
            assert_eq!(current(), Some(now + Duration::from_secs(10)));
            // A later inner bound does not extend the outer one; an earlier one tightens it.
            within(now + Duration::from_secs(20), || {
                assert_eq!(current(), Some(now + Duration::from_secs(10)))
            });
            within(now + Duration::from_secs(5), || {
                assert_eq!(current(), Some(now + Duration::from_secs(5)))
            });
            assert_eq!(current(), Some(now + Duration::from_secs(10)));
        });
        assert_eq!(current(), None);
        // Restored after a panic, too.
        let r = std::panic::catch_unwind(|| within(now, || panic!("boom")));
        assert!(r.is_err());
        assert_eq!(current(), None);
    }

    #[test]
    fn a_spawned_thread_runs_under_the_deadline_it_was_carried_with() {
        let d = Instant::now() + Duration::from_secs(3);
        let seen = within(d, || std::thread::spawn(carry(current)).join().unwrap());
        assert_eq!(seen, Some(d));
        // Without carry, a new thread has no deadline.
        let bare = within(d, || std::thread::spawn(current).join().unwrap());
        assert_eq!(bare, None);
    }

    #[test]
    fn a_command_timeout_is_clipped_to_the_deadline_and_refused_past_it() {
        let now = Instant::now();
        assert_eq!(clip(60_000, None, now), Ok(60_000));
        assert_eq!(clip(0, None, now), Ok(0));
        let d = Some(now + Duration::from_secs(2));
        assert_eq!(clip(60_000, d, now), Ok(2_000));
        assert_eq!(clip(500, d, now), Ok(500));
        assert_eq!(clip(0, d, now), Ok(2_000));
        assert_eq!(clip(60_000, d, now + Duration::from_secs(2)), Err(()));
        assert_eq!(
            clip(60_000, Some(now + Duration::from_micros(10)), now),
            Ok(1)
        );
        // A part of a millisecond left counts as a whole one: cut off at the bound, a command
        // must not end a hair before it.
        let d = Some(now + Duration::from_micros(2_999_700));
        assert_eq!(clip(60_000, d, now), Ok(3_000));
    }
}
