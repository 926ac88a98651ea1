//! Ending server processes an earlier run of ours left behind without a pidfile that names
//! them, so `setup` never starts a server next to a stray one that still holds its ports
//! ("address already in use") or its data directory.
//!
//! Owns one node-side script, [`SWEEP_SCRIPT`]. A process is ours when its executable's name
//! matches the system's pattern *and* its working directory is the system's base directory or
//! under it: the start scripts `cd` there before starting a server (etcd and Sentinel stay there;
//! Redis and PostgreSQL move into their data directory, which is under it). A pidfile can miss a
//! server: a controller killed between starting one and writing its pid, two starts racing on a
//! node, a pidfile that a later start overwrote. Does not own starting or readiness (each
//! system's `db`), and never looks at processes outside the base directory, so a
//! node's own database on the same port is left alone.
//!
//! Also owns [`live_sh`], the shell test of "the pidfile's process is our live server" that the
//! systems' start, signal and readiness scripts share, [`SIGNAL_SCRIPT`], signalling the server a
//! pidfile names and its children, and [`Server`], a system's server process, with the
//! [`Signal`]s sent to it. When a system signals and stops its servers is `systems::lifecycle`'s.

use crate::control::{Cmd, Remote};
use crate::db::DbError;

/// Expands to a shell function `live PID WORD` (a string literal, for `concat!` in front of a
/// script): true when PID is a process that is not a zombie and whose command line mentions WORD
/// — or reads empty, as it does for a moment while the process `exec`s: a server checked right
/// after its start (`setsid` → `sh -c exec` → server) used to look dead at startup.
macro_rules! live_sh {
    () => {
        r#"live() {
  [ -n "$1" ] && [ -r "/proc/$1/status" ] || return 1
  ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null || return 1
  c=$(tr -d '\0' < "/proc/$1/cmdline" 2>/dev/null) || return 1
  case "$c" in ''|*"$2"*) return 0 ;; esac
  return 1
}
"#
    };
}
pub(crate) use live_sh;

/// Shell function `log_tail FILE N` (prepend to a script): the last N lines of a server's log,
/// each cut to 300 characters — or, when there are none, words saying so and naming the file
/// (an empty tail alone told a person nothing).
macro_rules! log_tail_sh {
    () => {
        r#"log_tail() {
  if [ -s "$1" ]; then echo "last lines of $1:"; tail -n "$2" "$1" | cut -c1-300
  elif [ -e "$1" ]; then echo "$1 is empty (the server wrote nothing before it ended)"
  else echo "no log: $1 does not exist (the server never started writing it)"; fi
}
"#
    };
}
pub(crate) use log_tail_sh;

/// Signal a server and its children if its pidfile names a live one: `$1` = pidfile, `$2` = a
/// word its command line mentions (the `live` check: a reused PID is left alone), `$3` = signal,
/// `$4` = `alone` to leave its children be (Redis: a fault is the server's, not its snapshot
/// child's). Children are listed first (`pgrep -P`: PostgreSQL makes each the leader of its own
/// session, so a group signal would miss them; MariaDB's state-transfer scripts and rsync), then
/// the server is signalled before them (a stopped server forks no new ones). With KILL, wait (at
/// most 10 s) until all of them are gone and remove the pidfile. Every built-in system's.
pub const SIGNAL_SCRIPT: &str = concat!(
    live_sh!(),
    r#"pidfile="$1"; word="$2"; sig="$3"; alone="$4"
pid=$(cat "$pidfile" 2>/dev/null || true)
[ -n "$pid" ] || exit 0
live "$pid" "$word" || exit 0
kids=""
[ "$alone" = alone ] || kids=$(pgrep -P "$pid" 2>/dev/null || true)
kill -s "$sig" "$pid" 2>/dev/null || true
for k in $kids; do kill -s "$sig" "$k" 2>/dev/null || true; done
if [ "$sig" = KILL ]; then
  i=0
  while [ $i -lt 200 ]; do
    alive=0
    live "$pid" "$word" && alive=1
    for k in $kids; do [ -d "/proc/$k" ] && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.05; i=$((i+1))
  done
  rm -f "$pidfile"
fi
"#
);

/// The signals the built-in systems send their servers, once: the names `kill -s` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `KILL`: the kill fault, and every stop.
    Kill,
    /// `STOP`: the pause fault.
    Stop,
    /// `CONT`: resume, and before a stop (a paused server).
    Cont,
}

impl Signal {
    /// The name `kill -s` takes (and [`SIGNAL_SCRIPT`]'s `$3`).
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Kill => "KILL",
            Signal::Stop => "STOP",
            Signal::Cont => "CONT",
        }
    }
}

