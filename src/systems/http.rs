//! An HTTP GET made on a node with bash's `/dev/tcp` (no curl needed there): what a server
//! serves on its monitoring port, asked where the server runs, as the nodes see it. Used for
//! process clocks (`process_clock`) and NATS's membership views.
//!
//! Owns the GET's script and reading its reply (status and body). Does not own what a reply
//! means (its callers).

use crate::control::Cmd;

/// GET `$3` from `$1:$2` (HTTP/1.0) and print the response, carriage returns removed.
pub const GET_SH: &str = r#"exec 3<>"/dev/tcp/$1/$2" || exit 1
printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$3" "$1" >&3
timeout 3 cat <&3 | tr -d '\r'
"#;

/// How long one GET may take on the node.
const GET_TIMEOUT_MS: u64 = 5_000;

/// The command that GETs `path` from `host:port` on the node and prints the reply.
pub fn get(host: &str, port: u16, path: &str) -> Cmd {
    Cmd::new("bash")
        .args(["-c", GET_SH, "bash"])
        .args([host, &port.to_string(), path])
        .timeout_ms(GET_TIMEOUT_MS)
}

/// A reply as [`GET_SH`] prints it: its status code and its body, or why it is no reply.
pub fn reply(text: &str) -> Result<(u16, &str), String> {
    let (head, body) = text.split_once("\n\n").unwrap_or((text, ""));
    let status = head.lines().next().unwrap_or_default();
    let code = status
        .strip_prefix("HTTP/")
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok());
    match code {
        Some(code) => Ok((code, body)),
        None => {
            let cut: String = status.chars().take(120).collect();
            Err(format!("not an HTTP reply: {cut:?}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_split_into_status_and_body() {
        let ok = "HTTP/1.0 200 OK\nContent-Type: application/json\n\n{\"a\": 1}\n";
        assert_eq!(reply(ok), Ok((200, "{\"a\": 1}\n")));
        assert_eq!(
            reply("HTTP/1.1 404 Not Found\n\n404 page not found"),
            Ok((404, "404 page not found"))
        );
        assert_eq!(reply("HTTP/1.0 204 No Content\n"), Ok((204, "")));
        let e = reply("").unwrap_err();
        assert!(e.contains("not an HTTP reply"), "{e}");
        assert!(reply("garbage\n\nbody").is_err());
    }

    #[test]
    fn the_command_asks_the_path_of_the_host_and_port() {
        let line = format!("{:?}", get("10.1.0.2", 8222, "/raftz"));
        for part in ["10.1.0.2", "8222", "/raftz", "/dev/tcp"] {
            assert!(line.contains(part), "{part} not in {line}");
        }
    }
}
