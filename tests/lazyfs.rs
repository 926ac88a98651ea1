//! The lose-unsynced filesystem (`shakedown lazyfs`) with real programs on a real FUSE mount in a
//! temporary directory: what survives a loss (synced data, namespace operations) and what does
//! not (unsynced writes, truncates), a torn write, pass-through of renames, links, symlinks,
//! directories, `mmap` and `O_DIRECT`; and a real Redis (`appendonly yes`, `appendfsync always`)
//! on the layer, killed with SIGKILL and restarted after a loss, that still has every key it
//! acknowledged — the layer never loses what was synced. And the disk faults the layer injects
//! on command: ENOSPC on writes, EIO on fsync that drops the file's unsynced writes (the retried
//! fsync succeeds on the old data), added fsync latency, and `clear`.
//!
//! Needs root and `/dev/fuse` (each test prints why it did nothing otherwise); the Redis test
//! needs `redis-server` and `redis-cli` and skips without them. Every process a test starts is
//! killed by PID and every mount unmounted, also on failure (drop guards).

use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/cli.rs"]
mod cli;

fn usable() -> bool {
    if !cli::root() {
        eprintln!("not root: lazyfs tests skipped");
        return false;
    }
    if !Path::new("/dev/fuse").exists() {
        eprintln!("no /dev/fuse: lazyfs tests skipped");
        return false;
    }
    true
}

fn mounted(mount: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(mount.to_str().unwrap()))
}

/// A serving layer: its process, paths; unmounts and kills it on drop.
struct Layer {
    child: Child,
    mount: PathBuf,
    backing: PathBuf,
    control: PathBuf,
    _dir: tempfile::TempDir,
}

impl Layer {
    fn start() -> Layer {
        let dir = tempfile::tempdir().unwrap();
        let (mount, backing, control) = (
            dir.path().join("mnt"),
            dir.path().join("backing"),
            dir.path().join("ctl.sock"),
        );
        std::fs::create_dir_all(&mount).unwrap();
        std::fs::create_dir_all(&backing).unwrap();
        let child = cli::command()
            .args(["lazyfs", "serve", "--backing"])
            .arg(&backing)
            .arg("--mount")
            .arg(&mount)
            .arg("--control")
            .arg(&control)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let layer = Layer {
            child,
            mount,
            backing,
            control,
            _dir: dir,
        };
        let t = Instant::now();
        while !(mounted(&layer.mount) && layer.control.exists()) {
            assert!(t.elapsed() < Duration::from_secs(10), "layer did not mount");
            std::thread::sleep(Duration::from_millis(20));
        }
        layer
    }

    fn ctl(&self, cmd: &str) -> serde_json::Value {
        shakedown::lazyfs::command(&self.control, cmd).unwrap()
    }

    fn path(&self, p: &str) -> PathBuf {
        self.mount.join(p)
    }
}

