//! Running one command on one non-blocking ssh2 session: the session's socket (TCP keepalive),
//! waiting on it with `poll(2)` in slices of at most [`POLL_SLICE_MS`] until the command's
//! deadline, writing stdin and draining stdout and stderr together, and reading the exit status
//! or signal.
//!
//! Owns `Conn` (a session and its socket), `run_on` and the classification of what went wrong
//! (`RunError`: not started / timeout / transport). Does not own the session pool, connecting,
//! authentication or retries (`ssh`), nor the error type people see (`mod.rs`, `words`).

use super::words;
use ssh2::{BlockDirections, Session};
use std::io::{self, Read, Write};
use std::os::fd::RawFd;
use std::time::Instant;

/// Read buffer per stream, in bytes.
const READ_CHUNK_BYTES: usize = 32 * 1024;
/// One authenticated session and the socket it runs on.
pub(super) struct Conn {
    pub(super) sess: Session,
    /// The session's TCP socket (owned by `sess`), for `poll(2)`.
    pub(super) fd: RawFd,
    /// The session's state is unknown (timeout, transport error): do not talk to the server on
    /// drop, just free it.
    pub(super) broken: bool,
}

impl Conn {
    /// Mark the session unusable and shut its socket down, so freeing it cannot block.
    pub(super) fn break_off(&mut self) {
        self.broken = true;
        // SAFETY: `fd` is the socket owned by `self.sess`, still open (closed when `sess` drops).
        unsafe { libc::shutdown(self.fd, libc::SHUT_RDWR) };
    }
}

/// Longest a closing session may block on the server, in milliseconds.
const CLOSE_TIMEOUT_MS: u32 = 500;

impl Drop for Conn {
    fn drop(&mut self) {
        // libssh2 frees a session cleanly only in blocking mode; bound how long that may take.
        self.sess.set_timeout(CLOSE_TIMEOUT_MS);
        self.sess.set_blocking(true);
        if !self.broken {
            let _ = self.sess.disconnect(None, "shakedown: closing", None);
        }
    }
}
/// Raw result of a command, before UTF-8 decoding.
pub(super) struct RawOutput {
    pub(super) status: i32,
    pub(super) signal: Option<String>,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
}

/// Why running on a session failed.
pub(super) enum RunError {
    /// The session failed before the command was sent: safe to reconnect and resend.
    NotStarted(String),
    /// The deadline passed.
    Timeout,
    /// The session failed after the command was sent: it may have run.
    Transport(String),
}

/// Why waiting on the socket stopped.
enum WaitError {
    Timeout,
    Io(io::Error),
}
fn is_eagain(e: &ssh2::Error) -> bool {
    e.code() == ssh2::ErrorCode::Session(-37) // LIBSSH2_ERROR_EAGAIN
}
/// Name → number for the signals a shell reports as `128 + n`.
fn signal_number(name: &str) -> Option<i32> {
    Some(match name {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "ILL" => 4,
        "TRAP" => 5,
        "ABRT" => 6,
        "BUS" => 7,
        "FPE" => 8,
        "KILL" => 9,
        "USR1" => 10,
        "SEGV" => 11,
        "USR2" => 12,
        "PIPE" => 13,
        "ALRM" => 14,
        "TERM" => 15,
        _ => return None,
    })
}
/// Seconds a connection may sit idle before the kernel probes the node.
const KEEPALIVE_IDLE_S: i32 = 5;
/// Seconds between unanswered probes.
const KEEPALIVE_INTERVAL_S: i32 = 2;
/// Unanswered probes before the connection is declared dead.
const KEEPALIVE_PROBES: i32 = 3;
/// Most time sent data may stay unacknowledged before the connection is declared dead, in ms.
const USER_TIMEOUT_MS: i32 = 15_000;

