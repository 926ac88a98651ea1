//! The libc side of the layer: errno, C strings, `fstatat` of a descriptor and its translation
//! into the kernel's `FileAttr`, and which open flags the backing file gets. Owns no state; does
//! not know inodes, handles or the undo log (`fs::inodes`, `fs::sync`).

use fuser::{Errno, FileAttr, FileType, INodeNo};
use std::ffi::{CString, OsStr};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(super) fn errno() -> Errno {
    Errno::from(std::io::Error::last_os_error())
}

pub(super) fn cstr(name: &OsStr) -> Result<CString, Errno> {
    CString::new(name.as_bytes()).map_err(|_| Errno::from_i32(libc::EINVAL))
}

pub(super) fn proc_path(fd: RawFd) -> CString {
    CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL in a number")
}

pub(super) fn stat_fd(fd: RawFd) -> Result<libc::stat, Errno> {
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

pub(super) fn kind_of(mode: u32) -> FileType {
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

pub(super) fn time(sec: i64, nsec: i64) -> SystemTime {
    if sec >= 0 {
        UNIX_EPOCH + Duration::new(sec as u64, nsec as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(sec.unsigned_abs())
    }
}

pub(super) fn attr_of(ino: u64, st: &libc::stat) -> FileAttr {
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
pub(super) fn backing_flags(flags: i32) -> i32 {
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

pub(super) fn wants_sync(flags: i32) -> bool {
    flags & (libc::O_SYNC | libc::O_DSYNC) != 0
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
