//! The clock patch: how a sandbox node's wall clock reaches programs that read time without
//! libc — Go programs (etcd, nats-server) and static binaries — by patching their vDSO.
//!
//! The nodes share the host kernel, hence one vDSO image, identical in every process (only its
//! address differs). So the work that needs a real library is done once, here, at `up`: read
//! this process's vDSO, find its `clock_gettime`, `gettimeofday` and `time` (object's ELF
//! reader), decode their first instructions (iced-x86) and write a **plan**
//! (`<state_dir>/clockpatch.plan`, [`Plan::to_text`]): a page image holding the wrappers
//! (`wrapper`) and, for `clock_gettime` and `gettimeofday`, a trampoline — their displaced
//! first instructions, RIP-relative operands re-aimed, then a jump back — plus the fix-ups that
//! depend on where the page and the vDSO land in a process. The small C program
//! `sd-clockexec` (`clockexec.c`, compiled at `up` like the clock shim) applies the plan to a
//! program it starts: it execs the program under ptrace, stops it at the exec (before its
//! first instruction), maps the page near the vDSO and the node's offset file shared
//! read-only, fills and writes the page, replaces the three entries with jumps into it and
//! detaches. The preload shim routes every exec of a static or Go executable through
//! `sd-clockexec` (`clockshim.c`); dynamically linked libc programs keep the shim alone.
//!
//! Owns: building and checking the plan, its text form, and [`probe`] (does the whole patch work
//! on this machine: a static test program started through `sd-clockexec` with a +1000 s offset
//! must read it through libc, its vDSO directly, `gettimeofday` and `time`, and an unchanged
//! monotonic clock). Does not own: compiling the C programs or the sshd settings (`node`), the
//! patching itself (`clockexec.c`).

pub mod wrapper;

use std::fmt::Write as _;
use std::path::Path;

/// Environment variable (set by every node's sshd) naming `sd-clockexec`; the shim routes the
/// exec of a static or Go executable through it. Absent: the shim execs unchanged.
pub const CLOCK_EXEC_ENV: &str = "SHAKEDOWN_CLOCK_EXEC";

/// First line of a plan file (its format version).
pub const PLAN_HEADER: &str = "shakedown-clockpatch 1";

/// The vDSO functions a plan patches, by their exported names.
const CLOCK_GETTIME: &str = "__vdso_clock_gettime";
const GETTIMEOFDAY: &str = "__vdso_gettimeofday";
const TIME: &str = "__vdso_time";

/// Bytes a `jmp rel32` takes; every patched entry is replaced by one.
const JMP_LEN: usize = 5;

/// Why this machine's processes cannot get their node's clock through a vDSO patch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unpatchable {
    /// Not x86_64.
    #[error(
        "the clock patch supports x86_64 only (this machine is {0}): Go and static programs on sandbox nodes would read the host's clock"
    )]
    Architecture(&'static str),
    /// No vDSO, or one this code cannot read.
    #[error("cannot read this machine's vDSO: {0}")]
    Vdso(String),
    /// A function's first instructions cannot be moved into a trampoline.
    #[error("the vDSO's {function} cannot be patched: {why}")]
    Function {
        /// The vDSO function.
        function: &'static str,
        /// What stands in the way, in words.
        why: String,
    },
    /// The test program started through `sd-clockexec` did not see its offset.
    #[error("the clock patch did not take effect on a test program: {0}")]
    Probe(String),
}

/// A 32-bit displacement in the page that must reach a vDSO address:
/// `disp = vdso + vdso_target - (page + next_ip)`, written at `page + at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToVdso {
    /// Offset of the displacement in the page.
    pub at: usize,
    /// Offset in the page of the instruction after it (what RIP holds).
    pub next_ip: usize,
    /// The vDSO offset it must reach, two's complement: the kernel's data pages (vvar) lie
    /// before the vDSO, so a read of them has a negative offset.
    pub vdso_target: u64,
}