/// The command that sends `sig` to the server `pidfile` names, and its children unless `alone`
/// (see [`SIGNAL_SCRIPT`]).
pub fn signal_cmd(pidfile: &str, word: &str, sig: Signal, alone: bool) -> Cmd {
    let children = if alone { "alone" } else { "children" };
    Cmd::script(SIGNAL_SCRIPT, [pidfile, word, sig.as_str(), children])
}

/// Prints `running` when the pidfile `$1` names a live process whose command line mentions
/// `$2`, else `stopped`.
const RUNNING_SCRIPT: &str = concat!(
    live_sh!(),
    r#"pid=$(cat "$1" 2>/dev/null || true)
if live "$pid" "$2"; then echo running; else echo stopped; fi
"#
);

/// A system's server process on a node, as its pidfile names it: defined once per system
/// (`systems::lifecycle::Lifecycle::server`) and used for its kill, pause and resume signals
/// and the end-of-run `db-status`.
#[derive(Debug, Clone)]
pub struct Server {
    /// The pidfile the server's start script writes.
    pub pidfile: String,
    /// A word the server's command line mentions (a reused PID is left alone).
    pub word: &'static str,
    /// Whether its commands run through `sudo` (a server run as another user).
    pub sudo: bool,
    /// Whether signals reach the server alone, not its children.
    pub alone: bool,
}

impl Server {
    /// Send `sig` to the server and, unless it is [`Server::alone`], its children (see
    /// [`SIGNAL_SCRIPT`]).
    pub fn signal(&self, remote: &dyn Remote, sig: Signal) -> Result<(), DbError> {
        remote.exec_ok(&signal_cmd(&self.pidfile, self.word, sig, self.alone).sudo(self.sudo))?;
        Ok(())
    }

    /// Whether the server runs now (see [`RUNNING_SCRIPT`]).
    pub fn running(&self, remote: &dyn Remote) -> Result<bool, DbError> {
        let out = remote.exec_ok(
            &Cmd::script(RUNNING_SCRIPT, [self.pidfile.as_str(), self.word]).sudo(self.sudo),
        )?;
        Ok(out.trim() == "running")
    }
}

