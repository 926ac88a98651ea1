//! `shakedown lazyfs`: a FUSE filesystem that loses unsynced writes, like Jepsen's LazyFS, for
//! the `power-loss` fault. A node's database keeps its data directory on it; on the fault the
//! database is killed and the layer ordered to drop every write not made durable since.
//!
//! Model (what survives a loss):
//! - **Data**: a file's contents and size are what they were at its last `fsync`/`fdatasync`
//!   (of any handle of it; a write through a handle opened `O_SYNC`/`O_DSYNC` syncs the file).
//!   Everything written, truncated or fallocated since is rolled back. With `torn`, the last
//!   unsynced write is then kept in part (its first half, whole 512-byte sectors when it spans
//!   one), as a write the power cut in the middle.
//! - **Namespace** (create, mkdir, unlink, rename, link, symlink, chmod, chown): durable at once,
//!   as on a file system that journals metadata synchronously. A file created and never synced
//!   survives, empty (or at its last synced size): the outcome ext4's default `data=ordered`
//!   mode often leaves after a crash. A strict model that also loses unsynced creates and renames
//!   (until the directory is fsynced) is not implemented; `fsync` of a directory is passed through.
//! - `sync_file_range` never reaches FUSE: it syncs nothing here. `O_DIRECT` writes are served
//!   like any write (unsynced until `fsync`).
//! - Why FUSE and `fuser`: a block-level layer (dm-log-writes, a loop device) would need kernel
//!   modules this kind of machine lacks and loses whole blocks, not writes; `fuser` is the
//!   maintained pure-Rust FUSE crate (no libfuse headers; as root it mounts with mount(2),
//!   `fusermount3` only for unmounting elsewhere).
//!
//! How: writes go to the backing directory at once and an undo log (`lazyfs::undo`) keeps what
//! they overwrote until the file is synced; a loss writes the old bytes back and truncates to the
//! synced size. So reads and `mmap` always see the newest data, a clean unmount keeps everything
//! (a clean shutdown loses nothing), and a layer process that dies keeps everything written
//! (its mount is then stale — "Transport endpoint is not connected" — until unmounted:
//! `power::unmount` does it).
//!
//! Commands, one line over the unix socket `--control` (the answer is one JSON line):
//! `lose-unsynced`, `lose-unsynced torn`, `sync-all`, `stats`, and the disk faults
//! (`lazyfs::inject`): `inject {JSON of faults::disk::DiskFault}` (writes / fsyncs fail with EIO
//! or ENOSPC, a failed fsync may drop the file's unsynced writes, added latency) and `clear`.
//! The database must be stopped (SIGKILL) before a loss: a loss under a running writer races
//! its writes.
//!
//! Owns the `lazyfs serve` process (mount, control socket, SIGTERM/SIGINT → unmount) and the
//! `lazyfs ctl` client. Does not own the faults (`nemesis::power`, `nemesis::disk`) nor mounting
//! it on nodes.

pub mod fs;
pub mod inject;
pub mod undo;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The commands the control socket takes.
pub const COMMANDS: &[&str] = &[
    "lose-unsynced",
    "lose-unsynced torn",
    "sync-all",
    "stats",
    "inject {disk fault JSON}",
    "clear",
];

/// Drops unsynced writes (`true`: torn) and returns the loss report.
type LoseFn = Arc<dyn Fn(bool) -> serde_json::Value + Send + Sync>;

/// What `lazyfs serve` needs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Directory holding the real files.
    pub backing: PathBuf,
    /// Where the layer is mounted.
    pub mount: PathBuf,
    /// Unix socket for commands.
    pub control: PathBuf,
}

