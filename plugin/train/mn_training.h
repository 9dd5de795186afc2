/* Training's public side (plugin/train): the cfg's [distributed] options,
 * loading a network on every rank, the multi-node optimizer, weights
 * files, path lists scattered over the ranks, VOC mAP and batch-norm
 * statistics. Part of the public API (darknet_mn.h): a network is an
 * opaque handle here (base/mn_base.h is where Darknet's is defined). */
#ifndef MN_TRAINING_H
#define MN_TRAINING_H

#include <stddef.h>
#include <stdint.h>
#include "mn_status.h"

typedef struct network network;

/* What a network is trained for: its data and evaluation follow. */
typedef enum { MN_TASK_CLASSIFIER, MN_TASK_DETECTOR } mn_task;

/* Options of the cfg's [distributed] section, with their defaults. */
typedef struct {
    char communicator[32];   /* naive | flat | ... | auto (the default) */
    int grad_dtype_half;     /* allreduce_grad_dtype=float16 */
    int double_buffering;
    int dbuf_fresh;          /* double_buffering_fresh: iterations averaged fresh before the stale means; -1: burn_in */
    int dbuf_local;          /* double_buffering_local: each rank's own gradient applied fresh (1, the default) */
    /* Corrections of a stale mean, for double_buffering_local=0; -1 until
     * mn_options_resolve: 0 with double_buffering_local=1, else the default. */
    int dbuf_handover;       /* double_buffering_handover: stale steps whose rate climbs back to the cfg's (300); 0: none */
    double dbuf_compensation; /* double_buffering_compensation: delay compensation's lambda (100); 0: none */
    double dbuf_prediction;   /* double_buffering_prediction: weight prediction's k (1); 0: none */
    int overlap;             /* overlap=1: buckets are averaged during backward (optimizer/mn_overlap.h) */
    double bucket_mb;        /* overlap's bucket size in MiB (whole pieces of MN_PIECE_BYTES at least) */
    char timeline[4096];     /* Chrome-trace file of every rank's phases (observe/mn_observe.h); "": none */
    int bn_average;
    int sync_bn;             /* batch norm in training uses the global batch's statistics */
    int eval_interval;       /* iterations between evaluations during training; 0 = never */
    int eval_epochs;         /* not a cfg key: -map's epochs (mn_eval_due), used where eval_interval is 0 */
    char eval_list[4096];    /* evaluated during training; "": the data cfg's valid list */
    int deterministic;       /* global batch = next N*b paths in order, no augmentation */
    int shuffle;             /* rank 0 shuffles the list before scattering */
    int seed;
    int backup_interval;     /* iterations between <backup>/<base>.backup */
    int save_interval;       /* iterations between <backup>/<base>_<iter>.weights */
    int checkpoint_interval; /* iterations between multi-node checkpoints; 0 = none */
    double checkpoint_minutes; /* a checkpoint once this long since the last (rank 0's clock); 0 = none */
    int checkpoint_keep;     /* generations kept */
    int nonfinite_skip;      /* nonfinite=skip: drop an update with NaN/Inf instead of stopping */
    int bad_labels_skip;     /* bad_labels=skip: drop bad detector label lines (counted, the first shown) */
    int collective_timeout;  /* seconds any collective of training may wait for all ranks; 0 = forever */
    int lock_lease;          /* seconds rank 0's lease on the backup folder lasts unrenewed (checkpoint/mn_checkpoint.h) */
    int chart;               /* rank 0 keeps <backup>/<base>_chart.png up to date */
    int cache_mb;            /* MiB of decoded images a rank keeps; -1 = the default (input/mn_input.h) */
    int global_batch;        /* a checkpoint of another rank count: MN_GLOBAL_BATCH_* */
    int rescue;              /* a job losing a rank writes its last completed update (CPU runs) */
    int save_retry;          /* seconds a save the file system refuses is retried (mn_save_retry_s) */
} mn_options;
/* How long a save is retried: save_retry, within 80% of collective_timeout
 * (the other ranks wait for rank 0's save under the watchdog). */
double mn_save_retry_s(const mn_options *o);
/* global_batch=keep (the default): a resume on other ranks keeps the
 * checkpoint's global batch where subdivisions can (the same training),
 * else goes on with the cfg's and says what changed; strict: stops with
 * MN_ERR_STOPPED instead (a rerun on more ranks resumes); cfg: always the
 * cfg's batch and subdivisions. */
enum { MN_GLOBAL_BATCH_KEEP, MN_GLOBAL_BATCH_STRICT, MN_GLOBAL_BATCH_CFG };

/* The defaults; mn_load_network gives the cfg's options (mn_cfg_read). */
void mn_default_options(mn_options *opt);
/* One [distributed] key=value into opt: 1, or 0 with what is wrong in why
 * (without the file and line, which the cfg's reader adds). */
int mn_option_set(mn_options *opt, const char *key, const char *value, char *why, size_t cap);
/* Key i's line of info's listing, "key=default | values | what it sets"; NULL past the last. */
const char *mn_option_line(size_t i, char *buf, size_t cap);
/* Once every key is read: the defaults that depend on other keys. NULL, or
 * the key whose value the others refuse, with why. */
