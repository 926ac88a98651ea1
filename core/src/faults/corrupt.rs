//! The file-corruption faults' pure part (`bitflip` and `truncate`, package `corrupt`): their
//! parameters, read once from a schedule's op value by the spec (validation) and the nemesis
//! (injection), and the plan of what to damage — which data file on a node and which bits or
//! tail bytes — drawn from the node's list of matching files with a seeded generator.
//!
//! Jepsen's way: the database is stopped on the target nodes (SIGKILL), one of its data files
//! (a file matching the system's declared globs: WAL segments, AOF, snapshots, block files) is
//! damaged, and the database starts again when the fault is healed (`start-corrupted`). Owns no
//! IO: listing files and writing the damage is `nemesis::corrupt`.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// The `corrupt` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const KIND: super::FaultKind = super::FaultKind {
    name: "corrupt",
    start_verbs: &[super::verb::BITFLIP, super::verb::TRUNCATE],
    stop_verbs: &[super::verb::START_CORRUPTED],
    label: "data file corrupted (DB stopped)",
    color_rgb: (90, 60, 20),
};

/// Bits flipped in one file when the fault does not say.
pub const DEFAULT_BITS: u64 = 8;
/// Most bytes cut from a file's tail when the fault does not say (the number is drawn
/// uniformly from 1 to this, and never more than the file holds).
pub const DEFAULT_BYTES: u64 = 4096;

/// How a file is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CorruptMode {
    /// Flip random bits in place.
    Bitflip,
    /// Cut bytes from the file's tail.
    Truncate,
}

impl CorruptMode {
    /// The mode named in a spec (`mode = "bitflip"`).
    pub fn parse(s: &str) -> Option<CorruptMode> {
        match s {
            "bitflip" => Some(CorruptMode::Bitflip),
            "truncate" => Some(CorruptMode::Truncate),
            _ => None,
        }
    }

    /// The nemesis verb that injects this mode.
    pub fn start_verb(self) -> super::Verb {
        match self {
            CorruptMode::Bitflip => super::Verb::Bitflip,
            CorruptMode::Truncate => super::Verb::Truncate,
        }
    }

    /// The verb that starts this mode's fault, as text.
    pub fn verb(self) -> &'static str {
        match self {
            CorruptMode::Bitflip => super::verb::BITFLIP,
            CorruptMode::Truncate => super::verb::TRUNCATE,
        }
    }

    /// The mode a nemesis verb injects.
    pub fn of_verb(f: &str) -> Option<CorruptMode> {
        [CorruptMode::Bitflip, CorruptMode::Truncate]
            .into_iter()
            .find(|m| m.verb() == f)
    }
}

/// One corruption, as a schedule asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptParams {
    /// Bit flips or tail cuts.
    pub mode: CorruptMode,
    /// Which nodes.
    pub targets: super::Targets,
    /// Bitflip: how many bits to flip in the chosen file.
    pub bits: u64,
    /// Truncate: most bytes to cut from the chosen file's tail.
    pub bytes: u64,
    /// Globs relative to the data directory naming the files to choose from; empty = the ones
    /// the system declares (`Db::data_files`).
    pub files: Vec<String>,
}

impl CorruptParams {
    /// The op value the schedule writes (and the history shows).
    pub fn to_value(&self) -> Value {
        let mut v = json!({ "targets": self.targets, "files": self.files });
        match self.mode {
            CorruptMode::Bitflip => v["bits"] = self.bits.into(),
            CorruptMode::Truncate => v["bytes"] = self.bytes.into(),
        }
        v
    }

    /// Read the op value of a `bitflip` / `truncate` op; an error names the key and why.
    pub fn from_value(mode: CorruptMode, v: &Value) -> Result<CorruptParams, String> {
        let targets = super::Targets::of_value(&v["targets"])?;
        let count = |key: &str, default: u64| -> Result<u64, String> {
            match &v[key] {
                Value::Null => Ok(default),
                n => match n.as_u64() {
                    Some(0) | None => Err(format!("{key} {n}: expected a whole number above 0")),
                    Some(n) => Ok(n),
                },
            }
        };
        let bits = count("bits", DEFAULT_BITS)?;
        if bits > 1_000_000 {
            return Err(format!(
                "bits {bits}: at most 1000000 bits are flipped at once"
            ));
        }
        let bytes = count("bytes", DEFAULT_BYTES)?;
        let files = match &v["files"] {
            Value::Null => Vec::new(),
            Value::Array(a) => a
                .iter()
                .map(|g| match g.as_str() {
                    Some(s) if valid_glob(s) => Ok(s.to_string()),
                    _ => Err(format!(
                        "files: {g} is not a glob relative to the data directory (e.g. \"member/wal/*.wal\"; no \"..\", not absolute)"
                    )),
                })
                .collect::<Result<_, _>>()?,
            other => {
                return Err(format!(
                    "files {other}: expected a list of globs relative to the data directory"
                ));
            }
        };
        Ok(CorruptParams {
            mode,
            targets,
            bits,
            bytes,
            files,
        })
    }
}