/// A vDSO entry replaced by `jmp rel32` to `page + page_target`, padded with `int3` to `len`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jump {
    /// The entry's vDSO offset.
    pub vdso_at: u64,
    /// Bytes replaced (the displaced instructions' length, at least 5).
    pub len: usize,
    /// The wrapper's offset in the page.
    pub page_target: usize,
}

/// Everything `sd-clockexec` needs to patch a process of this kernel (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The vDSO image's length and FNV-1a 64 hash: a process whose vDSO differs is not patched.
    pub vdso_len: usize,
    /// FNV-1a 64 of the vDSO image.
    pub vdso_hash: u64,
    /// vDSO offset of a `syscall` instruction the patcher runs the process's syscalls through.
    pub syscall_at: u64,
    /// The page image: wrapper blob, then trampolines.
    pub image: Vec<u8>,
    /// Offset of the slot that receives the address of the mapped offset file.
    pub offset_slot: usize,
    /// 64-bit slots that receive `page + target`: (slot offset, target offset).
    pub abs64: Vec<(usize, usize)>,
    /// Displacements that must reach the vDSO.
    pub to_vdso: Vec<ToVdso>,
    /// The entries replaced by jumps into the page.
    pub jumps: Vec<Jump>,
}

/// FNV-1a, 64 bits (the same function is in `clockexec.c`).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Plan {
    /// The plan's text form, read by `clockexec.c` (one record a line, numbers in hex).
    pub fn to_text(&self) -> String {
        let mut t = format!("{PLAN_HEADER}\n");
        let _ = writeln!(t, "vdso {:x} {:016x}", self.vdso_len, self.vdso_hash);
        let _ = writeln!(t, "syscall {:x}", self.syscall_at);
        t.push_str("image ");
        for b in &self.image {
            let _ = write!(t, "{b:02x}");
        }
        t.push('\n');
        let _ = writeln!(t, "offset-slot {:x}", self.offset_slot);
        for (at, target) in &self.abs64 {
            let _ = writeln!(t, "abs64 {at:x} {target:x}");
        }
        for r in &self.to_vdso {
            let _ = writeln!(t, "to-vdso {:x} {:x} {:x}", r.at, r.next_ip, r.vdso_target);
        }
        for j in &self.jumps {
            let _ = writeln!(t, "jump {:x} {:x} {:x}", j.vdso_at, j.len, j.page_target);
        }
        t.push_str("end\n");
        t
    }
}

