//! `shakedown serve` end to end: the binary serves a reports directory holding a real rendered
//! run on an ephemeral loopback port, prints the URL, serves the reports index and the run page,
//! and refuses paths escaping the directory.
//!
//! Owns nothing but these checks; needs no root. The server child is killed by its PID.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[path = "common/reports.rs"]
mod reports;

/// Kills the server on every exit path of the test.
struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A raw GET (the path is sent as given, not normalised) → (status code, response text).
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

#[test]
fn serve_shows_index_and_run_page_on_loopback_and_refuses_traversal() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let run = reports.join("serializable-isolate/20261129T223930.645Z");
    reports::render_fixture("serializable-isolate", &run);
    std::fs::write(tmp.path().join("secret.txt"), "outside the reports dir").unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_shakedown"))
        .env(shakedown::store::PROTECT_ENV, reports::repo_reports())
        .args(["serve", "--port", "0", "--reports"])
        .arg(&reports)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    println!("{}", line.trim());
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL printed: {line:?}"));
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");

    // serve refreshed reports/index.html, which links the run.
    let (code, body) = get(&addr, "/index.html");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("serializable-isolate/20261129T223930.645Z/index.html"));
    let (code, body) = get(&addr, "/serializable-isolate/20261129T223930.645Z/");
    assert_eq!(code, 200);
    assert!(body.contains("<title>shakedown — serializable-isolate</title>"));
    let (code, body) = get(
        &addr,
        "/serializable-isolate/20261129T223930.645Z/latency-raw.png",
    );
    assert_eq!(code, 200);
    assert!(
        body.to_ascii_lowercase()
            .contains("content-type: image/png")
    );
    for bad in [
        "/../secret.txt",
        "/../../../../etc/passwd",
        "/serializable-isolate/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/..%2f..%2fetc%2fpasswd",
    ] {
        let (code, body) = get(&addr, bad);
        assert!(matches!(code, 400 | 403 | 404), "{bad}: {code}");
        assert!(!body.contains("outside the reports dir") && !body.contains("root:x:0"));
    }
    drop(server);
}