/// A glob a node's `find -path` gets after the data directory: relative, non-empty, no `..`.
fn valid_glob(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('/')
        && !s.split('/').any(|part| part == "..")
        && !s.contains('\n')
}

/// One file a node listed: its path and size in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    /// Absolute path on the node.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
}

/// Parse a node's `SIZE<TAB>PATH` lines (what `find -printf '%s\t%p\n'` prints); lines that do
/// not have that shape are skipped.
pub fn parse_listing(out: &str) -> Vec<DataFile> {
    let mut files: Vec<DataFile> = out
        .lines()
        .filter_map(|l| {
            let (size, path) = l.split_once('\t')?;
            Some(DataFile {
                path: path.to_string(),
                size: size.trim().parse().ok()?,
            })
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    files
}

/// What to do to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// Flip these bits: (byte offset, bit 0–7), offsets distinct, ascending.
    Flip(Vec<(u64, u8)>),
    /// Cut the file to this many bytes.
    TruncateTo(u64),
}

/// The damage planned for one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The file chosen.
    pub file: DataFile,
    /// What is done to it.
    pub damage: Damage,
}

impl Plan {
    /// The report a nemesis op's completion carries for this node.
    pub fn to_value(&self) -> Value {
        let mut v = json!({ "file": self.file.path, "size": self.file.size });
        match &self.damage {
            Damage::Flip(bits) => {
                v["flipped"] = bits.iter().map(|(o, b)| json!([o, b])).collect();
            }
            Damage::TruncateTo(to) => {
                v["truncated_to"] = (*to).into();
                v["cut"] = (self.file.size - to).into();
            }
        }
        v
    }
}

/// Choose a non-empty file uniformly and the damage to it; `None` when every listed file is
/// empty (or none is listed). Bit flips go to distinct bytes (at most one per byte, so no flip
/// undoes another); a file smaller than the bits asked gets one flip per byte.
pub fn plan(params: &CorruptParams, files: &[DataFile], rng: &mut ChaCha8Rng) -> Option<Plan> {
    let candidates: Vec<&DataFile> = files.iter().filter(|f| f.size > 0).collect();
    if candidates.is_empty() {
        return None;
    }
    let file = candidates[rng.random_range(0..candidates.len())].clone();
    let damage = match params.mode {
        CorruptMode::Bitflip => {
            let n = params.bits.min(file.size);
            let mut offsets = std::collections::BTreeSet::new();
            while (offsets.len() as u64) < n {
                offsets.insert(rng.random_range(0..file.size));
            }
            Damage::Flip(
                offsets
                    .into_iter()
                    .map(|o| (o, rng.random_range(0..8u8)))
                    .collect(),
            )
        }
        CorruptMode::Truncate => {
            let cut = rng.random_range(1..=params.bytes.min(file.size));
            Damage::TruncateTo(file.size - cut)
        }
    };
    Some(Plan { file, damage })
}

/// Corrupt a data file (Jepsen's file nemesis): stop the DB on the targets (SIGKILL), then
/// flip `bits` random bits in (`mode = "bitflip"`) or cut up to `bytes` from the tail of
/// (`mode = "truncate"`) one file matching the system's declared data-file globs (or `files`,
/// relative to its data directory), chosen at random; `start-corrupted` starts the DB again on
/// the damaged files. The `corrupt` schedule entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorruptSpec {
    /// `bitflip` or `truncate`.
    #[serde(default = "d_mode")]
    pub mode: String,
    /// Which nodes it hits (`one` by default).
    #[serde(default)]
    pub targets: super::Targets,
    /// Bitflip: bits flipped in the chosen file.
    #[serde(default = "d_bits")]
    pub bits: u64,
    /// Truncate: most bytes cut from the chosen file's tail.
    #[serde(default = "d_bytes")]
    pub bytes: u64,
    /// Globs relative to the data directory; empty: the files the system declares.
    #[serde(default)]
    pub files: Vec<String>,
}

fn d_mode() -> String {
    // A mode is named as the verb that starts it.
    CorruptMode::Bitflip.verb().into()
}
fn d_bits() -> u64 {
    DEFAULT_BITS
}
fn d_bytes() -> u64 {
    DEFAULT_BYTES
}

impl CorruptSpec {
    /// Its parameters (`None` for an unknown mode).
    pub fn params(&self) -> Option<CorruptParams> {
        Some(CorruptParams {
            mode: CorruptMode::parse(&self.mode)?,
            targets: self.targets,
            bits: self.bits,
            bytes: self.bytes,
            files: self.files.clone(),
        })
    }
}