/// This process's vDSO image (the same in every process on this kernel).
pub fn own_vdso() -> Result<Vec<u8>, Unpatchable> {
    use std::os::unix::fs::FileExt;
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| Unpatchable::Vdso(format!("read /proc/self/maps: {e}")))?;
    let line = maps
        .lines()
        .find(|l| l.ends_with("[vdso]"))
        .ok_or_else(|| Unpatchable::Vdso("no [vdso] mapping in /proc/self/maps".into()))?;
    let range = line.split_whitespace().next().unwrap_or("");
    let (start, end) = range
        .split_once('-')
        .and_then(|(a, b)| {
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .ok_or_else(|| Unpatchable::Vdso(format!("unreadable maps line {line:?}")))?;
    let mut image = vec![0u8; (end - start) as usize];
    std::fs::File::open("/proc/self/mem")
        .and_then(|f| f.read_exact_at(&mut image, start))
        .map_err(|e| Unpatchable::Vdso(format!("read the vDSO from /proc/self/mem: {e}")))?;
    Ok(image)
}

/// The plan for this machine's vDSO.
pub fn plan_for_this_machine() -> Result<Plan, Unpatchable> {
    if !cfg!(target_arch = "x86_64") {
        return Err(Unpatchable::Architecture(std::env::consts::ARCH));
    }
    build_plan(&own_vdso()?)
}

/// The plan for a vDSO image (x86_64).
#[cfg(target_arch = "x86_64")]
pub fn build_plan(vdso: &[u8]) -> Result<Plan, Unpatchable> {
    let text = read_vdso(vdso)?;
    let syscall_at = text
        .instructions
        .iter()
        .find(|i| i.mnemonic() == iced_x86::Mnemonic::Syscall)
        .map(|i| i.ip())
        .ok_or_else(|| Unpatchable::Vdso("no `syscall` instruction in the vDSO's code".into()))?;
    let blob = wrapper::blob();
    let [cgt_entry, gtod_entry, time_entry] = wrapper::entries();
    let mut plan = Plan {
        vdso_len: vdso.len(),
        vdso_hash: fnv1a64(vdso),
        syscall_at,
        image: blob.to_vec(),
        offset_slot: wrapper::OFFSET_SLOT,
        abs64: Vec::new(),
        to_vdso: Vec::new(),
        jumps: Vec::new(),
    };
    let cgt = text
        .function(CLOCK_GETTIME)
        .ok_or_else(|| Unpatchable::Vdso(format!("the vDSO exports no {CLOCK_GETTIME}")))?;
    let mut patched: Vec<(u64, usize)> = Vec::new();
    let len = plan.trampoline(&text, CLOCK_GETTIME, cgt, wrapper::ORIG_CLOCK_GETTIME_SLOT)?;
    plan.jumps.push(Jump {
        vdso_at: cgt.0,
        len,
        page_target: cgt_entry,
    });
    patched.push((cgt.0, len));
    if let Some(gtod) = text.function(GETTIMEOFDAY) {
        let len = plan.trampoline(&text, GETTIMEOFDAY, gtod, wrapper::ORIG_GETTIMEOFDAY_SLOT)?;
        plan.jumps.push(Jump {
            vdso_at: gtod.0,
            len,
            page_target: gtod_entry,
        });
        patched.push((gtod.0, len));
    }
    if let Some(time) = text.function(TIME) {
        // `time` is rebuilt on the clock_gettime wrapper: nothing of it runs again.
        let len = text.boundary_at_least(TIME, time, JMP_LEN)?.0;
        plan.jumps.push(Jump {
            vdso_at: time.0,
            len,
            page_target: time_entry,
        });
        patched.push((time.0, len));
    }
    text.check_no_branch_into(&patched)?;
    if plan.image.len() > 4096 {
        return Err(Unpatchable::Vdso(format!(
            "the patch page would need {} bytes",
            plan.image.len()
        )));
    }
    Ok(plan)
}

/// Not x86_64: no plan.
#[cfg(not(target_arch = "x86_64"))]
pub fn build_plan(_vdso: &[u8]) -> Result<Plan, Unpatchable> {
    Err(Unpatchable::Architecture(std::env::consts::ARCH))
}

/// The vDSO's exported functions and its whole code, decoded.
#[cfg(target_arch = "x86_64")]
struct VdsoText<'a> {
    image: &'a [u8],
    /// (name, offset, size) of each exported function.
    functions: Vec<(String, u64, u64)>,
    /// The executable sections' instructions, in order, `ip` = vDSO offset.
    instructions: Vec<iced_x86::Instruction>,
}

#[cfg(target_arch = "x86_64")]
fn read_vdso(image: &[u8]) -> Result<VdsoText<'_>, Unpatchable> {
    use object::{Object, ObjectSection, ObjectSymbol, SectionKind};
    let file = object::File::parse(image)
        .map_err(|e| Unpatchable::Vdso(format!("not an ELF image: {e}")))?;
    if file.architecture() != object::Architecture::X86_64 {
        return Err(Unpatchable::Vdso(format!(
            "its architecture is {:?}",
            file.architecture()
        )));
    }
    let functions: Vec<(String, u64, u64)> = file
        .dynamic_symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.is_definition())
        .filter_map(|s| Some((s.name().ok()?.to_string(), s.address(), s.size())))
        .collect();
    let mut instructions = Vec::new();
    for section in file.sections().filter(|s| s.kind() == SectionKind::Text) {
        let (offset, size) = section
            .file_range()
            .ok_or_else(|| Unpatchable::Vdso("a code section has no bytes".into()))?;
        let bytes = image
            .get(offset as usize..(offset + size) as usize)
            .ok_or_else(|| Unpatchable::Vdso("a code section lies outside the image".into()))?;
        let mut decoder = iced_x86::Decoder::with_ip(
            64,
            bytes,
            section.address(),
            iced_x86::DecoderOptions::NONE,
        );
        while decoder.can_decode() {
            instructions.push(decoder.decode());
        }
    }
    Ok(VdsoText {
        image,
        functions,
        instructions,
    })
}

