//! Declarative workload and nemesis specs: the TOML files under `workloads/` and `nemeses/`.
//!
//! Owns their schema, validation and lookup (a path, a name under the project's folders, or a
//! built-in copy compiled into the binary so it runs from any directory). Errors name the file
//! and line. Turning a spec into generators happens in `runner`; this module only parses.

use crate::options::ConfigError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod fault;
use crate::faults::partition::PartitionSpec;
pub use fault::FaultSpec;

/// A workload spec (`workloads/*.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Which op family: `register` (read / write / cas on independent keys), `list-append`
    /// (append unique integers / read whole lists, on independent keys), `set` (add integers
    /// unique across the run / read whole sets, on independent keys), `txn` (transactions of
    /// list appends and reads over a few shared keys), `lock` / `fenced-lock` (acquire,
    /// protected writes, release: `generator::lock`, settings in `[lock]`) or `lww` (register
    /// reads and writes on a last-write-wins store).
    pub kind: String,
    /// Relative weight of reads.
    #[serde(default = "d_read")]
    pub read_weight: u32,
    /// Relative weight of writes.
    #[serde(default = "d_one")]
    pub write_weight: u32,
    /// Relative weight of compare-and-sets.
    #[serde(default = "d_one")]
    pub cas_weight: u32,
    /// Relative weight of appends (`list-append` only).
    #[serde(default = "d_one")]
    pub append_weight: u32,
    /// Relative weight of adds (`set` only).
    #[serde(default = "d_add")]
    pub add_weight: u32,
    /// How the session checker orders versions: `system`, `list-append` or `increasing-values`;
    /// absent = chosen from the history (see `checker::session`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_source: Option<String>,
    /// Values written are drawn from `0..=max_value`.
    #[serde(default = "d_max_value")]
    pub max_value: u32,
    /// Client threads sharing one key at a time (bounds per-key concurrency for the checker).
    #[serde(default = "d_threads_per_key")]
    pub threads_per_key: usize,
    /// Ops a group of threads performs on a key before moving to a fresh key (`txn`: appends a
    /// key takes before it is retired).
    #[serde(default = "d_ops_per_key")]
    pub ops_per_key: u64,
    /// `txn` only: keys in use at a time.
    #[serde(default = "d_active_keys")]
    pub active_keys: usize,
    /// `txn` only: micro-ops per transaction, 1..=max_mops.
    #[serde(default = "d_max_mops")]
    pub max_mops: usize,
    /// The `[lock]` table of the `lock` and `fenced-lock` workloads (locks, TTL, hold times).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<crate::generator::lock::LockConfig>,
    /// The `[log]` table of the `log` workload (logs, send and poll weights).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<crate::generator::log::LogConfig>,
}

impl WorkloadSpec {
    /// The spec's fields its kind reads (`generator::kind`, recorded as test.json's
    /// `workload.knobs`: the run page lists only these); empty for a kind this build does not
    /// know (the page then lists every field).
    pub fn knobs(&self) -> Vec<&'static str> {
        crate::generator::WorkloadKind::parse(&self.kind)
            .map(|k| k.knobs().iter().map(|n| n.field()).collect())
            .unwrap_or_default()
    }
}

fn d_active_keys() -> usize {
    8
}
fn d_max_mops() -> usize {
    4
}

fn d_read() -> u32 {
    2
}
fn d_one() -> u32 {
    1
}
fn d_add() -> u32 {
    10
}
fn d_max_value() -> u32 {
    5
}
fn d_threads_per_key() -> usize {
    5
}
fn d_ops_per_key() -> u64 {
    200
}

/// A nemesis schedule (`nemeses/*.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NemesisSpec {
    /// Seconds between fault transitions (start → stop → start …).
    #[serde(default = "d_interval")]
    pub interval_s: f64,
    /// Fault kinds to start.
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    /// Which fault to start next: `random` (default; every kind once per round), `sequential`
    /// (list order, round-robin) or `stacked` (start every fault in list order so they overlap,
    /// then stop them in reverse).
    #[serde(default)]
    pub order: FaultOrder,
    /// With clock faults: seconds between clock-offset measurements (`clock-offsets` ops; one
    /// also follows every clock op). 0 = only after clock ops.
    #[serde(default = "d_offsets_interval")]
    pub clock_offsets_interval_s: f64,
}

fn d_offsets_interval() -> f64 {
    1.0
}

/// How a schedule picks the next fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultOrder {
    /// At random (seeded), fair by kind: every fault kind once per round, in random order
    /// (`generator::nemesis_cycle`).
    #[default]
    Random,
    /// In list order, round-robin.
    Sequential,
    /// All at once: started in list order one per interval, then stopped in reverse order.
    Stacked,
}

fn d_interval() -> f64 {
    5.0
}

