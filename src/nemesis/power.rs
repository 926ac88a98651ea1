//! The `power-loss` fault's node side: mounting a system's data directory on the lose-unsynced
//! layer (`shakedown lazyfs serve`, see `crate::lazyfs`) inside the node, ordering a loss, and
//! unmounting — also a stale mount whose layer process died ("Transport endpoint is not
//! connected").
//!
//! Layout next to the data directory `D` on the node: `D.lazyfs/` (the backing directory: the
//! real files), `D.lazyfs.sock` (control socket), `D.lazyfs.pid`, `D.lazyfs.log`. The layer is
//! mounted on `D` itself, so the system's configuration does not change. In the sandbox the
//! mount is made over SSH, inside the node's private mount namespace (a host mount would be
//! invisible there), by the same `shakedown` binary (the nodes share this machine's files); on
//! real hosts the binary must be at the same path on the node (refused with words otherwise).
//!
//! Owns the scripts and [`DataLayer`], and the `power-loss` / `os-crash` faults' `Nemesis`
//! methods (one mechanism, two names: a kernel crash loses the page cache as a power failure
//! does); does not own when the scripts run (the systems' `setup`, `teardown` and `start`).

use crate::control::{Cmd, Remote};
use crate::db::DbError;
use crate::faults::verb;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Where a system's data directory is served from the layer on a node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DataLayer {
    /// The `shakedown` binary on the node.
    pub exe: String,
    /// The data directory (the mount point).
    pub data_dir: String,
}

/// Exits 0 when `$1` is a mount point in this mount namespace.
#[cfg(test)]
const MOUNTED_SH: &str = r#"mounted() { awk -v m="$1" '$5 == m {f=1} END {exit !f}' /proc/self/mountinfo; }
"#;