/// `$1` = base directory, `$2` = extended regular expression the executable's file name must
/// match. Resumes then kills every such process and waits (up to 5 s) until they are gone; prints
/// the PIDs it ended.
pub const SWEEP_SCRIPT: &str = r#"dir="${1%/}"; pat="$2"
ours() {
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$$" ] && continue
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    printf '%s\n' "${exe##*/}" | grep -Eq "$pat" || continue
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    case "$cwd" in
      "$dir"|"$dir/"*|"$dir (deleted)") echo "$pid" ;;
    esac
  done
}
pids=$(ours)
[ -n "$pids" ] || exit 0
echo $pids
kill -s CONT $pids 2>/dev/null
kill -s KILL $pids 2>/dev/null
i=0
while [ -n "$(ours)" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
[ -z "$(ours)" ] || { echo "still running after SIGKILL: $(ours)" >&2; exit 1; }
"#;

/// Run [`SWEEP_SCRIPT`] on a node (through sudo when the remote needs it): `exe_pattern` names
/// the system's server executables.
pub fn sweep(remote: &dyn Remote, base_dir: &str, exe_pattern: &str) -> Result<(), DbError> {
    remote.exec_ok(&Cmd::script(SWEEP_SCRIPT, [base_dir, exe_pattern]).sudo(true))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The real script under `sh` against real local processes: copies of `sleep` named like a
    //! server, started inside and outside a temporary base directory.
    use super::*;
    use std::process::{Command, Stdio};

    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
    }

    #[test]
    fn sweep_ends_only_servers_whose_working_directory_is_under_the_base_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        let base = tmp.path().join("base");
        let data = base.join("data");
        let outside = tmp.path().join("elsewhere");
        for d in [&bin, &data, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        let server = bin.join("fakeserver");
        let other = bin.join("otherprog");
        std::fs::copy("/bin/sleep", &server).unwrap();
        std::fs::copy("/bin/sleep", &other).unwrap();
        let start = |exe: &std::path::Path, cwd: &std::path::Path| {
            Command::new(exe)
                .arg("30")
                .current_dir(cwd)
                .stdin(Stdio::null())
                .spawn()
                .unwrap()
        };
        let mut in_base = start(&server, &base);
        let mut in_data = start(&server, &data);
        let mut elsewhere = start(&server, &outside);
        let mut other_name = start(&other, &base);
        let out = Command::new("sh")
            .arg("-c")
            .arg(SWEEP_SCRIPT)
            .arg("sh")
            .arg(format!("{}/", base.display()))
            .arg("^fakeserver")
            .output()
            .unwrap();
        let (a, b) = (in_base.try_wait().unwrap(), in_data.try_wait().unwrap());
        let (c_alive, d_alive) = (alive(elsewhere.id()), alive(other_name.id()));
        for c in [&mut elsewhere, &mut other_name, &mut in_base, &mut in_data] {
            let _ = c.kill();
            let _ = c.wait();
        }
        assert!(out.status.success(), "{out:?}");
        assert!(a.is_some(), "the server in the base dir survived");
        assert!(b.is_some(), "the server in the data dir survived");
        assert!(c_alive, "a server outside the base dir was killed");
        assert!(d_alive, "a program of another name was killed");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains(&in_base.id().to_string()), "{said}");
    }

    #[test]
    fn live_is_true_for_a_running_match_and_false_for_others_zombies_and_the_gone() {
        let check = |pid: u32, word: &str| {
            Command::new("sh")
                .arg("-c")
                .arg(concat!(live_sh!(), r#"live "$1" "$2""#))
                .arg("sh")
                .arg(pid.to_string())
                .arg(word)
                .status()
                .unwrap()
                .success()
        };
        let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
        let id = sleeper.id();
        assert!(check(id, "sleep"));
        assert!(!check(id, "etcd"), "another program's command line");
        let zombie = Command::new("true").spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!check(zombie.id(), "true"), "a zombie is not live");
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        assert!(!check(id, "sleep"), "a reaped process is gone");
        assert!(
            !Command::new("sh")
                .arg("-c")
                .arg(concat!(live_sh!(), r#"live "" sleep"#))
                .status()
                .unwrap()
                .success()
        );
        drop(zombie);
    }

    #[test]
    fn sweep_without_strays_does_nothing_and_succeeds() {
        let tmp = tempfile::tempdir().unwrap();
        let out = Command::new("sh")
            .arg("-c")
            .arg(SWEEP_SCRIPT)
            .arg("sh")
            .arg(tmp.path())
            .arg("^no-such-server$")
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(out.stdout.is_empty());
    }

    /// A server with a child, on this machine: KILL ends both and removes the pidfile; a
    /// pidfile naming a process without the word is left alone; the status script says running
    /// before and stopped after.
    #[test]
    fn signal_script_kills_the_server_and_its_children_and_only_it() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("srv.pid");
        let mut server = std::process::Command::new("sh")
            .args(["-c", "sleep 300 & wait", "fake-server-xyz"])
            .spawn()
            .unwrap();
        std::fs::write(&pidfile, server.id().to_string()).unwrap();
        let run_with = |word: &str, sig: &str, children: &str| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(SIGNAL_SCRIPT)
                .args(["sh", pidfile.to_str().unwrap(), word, sig, children])
                .status()
                .unwrap()
        };
        let run = |word: &str, sig: &str| run_with(word, sig, "children");
        // Let the child start.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let kids = std::process::Command::new("pgrep")
            .args(["-P", &server.id().to_string()])
            .output()
            .unwrap();
        let kid: u32 = String::from_utf8_lossy(&kids.stdout)
            .trim()
            .parse()
            .unwrap();
        // The end-of-run status (`Server::running`) reads the same pidfile the same way.
        let state = |word: &str| {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(RUNNING_SCRIPT)
                .args(["sh", pidfile.to_str().unwrap(), word])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        assert_eq!(state("sleep 300"), "running");
        assert_eq!(state("no-such-word"), "stopped");
        // `alone` stops the server and leaves its child running.
        let state_of = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()?
                        .split_whitespace()
                        .next()
                        .map(String::from)
                })
                .unwrap_or_default()
        };
        assert!(run_with("sleep 300", "STOP", "alone").success());
        assert_eq!(state_of(server.id()), "T");
        assert_ne!(state_of(kid), "T", "the child was stopped too");
        assert!(run_with("sleep 300", "CONT", "alone").success());
        assert!(run("no-such-word", "KILL").success());
        assert!(pidfile.exists(), "another process's pidfile was acted on");
        assert!(run("sleep 300", "KILL").success());
        assert!(!pidfile.exists());
        assert_eq!(state("sleep 300"), "stopped");
        assert!(server.wait().is_ok());
        assert!(
            !std::path::Path::new(&format!("/proc/{kid}")).exists() || {
                // A zombie until init reaps it is gone for our purposes.
                std::fs::read_to_string(format!("/proc/{kid}/status"))
                    .map(|s| s.contains("zombie"))
                    .unwrap_or(true)
            }
        );
    }
}