/// Make a silently vanished node (no RST: namespace gone, cable cut, blackholed) show up as a
/// socket error after ~11–15 s (keepalive probes; TCP_USER_TIMEOUT bounds unanswered probes and
/// unacknowledged data; measured 15.2 s in `tests/degraded.rs`) instead of only at the command's
/// deadline. A node that is merely slow still answers probes.
pub(super) fn set_keepalive(fd: RawFd) -> io::Result<()> {
    let opts: [(i32, i32, i32); 5] = [
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1),
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, KEEPALIVE_IDLE_S),
        (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, KEEPALIVE_INTERVAL_S),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT, KEEPALIVE_PROBES),
        (libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, USER_TIMEOUT_MS),
    ];
    for (level, name, value) in opts {
        // SAFETY: `fd` is an open TCP socket; `value` outlives the call and its size is passed.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&value as *const i32).cast(),
                std::mem::size_of::<i32>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Longest one wait on the socket lasts before the caller asks libssh2 again, in ms.
///
/// libssh2 can return EAGAIN with "blocked inbound" while what the caller waits for (the
/// command's output, its exit status, the channel's close) is already in its own buffers, read
/// off the socket by an earlier call: the socket then stays quiet and a wait until the deadline
/// sleeps the command's whole timeout before finding it (libssh2 issue #232; seen here as a
/// `date` over SSH taking 60 s right after a clock strobe, under load). Waking at least this
/// often bounds such a lost wakeup to one slice.
pub(super) const POLL_SLICE_MS: i32 = 100;

/// How long one `poll(2)` may wait, in ms: until the deadline (rounded up, so we do not spin on a
/// sub-millisecond remainder), at most [`POLL_SLICE_MS`]; `None` once the deadline has passed.
pub(super) fn poll_timeout_ms(deadline: Option<Instant>, now: Instant) -> Option<i32> {
    match deadline {
        Some(d) => {
            let left = d.saturating_duration_since(now);
            if left.is_zero() {
                return None;
            }
            Some(
                i32::try_from(left.as_millis() + 1)
                    .map_or(POLL_SLICE_MS, |ms| ms.min(POLL_SLICE_MS)),
            )
        }
        None => Some(POLL_SLICE_MS),
    }
}

/// Wait until the session's socket is ready in the direction libssh2 is blocked on, at most
/// [`POLL_SLICE_MS`], or until the deadline passes.
fn wait_socket(conn: &Conn, deadline: Option<Instant>) -> Result<(), WaitError> {
    let Some(timeout_ms) = poll_timeout_ms(deadline, Instant::now()) else {
        return Err(WaitError::Timeout);
    };
    let (events, timeout_ms) = match conn.sess.block_directions() {
        BlockDirections::Inbound => (libc::POLLIN, timeout_ms),
        BlockDirections::Outbound => (libc::POLLOUT, timeout_ms),
        BlockDirections::Both => (libc::POLLIN | libc::POLLOUT, timeout_ms),
        // Not blocked on the socket: just yield briefly and let the caller retry.
        BlockDirections::None => (libc::POLLIN, timeout_ms.min(1)),
    };
    let mut pfd = libc::pollfd {
        fd: conn.fd,
        events,
        revents: 0,
    };
    // SAFETY: `pfd` is a valid pollfd for the duration of the call; nfds = 1.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(WaitError::Io(e));
        }
    }
    Ok(())
}

/// Repeat a non-blocking libssh2 call until it stops returning EAGAIN.
fn retry_eagain<T>(
    conn: &Conn,
    deadline: Option<Instant>,
    mut f: impl FnMut() -> Result<T, ssh2::Error>,
) -> Result<T, RunError> {
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(e) if is_eagain(&e) => match wait_socket(conn, deadline) {
                Ok(()) => {}
                Err(WaitError::Timeout) => return Err(RunError::Timeout),
                Err(WaitError::Io(e)) => return Err(RunError::Transport(words::io_error(&e, 0))),
            },
            Err(e) if words::is_timeout(&e) => return Err(RunError::Timeout),
            Err(e) => return Err(RunError::Transport(words::ssh_error(&e))),
        }
    }
}

/// Read what is available from one stream; `Ok(true)` if bytes arrived, sets `done` at EOF.
fn drain(
    stream: &mut impl Read,
    buf: &mut [u8],
    out: &mut Vec<u8>,
    done: &mut bool,
) -> Result<bool, RunError> {
    let mut progressed = false;
    loop {
        match stream.read(buf) {
            Ok(0) => {
                *done = true;
                return Ok(progressed);
            }
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                progressed = true;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(progressed),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(RunError::Transport(words::stream_error(&e))),
        }
    }
}

