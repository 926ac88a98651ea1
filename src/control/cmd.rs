//! Shell command construction: POSIX quoting and the `Cmd` builder.
//!
//! Owns: turning a program + arguments (+ env, cwd, sudo, stdin) into one `sh` command line in
//! which every value is single-quoted. It does not own running anything: that is
//! `control::ssh` (or any other `Remote`).
//!
//! Invariant: a value passed through `arg`, `env`, `cwd` or as a positional argument of
//! `Cmd::script` is never spliced into shell text unquoted. Scripts themselves must be
//! `&'static str`, so a user value can only reach a script through `"$1"`, `"$2"`, ...

use std::fmt;

/// Characters that never need quoting. `=` and `~` are deliberately absent: an unquoted first word
/// `a=b` is an assignment and a leading `~` expands.
fn is_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | ',' | '+' | '@' | '%')
}

/// Quote `s` so that a POSIX shell reads it back as exactly one word equal to `s`.
///
/// Strings made only of `[A-Za-z0-9_./:,+@%-]` are returned as they are (readable logs); every
/// other string, including the empty one, is wrapped in single quotes, with each `'` written as
/// `'\''`. Newlines, `$`, backquotes, `\`, and non-ASCII bytes are literal inside single quotes.
pub fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(is_safe) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// What a `Cmd` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Program {
    /// A program looked up in `PATH`, run with quoted arguments.
    Exec(String),
    /// A fixed script run as `sh -c '<script>' sh <args>`; arguments are `$1`, `$2`, ...
    Script(&'static str),
}

/// A remote command: program (or fixed script), arguments, environment, working directory,
/// whether it needs root, optional stdin bytes and an optional timeout override.
///
/// ```
/// use shakedown::control::Cmd;
/// let c = Cmd::new("etcd").arg("--name").arg("n1").env("ETCD_DEBUG", "1").cwd("/opt/etcd");
/// assert_eq!(c.to_shell(), "cd /opt/etcd && env 'ETCD_DEBUG=1' etcd --name n1");
/// let s = Cmd::script("echo \"$1\" > \"$2\"", ["it's", "/tmp/x"]);
/// assert_eq!(s.to_shell(), "sh -c 'echo \"$1\" > \"$2\"' sh 'it'\\''s' /tmp/x");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cmd {
    program: Program,
    args: Vec<String>,
    env: Vec<(String, String)>,
    cwd: Option<String>,
    sudo: bool,
    stdin: Option<Vec<u8>>,
    timeout_ms: Option<u64>,
}

impl Cmd {
    /// A command running `program` (looked up in the remote `PATH`).
    pub fn new(program: impl Into<String>) -> Cmd {
        Cmd::with_program(Program::Exec(program.into()))
    }

    /// A fixed shell script; `args` become its positional parameters `$1`, `$2`, ...
    ///
    /// Generates `sh -c '<script>' sh '<arg1>' '<arg2>'`. The script is `&'static str` on purpose:
    /// user values must travel as arguments, never as script text.
    pub fn script<I, S>(script: &'static str, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Cmd::with_program(Program::Script(script)).args(args)
    }

    /// A fixed shell script without positional arguments: `Cmd::script(script, [])` without the
    /// type annotation. More can still be added with `arg`/`args` (as `$1`, `$2`, ...).
    pub fn sh(script: &'static str) -> Cmd {
        Cmd::with_program(Program::Script(script))
    }

    fn with_program(program: Program) -> Cmd {
        Cmd {
            program,
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            sudo: false,
            stdin: None,
            timeout_ms: None,
        }
    }

    /// Append one argument.
    pub fn arg(mut self, a: impl Into<String>) -> Cmd {
        self.args.push(a.into());
        self
    }

    /// Append several arguments.
    pub fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Set an environment variable for the command (passed as `env 'KEY=VALUE'`).
    /// `key` must not contain `=`.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Cmd {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Run in directory `dir` (`cd 'dir' && ...`; the command does not run if `cd` fails).
    pub fn cwd(mut self, dir: impl Into<String>) -> Cmd {
        self.cwd = Some(dir.into());
        self
    }