impl Drop for Layer {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
        if mounted(&self.mount) {
            let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
        }
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write(p: &Path, data: &[u8], sync: bool) {
    let mut f = std::fs::File::create(p).unwrap();
    f.write_all(data).unwrap();
    if sync {
        f.sync_all().unwrap();
    }
}

#[test]
fn unsynced_writes_are_lost_and_everything_else_passes_through() {
    if !usable() {
        return;
    }
    let l = Layer::start();
    // Synced, unsynced, synced then appended, synced then truncated.
    write(&l.path("synced"), b"durable", true);
    write(&l.path("unsynced"), b"volatile", false);
    write(&l.path("grown"), b"base", true);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(l.path("grown"))
        .unwrap();
    f.write_all(b"+tail").unwrap();
    drop(f);
    write(&l.path("cut"), b"0123456789", true);
    std::fs::OpenOptions::new()
        .write(true)
        .open(l.path("cut"))
        .unwrap()
        .set_len(3)
        .unwrap();
    // Reads before the loss see the unsynced data, through read and mmap alike.
    assert_eq!(std::fs::read(l.path("unsynced")).unwrap(), b"volatile");
    assert_eq!(std::fs::read(l.path("grown")).unwrap(), b"base+tail");
    {
        let f = std::fs::File::open(l.path("grown")).unwrap();
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        assert_eq!(&map[..], b"base+tail");
    }
    // A write through O_DSYNC is synced; an O_DIRECT write is not.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DSYNC)
        .open(l.path("dsync"))
        .unwrap();
    f.write_all_at(b"dsync", 0).unwrap();
    drop(f);
    let direct = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(l.path("direct"));
    let direct_ok = match direct {
        Ok(f) => {
            let buf = vec![7u8; 4096];
            f.write_all_at(&buf, 0).is_ok()
        }
        Err(e) => {
            eprintln!("O_DIRECT refused by this kernel's FUSE: {e}");
            false
        }
    };
    // Namespace operations: durable at once.
    std::fs::create_dir(l.path("dir")).unwrap();
    write(&l.path("dir/a"), b"in a dir", true);
    std::fs::rename(l.path("dir/a"), l.path("dir/b")).unwrap();
    std::fs::hard_link(l.path("synced"), l.path("synced-link")).unwrap();
    std::os::unix::fs::symlink("synced", l.path("sym")).unwrap();
    std::fs::create_dir(l.path("gone")).unwrap();
    std::fs::remove_dir(l.path("gone")).unwrap();
    std::fs::File::open(l.path("dir"))
        .unwrap()
        .sync_all()
        .unwrap();
    let stats = l.ctl("stats");
    assert!(stats["dirty_files"].as_u64().unwrap() >= 3, "{stats}");

    // Power loss.
    let lost = l.ctl("lose-unsynced");
    assert!(lost["files"].as_u64().unwrap() >= 3, "{lost}");
    assert!(lost["errors"].as_array().unwrap().is_empty(), "{lost}");
    assert_eq!(std::fs::read(l.path("synced")).unwrap(), b"durable");
    assert_eq!(
        std::fs::read(l.path("unsynced")).unwrap(),
        b"",
        "created, never synced"
    );
    assert_eq!(std::fs::read(l.path("grown")).unwrap(), b"base");
    assert_eq!(std::fs::read(l.path("cut")).unwrap(), b"0123456789");
    assert_eq!(std::fs::read(l.path("dsync")).unwrap(), b"dsync");
    if direct_ok {
        assert_eq!(std::fs::read(l.path("direct")).unwrap(), b"");
    }
    assert_eq!(std::fs::read(l.path("dir/b")).unwrap(), b"in a dir");
    assert!(!l.path("dir/a").exists());
    assert_eq!(std::fs::read(l.path("synced-link")).unwrap(), b"durable");
    assert_eq!(
        std::fs::read_link(l.path("sym")).unwrap(),
        PathBuf::from("synced")
    );
    assert_eq!(std::fs::read(l.path("sym")).unwrap(), b"durable");
    assert!(!l.path("gone").exists());
    // The backing directory holds the same (the layer's files are its files).
    assert_eq!(std::fs::read(l.backing.join("grown")).unwrap(), b"base");
    let mut names: Vec<String> = std::fs::read_dir(&l.mount)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "cut",
            "dir",
            "direct",
            "dsync",
            "grown",
            "sym",
            "synced",
            "synced-link",
            "unsynced"
        ]
        .into_iter()
        .filter(|n| direct_ok || *n != "direct")
        .collect::<Vec<_>>()
    );
    assert_eq!(l.ctl("stats")["dirty_files"], 0);

    // A torn write keeps the first half of the last unsynced write; sync-all makes all durable.
    write(&l.path("torn"), b"", true);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(l.path("torn"))
        .unwrap();
    f.write_all(&[b'x'; 2048]).unwrap();
    drop(f);
    let lost = l.ctl("lose-unsynced torn");
    assert_eq!(lost["torn_bytes_kept"], 1024, "{lost}");
    assert_eq!(std::fs::read(l.path("torn")).unwrap().len(), 1024);
    write(&l.path("kept"), b"kept by sync-all", false);
    l.ctl("sync-all");
    l.ctl("lose-unsynced");
    assert_eq!(std::fs::read(l.path("kept")).unwrap(), b"kept by sync-all");
    let mut err = String::new();
    let _ = shakedown::lazyfs::command(&l.control, "frobnicate")
        .map_err(|e| err = e)
        .map(|_| ());
    assert!(err.contains("unknown command"), "{err}");
}

