//! Disk faults the lose-unsynced layer injects while told to (`inject {…}` on its control
//! socket, `clear` to stop): writes or fsyncs failing with EIO or ENOSPC (all, or a seeded
//! fraction), a failed fsync that also drops the file's unsynced writes, and added latency.
//!
//! Owns the active fault, its seeded draws and the counters `stats` reports. The fault's shape
//! is `faults::disk::DiskFault` (pure, shared with the nemesis); rolling a file back is the undo
//! log's (`lazyfs::undo`) and the FUSE handlers call the gates here (`lazyfs::fs`). A delay
//! sleeps in the FUSE worker serving the request, holding no lock, as a slow device would.

use crate::faults::disk::DiskFault;
use fuser::Errno;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Mutex;
use std::time::Duration;

/// What the gates did since the layer started.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct InjectCounters {
    /// Writes failed on purpose.
    pub writes_failed: u64,
    /// Fsyncs failed on purpose.
    pub fsyncs_failed: u64,
    /// Files rolled back after a failed fsync.
    pub files_dropped: u64,
    /// Operations delayed.
    pub delayed: u64,
}

/// A failed fsync: the error and whether the file's unsynced writes are to be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsyncFailure {
    /// What the caller gets.
    pub errno: i32,
    /// Roll the file back to its last sync.
    pub drop_unsynced: bool,
}

/// The active disk fault, if any.
#[derive(Default)]
pub struct Injector {
    active: Mutex<Option<(DiskFault, ChaCha8Rng)>>,
    counters: Mutex<InjectCounters>,
}

impl Injector {
    /// Start `fault` (replacing any active one), or stop with `None`.
    pub fn set(&self, fault: Option<DiskFault>) {
        let mut a = self.active.lock().unwrap_or_else(|p| p.into_inner());
        *a = fault.map(|f| {
            let rng = ChaCha8Rng::seed_from_u64(f.seed);
            (f, rng)
        });
    }

    /// The active fault.
    pub fn active(&self) -> Option<DiskFault> {
        self.active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|(f, _)| f.clone())
    }

    /// Decide one operation: (delay, fail?) under the lock, then sleep without it.
    fn gate(&self, write: bool) -> (u64, Option<(i32, bool)>) {
        let mut a = self.active.lock().unwrap_or_else(|p| p.into_inner());
        let Some((f, rng)) = a.as_mut() else {
            return (0, None);
        };
        let (delay, err) = if write {
            (f.write_delay_ms, f.write_error)
        } else {
            (f.fsync_delay_ms, f.fsync_error)
        };
        let fail = err.filter(|_| f.probability >= 1.0 || rng.random::<f64>() < f.probability);
        (
            delay,
            fail.map(|e| (e.code(), !write && f.drop_unsynced_on_fsync_error)),
        )
    }

    fn count(&self, f: impl FnOnce(&mut InjectCounters)) {
        f(&mut self.counters.lock().unwrap_or_else(|p| p.into_inner()));
    }

    fn sleep(&self, ms: u64) {
        if ms > 0 {
            self.count(|c| c.delayed += 1);
            std::thread::sleep(Duration::from_millis(ms));
        }
    }

    /// Before a write (or fallocate): wait the added latency; the error to return instead, if
    /// this one fails.
    pub fn before_write(&self) -> Result<(), Errno> {
        let (delay, fail) = self.gate(true);
        self.sleep(delay);
        match fail {
            Some((code, _)) => {
                self.count(|c| c.writes_failed += 1);
                Err(Errno::from_i32(code))
            }
            None => Ok(()),
        }
    }

    /// Before an fsync: wait the added latency; the failure to report, if this one fails.
    pub fn before_fsync(&self) -> Result<(), FsyncFailure> {
        let (delay, fail) = self.gate(false);
        self.sleep(delay);
        match fail {
            Some((errno, drop_unsynced)) => {
                self.count(|c| {
                    c.fsyncs_failed += 1;
                    c.files_dropped += u64::from(drop_unsynced);
                });
                Err(FsyncFailure {
                    errno,
                    drop_unsynced,
                })
            }
            None => Ok(()),
        }
    }

    /// The active fault and the counters, for `stats`.
    pub fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "fault": self.active(),
            "counters": *self.counters.lock().unwrap_or_else(|p| p.into_inner()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::disk::DiskErrno;

    fn fault(v: serde_json::Value) -> DiskFault {
        DiskFault::from_value(&v).unwrap()
    }

    #[test]
    fn gates_pass_until_told_and_fail_what_the_fault_names() {
        let i = Injector::default();
        assert!(i.before_write().is_ok() && i.before_fsync().is_ok());
        i.set(Some(fault(serde_json::json!({"write_error": "ENOSPC"}))));
        assert_eq!(i.before_write(), Err(Errno::from_i32(libc::ENOSPC)));
        assert!(i.before_fsync().is_ok(), "only writes fail");
        i.set(Some(fault(serde_json::json!({
            "fsync_error": "EIO", "drop_unsynced_on_fsync_error": true
        }))));
        assert!(i.before_write().is_ok());
        assert_eq!(
            i.before_fsync(),
            Err(FsyncFailure {
                errno: libc::EIO,
                drop_unsynced: true
            })
        );
        i.set(None);
        assert!(i.before_fsync().is_ok());
        let s = i.stats();
        assert_eq!(s["counters"]["writes_failed"], 1);
        assert_eq!(s["counters"]["fsyncs_failed"], 1);
        assert_eq!(s["counters"]["files_dropped"], 1);
        assert_eq!(s["fault"], serde_json::Value::Null);
    }

    #[test]
    fn a_fraction_fails_about_that_often_and_the_seed_repeats_it() {
        let run = |seed: u64| {
            let i = Injector::default();
            let mut f = fault(serde_json::json!({"fsync_error": "EIO", "probability": 0.25}));
            f.seed = seed;
            i.set(Some(f));
            (0..4000)
                .map(|_| i.before_fsync().is_err())
                .collect::<Vec<bool>>()
        };
        let a = run(9);
        let failed = a.iter().filter(|x| **x).count();
        assert!((800..1200).contains(&failed), "{failed} of 4000");
        assert_eq!(a, run(9));
        assert_ne!(a, run(10));
        assert_eq!(DiskErrno::Eio.to_string(), "EIO");
    }

    #[test]
    fn a_delay_is_slept_per_operation() {
        let i = Injector::default();
        i.set(Some(fault(serde_json::json!({"write_delay_ms": 30}))));
        let t = std::time::Instant::now();
        i.before_write().unwrap();
        assert!(t.elapsed() >= Duration::from_millis(30));
        assert_eq!(i.stats()["counters"]["delayed"], 1);
    }
}
