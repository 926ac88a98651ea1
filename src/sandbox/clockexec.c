/*
 * sd-clockexec: start a program on a shakedown sandbox node with the node's wall clock patched
 * into its vDSO, so Go programs and static binaries (which read time without libc, where the
 * preload shim cannot reach) see the node's clock.
 *
 *   sd-clockexec PATH ARGV0 [ARG...]     (environment: SHAKEDOWN_CLOCK_FILE)
 *
 * Owns: applying a plan (`clockpatch.plan` next to this executable, written at `up` by
 * `sandbox::clockpatch`, which explains the design) to the program it starts. This process
 * becomes the program (same PID, so `$!` and pidfiles name it): it forks a tracer (through an
 * intermediate process, so the tracer is nobody's child but the node's PID 1), lets it seize
 * this process, and execs PATH. The tracer catches the exec stop (before the program's first
 * instruction; one thread), runs mmap / close / mprotect in the program through its vDSO's
 * `syscall` instruction, writes the page (wrappers, trampolines, the mapped offset file's
 * address), replaces the vDSO entries with jumps into it, restores the registers and
 * detaches. Threads share the patched memory; fork copies it; an exec gets a fresh vDSO (the
 * shim sends the next static or Go program through here again).
 *
 * Never stops the program from starting: when anything fails, it runs unpatched and the
 * failure is appended to `clockpatch.log` next to the node's clock file (and said on stderr),
 * where the clock nemesis and the tests look. Every success is logged there too.
 *
 * Does not own: building the plan (Rust, at `up`), routing execs here (`clockshim.c`).
 * x86_64 only (the plan builder refuses other machines).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

extern char **environ;

#define PAGE 4096
#define MAX_RECORDS 64

struct to_vdso { unsigned long at, next_ip, target; };
struct jump { unsigned long vdso_at, len, page_target; };
struct plan {
    unsigned long vdso_len, syscall_at, offset_slot;
    unsigned long long vdso_hash;
    unsigned char image[PAGE];
    size_t image_len;
    unsigned long abs64[MAX_RECORDS][2];
    int n_abs64;
    struct to_vdso to_vdso[MAX_RECORDS];
    int n_to_vdso;
    struct jump jumps[MAX_RECORDS];
    int n_jumps;
};

static char log_path[PATH_MAX];
static const char *target_path = "?";

/* One line in the node's clockpatch.log (O_APPEND: lines from concurrent processes stay whole). */
static void note(pid_t pid, const char *fmt, ...) {
    if (!log_path[0]) return;
    char line[1024];
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
    int n = snprintf(line, sizeof line, "%lld.%03ld pid=%d exe=%s ", (long long)ts.tv_sec,
                     ts.tv_nsec / 1000000, (int)pid, target_path);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && n < (int)sizeof line) n += vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof line - 1) n = sizeof line - 2;
    line[n++] = '\n';
    int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ssize_t w = write(fd, line, n);
    (void)w;
    close(fd);
}

