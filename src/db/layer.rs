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
//! Owns the scripts and [`DataLayer`], what a system hands the faults that need its data
//! directory on the layer (`Abilities::data_layer`). Does not own when the scripts run (the
//! systems' `setup`, `teardown` and `start`) nor the faults (`nemesis::power`, `nemesis::disk`).

use super::DbError;
use crate::control::{Cmd, Remote};

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
