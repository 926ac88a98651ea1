//! The controller's end of the JSON-lines protocol: one local client process per worker thread,
//! fed one request line per op, restarted whenever it breaks the protocol.
//!
//! Owns starting the spec's client program (its own process group, stdin/stdout piped, stderr
//! copied to the run's logs) in the background as soon as the client is made, the `init`
//! handshake under its own (longer) timeout, the per-op exchange under the op timeout, and
//! turning every way a client can misbehave (exit, hang, wrong id, malformed or endless line,
//! an op abandoned by the interpreter) into one `info` op plus a restart — or `fail` when the op
//! was never sent (the process could not start, or is still starting). Does not own the message
//! shapes (`protocol`) nor which program to run (`spec`).

use super::protocol::{
    Init, MAX_LINE_BYTES, ProtocolError, ProtocolErrorKind, excerpt, parse_init_reply, parse_reply,
    request_line,
};
use crate::client::{Client, Completion};
use serde_json::Value;
use std::collections::VecDeque;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout_at};

/// Bytes of a client's stderr kept for error messages.
const STDERR_TAIL_BYTES: usize = 4096;
/// Least time between two starts of one thread's client (a client that dies at once is not
/// restarted in a busy loop).
const RESTART_BACKOFF: Duration = Duration::from_millis(100);
/// How long a killed or exiting client gets to be reaped before we stop waiting.
const REAP_WAIT: Duration = Duration::from_millis(500);

/// How to run one thread's client.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Program and arguments; a relative program path with a `/` is taken from `cwd`.
    pub argv: Vec<String>,
    /// Working directory (the spec's folder).
    pub cwd: PathBuf,
    /// The `init` message.
    pub init: Init,
    /// How long the client has to answer each request.
    pub timeout_ms: u64,
    /// How long a new process has to answer `init` (ops meanwhile fail: they are not sent).
    pub init_timeout_ms: u64,
    /// Where its stderr is appended (with a line per start and stop); `None` keeps only a tail.
    pub stderr_log: Option<PathBuf>,
    /// Where each start records the process's pid (so a stall can freeze it).
    pub pids: Option<super::freeze::ClientPids>,
}

/// The client's stderr log, shared with the task copying its stderr.
type Log = Option<Arc<Mutex<std::fs::File>>>;

/// A line of our own in the client's stderr log.
fn note(log: &Log, what: &str) {
    if let Some(log) = log
        && let Ok(mut f) = log.lock()
    {
        let _ = writeln!(f, "[shakedown] {what}");
    }
}

/// A running client process that answered `init`.
struct Running {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    tail: Arc<Mutex<VecDeque<u8>>>,
    stderr_copy: JoinHandle<()>,
}

impl Running {
    /// SIGKILL the client's whole process group (it was started as its leader).
    fn kill_group(&mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) with a negative pid signals the group we created; no memory involved.
            unsafe {
                libc::kill(-(pid as i32), libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
    }

    /// Write one line and read one back.
    async fn send_and_read(&mut self, line: &str) -> std::io::Result<LineRead> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.stdin.write_all(&bytes).await?;
        self.stdin.flush().await?;
        read_line_bounded(&mut self.stdout, MAX_LINE_BYTES).await
    }

    /// After end of output: how the process ended, plus its last stderr line.
    async fn exit_words(mut self, log: &Log) -> String {
        let status = tokio::time::timeout(REAP_WAIT, self.child.wait()).await;
        // Let the stderr copier drain what the process wrote before it died.
        let _ = tokio::time::timeout(REAP_WAIT, &mut self.stderr_copy).await;
        let how = match status {
            Ok(Ok(s)) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
                (Some(c), _) => format!("the client exited with status {c}"),
                (None, Some(sig)) => format!("the client was killed by signal {sig}"),
                _ => "the client exited".into(),
            },
            _ => "the client closed its output".into(),
        };
        note(log, &how);
        format!("{how}{}", stderr_hint(&self.tail))
    }

    /// Kill the process and wait (briefly) until it is gone.
    async fn stop(mut self) {
        self.kill_group();
        let _ = tokio::time::timeout(REAP_WAIT, self.child.wait()).await;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill_group();
        self.stderr_copy.abort();
    }
}

