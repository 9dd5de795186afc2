/* Watching training (plugin/train/observe): the per-iteration log and chart
 * (mn_report.c) and where every rank's time goes (mn_timeline.c). It reads
 * nothing of training's other parts. */
#ifndef MN_OBSERVE_H
#define MN_OBSERVE_H

#include <stddef.h>
#include "mn_training.h"

/* The log and the chart (mn_report.c): rank 0 appends every iteration to
 * <backup>/<base>_log.csv and, with cairo and chart=1, redraws
 * <backup>/<base>_chart.png at most every MN_CHART_SECONDS. Neither is
 * ever seen half written. */
#define MN_CHART_SECONDS 5.0
#define MN_CHART_W 800
#define MN_CHART_H 480

typedef struct mn_report mn_report;
/* Every rank calls it once per iteration; only rank 0 acts. *r starts
 * NULL; eval is this iteration's metric or NAN. A file that cannot be
 * written is reported once and left out. */
void mn_report_iteration(mn_report **r, const mn_comm *c, network *net, const mn_options *opt,
                         const char *backup, const char *base, float loss, double avg_loss, double img_s,
                         double eval);
void mn_report_free(mn_report *r);

/* The version of the cairo that draws the pictures, or NULL in a CAIRO=0
 * build, which draws none: each place says so once, with MN_NO_CAIRO. */
const char *mn_report_cairo(void);
#ifdef MN_CAIRO
/* The one PNG writer: sf into a temporary file committed to path, so that
 * a reader never sees half a picture. A failure is reported; nonzero. */
struct _cairo_surface;
mn_status mn_report_png(const mn_comm *c, struct _cairo_surface *sf, const char *path);
#endif
#define MN_NO_CAIRO "this darknet_mn was built without cairo (make CAIRO=1 with libcairo2-dev)"

/* Where every rank's time goes (mn_timeline.c): the split of a step
 * printed every MN_TL_EVERY iterations and, with timeline=<file> or
 * MN_TIMELINE, a Chrome-trace JSON of every rank's phases and its picture
 * <file>.png. */
typedef struct mn_timeline mn_timeline;

/* What a phase is; a row of the trace per rank and thread. */
typedef enum {
    MN_TL_DATA,       /* waiting for the loader's batch */
    MN_TL_FORWARD,
    MN_TL_BACKWARD,   /* a group of layers [layer, layer_hi] */
    MN_TL_WAIT_COMM,  /* the update waits for the allreduce (all of it when blocking) */
    MN_TL_UPDATE,
    MN_TL_LOSS,       /* the loss allreduce and the step's bookkeeping */
    MN_TL_EVAL,
    MN_TL_SAVE,       /* replica check, weights, checkpoint */
    MN_TL_BUCKET,     /* the communication thread averages one bucket */
    MN_TL_QUEUED,     /* a bucket from its hand-over by backward to its allreduce's start */
    MN_TL_SLOWEST,    /* derived: from this rank's arrival to the slowest rank's */
    MN_TL_KINDS
} mn_tl_kind;
#define MN_TL_EVERY 20

/* Collective. path: the cfg's timeline=, else rank 0's MN_TIMELINE, else
 * the split only, with no file. */
mn_status mn_timeline_open(mn_comm *c, const char *path, mn_timeline **out);
/* Whether phases are recorded for a file (else only the split). */
int mn_timeline_file(const mn_timeline *t);
/* A phase on this rank, t0..t1 of mn_now(); row 0 the main thread, 1 the
 * communication thread. Without a file only the split is kept. */
void mn_timeline_add(mn_timeline *t, int row, mn_tl_kind kind, double t0, double t1, size_t bytes, int layer,
                     int layer_hi);
/* The gradient sync of this step: arrival at it, and how long the update
 * waited there for the mean. */
void mn_timeline_sync(mn_timeline *t, double arrive, double wait);
/* End of iteration it, whose step took t0..t1. Collective every
 * MN_TL_EVERY iterations: rank 0 prints the split and writes the events. */
mn_status mn_timeline_step(mn_timeline *t, size_t it, double t0, double t1);
/* ok: collective, the last events written, the file closed and its picture
 * drawn. Else (training failed) the file is dropped, with no collective. */
mn_status mn_timeline_close(mn_timeline *t, int ok);

#endif
