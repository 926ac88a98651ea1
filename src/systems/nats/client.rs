//! The NATS JetStream client of one worker thread (the official `async-nats` crate), connected to
//! its own node only (discovered servers ignored), performing the log workload's ops
//! (`generator::log`): key `k` is stream `LOG{k}` with subject `log.{k}`.
//!
//! - `send`: a JetStream publish of the value; the server's ack gives the stream sequence, the
//!   op's offset (`ok [seq, value]`). No responders (no stream leader took it), a payload too
//!   large, or an error response from the server = `fail`; a timeout or a lost connection after
//!   the publish was handed to the connection = `info`.
//! - With a duplicate window (`--nats-duplicate-window`), each send carries its value as the
//!   `Nats-Msg-Id`, and after each send the thread publishes again, with the same id, every
//!   message it had acknowledged at least half the window ago (a producer's retry; at most
//!   [`RESEND_PER_OP`] per op, each in a task of its own so the send's latency is its own). The
//!   stream must call each a duplicate;
//!   one it stores again shows in the reads at a second offset, which the log checker counts as
//!   duplicated. A resend's outcome never changes the send op's completion.
//! - `poll`: direct gets (`allow_direct`: served by a replica, the connected node's when it holds
//!   one) of the next sequences after this thread's position on the stream, up to
//!   [`POLL_BATCH`], keeping the contiguous run found from the position (a replica that lags
//!   simply has nothing yet); the position moves past the last one.
//! - `read`: once the stream's followers are all current (at most [`SETTLE_WAIT`]), the stream's
//!   last sequence (stream info, from the leader), then a direct get of every
//!   sequence from 1 to it and on past it while messages are found; missing sequences are left
//!   out, so a hole in a replica shows as a skipped offset. A stream the cluster says does not
//!   exist (JetStream error 10059, e.g. its metadata lost to a power failure) reads as empty.
//!
//! With fewer replicas than nodes, a node holding none has its direct gets answered by whichever
//! replica the server picks, so its reads mix replicas; with `--nats-replicas` = the node count
//! each node's read is its own replica's. Reads change nothing, so a read that failed is `fail`. Sequences are the server's
//! (`Nats-Sequence` of each reply), never the one asked for. Does not own the cluster lifecycle
//! (`db`).

use crate::client::{Client, Completion};
use crate::generator::log::{POLL, READ, SEND};
use async_nats::jetstream::{
    self,
    context::{GetStreamErrorKind, PublishErrorKind},
    stream::DirectGetErrorKind,
};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Resends one send op makes at most (the rest wait for the next op).
pub const RESEND_PER_OP: usize = 4;

/// Takes from the front of `queue` (oldest acknowledgement first) the messages acknowledged at
/// least `after` before `now`, at most `max`: the resends due.
fn take_due(
    queue: &mut VecDeque<(String, i64, Instant)>,
    now: Instant,
    after: Duration,
    max: usize,
) -> Vec<(String, i64)> {
    let mut due = Vec::new();
    while due.len() < max
        && queue
            .front()
            .is_some_and(|(_, _, acked)| now.saturating_duration_since(*acked) >= after)
    {
        if let Some((key, v, _)) = queue.pop_front() {
            due.push((key, v));
        }
    }
    due
}

/// Sequences one poll asks for.
pub const POLL_BATCH: u64 = 32;
/// Direct gets in flight at once during a read.
const READ_PARALLEL: usize = 64;
/// How long a whole-log read waits for the stream's followers to be current before reading.
const SETTLE_WAIT: Duration = Duration::from_secs(15);
/// The bound of a whole-log read (thousands of direct gets), and so of every op of this client
/// (sends and polls bound themselves by the op timeout).
const READ_BOUND: Duration = Duration::from_secs(60);

/// Stream name of log `key`.
pub fn stream_name(key: &str) -> String {
    format!("LOG{key}")
}

/// Subject of log `key`.
pub fn subject(key: &str) -> String {
    format!("log.{key}")
}

