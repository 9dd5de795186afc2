/* Multi-node checkpoints: everything needed to continue exactly, which stock
 * weights files lose: parameters and running statistics, the momentum Darknet
 * keeps in its update arrays, seen and the iteration. Every rank writes its
 * own file <dir>/<base>.ckpt-<iteration>.r<rank> (so hosts without a shared
 * file system each hold a copy), to a temporary name, fsync'ed and renamed,
 * with a checksum. On start every rank lists the generations it can load and
 * the job resumes from the newest one that all ranks hold intact. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mn_internal.h"

#define CKPT_MAGIC "MNCKPT01"
#define MAX_GENERATIONS 256

typedef struct {
    char magic[8];
    uint32_t rank, size;
    uint64_t iteration, seen, nparams, nmomentum;
} ckpt_header;

size_t mn_checkpoint_bytes(const network *net, mn_optimizer *o)
{
    size_t nmom = 0;
    mn_optimizer_arena(o, &nmom);
    return sizeof(ckpt_header) + (mn_params_count(net) + nmom) * sizeof(float) + sizeof(uint64_t);
}

static void ckpt_path(char *buf, size_t n, const char *dir, const char *base, uint64_t it, int rank)
{
    snprintf(buf, n, "%s/%s.ckpt-%llu.r%d", dir, base, (unsigned long long)it, rank);
}


mn_status mn_checkpoint_save(mn_comm *c, network *net, mn_optimizer *o, const char *dir,
                             const char *base, int keep)
{
    char path[4096], tmp[4160];
    uint64_t it = get_current_batch(net);
    ckpt_path(path, sizeof path, dir, base, it, c->rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    size_t nmom = 0, np = mn_params_count(net);
    float *mom = mn_optimizer_host_state(o, net, 0, &nmom);
    ckpt_header h = {{0}, (uint32_t)c->rank, (uint32_t)c->size, it, *net->seen, np, nmom};
    memcpy(h.magic, CKPT_MAGIC, 8);
    mn_status s = MN_OK;
    /* The same layout read_ckpt expects: header, parameters, momentum, checksum. */
    float *buf = malloc((np + nmom + 1) * sizeof(float));
    FILE *f = buf ? fopen(tmp, "wb") : NULL;
    if (!f) {
        mn_error(c, "cannot write checkpoint %s: %s", tmp, buf ? strerror(errno) : "out of memory");
        s = MN_ERR_USER;
    } else {
        mn_params_pack(net, buf);
        memcpy(buf + np, mom, nmom * sizeof(float));
        uint64_t sum = mn_fnv1a(mn_fnv1a(MN_FNV_SEED, &h, sizeof h), buf, (np + nmom) * sizeof(float));
        int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(buf, sizeof(float), np + nmom, f) == np + nmom;
        ok = ok && fwrite(&sum, sizeof sum, 1, f) == 1;
        ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
        ok = (fclose(f) == 0) && ok;
        if (!ok || rename(tmp, path) != 0) {
            mn_error(c, "writing checkpoint %s failed: %s", path, strerror(errno));
            remove(tmp);
            s = MN_ERR_USER;
        }
    }
    free(buf);
    MN_CHECK(mn_agree(c, s));
    /* Generations older than the newest `keep` go, once every rank has the new one. */
    if (keep > 0) {
        uint64_t gens[MAX_GENERATIONS];
        int n = mn_checkpoint_list(c, dir, base, gens, MAX_GENERATIONS);
        for (int i = 0; i < n; ++i) {
            int newer = 0;
            for (int j = 0; j < n; ++j) newer += gens[j] > gens[i];
            if (newer >= keep) {
                ckpt_path(path, sizeof path, dir, base, gens[i], c->rank);
                remove(path);
            }
        }
    }
    return MN_OK;
}