#[cfg(target_arch = "x86_64")]
impl VdsoText<'_> {
    /// (offset, size) of an exported function.
    fn function(&self, name: &str) -> Option<(u64, u64)> {
        self.functions
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|&(_, at, size)| (at, size))
    }

    /// The instructions of `function` from its entry until they cover at least `min` bytes:
    /// (their length, the instructions).
    fn boundary_at_least(
        &self,
        name: &'static str,
        (entry, size): (u64, u64),
        min: usize,
    ) -> Result<(usize, Vec<iced_x86::Instruction>), Unpatchable> {
        let first = self
            .instructions
            .iter()
            .position(|i| i.ip() == entry)
            .ok_or_else(|| Unpatchable::Function {
                function: name,
                why: format!("its entry {entry:#x} is not an instruction boundary"),
            })?;
        let mut taken = Vec::new();
        let mut len = 0usize;
        for i in &self.instructions[first..] {
            if len >= min {
                break;
            }
            if i.is_invalid() {
                return Err(Unpatchable::Function {
                    function: name,
                    why: format!("undecodable bytes at {:#x}", i.ip()),
                });
            }
            len += i.len();
            taken.push(*i);
        }
        if len < min || len as u64 > size.max(min as u64) {
            return Err(Unpatchable::Function {
                function: name,
                why: format!("it is shorter than the {min} bytes a jump needs"),
            });
        }
        Ok((len, taken))
    }

    /// No instruction anywhere in the vDSO branches into the inside of a replaced entry
    /// (`(entry, entry + len)`): those bytes no longer hold instructions.
    fn check_no_branch_into(&self, patched: &[(u64, usize)]) -> Result<(), Unpatchable> {
        for i in &self.instructions {
            if i.op0_kind() != iced_x86::OpKind::NearBranch64 {
                continue;
            }
            let target = i.near_branch64();
            for &(entry, len) in patched {
                if target > entry && target < entry + len as u64 {
                    let function = self
                        .functions
                        .iter()
                        .find(|(_, at, _)| *at == entry)
                        .map_or("a patched function", |(n, _, _)| leak_name(n));
                    return Err(Unpatchable::Function {
                        function,
                        why: format!(
                            "the instruction at {:#x} branches into its first {len} bytes",
                            i.ip()
                        ),
                    });
                }
            }
        }
        let _ = self.image;
        Ok(())
    }
}

/// A patched function's name for an error (one of the three constants).
#[cfg(target_arch = "x86_64")]
fn leak_name(n: &str) -> &'static str {
    [CLOCK_GETTIME, GETTIMEOFDAY, TIME]
        .into_iter()
        .find(|c| *c == n)
        .unwrap_or("a patched function")
}

