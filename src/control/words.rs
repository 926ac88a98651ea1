//! Messages for people: turns libssh2 and OS errors into plain phrases.
//!
//! Owns the mapping from `ssh2::Error` codes (`LIBSSH2_ERROR_*`) and `std::io::Error` kinds to
//! words a person understands ("the server closed the connection", "connection refused (no SSH
//! server listening?)"), and how durations are written in them (`10 s`, `250 ms`). No library
//! code (`[Session(-9)]`), no `os error 111`, no type names reach a message. Does not own the error
//! type (`ExecError` in `mod.rs`) nor when errors happen (`ssh`). Pure: no IO.

use std::io;

/// libssh2's error codes we map (from `libssh2.h`). Only the codes, so the table below reads as
/// data; anything else falls back to libssh2's own English message.
mod code {
    pub const SOCKET_NONE: i32 = -1;
    pub const BANNER_RECV: i32 = -2;
    pub const BANNER_SEND: i32 = -3;
    pub const INVALID_MAC: i32 = -4;
    pub const KEX_FAILURE: i32 = -5;
    pub const SOCKET_SEND: i32 = -7;
    pub const KEY_EXCHANGE_FAILURE: i32 = -8;
    pub const TIMEOUT: i32 = -9;
    pub const HOSTKEY_INIT: i32 = -10;
    pub const HOSTKEY_SIGN: i32 = -11;
    pub const DECRYPT: i32 = -12;
    pub const SOCKET_DISCONNECT: i32 = -13;
    pub const PROTO: i32 = -14;
    pub const FILE: i32 = -16;
    pub const METHOD_NONE: i32 = -17;
    pub const AUTHENTICATION_FAILED: i32 = -18;
    pub const PUBLICKEY_UNVERIFIED: i32 = -19;
    pub const CHANNEL_FAILURE: i32 = -21;
    pub const CHANNEL_REQUEST_DENIED: i32 = -22;
    pub const CHANNEL_CLOSED: i32 = -26;
    pub const CHANNEL_EOF_SENT: i32 = -27;
    pub const SOCKET_TIMEOUT: i32 = -30;
    pub const REQUEST_DENIED: i32 = -32;
    pub const METHOD_NOT_SUPPORTED: i32 = -33;
    pub const SOCKET_RECV: i32 = -43;
    pub const BAD_SOCKET: i32 = -45;
    pub const KEYFILE_AUTH_FAILED: i32 = -48;
    pub const ALGO_UNSUPPORTED: i32 = -51;
}

/// A duration in milliseconds as people write it: `10 s`, `1.5 s`, `250 ms`.
pub fn duration_ms(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1_000) {
        format!("{} s", ms / 1_000)
    } else {
        let s = format!("{:.1}", ms as f64 / 1_000.0);
        format!("{} s", s.trim_end_matches(".0"))
    }
}

/// The libssh2 code of an error, if it is a session error.
fn session_code(e: &ssh2::Error) -> Option<i32> {
    match e.code() {
        ssh2::ErrorCode::Session(c) => Some(c),
        ssh2::ErrorCode::SFTP(_) => None,
    }
}

/// libssh2's message with the first letter lowered (it is put after a colon), never its code.
fn own_words(e: &ssh2::Error) -> String {
    lower_first(e.message().trim().trim_end_matches('.'))
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => "unknown error".to_string(),
    }
}

/// True for libssh2 errors that mean "waited too long".
pub fn is_timeout(e: &ssh2::Error) -> bool {
    matches!(session_code(e), Some(code::TIMEOUT | code::SOCKET_TIMEOUT))
}

