//! The fuzz targets' shared part: one call per input ([`fuzz_reader`]) and an allocator that
//! aborts on any single allocation larger than [`MAX_ALLOCATION`], so an allocation sized from
//! the input (a capacity read from a length field, a repeat count) is a crash libFuzzer reports
//! and keeps, not a slow run that only `-rss_limit_mb` might catch. Owns nothing the readers do;
//! the harnesses are `shakedown_core::fuzz` (history readers) and `shakedown::fuzz` (run
//! directories).

use std::alloc::{GlobalAlloc, Layout, System};

pub use shakedown_core::fuzz::Reader;

/// The largest single allocation a reader may make for one fuzz input (inputs are at most
/// 16 KiB, `-max_len`): 64 MiB is a thousand times more than any reader needs for that.
pub const MAX_ALLOCATION: usize = 64 << 20;

struct Bounded;

// SAFETY: every call is forwarded to the system allocator unchanged; the only addition is an
// abort before an oversized request.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn check(size: usize) {
    if size > MAX_ALLOCATION {
        // No allocation here: write the message with a fixed buffer, then abort (libFuzzer
        // reports the abort as a crash and saves the input).
        let msg = b"shakedown-fuzz: an allocation over 64 MiB for one input\n";
        // SAFETY: writing a static buffer to stderr.
        unsafe { libc_write(2, msg.as_ptr(), msg.len()) };
        std::process::abort();
    }
}

unsafe extern "C" {
    #[link_name = "write"]
    fn libc_write(fd: i32, buf: *const u8, count: usize) -> isize;
}

#[global_allocator]
static ALLOCATOR: Bounded = Bounded;

/// Read one fuzz input with `reader`; a panic aborts the process (libFuzzer's crash).
pub fn fuzz_reader(reader: Reader, data: &[u8]) {
    if data.len() > shakedown_core::fuzz::MAX_INPUT {
        return;
    }
    let _ = reader.read(data);
    names_report();
}

/// With `SHAKEDOWN_FUZZ_NAMES` set, every 500,000 inputs: how many names (keys, functions,
/// nodes: `shakedown_core::history::Name`) the process has interned and the bytes they take.
/// The table is process-wide and never frees (right for one history, whose names are few), so
/// a fuzzer reading millions of inputs of random names sees it grow: this tells that growth
/// apart from an input's own allocations (docs/guide/fuzzing.md).
fn names_report() {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static ON: OnceLock<bool> = OnceLock::new();
    static INPUTS: AtomicU64 = AtomicU64::new(0);
    if !*ON.get_or_init(|| std::env::var_os("SHAKEDOWN_FUZZ_NAMES").is_some()) {
        return;
    }
    let n = INPUTS.fetch_add(1, Ordering::Relaxed) + 1;
    if n % 500_000 == 0 {
        eprintln!(
            "shakedown-fuzz: {n} inputs, {} names interned, {} MiB for them",
            ustr::num_entries(),
            ustr::total_allocated() >> 20
        );
    }
}

/// Read one fuzz input as a run directory (`shakedown::fuzz::read_run_dir`, in a directory of
/// this process's own under the system's temporary directory, reused input after input).
#[cfg(feature = "rundir")]
pub fn fuzz_run_dir(data: &[u8]) {
    use std::sync::OnceLock;
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    if data.len() > shakedown_core::fuzz::MAX_INPUT {
        return;
    }
    let dir = DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("shakedown-fuzz-rundir-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("a scratch run directory");
        d
    });
    let _ = shakedown::fuzz::read_run_dir(dir, data);
}
