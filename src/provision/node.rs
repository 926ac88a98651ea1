//! Packages on a node over SSH: which it lacks, then either `apt-get` there — after a probe that
//! its package source answers, so an air-gapped node fails in seconds with the remedies, not
//! after apt's own timeouts — or `.deb` files the controller resolves, downloads and uploads
//! (`--packages-from controller`), installed with `dpkg -i` on the node.
//!
//! Does not own this machine's packages (`provision::host`) nor the dependency walk
//! (`provision::deps`).

use super::{Install, Installed, ProvisionError, RELEASE_SCRIPT, apt_gist, deps, host};
use crate::control::{Cmd, ExecOutput, Remote};
use std::collections::HashSet;

/// Prints each of `$@` that is not installed; exits 4 when the node has no dpkg.
const MISSING_SCRIPT: &str = r#"command -v dpkg-query >/dev/null 2>&1 || { echo "no dpkg-query" >&2; exit 4; }
for p in "$@"; do
  dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -qx installed || echo "$p"
done
"#;

/// `apt-get update` with short network timeouts and no retries (the reachability probe).
const PROBE_SCRIPT: &str = r#"export DEBIAN_FRONTEND=noninteractive LC_ALL=C
command -v apt-get >/dev/null 2>&1 || { echo "no apt-get" >&2; exit 4; }
timeout 90 apt-get -q -o DPkg::Lock::Timeout=120 -o Acquire::Retries=0 \
  -o Acquire::http::Timeout=5 -o Acquire::https::Timeout=5 -o Acquire::ftp::Timeout=5 update 2>&1
"#;

/// Installs `$@` from the node's own package sources.
const INSTALL_SCRIPT: &str = r#"export DEBIAN_FRONTEND=noninteractive LC_ALL=C
apt-get -q -o DPkg::Lock::Timeout=300 install -y --no-install-recommends "$@" 2>&1
"#;

/// Installs the uploaded `.deb` files `$2…` (dependencies first) in directory `$1` with dpkg,
/// then removes the directory. A second pass settles pre-dependencies that the first pass only
/// unpacked; while another package manager holds dpkg's lock, waits (at most 300 s). apt is not
/// used: with the node's package lists it would fetch a listed version instead of the file.
const INSTALL_DEBS_SCRIPT: &str = r#"export DEBIAN_FRONTEND=noninteractive LC_ALL=C
d="$1"; shift
dpkg_i() {
  i=0
  while :; do
    out=$(dpkg -i "$@" 2>&1); rc=$?
    case "$out" in
      *"lock"*"held by"*|*"frontend lock"*|*"database is locked"*)
        i=$((i+1)); if [ $i -lt 150 ]; then sleep 2; continue; fi;;
    esac
    printf '%s\n' "$out"; return $rc
  done
}
dpkg_i "$@" || { echo "(second pass)"; dpkg_i "$@"; }
rc=$?
rm -rf "$d"
exit $rc
"#;

/// Every package's status on the node.
const STATUS_SCRIPT: &str = r#"dpkg-query -W -f='${Package} ${db:Status-Status}\n'"#;

/// How long an install on a node may take.
const INSTALL_TIMEOUT_MS: u64 = 900_000;
/// How long the probe may take (its own `timeout` is 90 s; this bounds SSH on top).
const PROBE_TIMEOUT_MS: u64 = 120_000;

fn output_of(out: &ExecOutput) -> String {
    format!("{}{}", out.stdout, out.stderr)
}