    /// Run as root: wrapped in `sudo -n -- sh -c '...'` when the SSH user is not `root`; no
    /// effect when it is.
    pub fn sudo(mut self, yes: bool) -> Cmd {
        self.sudo = yes;
        self
    }

    /// Bytes written to the command's stdin (then EOF). Without this, stdin is empty.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Cmd {
        self.stdin = Some(bytes.into());
        self
    }

    /// Override `SshConfig::command_timeout_ms` for this command.
    pub fn timeout_ms(mut self, ms: u64) -> Cmd {
        self.timeout_ms = Some(ms);
        self
    }

    /// Bytes for stdin, if any.
    pub fn stdin_bytes(&self) -> Option<&[u8]> {
        self.stdin.as_deref()
    }

    /// The per-command timeout override, if any.
    pub fn timeout_override_ms(&self) -> Option<u64> {
        self.timeout_ms
    }

    /// Whether the command asked for root.
    pub fn wants_sudo(&self) -> bool {
        self.sudo
    }

    /// The command line without sudo wrapping: `[cd DIR && ][env 'K=V' ...] PROGRAM ARGS...`.
    pub fn to_shell(&self) -> String {
        let mut s = String::new();
        if let Some(dir) = &self.cwd {
            s.push_str("cd ");
            s.push_str(&quote(dir));
            s.push_str(" && ");
        }
        if !self.env.is_empty() {
            s.push_str("env");
            for (k, v) in &self.env {
                // `=` is not a safe character, so this is always single-quoted.
                s.push(' ');
                s.push_str(&quote(&format!("{k}={v}")));
            }
            s.push(' ');
        }
        match &self.program {
            Program::Exec(p) => s.push_str(&quote(p)),
            Program::Script(script) => {
                s.push_str("sh -c ");
                s.push_str(&quote(script));
                s.push_str(" sh");
            }
        }
        for a in &self.args {
            s.push(' ');
            s.push_str(&quote(a));
        }
        s
    }

    /// The command line as run by SSH user `user`: `to_shell()`, wrapped as
    /// `sudo -n -- sh -c '<to_shell()>'` when `sudo(true)` was asked and `user` is not `root`.
    /// `-n` makes sudo fail instead of prompting for a password.
    pub fn to_shell_as(&self, user: &str) -> String {
        let inner = self.to_shell();
        if self.sudo && user != "root" {
            format!("sudo -n -- sh -c {}", quote(&inner))
        } else {
            inner
        }
    }
}

/// Longest command text shown in messages before it is cut with `...`.
const DISPLAY_MAX_CHARS: usize = 200;

impl fmt::Display for Cmd {
    /// The shell text (without sudo), cut to 200 characters for error messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.to_shell();
        if s.chars().count() <= DISPLAY_MAX_CHARS {
            return f.write_str(&s);
        }
        let cut: String = s.chars().take(DISPLAY_MAX_CHARS).collect();
        write!(f, "{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::process::Command;

    /// Run `shell` with the local `/bin/sh` and return stdout bytes.
    fn sh(shell: &str, path_prefix: Option<&std::path::Path>) -> Vec<u8> {
        let mut c = Command::new("/bin/sh");
        c.arg("-c").arg(shell);
        if let Some(p) = path_prefix {
            let path = std::env::var("PATH").unwrap_or_default();
            c.env("PATH", format!("{}:{path}", p.display()));
        }
        let out = c.output().expect("run /bin/sh");
        assert!(out.status.success(), "sh failed: {out:?}");
        out.stdout
    }

    #[test]
    fn quote_cases() {
        assert_eq!(quote(""), "''");
        assert_eq!(quote("abc"), "abc");
        assert_eq!(quote("/usr/bin/etcd-3.5"), "/usr/bin/etcd-3.5");
        assert_eq!(quote("--name=x"), "'--name=x'");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("'"), "''\\'''");
        assert_eq!(quote("a\nb"), "'a\nb'");
        assert_eq!(quote("$(x)"), "'$(x)'");
        assert_eq!(quote("ü"), "'ü'");
        assert_eq!(quote("~"), "'~'");
        assert_eq!(quote("*"), "'*'");
    }