/// A connection to one server (no reconnects to other cluster members) and its JetStream
/// context, each request bounded by `timeout`.
pub async fn connect(
    url: &str,
    timeout: Duration,
) -> Result<(async_nats::Client, jetstream::Context), String> {
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(timeout)
        .request_timeout(Some(timeout))
        .ignore_discovered_servers()
        .connect(url)
        .await
        .map_err(|e| format!("connecting to {url}: {e}"))?;
    let mut js = jetstream::new(client.clone());
    js.set_timeout(timeout);
    Ok((client, js))
}

/// One worker thread's client.
pub struct NatsClient {
    url: String,
    node: String,
    timeout: Duration,
    conn: Option<(async_nats::Client, jetstream::Context)>,
    /// Per key: the next sequence this thread polls.
    cursors: HashMap<String, u64>,
    /// With a duplicate window: how long after its ack a message is published again.
    resend_after: Option<Duration>,
    /// Messages acknowledged to this thread and not yet resent: key, value, when acknowledged.
    to_resend: VecDeque<(String, i64, Instant)>,
}

impl NatsClient {
    /// A client of `node` at `url`; connects on its first op. `resend_after`: with a duplicate
    /// window, half of it (sends carry message ids and are published again that much later).
    pub fn new(
        node: &str,
        url: String,
        timeout: Duration,
        resend_after: Option<Duration>,
    ) -> NatsClient {
        NatsClient {
            url,
            node: node.to_string(),
            timeout,
            conn: None,
            cursors: HashMap::new(),
            resend_after,
            to_resend: VecDeque::new(),
        }
    }

    async fn context(&mut self) -> Result<jetstream::Context, String> {
        if let Some((_, js)) = &self.conn {
            return Ok(js.clone());
        }
        let conn = connect(&self.url, self.timeout).await?;
        let js = conn.1.clone();
        self.conn = Some(conn);
        Ok(js)
    }

    /// Publishes `v` on log `key` and waits for the stream's ack; with `with_id`, the value is
    /// also the message id.
    async fn publish(
        js: &jetstream::Context,
        key: &str,
        v: i64,
        with_id: bool,
    ) -> Result<jetstream::publish::PublishAck, jetstream::context::PublishError> {
        let payload = v.to_string();
        let ack = if with_id {
            let publish = jetstream::message::PublishMessage::build()
                .message_id(payload.clone())
                .payload(payload.into());
            js.send_publish(subject(key), publish).await?
        } else {
            js.publish(subject(key), payload.into()).await?
        };
        ack.await
    }

    /// Publishes again (same message id), each in a task of its own bounded by the op timeout
    /// so no op's latency includes it, the messages acknowledged at least `resend_after` ago, at
    /// most [`RESEND_PER_OP`]. The stream's answer is not recorded: a second copy shows in the
    /// reads.
    fn resend_due(&mut self, js: &jetstream::Context) {
        let Some(after) = self.resend_after else {
            return;
        };
        for (key, v) in take_due(&mut self.to_resend, Instant::now(), after, RESEND_PER_OP) {
            let (js, timeout) = (js.clone(), self.timeout);
            tokio::spawn(async move {
                let _ = tokio::time::timeout(timeout, Self::publish(&js, &key, v, true)).await;
            });
        }
    }

    fn fail(&self, error: impl std::fmt::Display, value: &Value) -> Completion {
        Completion::Fail {
            error: format!("{}: {error}", self.node),
            value: value.clone(),
        }
    }