#[cfg(target_arch = "x86_64")]
impl Plan {
    /// Appends `function`'s trampoline to the image (its first instructions, RIP-relative
    /// operands re-aimed at the vDSO, then `jmp` back), points `slot` at it and returns how
    /// many bytes of the entry it displaces.
    fn trampoline(
        &mut self,
        text: &VdsoText,
        name: &'static str,
        function: (u64, u64),
        slot: usize,
    ) -> Result<usize, Unpatchable> {
        use iced_x86::{Mnemonic, OpKind};
        let (len, displaced) = text.boundary_at_least(name, function, JMP_LEN)?;
        while !self.image.len().is_multiple_of(16) {
            self.image.push(0xcc);
        }
        let start = self.image.len();
        self.abs64.push((slot, start));
        let mut decoder_offsets =
            iced_x86::Decoder::with_ip(64, &text.image[function.0 as usize..], function.0, 0);
        for i in &displaced {
            let again = decoder_offsets.decode();
            debug_assert_eq!(again.ip(), i.ip());
            // Only a relative branch depends on where it sits (RIP-relative operands are
            // re-aimed below); a `syscall` is where the patcher runs the process's syscalls.
            let relative_branch = (0..i.op_count()).any(|k| {
                matches!(
                    i.op_kind(k),
                    OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
                )
            });
            if relative_branch || i.mnemonic() == Mnemonic::Syscall {
                return Err(Unpatchable::Function {
                    function: name,
                    why: format!(
                        "its first {len} bytes hold a {:?} at {:#x}, which cannot be moved",
                        i.mnemonic(),
                        i.ip()
                    ),
                });
            }
            let here = self.image.len();
            let from = i.ip() as usize;
            self.image
                .extend_from_slice(&text.image[from..from + i.len()]);
            if i.is_ip_rel_memory_operand() {
                let offsets = decoder_offsets.get_constant_offsets(&again);
                if offsets.displacement_size() != 4 {
                    return Err(Unpatchable::Function {
                        function: name,
                        why: format!("the RIP-relative operand at {:#x} is not 32 bits", i.ip()),
                    });
                }
                self.to_vdso.push(ToVdso {
                    at: here + offsets.displacement_offset(),
                    next_ip: here + i.len(),
                    vdso_target: i.ip_rel_memory_address(),
                });
            }
        }
        let jmp = self.image.len();
        self.image.extend_from_slice(&[0xe9, 0, 0, 0, 0]);
        self.to_vdso.push(ToVdso {
            at: jmp + 1,
            next_ip: jmp + JMP_LEN,
            vdso_target: function.0 + len as u64,
        });
        Ok(len)
    }
}

