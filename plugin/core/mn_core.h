/* The process layer (plugin/core), below every other: the job's handle
 * (struct mn_comm), errors and the one abort path, agreement of a status,
 * the watchdog over collectives, time, checksums and durable files. It calls
 * nothing of the layers above (docs/design.md). */
#ifndef MN_CORE_H
#define MN_CORE_H

#include <stddef.h>
#include <stdint.h>
#include "mn_status.h"
#include "mn_output.h"
#include "mn_fault.h"
#include "mn_watchdog.h"

/* Propagate a non-OK status to the caller. */
#define MN_CHECK(expr) do { mn_status mn_s_ = (expr); if (mn_s_ != MN_OK) return mn_s_; } while (0)
/* Check an MPI call; report it with the rank and return MN_ERR_MPI. */
#define MN_MPI(c, call) do { int mn_e_ = (call); if (mn_e_ != MPI_SUCCESS) { \
    mn_error((c), "%s failed (MPI error %d) at %s:%d", #call, mn_e_, __FILE__, __LINE__); \
    return MN_ERR_MPI; } } while (0)

/* The job's handle, passed to every layer: the process's identity (world,
 * rank, node, host, the watchdog) is this layer's; the fields from ops on
 * are the collectives' (plugin/coll) and the transports' that the layers
 * above read, and coll and transport keep the rest behind their own
 * pointers, which this layer never follows. */
struct mn_comm {
    MPI_Comm world, intra, inter;
    int rank, size;
    int intra_rank, intra_size;   /* within the node */
    int inter_rank, inter_size;   /* among ranks with the same intra_rank */
    int nodes;                    /* number of nodes (inter_size of intra_rank 0) */
    char host[64];
    struct mn_watchdog *watch;    /* the training job's watchdog (mn_guard), or NULL */
    const struct mn_comm_ops *ops; /* the algorithm (plugin/coll) */
    size_t piece_floats;          /* a fused reduction's piece inside one node (MN_PIECE_BYTES) */
    float *fused;                 /* scratch shared by algorithms that pack */
    size_t fused_cap;
    int half;                     /* gradients travel as IEEE half (mn_comm_set_dtype) */
    int device_f32, device_f16;   /* set up by the algorithm: mean_grad_device takes float32 / float16 jobs */
    int device_ordered;           /* the caller orders the device stream after Darknet's work itself */
    struct mn_coll *coll;         /* the collectives' own (mn_coll.h) */
    struct mn_transport *transport; /* the transports' own (mn_transport.h) */
};

/* Agreement (mn_agree), errors and mn_abort are declared in darknet_mn.h. */
/* Collective: whether this rank is the lowest where cond holds (the one
 * that says why, where several would say the same). */
int mn_first_with(mn_comm *c, int cond);

/* Seconds on the monotonic clock (durations, deadlines: mn_util.c). */
double mn_now(void);
/* Seconds since the epoch, to the microsecond: for what another host reads. */
double mn_wall(void);
/* qsort's comparison of doubles, ascending (the benchmarks' medians). */
int mn_cmp_double(const void *a, const void *b);
/* 64-bit FNV-1a, for signatures and checksums. */
#define MN_FNV_SEED 1469598103934665603ULL
uint64_t mn_fnv1a(uint64_t h, const void *p, size_t n);

/* <path>.tmp.<host>.<pid> into buf (.<tid> after it in a thread other than
 * the main one, such as the rescue's, which may write the same file as the
 * main thread at the same moment): unique per thread, so no two writers in
 * a folder share a temporary file. 0 when it does not fit. */
int mn_tmp_path(const mn_comm *c, char *buf, size_t n, const char *path);
/* fsync tmp, rename it to path, fsync the folder: after a power loss path is
 * the old file or the new one, never an empty one. tmp is removed on failure. */
mn_status mn_commit_file(const mn_comm *c, const char *tmp, const char *path);
/* The same, but a file already at path (another writer's) is kept: tmp is
 * removed then, and *written set to 0. */
mn_status mn_commit_file_once(const mn_comm *c, const char *tmp, const char *path, int *written);
/* Rank 0's durable write of path: write(arg, tmp) fills a temporary file
 * (1 on success, 0 with errno set), which is then committed as
 * mn_commit_file does. Where the file system refuses for a reason that may
 * pass (full, quota, read-only, an I/O error), the write is tried again,
 * at growing intervals up to 10 s, for up to retry_s seconds: the state is
 * still in memory, and space freed meanwhile saves it. One line at the
 * first failure, one at the success after it; then MN_ERR_STORAGE (or
 * MN_ERR_USER for a name too long). No temporary file is left. what names
 * the file in messages ("checkpoint", "weights"). */
mn_status mn_write_retried(const mn_comm *c, const char *what, const char *path, double retry_s,
                           int (*write)(void *arg, const char *tmp), void *arg);
#endif
