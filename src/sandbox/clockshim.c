/*
 * clockshim: a per-node wall clock for the shakedown sandbox (LD_PRELOAD library).
 *
 * Owns: the REALTIME clocks seen by dynamically linked programs on one sandbox node. All nodes
 * share the host kernel and its one wall clock, so each node gets an offset in nanoseconds,
 * stored as one little-endian int64 at the start of the file named by $SHAKEDOWN_CLOCK_FILE
 * (set per node by sshd's SetEnv, next to LD_PRELOAD). The file is mmapped MAP_SHARED once per
 * process, so a step made by one process is seen by every process of the node at once.
 *
 * Reads: clock_gettime / gettimeofday / time / timespec_get return real time + offset for
 * CLOCK_REALTIME, CLOCK_REALTIME_COARSE, CLOCK_REALTIME_ALARM and CLOCK_TAI; every other clock
 * (MONOTONIC, BOOTTIME, CPU clocks) passes through unchanged. clock_nanosleep with TIMER_ABSTIME
 * on a REALTIME clock has its deadline translated back to host time.
 * Writes: clock_settime(CLOCK_REALTIME) / settimeofday / stime set offset = requested - real, so
 * `date -s` changes only this node's clock. Without the file (or without write access to it)
 * they fall through to the kernel, which refuses with EPERM on a node without CAP_SYS_TIME.
 *
 * Execs: a program that reads the clock without libc (a static binary; a Go program, which
 * calls the vDSO directly) is started through $SHAKEDOWN_CLOCK_EXEC (`sd-clockexec`, which
 * patches the node's offset into its vDSO; see clockexec.c): execve, execv, execvp, execvpe,
 * execl, execlp, execle, posix_spawn and posix_spawnp look at the target's ELF headers (no
 * PT_INTERP = static; a Go build-id note = Go) and, for those, exec sd-clockexec with the
 * resolved path and the original argv instead. A process whose vDSO was patched that way and
 * that also loads this library (a dynamically linked Go program) reads real time through the
 * patch's trampoline, so the offset is added once.
 *
 * Does not reach: a static or Go program exec'd by another static or Go program (no libc exec
 * to intercept; it reads the host clock), absolute REALTIME deadlines inside libc or the kernel
 * (pthread_cond_timedwait, sem_timedwait, futex, timerfd), and processes that drop LD_PRELOAD.
 *
 * Rules inside the overrides: no allocation, no locks, no stdio; only raw syscalls, the vDSO
 * (found by walking its ELF symbol table, no dlsym) and getenv in the constructor.
 */
#define _GNU_SOURCE
#pragma GCC diagnostic ignored "-Wnonnull-compare"
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define NS_PER_S 1000000000LL

static int64_t *const NOT_TRIED = NULL;
#define FAILED ((int64_t *)1)

/* The mapped offset: NULL = not tried yet, FAILED = no file, else the int64 offset in ns. */
static int64_t *offset_slot;
/* 1 when the mapping is writable (this process may set the node's clock). */
static int offset_writable;

typedef int (*vdso_gettime_fn)(clockid_t, struct timespec *);
static vdso_gettime_fn vdso_gettime;

/* ---- vDSO lookup (after tools/testing/selftests/vDSO/parse_vdso.c, 64-bit ELF only) ---- */

static int names_equal(const char *a, const char *b) {
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

static void *vdso_symbol(const char *name) {
#if UINTPTR_MAX == 0xffffffffffffffffULL
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (!base) return NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    uintptr_t load_offset = 0;
    int have_load = 0;
    const Elf64_Dyn *dyn = NULL;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && !have_load) {
            load_offset = base + ph[i].p_offset - ph[i].p_vaddr;
            have_load = 1;
        } else if (ph[i].p_type == PT_DYNAMIC) {
            dyn = (const Elf64_Dyn *)(base + ph[i].p_offset);
        }
    }
    if (!have_load || !dyn) return NULL;
    const Elf64_Sym *symtab = NULL;
    const char *strtab = NULL;
    const Elf64_Word *hash = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t p = load_offset + dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_SYMTAB) symtab = (const Elf64_Sym *)p;
        else if (dyn->d_tag == DT_STRTAB) strtab = (const char *)p;
        else if (dyn->d_tag == DT_HASH) hash = (const Elf64_Word *)p;
    }
    if (!symtab || !strtab || !hash) return NULL;
    Elf64_Word nchain = hash[1];
    for (Elf64_Word i = 0; i < nchain; i++) {
        const Elf64_Sym *s = &symtab[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF) continue;
        if (names_equal(strtab + s->st_name, name)) return (void *)(load_offset + s->st_value);
    }
