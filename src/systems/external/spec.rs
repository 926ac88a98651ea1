//! The TOML spec of an external system (`systems/NAME.toml` or any `FILE.toml`): what it is
//! called, which Debian packages and files it needs, its per-node commands, the logs to collect,
//! its user options and the client program speaking the JSON-lines protocol.
//!
//! Owns parsing and validating a spec (every error names `file:line` and the field), resolving
//! `--db NAME|FILE.toml` to a file, and applying `--db-opt key=value` to the spec's options.
//! Does no remote IO and runs nothing: `db` turns the commands into `Cmd`s, `client` starts the
//! client program. Reads only the spec file and the files it lists for upload.
//!
//! This file parses; `spec::config` is the configuration a run uses (options applied, refusals).

use crate::options::ConfigError;
use crate::spec::{at, parse_toml};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

mod config;
pub use config::{ExternalConfig, apply_opts, configure};

/// The workload kinds (`kind` of `workloads/*.toml`) a client may declare in `client.workloads`.
/// The lock kinds ([`crate::generator::lock::is_lock_kind`]) and the log kind are served only by
/// a client that declares them: their ops are not guessable from the register's.
pub const WORKLOAD_KINDS: [&str; 6] = [
    "register",
    "list-append",
    crate::generator::set::KIND,
    crate::generator::lock::KIND,
    crate::generator::lock::FENCED_KIND,
    crate::generator::log::KIND,
];

/// Folder of user-editable system specs, relative to the working directory.
pub const SYSTEMS_DIR: &str = "systems";

/// One per-node command of a spec. Which of them are given decides the system's abilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommandKind {
    /// First step of every setup (idempotent: install what the packages do not bring).
    Install,
    /// After `wipe` and the file uploads: write config files, create users.
    Setup,
    /// Start the node's server in the background (required; also restarts after `kill`).
    Start,
    /// Stop the node's server (required; must succeed when nothing runs).
    Stop,
    /// SIGKILL the node's server (with `start`: the kill ability).
    Kill,
    /// SIGSTOP the node's server (with `resume`: the pause ability).
    Pause,
    /// SIGCONT the node's server.
    Resume,
    /// Remove the data of earlier runs (before the uploads and `setup`).
    Wipe,
    /// Exit 0 when the node serves clients (required; polled).
    Ready,
    /// Print the names of the nodes this node believes lead (the primaries ability).
    Primaries,
    /// Make this node the primary (the promote ability).
    Promote,
    /// Print the system's version (first line is recorded in test.json).
    Version,
    /// Print this node's view of the membership, one member per line (the membership ability,
    /// with `remove_member`, `add_member` and `wipe`).
    Members,
    /// Ask this node to remove the member `$SHAKEDOWN_TARGET` from the cluster.
    RemoveMember,
    /// Ask this node to add `$SHAKEDOWN_TARGET` to the cluster.
    AddMember,
}

impl CommandKind {
    /// Every command, in the order the spec documents them.
    pub const ALL: [CommandKind; 15] = [
        CommandKind::Install,
        CommandKind::Setup,
        CommandKind::Start,
        CommandKind::Stop,
        CommandKind::Kill,
        CommandKind::Pause,
        CommandKind::Resume,
        CommandKind::Wipe,
        CommandKind::Ready,
        CommandKind::Primaries,
        CommandKind::Promote,
        CommandKind::Version,
        CommandKind::Members,
        CommandKind::RemoveMember,
        CommandKind::AddMember,
    ];

    /// The commands the membership ability needs, all or none.
    pub const MEMBERSHIP: [CommandKind; 4] = [
        CommandKind::Members,
        CommandKind::RemoveMember,
        CommandKind::AddMember,
        CommandKind::Wipe,
    ];

