/* Path lists. Rank 0 alone reads the list file and (optionally) shuffles it;
 * the paths then travel as one packed block of NUL-terminated strings, either
 * in near-equal contiguous shards (scatter) or whole (broadcast). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/input/mn_input.h"

void mn_shard_bounds(size_t n, int size, int r, size_t *start, size_t *count)
{
    size_t q = n / (size_t)size, rem = n % (size_t)size, ur = (size_t)r;
    *start = ur * q + (ur < rem ? ur : rem);
    *count = q + (ur < rem);
}

/* splitmix64: a small, well-mixed generator; same seed, same permutation on
 * every machine (rand() is not portable across libcs). */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void mn_shuffle_paths(char **paths, size_t n, int seed)
{
    uint64_t s = (uint64_t)(unsigned)seed;
    for (size_t i = n; i > 1; --i) {
        size_t j = (size_t)(next_u64(&s) % i);
        char *t = paths[i - 1]; paths[i - 1] = paths[j]; paths[j] = t;
    }
}

/* Three splitmix64 steps fold seed, stream and iteration into one value,
 * with no int product that can overflow. */
unsigned mn_stream_seed(int seed, int stream, size_t iteration)
{
    uint64_t s = (uint64_t)(unsigned)seed;
    s = next_u64(&s) ^ (uint64_t)(unsigned)stream;
    s = next_u64(&s) ^ (uint64_t)iteration;
    return (unsigned)(next_u64(&s) >> 32);
}

static void free_paths(char **v, size_t n);

/* Reads non-empty lines; trailing CR/LF and spaces are dropped. A NUL byte
 * (a binary or UTF-16 file) is an error rather than a cut path. */
static mn_status read_list(const mn_comm *c, const char *file, char ***out, size_t *n)
{
    FILE *fp = fopen(file, "r");
    if (!fp) { mn_error(c, "cannot open list %s: %s", file, strerror(errno)); return MN_ERR_USER; }
    size_t cap = 1024, k = 0;
    char **v = malloc(cap * sizeof *v);
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    size_t lineno = 0, nul_line = 0;
    while (v && (len = getline(&line, &lcap, fp)) >= 0) {
        ++lineno;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ')) line[--len] = 0;
        if (len == 0) continue;
        if (strlen(line) != (size_t)len) { nul_line = lineno; break; }
        if (k == cap) {
            char **w = realloc(v, (cap *= 2) * sizeof *v);
            if (!w) { free(v); v = NULL; break; }
            v = w;
        }
        v[k++] = strdup(line);
    }
    free(line);
    fclose(fp);
    if (!v) { mn_error(c, "out of memory reading %s", file); return MN_ERR_NOMEM; }
    if (nul_line) {
        free_paths(v, k);
        mn_error(c, "list %s: line %zu holds a NUL byte; a list is text, one path a line", file, nul_line);
        return MN_ERR_USER;
    }
    if (k == 0) { free(v); mn_error(c, "list %s is empty", file); return MN_ERR_USER; }
    *out = v;
    *n = k;
    return MN_OK;
}

static char *pack(char **paths, size_t n, size_t *bytes)
{
    size_t b = 0;
    for (size_t i = 0; i < n; ++i) b += strlen(paths[i]) + 1;
    char *buf = malloc(b + 1), *p = buf;
    if (!buf) return NULL;
    for (size_t i = 0; i < n; ++i) { size_t l = strlen(paths[i]) + 1; memcpy(p, paths[i], l); p += l; }
    *bytes = b;
    return buf;
}

static mn_status unpack(const mn_comm *c, const char *buf, size_t bytes, size_t n, mn_list *out)
{
    out->paths = malloc((n + 1) * sizeof(char *));
    if (!out->paths) { mn_error(c, "out of memory for %zu paths", n); return MN_ERR_NOMEM; }
    const char *p = buf;
    for (size_t i = 0; i < n; ++i) {
        out->paths[i] = strdup(p);
        p += strlen(p) + 1;
    }
    (void)bytes;
    out->n = n;
    return MN_OK;
}

/* Rank 0 reads and shuffles; everyone learns the length (0 = failed) and
 * the digest (an order-free sum, so a reordered list is the same data). */