/// The client's last stderr line, for messages (empty when it wrote none).
fn stderr_hint(tail: &Mutex<VecDeque<u8>>) -> String {
    let bytes: Vec<u8> = tail
        .lock()
        .map(|t| t.iter().copied().collect())
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    match text.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(l) => format!("; its last stderr line: {}", excerpt(l)),
        None => String::new(),
    }
}

/// What reading one reply line found.
enum LineRead {
    Line(String),
    Eof,
    TooLong,
}

/// Read one `\n`-terminated line of at most `max` bytes. End of output (also in the middle of a
/// line) is `Eof`: the client died before finishing its answer.
async fn read_line_bounded<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    max: usize,
) -> std::io::Result<LineRead> {
    let mut buf = Vec::new();
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(LineRead::Eof);
        }
        if let Some(i) = chunk.iter().position(|b| *b == b'\n') {
            buf.extend_from_slice(&chunk[..i]);
            r.consume(i + 1);
            return Ok(LineRead::Line(String::from_utf8_lossy(&buf).into_owned()));
        }
        let n = chunk.len();
        buf.extend_from_slice(chunk);
        r.consume(n);
        if buf.len() > max {
            return Ok(LineRead::TooLong);
        }
    }
}

/// Start the client process (not before `not_before`) and complete the `init` handshake within
/// `init_timeout_ms`. The process is killed when this fails or its future is dropped.
async fn start(
    launch: Arc<Launch>,
    log: Log,
    not_before: Option<Instant>,
) -> Result<Running, ProtocolError> {
    let t = launch.init.thread;
    let start_err = |d: String| ProtocolError::new(ProtocolErrorKind::Start, d);
    if let Some(at) = not_before {
        tokio::time::sleep_until(at).await;
    }
    let mut program = PathBuf::from(&launch.argv[0]);
    if program.is_relative() && launch.argv[0].contains('/') {
        program = launch.cwd.join(program);
    }
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(&launch.argv[1..])
        .current_dir(&launch.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "no such program (or working directory)".into(),
            std::io::ErrorKind::PermissionDenied => "permission denied (not executable?)".into(),
            _ => e.to_string(),
        };
        start_err(format!(
            "thread {t}: cannot start {} in {}: {why}",
            program.display(),
            launch.cwd.display()
        ))
    })?;
    let (Some(stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(start_err(format!("thread {t}: client pipes missing")));
    };
    let tail: Arc<Mutex<VecDeque<u8>>> = Arc::default();
    let (tail2, log2) = (tail.clone(), log.clone());
    let stderr_copy = tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if let Some(log) = &log2
                && let Ok(mut f) = log.lock()
            {
                let _ = f.write_all(&buf[..n]);
            }
            if let Ok(mut t) = tail2.lock() {
                t.extend(&buf[..n]);
                let excess = t.len().saturating_sub(STDERR_TAIL_BYTES);
                t.drain(..excess);
            }
        }
    });
    if let (Some(pids), Some(pid)) = (&launch.pids, child.id()) {
        pids.set(t, pid);
    }
    let pid = child
        .id()
        .map_or_else(|| "?".to_string(), |p| p.to_string());
    note(&log, &format!("started {} (pid {pid})", program.display()));
    let mut running = Running {
        child,
        stdin,
        stdout: BufReader::new(stdout),
        tail,
        stderr_copy,
    };
    let deadline = Instant::now() + Duration::from_millis(launch.init_timeout_ms);
    let answer = timeout_at(deadline, running.send_and_read(&launch.init.to_line())).await;
    let failed = |why: String| {
        note(&log, &format!("stopping the client process: {why}"));
        Err(start_err(why))
    };
    match answer {
        Ok(Ok(LineRead::Line(l))) => match parse_init_reply(&l) {
            Ok(()) => Ok(running),
            Err(why) => failed(format!("thread {t}: answer to init: {why}")),
        },
        Ok(Ok(LineRead::TooLong)) => failed(format!(
            "thread {t}: answer to init longer than {MAX_LINE_BYTES} bytes"
        )),
        Ok(Ok(LineRead::Eof) | Err(_)) => {
            let how = running.exit_words(&log).await;
            Err(start_err(format!(
                "thread {t}: {how} before answering init"
            )))
        }
        Err(_) => failed(format!(
            "thread {t}: no answer to init within {} ms",
            launch.init_timeout_ms
        )),
    }
}

