/* The process layer, below every other: the job's handle, time,
 * checksums and durable files. Its other rooms have their own headers, each
 * included where it is used: the errors' output (mn_output.h), the abort
 * path (mn_fault.h), the watchdog (mn_watchdog.h), the launcher (mn_launch.h). */
#ifndef MN_CORE_H
#define MN_CORE_H

#include <stddef.h>
#include <stdint.h>
#include "core/mn_status.h"

/* Propagate a non-OK status to the caller. */
#define MN_CHECK(expr) do { mn_status mn_s_ = (expr); if (mn_s_ != MN_OK) return mn_s_; } while (0)
/* Check an MPI call; report it with the rank and return MN_ERR_MPI. */
#define MN_MPI(c, call) do { int mn_e_ = (call); if (mn_e_ != MPI_SUCCESS) { \
    mn_error((c), "%s failed (MPI error %d) at %s:%d", #call, mn_e_, __FILE__, __LINE__); \
    return MN_ERR_MPI; } } while (0)

/* The job's handle: the process's identity, then what train/ reads of
 * coll and transport; their own state sits behind coll and transport. */
struct mn_comm {
    MPI_Comm world, intra, inter;
    int rank, size;
    int intra_rank, intra_size;   /* within the node */
    int inter_rank, inter_size;   /* among ranks with the same intra_rank */
    int nodes;                    /* number of nodes (inter_size of intra_rank 0) */
    char host[64];
    struct mn_watchdog *watch;    /* the training job's watchdog (mn_guard), or NULL */
    size_t piece_floats;          /* a fused reduction's piece inside one node */
    int device_ordered;           /* the caller orders the device stream itself */
    struct mn_coll *coll;         /* the algorithm and its state: coll's alone */
    struct mn_transport *transport;
};

/* mn_agree, the errors and mn_abort are in darknet_mn.h. Collective:
 * whether this rank is the lowest where cond holds (the one that speaks). */
int mn_first_with(mn_comm *c, int cond);

/* Seconds on the monotonic clock. */
double mn_now(void);
/* Seconds since the epoch: for what another host reads. */
double mn_wall(void);
/* qsort's comparison of doubles, ascending. */
int mn_cmp_double(const void *a, const void *b);
/* 64-bit FNV-1a, for signatures and checksums. */
#define MN_FNV_SEED 1469598103934665603ULL
uint64_t mn_fnv1a(uint64_t h, const void *p, size_t n);

/* <path>.tmp.<host>.<pid>[.<tid> off the main thread] into buf: no two
 * writers share a temporary file. 0 when it does not fit. */
int mn_tmp_path(const mn_comm *c, char *buf, size_t n, const char *path);
/* fsync tmp, rename it to path, fsync the folder: after a power loss path
 * is the old file or the new one. tmp is removed on failure. */
mn_status mn_commit_file(const mn_comm *c, const char *tmp, const char *path);
/* The same, but another writer's file at path is kept (*written 0). */
mn_status mn_commit_file_once(const mn_comm *c, const char *tmp, const char *path, int *written);
/* Rank 0's durable write of path: write(arg, tmp) fills a temporary file
 * (0 with errno on failure), committed as mn_commit_file does. A refusal
 * that may pass (full, quota, read-only, I/O) is retried for up to retry_s
 * seconds, since the state is still in memory; then MN_ERR_STORAGE. what
 * names the file in messages. */
mn_status mn_write_retried(const mn_comm *c, const char *what, const char *path, double retry_s,
                           int (*write)(void *arg, const char *tmp), void *arg);
#endif