/* ---- the plan ---- */

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static int load_plan(const char *path, struct plan *p, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "cannot open the plan %s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, ended = 0, ok = 1;
    while (ok && getline(&line, &cap, f) > 0) {
        lineno++;
        line[strcspn(line, "\n")] = 0;
        unsigned long a, b, c;
        if (lineno == 1) {
            ok = strcmp(line, "shakedown-clockpatch 1") == 0;
        } else if (sscanf(line, "vdso %lx %llx", &p->vdso_len, &p->vdso_hash) == 2) {
        } else if (sscanf(line, "syscall %lx", &p->syscall_at) == 1) {
        } else if (sscanf(line, "offset-slot %lx", &p->offset_slot) == 1) {
        } else if (strncmp(line, "image ", 6) == 0) {
            const char *h = line + 6;
            size_t n = strlen(h);
            if (n % 2 || n / 2 > PAGE) ok = 0;
            for (size_t i = 0; ok && i < n / 2; i++) {
                int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
                if (hi < 0 || lo < 0) ok = 0;
                else p->image[i] = (unsigned char)(hi * 16 + lo);
            }
            p->image_len = n / 2;
        } else if (sscanf(line, "abs64 %lx %lx", &a, &b) == 2 && p->n_abs64 < MAX_RECORDS) {
            p->abs64[p->n_abs64][0] = a;
            p->abs64[p->n_abs64++][1] = b;
        } else if (sscanf(line, "to-vdso %lx %lx %lx", &a, &b, &c) == 3 &&
                   p->n_to_vdso < MAX_RECORDS) {
            p->to_vdso[p->n_to_vdso++] = (struct to_vdso){a, b, c};
        } else if (sscanf(line, "jump %lx %lx %lx", &a, &b, &c) == 3 && p->n_jumps < MAX_RECORDS) {
            p->jumps[p->n_jumps++] = (struct jump){a, b, c};
        } else if (strcmp(line, "end") == 0) {
            ended = 1;
            break;
        } else {
            ok = 0;
        }
    }
    free(line);
    fclose(f);
    /* Every record must lie inside the image / the vDSO. */
    for (int i = 0; ok && i < p->n_abs64; i++)
        ok = p->abs64[i][0] + 8 <= p->image_len && p->abs64[i][1] < p->image_len;
    for (int i = 0; ok && i < p->n_to_vdso; i++)
        ok = p->to_vdso[i].at + 4 <= p->image_len && p->to_vdso[i].next_ip <= p->image_len;
    for (int i = 0; ok && i < p->n_jumps; i++)
        ok = p->jumps[i].len >= 5 && p->jumps[i].len <= 32 &&
             p->jumps[i].vdso_at + p->jumps[i].len <= p->vdso_len &&
             p->jumps[i].page_target < p->image_len;
    if (ok) ok = p->offset_slot + 8 <= p->image_len && p->image_len && p->vdso_len && ended;
    if (!ok) {
        snprintf(err, errlen, "the plan %s is malformed (line %d)", path, lineno);
        return -1;
    }
    return 0;
}

static unsigned long long fnv1a64(const unsigned char *b, size_t n) {
    unsigned long long h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* ---- the traced process ---- */

struct target {
    pid_t pid;
    struct user_regs_struct saved;
    unsigned long vdso, vdso_end, syscall_insn;
    int pending_signal; /* a signal that arrived while we ran its syscalls: delivered at detach */
};

/* Runs one syscall in the stopped target; returns its result (-errno on failure), or
 * -ESRCH-ish garbage never: a failure to drive the target is reported through *broken. */
static long remote_syscall(struct target *t, long nr, unsigned long a1, unsigned long a2,
                           unsigned long a3, unsigned long a4, unsigned long a5,
                           unsigned long a6, int *broken) {
    struct user_regs_struct r = t->saved;
    r.rax = nr;
    r.orig_rax = (unsigned long)-1;
    r.rdi = a1;
    r.rsi = a2;
    r.rdx = a3;
    r.r10 = a4;
    r.r8 = a5;
    r.r9 = a6;
    r.rip = t->syscall_insn;
    if (ptrace(PTRACE_SETREGS, t->pid, 0, &r) != 0) goto fail;
    for (;;) {
        if (ptrace(PTRACE_SINGLESTEP, t->pid, 0, 0) != 0) goto fail;
        int st;
        if (waitpid(t->pid, &st, __WALL) != t->pid || !WIFSTOPPED(st)) goto fail;
        if (WSTOPSIG(st) == SIGTRAP && (st >> 16) == 0) break;
        /* Another signal stopped it before the step: keep it for the detach, step again. */
        if ((st >> 16) == 0) t->pending_signal = WSTOPSIG(st);
    }
    if (ptrace(PTRACE_GETREGS, t->pid, 0, &r) != 0) goto fail;
    if (r.rip != t->syscall_insn + 2) goto fail;
    return (long)r.rax;
fail:
    *broken = 1;
    return -EIO;
}

static int read_vdso_range(pid_t pid, unsigned long *start, unsigned long *end) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char line[512];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", start, end) == 2) {
            found = 0;
            break;
        }
    }
    fclose(f);
    return found;
}

/* Is [addr, addr+len) free of every mapping of the target (and of its stack's growth)? */
static int range_free(pid_t pid, unsigned long addr, unsigned long len) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f) return 0;
    char line[512];
    int free_ = 1;
    while (free_ && fgets(line, sizeof line, f)) {
        unsigned long s, e;
        if (sscanf(line, "%lx-%lx", &s, &e) != 2) continue;
        /* Keep 1 GiB below the stack for it to grow into. */
        if (strstr(line, "[stack]")) s = s > (1UL << 30) ? s - (1UL << 30) : 0;
        if (addr < e && s < addr + len) free_ = 0;
    }
    fclose(f);
    return free_;
}