/// A `Client` that speaks the JSON-lines protocol with a local process.
pub struct ProtocolClient {
    launch: Arc<Launch>,
    /// The process, once it answered `init`.
    proc: Option<Running>,
    /// A start in progress (begun when the client is made, or after a stop).
    starting: Option<JoinHandle<Result<Running, ProtocolError>>>,
    next_id: u64,
    /// An op was sent and its reply never read (the interpreter gave up on it): the process
    /// must not be trusted with the next op.
    in_flight: bool,
    last_start: Option<Instant>,
    log: Log,
}

impl ProtocolClient {
    /// A client whose process starts now in the background (inside a tokio runtime), else on
    /// the first op.
    pub fn new(launch: Launch) -> ProtocolClient {
        let log = launch.stderr_log.as_ref().and_then(|p| {
            if let Some(dir) = p.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .ok()
                .map(|f| Arc::new(Mutex::new(f)))
        });
        let mut c = ProtocolClient {
            launch: Arc::new(launch),
            proc: None,
            starting: None,
            next_id: 1,
            in_flight: false,
            last_start: None,
            log,
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            c.begin_start();
        }
        c
    }

    fn thread(&self) -> usize {
        self.launch.init.thread
    }

    /// Start a process in the background unless one runs or is starting.
    fn begin_start(&mut self) {
        if self.proc.is_some() || self.starting.is_some() {
            return;
        }
        let not_before = self.last_start.map(|t| t + RESTART_BACKOFF);
        self.last_start = Some(not_before.unwrap_or_else(Instant::now).max(Instant::now()));
        self.starting = Some(tokio::spawn(start(
            self.launch.clone(),
            self.log.clone(),
            not_before,
        )));
    }

    /// Kill the process and say why in its log.
    async fn stop(&mut self, why: &str) {
        if let Some(p) = self.proc.take() {
            note(&self.log, &format!("stopping the client process: {why}"));
            p.stop().await;
        }
    }

    /// Wait, at most until `deadline`, for a started process. `Err` is the op's completion.
    async fn await_start(&mut self, deadline: Instant, value: &Value) -> Result<(), Completion> {
        self.begin_start();
        let Some(handle) = self.starting.as_mut() else {
            return Ok(());
        };
        let joined = match timeout_at(deadline, handle).await {
            Ok(joined) => joined,
            Err(_) => {
                return Err(Completion::Fail {
                    error: format!(
                        "thread {}: the client is still starting (it has {} ms to answer init); the op was not sent",
                        self.thread(),
                        self.launch.init_timeout_ms
                    ),
                    value: value.clone(),
                });
            }
        };
        self.starting = None;
        match joined {
            Ok(Ok(running)) => {
                self.proc = Some(running);
                Ok(())
            }
            Ok(Err(e)) => Err(e.completion(value)),
            Err(e) => Err(ProtocolError::new(
                ProtocolErrorKind::Start,
                format!("thread {}: the start task failed: {e}", self.thread()),
            )
            .completion(value)),
        }
    }

    /// One op on a running, initialised process.
    async fn exchange(
        &mut self,
        id: u64,
        f: &str,
        key: Option<&str>,
        value: &Value,
    ) -> Result<Completion, ProtocolError> {
        let t = self.thread();
        let line = request_line(id, f, key, value);
        let Some(p) = self.proc.as_mut() else {
            return Err(ProtocolError::new(
                ProtocolErrorKind::Crash,
                format!("thread {t}, op {id}: the client is gone"),
            ));
        };
        match p.send_and_read(&line).await {
            Ok(LineRead::Line(l)) => parse_reply(&l, id, f, value).map_err(|mut e| {
                e.detail = format!("thread {t}, op {id}: {}", e.detail);
                e
            }),
            Ok(LineRead::TooLong) => Err(ProtocolError::new(
                ProtocolErrorKind::Malformed,
                format!("thread {t}, op {id}: reply longer than {MAX_LINE_BYTES} bytes"),
            )),
            Ok(LineRead::Eof) | Err(_) => {
                let how = match self.proc.take() {
                    Some(p) => p.exit_words(&self.log).await,
                    None => "the client is gone".into(),
                };
                Err(ProtocolError::new(
                    ProtocolErrorKind::Crash,
                    format!("thread {t}, op {id}: {how} during the op"),
                ))
            }
        }
    }
}