/// Mount the layer and serve it until it is unmounted or the process gets SIGTERM/SIGINT.
/// Errors name the path and the cause.
pub fn serve(opts: &ServeOptions) -> Result<(), String> {
    if !opts.backing.is_dir() {
        return Err(format!(
            "backing directory {} does not exist",
            opts.backing.display()
        ));
    }
    if !opts.mount.is_dir() {
        return Err(format!(
            "mount point {} is not a directory",
            opts.mount.display()
        ));
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("/dev/fuse is missing: this kernel or container has no FUSE".into());
    }
    // Block the stop signals in every thread; one thread waits for them.
    // SAFETY: plain signal-mask manipulation before any thread is spawned.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let fs = fs::LazyFs::new(&opts.backing)
        .map_err(|e| format!("opening {}: {e}", opts.backing.display()))?;
    let undo = fs.undo.clone();
    let _ = std::fs::remove_file(&opts.control);
    let listener = UnixListener::bind(&opts.control)
        .map_err(|e| format!("control socket {}: {e}", opts.control.display()))?;
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName("shakedown-lazyfs".into()),
        fuser::MountOption::Subtype("lazyfs".into()),
        fuser::MountOption::DefaultPermissions,
        fuser::MountOption::Dev,
        fuser::MountOption::Suid,
    ];
    config.acl = fuser::SessionACL::All;
    config.n_threads = Some(2);
    let fs = Arc::new(fs);
    let mut session = fuser::Session::new(SharedFs(fs.clone()), &opts.mount, &config)
        .map_err(|e| format!("mounting on {}: {e}", opts.mount.display()))?;
    let notifier = session.notifier();
    {
        let notifier = notifier.clone();
        fs.set_invalidator(Arc::new(move |ino| {
            let _ = notifier.inval_inode(fuser::INodeNo(ino), 0, 0);
        }));
    }
    // A loss also drops the kernel's cached pages and attributes of every inode it knows.
    let lose: LoseFn = {
        let fs = fs.clone();
        Arc::new(move |torn| {
            let report = fs.lose(torn);
            for ino in fs.known_inodes() {
                let _ = notifier.inval_inode(fuser::INodeNo(ino), 0, 0);
            }
            serde_json::to_value(&report).unwrap_or_default()
        })
    };
    let mut unmounter = session.unmount_callable();
    std::thread::spawn(move || {
        let mut sig: libc::c_int = 0;
        // SAFETY: waits on the blocked set built above.
        unsafe { libc::sigwait(&set, &mut sig) };
        let _ = unmounter.unmount();
    });
    {
        let fs = fs.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let lose = lose.clone();
                let fs = fs.clone();
                let undo = undo.clone();
                std::thread::spawn(move || {
                    let _ = answer(stream, |cmd| match cmd {
                        "lose-unsynced" | "lose-unsynced torn" => Ok(lose(cmd.ends_with("torn"))),
                        "sync-all" => fs
                            .sync_all()
                            .map(|n| serde_json::json!({ "synced_files": n })),
                        "stats" => {
                            let mut s = undo.lock().unwrap_or_else(|p| p.into_inner()).stats();
                            s["disk_fault"] = fs.inject.stats();
                            Ok(s)
                        }
                        "clear" => {
                            fs.inject.set(None);
                            Ok(serde_json::json!({ "cleared": true }))
                        }
                        c if c.starts_with("inject ") => {
                            let v: serde_json::Value = serde_json::from_str(&c["inject ".len()..])
                                .map_err(|e| format!("inject: not JSON ({e})"))?;
                            let fault = crate::faults::disk::DiskFault::from_value(&v)?;
                            let what = fault.describe();
                            fs.inject.set(Some(fault));
                            Ok(serde_json::json!({ "injected": what }))
                        }
                        other => Err(format!(
                            "unknown command {other:?}: expected one of {}",
                            COMMANDS.join(", ")
                        )),
                    });
                });
            }
        });
    }
    let r = session.run();
    let _ = std::fs::remove_file(&opts.control);
    r.map_err(|e| format!("serving {}: {e}", opts.mount.display()))
}

