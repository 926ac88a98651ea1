//! The file-corruption faults' node side (`bitflip`, `truncate`; healed by `start-corrupted`):
//! stop the DB on each target (SIGKILL, through its `Kill` ability), list the files under its
//! data directory that match the globs (the system's `Abilities::data_files`, or the fault's `files`),
//! damage the one the plan chose, and sync it; `start-corrupted` starts the DB again.
//!
//! The damage is written with POSIX tools only (`od`, `printf`, `dd`, `truncate`, `sync FILE`),
//! so any node can take it and nothing needs uploading. When the data directory is on the
//! lose-unsynced layer the writes go through it and are synced, so a later power loss keeps
//! them. Owns the scripts and the fault's state; the parameters and the choice of what to
//! damage are pure (`faults::corrupt`).

use super::cluster::Cluster;
use super::fault::{Fault, FaultError, active_line, nodes_of};
use crate::control::{Cmd, Remote};
use crate::faults::corrupt::{self, CorruptMode, CorruptParams, Damage, DataFile, Plan};
use crate::faults::{Verb, verb};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// List `SIZE<TAB>PATH` of the regular files under `$1` matching any glob `$2…` (relative to
/// `$1`; `*` crosses `/` as in `find -path`).
const LIST_SCRIPT: &str = r#"d="$1"; shift
[ -d "$d" ] || { echo "the data directory $d does not exist" >&2; exit 1; }
for g in "$@"; do find "$d" -type f -path "$d/$g" -printf '%s\t%p\n'; done
"#;

