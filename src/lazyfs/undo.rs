//! The undo log of the lose-unsynced filesystem: for every file written since its last `fsync`,
//! the file's size then and the old bytes of every range a write, truncate or fallocate changed,
//! so a power loss can put the file back exactly as its last `fsync` left it.
//!
//! Owns [`UndoLog`] (per-file records keyed by the backing file's device and inode, with an open
//! descriptor so a renamed or unlinked file is still reached) and the restore order (old bytes
//! in reverse order of saving, then the size). Writes go to the backing file at once: reads
//! (and `mmap`) always see the newest data, and only a loss rolls back. Does not own the FUSE
//! plumbing (`lazyfs::fs`) nor the command channel (`lazyfs::control`). Only bytes below the
//! file's size at its last sync are saved: whatever grew past it is cut by the final truncate.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// Identity of a backing file: (device, inode).
pub type FileKey = (u64, u64);

/// What must be undone on one file.
#[derive(Debug)]
struct FileUndo {
    /// A read-write descriptor of the backing file (kept so restore reaches it whatever its name).
    file: Arc<File>,
    /// The size at the last sync (or when the log first saw the file).
    synced_size: u64,
    /// Old bytes, in the order they were saved: (offset, bytes).
    saved: Vec<(u64, Vec<u8>)>,
    /// Writes since the last sync (for stats).
    writes: u64,
    /// Bytes written since the last sync (for stats).
    written_bytes: u64,
}

impl FileUndo {
    /// Write the old bytes back in reverse order of saving, then cut to the synced size.
    fn roll_back(&self) -> std::io::Result<()> {
        for (offset, old) in self.saved.iter().rev() {
            self.file.write_all_at(old, *offset)?;
        }
        self.file.set_len(self.synced_size)
    }
}

/// The last unsynced write, for a torn-write loss: which file, where, and what it wrote.
#[derive(Debug, Clone)]
struct LastWrite {
    key: FileKey,
    offset: u64,
    data: Vec<u8>,
}

/// Counters reported by `stats`.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct Counters {
    /// Writes recorded since the layer started.
    pub writes: u64,
    /// fsync/fdatasync calls (and O_SYNC writes) that made a file durable.
    pub syncs: u64,
    /// Losses ordered (`lose-unsynced`).
    pub losses: u64,
    /// Unsynced writes dropped by all losses.
    pub writes_lost: u64,
    /// Files rolled back by all losses.
    pub files_rolled_back: u64,
}

/// Every file's undo record.
#[derive(Debug, Default)]
pub struct UndoLog {
    files: HashMap<FileKey, FileUndo>,
    last: Option<LastWrite>,
    counters: Counters,
}

/// What a loss did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct LossReport {
    /// Files rolled back to their last sync.
    pub files: usize,
    /// Unsynced writes dropped.
    pub writes: u64,
    /// Bytes of the last write kept (torn write), if one was kept.
    pub torn_bytes_kept: Option<usize>,
    /// Files that could not be rolled back, with why.
    pub errors: Vec<String>,
}

fn file_size(file: &File) -> std::io::Result<u64> {
    Ok(file.metadata()?.len())
}