/// What went wrong on the connection, as a phrase (no code): "the server closed the connection".
/// For errors of the SSH transport and channels (not authentication: see [`auth_error`]).
pub fn ssh_error(e: &ssh2::Error) -> String {
    let Some(c) = session_code(e) else {
        return own_words(e);
    };
    match c {
        code::SOCKET_NONE | code::BAD_SOCKET => "the connection is not open".to_string(),
        code::BANNER_RECV => {
            "no SSH greeting from the server (is it an SSH server, or did it drop the connection?)"
                .to_string()
        }
        code::BANNER_SEND => "could not send the SSH greeting (connection lost)".to_string(),
        code::INVALID_MAC | code::DECRYPT => {
            "the server's data failed its integrity check (connection corrupted)".to_string()
        }
        code::KEX_FAILURE | code::KEY_EXCHANGE_FAILURE | code::ALGO_UNSUPPORTED => {
            "key exchange failed (no encryption method both sides support)".to_string()
        }
        code::SOCKET_SEND => "the connection was lost while sending".to_string(),
        code::SOCKET_RECV => "the connection was lost while receiving".to_string(),
        code::TIMEOUT | code::SOCKET_TIMEOUT => "the server did not answer in time".to_string(),
        code::HOSTKEY_INIT | code::HOSTKEY_SIGN => {
            "the server's host key could not be verified (bad signature)".to_string()
        }
        code::SOCKET_DISCONNECT => "the server closed the connection".to_string(),
        code::PROTO => "the server broke the SSH protocol".to_string(),
        code::CHANNEL_FAILURE | code::CHANNEL_REQUEST_DENIED | code::REQUEST_DENIED => {
            "the server refused to run a command (channel refused; too many sessions?)".to_string()
        }
        code::CHANNEL_CLOSED | code::CHANNEL_EOF_SENT => {
            "the server closed the command's channel".to_string()
        }
        _ => own_words(e),
    }
}

/// Why public-key authentication failed, as a phrase.
pub fn auth_error(e: &ssh2::Error) -> String {
    match session_code(e) {
        Some(code::AUTHENTICATION_FAILED | code::PUBLICKEY_UNVERIFIED) => {
            "the server did not accept the key".to_string()
        }
        Some(code::FILE | code::KEYFILE_AUTH_FAILED) => {
            "the key file could not be read or used (passphrase-protected or an unsupported format?)"
                .to_string()
        }
        Some(code::METHOD_NONE | code::METHOD_NOT_SUPPORTED) => {
            "the server does not allow public-key login".to_string()
        }
        _ => ssh_error(e),
    }
}

/// The SSH handshake with `addr` failed: the predicate after "SSH handshake with <addr>", e.g.
/// "timed out after 10 s" or "failed: the server closed the connection".
pub fn handshake_error(e: &ssh2::Error, timeout_ms: u64) -> String {
    if is_timeout(e) {
        format!("timed out after {}", duration_ms(timeout_ms))
    } else {
        format!("failed: {}", ssh_error(e))
    }
}

/// An OS error (TCP connect, socket IO) as a phrase, without `(os error N)`.
pub fn io_error(e: &io::Error, timeout_ms: u64) -> String {
    use io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => "connection refused (no SSH server listening on that port?)".into(),
        K::TimedOut | K::WouldBlock => format!("no answer within {}", duration_ms(timeout_ms)),
        K::HostUnreachable => "host unreachable (no route, or the host is down)".into(),
        K::NetworkUnreachable => "network unreachable (no route to that network)".into(),
        K::ConnectionReset => "the connection was reset by the other side".into(),
        K::ConnectionAborted => "the connection was aborted".into(),
        K::BrokenPipe => "the connection was closed by the other side".into(),
        K::NotConnected => "the connection is not open".into(),
        K::AddrNotAvailable => "that address is not available from this machine".into(),
        K::PermissionDenied => "permission denied by the local system (firewall?)".into(),
        K::NotFound => "not found".into(),
        _ => {
            // Keep the OS's words, drop the " (os error N)" suffix.
            let text = e.to_string();
            let words = match text.rfind(" (os error ") {
                Some(i) => &text[..i],
                None => &text,
            };
            lower_first(words)
        }
    }
}