#else
    (void)name;
#endif
    return NULL;
}

/* ---- real clocks ---- */

static int real_gettime(clockid_t clk, struct timespec *ts) {
    if (vdso_gettime) {
        int r = vdso_gettime(clk, ts);
        if (r == 0) return 0;
        if (r < 0 && r > -4096) {
            errno = -r;
            return -1;
        }
    }
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

static int64_t real_realtime_ns(void) {
    struct timespec ts;
    if (real_gettime(CLOCK_REALTIME, &ts) != 0) return 0;
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* ---- the offset file ---- */

static int64_t *map_offset_file(int *writable) {
    const char *path = getenv("SHAKEDOWN_CLOCK_FILE");
    *writable = 0;
    if (!path || !*path) return FAILED;
    int rw = 1;
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        rw = 0;
        fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) return FAILED;
    long size = syscall(SYS_lseek, fd, 0L, SEEK_END);
    void *p = MAP_FAILED;
    if (size >= (long)sizeof(int64_t)) {
        p = (void *)syscall(SYS_mmap, NULL, sizeof(int64_t), PROT_READ | (rw ? PROT_WRITE : 0),
                            MAP_SHARED, fd, 0L);
    }
    syscall(SYS_close, fd);
    if (p == MAP_FAILED || (uintptr_t)p > (uintptr_t)-4096) return FAILED;
    *writable = rw;
    return (int64_t *)p;
}

/* The offset slot, mapping the file on first use (normally done by the constructor). */
static int64_t *slot(void) {
    int64_t *p = __atomic_load_n(&offset_slot, __ATOMIC_ACQUIRE);
    if (p == NOT_TRIED) {
        int writable = 0;
        int64_t *mine = map_offset_file(&writable);
        int64_t *expected = NOT_TRIED;
        if (__atomic_compare_exchange_n(&offset_slot, &expected, mine, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&offset_writable, writable, __ATOMIC_RELEASE);
            p = mine;
        } else {
            if (mine != FAILED) syscall(SYS_munmap, mine, sizeof(int64_t));
            p = expected;
        }
    }
    return p == FAILED ? NULL : p;
}

static int64_t current_offset_ns(void) {
    int64_t *p = slot();
    return p ? __atomic_load_n(p, __ATOMIC_ACQUIRE) : 0;
}

/* When sd-clockexec patched this process's vDSO, its entry is a `jmp rel32` into a page that
 * starts with the patch's magic; the page's slot 0x10 holds the original function (a
 * trampoline). Reading through it keeps the offset from being added twice. */
static vdso_gettime_fn unpatched(vdso_gettime_fn f) {
    const unsigned char *p = (const unsigned char *)f;
    if (!p || p[0] != 0xe9) return f;
    int32_t rel;
    memcpy(&rel, p + 1, 4);
    uintptr_t page = ((uintptr_t)p + 5 + (intptr_t)rel) & ~(uintptr_t)4095;
    if (memcmp((const void *)page, "SDCLKPT1", 8) != 0) return f;
    vdso_gettime_fn orig;
    memcpy(&orig, (const void *)(page + 0x10), sizeof orig);
    return orig ? orig : f;
}

__attribute__((constructor)) static void clockshim_init(void) {
    vdso_gettime = (vdso_gettime_fn)vdso_symbol("__vdso_clock_gettime");
    if (!vdso_gettime) vdso_gettime = (vdso_gettime_fn)vdso_symbol("__kernel_clock_gettime");
    vdso_gettime = unpatched(vdso_gettime);
    (void)slot();
}

static int is_realtime(clockid_t clk) {
    return clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE || clk == CLOCK_REALTIME_ALARM ||
           clk == CLOCK_TAI;
}

static void shift(struct timespec *ts, int64_t offset_ns) {
    int64_t ns = (int64_t)ts->tv_sec * NS_PER_S + ts->tv_nsec + offset_ns;
    int64_t sec = ns / NS_PER_S, rem = ns % NS_PER_S;
    if (rem < 0) {
        rem += NS_PER_S;
        sec -= 1;
    }
    ts->tv_sec = (time_t)sec;
    ts->tv_nsec = (long)rem;
}

/* Set the node's clock to `wanted_ns` (ns since the epoch); -1/EPERM without a writable file. */
static int set_node_clock(int64_t wanted_ns) {
    int64_t *p = slot();
    if (!p || !__atomic_load_n(&offset_writable, __ATOMIC_ACQUIRE)) {
        errno = EPERM;
        return -1;
    }
    __atomic_store_n(p, wanted_ns - real_realtime_ns(), __ATOMIC_RELEASE);
    return 0;
}

/* ---- overrides ---- */

EXPORT int clock_gettime(clockid_t clk, struct timespec *ts) {
    int r = real_gettime(clk, ts);
    if (r == 0 && is_realtime(clk)) shift(ts, current_offset_ns());
    return r;
}

EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    if (tz) {
        long r = syscall(SYS_gettimeofday, NULL, tz);
        if (r != 0) return (int)r;
    }
    if (!tv) return 0;
    struct timespec ts;
    int r = clock_gettime(CLOCK_REALTIME, &ts);
    if (r != 0) return r;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

EXPORT time_t time(time_t *out) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}

