/* Time, checksums and durable files, for every layer. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "core/mn_core.h"

/* Durations and deadlines: the monotonic clock, which an NTP step or a
 * resumed VM does not move, so that no watchdog fires early or late. */
double mn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* What other hosts read (the lock's lease): the wall clock, which NTP keeps
 * the same across hosts. */
double mn_wall(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

int mn_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

uint64_t mn_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; ++i) { h ^= b[i]; h *= 1099511628211ULL; }
    return h;
}

int mn_tmp_path(const mn_comm *c, char *buf, size_t n, const char *path)
{
    long pid = getpid(), tid = syscall(SYS_gettid);
    int k = tid == pid ? snprintf(buf, n, "%s.tmp.%s.%ld", path, c->host, pid)
                       : snprintf(buf, n, "%s.tmp.%s.%ld.%ld", path, c->host, pid, tid);
    return k > 0 && (size_t)k < n;
}

/* once: link instead of rename, which leaves a file already at path.
 * quiet: no message (errno keeps the cause), for a caller that retries. */
static mn_status commit(const mn_comm *c, const char *tmp, const char *path, int once, int quiet, int *written)
{
    int fd = open(tmp, O_RDONLY | O_CLOEXEC);
    int ok = fd >= 0 && fsync(fd) == 0, err = errno;
    if (fd >= 0) close(fd);
    *written = 1;
    if (ok && once) {
        int placed = link(tmp, path) == 0;
        /* A file system without hard links: rename where nothing is there yet. */
        if (!placed && access(path, F_OK) != 0) placed = rename(tmp, path) == 0;
        err = errno;
        remove(tmp);   /* linked: its second name; renamed: already gone */
        if (!placed && access(path, F_OK) == 0) {
            *written = 0;
            return MN_OK;
        }
        ok = placed;
    } else if (ok && rename(tmp, path) != 0) { ok = 0; err = errno; }
    if (!ok) {
        if (!quiet) mn_error(c, "cannot write %s (syncing or renaming %s): %s", path, tmp, strerror(err));
        remove(tmp);
        errno = err;
        return MN_ERR_STORAGE;
    }
    /* The rename lives in the folder: sync it too, before anything older goes. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else slash[slash == dir] = 0;
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ok = d >= 0 && fsync(d) == 0;
    err = errno;
    if (d >= 0) close(d);
    if (!ok) {
        if (!quiet) mn_error(c, "cannot sync folder %s after writing %s: %s", dir, path, strerror(err));
        errno = err;
        return MN_ERR_STORAGE;
    }
    return MN_OK;
}

mn_status mn_commit_file(const mn_comm *c, const char *tmp, const char *path)
{
    int written;
    return commit(c, tmp, path, 0, 0, &written);
}

mn_status mn_commit_file_once(const mn_comm *c, const char *tmp, const char *path, int *written)
{
    return commit(c, tmp, path, 1, 0, written);
}

/* Whether a file system's refusal may pass with time: space or quota freed,
 * a volume remounted, a server back. */
static int passing(int err)
{
    return err == ENOSPC || err == EDQUOT || err == EIO || err == EROFS || err == ESTALE || err == EAGAIN ||
           err == EINTR || err == ETIMEDOUT;
}

mn_status mn_write_retried(const mn_comm *c, const char *what, const char *path, double retry_s,
                           int (*write)(void *arg, const char *tmp), void *arg)
{
    char tmp[4352];
    if (!mn_tmp_path(c, tmp, sizeof tmp, path)) {
        mn_error(c, "%s path too long: %s", what, path);
        return MN_ERR_USER;
    }
    double t0 = mn_now(), wait = 1;
    int failures = 0, err = 0, written;
    for (;;) {
        errno = 0;
        int ok = write(arg, tmp);
        err = errno ? errno : EIO;
        if (ok && commit(c, tmp, path, 0, 1, &written) == MN_OK) break;
        if (ok) err = errno;
        remove(tmp);
        double spent = mn_now() - t0;
        if (err == ENAMETOOLONG) {
            mn_error(c, "cannot write %s %s: %s", what, path, strerror(err));
            return MN_ERR_USER;
        }
        if (!passing(err) || spent + wait > retry_s) {
            mn_error(c, "cannot write %s %s: %s%s; the training's state is lost past the last checkpoint: free "
                     "space or fix the folder, then run the same command again", what, path, strerror(err),
                     failures ? " (retried for the time save_retry allows)" : "");
            return MN_ERR_STORAGE;
        }
        if (failures++ == 0) {
            mn_error(c, "cannot write %s %s: %s; retrying for up to %.0f s (save_retry): free space on its file "
                     "system meanwhile, the state is kept in memory", what, path, strerror(err), retry_s);
        }
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
        wait = wait * 2 > 10 ? 10 : wait * 2;
    }
    if (failures)
        mn_error(c, "wrote %s %s after %d failed tr%s over %.0f s", what, path, failures, failures > 1 ? "ies" : "y",
                 mn_now() - t0);
    return MN_OK;
}
