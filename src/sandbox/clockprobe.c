/*
 * sd-clockprobe: a static test program that reads the clocks the way programs without libc do,
 * for the sandbox's clock patch (compiled `-static` at `up`; see `sandbox::clockpatch`).
 *
 *   sd-clockprobe              one reading of every clock, `NAME SECONDS` a line
 *   sd-clockprobe watch MS N   N readings of vdso-realtime, MS apart: `MONOTONIC REALTIME`
 *   sd-clockprobe bench N      ns per call of the vDSO's clock_gettime(CLOCK_REALTIME), N calls
 *
 * `vdso-realtime` calls the vDSO's __vdso_clock_gettime found through the auxiliary vector, as
 * the Go runtime does; `libc-realtime`, `gettimeofday` and `time` go through static glibc,
 * which calls the vDSO too; `thread` is vdso-realtime read by a thread started after the
 * patch, `fork-child` by a child forked after it. Owns nothing else.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <pthread.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int (*gettime_fn)(clockid_t, struct timespec *);

/* The vDSO's symbol `name`, from its dynamic symbol table (as parse_vdso.c in the kernel). */
static void *vdso_symbol(const char *name) {
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (!base) return NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    uintptr_t load = 0;
    const Elf64_Dyn *dyn = NULL;
    int have_load = 0;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && !have_load) {
            load = base + ph[i].p_offset - ph[i].p_vaddr;
            have_load = 1;
        } else if (ph[i].p_type == PT_DYNAMIC) {
            dyn = (const Elf64_Dyn *)(base + ph[i].p_offset);
        }
    }
    if (!have_load || !dyn) return NULL;
    const Elf64_Sym *sym = NULL;
    const char *str = NULL;
    const Elf64_Word *hash = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_SYMTAB) sym = (const Elf64_Sym *)(load + dyn->d_un.d_ptr);
        if (dyn->d_tag == DT_STRTAB) str = (const char *)(load + dyn->d_un.d_ptr);
        if (dyn->d_tag == DT_HASH) hash = (const Elf64_Word *)(load + dyn->d_un.d_ptr);
    }
    if (!sym || !str || !hash) return NULL;
    for (Elf64_Word i = 0; i < hash[1]; i++)
        if (sym[i].st_shndx != SHN_UNDEF && strcmp(str + sym[i].st_name, name) == 0)
            return (void *)(load + sym[i].st_value);
    return NULL;
}

static double secs(struct timespec ts) { return ts.tv_sec + ts.tv_nsec / 1e9; }

static gettime_fn vdso;

static void *thread_main(void *out) {
    vdso(CLOCK_REALTIME, (struct timespec *)out);
    return NULL;
}

int main(int argc, char **argv) {
    vdso = (gettime_fn)vdso_symbol("__vdso_clock_gettime");
    if (!vdso) {
        fprintf(stderr, "sd-clockprobe: no vDSO clock_gettime\n");
        return 2;
    }
    struct timespec ts;
    if (argc == 4 && strcmp(argv[1], "watch") == 0) {
        long ms = atol(argv[2]), n = atol(argv[3]);
        for (long i = 0; i < n; i++) {
            struct timespec mono;
            vdso(CLOCK_MONOTONIC, &mono);
            vdso(CLOCK_REALTIME, &ts);
            printf("%.9f %.9f\n", secs(mono), secs(ts));
            fflush(stdout);
            if (i + 1 < n) usleep(ms * 1000);
        }
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "bench") == 0) {
        long n = atol(argv[2]);
        struct timespec a, b;
        vdso(CLOCK_MONOTONIC, &a);
        for (long i = 0; i < n; i++) vdso(CLOCK_REALTIME, &ts);
        vdso(CLOCK_MONOTONIC, &b);
        printf("%.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)n);
        return 0;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("libc-realtime %.9f\n", secs(ts));
    vdso(CLOCK_REALTIME, &ts);
    printf("vdso-realtime %.9f\n", secs(ts));
    vdso(CLOCK_REALTIME_COARSE, &ts);
    printf("realtime-coarse %.9f\n", secs(ts));
    vdso(CLOCK_TAI, &ts);
    printf("tai %.9f\n", secs(ts));
    struct timeval tv;
    gettimeofday(&tv, NULL);
    printf("gettimeofday %.6f\n", tv.tv_sec + tv.tv_usec / 1e6);
    printf("time %ld\n", (long)time(NULL));
    pthread_t th;
    if (pthread_create(&th, NULL, thread_main, &ts) == 0 && pthread_join(th, NULL) == 0)
        printf("thread %.9f\n", secs(ts));
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        vdso(CLOCK_REALTIME, &ts);
        printf("fork-child %.9f\n", secs(ts));
        fflush(stdout);
        _exit(0);
    }
    if (child > 0) waitpid(child, NULL, 0);
    vdso(CLOCK_MONOTONIC, &ts);
    printf("monotonic %.9f\n", secs(ts));
    return 0;
}
