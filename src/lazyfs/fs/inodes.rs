//! The layer's state: the inode table (kernel inode ⇄ `O_PATH` descriptor of the backing file,
//! counted lookups), open handles, and the few operations every request builds on (look a name
//! up, reopen a backing file, make an entry). Does not answer requests (`fs`) nor decide what
//! syncs (`fs::sync`).

use super::TTL;
use super::sys::{attr_of, cstr, errno, proc_path, stat_fd};
use crate::lazyfs::inject::Injector;
use crate::lazyfs::undo::{FileKey, UndoLog};
use fuser::{Errno, FileAttr, FileHandle, FileType, Generation, INodeNo, ReplyEntry, Request};
use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

/// One inode the kernel knows.
pub(super) struct Inode {
    /// `O_PATH` descriptor of the backing file.
    pub(super) fd: OwnedFd,
    /// Backing identity.
    pub(super) key: FileKey,
    /// Lookups the kernel holds (decremented by `forget`).
    pub(super) nlookup: u64,
}

/// One open file or directory.
pub(super) enum Handle {
    File {
        file: Arc<File>,
        key: FileKey,
        /// Opened `O_SYNC`/`O_DSYNC`: every write is synced.
        sync: bool,
    },
    Dir {
        /// Entries snapshotted at `opendir`: (backing inode, type, name).
        entries: Vec<(u64, FileType, OsString)>,
        fd: File,
    },
}

#[derive(Default)]
pub(super) struct State {
    pub(super) inodes: HashMap<u64, Inode>,
    pub(super) by_key: HashMap<FileKey, u64>,
    pub(super) next_ino: u64,
    pub(super) handles: HashMap<u64, Arc<Handle>>,
    pub(super) next_fh: u64,
}

/// The filesystem: backing root, inode table, handles and the undo log.
pub struct LazyFs {
    pub(super) state: Mutex<State>,
    /// Shared with the command channel.
    pub undo: Arc<Mutex<UndoLog>>,
    /// Disk faults in effect (set over the command channel).
    pub inject: Arc<Injector>,
    /// Drops the kernel's cached pages of an inode (set once the session exists); called from
    /// a thread of its own, never inside a request.
    pub(super) invalidate: std::sync::OnceLock<Arc<dyn Fn(u64) + Send + Sync>>,
}