/// Flip bits of file `$1`: then pairs of (byte offset, mask). Each byte is read with `od` and
/// written back XORed with its mask by `dd` in place; then the file is synced.
const FLIP_SCRIPT: &str = r#"f="$1"; shift
[ -f "$f" ] || { echo "$f is gone" >&2; exit 1; }
while [ $# -ge 2 ]; do
  off="$1"; mask="$2"; shift 2
  b=$(od -An -tu1 -j "$off" -N1 "$f" | tr -d ' \n')
  [ -n "$b" ] || { echo "cannot read byte $off of $f" >&2; exit 1; }
  printf '%b' "\\0$(printf '%03o' $((b ^ mask)))" | dd of="$f" bs=1 seek="$off" count=1 conv=notrunc status=none || exit 1
done
sync "$f"
"#;

/// Cut file `$1` to `$2` bytes and sync it.
const TRUNCATE_SCRIPT: &str = r#"f="$1"
[ -f "$f" ] || { echo "$f is gone" >&2; exit 1; }
truncate -s "$2" "$f" && sync "$f"
"#;

/// The files under `data_dir` on the node matching `globs`.
fn list(remote: &dyn Remote, data_dir: &str, globs: &[String]) -> Result<Vec<DataFile>, String> {
    let args = std::iter::once(data_dir.to_string()).chain(globs.iter().cloned());
    let out = remote
        .exec_ok(&Cmd::script(LIST_SCRIPT, args).sudo(true))
        .map_err(|e| format!("listing data files: {e}"))?;
    Ok(corrupt::parse_listing(&out))
}

/// Write the planned damage on the node.
fn apply(remote: &dyn Remote, plan: &Plan) -> Result<(), String> {
    let path = plan.file.path.clone();
    let cmd = match &plan.damage {
        Damage::Flip(bits) => Cmd::script(
            FLIP_SCRIPT,
            std::iter::once(path).chain(
                bits.iter()
                    .flat_map(|&(off, bit)| [off.to_string(), (1u32 << bit).to_string()]),
            ),
        ),
        Damage::TruncateTo(to) => Cmd::script(TRUNCATE_SCRIPT, [path, to.to_string()]),
    };
    remote
        .exec_ok(&cmd.sudo(true))
        .map(|_| ())
        .map_err(|e| format!("damaging {}: {e}", plan.file.path))
}

/// The corruption faults, and the nodes they stopped to damage a data file.
#[derive(Debug, Default)]
pub struct Corrupt {
    corrupted: BTreeSet<String>,
}

impl Corrupt {
    /// `bitflip` / `truncate` (`{"targets", "bits" | "bytes", "files"}`): kill the DB on each
    /// target and damage one matching data file. The completion value names, per node, the
    /// file and what was done to it (`flipped`: [offset, bit] pairs; `truncated_to`, `cut`).
    fn corrupt(
        &mut self,
        cx: &mut Cluster,
        mode: CorruptMode,
        value: &Value,
    ) -> Result<Value, String> {
        let db = cx.db();
        let kill = db
            .as_kill()
            .ok_or_else(|| format!("{} cannot be stopped and restarted", db.name()))?;
        let data_dir = db
            .data_dir()
            .ok_or_else(|| format!("{} declares no data directory", db.name()))?;
        let params = CorruptParams::from_value(mode, value)?;
        let globs = if params.files.is_empty() {
            db.data_files()
        } else {
            params.files.clone()
        };
        if globs.is_empty() {
            return Err(format!(
                "{} declares no data files to corrupt; name them with files = [...] in the fault",
                db.name()
            ));
        }
        let idx = cx.choose_targets(params.targets)?;
        let names = cx.node_names(&idx);
        // One seed per node, drawn in node order, so the run's seed decides every plan.
        let seeds: BTreeMap<String, u64> = names
            .iter()
            .map(|n| (n.clone(), cx.rng().random()))
            .collect();
        self.corrupted.extend(names.iter().cloned());
        let detail = json!({ "nodes": names, "files": globs });
        let reports = std::sync::Mutex::new(serde_json::Map::new());
        cx.journaled(
            "inject",
            mode.verb(),
            detail.clone(),
            Some(verb::START_CORRUPTED),
            |cx| {
                cx.on_nodes(&idx, |r, node| {
                    kill.kill(r, node).map_err(|e| e.to_string())?;
                    let files = list(r, &data_dir, &globs)?;
                    let mut rng = ChaCha8Rng::seed_from_u64(seeds[&node.name]);
                    let plan = corrupt::plan(&params, &files, &mut rng).ok_or_else(|| {
                        format!(
                            "no non-empty file under {data_dir} matches {} (the DB is stopped; nothing was damaged)",
                            globs.join(", ")
                        )
                    })?;
                    apply(r, &plan)?;
                    reports
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(node.name.clone(), plan.to_value());
                    Ok(())
                })
            },
        )?;
        let mut out = json!({ "nodes": detail["nodes"] });
        out["damaged"] = Value::Object(reports.into_inner().unwrap_or_else(|p| p.into_inner()));
        Ok(out)
    }

    /// `start-corrupted`: start the DB on every node (idempotent), the damaged ones on their
    /// damaged files.
    fn start_corrupted(&mut self, cx: &mut Cluster) -> Result<Vec<String>, String> {
        let db = cx.db();
        let Some(kill) = db.as_kill() else {
            return Ok(vec![]);
        };
        let cluster = cx.nodes().to_vec();
        let (all, damaged) = (cx.all_idx(), self.corrupted.clone());
        cx.journaled(
            "undo",
            verb::START_CORRUPTED,
            json!({ "corrupted": damaged }),
            None,
            |cx| {
                cx.on_nodes(&all, |r, node| {
                    kill.start(r, node, &cluster).map_err(|e| e.to_string())
                })
            },
        )?;
        Ok(std::mem::take(&mut self.corrupted).into_iter().collect())
    }
}

impl Fault for Corrupt {
    fn name(&self) -> &'static str {
        "corrupt"
    }

    fn verbs(&self) -> &'static [Verb] {
        &[Verb::Bitflip, Verb::Truncate, Verb::StartCorrupted]
    }

    fn invoke(&mut self, cx: &mut Cluster, v: Verb, value: &Value) -> Result<Value, FaultError> {
        Ok(match v {
            Verb::Bitflip => self.corrupt(cx, CorruptMode::Bitflip, value)?,
            Verb::Truncate => self.corrupt(cx, CorruptMode::Truncate, value)?,
            _ => json!({ "nodes": self.start_corrupted(cx)? }),
        })
    }

    fn heal(&mut self, cx: &mut Cluster) -> Result<(), String> {
        if self.corrupted.is_empty() {
            return Ok(());
        }
        self.start_corrupted(cx).map(|_| ())
    }

    fn heal_what(&self) -> &'static str {
        "start after corruption"
    }

    fn active(&self) -> Option<String> {
        active_line("corrupted", &self.corrupted)
    }

    fn adopt(&mut self, outstanding: &[Value]) -> Vec<String> {
        let mut nodes = nodes_of(outstanding, Verb::Bitflip);
        nodes.extend(nodes_of(outstanding, Verb::Truncate));
        nodes.sort();
        nodes.dedup();
        self.corrupted.extend(nodes.iter().cloned());
        nodes
    }

    fn healed(&self, db_name: &str) -> String {
        format!(
            "restarted {db_name} (stopped to corrupt a data file per the journal; the damage stays)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scripts on this machine's own shell and tools, on a scratch file: the bits flipped
    /// are exactly the planned ones, and a truncate leaves the planned length.
    #[test]
    fn scripts_flip_exactly_the_planned_bits_and_truncate_to_the_planned_length() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("seg.wal");
        let original: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        std::fs::write(&f, &original).unwrap();
        let sh = |script: &str, args: &[String]| {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .arg("sh")
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        let listed = corrupt::parse_listing(&sh(
            LIST_SCRIPT,
            &[
                dir.path().display().to_string(),
                "*.wal".into(),
                "*.none".into(),
            ],
        ));
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].size, 1000);
        // Byte 0 (0x00 → NUL handling), 37 ('%'), 92 ('\\'), 255.
        let flips = [(0u64, 0u8), (37, 3), (92, 7), (255, 7), (999, 1)];
        let mut args = vec![f.display().to_string()];
        for (o, b) in flips {
            args.push(o.to_string());
            args.push((1u32 << b).to_string());
        }
        sh(FLIP_SCRIPT, &args);
        let after = std::fs::read(&f).unwrap();
        assert_eq!(after.len(), original.len());
        let mut expected = original.clone();
        for (o, b) in flips {
            expected[o as usize] ^= 1 << b;
        }
        assert_eq!(after, expected);
        sh(TRUNCATE_SCRIPT, &[f.display().to_string(), "600".into()]);
        assert_eq!(std::fs::read(&f).unwrap(), expected[..600]);
    }
}