EXPORT int timespec_get(struct timespec *ts, int base) {
    if (base != TIME_UTC) return 0;
    return clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}

EXPORT int clock_settime(clockid_t clk, const struct timespec *ts) {
    if (clk != CLOCK_REALTIME || !slot()) return (int)syscall(SYS_clock_settime, clk, ts);
    if (!ts || ts->tv_nsec < 0 || ts->tv_nsec >= NS_PER_S) {
        errno = EINVAL;
        return -1;
    }
    return set_node_clock((int64_t)ts->tv_sec * NS_PER_S + ts->tv_nsec);
}

EXPORT int settimeofday(const struct timeval *tv, const struct timezone *tz) {
    if (!tv || !slot()) return (int)syscall(SYS_settimeofday, tv, tz);
    if (tv->tv_usec < 0 || tv->tv_usec >= 1000000) {
        errno = EINVAL;
        return -1;
    }
    return set_node_clock((int64_t)tv->tv_sec * NS_PER_S + (int64_t)tv->tv_usec * 1000);
}

EXPORT int stime(const time_t *t) {
    if (!t) {
        errno = EINVAL;
        return -1;
    }
    struct timespec ts = {.tv_sec = *t, .tv_nsec = 0};
    return clock_settime(CLOCK_REALTIME, &ts);
}

EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
                           struct timespec *rem) {
    struct timespec real_req;
    if ((flags & TIMER_ABSTIME) && req && is_realtime(clk)) {
        real_req = *req;
        shift(&real_req, -current_offset_ns());
        req = &real_req;
    }
    /* clock_nanosleep returns the error number instead of setting errno. */
    long r = syscall(SYS_clock_nanosleep, clk, flags, req, rem);
    return r == 0 ? 0 : errno;
}

/* ---- execs of programs that read the clock without libc ---- */

/* Inside these: no allocation and no locks (an exec may follow a vfork); raw execve only. */

/* Does the ELF file at `path` read time without libc: static (no PT_INTERP) or Go (a PT_NOTE
 * with the Go build ID, name "Go", type 4)? Not ELF, unreadable: no. */