static mn_status read_on_root(mn_comm *c, const char *file, int shuffle, int seed,
                              char ***all, uint64_t *n, uint64_t *digest)
{
    mn_status s = MN_OK;
    size_t k = 0;
    uint64_t head[2] = {0, 0};
    if (c->rank == 0) {
        s = read_list(c, file, all, &k);
        for (size_t i = 0; s == MN_OK && i < k; ++i) head[1] += mn_fnv1a(MN_FNV_SEED, (*all)[i], strlen((*all)[i]));
        if (s == MN_OK && shuffle) mn_shuffle_paths(*all, k, seed);
        if (s == MN_OK && k < (size_t)c->size) {
            mn_error(c, "list %s has %zu paths, fewer than the %d ranks", file, k, c->size);
            s = MN_ERR_USER;
        }
    }
    s = mn_agree(c, s);
    if (s != MN_OK) {   /* a list too short for the ranks was read: free it */
        if (*all) free_paths(*all, k);
        *all = NULL;
        return s;
    }
    head[0] = k;
    MN_MPI(c, MPI_Bcast(head, 2, MPI_UINT64_T, 0, c->world));
    *n = head[0];
    *digest = head[1];
    return MN_OK;
}

static void free_paths(char **v, size_t n)
{
    for (size_t i = 0; i < n; ++i) free(v[i]);
    free(v);
}

mn_status mn_scatter_list(mn_comm *c, const char *listfile, int shuffle, int seed, mn_list *out)
{
    memset(out, 0, sizeof *out);
    char **all = NULL;
    uint64_t n = 0, digest = 0;
    MN_CHECK(read_on_root(c, listfile, shuffle, seed, &all, &n, &digest));
    size_t start, count;
    mn_shard_bounds(n, c->size, c->rank, &start, &count);
    /* Byte counts and displacements of each shard in the packed block. */
    int *bytes = calloc((size_t)c->size, sizeof(int)), *displ = calloc((size_t)c->size, sizeof(int));
    char *packed = NULL;
    size_t total = 0;
    mn_status s = bytes && displ ? MN_OK : MN_ERR_NOMEM;
    if (s == MN_OK && c->rank == 0) {
        packed = pack(all, n, &total);
        if (!packed || total > 2147483647u) {
            mn_error(c, "list %s is too large to scatter (%zu bytes)", listfile, total);
            s = MN_ERR_USER;
        }
        for (int r = 0; s == MN_OK && r < c->size; ++r) {
            size_t st, ct, b = 0;
            mn_shard_bounds(n, c->size, r, &st, &ct);
            for (size_t i = st; i < st + ct; ++i) b += strlen(all[i]) + 1;
            bytes[r] = (int)b;
            displ[r] = r ? displ[r - 1] + bytes[r - 1] : 0;
        }
    }
    s = mn_agree(c, s);
    int mine = 0;
    if (s == MN_OK) {
        MN_MPI(c, MPI_Scatter(bytes, 1, MPI_INT, &mine, 1, MPI_INT, 0, c->world));
        char *buf = malloc((size_t)mine + 1);
        MN_MPI(c, MPI_Scatterv(packed, bytes, displ, MPI_CHAR, buf, mine, MPI_CHAR, 0, c->world));
        s = unpack(c, buf, (size_t)mine, count, out);
        free(buf);
    }
    if (c->rank == 0) free_paths(all, n);
    free(packed);
    free(bytes);
    free(displ);
    out->global_n = n;
    out->offset = start;
    out->digest = digest;
    return mn_agree(c, s);
}

mn_status mn_bcast_list(mn_comm *c, const char *listfile, int shuffle, int seed, mn_list *out)
{
    memset(out, 0, sizeof *out);
    char **all = NULL;
    uint64_t n = 0, digest = 0;
    MN_CHECK(read_on_root(c, listfile, shuffle, seed, &all, &n, &digest));
    uint64_t total = 0;
    char *packed = NULL;
    if (c->rank == 0) {
        size_t t = 0;
        packed = pack(all, n, &t);
        total = packed ? t : 0;
        free_paths(all, n);
    }
    MN_MPI(c, MPI_Bcast(&total, 1, MPI_UINT64_T, 0, c->world));
    if (total == 0) { mn_error(c, "out of memory packing %s", listfile); return MN_ERR_NOMEM; }
    if (c->rank != 0) packed = malloc(total);
    for (uint64_t done = 0; done < total;) {
        int m = total - done > (1u << 30) ? (1 << 30) : (int)(total - done);
        MN_MPI(c, MPI_Bcast(packed + done, m, MPI_CHAR, 0, c->world));
        done += (uint64_t)m;
    }
    mn_status s = unpack(c, packed, total, n, out);
    free(packed);
    out->global_n = n;
    out->offset = 0;
    out->digest = digest;
    return mn_agree(c, s);
}

void mn_free_list(mn_list *l)
{
    if (l->paths) free_paths(l->paths, l->n);
    memset(l, 0, sizeof *l);
}