const char *mn_options_resolve(mn_options *opt, char *why, size_t cap);
/* Whether cfgfile asks for double_buffering=1 or overlap=1, which average on
 * a thread of their own (read before MPI_Init, to
 * choose the thread level). */
int mn_cfg_wants_threads(const char *cfgfile);
/* The value of key in cfgfile's [distributed] section, spaces and comments
 * dropped, into out (read before MPI_Init or without parsing the network);
 * 0 when the file or key is missing. */
int mn_cfg_peek(const char *cfgfile, const char *key, char *out, size_t cap);

/* Loads the network on every rank from the cfg mn_cfg_read checked (the
 * same on every rank), and gives its [distributed] options in opt (may be
 * NULL); rank 0 alone reads the weights file (after checking that it fits
 * the cfg) and broadcasts all parameters, running statistics and seen.
 * flags: MN_LOAD_CLEAR sets seen to 0; MN_LOAD_BATCH1 parses the network
 * at batch 1, for inference (no set_batch_network afterwards, which leaves
 * cuDNN descriptors and workspace sized for another batch). */
enum { MN_LOAD_CLEAR = 1, MN_LOAD_BATCH1 = 2 };
mn_status mn_load_network(mn_comm *c, const char *cfgfile, const char *weightfile,
                          int flags, network **out, mn_options *opt);

/* Attach the multi-node optimizer: gradients are averaged over all ranks in
 * update_network, and seen/iterations count the global batch. */
typedef struct mn_optimizer mn_optimizer;
mn_status mn_attach(mn_comm *c, network *net, const mn_options *opt, mn_optimizer **out);
void mn_detach(network *net, mn_optimizer *o);

/* Bytes of a weights file written for net (header included), and per-layer
 * boundaries for diagnosing truncated files. */
size_t mn_weights_bytes(const network *net);
/* rank 0: check a weights file against the cfg before loading it. */
mn_status mn_check_weights_file(const mn_comm *c, const network *net, const char *path);
/* rank 0: save to a temporary name, verify its size, rename; a refusal of
 * the file system is retried for up to retry_s seconds (mn_write_retried). */
mn_status mn_save_weights(const mn_comm *c, network *net, const char *path, double retry_s);

/* Path lists. Rank 0 reads the list file; with shuffle it permutes it with
 * seed; the result is scattered in near-equal contiguous shards (mn_scatter)
 * or sent whole (mn_bcast_list). */
typedef struct {
    char **paths;
    size_t n;
    size_t global_n;   /* length of the whole list */
    size_t offset;     /* index of paths[0] in the (shuffled) whole list */
    uint64_t digest;   /* the sum of its paths' FNV-1a: the same paths in any order agree */
} mn_list;
mn_status mn_scatter_list(mn_comm *c, const char *listfile, int shuffle, int seed, mn_list *out);
mn_status mn_bcast_list(mn_comm *c, const char *listfile, int shuffle, int seed, mn_list *out);
void mn_free_list(mn_list *l);
/* Shard bounds: rank r of size gets [start, start+count) of n items. */
void mn_shard_bounds(size_t n, int size, int r, size_t *start, size_t *count);
/* Deterministic Fisher-Yates permutation of n items from seed. */
void mn_shuffle_paths(char **paths, size_t n, int seed);
/* The seed of a random stream (rank r's data: stream r; the job's input
 * sizes: stream -1) for the batch of one iteration: a resumed run draws
 * what an uninterrupted one would have drawn there, not its first batches
 * again. */
unsigned mn_stream_seed(int seed, int stream, size_t iteration);

/* A detection (prob > 0) or a ground-truth box (prob ignored) of class cls in
 * image img; corners in any one unit per image. */
typedef struct {
    int img, cls;
    float prob;
    float x0, y0, x1, y1;
} mn_box;
/* VOC AP at an IoU threshold (0.5 for VOC): detections in descending
 * probability (ties: in the order given) each match the unmatched truth box of
 * their class and image they overlap most, else count as false; AP is the area
 * under the precision envelope (VOC 2010+). ap[k] gets class k's AP, -1 for a
 * class without truth boxes; returns their mean over classes with truth, or -1
 * when there is none. */
double mn_voc_map(const mn_box *dets, size_t ndets, const mn_box *truth, size_t ntruth,
                  int classes, float iou_thresh, double *ap);

/* Batch-norm running statistics: mean over all ranks (bn_average), or rank
 * 0's copied to every rank. Collective. o: the optimizer the network trains
 * with, whose copies of them (mn_optimizer_ways) count too, or NULL. */
mn_status mn_average_bn_stats(mn_comm *c, network *net, mn_optimizer *o);
mn_status mn_bcast_bn_stats(mn_comm *c, network *net, mn_optimizer *o);
/* sync_bn=1: batch norm in training normalizes with the global batch's mean
 * and variance (patch 0005's hook); otherwise removes the hook. */
mn_status mn_attach_sync_bn(mn_comm *c, network *net, const mn_options *opt);
/* Collective save: averages the running statistics first when
 * opt->bn_average (mo: as mn_average_bn_stats's o); rank 0 writes path
 * atomically. */
mn_status mn_save_weights_all(mn_comm *c, network *net, mn_optimizer *mo, const mn_options *opt, const char *path);

#endif