static int needs_patch(const char *path) {
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    Elf64_Ehdr eh;
    int result = 0;
    if (syscall(SYS_pread64, fd, &eh, sizeof eh, 0L) != (long)sizeof eh) goto out;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_machine != EM_X86_64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 64)
        goto out;
    Elf64_Phdr ph[64];
    long want = (long)eh.e_phnum * (long)sizeof(Elf64_Phdr);
    if (syscall(SYS_pread64, fd, ph, want, (long)eh.e_phoff) != want) goto out;
    int interp = 0;
    for (int i = 0; i < eh.e_phnum; i++)
        if (ph[i].p_type == PT_INTERP) interp = 1;
    if (!interp) {
        result = eh.e_type == ET_EXEC || eh.e_type == ET_DYN;
        goto out;
    }
    for (int i = 0; i < eh.e_phnum && !result; i++) {
        if (ph[i].p_type != PT_NOTE || ph[i].p_filesz > 4096) continue;
        unsigned char notes[4096];
        long n = syscall(SYS_pread64, fd, notes, (long)ph[i].p_filesz, (long)ph[i].p_offset);
        for (long at = 0; n > 0 && at + 12 <= n;) {
            Elf64_Word namesz, descsz, type;
            memcpy(&namesz, notes + at, 4);
            memcpy(&descsz, notes + at + 4, 4);
            memcpy(&type, notes + at + 8, 4);
            long name_at = at + 12;
            /* Go writes the name "Go\0\0" with namesz 4. */
            if ((namesz == 3 || namesz == 4) && type == 4 && name_at + 3 <= n &&
                memcmp(notes + name_at, "Go", 3) == 0) {
                result = 1;
                break;
            }
            at = name_at + ((namesz + 3) & ~3u) + ((descsz + 3) & ~3u);
        }
    }
out:
    syscall(SYS_close, fd);
    return result;
}

static const char *clock_exec(void) {
    const char *p = getenv("SHAKEDOWN_CLOCK_EXEC");
    return p && *p ? p : NULL;
}

/* execve(path) through sd-clockexec when it needs the patch; else plain. Returns -1/errno. */
static int exec_routed(const char *path, char *const argv[], char *const envp[]) {
    const char *ce = clock_exec();
    if (ce && path && needs_patch(path)) {
        int argc = 0;
        while (argv && argv[argc]) argc++;
        const char *routed[argc + 3];
        routed[0] = "sd-clockexec";
        routed[1] = path;
        for (int i = 0; i < argc; i++) routed[i + 2] = argv[i];
        if (argc == 0) routed[2] = path, argc = 1;
        routed[argc + 2] = NULL;
        syscall(SYS_execve, ce, routed, envp);
        /* sd-clockexec missing: run the program itself (it reads the host clock). */
    }
    return (int)syscall(SYS_execve, path, argv, envp);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    return exec_routed(path, argv, envp);
}

EXPORT int execv(const char *path, char *const argv[]) {
    return exec_routed(path, argv, environ);
}

/* execvpe as glibc does it: a name with '/' is a path; else each $PATH entry in turn (default
 * "/bin:/usr/bin"), ENOEXEC runs it with /bin/sh, EACCES is remembered, ENOENT and the like
 * go on to the next entry. */
EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    if (!file || !*file) {
        errno = ENOENT;
        return -1;
    }
    if (strchr(file, '/')) {
        exec_routed(file, argv, envp);
        if (errno == ENOEXEC) goto script_path;
        return -1;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/bin:/usr/bin";
    size_t flen = strlen(file);
    if (flen > NAME_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int seen_eacces = 0;
    for (const char *p = path;; p++) {
        const char *colon = strchr(p, ':');
        size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
        char buf[PATH_MAX];
        if (dlen + 1 + flen + 1 <= sizeof buf) {
            if (dlen) {
                memcpy(buf, p, dlen);
                buf[dlen] = '/';
                memcpy(buf + dlen + 1, file, flen + 1);
            } else {
                memcpy(buf, file, flen + 1);
            }
            exec_routed(buf, argv, envp);
            if (errno == ENOEXEC) {
                int argc = 0;
                while (argv[argc]) argc++;
                char *sh_argv[argc + 2];
                sh_argv[0] = (char *)"/bin/sh";
                sh_argv[1] = buf;
                for (int i = 1; i <= argc; i++) sh_argv[i + 1] = argv[i];
                syscall(SYS_execve, "/bin/sh", sh_argv, envp);
                return -1;
            }
            if (errno == EACCES) seen_eacces = 1;
            else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV &&
                     errno != ETIMEDOUT)
                return -1;
        }
        if (!colon) break;
        p = colon;
    }
    if (seen_eacces) errno = EACCES;
    return -1;
script_path: {
    int argc = 0;
    while (argv[argc]) argc++;
    char *sh_argv[argc + 2];
    sh_argv[0] = (char *)"/bin/sh";
    sh_argv[1] = (char *)file;
    for (int i = 1; i <= argc; i++) sh_argv[i + 1] = argv[i];
    syscall(SYS_execve, "/bin/sh", sh_argv, envp);
    return -1;
}
}

