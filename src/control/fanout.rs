//! Bounded fan-out: one piece of work per item (a node, a remote), run on at most [`FAN_OUT`]
//! threads at once, each under the caller's `deadline`, results in input order.
//!
//! Owns the one definition of "many nodes in parallel" every part uses (`control::on_all`,
//! connecting to every node, `runner::on_nodes`, the nemesis's `Cluster::on_nodes`, the
//! sandbox's per-node steps). Does not own what the work does, nor what a panic in it means to
//! the caller (each item's result comes back as `std::thread::Result`, the caller decides),
//! nor the bound: commands (faults, heals, probes) take [`FAN_OUT`]; waits of up to a timeout
//! each (connecting, readiness) take every node at once, as bounded they would go in waves.
//!
//! Why a bound: one thread per node was fine at 5 nodes and is 1,000 threads (8 MiB of stack
//! reserved each, 1,000 SSH commands started at once on a 2-core controller) at 1,000. With a
//! bound the work goes out in parallel all the same: `FAN_OUT` workers each take the next item
//! as soon as they finish one, so a slow node delays only the items behind it on its worker.

use super::deadline;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Most items worked on at once by [`each`] (threads per fan-out). 32 keeps a 100-node fault
/// within four rounds of commands and a 1,000-node one at 32 threads; the controller's cores,
/// not the thread count, bound how fast commands go out beyond that.
pub const FAN_OUT: usize = 32;

/// Waits of up to a timeout each (connecting, readiness, port probes): every item at once, so
/// unreachable ones cost one timeout in all, not one per wave of [`FAN_OUT`].
pub fn all<I, T, F>(items: &[I], f: F) -> Vec<std::thread::Result<T>>
where
    I: Sync,
    T: Send,
    F: Fn(&I) -> T + Sync,
{
    each(items, items.len(), f)
}

/// Runs `f` on every item, at most `bound` at a time (0 is taken as 1), each call on a worker
/// thread under this thread's deadline (`deadline::carry`). One result per item, in `items`
/// order: `Err` holds the payload of a panic in `f` for that item (the other items still run).
pub fn each<I, T, F>(items: &[I], bound: usize, f: F) -> Vec<std::thread::Result<T>>
where
    I: Sync,
    T: Send,
    F: Fn(&I) -> T + Sync,
{
    let workers = bound.max(1).min(items.len());
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<std::thread::Result<T>>>> =
        items.iter().map(|_| Mutex::new(None)).collect();
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { return };
            let result = catch_unwind(AssertUnwindSafe(|| f(item)));
            *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
        }
    };
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(deadline::carry(work));
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or_else(|| Err(Box::new("fan-out worker ended without a result")))
        })
        .collect()
}

/// A panic payload in words (the `&str` or `String` it was raised with).
pub fn panic_words(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn every_item_runs_once_in_order_and_no_more_than_the_bound_at_once() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let items: Vec<usize> = (0..100).collect();
        let out = each(&items, 7, |&i| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(2));
            running.fetch_sub(1, Ordering::SeqCst);
            i * 2
        });
        let out: Vec<usize> = out.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(out, (0..100).map(|i| i * 2).collect::<Vec<_>>());
        assert!(most.load(Ordering::SeqCst) <= 7, "{most:?}");
        assert!(
            most.load(Ordering::SeqCst) >= 2,
            "ran in parallel: {most:?}"
        );
        // Bound 0 is one at a time; no items is no work.
        assert_eq!(each(&[1, 2], 0, |&x| x).len(), 2);
        assert!(each(&[] as &[u8], 4, |&x| x).is_empty());
    }

    #[test]
    fn a_panic_is_that_items_error_and_the_others_run() {
        let out = each(&[1, 2, 3], 2, |&x| {
            if x == 2 {
                panic!("item {x} broke");
            }
            x
        });
        assert_eq!(*out[0].as_ref().unwrap(), 1);
        assert_eq!(
            panic_words(out[1].as_ref().unwrap_err().as_ref()),
            "item 2 broke"
        );
        assert_eq!(*out[2].as_ref().unwrap(), 3);
    }

    #[test]
    fn workers_run_under_the_callers_deadline() {
        let d = Instant::now() + Duration::from_secs(5);
        let seen = deadline::within(d, || each(&[0; 40], 8, |_| deadline::current()));
        assert!(seen.into_iter().all(|s| s.unwrap() == Some(d)));
    }
}
