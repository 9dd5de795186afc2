/* Multi-node checkpoints: everything needed to continue exactly, which stock
 * weights files lose: parameters and running statistics, the momentum Darknet
 * keeps in its update arrays (and double buffering's mean in flight), seen
 * and the iteration. All of it is the same on every rank, so rank 0 alone
 * writes ONE file <dir>/<base>.ckpt-<iteration> and on resume reads it and
 * broadcasts: only rank 0's host needs the backup folder, and a checkpoint
 * resumes on any number of ranks. Files are committed durably (mn_commit_file)
 * under rank 0's lock on the folder. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "mn_internal.h"

#define CKPT_MAGIC "MNCKPT02"
#define MAX_GENERATIONS 256
#define LOCK_NAME ".darknet_mn.lock"

typedef struct {
    char magic[8];
    uint32_t ranks, images;   /* the writer's rank count and images per rank per update */
    uint64_t iteration, seen, nparams, nmomentum;
    uint64_t run;             /* the run that wrote it: pruning touches only its own */
    uint64_t written;         /* ns since the epoch: the newest written is resumed */
} ckpt_header;

size_t mn_checkpoint_bytes(const network *net, mn_optimizer *o)
{
    size_t nmom = 0;
    mn_optimizer_arena(o, &nmom);
    return sizeof(ckpt_header) + (mn_params_count(net) + nmom) * sizeof(float) + sizeof(uint64_t);
}

static void ckpt_path(char *buf, size_t n, const char *dir, const char *base, uint64_t it)
{
    snprintf(buf, n, "%s/%s.ckpt-%llu", dir, base, (unsigned long long)it);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The lock file names the job that owns the folder: host, pid and run id. */
static void write_lock(const mn_comm *c, int fd, uint64_t run)
{
    char line[256];
    int k = snprintf(line, sizeof line, "%s %ld %016llx\n", c->host, (long)getpid(), (unsigned long long)run);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)k, 0) != k)
        mn_error(c, "cannot write the lock file of the backup folder: %s", strerror(errno));
}

static uint64_t lock_run(const char *dir)
{
    char path[4096];
    unsigned long long run = 0;
    snprintf(path, sizeof path, "%s/%s", dir, LOCK_NAME);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%*s %*s %llx", &run) != 1) run = 0;
        fclose(f);
    }
    return run;
}

mn_status mn_backup_lock(mn_comm *c, const char *dir, int *fd)
{
    *fd = -1;
    mn_status s = MN_OK;
    if (c->rank == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, LOCK_NAME);
        int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (f < 0) {
            mn_error(c, "cannot open the lock file %s: %s", path, strerror(errno));
            s = MN_ERR_USER;
        } else if (flock(f, LOCK_EX | LOCK_NB) != 0) {
            int err = errno;
            char who[256] = "", host[128] = "?";
            long pid = 0;
            ssize_t k = pread(f, who, sizeof who - 1, 0);
            who[k > 0 ? k : 0] = 0;
            if (sscanf(who, "%127s %ld", host, &pid) != 2) pid = 0;
            if (err == EWOULDBLOCK)
                mn_error(c, "backup folder %s is in use by another job (host %s, pid %ld); lock file %s", dir, host, pid, path);
            else mn_error(c, "cannot lock %s: %s", path, strerror(err));
            close(f);
            s = err == EWOULDBLOCK ? MN_ERR_REFUSED : MN_ERR_USER;   /* another live job's: exit 3 */
        } else {
            uint64_t run = now_ns();
            run = mn_fnv1a(mn_fnv1a(MN_FNV_SEED, c->host, strlen(c->host)), &run, sizeof run);
            write_lock(c, f, run);
            *fd = f;
        }
    }
    return mn_agree(c, s);
}

void mn_backup_unlock(int fd)
{
    if (fd >= 0) close(fd);   /* closing releases the flock; the file stays for the next job */
}

/* Reads a checkpoint's header, checks that it fits np parameters and nmom
 * optimizer values and that the file has the size they imply; with buf also
 * reads the body and verifies the checksum. 0 with *why when it does not. */
