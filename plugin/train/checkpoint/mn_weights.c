/* Weights files: the size check against the cfg, atomic saves, loading a
 * network and the start-up broadcast from rank 0. */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "train/checkpoint/mn_checkpoint.h"
#include "base/mn_base.h"
#include "engine/mn_engine.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"

/* Bytes that load_weights reads for each layer (dontload / dontloadscales
 * honoured), into bytes[0 .. layers). */
static void load_bytes(const network *net, size_t *bytes)
{
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v);) bytes[v.layer] += v.n * sizeof(float);
    for (int i = 0; i < mn_net_layers(net); ++i) {
        mn_layer_info l = mn_layer_get(net, i);
        if (l.dontload) bytes[i] = 0;
        else if ((l.kind == MN_LAYER_CONVOLUTIONAL || l.kind == MN_LAYER_DECONVOLUTIONAL) && l.batch_normalize &&
                 l.dontloadscales)
            bytes[i] -= 3 * (size_t)l.n * sizeof(float);
    }
}

#define HEADER_BYTES (3 * sizeof(int) + sizeof(size_t))

size_t mn_weights_bytes(const network *net)
{
    size_t b = HEADER_BYTES;
    int skip = 0;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v);) {
        if (v.index == 0) skip = mn_layer_get(net, v.layer).dontsave;
        if (!skip) b += v.n * sizeof(float);
    }
    return b;
}

/* A file may hold fewer layers than the cfg (a pretrained backbone: the
 * rest keep their init), but it must end on a layer boundary and not pass
 * the network's end. */
mn_status mn_check_weights_file(const mn_comm *c, const network *net, const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) { mn_error(c, "cannot open weights file %s: %s", path, strerror(errno)); return MN_ERR_USER; }
    int hdr[3] = {0, 0, 0};
    size_t got = fread(hdr, sizeof(int), 3, fp);
    struct stat st;
    int ok = fstat(fileno(fp), &st) == 0;
    fclose(fp);
    if (!ok || got != 3) { mn_error(c, "weights file %s is too short for a header", path); return MN_ERR_USER; }
    /* Darknet writes versions 0.1.0 and 0.2.0; its loader takes major or
     * minor > 1000 for a transposed format no Darknet writes, so anything
     * else is not a weights file. */
    if (hdr[0] < 0 || hdr[1] < 0 || hdr[2] < 0 || hdr[0] > 1000 || hdr[1] > 1000) {
        mn_error(c, "weights file %s has header version %d.%d.%d; Darknet writes 0.1.0 or 0.2.0 (is it a weights file?)",
                 path, hdr[0], hdr[1], hdr[2]);
        return MN_ERR_USER;
    }
    size_t header = (hdr[0] * 10 + hdr[1]) >= 2 ? HEADER_BYTES : 4 * sizeof(int);
    size_t size = (size_t)st.st_size, at = header;
    if (size < header) { mn_error(c, "weights file %s is too short for a header", path); return MN_ERR_USER; }
    size_t *bytes = calloc((size_t)mn_net_layers(net) + 1, sizeof *bytes);
    if (!bytes) { mn_error(c, "out of memory checking weights file %s", path); return MN_ERR_NOMEM; }
    load_bytes(net, bytes);
    int i;
    for (i = 0; i < mn_net_layers(net) && at < size; ++i) {
        if (at + bytes[i] > size) {
            mn_error(c, "weights file %s ends inside layer %d (%zu of its %zu bytes present): it is truncated, "
                     "or holds another network's weights", path, i, size - at, bytes[i]);
            free(bytes);
            return MN_ERR_USER;
        }
        at += bytes[i];
    }
    if (at < size) {
        mn_error(c, "weights file %s does not fit the cfg: %zu bytes left over after all %d layers "
                 "(the file is for a larger network)", path, size - at, mn_net_layers(net));
        free(bytes);
        return MN_ERR_USER;
    }
    if (i < mn_net_layers(net)) {
        int rest = 0;
        for (int j = i; j < mn_net_layers(net); ++j) rest += bytes[j] > 0;
        if (rest)
            fprintf(stderr, "darknet-mn: %s holds layers 0..%d; the %d trainable layers after them keep their initial values\n",
                    path, i - 1, rest);
    }
    free(bytes);
    return MN_OK;
}

/* One try at the weights file: Darknet's writer, which checks nothing,
 * into tmp, its size checked after (mn_write_retried's write). */
typedef struct {
    network *net;
} weights_out;

static int write_weights(void *arg, const char *tmp)
{
    network *net = ((weights_out *)arg)->net;
    FILE *probe = fopen(tmp, "wb");   /* Darknet's own fopen exits on a failure */
    if (!probe) return 0;
    fclose(probe);
    errno = 0;
    mn_base_save_weights(net, tmp, mn_net_layers(net));
    int err = errno;
    struct stat st;
    if (stat(tmp, &st) == 0 && (size_t)st.st_size == mn_weights_bytes(net)) return 1;
    errno = err ? err : ENOSPC;   /* a short file: its flush failed, the usual cause a full disk */
    return 0;
}

mn_status mn_save_weights(const mn_comm *c, network *net, const char *path, double retry_s)
{
    weights_out w = {net};
    return mn_write_retried(c, "weights", path, retry_s, write_weights, &w);
}

