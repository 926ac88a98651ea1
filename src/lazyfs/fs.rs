//! The FUSE side of the lose-unsynced filesystem: a passthrough over a backing directory (every
//! operation is the same operation on the backing file, reached through an `O_PATH` descriptor
//! per inode the kernel knows, as libfuse's `passthrough_ll` does, so renames of open files and
//! directories need no path bookkeeping) that records in an [`UndoLog`] what every data change
//! overwrote until the file is synced.
//!
//! Owns the mapping kernel inode ⇄ backing file, file handles, and which operations sync:
//! `fsync`/`fdatasync` of a file (any handle of it) and writes through a handle opened with
//! `O_SYNC`/`O_DSYNC` make that file durable; `fsync` of a directory is passed through (and
//! changes nothing in the model: namespace operations are durable at once, see `lazyfs`).
//! `O_DIRECT` is accepted and served like any other write (the backing file is opened without
//! it): O_DIRECT promises no durability, only `fsync` does. Page cache: files are opened without
//! `direct_io`, so `mmap` works (bbolt, etcd's store, reads through a shared map; FUSE writes
//! dirty shared pages back through `write`, which the undo log records); after a loss every
//! known inode's cached pages and attributes are invalidated. `sync_file_range` never reaches a
//! FUSE filesystem (no such request): it syncs nothing here, as on a file system that ignores
//! it. Extended attributes and `copy_file_range` answer ENOSYS (the kernel falls back); locks are
//! the kernel's local ones. Does not own the command channel (`lazyfs::control`).

use super::inject::Injector;
use super::undo::{FileKey, LossReport, UndoLog};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs, ReplyWrite,
    Request, TimeOrNow, WriteFlags,
};
use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long the kernel may cache entries and attributes (a loss invalidates them explicitly).
const TTL: Duration = Duration::from_secs(1);

/// One inode the kernel knows.
struct Inode {
    /// `O_PATH` descriptor of the backing file.
    fd: OwnedFd,
    /// Backing identity.
    key: FileKey,
    /// Lookups the kernel holds (decremented by `forget`).
    nlookup: u64,
}