#[test]
fn injected_disk_faults_fail_writes_and_fsyncs_drop_unsynced_data_and_clear() {
    if !usable() {
        return;
    }
    let layer = Layer::start();
    let p = layer.path("wal");
    write(&p, b"old-data", true);

    // A full disk: writes fail with ENOSPC, reads still work.
    let v = layer.ctl(r#"inject {"write_error":"ENOSPC"}"#);
    assert_eq!(v["injected"], "writes ENOSPC", "{v}");
    let e = std::fs::write(layer.path("new"), b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), b"old-data");
    layer.ctl("clear");
    std::fs::write(layer.path("new"), b"x").unwrap();

    // fsync fails with EIO and the unsynced write is dropped; the retry then succeeds on the
    // old data, which is also what a read sees.
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.write_all_at(b"NEW!", 0).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"NEW!data");
    layer.ctl(r#"inject {"fsync_error":"EIO","drop_unsynced_on_fsync_error":true}"#);
    let e = f.sync_all().unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    layer.ctl("clear");
    f.sync_all().unwrap();
    let t = Instant::now();
    while std::fs::read(&p).unwrap() != b"old-data" {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the dropped write is still visible: {:?}",
            std::fs::read(&p).unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        std::fs::read(layer.backing.join("wal")).unwrap(),
        b"old-data"
    );

    // A slow disk: each fsync waits.
    layer.ctl(r#"inject {"fsync_delay_ms":300}"#);
    f.write_all_at(b"slow", 0).unwrap();
    let t = Instant::now();
    f.sync_all().unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    let stats = layer.ctl("stats");
    let c = &stats["disk_fault"]["counters"];
    assert_eq!(
        (
            c["writes_failed"].as_u64(),
            c["fsyncs_failed"].as_u64(),
            c["files_dropped"].as_u64()
        ),
        (Some(1), Some(1), Some(1)),
        "{stats}"
    );
    layer.ctl("clear");
    // A bad fault is refused in words, and nothing changes.
    let e = shakedown::lazyfs::command(&layer.control, r#"inject {"write_error":"EPERM"}"#)
        .unwrap_err();
    assert!(e.contains("EPERM"), "{e}");
    std::fs::write(layer.path("new"), b"y").unwrap();
}

#[test]
fn a_killed_layer_leaves_a_stale_mount_that_umount_clears() {
    if !usable() {
        return;
    }
    let mut l = Layer::start();
    write(&l.path("f"), b"data", false);
    // SIGKILL the layer: the mount stays, stale.
    l.child.kill().unwrap();
    l.child.wait().unwrap();
    let e = std::fs::metadata(l.path("f")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOTCONN), "{e}");
    assert!(mounted(&l.mount));
    let st = Command::new("umount")
        .arg("-l")
        .arg(&l.mount)
        .status()
        .unwrap();
    assert!(st.success());
    assert!(!mounted(&l.mount));
    // What it had written is in the backing directory (a dead layer loses nothing).
    assert_eq!(std::fs::read(l.backing.join("f")).unwrap(), b"data");
}

fn have(prog: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A redis-server on a unix socket (no TCP) with its data on the layer; killed by PID on drop.
struct RedisOn {
    child: Option<Child>,
    sock: PathBuf,
}

impl RedisOn {
    fn start(dir: &Path, sock: &Path, fsync: &str) -> RedisOn {
        let child = Command::new("redis-server")
            .args(["--port", "0", "--unixsocket"])
            .arg(sock)
            .args(["--dir"])
            .arg(dir)
            .args(["--appendonly", "yes", "--appendfsync", fsync, "--save", ""])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let r = RedisOn {
            child: Some(child),
            sock: sock.to_path_buf(),
        };
        let t = Instant::now();
        while r.cli(&["PING"]).trim() != "PONG" {
            assert!(t.elapsed() < Duration::from_secs(20), "redis did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        r
    }

    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .arg("-s")
            .arg(&self.sock)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for RedisOn {
    fn drop(&mut self) {
        self.kill9();
    }
}

#[test]
fn redis_with_appendfsync_always_keeps_every_acknowledged_key_across_a_loss() {
    if !usable() {
        return;
    }
    if !(have("redis-server") && have("redis-cli")) {
        eprintln!("redis-server / redis-cli not installed: Redis-on-lazyfs test skipped");
        return;
    }
    let l = Layer::start();
    let data = l.path("redis");
    std::fs::create_dir(&data).unwrap();
    let sock = l._dir.path().join("redis.sock");
    let mut r = RedisOn::start(&data, &sock, "always");
    let n = 300;
    for i in 0..n {
        assert_eq!(r.cli(&["SADD", "s", &i.to_string()]).trim(), "1");
    }
    r.kill9();
    let lost = l.ctl("lose-unsynced");
    assert!(lost["errors"].as_array().unwrap().is_empty(), "{lost}");
    let r = RedisOn::start(&data, &sock, "always");
    let card = r.cli(&["SCARD", "s"]);
    assert_eq!(card.trim(), n.to_string(), "acknowledged adds lost: {lost}");
    // And the AOF reads back cleanly after a clean restart too.
    drop(r);
    let r = RedisOn::start(&data, &sock, "always");
    assert_eq!(r.cli(&["SCARD", "s"]).trim(), n.to_string());
}