static int within_rel32(unsigned long a, unsigned long b) {
    long d = (long)(a - b);
    return d > -0x7fff0000L && d < 0x7fff0000L;
}

static int poke_bytes(pid_t pid, unsigned long addr, const unsigned char *bytes, size_t n) {
    /* PTRACE_POKEDATA writes through read-only mappings (the vDSO): word by word. */
    unsigned long start = addr & ~7UL, end = (addr + n + 7) & ~7UL;
    for (unsigned long w = start; w < end; w += 8) {
        errno = 0;
        long word = ptrace(PTRACE_PEEKDATA, pid, (void *)w, 0);
        if (errno) return -1;
        unsigned char *wb = (unsigned char *)&word;
        for (int k = 0; k < 8; k++) {
            unsigned long at = w + k;
            if (at >= addr && at < addr + n) wb[k] = bytes[at - addr];
        }
        if (ptrace(PTRACE_POKEDATA, pid, (void *)w, (void *)word) != 0) return -1;
    }
    return 0;
}

/* Applies the plan to the target stopped at its exec. Returns 0, or -1 with `why` set. The
 * target's registers are restored by the caller whatever happens. */
static int patch(struct target *t, const struct plan *p, int offset_fd, char *why, size_t wl) {
    unsigned long vs, ve;
    if (read_vdso_range(t->pid, &vs, &ve) != 0) {
        snprintf(why, wl, "it has no vDSO");
        return -1;
    }
    if (ve - vs != p->vdso_len) {
        snprintf(why, wl, "its vDSO is %lu bytes, the plan's %lu", ve - vs, p->vdso_len);
        return -1;
    }
    static unsigned char image[1 << 16];
    if (p->vdso_len > sizeof image) {
        snprintf(why, wl, "its vDSO is too large");
        return -1;
    }
    struct iovec local = {image, p->vdso_len}, remote = {(void *)vs, p->vdso_len};
    if (process_vm_readv(t->pid, &local, 1, &remote, 1, 0) != (ssize_t)p->vdso_len) {
        snprintf(why, wl, "cannot read its vDSO: %s", strerror(errno));
        return -1;
    }
    if (fnv1a64(image, p->vdso_len) != p->vdso_hash) {
        snprintf(why, wl, "its vDSO differs from the plan's (made for another kernel?)");
        return -1;
    }
    t->vdso = vs;
    t->vdso_end = ve;
    t->syscall_insn = vs + p->syscall_at;
    int broken = 0;

    /* The page, within a rel32 of the vDSO (below it first, clear of the stack). */
    unsigned long page = 0;
    for (int k = 1; k <= 24 && !page && !broken; k++) {
        unsigned long step = (unsigned long)k << 26; /* 64 MiB apart */
        unsigned long cand[2] = {(vs - step) & ~(PAGE - 1UL), (ve + step) & ~(PAGE - 1UL)};
        for (int c = 0; c < 2 && !page; c++) {
            if (!within_rel32(cand[c], vs) || !within_rel32(cand[c] + PAGE, ve)) continue;
            if (!range_free(t->pid, cand[c], PAGE)) continue;
            long r = remote_syscall(t, SYS_mmap, cand[c], PAGE, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                                    (unsigned long)-1, 0, &broken);
            if (broken) break;
            if (r == (long)cand[c]) page = cand[c];
            else if (r > 0 && (unsigned long)r < (unsigned long)-4096L)
                remote_syscall(t, SYS_munmap, (unsigned long)r, PAGE, 0, 0, 0, 0, &broken);
        }
    }
    if (broken) {
        snprintf(why, wl, "cannot run a syscall in it");
        return -1;
    }
    if (!page) {
        snprintf(why, wl, "no free page within 2 GiB of its vDSO");
        return -1;
    }

    /* The node's offset, shared read-only; none = real time. */
    unsigned long offset_addr = 0;
    if (offset_fd >= 0) {
        long r = remote_syscall(t, SYS_mmap, 0, PAGE, PROT_READ, MAP_SHARED, offset_fd, 0,
                                &broken);
        if (r > 0 && (unsigned long)r < (unsigned long)-4096L) offset_addr = (unsigned long)r;
        remote_syscall(t, SYS_close, offset_fd, 0, 0, 0, 0, 0, &broken);
    }
    if (broken) {
        snprintf(why, wl, "cannot run a syscall in it");
        return -1;
    }
    if (!offset_addr) {
        snprintf(why, wl, "cannot map the node's clock file into it");
        remote_syscall(t, SYS_munmap, page, PAGE, 0, 0, 0, 0, &broken);
        return -1;
    }

    unsigned char img[PAGE];
    memcpy(img, p->image, p->image_len);
    memcpy(img + p->offset_slot, &offset_addr, 8);
    for (int i = 0; i < p->n_abs64; i++) {
        unsigned long v = page + p->abs64[i][1];
        memcpy(img + p->abs64[i][0], &v, 8);
    }
    for (int i = 0; i < p->n_to_vdso; i++) {
        unsigned long to = vs + p->to_vdso[i].target, from = page + p->to_vdso[i].next_ip;
        if (!within_rel32(to, from)) {
            snprintf(why, wl, "the page landed out of reach of its vDSO");
            return -1;
        }
        int32_t d = (int32_t)(long)(to - from);
        memcpy(img + p->to_vdso[i].at, &d, 4);
    }
    struct iovec li = {img, p->image_len}, ri = {(void *)page, p->image_len};
    if (process_vm_writev(t->pid, &li, 1, &ri, 1, 0) != (ssize_t)p->image_len) {
        snprintf(why, wl, "cannot write the patch page: %s", strerror(errno));
        return -1;
    }
    long r = remote_syscall(t, SYS_mprotect, page, PAGE, PROT_READ | PROT_EXEC, 0, 0, 0, &broken);
    if (broken || r != 0) {
        snprintf(why, wl, "cannot make the patch page executable");
        return -1;
    }
    /* Last: the entries. Until here the vDSO is untouched. */
    for (int i = 0; i < p->n_jumps; i++) {
        unsigned char j[32];
        memset(j, 0xcc, sizeof j);
        j[0] = 0xe9;
        int32_t d = (int32_t)(long)(page + p->jumps[i].page_target -
                                    (vs + p->jumps[i].vdso_at + 5));
        memcpy(j + 1, &d, 4);
        if (poke_bytes(t->pid, vs + p->jumps[i].vdso_at, j, p->jumps[i].len) != 0) {
            snprintf(why, wl, "cannot write its vDSO: %s", strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* At the exec stop the tracee is still inside execve, whose return value (0) is written into
 * rax when it resumes. One single step takes it out: the kernel reports the step at the
 * syscall's exit, before the program's first instruction. The registers then are the ones
 * the program starts with, saved to be restored after the patch. */
static int step_out_of_exec(struct target *t) {
    for (;;) {
        if (ptrace(PTRACE_SINGLESTEP, t->pid, 0, 0) != 0) return -1;
        int st;
        if (waitpid(t->pid, &st, __WALL) != t->pid || !WIFSTOPPED(st)) {
            errno = ESRCH;
            return -1;
        }
        if (WSTOPSIG(st) == SIGTRAP && (st >> 16) == 0) break;
        if ((st >> 16) == 0) t->pending_signal = WSTOPSIG(st);
    }
    return ptrace(PTRACE_GETREGS, t->pid, 0, &t->saved) == 0 ? 0 : -1;
}

/* The tracer: seize `pid`, wait for its exec, patch, detach, exit. Never returns. */
static void tracer(pid_t pid, const struct plan *plan, int offset_fd, int to_launcher,
                   int from_launcher) {
    /* Hold none of the program's files open (an SSH session waits for its stdout to close). */
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        if (null > 2) close(null);
    }
    pid_t me = getpid();
    if (write(to_launcher, &me, sizeof me) != sizeof me) _exit(0);
    char go;
    if (read(from_launcher, &go, 1) != 1) _exit(0);
    int result = 0;
    if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACEEXEC) != 0) result = errno;
    if (write(to_launcher, &result, sizeof result) != sizeof result || result) _exit(0);
    close(to_launcher);
    close(from_launcher);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int st;
        pid_t w = waitpid(pid, &st, __WALL);
        if (w < 0) {
            if (errno == EINTR) continue;
            _exit(0);
        }
        if (WIFEXITED(st) || WIFSIGNALED(st)) _exit(0);
        if (!WIFSTOPPED(st)) continue;
        int event = st >> 16, sig = WSTOPSIG(st);
        if (event == PTRACE_EVENT_EXEC) {
            struct target t = {.pid = pid};
            char why[256] = "";
            int ok = step_out_of_exec(&t) == 0;
            if (!ok) snprintf(why, sizeof why, "cannot step it out of its exec: %s", strerror(errno));
            else ok = patch(&t, plan, offset_fd, why, sizeof why) == 0;
            if (t.saved.rip && ptrace(PTRACE_SETREGS, pid, 0, &t.saved) != 0 && ok) {
                ok = 0;
                snprintf(why, sizeof why, "cannot restore its registers");
            }
            ptrace(PTRACE_DETACH, pid, 0, (void *)(long)t.pending_signal);
            struct timespec t1;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            long us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000;
            if (ok) note(pid, "patched in %ld us", us);
            else note(pid, "NOT patched: %s", why);
            _exit(0);
        }
        if (event == PTRACE_EVENT_STOP) {
            /* Stopped (SIGSTOP) before its exec: stay stopped until SIGCONT, keep waiting. */
            ptrace(PTRACE_LISTEN, pid, 0, 0);
            continue;
        }
        ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig);
    }
}