static int read_ckpt(const char *path, size_t np, size_t nmom, ckpt_header *h, float *buf, const char **why)
{
    FILE *f = fopen(path, "rb");
    *why = "is incomplete or corrupt";
    if (!f) return 0;
    struct stat st;
    int ok = fread(h, sizeof *h, 1, f) == 1 && !memcmp(h->magic, CKPT_MAGIC, 8) && fstat(fileno(f), &st) == 0;
    if (ok && (h->nparams != np || h->nmomentum != nmom)) {
        *why = "is for another network or double_buffering setting";
        ok = 0;
    }
    ok = ok && (size_t)st.st_size == sizeof *h + (np + nmom) * sizeof(float) + sizeof(uint64_t);
    if (ok && buf) {
        uint64_t stored = 0;
        ok = fread(buf, sizeof(float), np + nmom, f) == np + nmom && fread(&stored, sizeof stored, 1, f) == 1 &&
             mn_fnv1a(mn_fnv1a(MN_FNV_SEED, h, sizeof *h), buf, (np + nmom) * sizeof(float)) == stored;
    }
    fclose(f);
    return ok;
}

/* Iterations of the files <base>.ckpt-<iteration> in dir (unverified). */
static int list_gens(const char *dir, const char *base, uint64_t *gens, int max)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s.ckpt-", base);
    size_t lp = strlen(prefix);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (strncmp(e->d_name, prefix, lp) || e->d_name[lp] < '0' || e->d_name[lp] > '9') continue;
        char *end;
        unsigned long long it = strtoull(e->d_name + lp, &end, 10);
        if (*end == 0) gens[n++] = it;
    }
    closedir(d);
    return n;
}

/* Rank 0: this run's loadable generations beyond the newest `keep` go. */
static void prune(const mn_comm *c, const char *dir, const char *base, size_t np, size_t nmom,
                  uint64_t run, int keep)
{
    uint64_t gens[MAX_GENERATIONS], written[MAX_GENERATIONS];
    int n = list_gens(dir, base, gens, MAX_GENERATIONS), m = 0;
    if (run == 0) return;   /* the lock file gave no run id: nothing is surely ours */
    for (int i = 0; i < n; ++i) {
        char path[4096];
        ckpt_header h;
        const char *why;
        ckpt_path(path, sizeof path, dir, base, gens[i]);
        if (read_ckpt(path, np, nmom, &h, NULL, &why) && h.run == run) { gens[m] = gens[i]; written[m++] = h.written; }
    }
    for (int i = 0; i < m; ++i) {
        int newer = 0;
        for (int j = 0; j < m; ++j) newer += written[j] > written[i];
        if (newer >= keep) {
            char path[4096];
            ckpt_path(path, sizeof path, dir, base, gens[i]);
            if (remove(path) != 0) mn_error(c, "cannot remove old checkpoint %s: %s", path, strerror(errno));
        }
    }
}

static mn_status save_rank0(mn_comm *c, network *net, mn_optimizer *o, const char *dir, const char *base, int keep)
{
    char path[4096], tmp[4224];
    uint64_t it = mn_base_iteration(net);
    ckpt_path(path, sizeof path, dir, base, it);
    if (!mn_tmp_path(c, tmp, sizeof tmp, path)) { mn_error(c, "checkpoint path too long: %s", path); return MN_ERR_USER; }
    size_t nmom = 0, np = mn_params_count(net);
    float *mom = mn_optimizer_host_state(o, net, 0, &nmom);
    uint64_t run = lock_run(dir);
    mn_net_info in = mn_net_get(net);
    ckpt_header h = {{0}, (uint32_t)c->size, (uint32_t)(in.batch * in.subdivisions), it, mn_net_seen(net),
                     np, nmom, run, now_ns()};
    memcpy(h.magic, CKPT_MAGIC, 8);
    /* The same layout read_ckpt expects: header, parameters, momentum, checksum. */
    float *buf = malloc((np + nmom + 1) * sizeof(float));
    FILE *f = buf ? fopen(tmp, "wb") : NULL;
    if (!f) {
        mn_error(c, "cannot write checkpoint %s: %s", tmp, buf ? strerror(errno) : "out of memory");
        free(buf);
        return MN_ERR_USER;
    }
    mn_params_pack(net, buf);
    memcpy(buf + np, mom, nmom * sizeof(float));
    uint64_t sum = mn_fnv1a(mn_fnv1a(MN_FNV_SEED, &h, sizeof h), buf, (np + nmom) * sizeof(float));
    int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(buf, sizeof(float), np + nmom, f) == np + nmom;
    ok = ok && fwrite(&sum, sizeof sum, 1, f) == 1;
    ok = (fclose(f) == 0) && ok;
    free(buf);
    if (!ok) {
        mn_error(c, "writing checkpoint %s failed: %s", tmp, strerror(errno));
        remove(tmp);
        return MN_ERR_USER;
    }
    MN_CHECK(mn_commit_file(c, tmp, path));
    if (keep > 0) prune(c, dir, base, np, nmom, run, keep);
    return MN_OK;
}