const BUILTIN_WORKLOADS: &[(&str, &str)] = &[
    ("register", include_str!("../workloads/register.toml")),
    ("list-append", include_str!("../workloads/list-append.toml")),
    ("txn", include_str!("../workloads/txn.toml")),
    ("session", include_str!("../workloads/session.toml")),
    ("set", include_str!("../workloads/set.toml")),
    ("log", include_str!("../workloads/log.toml")),
    ("lock", include_str!("../workloads/lock.toml")),
    ("fenced-lock", include_str!("../workloads/fenced-lock.toml")),
    ("lww", include_str!("../workloads/lww.toml")),
];
const BUILTIN_NEMESES: &[(&str, &str)] = &[
    (
        "partition-kill-pause",
        include_str!("../nemeses/partition-kill-pause.toml"),
    ),
    ("isolate", include_str!("../nemeses/isolate.toml")),
    ("partitions", include_str!("../nemeses/partitions.toml")),
    ("packet", include_str!("../nemeses/packet.toml")),
    ("none", include_str!("../nemeses/none.toml")),
    ("clock", include_str!("../nemeses/clock.toml")),
    (
        "clock-restart",
        include_str!("../nemeses/clock-restart.toml"),
    ),
    (
        "clock-all-big",
        include_str!("../nemeses/clock-all-big.toml"),
    ),
    ("stall", include_str!("../nemeses/stall.toml")),
    (
        "clock-primary",
        include_str!("../nemeses/clock-primary.toml"),
    ),
    ("degraded", include_str!("../nemeses/degraded.toml")),
    ("power-loss", include_str!("../nemeses/power-loss.toml")),
    ("os-crash", include_str!("../nemeses/os-crash.toml")),
    ("bitflip", include_str!("../nemeses/bitflip.toml")),
    ("truncate", include_str!("../nemeses/truncate.toml")),
    ("disk-error", include_str!("../nemeses/disk-error.toml")),
    ("disk-full", include_str!("../nemeses/disk-full.toml")),
    ("slow-disk", include_str!("../nemeses/slow-disk.toml")),
    ("delay", include_str!("../nemeses/delay.toml")),
    ("clock-all", include_str!("../nemeses/clock-all.toml")),
    ("primary", include_str!("../nemeses/primary.toml")),
    ("kill-all", include_str!("../nemeses/kill-all.toml")),
    (
        "power-loss-slow",
        include_str!("../nemeses/power-loss-slow.toml"),
    ),
    ("membership", include_str!("../nemeses/membership.toml")),
    (
        "membership-storm",
        include_str!("../nemeses/membership-storm.toml"),
    ),
];

/// A serde type name in an error as words people use ("u32" → "a whole number ≥ 0").
fn type_in_words(t: &str) -> Option<&'static str> {
    match t {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => Some("a whole number ≥ 0"),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => Some("a whole number"),
        "f32" | "f64" => Some("a number"),
        "a boolean" | "bool" => Some("true or false"),
        _ => None,
    }
}

/// A toml/serde type error (`invalid value: integer `-1`, expected u32`, `invalid type: string
/// "x", expected u32`) as (the value as written, what was expected in words); `None` for other
/// messages.
fn type_error(message: &str) -> Option<(String, &'static str)> {
    let rest = message
        .strip_prefix("invalid value: ")
        .or_else(|| message.strip_prefix("invalid type: "))?;
    let (found, expected) = rest.rsplit_once(", expected ")?;
    let expected = type_in_words(expected.trim())?;
    let value = match found.split_once('`') {
        Some((_, v)) => v.trim_end_matches('`').to_string(),
        None => found
            .split_once(' ')
            .map_or(found, |(_, v)| v)
            .trim()
            .to_string(),
    };
    Some((value, expected))
}

/// The `key = value` line at or after 0-based line `from` whose value is `value` (as written).
fn line_with_value(text: &str, from: usize, value: &str) -> Option<(usize, String)> {
    text.lines().enumerate().skip(from).find_map(|(i, l)| {
        let (k, v) = l.split_once('=')?;
        let v = v.split('#').next().unwrap_or("").trim();
        (v == value || v.trim_matches('"') == value.trim_matches('"'))
            .then(|| (i, k.trim().to_string()))
    })
}

/// The 1-based line of `key = …`: in the `fault`-th `[[faults]]` table when given (falling back
/// to that table's header line), else among the top-level keys.
fn key_line(text: &str, fault: Option<usize>, key: &str) -> Option<usize> {
    let mut table: Option<Option<usize>> = None; // None = top level; Some(None) = another table
    let mut faults_seen = 0;
    let mut header = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            if t.starts_with("[[faults]]") {
                if fault == Some(faults_seen) {
                    header = Some(i + 1);
                }
                table = Some(Some(faults_seen));
                faults_seen += 1;
            } else {
                table = Some(None);
            }
            continue;
        }
        let here = match fault {
            None => table.is_none(),
            Some(f) => table == Some(Some(f)),
        };
        if here && t.split('=').next().map(str::trim) == Some(key) && t.contains('=') {
            return Some(i + 1);
        }
    }
    header
}

/// `label:line` when the line is known, else `label`.
pub(crate) fn at(label: &str, line: Option<usize>) -> String {
    match line {
        Some(l) => format!("{label}:{l}"),
        None => label.to_string(),
    }
}

pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    label: &str,
) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let span_line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count());
        let mut line = span_line.map(|l| l + 1);
        let mut message = e.message().to_string();
        // toml reports unknown fields of the top-level table with a span over the whole
        // document; find the key's own line instead.
        let field = message
            .strip_prefix("unknown field `")
            .and_then(|m| m.split('`').next());
        if let Some(field) = field
            && let Some(i) = text.lines().position(|l| l.trim_start().starts_with(field))
        {
            line = Some(i + 1);
        }
        // A value of the wrong type: name the key and say what is expected in words. Inside a
        // `[[faults]]` table the span covers the whole table, so look for the value's own line.
        if let Some((value, expected)) = type_error(&message) {
            match line_with_value(text, span_line.unwrap_or(0), &value) {
                Some((i, key)) => {
                    line = Some(i + 1);
                    message = format!("{key} = {value}: expected {expected}");
                }
                None => message = format!("{value}: expected {expected}"),
            }
        }
        // A value its type refuses in words (`targets "most": expected one of …`): inside a
        // `[[faults]]` table the span covers the whole table, so find the key's own line.
        if let Some((key, rest)) = message.split_once(' ')
            && let Some((value, _)) = rest.strip_prefix('"').and_then(|r| r.split_once("\":"))
            && let Some((i, k)) = line_with_value(text, span_line.unwrap_or(0), value)
            && k == key
        {
            line = Some(i + 1);
        }
        ConfigError::new(at(label, line), message)
    })
}

/// Where a spec came from and its text.
pub(crate) fn locate(
    arg: &str,
    folder: &str,
    builtins: &[(&str, &str)],
) -> Result<(String, String), ConfigError> {
    let as_path = Path::new(arg);
    let candidates: Vec<PathBuf> = if arg.ends_with(".toml") || arg.contains('/') {
        vec![as_path.to_path_buf()]
    } else {
        vec![Path::new(folder).join(format!("{arg}.toml"))]
    };
    for p in &candidates {
        if p.is_file() {
            let text = std::fs::read_to_string(p)
                .map_err(|e| ConfigError::new(p.display().to_string(), e.to_string()))?;
            return Ok((p.display().to_string(), text));
        }
    }
    if let Some((name, text)) = builtins.iter().find(|(n, _)| *n == arg) {
        return Ok((format!("built-in {folder}/{name}.toml"), text.to_string()));
    }
    let known: Vec<&str> = builtins.iter().map(|(n, _)| *n).collect();
    Err(ConfigError::new(
        arg,
        format!(
            "no such file, and not a known {folder} name (known: {})",
            known.join(", ")
        ),
    ))
}

/// The name a `--workload` argument gives a test: the built-in or folder name as given
/// (`session`), or a spec file's stem (`specs/my-load.toml` → `my-load`).
pub fn workload_name(arg: &str) -> String {
    if arg.ends_with(".toml") || arg.contains('/') {
        Path::new(arg)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty() && !s.starts_with('.'))
            .unwrap_or_else(|| "workload".to_string())
    } else {
        arg.to_string()
    }
}

/// Load a workload spec by path or name.
pub fn load_workload(arg: &str) -> Result<WorkloadSpec, ConfigError> {
    let (label, text) = locate(arg, "workloads", BUILTIN_WORKLOADS)?;
    let spec: WorkloadSpec = parse_toml(&text, &label)?;
    let err = |key: &str, message: String| {
        ConfigError::new(at(&label, key_line(&text, None, key)), message)
    };
    use crate::generator::WorkloadKind as K;
    let Some(kind) = K::parse(&spec.kind) else {
        return Err(err(
            "kind",
            format!("kind {:?}: expected {}", spec.kind, K::expected()),
        ));
    };
    let weights = match kind {
        K::Register => spec.read_weight + spec.write_weight + spec.cas_weight,
        K::Lww if spec.cas_weight > 0 => {
            return Err(err(
                "cas_weight",
                "cas_weight > 0: a last-write-wins register has no compare-and-set".into(),
            ));
        }
        K::Lww => spec.read_weight + spec.write_weight,
        K::ListAppend | K::Txn => spec.read_weight + spec.append_weight,
        K::Set if spec.add_weight == 0 => {
            return Err(err(
                "add_weight",
                "add_weight = 0: a set workload adds".into(),
            ));
        }
        K::Set => spec.read_weight + spec.add_weight,
        K::Log => {
            let cfg = spec.log.clone().unwrap_or_default();
            cfg.validate().map_err(|e| err(e.field, e.to_string()))?;
            1
        }
        K::Lock | K::FencedLock => {
            let cfg = spec.lock.clone().unwrap_or_default();
            cfg.validate().map_err(|e| err(e.field, e.to_string()))?;
            1
        }
    };
    if weights == 0 {
        return Err(err("read_weight", "all op weights are 0".into()));
    }
    if let Some(v) = &spec.version_source {
        v.parse::<crate::checker::session::VersionSource>()
            .map_err(|m| err("version_source", m))?;
    }
    for (key, value) in [
        ("threads_per_key", spec.threads_per_key as u64),
        ("ops_per_key", spec.ops_per_key),
        ("active_keys", spec.active_keys as u64),
        ("max_mops", spec.max_mops as u64),
    ] {
        if value == 0 {
            return Err(err(key, format!("{key} = 0: expected at least 1")));
        }
    }
    Ok(spec)
}