impl Drop for ProtocolClient {
    fn drop(&mut self) {
        // A start still running: abort it (its process is killed with its future).
        if let Some(h) = self.starting.take() {
            h.abort();
        }
    }
}

#[async_trait::async_trait]
impl Client for ProtocolClient {
    async fn invoke(&mut self, f: &str, key: Option<&str>, value: &Value) -> Completion {
        let t = self.thread();
        let timeout = Duration::from_millis(self.launch.timeout_ms);
        if self.in_flight {
            self.in_flight = false;
            self.stop("the previous op was abandoned without a reply")
                .await;
        }
        // A client that exited between ops is restarted; the op has not been sent yet.
        if let Some(p) = self.proc.as_mut()
            && let Ok(Some(_)) = p.child.try_wait()
            && let Some(p) = self.proc.take()
        {
            let how = p.exit_words(&self.log).await;
            note(&self.log, &format!("{how} between ops; restarting"));
        }
        if self.proc.is_none()
            && let Err(done) = self.await_start(Instant::now() + timeout, value).await
        {
            return done;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.in_flight = true;
        let result = timeout_at(Instant::now() + timeout, self.exchange(id, f, key, value)).await;
        self.in_flight = false;
        let e = match result {
            Ok(Ok(c)) => return c,
            Ok(Err(e)) => e,
            Err(_) => ProtocolError::new(
                ProtocolErrorKind::Timeout,
                format!(
                    "thread {t}, op {id}: no reply within {} ms",
                    self.launch.timeout_ms
                ),
            ),
        };
        self.stop(&e.detail).await;
        // Start the next process now, while the interpreter records this op.
        self.begin_start();
        e.completion(value)
    }

    async fn close(&mut self) {
        if let Some(h) = self.starting.take() {
            h.abort();
        }
        if let Some(mut p) = self.proc.take() {
            // Closing stdin asks a well-behaved client to exit; the kill follows regardless.
            let _ = p.stdin.shutdown().await;
            let _ = tokio::time::timeout(Duration::from_millis(200), p.child.wait()).await;
            drop(p);
            note(&self.log, "closed");
        }
    }
}

#[cfg(test)]
mod tests {
    //! Real processes (tiny Python clients) misbehaving in each way the protocol allows for.
    use super::*;
    use crate::history::OpType;
    use crate::node::Node;
    use serde_json::json;

    /// A client that answers init, then behaves as `on_op` says for each request `req`
    /// (a Python statement; `reply(d)` writes one line, `n` counts requests from 1).
    fn script(on_op: &str) -> String {
        format!(
            r#"import json, sys, time, os
def reply(d):
    sys.stdout.write(json.dumps(d) + "\n"); sys.stdout.flush()
init = json.loads(sys.stdin.readline())
reply({{"type": "init_ok"}})
n = 0
for line in sys.stdin:
    req = json.loads(line); n += 1
    {on_op}
"#
        )
    }

    /// Op timeout of these tests: a process start (Python's) counts against an op's deadline,
    /// so it is generous for a loaded machine; the hang cases wait it out once each.
    const HANG_MS: u64 = 2000;

    fn launch(dir: &std::path::Path, code: &str, timeout_ms: u64) -> Launch {
        launch_with(dir, code, timeout_ms, 10_000)
    }

    fn launch_with(
        dir: &std::path::Path,
        code: &str,
        timeout_ms: u64,
        init_timeout_ms: u64,
    ) -> Launch {
        std::fs::write(dir.join("client.py"), code).unwrap();
        Launch {
            argv: vec!["python3".into(), "client.py".into()],
            cwd: dir.to_path_buf(),
            init: Init {
                thread: 2,
                node: "n1".into(),
                nodes: vec![Node {
                    name: "n1".into(),
                    host: "10.0.0.1".into(),
                }],
                options: Default::default(),
                timeout_ms,
                seed: 1,
                workload: "register".into(),
            },
            timeout_ms,
            init_timeout_ms,
            stderr_log: Some(dir.join("logs/thread-2.log")),
            pids: None,
        }
    }