/// Checks that the patch works on this machine: `clockexec` starts the static `probe_program`
/// with a +1000 s offset file (`scratch` is a directory for it), and the probe must read the
/// offset through libc, its vDSO called directly (as Go does), the coarse and TAI clocks,
/// `gettimeofday` and `time`, in a thread it starts and in a child it forks, with its
/// monotonic clock unchanged.
pub fn probe(clockexec: &Path, probe_program: &Path, scratch: &Path) -> Result<(), Unpatchable> {
    const OFFSET_S: i64 = 1000;
    let offset_file = scratch.join("clock_offset.probe");
    std::fs::write(&offset_file, (OFFSET_S * 1_000_000_000).to_le_bytes())
        .map_err(|e| Unpatchable::Probe(format!("write {}: {e}", offset_file.display())))?;
    let before = [
        now_s(libc::CLOCK_REALTIME),
        now_s(libc::CLOCK_TAI),
        now_s(libc::CLOCK_MONOTONIC),
    ];
    let out = std::process::Command::new(clockexec)
        .arg(probe_program)
        .arg("sd-clockprobe")
        .env(crate::sandbox::CLOCK_FILE_ENV, &offset_file)
        .env_remove("LD_PRELOAD")
        .output();
    let after = [
        now_s(libc::CLOCK_REALTIME),
        now_s(libc::CLOCK_TAI),
        now_s(libc::CLOCK_MONOTONIC),
    ];
    let _ = std::fs::remove_file(&offset_file);
    let out = out.map_err(|e| Unpatchable::Probe(format!("run {}: {e}", clockexec.display())))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(Unpatchable::Probe(format!(
            "{} exited with {}: {}",
            clockexec.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let readings = parse_probe(&stdout).map_err(Unpatchable::Probe)?;
    for (name, seen) in &readings {
        // Which host clock the reading follows, and the offset it must show.
        let (clock, slack) = match name.as_str() {
            "monotonic" => (2, 0.0),
            "tai" => (1, OFFSET_S as f64),
            _ => (0, OFFSET_S as f64),
        };
        let (lo, hi) = (before[clock], after[clock]);
        // `time` and the coarse clock may trail by a tick; a second covers both.
        if *seen < lo + slack - 1.0 || *seen > hi + slack + 1.0 {
            return Err(Unpatchable::Probe(format!(
                "{name} read {seen:.3}, expected {:.3}..{:.3}",
                lo + slack,
                hi + slack
            )));
        }
    }
    Ok(())
}

/// The probe's lines `NAME SECONDS` (see `clockprobe.c`); every expected name present.
pub fn parse_probe(stdout: &str) -> Result<Vec<(String, f64)>, String> {
    let mut readings = Vec::new();
    for line in stdout.lines() {
        let mut words = line.split_whitespace();
        if let (Some(name), Some(value)) = (words.next(), words.next()) {
            let value: f64 = value
                .parse()
                .map_err(|_| format!("the probe printed {line:?}"))?;
            readings.push((name.to_string(), value));
        }
    }
    for wanted in [
        "libc-realtime",
        "vdso-realtime",
        "realtime-coarse",
        "gettimeofday",
        "time",
        "tai",
        "thread",
        "fork-child",
        "monotonic",
    ] {
        if !readings.iter().any(|(n, _)| n == wanted) {
            return Err(format!("the probe printed no {wanted} reading: {stdout:?}"));
        }
    }
    Ok(readings)
}

fn now_s(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn this_machines_vdso_gets_a_plan_that_patches_all_three_functions() {
        let vdso = own_vdso().unwrap();
        let plan = build_plan(&vdso).unwrap();
        assert_eq!(plan.vdso_len, vdso.len());
        assert_eq!(plan.jumps.len(), 3, "{plan:?}");
        assert!(plan.jumps.iter().all(|j| j.len >= JMP_LEN));
        // Both trampolines are reachable from their slots and end with a jump back.
        assert_eq!(plan.abs64.len(), 2);
        for (slot, target) in &plan.abs64 {
            assert!(*slot < 0x20 && *target < plan.image.len());
        }
        let back: Vec<&ToVdso> = plan
            .to_vdso
            .iter()
            .filter(|r| plan.image[r.at - 1] == 0xe9)
            .collect();
        assert_eq!(back.len(), 2, "{plan:?}");
        for r in &plan.to_vdso {
            assert!(r.next_ip > r.at && r.next_ip <= plan.image.len());
            // The vvar pages lie before the vDSO: targets there are negative (two's complement).
            let target = r.vdso_target as i64;
            assert!(
                target > -0x10000 && target < plan.vdso_len as i64,
                "{target:#x}"
            );
        }
        assert_eq!(&vdso[plan.syscall_at as usize..][..2], &[0x0f, 0x05]);
    }

    #[test]
    fn the_text_form_has_one_record_a_line() {
        let plan = build_plan(&own_vdso().unwrap()).unwrap();
        let text = plan.to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], PLAN_HEADER);
        assert_eq!(*lines.last().unwrap(), "end");
        assert_eq!(lines.iter().filter(|l| l.starts_with("jump ")).count(), 3);
        let image = lines.iter().find(|l| l.starts_with("image ")).unwrap();
        assert_eq!(image.len(), "image ".len() + 2 * plan.image.len());
    }

    /// A vDSO whose clock_gettime starts with a relative branch cannot be patched, and says so.
    #[test]
    fn an_entry_that_starts_with_a_branch_is_refused_by_name() {
        let mut vdso = own_vdso().unwrap();
        let text = read_vdso(&vdso).unwrap();
        let (entry, _) = text.function(CLOCK_GETTIME).unwrap();
        // jmp rel32 to itself + 5: a branch where the displaced bytes are.
        vdso[entry as usize..entry as usize + 5].copy_from_slice(&[0xe9, 0, 0, 0, 0]);
        let err = build_plan(&vdso).unwrap_err();
        assert!(
            err.to_string().contains("__vdso_clock_gettime") && err.to_string().contains("Jmp"),
            "{err}"
        );
    }

    #[test]
    fn fnv_matches_the_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn a_probe_missing_a_reading_is_refused() {
        let err = parse_probe("libc-realtime 1.5\nmonotonic 2\n").unwrap_err();
        assert!(err.contains("vdso-realtime"), "{err}");
        assert!(parse_probe("libc-realtime x\n").is_err());
    }
}
