//! Packages on this machine (the controller): which are missing (`dpkg-query`), and installing
//! them with `apt-get` as root — one shakedown at a time (a lock of our own, so parallel tests and
//! runs do not race for dpkg), after waiting a bounded time for any other package manager to let
//! go of dpkg's lock (naming it while we wait), running `apt-get update` only when the package
//! lists cannot serve a package. Every command's output is kept in [`Installed::log`].
//!
//! Does not own which packages are needed, nor anything on a remote node (`provision::node`).

use super::{Installed, ProvisionError, apt_gist};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// dpkg's locks, as apt takes them (the frontend lock first).
const DPKG_LOCKS: [&str; 2] = ["/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock"];
/// How long to wait for another package manager (or another shakedown) before giving up.
pub const LOCK_WAIT: Duration = Duration::from_secs(300);
/// How often to look at the locks again while waiting.
const LOCK_POLL: Duration = Duration::from_millis(500);

/// Whether this process runs as root.
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A command as a person would type it (for messages).
pub(crate) fn command_line(cmd: &Command) -> String {
    let mut parts = vec![cmd.get_program().to_string_lossy().into_owned()];
    parts.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}

/// Runs `cmd`, appending its command line and output to `log`; returns whether it succeeded and
/// its combined output.
fn run_logged(cmd: &mut Command, log: &mut String) -> Result<(bool, String), ProvisionError> {
    let line = command_line(cmd);
    let out = cmd
        .stdin(Stdio::null())
        .env("DEBIAN_FRONTEND", "noninteractive")
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| ProvisionError::Spawn {
            command: line.clone(),
            reason: e.to_string(),
        })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    log.push_str(&format!("$ {line}\n{text}"));
    if !out.status.success() {
        log.push_str(&format!("({line}: {})\n", out.status));
    }
    Ok((out.status.success(), text))
}

/// Which of `packages` are not installed on this machine (per `dpkg-query`), in their order.
pub fn missing(packages: &[String]) -> Result<Vec<String>, ProvisionError> {
    if packages.is_empty() {
        return Ok(Vec::new());
    }
    let mut cmd = Command::new("dpkg-query");
    cmd.args(["-W", "-f", "${Package} ${db:Status-Status}\\n"])
        .args(packages);
    let line = command_line(&cmd);
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ProvisionError::Spawn {
            command: line,
            reason: format!("{e} (is this a Debian machine?)"),
        })?;
    // dpkg-query exits 1 when some package is unknown; the known ones are still printed.
    let stdout = String::from_utf8_lossy(&out.stdout);
    Ok(missing_from_status(packages, &stdout))
}

/// The packages not listed as `installed` in `dpkg-query -W -f '${Package} ${db:Status-Status}\n'`.
pub fn missing_from_status(packages: &[String], status: &str) -> Vec<String> {
    let installed: Vec<&str> = status
        .lines()
        .filter_map(|line| line.split_once(' '))
        .filter(|(_, status)| status.trim() == "installed")
        .map(|(package, _)| package.split(':').next().unwrap_or(package))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for p in packages {
        let bare = p.split(':').next().unwrap_or(p);
        if !installed.contains(&bare) && !out.contains(p) {
            out.push(p.clone());
        }
    }
    out
}

/// Who holds the POSIX or flock lock on `path` now, as `name (pid N)`, per `/proc/locks`.
pub fn lock_holder(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let dev = meta.dev();
    let file = (
        u64::from(libc::major(dev)),
        u64::from(libc::minor(dev)),
        meta.ino(),
    );
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let pid = holder_pid(&locks, file)?;
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "a process".to_string());
    Some(format!("{name} (pid {pid})"))
}

/// The PID holding a lock on the file `(major, minor, inode)` in `/proc/locks` text (`1: POSIX
/// ADVISORY WRITE 1234 08:01:5678 0 EOF`, device numbers in hex); blocked waiters (`->` lines)
/// do not hold it.
fn holder_pid(locks: &str, file: (u64, u64, u64)) -> Option<u32> {
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) == Some(&"->") {
            return None;
        }
        let (pid, id) = (fields.get(4)?, fields.get(5)?);
        let mut parts = id.split(':');
        let major = u64::from_str_radix(parts.next()?, 16).ok()?;
        let minor = u64::from_str_radix(parts.next()?, 16).ok()?;
        let inode: u64 = parts.next()?.parse().ok()?;
        ((major, minor, inode) == file)
            .then(|| pid.parse().ok())
            .flatten()
    })
}