mn_status mn_checkpoint_save(mn_comm *c, network *net, mn_optimizer *o, const char *dir,
                             const char *base, int keep)
{
    return mn_agree(c, c->rank == 0 ? save_rank0(c, net, o, dir, base, keep) : MN_OK);
}

/* Rank 0: the most recently written checkpoint that verifies, into buf and *h;
 * the others are reported and skipped. 0 when there is none. */
static int find_rank0(const mn_comm *c, const char *dir, const char *base, size_t np, size_t nmom,
                      float *buf, ckpt_header *h, char *path, size_t cap)
{
    uint64_t gens[MAX_GENERATIONS], written[MAX_GENERATIONS];
    int n = list_gens(dir, base, gens, MAX_GENERATIONS), m = 0;
    const char *why;
    for (int i = 0; i < n; ++i) {
        ckpt_path(path, cap, dir, base, gens[i]);
        if (read_ckpt(path, np, nmom, h, NULL, &why)) { gens[m] = gens[i]; written[m++] = h->written; }
        else mn_error(c, "checkpoint %s %s: skipped", path, why);
    }
    while (m > 0) {
        int best = 0;
        for (int i = 1; i < m; ++i) if (written[i] > written[best]) best = i;
        ckpt_path(path, cap, dir, base, gens[best]);
        if (read_ckpt(path, np, nmom, h, buf, &why)) return 1;
        mn_error(c, "checkpoint %s %s: skipped", path, why);
        gens[best] = gens[m - 1];
        written[best] = written[--m];
    }
    return 0;
}

mn_status mn_checkpoint_resume(mn_comm *c, network *net, mn_optimizer *o, const char *dir,
                               const char *base, int lock_fd, mn_resumed *r)
{
    memset(r, 0, sizeof *r);
    size_t np = mn_params_count(net), nmom = 0;
    float *state = mn_optimizer_arena(o, &nmom);
    float *buf = malloc((np + nmom + 1) * sizeof(float));
    ckpt_header h = {{0}, 0, 0, 0, 0, 0, 0, 0, 0};
    mn_status s = buf ? MN_OK : MN_ERR_NOMEM;
    if (s == MN_OK && c->rank == 0 && find_rank0(c, dir, base, np, nmom, buf, &h, r->path, sizeof r->path)) {
        r->found = 1;
        if (lock_fd >= 0) write_lock(c, lock_fd, h.run);   /* this run continues the checkpoint's */
    }
    s = mn_agree(c, s);
    uint64_t info[4] = {(uint64_t)r->found, h.iteration, h.ranks, (uint64_t)h.ranks * h.images};
    if (s == MN_OK && MPI_Bcast(info, 4, MPI_UINT64_T, 0, c->world) != MPI_SUCCESS) {
        mn_error(c, "broadcasting the checkpoint's header failed");
        s = MN_ERR_MPI;
    }
    if (s == MN_OK && info[0]) s = mn_bcast_floats(c, buf, np + nmom);
    if (s == MN_OK && info[0]) {
        mn_params_unpack(net, buf);
        memcpy(state, buf + np, nmom * sizeof(float));
        mn_optimizer_host_state(o, net, 1, &nmom);
        /* The iteration (the schedule) is kept; seen follows this job's global batch. */
        mn_net_info in = mn_net_get(net);
        mn_net_set_seen(net, (size_t)info[1] * (size_t)in.batch * in.subdivisions * c->size);
        mn_base_set_iteration(net, (size_t)info[1]);
        r->found = 1;
        r->iteration = info[1];
        r->ranks = (int)info[2];
        r->batch = info[3];
    }
    free(buf);
    return s;
}