/* Reads and verifies one checkpoint; with net non-NULL also loads it. */
static int read_ckpt(const mn_comm *c, const char *path, network *net, mn_optimizer *o, int verbose)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    ckpt_header h;
    size_t np = mn_params_count(net), nmom = 0;
    float *mom = mn_optimizer_arena(o, &nmom);
    int ok = fread(&h, sizeof h, 1, f) == 1 && !memcmp(h.magic, CKPT_MAGIC, 8) &&
             h.rank == (uint32_t)c->rank && h.size == (uint32_t)c->size && h.nparams == np && h.nmomentum == nmom;
    float *buf = ok ? malloc((np + nmom + 1) * sizeof(float)) : NULL;
    ok = ok && buf && fread(buf, sizeof(float), np + nmom, f) == np + nmom;
    uint64_t stored = 0, sum = mn_fnv1a(MN_FNV_SEED, &h, sizeof h);
    ok = ok && fread(&stored, sizeof stored, 1, f) == 1 && fgetc(f) == EOF;
    fclose(f);
    if (ok) {
        sum = mn_fnv1a(sum, buf, (np + nmom) * sizeof(float));
        ok = sum == stored;
    }
    if (!ok && verbose) mn_error(c, "checkpoint %s is incomplete, corrupt or from another job layout: skipped", path);
    if (ok && verbose > 1) {
        mn_params_unpack(net, buf);
        memcpy(mom, buf + np, nmom * sizeof(float));
        mn_optimizer_host_state(o, net, 1, &nmom);
        *net->seen = (size_t)h.seen;
        *net->t = (int)h.iteration;
    }
    free(buf);
    return ok;
}

int mn_checkpoint_list(const mn_comm *c, const char *dir, const char *base, uint64_t *gens, int max)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    char prefix[512], suffix[32];
    snprintf(prefix, sizeof prefix, "%s.ckpt-", base);
    snprintf(suffix, sizeof suffix, ".r%d", c->rank);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t lp = strlen(prefix), ls = strlen(suffix), le = strlen(e->d_name);
        if (le <= lp + ls || strncmp(e->d_name, prefix, lp) || strcmp(e->d_name + le - ls, suffix)) continue;
        char *end;
        unsigned long long it = strtoull(e->d_name + lp, &end, 10);
        if (end != e->d_name + le - ls) continue;
        gens[n++] = it;
    }
    closedir(d);
    return n;
}

mn_status mn_checkpoint_resume(mn_comm *c, network *net, mn_optimizer *o, const char *dir,
                               const char *base, int *resumed)
{
    *resumed = 0;
    uint64_t gens[MAX_GENERATIONS], best = 0;
    int n = mn_checkpoint_list(c, dir, base, gens, MAX_GENERATIONS);
    /* Newest first; each rank offers the generations it can actually load. */
    int have = 0;
    uint64_t ok[MAX_GENERATIONS];
    for (int i = 0; i < n; ++i) {
        char path[4096];
        ckpt_path(path, sizeof path, dir, base, gens[i], c->rank);
        if (read_ckpt(c, path, net, o, 1)) ok[have++] = gens[i] + 1;   /* +1: 0 means none */
    }
    /* The newest generation every rank holds: walk down from each rank's best. */
    uint64_t cand = 0;
    for (int i = 0; i < have; ++i) if (ok[i] > cand) cand = ok[i];
    for (;;) {
        uint64_t lo = cand;
        MN_MPI(c, MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, c->world));
        if (lo == 0) return MN_OK;   /* some rank has none: start fresh */
        int mine = 0;
        for (int i = 0; i < have; ++i) mine |= ok[i] == lo;
        int all = 0;
        MN_MPI(c, MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, c->world));
        if (all) { best = lo - 1; break; }
        /* lo is missing somewhere: everyone moves to its newest below lo. */
        uint64_t next = 0;
        for (int i = 0; i < have; ++i) if (ok[i] < lo && ok[i] > next) next = ok[i];
        cand = next;
    }
    char path[4096];
    ckpt_path(path, sizeof path, dir, base, best, c->rank);
    mn_status s = read_ckpt(c, path, net, o, 2) ? MN_OK : MN_ERR_USER;
    MN_CHECK(mn_agree(c, s));
    if (c->rank == 0) printf("darknet-mn: resumed from checkpoint %s/%s.ckpt-%llu (iteration %llu, %zu images seen)\n",
                             dir, base, (unsigned long long)best, (unsigned long long)best, *net->seen);
    *resumed = 1;
    return MN_OK;
}
