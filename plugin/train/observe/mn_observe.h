/* Watching training (plugin/train/observe; docs/user-guide.md). */
#ifndef MN_OBSERVE_H
#define MN_OBSERVE_H

#include <stddef.h>
#include "train/mn_training.h"

/* The log and chart (mn_report.c); the chart is redrawn at most every
 * MN_CHART_SECONDS. */
#define MN_CHART_SECONDS 5.0
#define MN_CHART_W 800
#define MN_CHART_H 480

typedef struct mn_report mn_report;
/* Every rank, each iteration; rank 0 acts, reporting an unwritable file
 * once. *r starts NULL; eval: the metric or NAN. */
void mn_report_iteration(mn_report **r, const mn_comm *c, network *net, const mn_options *opt,
                         const char *backup, const char *base, float loss, double avg_loss, double img_s,
                         double eval);
void mn_report_free(mn_report *r);

/* cairo's version, or NULL in a CAIRO=0 build (callers say MN_NO_CAIRO once). */
const char *mn_report_cairo(void);
#ifdef MN_CAIRO
/* Writes sf to path, never seen half written; a failure is reported. */
struct _cairo_surface;
mn_status mn_report_png(const mn_comm *c, struct _cairo_surface *sf, const char *path);
#endif
#define MN_NO_CAIRO "this darknet_mn was built without cairo (make CAIRO=1 with libcairo2-dev)"

/* Where every rank's time goes (mn_timeline.c): a step's split, and with
 * timeline=<file> a Chrome trace. */
typedef struct mn_timeline mn_timeline;

/* A phase's kind. */
typedef enum {
    MN_TL_DATA,       /* waiting for the loader */
    MN_TL_FORWARD,
    MN_TL_BACKWARD,   /* layers [layer, layer_hi] */
    MN_TL_WAIT_COMM,  /* the update waits for the allreduce */
    MN_TL_UPDATE,
    MN_TL_LOSS,       /* loss allreduce, bookkeeping */
    MN_TL_EVAL,
    MN_TL_SAVE,       /* replica check, weights, checkpoint */
    MN_TL_BUCKET,     /* a bucket's allreduce */
    MN_TL_QUEUED,     /* a bucket waiting for its allreduce */
    MN_TL_SLOWEST,    /* derived: waiting for the slowest rank */
    MN_TL_KINDS
} mn_tl_kind;
#define MN_TL_EVERY 20

/* Collective. path: timeline=, else rank 0's MN_TIMELINE, else none. */
mn_status mn_timeline_open(mn_comm *c, const char *path, mn_timeline **out);
/* Whether phases go to a file. */
int mn_timeline_file(const mn_timeline *t);
/* A phase t0..t1 of mn_now(); row 0: main thread, 1: communication. */
void mn_timeline_add(mn_timeline *t, int row, mn_tl_kind kind, double t0, double t1, size_t bytes, int layer,
                     int layer_hi);
/* This step's gradient sync: arrival, and the wait for the mean. */
void mn_timeline_sync(mn_timeline *t, double arrive, double wait);
/* End of iteration it (step t0..t1). Collective every MN_TL_EVERY
 * iterations. */
mn_status mn_timeline_step(mn_timeline *t, size_t it, double t0, double t1);
/* ok: collective, finishes the file. Else (failure): drops it, not
 * collective. */
mn_status mn_timeline_close(mn_timeline *t, int ok);

/* MN_GPU_PROFILE=1 in a GPU run (mn_profile.c): the base's stream's time
 * between the two marks of each step (0 at the hook's start, 1 at its
 * end), read a step later so that reading never waits; at free rank 0
 * prints the mean, naming the route. NULL: not asked (or a CPU build). */
typedef struct mn_profile mn_profile;
#ifdef GPU
mn_profile *mn_profile_new(mn_comm *c);
void mn_profile_mark(mn_profile *p, int end);
void mn_profile_free(mn_profile *p, const char *route);
#else
static inline mn_profile *mn_profile_new(mn_comm *c) { (void)c; return NULL; }
static inline void mn_profile_mark(mn_profile *p, int end) { (void)p, (void)end; }
static inline void mn_profile_free(mn_profile *p, const char *route) { (void)p, (void)route; }
#endif

#endif