mn_status mn_save_weights_all(mn_comm *c, network *net, mn_optimizer *mo, const mn_options *o, const char *path)
{
    if (o->bn_average) MN_CHECK(mn_agree(c, mn_average_bn_stats(c, net, mo)));
    mn_status s = c->rank == 0 ? mn_save_weights(c, net, path, mn_save_retry_s(o)) : MN_OK;
    return mn_agree(c, s);
}

mn_status mn_check_finite_params(const mn_comm *c, network *net, const char *path)
{
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v);) {
        if (v.index == 0) mn_layer_move(mn_net_layer(net, v.layer), 0);
        for (size_t m = 0; m < v.n; ++m)
            if (!isfinite(v.data[m])) {
                mn_error(c, "weights file %s: layer %d holds %g (value %zu of its array %d); every weight must be finite",
                         path, v.layer, v.data[m], m, v.index);
                return MN_ERR_USER;
            }
    }
    return MN_OK;
}

mn_status mn_load_network(mn_comm *c, const char *cfgfile, const char *weightfile,
                          int flags, network **out, mn_options *opt)
{
    *out = NULL;
    mn_blas_threads();   /* before the first gemm of any command */
    /* Darknet's parser exits, warns or crashes on a bad cfg: check first, on every rank. */
    mn_status s = MN_OK;
    mn_options scratch;
    if (!opt) opt = &scratch;
    MN_CHECK(mn_cfg_read(c, cfgfile, opt));

    /* Darknet draws the initial weights with rand(), in whatever state MPI's
     * start left it: from the seed instead, the same weights every run. */
    mn_base_seed(mn_stream_seed(opt->seed, -3, 0));
    network *net = (flags & MN_LOAD_BATCH1) ? mn_base_parse_batch1(cfgfile) : mn_base_parse(cfgfile);
    s = mn_check_net_size(c, net, cfgfile);
    for (int i = 0; i < mn_net_layers(net) && s == MN_OK; ++i) {
        int averaged;
        const char *refused = mn_net_layer_refused(net, i, &averaged);
        if (!averaged) {
            if (c->rank == 0)
                mn_error(c, "%s: layer %d is %s, which darknet-mn cannot average across ranks (%s Darknet)",
                         cfgfile, i, refused, mn_base_name());
            s = MN_ERR_USER;
        } else if (refused) {   /* averaged well, but the base cannot train it */
            if (c->rank == 0)
                mn_error(c, "%s: layer %d is %s; not supported on %s Darknet", cfgfile, i, refused, mn_base_name());
            s = MN_ERR_USER;
        }
    }
    MN_CHECK(mn_agree(c, s));

    if (c->rank == 0 && weightfile && *weightfile) {
        s = mn_check_weights_file(c, net, weightfile);
        if (s == MN_OK) mn_base_load_weights(net, weightfile);
        if (s == MN_OK) s = mn_check_finite_params(c, net, weightfile);
    }
    if (flags & MN_LOAD_CLEAR) mn_net_set_seen(net, 0);
    MN_CHECK(mn_agree(c, s));

    /* One fused broadcast of every parameter and running statistic. */
    size_t total = mn_params_count(net);
    float *buf = malloc((total + 1) * sizeof(float));
    if (!buf) { mn_error(c, "out of memory broadcasting %zu parameters", total); return MN_ERR_NOMEM; }
    if (c->rank == 0) mn_params_pack(net, buf);
    s = mn_bcast_floats(c, buf, total);
    uint64_t seen = mn_net_seen(net);
    if (s == MN_OK) MN_MPI(c, MPI_Bcast(&seen, 1, MPI_UINT64_T, 0, c->world));
    if (s == MN_OK && c->rank != 0) mn_params_unpack(net, buf);
    free(buf);
    MN_CHECK(s);
    /* Darknet updates when seen reaches a multiple of the global batch: a file
     * from stock Darknet, another rank count or a mid-way backup would update
     * in the middle of a step, each rank with its own unaveraged remainder. */
    mn_net_info in = mn_net_get(net);
    uint64_t global = (uint64_t)in.batch * in.subdivisions * c->size;
    if (seen % global) {
        if (c->rank == 0)
            printf("darknet-mn: %s: seen %llu is not a multiple of the global batch %llu (%d images x %d ranks): "
                   "rounded down to %llu (iteration %llu)\n", weightfile, (unsigned long long)seen,
                   (unsigned long long)global, in.batch * in.subdivisions, c->size,
                   (unsigned long long)(seen - seen % global), (unsigned long long)(seen / global));
        seen -= seen % global;
    }
    mn_net_set_seen(net, seen);
    mn_dnnl_install(net, c, mn_base_dnnl_ops());
    *out = net;
    return MN_OK;
}

mn_status mn_bcast_floats(mn_comm *c, float *p, size_t n)
{
    for (size_t done = 0; done < n;) {
        int m = n - done > (1u << 30) ? (1 << 30) : (int)(n - done);
        MN_MPI(c, MPI_Bcast(p + done, m, MPI_FLOAT, 0, c->world));
        done += (size_t)m;
    }
    return MN_OK;
}
