//! The history file's sink: an append-only file written through a shared memory map of its tail.
//!
//! Owns [`HistoryFile`] (what the interpreter's `HistoryWriter` writes to) and
//! [`trim_zero_tail`]. The interpreter must have every invoke in the file before its op starts
//! (a controller killed at any moment must leave no op that ran unrecorded). With a buffered
//! `File` that is one `write` system call per burst of ops, which on the Redis bench cost about
//! 1.4 µs of CPU per op — the largest part of the run loop's overhead over a bare client. Bytes
//! copied into a `MAP_SHARED` mapping are in the page cache the moment they are copied, so they
//! survive the process as a `write` does, without the system call.
//!
//! The file grows in chunks: each chunk is allocated with `fallocate` before it is mapped (a full
//! disk is then an error from `fallocate`, never a SIGBUS from a page fault), the bytes past the
//! last record are zeros, and dropping the sink truncates the file to its records. A controller
//! killed mid-run leaves that zero padding (up to one chunk); the history reader ignores it with
//! a warning, and `shakedown heal` trims it ([`trim_zero_tail`]). The writer holds an exclusive
//! `flock` on the file for its life (the kernel drops it when the process dies), and trimming
//! refuses a file that is still locked: cutting a live mapped file would kill its writer with
//! SIGBUS. Where the file system cannot
//! allocate or map (`fallocate` unsupported), [`HistoryFile`] is a buffered `File` instead.
//! Does not own the record format (`history`) or the run directory layout (`store`).

use memmap2::{MmapMut, MmapOptions};
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// Bytes allocated and mapped at a time.
pub const CHUNK: u64 = 8 << 20;

/// Where the history goes: a mapped file, or a buffered one where mapping is not possible.
pub enum HistoryFile {
    /// Written through a shared mapping (no system call per flush).
    Mapped(MappedAppend),
    /// Written with `write` on every flush.
    Buffered(BufWriter<File>),
}

impl HistoryFile {
    /// The sink for `file` (open for reading and writing): mapped when the file system allows
    /// it, else buffered.
    pub fn new(file: File) -> io::Result<HistoryFile> {
        match MappedAppend::new(file.try_clone()?, CHUNK) {
            Ok(m) => Ok(HistoryFile::Mapped(m)),
            Err(_) => {
                let mut file = file;
                file.seek(SeekFrom::End(0))?;
                Ok(HistoryFile::Buffered(BufWriter::with_capacity(
                    1 << 16,
                    file,
                )))
            }
        }
    }
}

impl Write for HistoryFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            HistoryFile::Mapped(m) => m.write(buf),
            HistoryFile::Buffered(b) => b.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            HistoryFile::Mapped(m) => m.write_all(buf),
            HistoryFile::Buffered(b) => b.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            HistoryFile::Mapped(m) => m.flush(),
            HistoryFile::Buffered(b) => b.flush(),
        }
    }
}

/// An append-only file written through a shared mapping of its current chunk.
pub struct MappedAppend {
    file: File,
    chunk: u64,
    /// Bytes written (records); the file's bytes past this are zeros.
    len: u64,
    /// Bytes allocated (a multiple of `chunk`, or the size the file had).
    cap: u64,
    /// The mapped chunk and where it starts in the file.
    window: Option<(u64, MmapMut)>,
}

impl MappedAppend {
    /// Append to `file` (open for reading and writing) in chunks of `chunk` bytes (a multiple of
    /// the page size). Fails where the file system cannot allocate or map.
    pub fn new(file: File, chunk: u64) -> io::Result<MappedAppend> {
        // Advisory: tells `trim_zero_tail` the file is live. A second writer is not expected (one
        // interpreter per run directory), so a lock held elsewhere is not an error here.
        let _ = lock(&file);
        let len = file.metadata()?.len();
        let mut m = MappedAppend {
            file,
            chunk,
            len,
            cap: len,
            window: None,
        };
        m.map_window()?;
        Ok(m)
    }

    /// Allocate (when needed) and map the chunk holding byte `len`.
    fn map_window(&mut self) -> io::Result<()> {
        let start = self.len / self.chunk * self.chunk;
        let end = start + self.chunk;
        if end > self.cap {
            // SAFETY: fallocate on an owned, open descriptor; mode 0 allocates the range and
            // extends the file, reading as zeros.
            let r = unsafe {
                libc::fallocate(
                    self.file.as_raw_fd(),
                    0,
                    self.cap as libc::off_t,
                    (end - self.cap) as libc::off_t,
                )
            };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
            self.cap = end;
        }
        self.window = None;
        // SAFETY: the mapping covers allocated bytes of a file only this sink writes; readers of
        // the file see it as they would see `write`s.
        let map = unsafe {
            MmapOptions::new()
                .offset(start)
                .len(self.chunk as usize)
                .map_mut(&self.file)?
        };
        self.window = Some((start, map));
        Ok(())
    }
}