    async fn write(c: &mut ProtocolClient, v: i64) -> Completion {
        c.invoke("write", Some("k1"), &json!(v)).await
    }

    #[tokio::test]
    async fn a_well_behaved_client_answers_each_op() {
        let dir = tempfile::tempdir().unwrap();
        let code = script(
            r#"reply({"id": req["id"], "type": "ok", "value": req["value"] if req["f"] != "read" else 7, "version": n})"#,
        );
        let mut c = ProtocolClient::new(launch(dir.path(), &code, 5000));
        assert_eq!(
            write(&mut c, 3).await,
            Completion::Ok {
                value: json!(3),
                version: Some(1)
            }
        );
        assert_eq!(
            c.invoke("read", Some("k1"), &Value::Null).await,
            Completion::Ok {
                value: json!(7),
                version: Some(2)
            }
        );
        c.close().await;
    }

    /// Each misbehaviour costs exactly the op it happened on (info, with its kind), and the next
    /// op runs on a fresh process that behaves.
    #[tokio::test]
    async fn every_misbehaviour_costs_one_info_op_and_a_restart() {
        let cases = [
            ("crash", "os._exit(3)", ProtocolErrorKind::Crash, "status 3"),
            (
                "garbage",
                "print('hello there'); sys.stdout.flush()",
                ProtocolErrorKind::Malformed,
                "not JSON",
            ),
            (
                "wrong id",
                "reply({'id': req['id'] + 100, 'type': 'ok'})",
                ProtocolErrorKind::WrongId,
                "expected a reply to id",
            ),
            (
                "hang",
                "time.sleep(60)",
                ProtocolErrorKind::Timeout,
                "no reply within 2000 ms",
            ),
            (
                "endless",
                "sys.stdout.write('x' * (2 << 20)); sys.stdout.flush(); time.sleep(60)",
                ProtocolErrorKind::Malformed,
                "longer than",
            ),
            (
                "stderr then crash",
                "sys.stderr.write('Traceback: boom\\n'); sys.stderr.flush(); sys.exit(1)",
                ProtocolErrorKind::Crash,
                "boom",
            ),
        ];
        for (name, bad, kind, words) in cases {
            let dir = tempfile::tempdir().unwrap();
            // Only the first process misbehaves, on its first op: a marker file remembers it.
            let code = script(&format!(
                "if not os.path.exists('marker'):\n        open('marker', 'w').close()\n        {bad}\n    reply({{'id': req['id'], 'type': 'ok'}})"
            ));
            let mut c = ProtocolClient::new(launch(dir.path(), &code, HANG_MS));
            let first = write(&mut c, 1).await;
            assert_eq!(first.op_type(), OpType::Info, "{name}: {first:?}");
            let err = first.error().unwrap();
            assert_eq!(
                super::super::protocol::classify(err),
                Some(kind),
                "{name}: {err}"
            );
            assert!(
                err.contains(words) && err.contains("thread 2"),
                "{name}: {err}"
            );
            let second = write(&mut c, 2).await;
            assert_eq!(
                second,
                Completion::Ok {
                    value: json!(2),
                    version: None
                },
                "{name}"
            );
            c.close().await;
            let log = std::fs::read_to_string(dir.path().join("logs/thread-2.log")).unwrap();
            assert!(
                log.contains("[shakedown] stopping the client process") || log.contains("exited"),
                "{name}: {log}"
            );
        }
    }