/// One connection: read a command line, write `{"ok": …}` or `{"error": "…"}`.
fn answer(
    stream: UnixStream,
    run: impl FnOnce(&str) -> Result<serde_json::Value, String>,
) -> std::io::Result<()> {
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    let reply = match run(line.trim()) {
        Ok(v) => serde_json::json!({ "ok": v }),
        Err(e) => serde_json::json!({ "error": e }),
    };
    let mut w = &stream;
    writeln!(w, "{reply}")
}

/// Send one command to a serving layer and return its answer (`ok` value), or the error in words.
pub fn command(control: &Path, cmd: &str) -> Result<serde_json::Value, String> {
    let stream = UnixStream::connect(control).map_err(|e| {
        format!(
            "lazyfs control socket {}: {e} (is the layer running?)",
            control.display()
        )
    })?;
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(60)));
    let mut w = &stream;
    writeln!(w, "{cmd}").map_err(|e| format!("sending {cmd:?}: {e}"))?;
    let mut line = String::new();
    BufReader::new(&stream)
        .read_line(&mut line)
        .map_err(|e| format!("reading the answer to {cmd:?}: {e}"))?;
    let v: serde_json::Value = serde_json::from_str(line.trim())
        .map_err(|e| format!("answer to {cmd:?} is not JSON ({e}): {line:?}"))?;
    match v.get("error").and_then(|e| e.as_str()) {
        Some(e) => Err(e.to_string()),
        None => Ok(v["ok"].clone()),
    }
}

/// `Filesystem` for a shared `LazyFs` (the control thread holds it too).
struct SharedFs(Arc<fs::LazyFs>);

macro_rules! delegate {
    ($( fn $name:ident(&self $(, $arg:ident : $ty:ty)* ); )*) => {
        $( fn $name(&self $(, $arg: $ty)*) { self.0.$name($($arg),*) } )*
    };
}