/// One open file or directory.
enum Handle {
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
struct State {
    inodes: HashMap<u64, Inode>,
    by_key: HashMap<FileKey, u64>,
    next_ino: u64,
    handles: HashMap<u64, Arc<Handle>>,
    next_fh: u64,
}

/// The filesystem: backing root, inode table, handles and the undo log.
pub struct LazyFs {
    state: Mutex<State>,
    /// Shared with the command channel.
    pub undo: Arc<Mutex<UndoLog>>,
    /// Disk faults in effect (set over the command channel).
    pub inject: Arc<Injector>,
    /// Drops the kernel's cached pages of an inode (set once the session exists); called from
    /// a thread of its own, never inside a request.
    invalidate: std::sync::OnceLock<Arc<dyn Fn(u64) + Send + Sync>>,
}

fn errno() -> Errno {
    Errno::from(std::io::Error::last_os_error())
}

fn cstr(name: &OsStr) -> Result<CString, Errno> {
    CString::new(name.as_bytes()).map_err(|_| Errno::from_i32(libc::EINVAL))
}

fn proc_path(fd: RawFd) -> CString {
    CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL in a number")
}

fn stat_fd(fd: RawFd) -> Result<libc::stat, Errno> {
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let empty = c"";
    // SAFETY: valid descriptor, NUL-terminated empty path, st is a valid out pointer.
    let r = unsafe {
        libc::fstatat(
            fd,
            empty.as_ptr(),
            &mut st,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r < 0 { Err(errno()) } else { Ok(st) }
}

fn kind_of(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFSOCK => FileType::Socket,
        _ => FileType::RegularFile,
    }
}

fn time(sec: i64, nsec: i64) -> SystemTime {
    if sec >= 0 {
        UNIX_EPOCH + Duration::new(sec as u64, nsec as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(sec.unsigned_abs())
    }
}

fn attr_of(ino: u64, st: &libc::stat) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: st.st_size as u64,
        blocks: st.st_blocks as u64,
        atime: time(st.st_atime, st.st_atime_nsec),
        mtime: time(st.st_mtime, st.st_mtime_nsec),
        ctime: time(st.st_ctime, st.st_ctime_nsec),
        crtime: time(st.st_ctime, st.st_ctime_nsec),
        kind: kind_of(st.st_mode),
        perm: (st.st_mode & 0o7777) as u16,
        nlink: st.st_nlink as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: st.st_rdev as u32,
        blksize: st.st_blksize as u32,
        flags: 0,
    }
}

/// Flags the backing file is opened with: the caller's, without those the layer serves itself
/// (`O_DIRECT`, `O_SYNC`/`O_DSYNC`, `O_APPEND` — the kernel gives every write its offset) and
/// with read access added to write-only opens (the undo log reads what a write overwrites).
fn backing_flags(flags: i32) -> i32 {
    let mut f = flags
        & !(libc::O_DIRECT
            | libc::O_SYNC
            | libc::O_DSYNC
            | libc::O_APPEND
            | libc::O_NOFOLLOW
            | libc::O_CREAT
            | libc::O_EXCL
            | libc::O_TRUNC
            | libc::O_NOCTTY);
    if f & libc::O_ACCMODE == libc::O_WRONLY {
        f = (f & !libc::O_ACCMODE) | libc::O_RDWR;
    }
    f | libc::O_CLOEXEC
}

fn wants_sync(flags: i32) -> bool {
    flags & (libc::O_SYNC | libc::O_DSYNC) != 0
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

    /// Sync a file unless a disk fault fails the fsync; a failure that drops unsynced writes
    /// rolls the file back first, and its cached pages are invalidated after the reply.
    fn fsync_gated(
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

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_undo(&self) -> MutexGuard<'_, UndoLog> {
        self.undo.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A duplicate of the `O_PATH` descriptor of `ino` (so no lock is held during IO).
    fn fd_of(&self, ino: INodeNo) -> Result<OwnedFd, Errno> {
        let st = self.lock();
        let inode = st.inodes.get(&ino.0).ok_or(Errno::from_i32(libc::ESTALE))?;
        inode.fd.try_clone().map_err(Errno::from)
    }

    fn handle(&self, fh: FileHandle) -> Result<Arc<Handle>, Errno> {
        self.lock()
            .handles
            .get(&fh.0)
            .cloned()
            .ok_or(Errno::from_i32(libc::EBADF))
    }

    fn add_handle(&self, h: Handle) -> u64 {
        let mut st = self.lock();
        let fh = st.next_fh;
        st.next_fh += 1;
        st.handles.insert(fh, Arc::new(h));
        fh
    }

    /// Look `name` up in `parent` and count one kernel lookup of it.
    fn lookup_entry(&self, parent: INodeNo, name: &OsStr) -> Result<FileAttr, Errno> {
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

    fn attr(&self, ino: INodeNo) -> Result<FileAttr, Errno> {
        let fd = self.fd_of(ino)?;
        Ok(attr_of(ino.0, &stat_fd(fd.as_raw_fd())?))
    }

    /// Open the backing file of `ino` through `/proc/self/fd` with `flags`.
    fn reopen(&self, ino: INodeNo, flags: i32) -> Result<(File, FileKey), Errno> {
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
    fn chown_new(&self, parent: &OwnedFd, name: &CString, req: &Request) {
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
    fn make_entry(
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

    /// Sync one file now: fsync its backing file and forget its undo record.
    fn sync_file(&self, key: FileKey, file: &File, datasync: bool) -> Result<(), Errno> {
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

    /// Inode numbers the kernel knows (for cache invalidation after a loss).
    pub fn known_inodes(&self) -> Vec<u64> {
        self.lock().inodes.keys().copied().collect()
    }
}

impl Filesystem for LazyFs {
    fn init(&mut self, _req: &Request, _config: &mut KernelConfig) -> std::io::Result<()> {
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.lookup_entry(parent, name) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        if ino.0 == 1 {
            return;
        }
        let mut st = self.lock();
        let gone = match st.inodes.get_mut(&ino.0) {
            Some(i) => {
                i.nlookup = i.nlookup.saturating_sub(nlookup);
                (i.nlookup == 0).then_some(i.key)
            }
            None => None,
        };
        if let Some(key) = gone {
            st.inodes.remove(&ino.0);
            if st.by_key.get(&key) == Some(&ino.0) {
                st.by_key.remove(&key);
            }
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let r = (|| -> Result<FileAttr, Errno> {
            let fd = self.fd_of(ino)?;
            let p = proc_path(fd.as_raw_fd());
            if let Some(m) = mode {
                // SAFETY: NUL-terminated path.
                if unsafe { libc::chmod(p.as_ptr(), m & 0o7777) } < 0 {
                    return Err(errno());
                }
            }
            if uid.is_some() || gid.is_some() {
                let u = uid.unwrap_or(u32::MAX);
                let g = gid.unwrap_or(u32::MAX);
                // SAFETY: valid descriptor, empty path with AT_EMPTY_PATH.
                let r = unsafe {
                    libc::fchownat(
                        fd.as_raw_fd(),
                        c"".as_ptr(),
                        u,
                        g,
                        libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
                    )
                };
                if r < 0 {
                    return Err(errno());
                }
            }
            if let Some(size) = size {
                let (file, key) = match fh.map(|h| self.handle(h)) {
                    Some(Ok(h)) => match &*h {
                        Handle::File { file, key, .. } => (file.clone(), *key),
                        Handle::Dir { .. } => return Err(Errno::from_i32(libc::EISDIR)),
                    },
                    _ => {
                        let (f, k) = self.reopen(ino, libc::O_RDWR | libc::O_CLOEXEC)?;
                        (Arc::new(f), k)
                    }
                };
                let mut undo = self.lock_undo();
                undo.before_truncate(key, &file, size)
                    .map_err(Errno::from)?;
                file.set_len(size).map_err(Errno::from)?;
            }
            if atime.is_some() || mtime.is_some() {
                let conv = |t: Option<TimeOrNow>| match t {
                    None => libc::timespec {
                        tv_sec: 0,
                        tv_nsec: libc::UTIME_OMIT,
                    },
                    Some(TimeOrNow::Now) => libc::timespec {
                        tv_sec: 0,
                        tv_nsec: libc::UTIME_NOW,
                    },
                    Some(TimeOrNow::SpecificTime(t)) => {
                        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
                        libc::timespec {
                            tv_sec: d.as_secs() as libc::time_t,
                            tv_nsec: d.subsec_nanos() as libc::c_long,
                        }
                    }
                };
                let times = [conv(atime), conv(mtime)];
                let st = stat_fd(fd.as_raw_fd())?;
                if st.st_mode & libc::S_IFMT != libc::S_IFLNK {
                    // SAFETY: NUL-terminated path, two timespecs.
                    if unsafe { libc::utimensat(libc::AT_FDCWD, p.as_ptr(), times.as_ptr(), 0) } < 0
                    {
                        return Err(errno());
                    }
                }
            }
            self.attr(ino)
        })();
        match r {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let r = (|| {
            let fd = self.fd_of(ino)?;
            let mut buf = vec![0u8; libc::PATH_MAX as usize];
            // SAFETY: valid descriptor, empty path, buffer of the given length.
            let n = unsafe {
                libc::readlinkat(
                    fd.as_raw_fd(),
                    c"".as_ptr(),
                    buf.as_mut_ptr() as *mut libc::c_char,
                    buf.len(),
                )
            };
            if n < 0 {
                return Err(errno());
            }
            buf.truncate(n as usize);
            Ok(buf)
        })();
        match r {
            Ok(b) => reply.data(&b),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        // SAFETY: valid descriptor and name.
        self.make_entry(req, parent, name, reply, |fd, c| unsafe {
            libc::mknodat(fd, c.as_ptr(), mode & !umask, rdev as u64)
        })
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        // SAFETY: valid descriptor and name.
        self.make_entry(req, parent, name, reply, |fd, c| unsafe {
            libc::mkdirat(fd, c.as_ptr(), mode & !umask)
        })
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = (|| {
            let pfd = self.fd_of(parent)?;
            let c = cstr(name)?;
            // SAFETY: valid descriptor and name.
            if unsafe { libc::unlinkat(pfd.as_raw_fd(), c.as_ptr(), 0) } < 0 {
                return Err(errno());
            }
            Ok(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = (|| {
            let pfd = self.fd_of(parent)?;
            let c = cstr(name)?;
            // SAFETY: valid descriptor and name.
            if unsafe { libc::unlinkat(pfd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) } < 0 {
                return Err(errno());
            }
            Ok(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let t = match cstr(target.as_os_str()) {
            Ok(t) => t,
            Err(e) => return reply.error(e),
        };
        // SAFETY: valid descriptor and names.
        self.make_entry(req, parent, link_name, reply, |fd, c| unsafe {
            libc::symlinkat(t.as_ptr(), fd, c.as_ptr())
        })
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            let p1 = self.fd_of(parent)?;
            let p2 = self.fd_of(newparent)?;
            let a = cstr(name)?;
            let b = cstr(newname)?;
            // SAFETY: valid descriptors and names; renameat2 through the raw syscall.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    p1.as_raw_fd(),
                    a.as_ptr(),
                    p2.as_raw_fd(),
                    b.as_ptr(),
                    flags.bits() as libc::c_uint,
                )
            };
            if r < 0 {
                return Err(errno());
            }
            Ok(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let r = (|| {
            let fd = self.fd_of(ino)?;
            let p2 = self.fd_of(newparent)?;
            let b = cstr(newname)?;
            let p = proc_path(fd.as_raw_fd());
            // SAFETY: NUL-terminated paths, valid descriptor.
            let r = unsafe {
                libc::linkat(
                    libc::AT_FDCWD,
                    p.as_ptr(),
                    p2.as_raw_fd(),
                    b.as_ptr(),
                    libc::AT_SYMLINK_FOLLOW,
                )
            };
            if r < 0 {
                return Err(errno());
            }
            self.lookup_entry(newparent, newname)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let r = (|| {
            let (file, key) = self.reopen(ino, backing_flags(flags.0))?;
            Ok(self.add_handle(Handle::File {
                file: Arc::new(file),
                key,
                sync: wants_sync(flags.0),
            }))
        })();
        match r {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let r = (|| {
            let h = self.handle(fh)?;
            let Handle::File { file, .. } = &*h else {
                return Err(Errno::from_i32(libc::EISDIR));
            };
            let mut buf = vec![0u8; size as usize];
            let mut done = 0usize;
            while done < buf.len() {
                let n = file
                    .read_at(&mut buf[done..], offset + done as u64)
                    .map_err(Errno::from)?;
                if n == 0 {
                    break;
                }
                done += n;
            }
            buf.truncate(done);
            Ok(buf)
        })();
        match r {
            Ok(b) => reply.data(&b),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let r = (|| {
            let h = self.handle(fh)?;
            let Handle::File { file, key, sync } = &*h else {
                return Err(Errno::from_i32(libc::EISDIR));
            };
            self.inject.before_write()?;
            {
                let mut undo = self.lock_undo();
                undo.before_write(*key, file, offset, data)
                    .map_err(Errno::from)?;
                file.write_all_at(data, offset).map_err(Errno::from)?;
            }
            if *sync {
                self.fsync_gated(ino, *key, file, false)?;
            }
            Ok(data.len() as u32)
        })();
        match r {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close() promises no durability.
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.lock().handles.remove(&fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            let h = self.handle(fh)?;
            let Handle::File { file, key, .. } = &*h else {
                return Err(Errno::from_i32(libc::EISDIR));
            };
            self.fsync_gated(ino, *key, file, datasync)
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let r = (|| {
            let (fd, _) = self.reopen(ino, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)?;
            let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
            let mut entries = vec![
                (1u64, FileType::Directory, OsString::from(".")),
                (1u64, FileType::Directory, OsString::from("..")),
            ];
            for e in std::fs::read_dir(&path).map_err(Errno::from)? {
                let e = e.map_err(Errno::from)?;
                let kind = e
                    .file_type()
                    .ok()
                    .and_then(FileType::from_std)
                    .unwrap_or(FileType::RegularFile);
                entries.push((
                    std::os::unix::fs::DirEntryExt::ino(&e).max(2),
                    kind,
                    e.file_name(),
                ));
            }
            Ok(self.add_handle(Handle::Dir { entries, fd }))
        })();
        match r {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let h = match self.handle(fh) {
            Ok(h) => h,
            Err(e) => return reply.error(e),
        };
        let Handle::Dir { entries, .. } = &*h else {
            return reply.error(Errno::from_i32(libc::ENOTDIR));
        };
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.lock().handles.remove(&fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            let h = self.handle(fh)?;
            let Handle::Dir { fd, .. } = &*h else {
                return Err(Errno::from_i32(libc::ENOTDIR));
            };
            if datasync {
                fd.sync_data()
            } else {
                fd.sync_all()
            }
            .map_err(Errno::from)
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        let r = (|| {
            let fd = self.fd_of(ino)?;
            let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
            // SAFETY: valid descriptor (O_PATH works with fstatvfs), valid out pointer.
            if unsafe { libc::fstatvfs(fd.as_raw_fd(), &mut s) } < 0 {
                return Err(errno());
            }
            Ok(s)
        })();
        match r {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: fuser::AccessFlags, reply: ReplyEmpty) {
        let r = (|| {
            let fd = self.fd_of(ino)?;
            let p = proc_path(fd.as_raw_fd());
            // SAFETY: NUL-terminated path.
            if unsafe { libc::access(p.as_ptr(), mask.bits()) } < 0 {
                return Err(errno());
            }
            Ok(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = (|| {
            let pfd = self.fd_of(parent)?;
            let c = cstr(name)?;
            let bflags = backing_flags(flags) | libc::O_CREAT | (flags & libc::O_EXCL);
            // SAFETY: valid descriptor and name; the result is checked.
            let f = unsafe { libc::openat(pfd.as_raw_fd(), c.as_ptr(), bflags, mode & !umask) };
            if f < 0 {
                return Err(errno());
            }
            // SAFETY: just opened, owned by the File.
            let file = unsafe { File::from_raw_fd(f) };
            self.chown_new(&pfd, &c, req);
            if flags & libc::O_TRUNC != 0 {
                let st = stat_fd(file.as_raw_fd())?;
                let key = (st.st_dev, st.st_ino);
                let file = Arc::new(file.try_clone().map_err(Errno::from)?);
                let mut undo = self.lock_undo();
                undo.before_truncate(key, &file, 0).map_err(Errno::from)?;
                file.set_len(0).map_err(Errno::from)?;
            }
            let attr = self.lookup_entry(parent, name)?;
            let st = stat_fd(file.as_raw_fd())?;
            let fh = self.add_handle(Handle::File {
                file: Arc::new(file),
                key: (st.st_dev, st.st_ino),
                sync: wants_sync(flags),
            });
            Ok((attr, fh))
        })();
        match r {
            Ok((a, fh)) => {
                reply.created(&TTL, &a, Generation(0), FileHandle(fh), FopenFlags::empty())
            }
            Err(e) => reply.error(e),
        }
    }

    // Extended attributes: ENOSYS, so the kernel stops asking (it asks for
    // `security.capability` on every write otherwise) and without a log line per call.
    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: fuser::ReplyXattr,
    ) {
        reply.error(Errno::from_i32(libc::ENOSYS));
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: fuser::ReplyXattr) {
        reply.error(Errno::from_i32(libc::ENOSYS));
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::from_i32(libc::ENOSYS));
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::from_i32(libc::ENOSYS));
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            let h = self.handle(fh)?;
            let Handle::File { file, key, .. } = &*h else {
                return Err(Errno::from_i32(libc::EISDIR));
            };
            self.inject.before_write()?;
            let mut undo = self.lock_undo();
            if mode & (libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE) != 0 {
                undo.before_change(*key, file, offset, length)
                    .map_err(Errno::from)?;
            } else {
                // Growing only: the restore truncates back to the synced size.
                undo.before_truncate(*key, file, u64::MAX)
                    .map_err(Errno::from)?;
            }
            // SAFETY: valid descriptor.
            let r = unsafe {
                libc::fallocate(
                    file.as_raw_fd(),
                    mode,
                    offset as libc::off_t,
                    length as libc::off_t,
                )
            };
            if r < 0 { Err(errno()) } else { Ok(()) }
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        let r = (|| {
            let h = self.handle(fh)?;
            let Handle::File { file, .. } = &*h else {
                return Err(Errno::from_i32(libc::EISDIR));
            };
            // SAFETY: valid descriptor (its own offset is not used for IO here).
            let r = unsafe { libc::lseek(file.as_raw_fd(), offset as libc::off_t, whence) };
            if r < 0 { Err(errno()) } else { Ok(r) }
        })();
        match r {
            Ok(o) => reply.offset(o),
            Err(e) => reply.error(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backing_flags_drop_what_the_layer_serves_and_add_read_access() {
        let f = backing_flags(libc::O_WRONLY | libc::O_APPEND | libc::O_DIRECT | libc::O_DSYNC);
        assert_eq!(f & libc::O_ACCMODE, libc::O_RDWR);
        assert_eq!(f & (libc::O_APPEND | libc::O_DIRECT | libc::O_DSYNC), 0);
        assert!(wants_sync(libc::O_WRONLY | libc::O_DSYNC));
        assert!(!wants_sync(libc::O_RDWR));
        assert_eq!(
            backing_flags(libc::O_RDONLY) & libc::O_ACCMODE,
            libc::O_RDONLY
        );
    }
}