impl LazyFs {
    /// A layer over `backing` (an existing directory).
    pub fn new(backing: &Path) -> std::io::Result<LazyFs> {
        let c = CString::new(backing.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: NUL-terminated path; the result is checked.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd was just opened and is owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let st =
            stat_fd(fd.as_raw_fd()).map_err(|e| std::io::Error::from_raw_os_error(e.code()))?;
        let key = (st.st_dev, st.st_ino);
        let mut state = State {
            next_ino: 2,
            next_fh: 1,
            ..State::default()
        };
        state.inodes.insert(
            1,
            Inode {
                fd,
                key,
                nlookup: 1,
            },
        );
        state.by_key.insert(key, 1);
        Ok(LazyFs {
            state: Mutex::new(state),
            undo: Arc::new(Mutex::new(UndoLog::default())),
            inject: Arc::new(Injector::default()),
            invalidate: std::sync::OnceLock::new(),
        })
    }

    /// How to drop the kernel's cached pages of an inode (after a failed fsync dropped a file's
    /// unsynced writes).
    pub fn set_invalidator(&self, f: Arc<dyn Fn(u64) + Send + Sync>) {
        let _ = self.invalidate.set(f);
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn lock_undo(&self) -> MutexGuard<'_, UndoLog> {
        self.undo.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A duplicate of the `O_PATH` descriptor of `ino` (so no lock is held during IO).
    pub(super) fn fd_of(&self, ino: INodeNo) -> Result<OwnedFd, Errno> {
        let st = self.lock();
        let inode = st.inodes.get(&ino.0).ok_or(Errno::from_i32(libc::ESTALE))?;
        inode.fd.try_clone().map_err(Errno::from)
    }

    pub(super) fn handle(&self, fh: FileHandle) -> Result<Arc<Handle>, Errno> {
        self.lock()
            .handles
            .get(&fh.0)
            .cloned()
            .ok_or(Errno::from_i32(libc::EBADF))
    }

    pub(super) fn add_handle(&self, h: Handle) -> u64 {
        let mut st = self.lock();
        let fh = st.next_fh;
        st.next_fh += 1;
        st.handles.insert(fh, Arc::new(h));
        fh
    }

    /// Look `name` up in `parent` and count one kernel lookup of it.
    pub(super) fn lookup_entry(&self, parent: INodeNo, name: &OsStr) -> Result<FileAttr, Errno> {
        let pfd = self.fd_of(parent)?;
        let c = cstr(name)?;
        // SAFETY: valid descriptor and NUL-terminated name; the result is checked.
        let fd = unsafe {
            libc::openat(
                pfd.as_raw_fd(),
                c.as_ptr(),
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(errno());
        }
        // SAFETY: just opened, owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let stat = stat_fd(fd.as_raw_fd())?;
        let key = (stat.st_dev, stat.st_ino);
        let mut st = self.lock();
        let ino = match st.by_key.get(&key).copied() {
            Some(ino) => {
                if let Some(i) = st.inodes.get_mut(&ino) {
                    i.nlookup += 1;
                }
                ino
            }
            None => {
                let ino = st.next_ino;
                st.next_ino += 1;
                st.inodes.insert(
                    ino,
                    Inode {
                        fd,
                        key,
                        nlookup: 1,
                    },
                );
                st.by_key.insert(key, ino);
                ino
            }
        };
        Ok(attr_of(ino, &stat))
    }

    pub(super) fn attr(&self, ino: INodeNo) -> Result<FileAttr, Errno> {
        let fd = self.fd_of(ino)?;
        Ok(attr_of(ino.0, &stat_fd(fd.as_raw_fd())?))
    }

    /// Open the backing file of `ino` through `/proc/self/fd` with `flags`.
    pub(super) fn reopen(&self, ino: INodeNo, flags: i32) -> Result<(File, FileKey), Errno> {
        let fd = self.fd_of(ino)?;
        let st = stat_fd(fd.as_raw_fd())?;
        let p = proc_path(fd.as_raw_fd());
        // SAFETY: NUL-terminated path; the result is checked.
        let f = unsafe { libc::open(p.as_ptr(), flags) };
        if f < 0 {
            return Err(errno());
        }
        // SAFETY: just opened, owned by the File.
        Ok((unsafe { File::from_raw_fd(f) }, (st.st_dev, st.st_ino)))
    }

    /// Give a node made by the request to its caller (we run as root).
    pub(super) fn chown_new(&self, parent: &OwnedFd, name: &CString, req: &Request) {
        // SAFETY: valid descriptor and name; failure leaves root as owner, which is harmless.
        unsafe {
            libc::fchownat(
                parent.as_raw_fd(),
                name.as_ptr(),
                req.uid(),
                req.gid(),
                libc::AT_SYMLINK_NOFOLLOW,
            );
        }
    }

    /// Make a new entry `name` in `parent` with `make` (a `*at` call on the parent's descriptor
    /// returning < 0 on error), give it to the caller, and reply with its attributes.
    pub(super) fn make_entry(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        reply: ReplyEntry,
        make: impl FnOnce(RawFd, &CString) -> libc::c_int,
    ) {
        let r = (|| {
            let pfd = self.fd_of(parent)?;
            let c = cstr(name)?;
            if make(pfd.as_raw_fd(), &c) < 0 {
                return Err(errno());
            }
            self.chown_new(&pfd, &c, req);
            self.lookup_entry(parent, name)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub fn known_inodes(&self) -> Vec<u64> {
        self.lock().inodes.keys().copied().collect()
    }
}