    #[tokio::test]
    async fn a_client_that_cannot_start_fails_the_op_it_never_got() {
        let dir = tempfile::tempdir().unwrap();
        // Dies before init: the op was not sent, so it definitely did not happen.
        let code = "import sys\nsys.stderr.write('ModuleNotFoundError: No module named kazoo\\n')\nsys.exit(1)\n";
        let mut c = ProtocolClient::new(launch(dir.path(), code, 2000));
        let done = write(&mut c, 1).await;
        assert_eq!(done.op_type(), OpType::Fail, "{done:?}");
        let err = done.error().unwrap();
        assert!(
            err.contains("before answering init") && err.contains("kazoo"),
            "{err}"
        );
        // No such program at all.
        let mut l = launch(dir.path(), code, 2000);
        l.argv = vec!["./no-such-client".into()];
        let mut c = ProtocolClient::new(l);
        let done = write(&mut c, 1).await;
        assert_eq!(done.op_type(), OpType::Fail);
        assert!(done.error().unwrap().contains("cannot start"), "{done:?}");
        // Never answers init: fail after the init timeout.
        let code = "import time\ntime.sleep(60)\n";
        let mut c = ProtocolClient::new(launch_with(dir.path(), code, HANG_MS, 300));
        let done = write(&mut c, 1).await;
        assert_eq!(done.op_type(), OpType::Fail);
        assert!(
            done.error()
                .unwrap()
                .contains("no answer to init within 300 ms"),
            "{done:?}"
        );
    }

    #[tokio::test]
    async fn ops_fail_unsent_while_a_slow_client_starts_and_are_not_protocol_errors() {
        let dir = tempfile::tempdir().unwrap();
        let code = script("reply({'id': req['id'], 'type': 'ok', 'value': 5})").replacen(
            "init = json.loads",
            "time.sleep(1.5)\ninit = json.loads",
            1,
        );
        let mut c = ProtocolClient::new(launch_with(dir.path(), &code, 300, 10_000));
        let first = c.invoke("read", Some("k1"), &Value::Null).await;
        assert_eq!(first.op_type(), OpType::Fail, "{first:?}");
        let err = first.error().unwrap();
        assert!(
            err.contains("still starting") && err.contains("not sent"),
            "{err}"
        );
        assert_eq!(super::super::protocol::classify(err), None);
        // Once it has started (1.5 s plus Python's start-up, longer on a loaded machine), ops
        // are served; until then each one fails unsent the same way.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let served = loop {
            let c2 = c.invoke("read", Some("k1"), &Value::Null).await;
            let starting = c2.error().is_some_and(|e| e.contains("still starting"));
            if !starting || std::time::Instant::now() > deadline {
                break c2;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(
            served,
            Completion::Ok {
                value: json!(5),
                version: None
            }
        );
        c.close().await;
    }

    #[tokio::test]
    async fn an_abandoned_op_restarts_the_process_before_the_next() {
        let dir = tempfile::tempdir().unwrap();
        // Any process sleeps on a write of 1; other ops are answered with the process's pid.
        let code = script(
            "if req['value'] == 1:\n        time.sleep(60)\n    reply({'id': req['id'], 'type': 'ok', 'value': os.getpid()})",
        );
        let mut c = ProtocolClient::new(launch(dir.path(), &code, 5000));
        assert!(matches!(write(&mut c, 0).await, Completion::Ok { .. }));
        // The interpreter gives up first (its own timeout drops the future).
        let dropped = tokio::time::timeout(Duration::from_millis(300), write(&mut c, 1)).await;
        assert!(dropped.is_err());
        let Completion::Ok { value: a, .. } = write(&mut c, 2).await else {
            panic!("second op should succeed")
        };
        let Completion::Ok { value: b, .. } = write(&mut c, 3).await else {
            panic!("third op should succeed")
        };
        assert_eq!(a, b, "the fresh process serves both later ops");
        c.close().await;
    }

    #[tokio::test]
    async fn an_abandoned_start_is_not_mistaken_for_a_ready_process() {
        let dir = tempfile::tempdir().unwrap();
        // Answers init only after 1 s; its late init_ok must not be read as an op's reply.
        let code = script("reply({'id': req['id'], 'type': 'ok', 'value': 5})").replacen(
            "init = json.loads",
            "time.sleep(1)\ninit = json.loads",
            1,
        );
        let mut c = ProtocolClient::new(launch(dir.path(), &code, 5000));
        let dropped = tokio::time::timeout(Duration::from_millis(300), write(&mut c, 1)).await;
        assert!(dropped.is_err());
        assert_eq!(
            c.invoke("read", Some("k1"), &Value::Null).await,
            Completion::Ok {
                value: json!(5),
                version: None
            }
        );
        c.close().await;
    }
}
