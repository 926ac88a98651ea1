//! `shakedown serve`: browse the reports directory over HTTP on the loopback interface.
//!
//! Owns binding the listener (always `127.0.0.1`, never a wildcard address) and serving files
//! read-only from one directory with tower-http's `ServeDir` (directory paths → `index.html`,
//! `..` and absolute-path components rejected with 404, correct content types). Does not own the
//! files themselves (`report::page`, `store`) or the CLI (`cli`/`app`).
//!
//! Known limit: symlinks inside the directory are followed (the `latest` links are wanted);
//! a symlink pointing outside it would be served too. Only the local user can reach the server.

use axum::Router;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use tokio::net::TcpListener;
use tower_http::services::ServeDir;

/// The only address `serve` listens on.
pub const BIND_ADDR: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// The router serving `reports_dir` read-only.
pub fn router(reports_dir: &Path) -> Router {
    Router::new()
        .fallback_service(ServeDir::new(reports_dir).append_index_html_on_directories(true))
}

/// Bind `127.0.0.1:port` (port 0 picks a free port). Errors name the address and the cause.
pub async fn bind(port: u16) -> Result<(TcpListener, SocketAddr), String> {
    let addr = SocketAddr::from((BIND_ADDR, port));
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    Ok((listener, local))
}

/// Serve `reports_dir` on `listener` until the process ends (or the server fails).
pub async fn serve(listener: TcpListener, reports_dir: &Path) -> Result<(), String> {
    if !reports_dir.is_dir() {
        return Err(format!("{}: not a directory", reports_dir.display()));
    }
    axum::serve(listener, router(reports_dir))
        .await
        .map_err(|e| format!("serving {}: {e}", reports_dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Send a raw request line (paths are not normalised by a client) and return the response.
    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test]
    async fn serves_files_and_index_pages_on_loopback_and_refuses_traversal() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("reports");
        std::fs::create_dir_all(root.join("t/run1")).unwrap();
        std::fs::write(root.join("index.html"), "<title>all runs</title>").unwrap();
        std::fs::write(root.join("t/run1/index.html"), "<title>run one</title>").unwrap();
        std::fs::write(tmp.path().join("secret.txt"), "outside").unwrap();
        let (listener, addr) = bind(0).await.unwrap();
        assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
        let dir = root.clone();
        let server = tokio::spawn(async move { serve(listener, &dir).await });
        let r = get(addr, "/").await;
        assert!(
            r.starts_with("HTTP/1.1 200") && r.contains("all runs"),
            "{r}"
        );
        let r = get(addr, "/t/run1/").await;
        assert!(
            r.starts_with("HTTP/1.1 200") && r.contains("run one"),
            "{r}"
        );
        assert!(
            r.to_ascii_lowercase().contains("content-type: text/html"),
            "{r}"
        );
        for bad in [
            "/../secret.txt",
            "/t/../../secret.txt",
            "/%2e%2e/secret.txt",
            "/..%2fsecret.txt",
        ] {
            let r = get(addr, bad).await;
            assert!(!r.contains("outside"), "{bad} leaked: {r}");
            assert!(
                r.starts_with("HTTP/1.1 404")
                    || r.starts_with("HTTP/1.1 403")
                    || r.starts_with("HTTP/1.1 400"),
                "{bad}: {r}"
            );
        }
        server.abort();
    }

    #[tokio::test]
    async fn missing_directory_is_an_error_naming_it() {
        let (listener, _) = bind(0).await.unwrap();
        let err = serve(listener, Path::new("/nonexistent/reports"))
            .await
            .unwrap_err();
        assert!(err.contains("/nonexistent/reports"), "{err}");
    }
}