/// An IO error from a channel stream: ssh2 turns its errors into `io::Error` carrying only
/// libssh2's message; timeouts keep their kind.
pub fn stream_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::TimedOut => "the server did not answer in time".to_string(),
        io::ErrorKind::Other => {
            let m = e.to_string();
            let m = m.trim().trim_end_matches('.');
            // libssh2's words when the socket itself failed (reset, keepalive timed out).
            if m.eq_ignore_ascii_case("transport read") {
                return "the connection was lost while waiting for output (the node went silent or away)"
                    .to_string();
            }
            format!("the connection failed ({})", lower_first(m))
        }
        _ => io_error(e, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ssh(c: i32, msg: &'static str) -> ssh2::Error {
        ssh2::Error::new(ssh2::ErrorCode::Session(c), msg)
    }

    /// No library code, no `os error`, no type name, no trailing period.
    fn assert_for_people(s: &str) {
        for bad in ["Session(", "[", "os error", "Error {", "Kind(", "libssh2"] {
            assert!(!s.contains(bad), "{s:?} contains {bad:?}");
        }
        assert!(!s.ends_with('.'), "{s:?}");
        assert!(!s.is_empty());
    }

    #[test]
    fn durations() {
        assert_eq!(duration_ms(10_000), "10 s");
        assert_eq!(duration_ms(1_500), "1.5 s");
        assert_eq!(duration_ms(250), "250 ms");
        assert_eq!(duration_ms(60_000), "60 s");
    }

    #[test]
    fn handshake_timeout_says_timed_out_after_the_limit() {
        let e = ssh(code::TIMEOUT, "Timed out waiting on socket");
        assert_eq!(handshake_error(&e, 10_000), "timed out after 10 s");
        let e = ssh(
            code::SOCKET_DISCONNECT,
            "Unable to exchange encryption keys",
        );
        assert_eq!(
            handshake_error(&e, 10_000),
            "failed: the server closed the connection"
        );
    }

    #[test]
    fn every_mapped_code_is_for_people() {
        let codes = [
            code::SOCKET_NONE,
            code::BANNER_RECV,
            code::BANNER_SEND,
            code::INVALID_MAC,
            code::KEX_FAILURE,
            code::SOCKET_SEND,
            code::KEY_EXCHANGE_FAILURE,
            code::TIMEOUT,
            code::HOSTKEY_INIT,
            code::HOSTKEY_SIGN,
            code::DECRYPT,
            code::SOCKET_DISCONNECT,
            code::PROTO,
            code::FILE,
            code::METHOD_NONE,
            code::AUTHENTICATION_FAILED,
            code::PUBLICKEY_UNVERIFIED,
            code::CHANNEL_FAILURE,
            code::CHANNEL_REQUEST_DENIED,
            code::CHANNEL_CLOSED,
            code::CHANNEL_EOF_SENT,
            code::SOCKET_TIMEOUT,
            code::REQUEST_DENIED,
            code::METHOD_NOT_SUPPORTED,
            code::SOCKET_RECV,
            code::BAD_SOCKET,
            code::KEYFILE_AUTH_FAILED,
            code::ALGO_UNSUPPORTED,
            -99,
        ];
        for c in codes {
            let e = ssh(c, "Some library message.");
            assert_for_people(&ssh_error(&e));
            assert_for_people(&auth_error(&e));
            assert_for_people(&handshake_error(&e, 5_000));
        }
        assert_eq!(
            auth_error(&ssh(
                code::AUTHENTICATION_FAILED,
                "Username/PublicKey combination invalid"
            )),
            "the server did not accept the key"
        );
        assert_eq!(
            ssh_error(&ssh(-99, "Something odd.")),
            "something odd",
            "unknown codes keep libssh2's words, not its code"
        );
        assert_eq!(
            ssh_error(&ssh(code::CHANNEL_CLOSED, "x")),
            "the server closed the command's channel"
        );
    }

    #[test]
    fn os_errors_lose_their_numbers() {
        use io::ErrorKind as K;
        for kind in [
            K::ConnectionRefused,
            K::TimedOut,
            K::HostUnreachable,
            K::NetworkUnreachable,
            K::ConnectionReset,
            K::BrokenPipe,
            K::AddrNotAvailable,
        ] {
            assert_for_people(&io_error(&io::Error::from(kind), 5_000));
        }
        assert_eq!(
            io_error(&io::Error::from_raw_os_error(libc::ECONNREFUSED), 5_000),
            "connection refused (no SSH server listening on that port?)"
        );
        assert_eq!(
            io_error(&io::Error::from(K::TimedOut), 5_000),
            "no answer within 5 s"
        );
        // An errno without a mapping keeps the OS's words but not its number.
        let e = io::Error::from_raw_os_error(libc::EMFILE);
        let s = io_error(&e, 1);
        assert_for_people(&s);
        assert!(s.starts_with("too many open files"), "{s}");
        assert_eq!(
            stream_error(&io::Error::other("transport read")),
            "the connection was lost while waiting for output (the node went silent or away)"
        );
        let s = stream_error(&io::Error::other("Unable to send channel data"));
        assert_eq!(s, "the connection failed (unable to send channel data)");
    }
}
