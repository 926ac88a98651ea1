//! The FUSE side of the lose-unsynced filesystem: a passthrough over a backing directory (every
//! operation is the same operation on the backing file, reached through an `O_PATH` descriptor
//! per inode the kernel knows, as libfuse's `passthrough_ll` does, so renames of open files and
//! directories need no path bookkeeping) that records in an
//! [`UndoLog`](super::undo::UndoLog) what every data change overwrote until the file is synced.
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
//!
//! This file answers the kernel's requests; the state they act on is `fs::inodes`, the syncs
//! `fs::sync`, the libc translation `fs::sys`.

mod inodes;
mod sync;
mod sys;

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs, ReplyWrite,
    Request, TimeOrNow, WriteFlags,
};
use inodes::Handle;
pub use inodes::LazyFs;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use sys::{backing_flags, cstr, errno, proc_path, stat_fd, wants_sync};

/// How long the kernel may cache entries and attributes (a loss invalidates them explicitly).
const TTL: Duration = Duration::from_secs(1);

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
