//! The core crate's promise, checked: nothing that talks to the world is among its dependencies
//! (no async runtime, SSH, HTTP, TLS or database client, no FUSE or netfilter), so it builds
//! quickly and a project can use it as a library. Reads `cargo tree` of this crate's normal
//! (non-dev) dependencies; does not check the binary crate, which needs all of them.

use std::process::Command;

/// Crates the core must never depend on, even indirectly.
const SHELL_CRATES: &[&str] = &[
    "tokio",
    "async-trait",
    "futures-util",
    "ssh2",
    "libssh2-sys",
    "openssl",
    "reqwest",
    "hyper",
    "axum",
    "tower-http",
    "tokio-postgres",
    "mysql_async",
    "redis",
    "async-nats",
    "fuser",
    "nfq",
    "plotters",
    "clap",
];

#[test]
fn the_core_crate_depends_on_no_runtime_ssh_http_or_database_crate() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            "shakedown-core",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        names.contains(&"shakedown-core") && names.contains(&"serde_json"),
        "cargo tree did not list the core's dependencies: {tree}"
    );
    let found: Vec<&&str> = SHELL_CRATES.iter().filter(|c| names.contains(c)).collect();
    assert!(
        found.is_empty(),
        "the core crate depends on {found:?}:\n{tree}"
    );
}