    /// The key in `[commands]`.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandKind::Install => "install",
            CommandKind::Setup => "setup",
            CommandKind::Start => "start",
            CommandKind::Stop => "stop",
            CommandKind::Kill => "kill",
            CommandKind::Pause => "pause",
            CommandKind::Resume => "resume",
            CommandKind::Wipe => "wipe",
            CommandKind::Ready => "ready",
            CommandKind::Primaries => "primaries",
            CommandKind::Promote => "promote",
            CommandKind::Version => "version",
            CommandKind::Members => "members",
            CommandKind::RemoveMember => "remove_member",
            CommandKind::AddMember => "add_member",
        }
    }
}

/// A file uploaded to every node at setup (after `wipe`, before `setup`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecFile {
    /// Absolute path on the node.
    pub dest: String,
    /// Permission bits.
    pub mode: u32,
    /// The file's bytes, read when the spec is loaded.
    pub contents: Vec<u8>,
}

/// A user option of the spec, set with `--db-opt key=value`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OptionSpec {
    /// Value when `--db-opt` does not set it.
    pub default: String,
    /// The values accepted; empty = any value.
    pub allowed: Vec<String>,
    /// What it does, for error messages.
    pub help: String,
}

/// Where a spec's database keeps the data a power failure must not take (`[durability]`): the
/// directory the lose-unsynced layer is mounted on in runs with `power-loss`, `os-crash` or a
/// `disk` fault, and the files the `bitflip` / `truncate` faults choose from. Not the spec's
/// `data_dir`: that is the node's working directory (config, pidfile, logs), which the layer
/// must not cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Durability {
    /// Absolute path on each node, under `data_dir` (what `Abilities::data_dir` answers).
    pub dir: String,
    /// Globs relative to `dir` of the files holding acknowledged data (`*` crosses `/`); empty:
    /// none declared, and the corruption faults need their own `files`.
    pub files: Vec<String>,
}

