/* sd-reaper: PID 1 of a shakedown sandbox node. Compiled by `shakedown sandbox up` with the
 * host's cc into <state_dir>/sd-reaper (see src/sandbox/node.rs).
 *
 * Owns: keeping the node's sshd alive while the node lives, and being a proper init:
 *   - starts `argv[2..]` (sshd -D -e -f <config>) as its child;
 *   - reaps every child, its own and orphans (daemons started over SSH end up here);
 *   - when sshd dies, starts it again: after the hold time of an ssh-drop (below), else after
 *     a backoff (100 ms, doubled while sshd keeps dying within 1 s of its start, at most 5 s);
 *   - SIGUSR1 (the ssh-drop fault): read the hold time in ms from the file argv[1] (and remove
 *     it), wait DROP_DELAY_MS, SIGKILL every sshd process of the node (listener and
 *     per-connection ones, by /proc/<pid>/comm), restart sshd once the hold has passed;
 *   - SIGUSR2: end a hold now (start sshd at once if it is away);
 *   - SIGTERM, SIGINT or SIGHUP: stop sshd and exit 0, which makes the kernel kill every other
 *     process of the PID namespace (so `sandbox down` still tears the node down by killing one
 *     PID).
 * Does not own: the node's namespaces and mounts (the launcher in node.rs), sshd's config.
 *
 * Signals are blocked and taken with sigtimedwait, so no handler runs asynchronously. Messages
 * go to stderr, which is the node's sshd.log. The process name (comm) is "sd-reaper", which the
 * ssh-drop fault checks before it signals PID 1.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DROP_DELAY_MS 300
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define QUICK_DEATH_MS 1000

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static pid_t start_sshd(char **argv, const sigset_t *old) {
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "sd-reaper: cannot fork for sshd: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, old, NULL);
        execv(argv[0], argv);
        fprintf(stderr, "sd-reaper: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

/* Hold time in ms from `path` (removed after reading); 0 when absent or unreadable. */
static long long read_hold_ms(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long long ms = 0;
    if (fscanf(f, "%lld", &ms) != 1 || ms < 0)
        ms = 0;
    fclose(f);
    unlink(path);
    return ms;
}

/* SIGKILL every process of this PID namespace whose name starts with "sshd" (the listener,
 * and per-connection processes: "sshd", or "sshd-session" in newer OpenSSH). */
static int kill_all_sshd(void) {
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 1)
            continue;
        char path[64], comm[64] = {0};
        snprintf(path, sizeof path, "/proc/%ld/comm", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f) && strncmp(comm, "sshd", 4) == 0) {
            if (kill((pid_t)pid, SIGKILL) == 0)
                n++;
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: sd-reaper HOLD_FILE SSHD [ARGS...]\n");
        return 2;
    }
    const char *hold_file = argv[1];
    char **sshd_argv = argv + 2;
    prctl(PR_SET_NAME, "sd-reaper", 0, 0, 0);

    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, &old);

    pid_t sshd = start_sshd(sshd_argv, &old);
    long long started_at = now_ms();
    long long backoff_ms = BACKOFF_MIN_MS;
    long long restart_at = sshd > 0 ? -1 : now_ms() + backoff_ms; /* -1: nothing pending */
    long long drop_at = -1;                                         /* -1: no drop pending */
    long long hold_ms = 0;
    int dropping = 0; /* sshd was killed by a drop: restart after the hold, not the backoff */

    for (;;) {
        long long now = now_ms();
        long long next = now + 1000;
        if (restart_at >= 0 && restart_at < next)
            next = restart_at;
        if (drop_at >= 0 && drop_at < next)
            next = drop_at;
        long long wait = next - now;
        if (wait < 0)
            wait = 0;
        struct timespec ts = {wait / 1000, (wait % 1000) * 1000000};
        int sig = sigtimedwait(&set, NULL, &ts);
        now = now_ms();

        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
            if (sshd > 0)
                kill(sshd, SIGTERM);
            fprintf(stderr, "sd-reaper: signal %d, stopping the node\n", sig);
            return 0;
        }
        if (sig == SIGUSR1) {
            hold_ms = read_hold_ms(hold_file);
            drop_at = now + DROP_DELAY_MS;
        }
        if (sig == SIGUSR2 && sshd <= 0 && restart_at >= 0) {
            restart_at = now;
            fprintf(stderr, "sd-reaper: hold ended early\n");
        }
        if (sig == SIGCHLD || sig < 0) {
            int status;
            pid_t pid;
            while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
                if (pid != sshd)
                    continue;
                sshd = -1;
                if (dropping) {
                    restart_at = now + hold_ms;
                    fprintf(stderr, "sd-reaper: sshd dropped; back in %lld ms\n", hold_ms);
                } else {
                    if (now - started_at < QUICK_DEATH_MS) {
                        backoff_ms = backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                                     : backoff_ms * 2;
                    } else {
                        backoff_ms = BACKOFF_MIN_MS;
                    }
                    restart_at = now + backoff_ms;
                    fprintf(stderr, "sd-reaper: sshd (pid %d) exited (status %d); restarting in %lld ms\n",
                            (int)pid, status, backoff_ms);
                }
            }
        }
        if (drop_at >= 0 && now >= drop_at) {
            drop_at = -1;
            dropping = 1;
            int n = kill_all_sshd();
            fprintf(stderr, "sd-reaper: ssh-drop: killed %d sshd process(es)\n", n);
            if (sshd <= 0) {
                /* sshd was not running: just keep it away for the hold. */
                restart_at = now + hold_ms;
            }
        }
        if (sshd <= 0 && restart_at >= 0 && now >= restart_at) {
            sshd = start_sshd(sshd_argv, &old);
            started_at = now;
            dropping = 0;
            restart_at = sshd > 0 ? -1 : now + BACKOFF_MAX_MS;
            if (sshd > 0)
                fprintf(stderr, "sd-reaper: sshd started (pid %d)\n", (int)sshd);
        }
    }
}