/// Waits until no process holds dpkg's locks, up to `deadline`.
fn wait_for_dpkg(deadline: Instant, waited_since: Instant) -> Result<(), ProvisionError> {
    let mut said = false;
    loop {
        let held = DPKG_LOCKS
            .iter()
            .find_map(|l| lock_holder(Path::new(l)).map(|h| (*l, h)));
        let Some((lock, holder)) = held else {
            return Ok(());
        };
        if Instant::now() >= deadline {
            return Err(ProvisionError::Busy {
                lock: lock.to_string(),
                holder,
                waited_s: waited_since.elapsed().as_secs(),
            });
        }
        if !said {
            tracing::warn!("waiting for {holder} to release {lock} (at most {LOCK_WAIT:?})");
            said = true;
        }
        std::thread::sleep(LOCK_POLL);
    }
}

/// Our own lock file: one shakedown installs at a time.
fn own_lock_path() -> PathBuf {
    let dir = Path::new("/run/lock");
    if dir.is_dir() {
        dir.join("shakedown-apt.lock")
    } else {
        std::env::temp_dir().join("shakedown-apt.lock")
    }
}

/// Holds our install lock until dropped (the kernel releases it if we die).
struct OwnLock(#[allow(dead_code)] File);

fn take_own_lock(deadline: Instant, since: Instant) -> Result<OwnLock, ProvisionError> {
    use std::os::fd::AsRawFd;
    let path = own_lock_path();
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| ProvisionError::Spawn {
            command: format!("open {}", path.display()),
            reason: e.to_string(),
        })?;
    loop {
        // SAFETY: flock on a descriptor we own; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(OwnLock(file));
        }
        if Instant::now() >= deadline {
            return Err(ProvisionError::Busy {
                lock: path.display().to_string(),
                holder: lock_holder(&path).unwrap_or_else(|| "another shakedown".into()),
                waited_s: since.elapsed().as_secs(),
            });
        }
        std::thread::sleep(LOCK_POLL);
    }
}

/// Whether apt's package lists offer a candidate for every one of `packages`.
fn candidates_known(packages: &[String], log: &mut String) -> Result<bool, ProvisionError> {
    let mut cmd = Command::new("apt-cache");
    cmd.arg("policy").args(packages);
    let (_, out) = run_logged(&mut cmd, log)?;
    let with_candidate = out
        .lines()
        .filter(|l| {
            l.trim_start()
                .strip_prefix("Candidate:")
                .is_some_and(|c| c.trim() != "(none)")
        })
        .count();
    Ok(with_candidate >= packages.len())
}

fn apt_install(packages: &[String], log: &mut String) -> Result<(bool, String), ProvisionError> {
    let mut cmd = Command::new("apt-get");
    cmd.args([
        "-o",
        &format!("DPkg::Lock::Timeout={}", LOCK_WAIT.as_secs()),
        "install",
        "-y",
        "-q",
        "--no-install-recommends",
    ])
    .args(packages);
    run_logged(&mut cmd, log)
}

fn apt_update(log: &mut String) -> Result<(), ProvisionError> {
    let mut cmd = Command::new("apt-get");
    cmd.args([
        "-o",
        &format!("DPkg::Lock::Timeout={}", LOCK_WAIT.as_secs()),
        "-q",
        "update",
    ]);
    run_logged(&mut cmd, log).map(|_| ())
}

/// Makes sure `packages` are installed on this machine: installs the missing ones with apt-get
/// when root (else [`ProvisionError::NotRoot`]). Returns what it installed and apt's output.
pub fn ensure(packages: &[String]) -> Result<Installed, ProvisionError> {
    let need = missing(packages)?;
    if need.is_empty() {
        return Ok(Installed::nothing());
    }
    if !is_root() {
        return Err(ProvisionError::NotRoot { packages: need });
    }
    let since = Instant::now();
    let deadline = since + LOCK_WAIT;
    let _own = take_own_lock(deadline, since)?;
    // Another shakedown may have installed them while we waited.
    let need = missing(packages)?;
    if need.is_empty() {
        return Ok(Installed::nothing());
    }
    wait_for_dpkg(deadline, since)?;
    let mut log = String::new();
    let mut updated = false;
    if !candidates_known(&need, &mut log)? {
        apt_update(&mut log)?;
        updated = true;
    }
    let (mut ok, mut out) = apt_install(&need, &mut log)?;
    if !ok && !updated {
        // Stale lists (a 404 for a superseded version) or a package added since: refresh once.
        apt_update(&mut log)?;
        (ok, out) = apt_install(&need, &mut log)?;
    }
    let still = missing(packages)?;
    if !ok || !still.is_empty() {
        return Err(ProvisionError::Failed {
            place: "this machine".into(),
            packages: if still.is_empty() { need } else { still },
            detail: apt_gist(&out),
        });
    }
    Ok(Installed {
        packages: need,
        log,
    })
}

/// `ARCH ID CODENAME` of this machine (as `provision::node` asks a node).
pub fn release() -> Result<String, ProvisionError> {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", super::RELEASE_SCRIPT]);
    let mut log = String::new();
    let (_, out) = run_logged(&mut cmd, &mut log)?;
    Ok(out.trim().to_string())
}