impl Write for MappedAppend {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let full = self
            .window
            .as_ref()
            .is_none_or(|(start, _)| self.len >= start + self.chunk);
        if full {
            self.map_window()?;
        }
        let (start, map) = self.window.as_mut().expect("mapped above");
        let at = (self.len - *start) as usize;
        let n = buf.len().min(map.len() - at);
        map[at..at + n].copy_from_slice(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    /// Nothing to do: copied bytes are already in the page cache.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for MappedAppend {
    fn drop(&mut self) {
        self.window = None;
        let _ = self.file.set_len(self.len);
    }
}

/// Take the exclusive advisory lock of `file` without waiting.
fn lock(file: &File) -> io::Result<()> {
    // SAFETY: flock on an owned, open descriptor.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Remove the zero bytes a killed mapped writer left after the last record of `path` (at most
/// [`CHUNK`] of them). Returns how many were removed. Refuses, changing nothing, while a live
/// writer holds the file.
pub fn trim_zero_tail(path: &Path) -> io::Result<u64> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    lock(&file).map_err(|_| {
        io::Error::other("a running controller is still writing it; nothing was trimmed")
    })?;
    let size = file.metadata()?.len();
    let from = size.saturating_sub(CHUNK);
    file.seek(SeekFrom::Start(from))?;
    let mut tail = Vec::with_capacity((size - from) as usize);
    file.read_to_end(&mut tail)?;
    let kept = tail.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let zeros = (tail.len() - kept) as u64;
    if zeros > 0 {
        file.set_len(size - zeros)?;
    }
    Ok(zeros)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .unwrap()
    }

    fn records(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| format!("{{\"index\":{i},\"f\":\"{}\"}}\n", "x".repeat(i % 37)).into_bytes())
            .collect()
    }

    #[test]
    fn records_across_chunk_boundaries_read_back_exactly_and_the_file_ends_at_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        std::fs::write(&path, b"existing line\n").unwrap();
        let recs = records(2000);
        {
            let mut w = MappedAppend::new(open(&path), 4096).unwrap();
            for r in &recs {
                w.write_all(r).unwrap();
                w.flush().unwrap();
            }
        }
        let mut want = b"existing line\n".to_vec();
        recs.iter().for_each(|r| want.extend_from_slice(r));
        assert!(want.len() > 5 * 4096, "spans several chunks");
        assert_eq!(std::fs::read(&path).unwrap(), want);
    }

    #[test]
    fn a_writer_that_never_ran_its_drop_leaves_zeros_that_trim_removes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let recs = records(100);
        let mut w = MappedAppend::new(open(&path), 4096).unwrap();
        for r in &recs {
            w.write_all(r).unwrap();
        }
        // As a killed process: no drop, no truncation. The bytes are in the file already.
        // While the writer lives, trimming is refused and changes nothing.
        let live = std::fs::read(&path).unwrap();
        assert!(trim_zero_tail(&path).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), live);
        // A dead process loses its mapping and descriptor (and so its lock): unmap, leak the
        // rest without running `drop`, and close the descriptor it held.
        w.window = None;
        let fd = w.file.as_raw_fd();
        std::mem::forget(w);
        // SAFETY: closes the descriptor the forgotten writer leaked.
        unsafe { libc::close(fd) };
        let want: Vec<u8> = recs.concat();
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(on_disk.len() % 4096, 0);
        assert_eq!(&on_disk[..want.len()], &want[..]);
        assert!(on_disk[want.len()..].iter().all(|&b| b == 0));
        assert_eq!(
            trim_zero_tail(&path).unwrap(),
            (on_disk.len() - want.len()) as u64
        );
        assert_eq!(std::fs::read(&path).unwrap(), want);
        assert_eq!(
            trim_zero_tail(&path).unwrap(),
            0,
            "trimming twice is harmless"
        );
    }

    #[test]
    fn the_history_file_is_mapped_where_the_file_system_allows_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let mut h = HistoryFile::new(open(&path)).unwrap();
        assert!(matches!(h, HistoryFile::Mapped(_)));
        h.write_all(b"{}\n").unwrap();
        drop(h);
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
    }
}
