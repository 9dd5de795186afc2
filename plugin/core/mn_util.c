/* Time, checksums and durable files, for every layer. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
#include "mn_core.h"

double mn_now(void)
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

/* once: link instead of rename, which leaves a file already at path. */
static mn_status commit(const mn_comm *c, const char *tmp, const char *path, int once, int *written)
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
        mn_error(c, "cannot write %s (syncing or renaming %s): %s", path, tmp, strerror(err));
        remove(tmp);
        return MN_ERR_USER;
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
        mn_error(c, "cannot sync folder %s after writing %s: %s", dir, path, strerror(err));
        return MN_ERR_USER;
    }
    return MN_OK;
}

mn_status mn_commit_file(const mn_comm *c, const char *tmp, const char *path)
{
    int written;
    return commit(c, tmp, path, 0, &written);
}

mn_status mn_commit_file_once(const mn_comm *c, const char *tmp, const char *path, int *written)
{
    return commit(c, tmp, path, 1, written);
}
