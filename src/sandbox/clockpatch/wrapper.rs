//! The machine code a patched process runs instead of its vDSO's clock functions, as one
//! position-independent blob assembled into this binary (x86_64 only) and copied into each
//! patched process by `sd-clockexec` (see the parent module).
//!
//! Owns: the blob's layout (a header the patcher fills in, then three wrappers) and the
//! wrappers' semantics: `clock_gettime` on CLOCK_REALTIME, _COARSE, _ALARM and CLOCK_TAI returns
//! the original vDSO result plus the node's offset (an int64 of ns read from the node's mapped
//! offset file at every call, so a step is seen at once); every other clock goes straight to
//! the original; `gettimeofday` is the original plus the offset (rounded down to µs); `time`
//! is CLOCK_REALTIME_COARSE's seconds through the `clock_gettime` wrapper. No offset page
//! (`offset` slot 0) = real time: a patched process never faults because of the patch.
//!
//! Does not own: where the original functions are (the patcher fills the `orig_*` slots with
//! the trampolines the plan builds), nor finding, decoding or patching the vDSO.

/// Magic at the start of a patch page; the clock shim looks for it behind a patched vDSO entry
/// so a dynamically linked program that was also patched does not add the offset twice.
pub const MAGIC: &[u8; 8] = b"SDCLKPT1";

/// Offset in the blob of the slot holding the address of the node's mapped offset (0: none).
pub const OFFSET_SLOT: usize = 0x08;
/// Offset of the slot holding the address of the original `clock_gettime` (its trampoline).
pub const ORIG_CLOCK_GETTIME_SLOT: usize = 0x10;
/// Offset of the slot holding the address of the original `gettimeofday` (its trampoline).
pub const ORIG_GETTIMEOFDAY_SLOT: usize = 0x18;
/// Offset of the table of the wrappers' entry offsets (three little-endian u32).
const ENTRY_TABLE: usize = 0x20;

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".pushsection .text.shakedown_clockpatch,\"ax\",@progbits",
    ".balign 16",
    ".globl shakedown_clockpatch_start",
    "shakedown_clockpatch_start:",
    // 0x00 magic, 0x08 offset pointer, 0x10 original clock_gettime, 0x18 original gettimeofday
    ".ascii \"SDCLKPT1\"",
    "sdcp_offset_ptr: .quad 0",
    "sdcp_orig_cgt: .quad 0",
    "sdcp_orig_gtod: .quad 0",
    // 0x20 entry table: clock_gettime, gettimeofday, time; then padding
    ".long sdcp_cgt - shakedown_clockpatch_start",
    ".long sdcp_gtod - shakedown_clockpatch_start",
    ".long sdcp_time - shakedown_clockpatch_start",
    ".long 0",
    // int clock_gettime(clockid_t clk (edi), struct timespec *ts (rsi))
    "sdcp_cgt:",
    "cmp edi, 0",
    "je sdcp_cgt_wall",
    "cmp edi, 5",
    "je sdcp_cgt_wall",
    "cmp edi, 8",
    "je sdcp_cgt_wall",
    "cmp edi, 11",
    "je sdcp_cgt_wall",
    "jmp qword ptr [rip + sdcp_orig_cgt]",
    "sdcp_cgt_wall:",
    "push rsi",
    "call qword ptr [rip + sdcp_orig_cgt]",
    "pop rsi",
    "test eax, eax",
    "jnz sdcp_cgt_ret",
    "mov rcx, qword ptr [rip + sdcp_offset_ptr]",
    "test rcx, rcx",
    "jz sdcp_cgt_ret",
    "mov rcx, qword ptr [rcx]",
    "test rcx, rcx",
    "jz sdcp_cgt_ret",
    "mov rax, qword ptr [rsi + 8]",
    "add rax, rcx",
    "cqo",
    "mov r8, 1000000000",
    "idiv r8",
    "test rdx, rdx",
    "jns sdcp_cgt_pos",
    "add rdx, r8",
    "dec rax",
    "sdcp_cgt_pos:",
    "add qword ptr [rsi], rax",
    "mov qword ptr [rsi + 8], rdx",
    "xor eax, eax",
    "sdcp_cgt_ret:",
    "ret",
    // int gettimeofday(struct timeval *tv (rdi), struct timezone *tz (rsi))
    "sdcp_gtod:",
    "push rdi",
    "call qword ptr [rip + sdcp_orig_gtod]",
    "pop rdi",
    "test eax, eax",
    "jnz sdcp_gtod_ret",
    "test rdi, rdi",
    "jz sdcp_gtod_ret",
    "mov rcx, qword ptr [rip + sdcp_offset_ptr]",
    "test rcx, rcx",
    "jz sdcp_gtod_ret",
    "mov rcx, qword ptr [rcx]",
    "test rcx, rcx",
    "jz sdcp_gtod_ret",
    "mov rax, qword ptr [rdi + 8]",
    "imul rax, rax, 1000",
    "add rax, rcx",
    "cqo",
    "mov r8, 1000000000",
    "idiv r8",
    "test rdx, rdx",
    "jns sdcp_gtod_pos",
    "add rdx, r8",
    "dec rax",
    "sdcp_gtod_pos:",
    "add qword ptr [rdi], rax",
    "mov rax, rdx",
    "xor edx, edx",
    "mov r8, 1000",
    "div r8",
    "mov qword ptr [rdi + 8], rax",
    "xor eax, eax",
    "sdcp_gtod_ret:",
    "ret",
    // time_t time(time_t *t (rdi))
    "sdcp_time:",
    "push rdi",
    "sub rsp, 16",
    "mov edi, 5",
    "mov rsi, rsp",
    "call sdcp_cgt",
    "mov rax, qword ptr [rsp]",
    "add rsp, 16",
    "pop rdi",
    "test rdi, rdi",
    "jz sdcp_time_ret",
    "mov qword ptr [rdi], rax",
    "sdcp_time_ret:",
    "ret",
    ".balign 16",
    ".globl shakedown_clockpatch_end",
    "shakedown_clockpatch_end:",
    ".popsection",
);