    #[test]
    fn quote_round_trips_through_sh_for_fixed_nasty_strings() {
        for s in [
            "", "'", "''", "\"", "\\", "$(id)", "`id`", "a\nb", "\n", " x ", "ü🚀", "*", "~", "-n",
            "a=b", "!x", "%s", "\t",
        ] {
            let got = sh(&format!("printf %s {}", quote(s)), None);
            assert_eq!(got, s.as_bytes(), "{s:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn quote_round_trips_through_sh(s in "[^\\x00]{0,40}") {
            let got = sh(&format!("printf %s {}", quote(&s)), None);
            prop_assert_eq!(got, s.as_bytes());
        }
    }

    #[test]
    fn to_shell_shapes() {
        assert_eq!(Cmd::new("true").to_shell(), "true");
        assert_eq!(
            Cmd::new("etcd")
                .arg("--name")
                .arg("n 1")
                .args(["a", "b'c"])
                .to_shell(),
            "etcd --name 'n 1' a 'b'\\''c'"
        );
        assert_eq!(
            Cmd::new("ls")
                .cwd("/tmp/x y")
                .env("A", "1")
                .env("B", "$x")
                .to_shell(),
            "cd '/tmp/x y' && env 'A=1' 'B=$x' ls"
        );
        assert_eq!(
            Cmd::script("echo \"$1\"", ["$(id)"]).to_shell(),
            "sh -c 'echo \"$1\"' sh '$(id)'"
        );
        assert_eq!(Cmd::sh("exit 3").to_shell(), "sh -c 'exit 3' sh");
        assert_eq!(
            Cmd::sh("echo \"$1\"").arg("x y"),
            Cmd::script("echo \"$1\"", ["x y"])
        );
    }

    #[test]
    fn sudo_wraps_only_for_non_root_users() {
        let c = Cmd::new("cat").arg("/etc/shadow file").sudo(true);
        assert_eq!(c.to_shell_as("root"), "cat '/etc/shadow file'");
        assert_eq!(
            c.to_shell_as("admin"),
            "sudo -n -- sh -c 'cat '\\''/etc/shadow file'\\'''"
        );
        let plain = Cmd::new("id");
        assert_eq!(plain.to_shell_as("admin"), "id");
        assert!(c.wants_sudo() && !plain.wants_sudo());
    }

    #[test]
    fn sudo_wrapped_command_runs_byte_exact_through_a_fake_sudo() {
        // A `sudo` that drops `-n --` and runs the rest, to check the double quoting end to end.
        let dir = tempfile::tempdir().unwrap();
        let sudo = dir.path().join("sudo");
        std::fs::write(
            &sudo,
            "#!/bin/sh\n[ \"$1\" = -n ] || exit 90\nshift\n[ \"$1\" = -- ] || exit 91\nshift\nexec \"$@\"\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&sudo, std::fs::Permissions::from_mode(0o755)).unwrap();
        let nasty = ["it's", "$(id)", "a\nb", "", "ü \\ \""];
        let c = Cmd::script(
            "for a; do printf '%s|' \"$a\"; done; printf %s \"$V\"",
            nasty,
        )
        .env("V", "v'$x")
        .cwd("/")
        .sudo(true);
        let shell = c.to_shell_as("admin");
        assert!(shell.starts_with("sudo -n -- sh -c "), "{shell}");
        let got = sh(&shell, Some(dir.path()));
        assert_eq!(
            String::from_utf8(got).unwrap(),
            "it's|$(id)|a\nb||ü \\ \"|v'$x"
        );
    }

    #[test]
    fn display_cuts_long_commands() {
        let c = Cmd::new("echo").arg("x".repeat(500));
        let s = c.to_string();
        assert!(s.ends_with("...") && s.chars().count() == DISPLAY_MAX_CHARS + 3);
        assert_eq!(Cmd::new("echo").arg("hi").to_string(), "echo hi");
    }
}