/// A validated system spec.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalSpec {
    /// The system's name (test names, messages, test.json).
    pub name: String,
    /// The spec file.
    pub path: PathBuf,
    /// The spec's folder: relative `files` sources and the client's working directory.
    pub dir: PathBuf,
    /// Debian packages installed on every node when missing.
    pub packages: Vec<String>,
    /// Data directory on each node (`$4` of every command).
    pub data_dir: String,
    /// The database's durable data under `data_dir` (`[durability]`); `None`: not declared, and
    /// the faults that need it are refused.
    pub durability: Option<Durability>,
    /// Absolute log paths on each node, downloaded after the run.
    pub logs: Vec<String>,
    /// Files uploaded to every node.
    pub files: Vec<SpecFile>,
    /// User options, by key.
    pub options: BTreeMap<String, OptionSpec>,
    /// The scripts given, by command.
    pub commands: BTreeMap<CommandKind, String>,
    /// The client program and its arguments (run locally, in `dir`).
    pub client: Vec<String>,
    /// Workload kinds the client performs (`register`, `list-append`, `set`); empty = not declared.
    pub workloads: Vec<String>,
    /// How long `ready` is polled before setup fails.
    pub ready_timeout_s: f64,
    /// Timeout of each remote command except `install`.
    pub command_timeout_s: f64,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Spanned<String>,
    #[serde(default)]
    packages: Vec<Spanned<String>>,
    data_dir: Option<Spanned<String>>,
    durability: Option<Spanned<RawDurability>>,
    #[serde(default)]
    logs: Vec<Spanned<String>>,
    #[serde(default)]
    files: Vec<Spanned<RawFile>>,
    #[serde(default)]
    options: BTreeMap<Spanned<String>, Spanned<RawOption>>,
    commands: Spanned<BTreeMap<Spanned<String>, Spanned<String>>>,
    client: Spanned<RawClient>,
    ready_timeout_s: Option<Spanned<f64>>,
    command_timeout_s: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDurability {
    dir: Spanned<String>,
    #[serde(default)]
    files: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    source: Spanned<String>,
    dest: Spanned<String>,
    mode: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOption {
    default: Spanned<String>,
    #[serde(default)]
    allowed: Vec<String>,
    #[serde(default)]
    help: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClient {
    command: Spanned<Vec<String>>,
    #[serde(default)]
    workloads: Option<Spanned<Vec<String>>>,
}

/// Where `--db ARG` points: a path when it ends in `.toml` or has a `/`, else
/// `systems/ARG.toml` in the working directory, then in the source tree this binary was built
/// from. `None` when it names nothing (the caller then lists the built-in systems).
pub fn locate(arg: &str) -> Option<PathBuf> {
    if arg.ends_with(".toml") || arg.contains('/') {
        return Some(PathBuf::from(arg));
    }
    let file = format!("{arg}.toml");
    [
        Path::new(SYSTEMS_DIR).join(&file),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(SYSTEMS_DIR)
            .join(&file),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Read and validate the spec at `path`.
pub fn load(path: &Path) -> Result<ExternalSpec, ConfigError> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigError::new(
            &label,
            format!("cannot read the system spec: {}", io_words(&e)),
        )
    })?;
    parse(&text, path)
}

fn io_words(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// A remote path: absolute, no `..`, no whitespace or control characters.
fn is_remote_path(s: &str) -> bool {
    s.starts_with('/')
        && !s.split('/').any(|c| c == "..")
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// A path relative to a directory: not empty, not absolute, no `.` or `..` component, no
/// whitespace or control characters (globs' `*`, `?` and `[...]` are allowed).
fn is_relative_path(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('/')
        && !s.split('/').any(|c| c.is_empty() || c == "." || c == "..")
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// `rel` under `base` unless it is absolute.
fn under(base: &str, rel: &str) -> String {
    if rel.starts_with('/') {
        rel.to_string()
    } else {
        format!("{}/{}", base.trim_end_matches('/'), rel)
    }
}

/// Validate spec `text` read from `path` (relative file sources resolve against its folder).
pub fn parse(text: &str, path: &Path) -> Result<ExternalSpec, ConfigError> {
    let label = path.display().to_string();
    let raw: RawSpec = parse_toml(text, &label)?;
    let err = |offset: usize, message: String| {
        ConfigError::new(at(&label, Some(line_of(text, offset))), message)
    };

    let name = raw.name.get_ref().trim().to_string();
    if !is_name(&name) {
        return Err(err(
            raw.name.span().start,
            format!(
                "name = {name:?}: expected lowercase letters, digits, '-' or '_', starting with a letter"
            ),
        ));
    }
    let mut packages = Vec::new();
    for p in &raw.packages {
        if !crate::provision::valid_package_name(p.get_ref()) {
            return Err(err(
                p.span().start,
                format!("packages: {:?} is not a Debian package name", p.get_ref()),
            ));
        }
        packages.push(p.get_ref().clone());
    }
    let data_dir = match &raw.data_dir {
        Some(d) if !is_remote_path(d.get_ref()) || d.get_ref() == "/" => {
            return Err(err(
                d.span().start,
                format!(
                    "data_dir = {:?}: expected an absolute path below / without spaces or '..'",
                    d.get_ref()
                ),
            ));
        }
        Some(d) => d.get_ref().trim_end_matches('/').to_string(),
        None => format!("/tmp/shakedown-{name}"),
    };
    let durability = parse_durability(raw.durability.as_ref(), &data_dir, &err)?;
    let mut logs = Vec::new();
    for l in &raw.logs {
        let p = under(&data_dir, l.get_ref());
        if l.get_ref().is_empty() || !is_remote_path(&p) {
            return Err(err(
                l.span().start,
                format!(
                    "logs: {:?}: expected a path (relative ones are under data_dir) without spaces or '..'",
                    l.get_ref()
                ),
            ));
        }
        logs.push(p);
    }
    let dir = path
        .parent()
        .map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        })
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let files = parse_files(&raw.files, &dir, &data_dir, &err)?;
    let options = parse_options(&raw.options, &err)?;
    let commands = parse_commands(&raw.commands, &err)?;
    let client = raw.client.get_ref().command.get_ref().clone();
    if client.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(err(
            raw.client.get_ref().command.span().start,
            "client.command: expected the program and its arguments, e.g. [\"python3\", \"client.py\"]".into(),
        ));
    }
    let mut workloads = Vec::new();
    if let Some(w) = &raw.client.get_ref().workloads {
        for kind in w.get_ref() {
            if !WORKLOAD_KINDS.contains(&kind.as_str()) {
                return Err(err(
                    w.span().start,
                    format!(
                        "client.workloads: {kind:?} is not a workload kind (kinds: {})",
                        WORKLOAD_KINDS.join(", ")
                    ),
                ));
            }
            workloads.push(kind.clone());
        }
    }
    let seconds = |v: &Option<Spanned<f64>>, key: &str, default: f64| match v {
        None => Ok(default),
        Some(s) if s.get_ref().is_finite() && *s.get_ref() > 0.0 => Ok(*s.get_ref()),
        Some(s) => Err(err(
            s.span().start,
            format!(
                "{key} = {}: expected a number of seconds above 0",
                s.get_ref()
            ),
        )),
    };
    Ok(ExternalSpec {
        name,
        path: path.to_path_buf(),
        dir,
        packages,
        data_dir,
        durability,
        logs,
        files,
        options,
        commands,
        client,
        workloads,
        ready_timeout_s: seconds(&raw.ready_timeout_s, "ready_timeout_s", 120.0)?,
        command_timeout_s: seconds(&raw.command_timeout_s, "command_timeout_s", 60.0)?,
    })
}
/// Where a spec's errors point: the byte offset in its text, and the message.
type ErrAt<'a> = &'a dyn Fn(usize, String) -> ConfigError;

/// `[durability]`: the directory the lose-unsynced layer covers (under `data_dir`, never it)
/// and the globs of the files holding acknowledged data.
fn parse_durability(
    raw: Option<&Spanned<RawDurability>>,
    data_dir: &str,
    err: ErrAt<'_>,
) -> Result<Option<Durability>, ConfigError> {
    let Some(d) = raw else {
        return Ok(None);
    };
    let d = d.get_ref();
    let rel = d.dir.get_ref().trim_end_matches('/');
    if !is_relative_path(rel) {
        return Err(err(
            d.dir.span().start,
            format!(
                "durability.dir = {:?}: expected a directory relative to data_dir, such as \"data\" (the layer that loses unsynced writes is mounted there, so it must not be data_dir itself, which holds the config, pidfile and logs; no '..', '.' or spaces)",
                d.dir.get_ref()
            ),
        ));
    }
    let mut files = Vec::new();
    for g in &d.files {
        if !is_relative_path(g.get_ref()) {
            return Err(err(
                g.span().start,
                format!(
                    "durability.files: {:?}: expected a glob relative to durability.dir, such as \"wal/*.log\" (no leading '/', '..', '.' or spaces)",
                    g.get_ref()
                ),
            ));
        }
        files.push(g.get_ref().clone());
    }
    Ok(Some(Durability {
        dir: under(data_dir, rel),
        files,
    }))
}

/// `[[files]]`: each source read (relative to the spec's folder `dir`), its destination (under
/// `data_dir` when relative) and mode.
fn parse_files(
    raw: &[Spanned<RawFile>],
    dir: &Path,
    data_dir: &str,
    err: ErrAt<'_>,
) -> Result<Vec<SpecFile>, ConfigError> {
    let mut files = Vec::new();
    for f in raw {
        let f = f.get_ref();
        let source = dir.join(f.source.get_ref());
        let contents = std::fs::read(&source).map_err(|e| {
            err(
                f.source.span().start,
                format!("files: source {}: {}", source.display(), io_words(&e)),
            )
        })?;
        let dest = under(data_dir, f.dest.get_ref());
        if f.dest.get_ref().is_empty() || !is_remote_path(&dest) {
            return Err(err(
                f.dest.span().start,
                format!(
                    "files: dest {:?}: expected a path (relative ones are under data_dir) without spaces or '..'",
                    f.dest.get_ref()
                ),
            ));
        }
        let mode = match &f.mode {
            None => 0o644,
            Some(m) => u32::from_str_radix(m.get_ref().trim_start_matches("0o"), 8)
                .ok()
                .filter(|m| *m <= 0o7777)
                .ok_or_else(|| {
                    err(
                        m.span().start,
                        format!(
                            "files: mode {:?}: expected octal permission bits such as \"0755\"",
                            m.get_ref()
                        ),
                    )
                })?,
        };
        files.push(SpecFile {
            dest,
            mode,
            contents,
        });
    }
    Ok(files)
}

/// `[options.NAME]`: option names, defaults among the allowed values.
fn parse_options(
    raw: &BTreeMap<Spanned<String>, Spanned<RawOption>>,
    err: ErrAt<'_>,
) -> Result<BTreeMap<String, OptionSpec>, ConfigError> {
    let mut options = BTreeMap::new();
    for (key, opt) in raw {
        if !is_name(key.get_ref()) || key.get_ref().contains('-') {
            return Err(err(
                key.span().start,
                format!(
                    "options.{}: option names are lowercase letters, digits and '_', starting with a letter",
                    key.get_ref()
                ),
            ));
        }
        let o = opt.get_ref();
        let default = o.default.get_ref().clone();
        if !o.allowed.is_empty() && !o.allowed.contains(&default) {
            return Err(err(
                o.default.span().start,
                format!(
                    "options.{}: default {default:?} is not one of the allowed values ({})",
                    key.get_ref(),
                    o.allowed.join(", ")
                ),
            ));
        }
        options.insert(
            key.get_ref().clone(),
            OptionSpec {
                default,
                allowed: o.allowed.clone(),
                help: o.help.clone(),
            },
        );
    }
    Ok(options)
}

/// `[commands]`: known kinds with non-empty scripts; start, stop and ready required; pause and
/// resume together; members, remove_member and add_member together, with wipe.
fn parse_commands(
    raw: &Spanned<BTreeMap<Spanned<String>, Spanned<String>>>,
    err: ErrAt<'_>,
) -> Result<BTreeMap<CommandKind, String>, ConfigError> {
    let mut commands = BTreeMap::new();
    for (key, script) in raw.get_ref() {
        let Some(kind) = CommandKind::ALL
            .iter()
            .find(|k| k.as_str() == key.get_ref())
        else {
            let known: Vec<&str> = CommandKind::ALL.iter().map(|k| k.as_str()).collect();
            return Err(err(
                key.span().start,
                format!(
                    "commands.{}: unknown command (known: {})",
                    key.get_ref(),
                    known.join(", ")
                ),
            ));
        };
        if script.get_ref().trim().is_empty() {
            return Err(err(
                script.span().start,
                format!("commands.{}: the script is empty", key.get_ref()),
            ));
        }
        commands.insert(*kind, script.get_ref().clone());
    }
    for required in [CommandKind::Start, CommandKind::Stop, CommandKind::Ready] {
        if !commands.contains_key(&required) {
            return Err(err(
                raw.span().start,
                format!(
                    "commands: `{}` is required (start, stop and ready must be given)",
                    required.as_str()
                ),
            ));
        }
    }
    for (a, b) in [
        (CommandKind::Pause, CommandKind::Resume),
        (CommandKind::Resume, CommandKind::Pause),
    ] {
        if commands.contains_key(&a) && !commands.contains_key(&b) {
            let offset = raw
                .get_ref()
                .keys()
                .find(|k| k.get_ref() == a.as_str())
                .map_or(raw.span().start, |k| k.span().start);
            return Err(err(
                offset,
                format!(
                    "commands.{}: needs `{}` as well (pause and resume come together)",
                    a.as_str(),
                    b.as_str()
                ),
            ));
        }
    }
    let membership = CommandKind::MEMBERSHIP;
    if let Some(given) = membership[..3].iter().find(|k| commands.contains_key(k))
        && let Some(missing) = membership.iter().find(|k| !commands.contains_key(k))
    {
        let offset = raw
            .get_ref()
            .keys()
            .find(|k| k.get_ref() == given.as_str())
            .map_or(raw.span().start, |k| k.span().start);
        return Err(err(
            offset,
            format!(
                "commands.{}: needs `{}` as well (members, remove_member, add_member and wipe come together: the membership fault asks through them and wipes a removed node)",
                given.as_str(),
                missing.as_str()
            ),
        ));
    }
    Ok(commands)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const GOOD: &str = r#"
name = "toy"
packages = ["procps"]
logs = ["toy.log", "/var/log/other.log"]

[options.reads]
default = "plain"
allowed = ["plain", "sync"]

[commands]
start = "echo start"
stop = "echo stop"
ready = "true"
pause = "kill -STOP $(cat \"$4/pid\")"
resume = "kill -CONT $(cat \"$4/pid\")"

[client]
command = ["python3", "client.py"]
workloads = ["register"]
"#;

    pub(super) fn parse_str(text: &str) -> Result<ExternalSpec, String> {
        parse(text, Path::new("systems/toy.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_good_spec_is_read_with_defaults() {
        let s = parse_str(GOOD).unwrap();
        assert_eq!(s.name, "toy");
        assert_eq!(s.data_dir, "/tmp/shakedown-toy");
        assert_eq!(
            s.logs,
            vec!["/tmp/shakedown-toy/toy.log", "/var/log/other.log"]
        );
        assert_eq!(s.dir, Path::new("systems"));
        assert!(s.commands.contains_key(&CommandKind::Pause));
        assert!(!s.commands.contains_key(&CommandKind::Kill));
        assert_eq!(s.options["reads"].default, "plain");
        assert_eq!(s.ready_timeout_s, 120.0);
        assert_eq!(s.workloads, vec!["register"]);
        let opts = apply_opts(&s, &["reads=sync".into()]).unwrap();
        assert_eq!(opts["reads"], "sync");
        let cfg = ExternalConfig {
            arg: "toy".into(),
            spec: s.clone(),
            options: opts,
            lazyfs: None,
        };
        assert_eq!(cfg.non_default_opts(), vec!["reads=sync"]);
    }

    /// Each broken spec and the `file:line` and words its error must carry.
    #[test]
    fn errors_name_file_line_and_field() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "name = \"toy\"\n[commands]\nstart = \"x\"\nstop = \"x\"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:2",
                "`ready` is required",
            ),
            (
                "name = \"Toy Box\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:1",
                "name",
            ),
            (
                "name = \"toy\"\npackages = [\"ok\", \"rm -rf\"]\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:2",
                "not a Debian package name",
            ),
            (
                "name = \"toy\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\nrestart = \"x\"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:6",
                "commands.restart: unknown command",
            ),
            (
                "name = \"toy\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\npause = \"x\"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:6",
                "needs `resume`",
            ),
            (
                "name = \"toy\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\nmembers = \"x\"\nremove_member = \"x\"\nadd_member = \"x\"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:6",
                "commands.members: needs `wipe` as well",
            ),
            (
                "name = \"toy\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"  \"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:5",
                "commands.ready: the script is empty",
            ),
            (
                "name = \"toy\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = []\n",
                "systems/toy.toml:7",
                "client.command",
            ),
            (
                "name = \"toy\"\ncolour = \"red\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:2",
                "colour",
            ),
            (
                "name = \"toy\"\n[options.reads]\ndefault = \"fast\"\nallowed = [\"plain\", \"sync\"]\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:3",
                "not one of the allowed values",
            ),
            (
                "name = \"toy\"\ndata_dir = \"tmp/x\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:2",
                "data_dir",
            ),
            (
                "name = \"toy\"\n[[files]]\nsource = \"does-not-exist.cfg\"\ndest = \"x.cfg\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:3",
                "no such file",
            ),
            (
                "name = \"toy\"\nready_timeout_s = -1.0\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\n",
                "systems/toy.toml:2",
                "ready_timeout_s",
            ),
            (
                "name = \"toy\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\nextra = 1\n",
                "systems/toy.toml:8",
                "extra",
            ),
            (
                "name = \"toy\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\nworkloads = [\"bank\"]\n",
                "systems/toy.toml:8",
                "client.workloads: \"bank\" is not a workload kind",
            ),
            ("name = [", "systems/toy.toml:1", ""),
        ];
        for (text, place, words) in cases {
            let e = parse_str(text).unwrap_err();
            assert!(e.starts_with(&format!("{place}: ")), "{text:?} → {e}");
            assert!(e.contains(words), "{text:?} → {e}");
        }
    }

    #[test]
    fn durability_declares_the_layer_directory_and_the_files_to_corrupt() {
        let s = parse_str(GOOD).unwrap();
        assert_eq!(s.durability, None);
        let text = GOOD.replace(
            "[options.reads]",
            "[durability]\ndir = \"data/\"\nfiles = [\"version-2/log.*\", \"version-2/snapshot.*\"]\n\n[options.reads]",
        );
        let s = parse_str(&text).unwrap();
        assert_eq!(
            s.durability,
            Some(Durability {
                dir: "/tmp/shakedown-toy/data".into(),
                files: vec!["version-2/log.*".into(), "version-2/snapshot.*".into()],
            })
        );
        // A directory without files: the layer's faults, not the corruption ones' defaults.
        let s = parse_str(&GOOD.replace(
            "[options.reads]",
            "[durability]\ndir = \"db\"\n[options.reads]",
        ))
        .unwrap();
        assert_eq!(s.durability.unwrap().files, Vec::<String>::new());
        let base = "name = \"toy\"\n[commands]\nstart = \"x\"\nstop = \"x\"\nready = \"x\"\n[client]\ncommand = [\"c\"]\n";
        for (table, line, words) in [
            (
                "[durability]\ndir = \"/var/lib/toy\"\n",
                9,
                "relative to data_dir",
            ),
            (
                "[durability]\ndir = \".\"\n",
                9,
                "must not be data_dir itself",
            ),
            ("[durability]\ndir = \"../x\"\n", 9, "durability.dir"),
            (
                "[durability]\ndir = \"d\"\nfiles = [\"ok/*\", \"/etc/*\"]\n",
                10,
                "durability.files: \"/etc/*\"",
            ),
            ("[durability]\nfiles = [\"a\"]\n", 8, "dir"),
            ("[durability]\ndir = \"d\"\nfsync = true\n", 10, "fsync"),
        ] {
            let e = parse_str(&format!("{base}{table}")).unwrap_err();
            assert!(
                e.starts_with(&format!("systems/toy.toml:{line}: ")) && e.contains(words),
                "{table:?} → {e}"
            );
        }
    }

    #[test]
    fn names_resolve_to_the_systems_folder_and_paths_stay_paths() {
        assert_eq!(locate("x/y.toml"), Some(PathBuf::from("x/y.toml")));
        assert_eq!(locate("no-such-system-here"), None);
        let e = configure("no-such-system-here", &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--db") && e.contains("systems/no-such-system-here.toml"),
            "{e}"
        );
        let e = configure("/nonexistent/dir/a.toml", &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/nonexistent/dir/a.toml") && e.contains("no such file"),
            "{e}"
        );
    }
}
