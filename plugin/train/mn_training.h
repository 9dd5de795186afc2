/* Training's public side: options, loading, the optimizer, weights files,
 * path lists, mAP and batch-norm statistics (part of darknet_mn.h). */
#ifndef MN_TRAINING_H
#define MN_TRAINING_H

#include <stddef.h>
#include <stdint.h>
#include "core/mn_status.h"

typedef struct network network;

/* What a network is trained for: its data and evaluation follow. */
typedef enum { MN_TASK_CLASSIFIER, MN_TASK_DETECTOR } mn_task;

/* The cfg's [distributed] options: each field is the key of its name or
 * abbreviation (mn_options.c's table says what it sets; docs/config.md).
 * -1 in an int that may be empty: decided by mn_options_resolve or later. */
typedef struct {
    char communicator[32];
    int grad_dtype_half;     /* allreduce_grad_dtype=float16 */
    int double_buffering;
    int dbuf_fresh;
    int dbuf_local;
    int dbuf_handover;
    double dbuf_compensation;
    double dbuf_prediction;
    int overlap;
    double bucket_mb;
    char timeline[4096];
    int bn_average;
    int sync_bn;
    int eval_interval;
    int eval_epochs;         /* not a key: -map's epochs, where eval_interval is 0 */
    char eval_list[4096];
    int deterministic;
    int shuffle;
    int seed;
    int backup_interval;
    int save_interval;
    int checkpoint_interval;
    double checkpoint_minutes;
    int checkpoint_keep;
    int nonfinite_skip;      /* nonfinite=skip */
    int bad_labels_skip;     /* bad_labels=skip */
    int collective_timeout;
    int lock_lease;
    int chart;
    int cache_mb;
    int global_batch;        /* MN_GLOBAL_BATCH_* */
    int rescue;
    int save_retry;
} mn_options;
/* How long a save is retried: save_retry, within 80% of
 * collective_timeout, since the other ranks wait for it under the watchdog. */
double mn_save_retry_s(const mn_options *o);
/* global_batch= keep, strict, cfg (docs/config.md). */
enum { MN_GLOBAL_BATCH_KEEP, MN_GLOBAL_BATCH_STRICT, MN_GLOBAL_BATCH_CFG };

/* The defaults; mn_load_network gives the cfg's options. */
void mn_default_options(mn_options *opt);
/* One [distributed] key=value into opt: 1, or 0 with what is wrong in why
 * (the cfg's reader adds the file and line). */
int mn_option_set(mn_options *opt, const char *key, const char *value, char *why, size_t cap);
/* Key i's line of info's listing, "key=default | values | what it sets"; NULL past the last. */
const char *mn_option_line(size_t i, char *buf, size_t cap);
/* Once every key is read: the defaults that depend on other keys. NULL,
 * or the key whose value the others refuse, with why. */
const char *mn_options_resolve(mn_options *opt, char *why, size_t cap);
/* Before MPI_Init, to choose the thread level: whether cfgfile asks for
 * double_buffering=1 or overlap=1, which average on a thread. */
int mn_cfg_wants_threads(const char *cfgfile);
/* Key's value in cfgfile's [distributed] section, before MPI_Init; 0 when
 * the file or key is missing. */
int mn_cfg_peek(const char *cfgfile, const char *key, char *out, size_t cap);

/* Loads the network on every rank from the cfg mn_cfg_read checked, with
 * its [distributed] options in opt (may be NULL); rank 0 alone reads the
 * weights file, checked against the cfg, and broadcasts the parameters,
 * running statistics and seen. MN_LOAD_CLEAR sets seen to 0;
 * MN_LOAD_BATCH1 parses at batch 1 for inference, since a later
 * set_batch_network leaves cuDNN's descriptors sized for another batch. */
enum { MN_LOAD_CLEAR = 1, MN_LOAD_BATCH1 = 2 };
mn_status mn_load_network(mn_comm *c, const char *cfgfile, const char *weightfile,
                          int flags, network **out, mn_options *opt);

/* Attaches the multi-node optimizer: update_network averages the gradients
 * over all ranks, and seen counts the global batch. */
typedef struct mn_optimizer mn_optimizer;
mn_status mn_attach(mn_comm *c, network *net, const mn_options *opt, mn_optimizer **out);
void mn_detach(network *net, mn_optimizer *o);

/* Bytes of a weights file written for net, header included. */
size_t mn_weights_bytes(const network *net);
/* Rank 0: checks a weights file against the cfg before loading it. */
mn_status mn_check_weights_file(const mn_comm *c, const network *net, const char *path);
/* Rank 0: writes to a temporary name, checks its size and renames; a
 * refusal of the file system is retried for up to retry_s seconds. */
mn_status mn_save_weights(const mn_comm *c, network *net, const char *path, double retry_s);

/* Path lists: rank 0 reads the list file and, with shuffle, permutes it
 * with seed; then it is scattered in near-equal contiguous shards or sent
 * whole. */
typedef struct {
    char **paths;
    size_t n;
    size_t global_n;   /* length of the whole list */
    size_t offset;     /* index of paths[0] in the (shuffled) whole list */
    uint64_t digest;   /* an order-free sum of its paths' FNV-1a */
} mn_list;
mn_status mn_scatter_list(mn_comm *c, const char *listfile, int shuffle, int seed, mn_list *out);
mn_status mn_bcast_list(mn_comm *c, const char *listfile, int shuffle, int seed, mn_list *out);
void mn_free_list(mn_list *l);
/* Shard bounds: rank r of size gets [start, start+count) of n items. */
void mn_shard_bounds(size_t n, int size, int r, size_t *start, size_t *count);
/* Deterministic Fisher-Yates permutation of n items from seed. */
void mn_shuffle_paths(char **paths, size_t n, int seed);
/* The seed of a random stream (stream r: rank r's data; -1: the job's
 * input sizes) for one iteration's batch, so that a resumed run draws what
 * an uninterrupted one would have, not its first batches again. */
unsigned mn_stream_seed(int seed, int stream, size_t iteration);

/* A detection (prob > 0) or a ground-truth box (prob ignored) of class
 * cls in image img; corners in any one unit per image. */
typedef struct {
    int img, cls;
    float prob;
    float x0, y0, x1, y1;
} mn_box;
/* VOC 2010+ mAP at an IoU threshold (mn_voc.c says how boxes match). ap[k]
 * gets class k's AP, -1 for a class without truth; -1 without any truth. */
double mn_voc_map(const mn_box *dets, size_t ndets, const mn_box *truth, size_t ntruth,
                  int classes, float iou_thresh, double *ap);

/* Collective: batch-norm running statistics averaged over all ranks
 * (bn_average), or rank 0's copied to every rank. o: the optimizer the
 * network trains with, whose copies of them count too, or NULL. */
mn_status mn_average_bn_stats(mn_comm *c, network *net, mn_optimizer *o);
mn_status mn_bcast_bn_stats(mn_comm *c, network *net, mn_optimizer *o);
/* sync_bn=1: batch norm in training normalizes with the global batch's
 * mean and variance (patch 0005's hook); otherwise removes the hook. */
mn_status mn_attach_sync_bn(mn_comm *c, network *net, const mn_options *opt);
/* Collective: averages the running statistics first with bn_average (mo:
 * as mn_average_bn_stats's o); rank 0 writes path atomically. */
mn_status mn_save_weights_all(mn_comm *c, network *net, mn_optimizer *mo, const mn_options *opt, const char *path);

#endif