/// The assembled blob: header and wrappers, as they are copied into a patched process.
#[cfg(target_arch = "x86_64")]
pub fn blob() -> &'static [u8] {
    unsafe extern "C" {
        static shakedown_clockpatch_start: u8;
        static shakedown_clockpatch_end: u8;
    }
    // SAFETY: both symbols are labels in the one section `global_asm!` above emits, start
    // before end, and the bytes between them are this binary's read-only code, mapped for the
    // life of the process.
    unsafe {
        let start = std::ptr::addr_of!(shakedown_clockpatch_start);
        let end = std::ptr::addr_of!(shakedown_clockpatch_end);
        std::slice::from_raw_parts(start, end.offset_from(start) as usize)
    }
}

/// The wrappers' entry offsets in the blob: `clock_gettime`, `gettimeofday`, `time`.
#[cfg(target_arch = "x86_64")]
pub fn entries() -> [usize; 3] {
    let b = blob();
    let at = |i: usize| {
        let o = ENTRY_TABLE + 4 * i;
        u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]) as usize
    };
    [at(0), at(1), at(2)]
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn the_blob_starts_with_the_magic_and_its_entries_lie_inside_it() {
        let b = blob();
        assert_eq!(&b[..8], MAGIC);
        for e in entries() {
            assert!(
                e >= ENTRY_TABLE + 16 && e < b.len(),
                "entry {e:#x} of {}",
                b.len()
            );
        }
        assert!(b.len() < 1024, "the blob is {} bytes", b.len());
    }

    /// Every RIP-relative operand and near branch of the blob stays inside it, so the copy in
    /// another process works wherever it lands.
    #[test]
    fn the_blob_is_position_independent() {
        use iced_x86::{Decoder, DecoderOptions, OpKind};
        let b = blob();
        let code = &b[ENTRY_TABLE + 16..];
        let base = (ENTRY_TABLE + 16) as u64;
        let mut decoder = Decoder::with_ip(64, code, base, DecoderOptions::NONE);
        let mut count = 0;
        while decoder.can_decode() {
            let i = decoder.decode();
            assert!(!i.is_invalid(), "invalid instruction at {:#x}", i.ip());
            if i.is_ip_rel_memory_operand() {
                let t = i.ip_rel_memory_address();
                assert!(
                    t < b.len() as u64,
                    "{:?} at {:#x} reads {t:#x}",
                    i.code(),
                    i.ip()
                );
            }
            if i.op0_kind() == OpKind::NearBranch64 {
                let t = i.near_branch64();
                assert!(
                    t < b.len() as u64,
                    "{:?} at {:#x} goes to {t:#x}",
                    i.code(),
                    i.ip()
                );
            }
            count += 1;
        }
        assert!(count > 40, "decoded {count} instructions");
    }
}
