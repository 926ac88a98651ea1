//! The `stall` nemesis ops: post a stall request on the client generator's board
//! (`generator::stall`), wait until a client thread claims it, and wait for it to end.
//!
//! Owns the two verbs' behaviour and their completion values. `start-stall` spans the stall
//! (`faults::SPANNING_VERBS`): it completes when the stalled thread runs again, with `{"process",
//! "thread", "f", "key", "duration_ms", "ran_ms"}` — the stalled process named for the history,
//! `ran_ms` how long it was seen stalled, so the fault band covers exactly the stall.
//! `stop-stall` ends whatever is left (nothing, normally). Does not own which op is held back or
//! for how long (the generator's `StallGate`). Touches no node: a stall is client-side.

use crate::client::Completion;
use crate::generator::stall::{Stall, StallBoard};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

pub use crate::generator::stall::{DEFAULT_MAX_MS, DEFAULT_MIN_MS};
/// How long `start-stall` waits for a thread to reach an op it may stall.
pub const CLAIM_WAIT_MS: u64 = 10_000;
/// Slack past a stall's drawn duration before `stop-stall` gives up waiting for it.
const END_SLACK_MS: u64 = 2_000;
const POLL: Duration = Duration::from_millis(5);

fn stall_json(s: &Stall) -> Value {
    json!({
        "process": s.process,
        "thread": s.thread,
        "f": s.f,
        "key": s.key,
        "duration_ms": s.duration_ms,
    })
}

/// `start-stall`: post a request with the op value's `min_ms`/`max_ms`, wait up to
/// [`CLAIM_WAIT_MS`] for a thread to claim it, then until the stall ends (at most its drawn
/// duration plus slack). Unclaimed: the request is withdrawn and the op completes with an error
/// (no fault took effect).
pub async fn start(board: &StallBoard, value: &Value) -> Completion {
    let ms = |k: &str, d: u64| value.get(k).and_then(Value::as_u64).unwrap_or(d);
    let id = board.post(ms("min_ms", DEFAULT_MIN_MS), ms("max_ms", DEFAULT_MAX_MS));
    let deadline = Instant::now() + Duration::from_millis(CLAIM_WAIT_MS);
    let stall = loop {
        if let Some(s) = board.claimed(id) {
            break s;
        }
        if Instant::now() >= deadline && board.withdraw(id) {
            return Completion::Info {
                error: format!(
                    "no client thread reached an op to stall within {} s: nothing stalled",
                    CLAIM_WAIT_MS / 1000
                ),
            };
        }
        tokio::time::sleep(POLL).await;
    };
    let claimed_at = Instant::now();
    let end_by = claimed_at + Duration::from_millis(stall.duration_ms + END_SLACK_MS);
    while board.claimed(id).is_some_and(|s| !s.ended) && Instant::now() < end_by {
        tokio::time::sleep(POLL).await;
    }
    let mut value = stall_json(&stall);
    value["ran_ms"] = (claimed_at.elapsed().as_millis() as u64).into();
    Completion::Ok {
        value,
        version: None,
    }
}

/// `stop-stall`: wait until every claimed stall has ended (its thread runs again), at most its
/// drawn duration plus slack; stalls still running then are marked ended (their threads resume
/// when the generator next runs them, or never if the phase ended).
pub async fn stop(board: &StallBoard) -> Completion {
    let waiting = board.unfinished();
    let longest_ms = waiting.iter().map(|s| s.duration_ms).max().unwrap_or(0);
    let deadline = Instant::now() + Duration::from_millis(longest_ms + END_SLACK_MS);
    while !board.unfinished().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
    }
    let cut = board.end_all();
    Completion::Ok {
        value: json!({
            "ended": waiting.iter().map(stall_json).collect::<Vec<_>>(),
            "cut_short": cut.iter().map(|s| s.process).collect::<Vec<_>>(),
        }),
        version: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_unclaimed_stall_is_withdrawn_with_an_error() {
        let board = StallBoard::new();
        let c = start(&board, &json!({"min_ms": 1, "max_ms": 2})).await;
        assert!(
            matches!(&c, Completion::Info { error } if error.contains("nothing stalled")),
            "{c:?}"
        );
        let c = stop(&board).await;
        assert!(matches!(c, Completion::Ok { .. }));
    }
}