EXPORT int execvp(const char *file, char *const argv[]) {
    return execvpe(file, argv, environ);
}

/* The execl family: count the arguments, copy them to the stack, exec. */
#define COLLECT_ARGS(first, ap, argv)                          \
    int argc_ = 1;                                               \
    va_start(ap, first);                                         \
    while (va_arg(ap, char *)) argc_++;                          \
    va_end(ap);                                                  \
    char *argv[argc_ + 1];                                       \
    argv[0] = (char *)first;                                     \
    va_start(ap, first);                                         \
    for (int i_ = 1; i_ <= argc_; i_++) argv[i_] = va_arg(ap, char *);

EXPORT int execl(const char *path, const char *arg, ...) {
    va_list ap;
    COLLECT_ARGS(arg, ap, argv)
    va_end(ap);
    return exec_routed(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...) {
    va_list ap;
    COLLECT_ARGS(arg, ap, argv)
    va_end(ap);
    return execvpe(file, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...) {
    va_list ap;
    COLLECT_ARGS(arg, ap, argv)
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return exec_routed(path, argv, envp);
}

/* posix_spawn(p): the target resolved (PATH for the p form) and, when it needs the patch,
 * spawned as sd-clockexec PATH ARGV...; the real functions found with dlsym when first used
 * (never in a vfork child: these run in the parent). */
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);

static int spawn_routed(spawn_fn real, pid_t *pid, const char *resolved, const char *file,
                        const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                        char *const argv[], char *const envp[]) {
    const char *ce = clock_exec();
    if (!real) return ENOSYS;
    if (ce && resolved && needs_patch(resolved)) {
        int argc = 0;
        while (argv && argv[argc]) argc++;
        char *routed[argc + 3];
        routed[0] = (char *)"sd-clockexec";
        routed[1] = (char *)resolved;
        for (int i = 0; i < argc; i++) routed[i + 2] = argv[i];
        if (argc == 0) routed[2] = (char *)resolved, argc = 1;
        routed[argc + 2] = NULL;
        spawn_fn plain = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
        if (plain) return plain(pid, ce, fa, attr, routed, envp);
    }
    return real(pid, file, fa, attr, argv, envp);
}

/* The first executable regular file named `file` on $PATH, into buf; NULL if none. */
static const char *search_path(const char *file, char *buf, size_t len) {
    if (strchr(file, '/')) return file;
    const char *path = getenv("PATH");
    if (!path) path = "/bin:/usr/bin";
    size_t flen = strlen(file);
    for (const char *p = path;; p++) {
        const char *colon = strchr(p, ':');
        size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
        if (dlen + flen + 2 <= len) {
            memcpy(buf, p, dlen);
            buf[dlen] = '/';
            memcpy(buf + dlen + 1, file, flen + 1);
            struct stat st;
            if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0) return buf;
        }
        if (!colon) return NULL;
        p = colon;
    }
}

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    spawn_fn real = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
    return spawn_routed(real, pid, path, path, fa, attr, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    spawn_fn real = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
    char buf[PATH_MAX];
    const char *resolved = file ? search_path(file, buf, sizeof buf) : NULL;
    return spawn_routed(real, pid, resolved, file, fa, attr, argv, envp);
}