/// The hard dependencies of `batch` per this machine's package lists (`apt-cache depends`).
pub fn depends(
    batch: &[String],
    log: &mut String,
) -> Result<std::collections::BTreeMap<String, super::deps::Groups>, ProvisionError> {
    let mut cmd = Command::new("apt-cache");
    cmd.args([
        "depends",
        "--no-recommends",
        "--no-suggests",
        "--no-conflicts",
        "--no-breaks",
        "--no-replaces",
        "--no-enhances",
    ])
    .args(batch);
    let mut scratch = String::new();
    let (_, out) = run_logged(&mut cmd, &mut scratch)?;
    log.push_str(&format!("$ apt-cache depends {}\n", batch.join(" ")));
    Ok(super::deps::parse_depends(&out))
}

/// One download at a time (nodes are provisioned in parallel and share the directory).
static DOWNLOADS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Where this process keeps downloaded `.deb` files ([`clear_downloads`] removes it).
fn download_dir() -> PathBuf {
    std::env::temp_dir().join(format!("shakedown-debs-{}", std::process::id()))
}

/// The `.deb` file of `package` already in `dir`, if any (`NAME_VERSION_ARCH.deb`).
fn downloaded(dir: &Path, package: &str) -> Option<PathBuf> {
    let prefix = format!("{package}_");
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        (name.starts_with(&prefix) && name.ends_with(".deb")).then(|| e.path())
    })
}

/// Downloads the `.deb` file of each of `packages` with `apt-get download` (once per process;
/// refreshing the package lists once if apt cannot find one) and returns their paths.
pub fn download(packages: &[String], log: &mut String) -> Result<Vec<PathBuf>, ProvisionError> {
    let _one = DOWNLOADS.lock().unwrap_or_else(|p| p.into_inner());
    let dir = download_dir();
    std::fs::create_dir_all(&dir).map_err(|e| ProvisionError::Spawn {
        command: format!("mkdir {}", dir.display()),
        reason: e.to_string(),
    })?;
    let todo: Vec<String> = packages
        .iter()
        .filter(|p| downloaded(&dir, p).is_none())
        .cloned()
        .collect();
    if !todo.is_empty() {
        let fetch = |log: &mut String| {
            let mut cmd = Command::new("apt-get");
            cmd.current_dir(&dir).args(["-q", "download"]).args(&todo);
            run_logged(&mut cmd, log)
        };
        let (mut ok, mut out) = fetch(log)?;
        if !ok && is_root() {
            apt_update(log)?;
            (ok, out) = fetch(log)?;
        }
        if !ok {
            return Err(ProvisionError::Failed {
                place: "this machine (apt-get download)".into(),
                packages: todo,
                detail: apt_gist(&out),
            });
        }
    }
    packages
        .iter()
        .map(|p| {
            downloaded(&dir, p).ok_or_else(|| ProvisionError::Failed {
                place: "this machine (apt-get download)".into(),
                packages: vec![p.clone()],
                detail: format!("no .deb file for it in {}", dir.display()),
            })
        })
        .collect()
}

/// Removes the `.deb` files this process downloaded.
pub fn clear_downloads() {
    let _ = std::fs::remove_dir_all(download_dir());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_name_what_is_missing() {
        let want: Vec<String> = ["a", "b", "c", "d:amd64"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let status = "a installed\nb not-installed\nd:amd64 installed\n";
        assert_eq!(missing_from_status(&want, status), vec!["b", "c"]);
    }

    #[test]
    fn the_lock_holder_is_the_one_holding_not_waiting() {
        let locks = "1: POSIX  ADVISORY  WRITE 4242 08:01:77 0 EOF\n\
                     1: -> POSIX  ADVISORY  WRITE 5151 08:01:77 0 EOF\n\
                     2: FLOCK  ADVISORY  WRITE 99 00:1a:12 0 EOF\n";
        assert_eq!(holder_pid(locks, (8, 1, 77)), Some(4242));
        assert_eq!(holder_pid(locks, (0, 0x1a, 12)), Some(99));
        // Same inode on another device: not this file.
        assert_eq!(holder_pid(locks, (8, 2, 77)), None);
        assert_eq!(holder_pid(locks, (8, 1, 5)), None);
        assert_eq!(holder_pid("garbage\n\n", (8, 1, 5)), None);
    }

    #[test]
    fn a_held_lock_names_its_holder() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("lock");
        let f = File::create(&path).expect("create");
        // SAFETY: flock on a descriptor we own.
        assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
        let holder = lock_holder(&path).expect("held");
        assert!(
            holder.contains(&format!("pid {}", std::process::id())),
            "{holder}"
        );
        // Unlocked explicitly: a child a parallel test forks may share the descriptor until it
        // execs, so closing ours alone need not release the lock at once.
        // SAFETY: as above.
        assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_UN) }, 0);
        assert_eq!(lock_holder(&path), None);
    }
}