impl super::def::FaultDef for CorruptSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &KIND
    }
    fn ops(&self) -> super::def::Ops {
        use super::def::Ops;
        match self.params() {
            Some(p) => Ops::new(
                p.mode.start_verb(),
                p.to_value(),
                Some(super::Verb::StartCorrupted),
            ),
            // An unknown mode (refused by `check`) still names a verb.
            None => Ops::new(
                super::Verb::Bitflip,
                json!({}),
                Some(super::Verb::StartCorrupted),
            ),
        }
    }
    fn keys(&self) -> &'static [&'static str] {
        &["mode", "targets", "bits", "bytes", "files"]
    }
    fn check(&self) -> Result<(), String> {
        match CorruptMode::parse(&self.mode) {
            None => Err(format!(
                "corrupt mode {:?}: expected \"bitflip\" or \"truncate\"",
                self.mode
            )),
            Some(m) => CorruptParams::from_value(m, &self.ops().value).map(|_| ()),
        }
    }
    fn targets(&self) -> Option<super::Targets> {
        Some(self.targets)
    }
    fn needs(&self) -> super::def::Needs {
        super::def::Needs {
            kill: true,
            data_dir: true,
            data_files: self.files.is_empty(),
            ..super::def::Needs::default()
        }
    }
    fn describe(&self) -> String {
        format!("{} (targets {})", self.mode, self.targets)
    }
    fn chaos_refusal(&self) -> Option<&'static str> {
        Some(
            "corrupting a data file damages the system's data for good and restarts the \
             system; chaos injects only faults it can undo",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn params(mode: CorruptMode, v: Value) -> CorruptParams {
        CorruptParams::from_value(mode, &v).unwrap()
    }

    #[test]
    fn params_take_defaults_and_refuse_bad_values_by_key() {
        let p = params(CorruptMode::Bitflip, json!({}));
        assert_eq!((p.targets.as_str(), p.bits), ("one", DEFAULT_BITS));
        assert!(p.files.is_empty());
        let back = CorruptParams::from_value(CorruptMode::Bitflip, &p.to_value()).unwrap();
        assert_eq!(back, p);
        let p = params(
            CorruptMode::Truncate,
            json!({"targets": "minority", "bytes": 10, "files": ["*.aof"]}),
        );
        assert_eq!((p.bytes, p.files.clone()), (10, vec!["*.aof".to_string()]));
        for (v, key) in [
            (json!({"targets": "most"}), "targets"),
            (json!({"bits": 0}), "bits"),
            (json!({"bits": -3}), "bits"),
            (json!({"bytes": "lots"}), "bytes"),
            (json!({"files": "*.wal"}), "files"),
            (json!({"files": ["/etc/passwd"]}), "files"),
            (json!({"files": ["../x"]}), "files"),
        ] {
            let e = CorruptParams::from_value(CorruptMode::Truncate, &v).unwrap_err();
            assert!(e.starts_with(key), "{v}: {e}");
        }
    }

    #[test]
    fn modes_and_verbs_map_both_ways() {
        for m in [CorruptMode::Bitflip, CorruptMode::Truncate] {
            assert_eq!(CorruptMode::of_verb(m.verb()), Some(m));
        }
        assert_eq!(CorruptMode::parse("bitflip"), Some(CorruptMode::Bitflip));
        assert_eq!(CorruptMode::parse("flip"), None);
        assert_eq!(CorruptMode::of_verb("kill"), None);
    }

    #[test]
    fn listing_parses_sizes_and_paths_and_skips_noise() {
        let files =
            parse_listing("12\t/d/b.wal\n0\t/d/a.wal\nfind: warning\n12\t/d/b.wal\nx\t/d/c\n");
        assert_eq!(
            files,
            vec![
                DataFile {
                    path: "/d/a.wal".into(),
                    size: 0
                },
                DataFile {
                    path: "/d/b.wal".into(),
                    size: 12
                },
            ]
        );
    }

    #[test]
    fn plans_damage_only_non_empty_files_within_their_size() {
        let files = vec![
            DataFile {
                path: "/d/empty".into(),
                size: 0,
            },
            DataFile {
                path: "/d/small".into(),
                size: 3,
            },
            DataFile {
                path: "/d/big".into(),
                size: 1 << 20,
            },
        ];
        let flip = params(CorruptMode::Bitflip, json!({"bits": 8}));
        let cut = params(CorruptMode::Truncate, json!({"bytes": 100}));
        let mut chosen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let p = plan(&flip, &files, &mut rng).unwrap();
            chosen.insert(p.file.path.clone());
            let Damage::Flip(bits) = &p.damage else {
                panic!("{p:?}")
            };
            assert_eq!(bits.len() as u64, 8.min(p.file.size));
            assert!(bits.windows(2).all(|w| w[0].0 < w[1].0), "{bits:?}");
            assert!(bits.iter().all(|&(o, b)| o < p.file.size && b < 8));
            let p = plan(&cut, &files, &mut rng).unwrap();
            let Damage::TruncateTo(to) = p.damage else {
                panic!("{p:?}")
            };
            assert!(to < p.file.size && p.file.size - to <= 100, "{p:?}");
            assert_eq!(p.to_value()["cut"], p.file.size - to);
        }
        assert_eq!(
            chosen.into_iter().collect::<Vec<_>>(),
            vec!["/d/big".to_string(), "/d/small".to_string()]
        );
        assert_eq!(
            plan(&flip, &files[..1], &mut ChaCha8Rng::seed_from_u64(1)),
            None
        );
        // The same seed and files give the same plan.
        let a = plan(&flip, &files, &mut ChaCha8Rng::seed_from_u64(7));
        assert_eq!(a, plan(&flip, &files, &mut ChaCha8Rng::seed_from_u64(7)));
    }
}