#[allow(clippy::too_many_arguments)]
impl fuser::Filesystem for SharedFs {
    delegate! {
        fn lookup(&self, req: &fuser::Request, parent: fuser::INodeNo, name: &std::ffi::OsStr, reply: fuser::ReplyEntry);
        fn forget(&self, req: &fuser::Request, ino: fuser::INodeNo, nlookup: u64);
        fn getattr(&self, req: &fuser::Request, ino: fuser::INodeNo, fh: Option<fuser::FileHandle>, reply: fuser::ReplyAttr);
        fn setattr(&self, req: &fuser::Request, ino: fuser::INodeNo, mode: Option<u32>, uid: Option<u32>, gid: Option<u32>, size: Option<u64>, atime: Option<fuser::TimeOrNow>, mtime: Option<fuser::TimeOrNow>, ctime: Option<std::time::SystemTime>, fh: Option<fuser::FileHandle>, crtime: Option<std::time::SystemTime>, chgtime: Option<std::time::SystemTime>, bkuptime: Option<std::time::SystemTime>, flags: Option<fuser::BsdFileFlags>, reply: fuser::ReplyAttr);
        fn readlink(&self, req: &fuser::Request, ino: fuser::INodeNo, reply: fuser::ReplyData);
        fn mknod(&self, req: &fuser::Request, parent: fuser::INodeNo, name: &std::ffi::OsStr, mode: u32, umask: u32, rdev: u32, reply: fuser::ReplyEntry);
        fn mkdir(&self, req: &fuser::Request, parent: fuser::INodeNo, name: &std::ffi::OsStr, mode: u32, umask: u32, reply: fuser::ReplyEntry);
        fn unlink(&self, req: &fuser::Request, parent: fuser::INodeNo, name: &std::ffi::OsStr, reply: fuser::ReplyEmpty);
        fn rmdir(&self, req: &fuser::Request, parent: fuser::INodeNo, name: &std::ffi::OsStr, reply: fuser::ReplyEmpty);
        fn symlink(&self, req: &fuser::Request, parent: fuser::INodeNo, link_name: &std::ffi::OsStr, target: &Path, reply: fuser::ReplyEntry);
        fn rename(&self, req: &fuser::Request, parent: fuser::INodeNo, name: &std::ffi::OsStr, newparent: fuser::INodeNo, newname: &std::ffi::OsStr, flags: fuser::RenameFlags, reply: fuser::ReplyEmpty);
        fn link(&self, req: &fuser::Request, ino: fuser::INodeNo, newparent: fuser::INodeNo, newname: &std::ffi::OsStr, reply: fuser::ReplyEntry);
        fn open(&self, req: &fuser::Request, ino: fuser::INodeNo, flags: fuser::OpenFlags, reply: fuser::ReplyOpen);
        fn read(&self, req: &fuser::Request, ino: fuser::INodeNo, fh: fuser::FileHandle, offset: u64, size: u32, flags: fuser::OpenFlags, lock_owner: Option<fuser::LockOwner>, reply: fuser::ReplyData);
        fn write(&self, req: &fuser::Request, ino: fuser::INodeNo, fh: fuser::FileHandle, offset: u64, data: &[u8], write_flags: fuser::WriteFlags, flags: fuser::OpenFlags, lock_owner: Option<fuser::LockOwner>, reply: fuser::ReplyWrite);
        fn flush(&self, req: &fuser::Request, ino: fuser::INodeNo, fh: fuser::FileHandle, lock_owner: fuser::LockOwner, reply: fuser::ReplyEmpty);
        fn release(&self, req: &fuser::Request, ino: fuser::INodeNo, fh: fuser::FileHandle, flags: fuser::OpenFlags, lock_owner: Option<fuser::LockOwner>, flush: bool, reply: fuser::ReplyEmpty);
        fn fsync(&self, req: &fuser::Request, ino: fuser::INodeNo, fh: fuser::FileHandle, datasync: bool, reply: fuser::ReplyEmpty);
        fn opendir(&self, req: &fuser::Request, ino: fuser::INodeNo, flags: fuser::OpenFlags, reply: fuser::ReplyOpen);
        fn readdir(&self, req: &fuser::Request, ino: fuser::INodeNo, fh: fuser::FileHandle, offset: u64, reply: fuser::ReplyDirectory);
        fn releasedir(&self, req: &fuser::Request, ino: fuser::INodeNo, fh: fuser::FileHandle, flags: fuser::OpenFlags, reply: fuser::ReplyEmpty);
        fn fsyncdir(&self, req: &fuser::Request, ino: fuser::INodeNo, fh: fuser::FileHandle, datasync: bool, reply: fuser::ReplyEmpty);
        fn statfs(&self, req: &fuser::Request, ino: fuser::INodeNo, reply: fuser::ReplyStatfs);
        fn access(&self, req: &fuser::Request, ino: fuser::INodeNo, mask: fuser::AccessFlags, reply: fuser::ReplyEmpty);
        fn create(&self, req: &fuser::Request, parent: fuser::INodeNo, name: &std::ffi::OsStr, mode: u32, umask: u32, flags: i32, reply: fuser::ReplyCreate);
        fn getxattr(&self, req: &fuser::Request, ino: fuser::INodeNo, name: &std::ffi::OsStr, size: u32, reply: fuser::ReplyXattr);
        fn listxattr(&self, req: &fuser::Request, ino: fuser::INodeNo, size: u32, reply: fuser::ReplyXattr);
        fn setxattr(&self, req: &fuser::Request, ino: fuser::INodeNo, name: &std::ffi::OsStr, value: &[u8], flags: i32, position: u32, reply: fuser::ReplyEmpty);
        fn removexattr(&self, req: &fuser::Request, ino: fuser::INodeNo, name: &std::ffi::OsStr, reply: fuser::ReplyEmpty);
        fn fallocate(&self, req: &fuser::Request, ino: fuser::INodeNo, fh: fuser::FileHandle, offset: u64, length: u64, mode: i32, reply: fuser::ReplyEmpty);
        fn lseek(&self, req: &fuser::Request, ino: fuser::INodeNo, fh: fuser::FileHandle, offset: i64, whence: i32, reply: fuser::ReplyLseek);
    }
}