/// Which of `packages` the node lacks.
pub fn missing(remote: &dyn Remote, packages: &[String]) -> Result<Vec<String>, ProvisionError> {
    if packages.is_empty() {
        return Ok(Vec::new());
    }
    let out = remote.exec(&Cmd::script(MISSING_SCRIPT, packages.to_vec()))?;
    if out.status == 4 {
        return Err(ProvisionError::Incompatible {
            node: remote.node().to_string(),
            reason: "no dpkg-query: shakedown installs Debian packages only; install the \
                     system yourself and run with `--no-install`"
                .into(),
        });
    }
    Ok(out
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// Why `apt-get update` output shows no package source answering, or `None` when one did.
pub fn unreachable_reason(status: i32, output: &str) -> Option<String> {
    if status == 124 {
        return Some("apt-get update did not finish in 90 s".into());
    }
    let lines: Vec<&str> = output.lines().collect();
    let answered = lines
        .iter()
        .any(|l| l.starts_with("Hit:") || l.starts_with("Get:"));
    if answered {
        return None;
    }
    let first_err = lines.iter().position(|l| l.starts_with("Err:"));
    match first_err {
        Some(i) => {
            let why = lines
                .get(i + 1)
                .map(|l| l.trim())
                .filter(|l| !l.is_empty())
                .unwrap_or("no answer");
            let source = lines[i].split_whitespace().nth(1).unwrap_or("its source");
            Some(format!("{source}: {why}"))
        }
        None if status != 0 => Some(format!("apt-get update failed: {}", apt_gist(output))),
        None => Some("no package source is configured (/etc/apt/sources.list*)".into()),
    }
}

/// Makes sure the node has `packages`, the way `how` says. Returns what was installed.
pub fn ensure(
    remote: &dyn Remote,
    packages: &[String],
    how: Install,
) -> Result<Installed, ProvisionError> {
    if how == Install::Skip || packages.is_empty() {
        return Ok(Installed::nothing());
    }
    let need = missing(remote, packages)?;
    if need.is_empty() {
        return Ok(Installed::nothing());
    }
    let installed = match how {
        Install::Controller => from_controller(remote, &need)?,
        _ => from_node(remote, &need)?,
    };
    let still = missing(remote, packages)?;
    if !still.is_empty() {
        return Err(ProvisionError::Failed {
            place: remote.node().to_string(),
            packages: still,
            detail: apt_gist(&installed.log),
        });
    }
    Ok(installed)
}

/// What the probe of a node's package source found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A package source answered.
    Reachable,
    /// None answered: why.
    Unreachable(String),
    /// The node has no apt-get.
    NoApt,
}

/// Runs `apt-get update` on the node with short network timeouts: does a package source answer?
/// Returns the finding and apt's output.
pub fn probe_source(remote: &dyn Remote) -> Result<(Source, String), ProvisionError> {
    let probe = remote.exec(
        &Cmd::sh(PROBE_SCRIPT)
            .sudo(true)
            .timeout_ms(PROBE_TIMEOUT_MS),
    )?;
    let text = output_of(&probe);
    let source = match (
        probe.status,
        unreachable_reason(probe.status, &probe.stdout),
    ) {
        (4, _) => Source::NoApt,
        (_, Some(why)) => Source::Unreachable(why),
        (_, None) => Source::Reachable,
    };
    Ok((source, text))
}

fn from_node(remote: &dyn Remote, need: &[String]) -> Result<Installed, ProvisionError> {
    let node = remote.node().to_string();
    let (source, text) = probe_source(remote)?;
    let log = format!("$ apt-get update\n{text}");
    match source {
        Source::Reachable => {}
        Source::NoApt => {
            return Err(ProvisionError::Incompatible {
                node,
                reason: format!(
                    "no apt-get, and it lacks {}; install them yourself and run with \
                     `--no-install`",
                    need.join(", ")
                ),
            });
        }
        Source::Unreachable(detail) => {
            return Err(ProvisionError::Unreachable {
                node,
                packages: need.to_vec(),
                detail,
            });
        }
    }
    let out = remote.exec(
        &Cmd::script(INSTALL_SCRIPT, need.to_vec())
            .sudo(true)
            .timeout_ms(INSTALL_TIMEOUT_MS),
    )?;
    let command = format!("apt-get install {}", need.join(" "));
    finish(node, need, need.to_vec(), log, &command, &out)
}

fn from_controller(remote: &dyn Remote, need: &[String]) -> Result<Installed, ProvisionError> {
    let node = remote.node().to_string();
    let theirs = remote.exec_ok(&Cmd::sh(RELEASE_SCRIPT))?.trim().to_string();
    let ours = host::release()?;
    if theirs != ours {
        return Err(ProvisionError::Incompatible {
            node,
            reason: format!(
                "runs {theirs} (architecture, distribution, release) and this machine {ours}: \
                 `--packages-from controller` needs the same; install the packages yourself \
                 and run with `--no-install`"
            ),
        });
    }
    let status = remote.exec_ok(&Cmd::sh(STATUS_SCRIPT))?;
    let installed: HashSet<String> = status
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, s)| s.trim() == "installed")
        .map(|(p, _)| p.split(':').next().unwrap_or(p).to_string())
        .collect();
    let mut log = String::new();
    let plan = deps::plan(need, &installed, |batch| host::depends(batch, &mut log))?;
    let files = host::download(&plan, &mut log)?;
    let dir = format!("/tmp/shakedown-debs-{node}");
    remote.exec_ok(&Cmd::new("mkdir").args(["-p", &dir]).sudo(true))?;
    let mut args = vec![dir.clone()];
    // Dependencies before what needs them: the plan lists them after.
    for f in files.iter().rev() {
        let bytes = std::fs::read(f).map_err(|e| ProvisionError::Spawn {
            command: format!("read {}", f.display()),
            reason: e.to_string(),
        })?;
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = format!("{dir}/{name}");
        remote.upload(&bytes, &path, 0o644)?;
        args.push(path);
    }
    log.push_str(&format!(
        "uploaded {} .deb files to {node}:{dir}\n",
        files.len()
    ));
    let out = remote.exec(
        &Cmd::script(INSTALL_DEBS_SCRIPT, args)
            .sudo(true)
            .timeout_ms(INSTALL_TIMEOUT_MS),
    )?;
    finish(node, need, plan, log, "dpkg -i …", &out)
}

/// The outcome of the install command `command` (output `out`) that was to bring `need`,
/// installing `installed`: its output joins `log`; a failure names the node and apt's gist.
fn finish(
    node: String,
    need: &[String],
    installed: Vec<String>,
    mut log: String,
    command: &str,
    out: &ExecOutput,
) -> Result<Installed, ProvisionError> {
    log.push_str(&format!("$ {command}\n{}", output_of(out)));
    if !out.success() {
        return Err(ProvisionError::Failed {
            place: node,
            packages: need.to_vec(),
            detail: apt_gist(&output_of(out)),
        });
    }
    Ok(Installed {
        packages: installed,
        log,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offline_update_is_unreachable_with_its_reason() {
        let offline = "Err:1 http://deb.debian.org/debian bookworm InRelease\n  \
                       Temporary failure resolving 'deb.debian.org'\nW: Failed to fetch …\n\
                       W: Some index files failed to download.\n";
        assert_eq!(
            unreachable_reason(0, offline).as_deref(),
            Some("http://deb.debian.org/debian: Temporary failure resolving 'deb.debian.org'")
        );
        let online = "Hit:1 http://deb.debian.org/debian bookworm InRelease\n\
                      Err:2 http://other.example bookworm InRelease\n  timeout\n";
        assert_eq!(unreachable_reason(0, online), None);
        assert!(unreachable_reason(124, "").unwrap().contains("90 s"));
        assert!(
            unreachable_reason(0, "Reading package lists...\n")
                .unwrap()
                .contains("no package source")
        );
    }
}