/// Run one command on one (non-blocking) session.
pub(super) fn run_on(
    conn: &Conn,
    shell: &str,
    stdin: &[u8],
    deadline: Option<Instant>,
) -> Result<RawOutput, RunError> {
    let sess = &conn.sess;
    let mut ch = match retry_eagain(conn, deadline, || sess.channel_session()) {
        Ok(ch) => ch,
        Err(RunError::Transport(reason)) => return Err(RunError::NotStarted(reason)),
        Err(e) => return Err(e),
    };
    retry_eagain(conn, deadline, || ch.exec(shell))?;

    let mut buf = vec![0u8; READ_CHUNK_BYTES];
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let (mut out_done, mut err_done) = (false, false);
    let mut written = 0;
    let mut eof_sent = false;
    let mut idle_passes = 0;
    loop {
        let mut progressed = false;
        if written < stdin.len() {
            match ch.write(&stdin[written..]) {
                Ok(n) => {
                    written += n;
                    progressed |= n > 0;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) if ch.eof() => written = stdin.len(), // the command stopped reading
                Err(e) => {
                    return Err(RunError::Transport(format!(
                        "writing stdin: {}",
                        words::stream_error(&e)
                    )));
                }
            }
        }
        if written >= stdin.len() && !eof_sent {
            match ch.send_eof() {
                Ok(()) => {
                    eof_sent = true;
                    progressed = true;
                }
                Err(e) if is_eagain(&e) => {}
                Err(_) if ch.eof() => eof_sent = true,
                Err(e) => {
                    return Err(RunError::Transport(format!(
                        "closing stdin: {}",
                        words::ssh_error(&e)
                    )));
                }
            }
        }
        if !out_done {
            progressed |= drain(&mut ch.stream(0), &mut buf, &mut stdout, &mut out_done)?;
        }
        if !err_done {
            progressed |= drain(&mut ch.stderr(), &mut buf, &mut stderr, &mut err_done)?;
        }
        if out_done && err_done {
            break;
        }
        if let Some(d) = deadline
            && Instant::now() >= d
        {
            return Err(RunError::Timeout);
        }
        if progressed {
            idle_passes = 0;
            continue;
        }
        // One read may have pulled the other stream's packets off the socket into libssh2's
        // queue; a second idle pass checks the queues before we sleep on the socket.
        idle_passes += 1;
        if idle_passes < 2 {
            continue;
        }
        idle_passes = 0;
        match wait_socket(conn, deadline) {
            Ok(()) => {}
            Err(WaitError::Timeout) => return Err(RunError::Timeout),
            Err(WaitError::Io(e)) => return Err(RunError::Transport(words::io_error(&e, 0))),
        }
    }
    retry_eagain(conn, deadline, || ch.close())?;
    retry_eagain(conn, deadline, || ch.wait_close())?;
    let mut status = ch.exit_status().map_err(|e| {
        RunError::Transport(format!("reading exit status: {}", words::ssh_error(&e)))
    })?;
    let signal = ch
        .exit_signal()
        .ok()
        .and_then(|s| s.exit_signal)
        .filter(|s| !s.is_empty());
    if let Some(sig) = &signal {
        status = signal_number(sig).map_or(255, |n| 128 + n);
    }
    Ok(RawOutput {
        status,
        signal,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_wait_on_the_socket_is_never_longer_than_one_slice() {
        let now = Instant::now();
        let in_a_minute = Some(now + Duration::from_secs(60));
        assert_eq!(poll_timeout_ms(in_a_minute, now), Some(POLL_SLICE_MS));
        assert_eq!(poll_timeout_ms(None, now), Some(POLL_SLICE_MS));
        // Close to the deadline: only what is left, rounded up.
        let soon = Some(now + Duration::from_micros(20_500));
        assert_eq!(poll_timeout_ms(soon, now), Some(21));
        assert_eq!(poll_timeout_ms(Some(now), now), None);
        assert_eq!(
            poll_timeout_ms(Some(now), now + Duration::from_secs(1)),
            None
        );
    }
}