fn read_range(file: &File, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len as usize];
    let mut done = 0usize;
    while done < buf.len() {
        let n = file.read_at(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    buf.truncate(done);
    Ok(buf)
}

impl UndoLog {
    fn entry(&mut self, key: FileKey, file: &Arc<File>) -> std::io::Result<&mut FileUndo> {
        match self.files.entry(key) {
            Entry::Occupied(o) => Ok(o.into_mut()),
            Entry::Vacant(v) => {
                let synced_size = file_size(file)?;
                Ok(v.insert(FileUndo {
                    file: file.clone(),
                    synced_size,
                    saved: Vec::new(),
                    writes: 0,
                    written_bytes: 0,
                }))
            }
        }
    }

    /// Save what a change of `[offset, offset + len)` of `file` will overwrite (call before the
    /// change).
    pub fn before_change(
        &mut self,
        key: FileKey,
        file: &Arc<File>,
        offset: u64,
        len: u64,
    ) -> std::io::Result<()> {
        let e = self.entry(key, file)?;
        let end = (offset.saturating_add(len)).min(e.synced_size);
        if offset < end {
            let old = read_range(&e.file, offset, end - offset)?;
            if !old.is_empty() {
                e.saved.push((offset, old));
            }
        }
        Ok(())
    }

    /// Record a write of `data` at `offset` (call before writing it to the backing file).
    pub fn before_write(
        &mut self,
        key: FileKey,
        file: &Arc<File>,
        offset: u64,
        data: &[u8],
    ) -> std::io::Result<()> {
        self.before_change(key, file, offset, data.len() as u64)?;
        let e = self
            .files
            .get_mut(&key)
            .expect("entry made by before_change");
        e.writes += 1;
        e.written_bytes += data.len() as u64;
        self.counters.writes += 1;
        self.last = Some(LastWrite {
            key,
            offset,
            data: data.to_vec(),
        });
        Ok(())
    }

    /// Record a truncate of `file` to `new_size` (call before truncating).
    pub fn before_truncate(
        &mut self,
        key: FileKey,
        file: &Arc<File>,
        new_size: u64,
    ) -> std::io::Result<()> {
        let current = file_size(file)?;
        if new_size < current {
            self.before_change(key, file, new_size, current - new_size)
        } else {
            self.entry(key, file).map(|_| ())
        }
    }

    /// The file is durable as it is now: forget its undo record.
    pub fn synced(&mut self, key: FileKey) {
        self.counters.syncs += 1;
        self.files.remove(&key);
        if self.last.as_ref().is_some_and(|l| l.key == key) {
            self.last = None;
        }
    }

    /// Files with unsynced changes, their descriptors (for `sync-all`).
    pub fn dirty_files(&self) -> Vec<(FileKey, Arc<File>)> {
        self.files
            .iter()
            .map(|(k, e)| (*k, e.file.clone()))
            .collect()
    }

    /// Roll every file back to its last sync. With `torn`, the last unsynced write is then
    /// written again in part (its first half, rounded down to 512 bytes, at least one byte when
    /// it had two): a write cut by the power failure.
    pub fn lose(&mut self, torn: bool) -> LossReport {
        let mut report = LossReport::default();
        let last = self.last.take();
        let files = std::mem::take(&mut self.files);
        for (key, e) in &files {
            match e.roll_back() {
                Err(err) => report
                    .errors
                    .push(format!("file (dev {}, inode {}): {err}", key.0, key.1)),
                Ok(()) => {
                    report.files += 1;
                    report.writes += e.writes;
                }
            }
        }
        if torn
            && let Some(l) = last
            && let Some(e) = files.get(&l.key)
        {
            let keep = torn_prefix(l.data.len());
            if keep > 0 {
                match e.file.write_all_at(&l.data[..keep], l.offset) {
                    Ok(()) => report.torn_bytes_kept = Some(keep),
                    Err(err) => report.errors.push(format!("torn write: {err}")),
                }
            }
        }
        self.counters.losses += 1;
        self.counters.writes_lost += report.writes;
        self.counters.files_rolled_back += report.files as u64;
        report
    }

    /// Roll one file back to its last sync (its unsynced writes dropped, as a failed fsync
    /// whose dirty pages the kernel then throws away); returns the writes dropped. A file with
    /// nothing unsynced is left alone (0).
    pub fn lose_file(&mut self, key: FileKey) -> std::io::Result<u64> {
        let Some(e) = self.files.remove(&key) else {
            return Ok(0);
        };
        if self.last.as_ref().is_some_and(|l| l.key == key) {
            self.last = None;
        }
        e.roll_back()?;
        self.counters.writes_lost += e.writes;
        self.counters.files_rolled_back += 1;
        Ok(e.writes)
    }

    /// Counters and the current unsynced state, as JSON for `stats`.
    pub fn stats(&self) -> serde_json::Value {
        let saved: usize = self
            .files
            .values()
            .flat_map(|e| e.saved.iter().map(|(_, b)| b.len()))
            .sum();
        serde_json::json!({
            "dirty_files": self.files.len(),
            "unsynced_writes": self.files.values().map(|e| e.writes).sum::<u64>(),
            "unsynced_bytes": self.files.values().map(|e| e.written_bytes).sum::<u64>(),
            "undo_bytes": saved,
            "totals": self.counters,
        })
    }
}

/// How many bytes of a torn write of `len` bytes survive: half, rounded down to a 512-byte sector
/// when it is at least one sector, else half rounded down.
pub fn torn_prefix(len: usize) -> usize {
    let half = len / 2;
    if half >= 512 { half / 512 * 512 } else { half }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn open(path: &std::path::Path) -> (FileKey, Arc<File>) {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .unwrap();
        let m = f.metadata().unwrap();
        ((m.dev(), m.ino()), Arc::new(f))
    }

    #[test]
    fn losing_one_file_rolls_back_only_that_file() {
        let dir = tempfile::tempdir().unwrap();
        let (pa, pb) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&pa, b"aaaa").unwrap();
        std::fs::write(&pb, b"bbbb").unwrap();
        let ((ka, fa), (kb, fb)) = (open(&pa), open(&pb));
        let mut log = UndoLog::default();
        for (k, f) in [(ka, &fa), (kb, &fb)] {
            log.before_write(k, f, 2, b"XXXX").unwrap();
            f.write_all_at(b"XXXX", 2).unwrap();
        }
        assert_eq!(log.lose_file(ka).unwrap(), 1);
        assert_eq!(std::fs::read(&pa).unwrap(), b"aaaa");
        assert_eq!(std::fs::read(&pb).unwrap(), b"bbXXXX");
        assert_eq!(log.lose_file(ka).unwrap(), 0, "nothing left to drop");
        assert_eq!(log.stats()["dirty_files"], 1);
        assert_eq!(log.stats()["totals"]["files_rolled_back"], 1);
    }

    #[test]
    fn a_loss_restores_the_last_synced_contents() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"hello world").unwrap();
        let (k, f) = open(&p);
        let mut log = UndoLog::default();
        // Overwrite the middle, append, then truncate in the middle and grow again.
        log.before_write(k, &f, 6, b"WORLD!!!").unwrap();
        f.write_all_at(b"WORLD!!!", 6).unwrap();
        log.before_truncate(k, &f, 3).unwrap();
        f.set_len(3).unwrap();
        log.before_write(k, &f, 8, b"xyz").unwrap();
        f.write_all_at(b"xyz", 8).unwrap();
        assert_eq!(log.stats()["dirty_files"], 1);
        let r = log.lose(false);
        assert_eq!((r.files, r.writes), (1, 2));
        assert_eq!(std::fs::read(&p).unwrap(), b"hello world");
    }

    #[test]
    fn a_sync_keeps_what_was_written_and_a_torn_loss_keeps_half_the_last_write() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let (k, f) = open(&p);
        let mut log = UndoLog::default();
        log.before_write(k, &f, 0, b"abcd").unwrap();
        f.write_all_at(b"abcd", 0).unwrap();
        log.synced(k);
        log.before_write(k, &f, 4, b"efgh").unwrap();
        f.write_all_at(b"efgh", 4).unwrap();
        let r = log.lose(true);
        assert_eq!(r.torn_bytes_kept, Some(2));
        assert_eq!(std::fs::read(&p).unwrap(), b"abcdef");
        assert_eq!(torn_prefix(4096), 2048);
        assert_eq!(torn_prefix(1500), 512);
        assert_eq!(torn_prefix(1), 0);
    }
}