    async fn send(&mut self, js: jetstream::Context, key: &str, value: &Value) -> Completion {
        let Some(v) = value.as_i64() else {
            return self.fail(format!("send needs an integer, got {value}"), value);
        };
        self.resend_due(&js);
        let with_id = self.resend_after.is_some();
        let sent = tokio::time::timeout(self.timeout, Self::publish(&js, key, v, with_id)).await;
        match sent {
            Ok(Ok(ack)) => {
                if self.resend_after.is_some() {
                    self.to_resend
                        .push_back((key.to_string(), v, Instant::now()));
                }
                Completion::Ok {
                    value: json!([ack.sequence, v]),
                    version: None,
                }
            }
            Ok(Err(e)) => {
                // A JetStream error response is the server saying no (not stored).
                let refused = std::error::Error::source(&e)
                    .is_some_and(|s| s.is::<async_nats::jetstream::Error>());
                match e.kind() {
                    PublishErrorKind::StreamNotFound | PublishErrorKind::MaxPayloadExceeded => {
                        self.fail(e, value)
                    }
                    PublishErrorKind::WrongLastMessageId | PublishErrorKind::WrongLastSequence => {
                        self.fail(e, value)
                    }
                    PublishErrorKind::Other if refused => {
                        self.fail(format!("{e}: {}", crate::client::error_chain(&e)), value)
                    }
                    _ => Completion::Info {
                        error: format!("{}: {e}", self.node),
                    },
                }
            }
            Err(_) => Completion::Info {
                error: format!(
                    "{}: no publish ack within {} ms",
                    self.node,
                    self.timeout.as_millis()
                ),
            },
        }
    }

    /// Direct gets of `seqs`, in order: `Ok(None)` for a sequence the node has no message at.
    async fn gets(
        js: &jetstream::Context,
        key: &str,
        seqs: impl Iterator<Item = u64>,
    ) -> Result<Vec<Option<(u64, i64)>>, String> {
        let stream = js
            .get_stream_no_info(stream_name(key))
            .await
            .map_err(|e| format!("stream {}: {e}", stream_name(key)))?;
        let replies: Vec<_> = futures_util::stream::iter(seqs)
            .map(|seq| {
                let stream = &stream;
                async move { (seq, stream.direct_get(seq).await) }
            })
            .buffered(READ_PARALLEL)
            .collect()
            .await;
        replies
            .into_iter()
            .map(|(seq, r)| match r {
                Ok(m) => {
                    let text = String::from_utf8_lossy(&m.payload);
                    let v = text.trim().parse::<i64>().map_err(|_| {
                        format!(
                            "message {} of stream {}: not an integer: {text:?}",
                            m.sequence,
                            stream_name(key)
                        )
                    })?;
                    Ok(Some((m.sequence, v)))
                }
                Err(e) if matches!(e.kind(), DirectGetErrorKind::NotFound) => Ok(None),
                Err(e) => Err(format!(
                    "direct get of sequence {seq} of stream {}: {e}",
                    stream_name(key)
                )),
            })
            .collect()
    }

    async fn poll(&mut self, js: jetstream::Context, key: &str) -> Completion {
        let from = *self.cursors.get(key).unwrap_or(&1);
        let got =
            tokio::time::timeout(self.timeout, Self::gets(&js, key, from..from + POLL_BATCH)).await;
        let got = match got {
            Ok(Ok(got)) => got,
            Ok(Err(e)) => return self.fail(e, &Value::Null),
            Err(_) => {
                return self.fail(
                    format!("poll timed out after {} ms", self.timeout.as_millis()),
                    &Value::Null,
                );
            }
        };
        let pairs: Vec<(u64, i64)> = got.into_iter().map_while(|p| p).collect();
        if let Some(&(last, _)) = pairs.last() {
            self.cursors.insert(key.to_string(), last + 1);
        }
        Completion::Ok {
            value: json!(
                pairs
                    .iter()
                    .map(|&(o, v)| json!([o, v]))
                    .collect::<Vec<_>>()
            ),
            version: None,
        }
    }