/// Unmount `$1` if mounted (a stale FUSE mount too: `umount -l` detaches it), then stop the layer
/// process its pidfile names (only a `lazyfs` process). Prints what it did.
const UNMOUNT_SCRIPT: &str = concat!(
    r#"mounted() { awk -v m="$1" '$5 == m {f=1} END {exit !f}' /proc/self/mountinfo; }
"#,
    r#"d="$1"
if mounted "$d"; then
  if ! umount "$d" 2>/dev/null; then
    if command -v fusermount3 >/dev/null 2>&1 && fusermount3 -u "$d" 2>/dev/null; then :;
    else umount -l "$d" || { echo "cannot unmount $d" >&2; exit 1; }
    fi
  fi
  echo "unmounted $d"
fi
pid=$(cat "$d.lazyfs.pid" 2>/dev/null || true)
if [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'lazyfs serve'; then
  kill -TERM "$pid" 2>/dev/null || true
  i=0
  while [ -d "/proc/$pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
  [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null
  echo "stopped layer process $pid"
fi
rm -f "$d.lazyfs.pid" "$d.lazyfs.sock"
exit 0
"#
);

/// Mount the layer on `$2` with the binary `$1`; `$3` = `fresh` (wipe the backing directory:
/// a new run) or `keep` (remount over the files there: after a layer process died). A healthy
/// mount is left alone; a stale one is detached first. Waits until the mount answers.
const MOUNT_SCRIPT: &str = concat!(
    r#"mounted() { awk -v m="$1" '$5 == m {f=1} END {exit !f}' /proc/self/mountinfo; }
"#,
    r#"exe="$1"; d="$2"; mode="$3"
[ -e /dev/fuse ] || { echo "/dev/fuse is missing on this node: no FUSE, no power-loss fault" >&2; exit 1; }
[ -x "$exe" ] || { echo "the shakedown binary is not at $exe on this node (power-loss runs it there to serve the data directory)" >&2; exit 1; }
if mounted "$d"; then
  if [ "$mode" = keep ] && stat "$d" >/dev/null 2>&1; then exit 0; fi
  umount "$d" 2>/dev/null || umount -l "$d" || { echo "cannot unmount the old layer on $d" >&2; exit 1; }
fi
pid=$(cat "$d.lazyfs.pid" 2>/dev/null || true)
if [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'lazyfs serve'; then
  kill -KILL "$pid" 2>/dev/null || true
fi
if [ "$mode" = fresh ]; then rm -rf "$d.lazyfs"; fi
mkdir -p "$d.lazyfs" "$d"
if [ "$mode" = fresh ]; then find "$d" -mindepth 1 -delete 2>/dev/null || true; fi
setsid "$exe" lazyfs serve --backing "$d.lazyfs" --mount "$d" --control "$d.lazyfs.sock" >> "$d.lazyfs.log" 2>&1 < /dev/null &
echo $! > "$d.lazyfs.pid"
i=0
while [ $i -lt 100 ]; do
  if mounted "$d" && [ -S "$d.lazyfs.sock" ] && stat "$d" >/dev/null 2>&1; then chmod 700 "$d"; exit 0; fi
  if ! [ -d "/proc/$!" ]; then break; fi
  sleep 0.05; i=$((i+1))
done
echo "the layer did not mount on $d: $(tail -n 3 "$d.lazyfs.log" 2>/dev/null | tr '\n' ' ')" >&2
exit 1
"#
);

/// Order a loss: `$1` binary, `$2` data dir, `$3` `torn` or empty. Prints the layer's answer.
const LOSE_SCRIPT: &str = r#"exe="$1"; d="$2"
if [ "$3" = torn ]; then set -- lose-unsynced torn; else set -- lose-unsynced; fi
"$exe" lazyfs ctl --control "$d.lazyfs.sock" "$@"
"#;

/// Make every write so far durable: `$1` binary, `$2` data dir. Prints the layer's answer.
const SYNC_ALL_SCRIPT: &str = r#""$1" lazyfs ctl --control "$2.lazyfs.sock" sync-all"#;

fn other(remote: &dyn Remote, message: String) -> DbError {
    DbError::Other {
        node: remote.node().to_string(),
        message,
    }
}

impl DataLayer {
    /// The layer over `data_dir` when the run serves its data through one (`exe` is the binary
    /// the nodes run it with, set only when the nemesis has `power-loss`).
    pub fn over(exe: Option<&str>, data_dir: String) -> Option<DataLayer> {
        exe.map(|exe| DataLayer {
            exe: exe.to_string(),
            data_dir,
        })
    }

    /// Mount the layer on the data directory: `fresh` wipes what was there (a new run's setup),
    /// otherwise the files are kept (a restart after the layer process died).
    pub fn mount(&self, remote: &dyn Remote, fresh: bool) -> Result<(), DbError> {
        let mode = if fresh { "fresh" } else { "keep" };
        remote
            .exec_ok(
                &Cmd::script(
                    MOUNT_SCRIPT,
                    [self.exe.as_str(), self.data_dir.as_str(), mode],
                )
                .sudo(true),
            )
            .map_err(|e| other(remote, format!("mounting the lazyfs layer: {e}")))?;
        Ok(())
    }

    /// Unmount the layer (stale or not) and stop its process. Nothing mounted: nothing done.
    pub fn unmount(&self, remote: &dyn Remote) -> Result<String, DbError> {
        unmount(remote, &self.data_dir)
    }

    /// Make every write made so far durable, as if each file had been fsynced (the end of a
    /// setup whose files a power loss must not take back).
    pub fn sync_all(&self, remote: &dyn Remote) -> Result<(), DbError> {
        remote
            .exec_ok(
                &Cmd::script(SYNC_ALL_SCRIPT, [self.exe.as_str(), self.data_dir.as_str()])
                    .sudo(true),
            )
            .map_err(|e| other(remote, format!("syncing the lazyfs layer: {e}")))?;
        Ok(())
    }

    /// Drop every unsynced write (the database must be stopped). Returns the layer's report.
    pub fn lose(&self, remote: &dyn Remote, torn: bool) -> Result<serde_json::Value, DbError> {
        let out = remote
            .exec_ok(
                &Cmd::script(
                    LOSE_SCRIPT,
                    [
                        self.exe.as_str(),
                        self.data_dir.as_str(),
                        if torn { "torn" } else { "" },
                    ],
                )
                .sudo(true),
            )
            .map_err(|e| other(remote, format!("ordering the lazyfs layer to lose: {e}")))?;
        Ok(serde_json::from_str(out.trim()).unwrap_or_else(|_| out.trim().into()))
    }
}

/// Unmount the layer on `data_dir` if one is mounted (a stale mount too) and stop its process.
pub fn unmount(remote: &dyn Remote, data_dir: &str) -> Result<String, DbError> {
    let out = remote
        .exec_ok(&Cmd::script(UNMOUNT_SCRIPT, [data_dir]).sudo(true))
        .map_err(|e| other(remote, format!("unmounting the lazyfs layer: {e}")))?;
    Ok(out.trim().to_string())
}

impl super::Nemesis {
    /// Power failure (`f` = `power-loss`, undone by `undo` = `power-on`) or OS crash
    /// (`os-crash`, `reboot`) on the targets (`{"targets", "torn"}`): SIGKILL the DB, then order
    /// the lose-unsynced layer under its data directory to drop every write not fsynced. The
    /// completion value has each node's loss report (`lost`: files rolled back, writes dropped).
    pub(super) fn power_loss(
        &mut self,
        f: &'static str,
        undo: &'static str,
        value: &Value,
    ) -> Result<Value, String> {
        let db = self.cfg.db.clone();
        let kill = db
            .as_kill()
            .ok_or_else(|| format!("{} cannot be killed", db.name()))?;
        let layer = db.data_layer().ok_or_else(|| {
            format!(
                "{}'s data directory is not on the lose-unsynced layer in this run",
                db.name()
            )
        })?;
        let targets = crate::faults::Targets::of_value(&value["targets"])?;
        let torn = value["torn"].as_bool().unwrap_or(false);
        let idx = self.choose_targets(targets)?;
        let names = self.node_names(&idx);
        self.powered_off
            .extend(names.iter().map(|n| (n.clone(), undo)));
        let detail = json!({ "nodes": names, "torn": torn, "layer": layer });
        let reports = std::sync::Mutex::new(serde_json::Map::new());
        self.journaled("inject", f, detail.clone(), Some(undo), |n| {
            n.on_nodes(&idx, |r, node| {
                kill.kill(r, node).map_err(|e| e.to_string())?;
                let lost = layer.lose(r, torn).map_err(|e| e.to_string())?;
                reports
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(node.name.clone(), lost);
                Ok(())
            })
        })?;
        let mut out = detail;
        out["lost"] = Value::Object(reports.into_inner().unwrap_or_else(|p| p.into_inner()));
        Ok(out)
    }

    /// Start the DB on every node (idempotent) after power losses and OS crashes; with the
    /// layer, a stale mount is remounted first (the system's `start`).
    pub fn power_on(&mut self) -> Result<Vec<String>, String> {
        self.power_on_as(None)
    }

    /// [`Self::power_on`] journaled as `f` (`power-on` or `reboot`; `None`: the verb an
    /// outstanding cut owes). Cuts owed another verb are journaled undone by it too, so
    /// `shakedown heal` finds none of them outstanding.
    pub(super) fn power_on_as(&mut self, f: Option<&str>) -> Result<Vec<String>, String> {
        let owed: BTreeSet<&'static str> = self.powered_off.iter().map(|(_, u)| *u).collect();
        let f: &'static str = match f {
            Some(v) if v == verb::REBOOT => verb::REBOOT,
            Some(_) => verb::POWER_ON,
            None => owed.iter().next().copied().unwrap_or(verb::POWER_ON),
        };
        let db = self.cfg.db.clone();
        let Some(kill) = db.as_kill() else {
            return Ok(vec![]);
        };
        let cluster = self.cfg.nodes.clone();
        let all = self.all_idx();
        let off: BTreeSet<String> = self.powered_off.iter().map(|(n, _)| n.clone()).collect();
        self.journaled("undo", f, json!({ "powered_off": off }), None, |n| {
            n.on_nodes(&all, |r, node| {
                kill.start(r, node, &cluster).map_err(|e| e.to_string())
            })
        })?;
        for other in owed.into_iter().filter(|v| *v != f) {
            self.journaled(
                "undo",
                other,
                json!({ "powered_off": off, "by": f }),
                None,
                |_| Ok(()),
            )?;
        }
        self.powered_off.clear();
        Ok(off.into_iter().collect())
    }

    /// Remember nodes whose power an earlier controller cut (from its journal), with the verb
    /// that undoes the cut (`power-on`, `reboot`).
    pub fn adopt_powered_off(
        &mut self,
        nodes: impl IntoIterator<Item = String>,
        undo: &'static str,
    ) {
        self.powered_off
            .extend(nodes.into_iter().map(|n| (n, undo)));
    }
}

/// Whether the scripts' shared helper is in each (kept in one place above).
#[cfg(test)]
mod tests {
    #[test]
    fn scripts_share_the_mount_check() {
        let helper = super::MOUNTED_SH.trim();
        assert!(super::UNMOUNT_SCRIPT.starts_with(helper));
        assert!(super::MOUNT_SCRIPT.starts_with(helper));
    }
}