/// Load a nemesis schedule: a path, a name under `nemeses/`, `none`, or a comma-separated list of
/// packages (`partition`, `kill`, `pause`, `isolate`, `loss`, `bandwidth`, `delay`, `clock`,
/// `promote`, `ssh-drop`, `stall`, `power-loss`, `os-crash`, `bitflip`, `truncate`,
/// `disk-error`, `disk-full`, `slow-disk`, `membership`) composed into one schedule.
pub fn load_nemesis(arg: &str) -> Result<NemesisSpec, ConfigError> {
    let packages: Vec<&str> = arg.split(',').map(str::trim).collect();
    let known = [
        "partition",
        "kill",
        "pause",
        "isolate",
        "loss",
        "bandwidth",
        "delay",
        "clock",
        "promote",
        "ssh-drop",
        "stall",
        "power-loss",
        "os-crash",
        "bitflip",
        "truncate",
        "disk-error",
        "disk-full",
        "slow-disk",
        "membership",
    ];
    // A single name with a schedule file (`nemeses/NAME.toml` here, or a built-in one) is that
    // file, so editing `nemeses/clock.toml` changes `--nemesis clock`; lists are packages.
    // In a list, such a name stands for its file's faults (one definition of `clock`).
    let has_file = |name: &str| {
        Path::new("nemeses").join(format!("{name}.toml")).is_file()
            || BUILTIN_NEMESES.iter().any(|(n, _)| *n == name)
    };
    if !(packages.len() == 1 && has_file(arg)) && packages.iter().all(|p| known.contains(p)) {
        let mut faults = Vec::new();
        for p in packages {
            if has_file(p) {
                faults.extend(load_nemesis(p)?.faults);
                continue;
            }
            match p {
                "partition" => {
                    faults.push(FaultSpec::Partition(PartitionSpec::new("one")));
                    faults.push(FaultSpec::Partition(PartitionSpec::new("halves")));
                }
                "kill" => faults.push(FaultSpec::Kill(Default::default())),
                "pause" => faults.push(FaultSpec::Pause(Default::default())),
                "loss" => faults.push(FaultSpec::Loss(Default::default())),
                "bandwidth" => faults.push(FaultSpec::Bandwidth(Default::default())),
                "promote" => faults.push(FaultSpec::Promote(Default::default())),
                "ssh-drop" => faults.push(FaultSpec::SshDrop(Default::default())),
                _ => unreachable!("filtered by known; the others have files"),
            }
        }
        return Ok(NemesisSpec {
            interval_s: d_interval(),
            faults,
            order: FaultOrder::Random,
            clock_offsets_interval_s: d_offsets_interval(),
        });
    }
    let (label, text) = locate(arg, "nemeses", BUILTIN_NEMESES).map_err(|e| {
        ConfigError::new(
            e.what,
            format!(
                "{}; or a comma-separated list of {}",
                e.message,
                known.join(", ")
            ),
        )
    })?;
    let spec: NemesisSpec = parse_toml(&text, &label)?;
    let err = |fault: Option<usize>, key: &str, message: String| {
        ConfigError::new(at(&label, key_line(&text, fault, key)), message)
    };
    if !(spec.interval_s.is_finite() && spec.interval_s > 0.0) {
        return Err(err(
            None,
            "interval_s",
            format!("interval_s {}: expected a positive number", spec.interval_s),
        ));
    }
    if !(spec.clock_offsets_interval_s.is_finite() && spec.clock_offsets_interval_s >= 0.0) {
        return Err(err(
            None,
            "clock_offsets_interval_s",
            format!(
                "clock_offsets_interval_s {}: expected a number ≥ 0",
                spec.clock_offsets_interval_s
            ),
        ));
    }
    for (i, f) in spec.faults.iter().enumerate() {
        f.validate().map_err(|(key, m)| err(Some(i), key, m))?;
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in workload lists only fields of its spec, and the ones its file sets.
    #[test]
    fn each_workload_kind_names_the_knobs_it_reads() {
        for (name, text) in BUILTIN_WORKLOADS {
            let w = load_workload(name).unwrap();
            let knobs = w.knobs();
            assert!(!knobs.is_empty(), "{name}: no knobs");
            let json = serde_json::to_value(&w).unwrap();
            for k in &knobs {
                let field = k.to_string();
                assert!(
                    json.get(&field).is_some() || *k == "version_source",
                    "{name}: {k} is no field of the spec"
                );
            }
            for line in text
                .lines()
                .filter(|l| !l.starts_with('#') && l.contains(" = "))
            {
                let (key, value) = line.split_once(" = ").unwrap();
                let key = key.trim();
                // A weight set to 0 says "none of these" (lww's cas_weight): not a knob.
                if key != "kind" && value.trim() != "0" && json.get(key).is_some() {
                    assert!(
                        knobs.contains(&key),
                        "{name}: sets {key}, which is not listed"
                    );
                }
            }
        }
        let register = load_workload("register").unwrap();
        assert!(!register.knobs().contains(&"append_weight"));
        // The knob vocabulary and the spec's schema are one: every knob names a field of the
        // spec and every field but `kind` is a knob (a spec with every optional table set).
        let mut full = load_workload("register").unwrap();
        full.version_source = Some("system".into());
        full.lock = Some(Default::default());
        full.log = Some(Default::default());
        let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&full) else {
            panic!("a spec serializes to an object")
        };
        let knob_fields: Vec<&str> = crate::generator::Knob::ALL
            .iter()
            .map(|k| k.field())
            .collect();
        for f in fields.keys().filter(|f| f.as_str() != "kind") {
            assert!(knob_fields.contains(&f.as_str()), "field {f} is no Knob");
        }
        for f in &knob_fields {
            assert!(fields.contains_key(*f), "Knob {f} is no field of the spec");
        }
    }

    #[test]
    fn builtin_specs_parse() {
        let w = load_workload("register").unwrap();
        assert_eq!(w.kind, "register");
        let w = load_workload("list-append").unwrap();
        assert_eq!((w.kind.as_str(), w.append_weight), ("list-append", 1));
        let w = load_workload("set").unwrap();
        assert_eq!(
            (w.kind.as_str(), w.read_weight, w.add_weight),
            ("set", 1, 10)
        );
        let n = load_nemesis("partition-kill-pause").unwrap();
        assert_eq!(n.faults.len(), 4);
        assert!(load_nemesis("none").unwrap().faults.is_empty());
        let all = load_nemesis("partitions").unwrap();
        assert_eq!(all.faults.len(), crate::faults::PARTITION_SHAPES.len());
        assert_eq!(all.order, FaultOrder::Sequential);
    }

    #[test]
    fn tests_are_named_after_the_workload() {
        assert_eq!(workload_name("session"), "session");
        assert_eq!(workload_name("list-append"), "list-append");
        assert_eq!(workload_name("specs/my-load.toml"), "my-load");
        assert_eq!(workload_name("/x/.toml"), "workload");
    }

    #[test]
    fn packages_compose() {
        let n = load_nemesis("partition,kill").unwrap();
        assert_eq!(n.faults.len(), 3);
        assert_eq!(
            n.faults[2],
            FaultSpec::Kill(crate::faults::process::KillSpec {
                targets: crate::faults::Targets::One
            })
        );
    }

    #[test]
    fn a_name_with_a_file_is_the_file_and_stands_for_its_faults_in_a_list() {
        // nemeses/isolate.toml says interval_s = 3; packages use the default 5 s.
        let alone = load_nemesis("isolate").unwrap();
        assert_eq!(alone.interval_s, 3.0);
        let listed = load_nemesis("isolate,kill").unwrap();
        assert_eq!(listed.interval_s, 5.0);
        assert_eq!(listed.faults[..1], alone.faults[..]);
        // `clock` in a list is clock.toml's three faults, in the file's order.
        let clock = load_nemesis("clock").unwrap();
        let listed = load_nemesis("kill,clock").unwrap();
        assert_eq!(listed.faults[1..], clock.faults[..]);
        assert_eq!(clock.faults.len(), 3);
    }

    #[test]
    fn membership_shrinks_and_grows_and_refuses_bad_values_by_line() {
        let n = load_nemesis("membership").unwrap();
        assert_eq!(
            n.faults[0].ops_text(),
            (
                "shrink-cluster",
                serde_json::json!({"allow_minority": false, "confirm_ms": 30000}),
                "grow-cluster"
            )
        );
        assert_eq!(n.faults[0].targets(), None);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.toml");
        std::fs::write(&p, "[[faults]]\nkind = \"membership\"\n\nconfirm_ms = 0\n").unwrap();
        let e = load_nemesis(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("m.toml:4") && e.contains("confirm_ms"), "{e}");
        std::fs::write(&p, "[[faults]]\nkind = \"membership\"\ntargets = \"one\"\n").unwrap();
        let e = load_nemesis(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("unknown field"), "{e}");
    }

    #[test]
    fn promote_is_a_one_shot_package() {
        let n = load_nemesis("partition,promote").unwrap();
        assert_eq!(
            n.faults.last().unwrap().ops_text(),
            ("promote", serde_json::json!({}), "")
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fo.toml");
        std::fs::write(&p, "[[faults]]\nkind = \"promote\"\nnode = \"n3\"\n").unwrap();
        let spec = load_nemesis(p.to_str().unwrap()).unwrap();
        assert_eq!(
            spec.faults[0].ops_text().1,
            serde_json::json!({"node": "n3"})
        );
        std::fs::write(&p, "[[faults]]\nkind = \"promote\"\ntargets = \"one\"\n").unwrap();
        let e = load_nemesis(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("fo.toml") && e.contains("unknown field"), "{e}");
    }

    #[test]
    fn power_loss_parses_with_its_targets_and_torn_flag() {
        let n = load_nemesis("power-loss").unwrap();
        assert_eq!(
            n.faults[0].ops_text(),
            (
                "power-loss",
                serde_json::json!({"targets": "all", "torn": false}),
                "power-on"
            )
        );
        let n = load_nemesis("power-loss,partition").unwrap();
        assert_eq!(n.faults.len(), 3);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(
            &path,
            "interval_s = 5.0\n[[faults]]\nkind = \"power-loss\"\ntargets = \"most\"\n",
        )
        .unwrap();
        let e = load_nemesis(path.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("targets") && e.contains("most"), "{e}");
        std::fs::write(
            &path,
            "interval_s = 5.0\n[[faults]]\nkind = \"power-loss\"\ntorn = true\n",
        )
        .unwrap();
        let n = load_nemesis(path.to_str().unwrap()).unwrap();
        assert_eq!(n.faults[0].ops_text().1["torn"], true);
        assert_eq!(n.faults[0].ops_text().1["targets"], "one");
    }

    #[test]
    fn os_crash_is_power_loss_on_one_node_under_its_own_verbs() {
        let n = load_nemesis("os-crash").unwrap();
        assert_eq!(
            n.faults[0].ops_text(),
            (
                "os-crash",
                serde_json::json!({"targets": "one", "torn": false}),
                "reboot"
            )
        );
        assert!(n.faults[0].needs_data_layer() && n.faults[0].needs().loses_unsynced);
        // Its verbs name their own kind, so plots and the fault table say os-crash.
        let (kind, _) = crate::faults::classify_verb("os-crash").unwrap();
        assert_eq!(kind.name, "os-crash");
        assert_eq!(
            crate::faults::classify_verb("reboot").unwrap().0.name,
            "os-crash"
        );
        // A package list mixes it with the others.
        let n = load_nemesis("os-crash,power-loss").unwrap();
        let verbs: Vec<&str> = n.faults.iter().map(|f| f.ops_text().0).collect();
        assert_eq!(verbs, ["os-crash", "power-loss"]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[[faults]]\nkind = \"os-crash\"\ntargets = \"majority\"\ntorn = true\n",
        )
        .unwrap();
        let n = load_nemesis(path.to_str().unwrap()).unwrap();
        assert_eq!(
            n.faults[0].ops_text().1,
            serde_json::json!({"targets": "majority", "torn": true})
        );
    }

    #[test]
    fn delay_duplicate_is_refused_on_the_nfqueue_backend_by_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.toml");
        std::fs::write(
            &path,
            "[[faults]]\nkind = \"delay\"\ndelay_ms = 50\nbackend = \"nfqueue\"\nduplicate = 0.05\n",
        )
        .unwrap();
        let e = load_nemesis(path.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("d.toml:5") && e.contains("cannot duplicate packets"),
            "{e}"
        );
        std::fs::write(
            &path,
            "[[faults]]\nkind = \"delay\"\ndelay_ms = 50\nduplicate = 0.05\n",
        )
        .unwrap();
        let n = load_nemesis(path.to_str().unwrap()).unwrap();
        assert_eq!(n.faults[0].ops_text().1["duplicate"], 0.05);
        // Without duplicates the op value is the one runs always recorded.
        assert!(
            load_nemesis("delay").unwrap().faults[0]
                .ops_text()
                .1
                .get("duplicate")
                .is_none()
        );
    }

    #[test]
    fn corruption_faults_parse_as_their_verbs_and_refuse_bad_values_by_line() {
        let n = load_nemesis("bitflip,truncate").unwrap();
        let ops: Vec<_> = n.faults.iter().map(|f| f.ops_text()).collect();
        assert_eq!(
            ops,
            [
                (
                    "bitflip",
                    serde_json::json!({"targets": "one", "bits": 8, "files": []}),
                    "start-corrupted"
                ),
                (
                    "truncate",
                    serde_json::json!({"targets": "one", "bytes": 4096, "files": []}),
                    "start-corrupted"
                ),
            ]
        );
        assert_eq!(n.faults[1].targets(), Some(crate::faults::Targets::One));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        for (body, needles) in [
            ("mode = \"flip\"\n", [":4:", "mode", "flip"]),
            ("bits = 0\n", [":4:", "bits", "above 0"]),
            ("files = [\"../etc/*\"]\n", [":4:", "files", "relative"]),
            ("targets = \"most\"\n", [":4:", "targets", "most"]),
        ] {
            std::fs::write(
                &path,
                format!("interval_s = 5.0\n[[faults]]\nkind = \"corrupt\"\n{body}"),
            )
            .unwrap();
            let e = load_nemesis(path.to_str().unwrap())
                .unwrap_err()
                .to_string();
            for needle in needles {
                assert!(e.contains(needle), "{body}: {e}");
            }
        }
    }

    #[test]
    fn disk_faults_parse_from_their_packages_and_refuse_bad_values() {
        let n = load_nemesis("disk-error,disk-full,slow-disk").unwrap();
        let ops: Vec<_> = n.faults.iter().map(|f| f.ops_text()).collect();
        assert!(
            ops.iter()
                .all(|(s, _, e)| (*s, *e) == ("start-disk-fault", "stop-disk-fault"))
        );
        assert_eq!(ops[0].1["fsync_error"], "EIO");
        assert_eq!(ops[0].1["drop_unsynced_on_fsync_error"], true);
        assert_eq!(ops[1].1["write_error"], "ENOSPC");
        assert_eq!(ops[2].1["fsync_delay_ms"], 50);
        assert!(n.faults.iter().all(FaultSpec::needs_data_layer));
        let back = crate::faults::disk::DiskFault::from_value(&{
            let mut v = ops[0].1.clone();
            v.as_object_mut().unwrap().remove("targets");
            v
        })
        .unwrap();
        let FaultSpec::Disk(disk) = &n.faults[0] else {
            panic!("a disk fault: {:?}", n.faults[0])
        };
        assert_eq!(back, disk.fault());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.toml");
        for (body, needle) in [
            ("write_error = \"EPERM\"\n", "EPERM"),
            ("fsync_error = \"EIO\"\nprobability = 1.5\n", "probability"),
            ("", "at least one"),
            ("drop_unsynced_on_fsync_error = true\n", "needs fsync_error"),
        ] {
            std::fs::write(
                &path,
                format!("interval_s = 5.0\n[[faults]]\nkind = \"disk\"\n{body}"),
            )
            .unwrap();
            let e = load_nemesis(path.to_str().unwrap())
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle) && e.contains("d.toml:"), "{body}: {e}");
        }
    }

    /// Every schedule shipped in `nemeses/` is built into the binary, so `--nemesis NAME` means
    /// the same from any directory.
    #[test]
    fn every_shipped_nemesis_file_is_built_in() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("nemeses");
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_stem().unwrap().to_str().unwrap().to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                BUILTIN_NEMESES
                    .iter()
                    .any(|(n, t)| *n == name && *t == text),
                "nemeses/{name}.toml is not in BUILTIN_NEMESES"
            );
        }
    }

    #[test]
    fn packet_faults_parse_compose_and_validate() {
        let n = load_nemesis("loss,bandwidth,delay").unwrap();
        let fs: Vec<&str> = n.faults.iter().map(|f| f.ops_text().0).collect();
        assert_eq!(fs, ["start-loss", "start-bandwidth", "start-delay"]);
        let stops: Vec<&str> = n.faults.iter().map(|f| f.ops_text().2).collect();
        assert_eq!(stops, ["stop-loss", "stop-bandwidth", "stop-delay"]);
        let d = load_nemesis("degraded").unwrap();
        assert_eq!(
            d.faults[0].ops_text(),
            (
                "start-ssh-drop",
                serde_json::json!({"targets": "one", "duration_ms": 5000}),
                "stop-ssh-drop"
            )
        );
        let n = load_nemesis("ssh-drop").unwrap();
        assert_eq!(n.faults[0].ops_text().0, "start-ssh-drop");
        // Membership composes with the packages (its file stands for it in a list).
        let m = load_nemesis("membership,partition,kill").unwrap();
        let starts: Vec<&str> = m.faults.iter().map(|f| f.ops().start.as_str()).collect();
        assert_eq!(
            starts,
            [
                "shrink-cluster",
                "start-partition",
                "start-partition",
                "kill"
            ]
        );
        let p = load_nemesis("packet").unwrap();
        assert!(p.faults.iter().any(|f| matches!(f, FaultSpec::Loss(_))));
        assert!(
            p.faults
                .iter()
                .any(|f| matches!(f, FaultSpec::Bandwidth(_)))
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(
            &path,
            "[[faults]]\nkind = \"loss\"\ntargets = \"primaries\"\nprobability = 0.5\n",
        )
        .unwrap();
        let spec = load_nemesis(path.to_str().unwrap()).unwrap();
        let (f, v, _) = spec.faults[0].ops_text();
        assert_eq!(f, "start-loss");
        assert_eq!(
            v,
            serde_json::json!({"targets": "primaries", "probability": 0.5})
        );
        for (body, want) in [
            ("kind = \"loss\"\nprobability = 1.5\n", "probability"),
            ("kind = \"bandwidth\"\nrate_kbit = 0\n", "rate_kbit"),
            ("kind = \"delay\"\ndelay_ms = 5\njitter_ms = 9\n", "jitter"),
            (
                "kind = \"delay\"\ndelay_ms = 5\nbackend = \"tc\"\n",
                "p.toml:4: backend \"tc\": expected one of auto, netem, nfqueue",
            ),
            (
                "kind = \"delay\"\ndelay_ms = 5\nreorder = 2\n",
                "p.toml:4: reorder 2",
            ),
            ("kind = \"kill\"\ntargets = \"leaders\"\n", "primaries"),
        ] {
            std::fs::write(&path, format!("[[faults]]\n{body}")).unwrap();
            let e = load_nemesis(path.to_str().unwrap())
                .unwrap_err()
                .to_string();
            assert!(e.contains("p.toml") && e.contains(want), "{body}: {e}");
        }
        // The shipped delay nemesis: jitter and reorder, backend chosen on the node.
        let (f, v, _) = load_nemesis("delay").unwrap().faults[0].ops_text();
        assert_eq!(f, "start-delay");
        assert_eq!(
            v,
            serde_json::json!({"targets": "minority", "delay_ms": 100, "jitter_ms": 50, "reorder": 0.25})
        );
    }

    #[test]
    fn clock_faults_parse_compose_and_validate() {
        let n = load_nemesis("clock").unwrap();
        assert!(n.faults.iter().all(FaultSpec::is_clock));
        assert_eq!(n.order, FaultOrder::Sequential);
        // The primary's step comes first, so every run of a few intervals has one.
        let (f, v, stop) = n.faults[0].ops_text();
        assert_eq!((f, stop), ("bump-clock", "reset-clock"));
        assert_eq!(v["targets"], "primaries-or-one");
        assert_eq!(v["min_delta_ms"], 4096);
        let (f, v, _) = n.faults[1].ops_text();
        assert_eq!(
            (f, &v["targets"]),
            ("bump-clock", &serde_json::json!("one"))
        );
        assert_eq!(v["max_delta_ms"], 262_144);
        let n = load_nemesis("partition,clock").unwrap();
        assert_eq!(n.faults.len(), 5);
        assert_eq!(n.faults[4].ops_text().0, "strobe-clock");
        assert_eq!(n.faults[4].ops_text().1["duration_ms"], 10_000);

        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("clk.toml");
        std::fs::write(
            &p,
            "interval_s = 2\norder = \"stacked\"\nclock_offsets_interval_s = 0.5\n\n\
             [[faults]]\nkind = \"clock\"\nmode = \"strobe\"\ntargets = \"all\"\n\
             min_delta_ms = 10\nmax_delta_ms = 20\nmax_period_ms = 50\nduration_ms = 1000\n",
        )
        .unwrap();
        let spec = load_nemesis(p.to_str().unwrap()).unwrap();
        assert_eq!(spec.order, FaultOrder::Stacked);
        assert_eq!(spec.clock_offsets_interval_s, 0.5);
        let (f, v, _) = spec.faults[0].ops_text();
        assert_eq!(f, "strobe-clock");
        assert_eq!(
            v,
            serde_json::json!({"targets": "all", "min_delta_ms": 10, "max_delta_ms": 20,
                               "max_period_ms": 50, "duration_ms": 1000})
        );
        for (body, needle) in [
            ("mode = \"wobble\"", "clock mode \"wobble\""),
            ("targets = \"most\"", "targets \"most\""),
            ("min_delta_ms = 9\nmax_delta_ms = 3", "min_delta_ms 9"),
            ("duration_ms = 600000", "duration_ms 600000"),
            ("delta = 5", "unknown field"),
        ] {
            std::fs::write(&p, format!("[[faults]]\nkind = \"clock\"\n{body}\n")).unwrap();
            let e = load_nemesis(p.to_str().unwrap()).unwrap_err().to_string();
            assert!(e.contains("clk.toml") && e.contains(needle), "{body}: {e}");
        }
        std::fs::write(&p, "clock_offsets_interval_s = -1\n").unwrap();
        let e = load_nemesis(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("clock_offsets_interval_s -1"), "{e}");
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.toml");
        std::fs::write(
            &p,
            "interval_s = 1\n\n[[faults]]\nkind = \"partition\"\nshape = \"triangle\"\n",
        )
        .unwrap();
        let e = load_nemesis(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("triangle"), "{e}");
        std::fs::write(&p, "interval_s = 1\nfautls = []\n").unwrap();
        let e = load_nemesis(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("bad.toml:2"), "{e}");
        let e = load_workload("nonexistent").unwrap_err().to_string();
        assert!(e.contains("known: register, list-append"), "{e}");
        std::fs::write(&p, "kind = \"list-append\"\nversion_source = \"lists\"\n").unwrap();
        let e = load_workload(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("\"lists\""), "{e}");
        std::fs::write(
            &p,
            "kind = \"list-append\"\nread_weight = 0\nappend_weight = 0\n",
        )
        .unwrap();
        let e = load_workload(p.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("all op weights are 0"), "{e}");
    }

    #[test]
    fn bad_values_are_explained_in_words_at_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.toml");
        let path = p.to_str().unwrap();
        for (body, want) in [
            (
                "kind = \"register\"\nread_weight = -1\n",
                "w.toml:2: read_weight = -1: expected a whole number ≥ 0",
            ),
            (
                "kind = \"register\"\n\nmax_value = \"x\"\n",
                "w.toml:3: max_value = \"x\": expected a whole number ≥ 0",
            ),
            (
                "kind = \"register\"\nread_weight = 1.5\n",
                "w.toml:2: read_weight = 1.5: expected a whole number ≥ 0",
            ),
            (
                "kind = \"register\"\nthreads_per_key = 0\n",
                "w.toml:2: threads_per_key = 0: expected at least 1",
            ),
            ("kind = \"queue\"\n", "w.toml:1: kind \"queue\""),
            (
                "kind = \"set\"\nadd_weight = 0\n",
                "w.toml:2: add_weight = 0: a set workload adds",
            ),
        ] {
            std::fs::write(&p, body).unwrap();
            let e = load_workload(path).unwrap_err().to_string();
            assert!(e.contains(want), "{body}: {e}");
            assert!(!e.contains("u32") && !e.contains("u64"), "{e}");
        }
        for (body, want) in [
            (
                "interval_s = 2.0\n[[faults]]\nkind = \"kill\"\n\n[[faults]]\nkind = \"clock\"\nmin_delta_ms = -5\n",
                "w.toml:7: min_delta_ms = -5: expected a whole number ≥ 0",
            ),
            (
                "interval_s = 2.0\n[[faults]]\nkind = \"pause\"\n[[faults]]\nkind = \"kill\"\ntargets = \"everyone\"\n",
                "w.toml:6: targets \"everyone\"",
            ),
            (
                "# comment\ninterval_s = -2.0\n[[faults]]\nkind = \"kill\"\n",
                "w.toml:2: interval_s -2",
            ),
            (
                "[[faults]]\nkind = \"clock\"\nmin_delta_ms = 9\nmax_delta_ms = 3\n",
                "w.toml:3: min_delta_ms 9",
            ),
            (
                "[[faults]]\nkind = \"loss\"\nprobability = 1.5\n",
                "w.toml:3:",
            ),
            // A default that is invalid with the other values: the fault's header line.
            (
                "[[faults]]\nkind = \"clock\"\nmax_delta_ms = 1\n",
                "w.toml:1: min_delta_ms 4",
            ),
        ] {
            std::fs::write(&p, body).unwrap();
            let e = load_nemesis(path).unwrap_err().to_string();
            assert!(e.contains(want), "{body}: {e}");
        }
    }
}
