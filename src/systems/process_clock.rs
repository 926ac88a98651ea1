//! Readings of the wall clock a database process reports, for `clock-offsets`
//! ([`crate::db::ProcessClock`]): a timestamp the server serves over HTTP, fetched on its node
//! with bash's `/dev/tcp` (no curl needed on the node) and printed as `date +%s.%N` prints.
//! Which systems offer one, and where, is each system's (`Abilities::process_clock`); the
//! measurement against the controller's clock is the nemesis's.

use crate::control::Cmd;
use crate::db::ProcessClock;

/// How long one reading may take on the node.
const READING_TIMEOUT_MS: u64 = 5_000;

/// The `Date` header of a GET, as the middle of its second (the header has whole seconds).
const DATE_HEADER: &str = r#"d=$(sed -n 's/^[Dd]ate: //p' | head -n 1)
[ -n "$d" ] || { echo "no Date header in the reply" >&2; exit 1; }
printf '%s.500000000\n' "$(date -u -d "$d" +%s)"
"#;

/// A JSON string field `$4` holding an RFC 3339 time, anywhere in the body.
const JSON_TIME: &str = r#"t=$(sed -n "s/.*\"$4\": *\"\([^\"]*\)\".*/\1/p" | head -n 1)
[ -n "$t" ] || { echo "no \"$4\" in the reply" >&2; exit 1; }
date -u -d "$t" +%s.%N
"#;

/// A reading: GET `path` from `host:port` on the node, then `parse` (a script reading the reply
/// on stdin, `$4` = `arg`) prints the time.
fn http_reading(
    host: &str,
    port: u16,
    path: &str,
    (parse, arg): (&str, &str),
    source: &'static str,
    resolution_ms: f64,
) -> ProcessClock {
    let script = format!(
        "set -o pipefail\n{{ {}}} | {{ {parse}}}",
        crate::systems::http::GET_SH
    );
    ProcessClock {
        cmd: Cmd::new("bash")
            .args(["-c".to_string(), script, "bash".to_string()])
            .args([host, &port.to_string(), path, arg])
            .timeout_ms(READING_TIMEOUT_MS),
        source,
        resolution_ms,
    }
}

/// The `Date` header a server's HTTP endpoint `path` answers with on `host:port` (1 s
/// resolution).
pub fn http_date(host: &str, port: u16, path: &str, source: &'static str) -> ProcessClock {
    http_reading(host, port, path, (DATE_HEADER, ""), source, 1000.0)
}

/// An RFC 3339 time in the JSON field `field` of what `host:port` serves at `path` (the
/// resolution of the server's own formatting; Go prints nanoseconds).
pub fn http_json_time(
    host: &str,
    port: u16,
    path: &str,
    field: &str,
    source: &'static str,
) -> ProcessClock {
    http_reading(host, port, path, (JSON_TIME, field), source, 0.001)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scripts' parsing part on a canned reply, run by the local bash.
    fn parse(script: &str, reply: &str, field: &str) -> std::process::Output {
        use std::io::Write;
        let mut child = std::process::Command::new("bash")
            .args(["-c", script, "bash", "h", "1", "/", field])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(reply.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    #[test]
    fn date_headers_and_json_times_print_as_epoch_seconds() {
        let out = parse(
            DATE_HEADER,
            "HTTP/1.0 200 OK\nContent-Type: text/plain\nDate: Sun, 06 Dec 2026 04:09:33 GMT\n\n{}",
            "",
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "1796530173.500000000\n"
        );
        let out = parse(
            JSON_TIME,
            "HTTP/1.0 200 OK\n\n{\n  \"server_id\": \"x\",\n  \"now\": \"2026-12-06T04:09:33.753719123Z\",\n  \"uptime\": \"1s\"\n}",
            "now",
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "1796530173.753719123\n"
        );
        let out = parse(JSON_TIME, "HTTP/1.0 404 Not Found\n\n", "now");
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("no \"now\""));
        let out = parse(DATE_HEADER, "garbage", "");
        assert!(!out.status.success());
    }

    #[test]
    fn readings_go_to_the_node_address_and_port_given() {
        let c = http_date("10.1.0.2", 2379, "/version", "etcd's HTTP Date header");
        let shell = c.cmd.to_shell();
        assert!(shell.starts_with("bash -c"), "{shell}");
        assert!(
            shell.contains("10.1.0.2") && shell.contains("2379"),
            "{shell}"
        );
        assert!(shell.contains("/version"), "{shell}");
        assert_eq!(c.resolution_ms, 1000.0);
    }
}
