//! Which operations make a file durable: an fsync (gated by the disk faults in effect, a failed
//! one may drop the file's unsynced writes), the layer-wide `sync_all` and the loss itself. The
//! undo log's bookkeeping is `lazyfs::undo`; the requests that call these are in `fs`.

use super::LazyFs;
use crate::lazyfs::undo::{FileKey, LossReport};
use fuser::{Errno, INodeNo};
use std::fs::File;

impl LazyFs {
    /// Sync a file unless a disk fault fails the fsync; a failure that drops unsynced writes
    /// rolls the file back first, and its cached pages are invalidated after the reply.
    pub(super) fn fsync_gated(
        &self,
        ino: INodeNo,
        key: FileKey,
        file: &File,
        datasync: bool,
    ) -> Result<(), Errno> {
        match self.inject.before_fsync() {
            Ok(()) => self.sync_file(key, file, datasync),
            Err(f) => {
                if f.drop_unsynced {
                    let _ = self.lock_undo().lose_file(key);
                    if let Some(inval) = self.invalidate.get().cloned() {
                        std::thread::spawn(move || inval(ino.0));
                    }
                }
                Err(Errno::from_i32(f.errno))
            }
        }
    }

    /// Sync one file now: fsync its backing file and forget its undo record.
    pub(super) fn sync_file(&self, key: FileKey, file: &File, datasync: bool) -> Result<(), Errno> {
        // Hold the undo lock so no write slips between the sync and forgetting its record.
        let mut undo = self.lock_undo();
        let r = if datasync {
            file.sync_data()
        } else {
            file.sync_all()
        };
        r.map_err(Errno::from)?;
        undo.synced(key);
        Ok(())
    }

    /// Drop every unsynced change (see [`UndoLog::lose`]).
    pub fn lose(&self, torn: bool) -> LossReport {
        self.lock_undo().lose(torn)
    }

    /// Make every file durable now.
    pub fn sync_all(&self) -> Result<usize, String> {
        let mut undo = self.lock_undo();
        let dirty = undo.dirty_files();
        let mut errs = Vec::new();
        for (key, file) in &dirty {
            match file.sync_all() {
                Ok(()) => undo.synced(*key),
                Err(e) => errs.push(format!("file (dev {}, inode {}): {e}", key.0, key.1)),
            }
        }
        if errs.is_empty() {
            Ok(dirty.len())
        } else {
            Err(errs.join("; "))
        }
    }
}