    /// The stream's last sequence, once it has a leader and every follower is current (a
    /// follower restarted by a fault catches up first), or after [`SETTLE_WAIT`] whatever their
    /// state: the read then shows what the nodes serve.
    /// `None`: the cluster answers that the stream does not exist (JetStream error 10059): as
    /// the nodes serve it, the log is empty (a power loss can take a stream's metadata with it).
    async fn settled_last(js: &jetstream::Context, name: &str) -> Result<Option<u64>, String> {
        let give_up = tokio::time::Instant::now() + SETTLE_WAIT;
        loop {
            let mut stream = match js.get_stream(name).await {
                Ok(stream) => stream,
                Err(e) => match e.kind() {
                    GetStreamErrorKind::JetStream(j)
                        if j.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND =>
                    {
                        return Ok(None);
                    }
                    _ => return Err(format!("stream {name}: {e}")),
                },
            };
            let info = stream
                .info()
                .await
                .map_err(|e| format!("stream {name} info: {e}"))?;
            let settled = info
                .cluster
                .as_ref()
                .is_none_or(|c| c.leader.is_some() && c.replicas.iter().all(|p| p.current));
            if settled || tokio::time::Instant::now() >= give_up {
                return Ok(Some(info.state.last_sequence));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn read(&mut self, js: jetstream::Context, key: &str) -> Completion {
        let name = stream_name(key);
        let last = match Self::settled_last(&js, &name).await {
            Ok(Some(last)) => last,
            Ok(None) => {
                return Completion::Ok {
                    value: json!([]),
                    version: None,
                };
            }
            Err(e) => return self.fail(e, &Value::Null),
        };
        let mut pairs: Vec<(u64, i64)> = Vec::new();
        if last > 0 {
            match Self::gets(&js, key, 1..=last).await {
                Ok(got) => pairs.extend(got.into_iter().flatten()),
                Err(e) => return self.fail(e, &Value::Null),
            }
        }
        // Past the last sequence the leader named: on while this node has more (a replica that
        // diverged may hold a longer log).
        let mut from = last + 1;
        loop {
            match Self::gets(&js, key, from..from + POLL_BATCH).await {
                Ok(got) if got.iter().all(Option::is_none) => break,
                Ok(got) => pairs.extend(got.into_iter().flatten()),
                Err(e) => return self.fail(e, &Value::Null),
            }
            from += POLL_BATCH;
        }
        Completion::Ok {
            value: json!(
                pairs
                    .iter()
                    .map(|&(o, v)| json!([o, v]))
                    .collect::<Vec<_>>()
            ),
            version: None,
        }
    }
}

#[async_trait::async_trait]
impl Client for NatsClient {
    async fn invoke(&mut self, f: &str, key: Option<&str>, value: &Value) -> Completion {
        let Some(key) = key else {
            return self.fail(format!("{f} needs a key (a log)"), value);
        };
        let js = match tokio::time::timeout(self.timeout, self.context()).await {
            Ok(Ok(js)) => js,
            Ok(Err(e)) => return self.fail(e, value),
            Err(_) => {
                return self.fail(format!("connecting to {} timed out", self.url), value);
            }
        };
        match f {
            SEND => self.send(js, key, value).await,
            POLL => self.poll(js, key).await,
            READ => self.read(js, key).await,
            other => self.fail(format!("the NATS client has no op {other:?}"), value),
        }
    }

    fn op_bound(&self) -> Option<Duration> {
        Some(READ_BOUND.max(self.timeout * 2))
    }

    async fn close(&mut self) {
        if let Some((client, _)) = self.conn.take() {
            let _ = client.drain().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resends_are_due_oldest_first_once_half_the_window_passed_and_at_most_max_per_op() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut queue: VecDeque<_> = (0..6)
            .map(|i| ("0".to_string(), i, at(i as u64 * 100)))
            .collect();
        let after = Duration::from_millis(1_000);
        assert!(take_due(&mut queue, at(999), after, 4).is_empty());
        assert_eq!(queue.len(), 6);
        let due = take_due(&mut queue, at(1_250), after, 4);
        assert_eq!(
            due,
            [
                ("0".to_string(), 0),
                ("0".to_string(), 1),
                ("0".to_string(), 2)
            ]
        );
        let due = take_due(&mut queue, at(10_000), after, 2);
        assert_eq!(due.iter().map(|d| d.1).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(queue.len(), 1);
    }
}
