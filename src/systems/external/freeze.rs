//! Client stalls for external systems: while `--nemesis stall` holds a client thread back, that
//! thread's client process (its whole process group) is frozen with SIGSTOP and thawed with
//! SIGCONT when the stall ends, as a GC pause freezes a whole program — its library's own
//! timers too (a ZooKeeper session's heartbeats stop, so the session and its ephemeral lock
//! nodes expire, as they would for a paused application).
//!
//! Owns the registry of each thread's current client process ([`ClientPids`], kept up to date by
//! `client` at every start) and the watcher that follows the stall board. Does not own which op
//! is held back or for how long (`generator::stall`), nor the nemesis ops (`nemesis::stall`).
//! An in-process (Rust) client cannot be frozen this way; the generator's hold is its stall.

use crate::generator::stall::StallBoard;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How often the watcher looks at the stall board.
const POLL: Duration = Duration::from_millis(5);

/// Each worker thread's current client process (pid of its process group leader).
#[derive(Debug, Clone, Default)]
pub struct ClientPids(Arc<Mutex<HashMap<usize, u32>>>);

impl ClientPids {
    /// Record that `thread`'s client now runs as `pid`.
    pub fn set(&self, thread: usize, pid: u32) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(thread, pid);
    }

    fn get(map: &Mutex<HashMap<usize, u32>>, thread: usize) -> Option<u32> {
        map.lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&thread)
            .copied()
    }

    /// Follow `board` on a background thread: freeze the client process of every stalled thread
    /// until its stall ends. The thread ends (thawing what it froze) once these pids are dropped.
    pub fn watch(&self, board: StallBoard) {
        let pids = Arc::downgrade(&self.0);
        let spawned = std::thread::Builder::new()
            .name("stall-freeze".into())
            .spawn(move || follow(&board, &pids));
        if let Err(e) = spawned {
            eprintln!("warning: client stalls will not freeze client processes: {e}");
        }
    }
}

/// Send `signal` to the process group `pid` leads; false when there is no such group.
fn signal_group(pid: u32, signal: libc::c_int) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) with a negative pid signals the group the client was started as the
    // leader of (`client::start` sets `process_group(0)`); no memory is involved.
    unsafe { libc::kill(-pid, signal) == 0 }
}

fn follow(board: &StallBoard, pids: &Weak<Mutex<HashMap<usize, u32>>>) {
    // Stall id → the process frozen for it.
    let mut frozen: HashMap<u64, u32> = HashMap::new();
    loop {
        let Some(map) = pids.upgrade() else {
            for pid in frozen.values() {
                signal_group(*pid, libc::SIGCONT);
            }
            return;
        };
        let running = board.unfinished();
        for s in &running {
            if frozen.contains_key(&s.id) {
                continue;
            }
            if let Some(pid) = ClientPids::get(&map, s.thread)
                && signal_group(pid, libc::SIGSTOP)
            {
                frozen.insert(s.id, pid);
            }
        }
        frozen.retain(|id, pid| {
            let still = running.iter().any(|s| s.id == *id);
            if !still {
                signal_group(*pid, libc::SIGCONT);
            }
            still
        });
        drop(map);
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state letter of `pid` in /proc (T = stopped).
    fn state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = stat.rsplit_once(") ").unwrap().1;
        after.chars().next().unwrap()
    }

    fn wait_for(pid: u32, want: char) -> bool {
        (0..400).any(|_| {
            std::thread::sleep(Duration::from_millis(5));
            state(pid) == want
        })
    }

    #[test]
    fn a_stalled_threads_process_is_frozen_until_the_stall_ends() {
        use std::os::unix::process::CommandExt;
        let spawn = || {
            std::process::Command::new("sleep")
                .arg("30")
                .process_group(0)
                .spawn()
                .unwrap()
        };
        let (mut stalled, mut other) = (spawn(), spawn());
        let pids = ClientPids::default();
        pids.set(0, stalled.id());
        pids.set(1, other.id());
        let board = StallBoard::new();
        pids.watch(board.clone());
        board.post(60_000, 60_000);
        // Claim the request the way the generator's gate does: thread 0 is held back.
        let stall = crate::generator::stall::claim_for_test(&board, 0);
        assert!(wait_for(stalled.id(), 'T'), "not frozen");
        assert_ne!(
            state(other.id()),
            'T',
            "another thread's process was frozen"
        );
        board.end_all();
        assert!(
            wait_for(stalled.id(), 'S'),
            "not thawed after stall {stall}"
        );
        // Dropping the registry ends the watcher.
        drop(pids);
        for c in [&mut stalled, &mut other] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }
}