static void exec_target(const char *path, char **argv) {
    syscall(SYS_execve, path, argv, environ);
    int e = errno;
    fprintf(stderr, "sd-clockexec: cannot execute %s: %s\n", path, strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: sd-clockexec PATH ARGV0 [ARG...]\n");
        return 127;
    }
    target_path = argv[1];
    char **target_argv = argv + 2;
    const char *clock_file = getenv("SHAKEDOWN_CLOCK_FILE");
    if (!clock_file || !*clock_file) exec_target(target_path, target_argv);
    /* The log goes next to the node's clock file. */
    snprintf(log_path, sizeof log_path, "%s", clock_file);
    char *slash = strrchr(log_path, '/');
    if (slash) snprintf(slash + 1, sizeof log_path - (slash + 1 - log_path), "clockpatch.log");
    else log_path[0] = 0;

    char exe[PATH_MAX], plan_path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    char *dir_end = strrchr(exe, '/');
    if (dir_end) *dir_end = 0;
    snprintf(plan_path, sizeof plan_path, "%s/clockpatch.plan", exe);

    static struct plan plan;
    char err[PATH_MAX + 128];
    pid_t me = getpid();
    if (load_plan(plan_path, &plan, err, sizeof err) != 0) {
        note(me, "NOT patched: %s", err);
        fprintf(stderr, "sd-clockexec: %s: running %s with the host's clock\n", err, target_path);
        exec_target(target_path, target_argv);
    }
    int offset_fd = open(clock_file, O_RDONLY); /* inherited by the exec, closed by the tracer */
    int up[2], down[2];
    if (pipe2(up, O_CLOEXEC) != 0 || pipe2(down, O_CLOEXEC) != 0) {
        note(me, "NOT patched: pipe: %s", strerror(errno));
        exec_target(target_path, target_argv);
    }
    pid_t mid = fork();
    if (mid == 0) {
        pid_t t = fork();
        if (t != 0) _exit(t < 0);
        close(up[0]);
        close(down[1]);
        tracer(me, &plan, offset_fd, up[1], down[0]);
    }
    close(up[1]);
    close(down[0]);
    const char *failed = NULL;
    int status = 0;
    if (mid < 0) failed = "fork";
    else if (waitpid(mid, &status, 0) != mid || !WIFEXITED(status) || WEXITSTATUS(status))
        failed = "fork the tracer";
    pid_t tracer_pid = 0;
    if (!failed && read(up[0], &tracer_pid, sizeof tracer_pid) != sizeof tracer_pid)
        failed = "start the tracer";
    if (!failed) {
        prctl(PR_SET_PTRACER, tracer_pid, 0, 0, 0); /* Yama: let it trace us (EINVAL without) */
        if (write(down[1], "g", 1) != 1) failed = "signal the tracer";
    }
    int seize = 0;
    if (!failed && read(up[0], &seize, sizeof seize) != sizeof seize) failed = "hear the tracer";
    if (!failed && seize) {
        note(me, "NOT patched: ptrace refused: %s", strerror(seize));
        fprintf(stderr, "sd-clockexec: ptrace refused (%s): running %s with the host's clock\n",
                strerror(seize), target_path);
    } else if (failed) {
        note(me, "NOT patched: cannot %s", failed);
        fprintf(stderr, "sd-clockexec: cannot %s: running %s with the host's clock\n", failed,
                target_path);
    }
    close(up[0]);
    close(down[1]);
    if (failed || seize) {
        if (offset_fd >= 0) close(offset_fd);
    }
    exec_target(target_path, target_argv);
    return 127;
}
