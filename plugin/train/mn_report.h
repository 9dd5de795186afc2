/* Watching training (mn_report.c): rank 0 appends every iteration to
 * <backup>/<base>_log.csv and, unless chart=0 or the build has no cairo,
 * keeps <backup>/<base>_chart.png up to date (redrawn at most every
 * MN_CHART_SECONDS, and at evaluations and the last iteration), both
 * written so a reader never sees half a file. */
#ifndef MN_REPORT_H
#define MN_REPORT_H

#include "mn_training.h"

#define MN_CHART_SECONDS 5.0
#define MN_CHART_W 800
#define MN_CHART_H 480

typedef struct mn_report mn_report;
/* Every rank calls it once per iteration (only rank 0 acts); *r starts NULL.
 * eval is the evaluation metric of this iteration or NAN. A file that cannot
 * be written is reported once and training goes on without it. */
void mn_report_iteration(mn_report **r, const mn_comm *c, network *net, const mn_options *opt,
                         const char *backup, const char *base, float loss, double avg_loss, double img_s,
                         double eval);
void mn_report_free(mn_report *r);

/* The cairo that draws the chart, the timeline's picture and detector
 * test's predictions.png ("1.16.0"), or NULL in a CAIRO=0 build, which
 * draws none of them: each place says so once, with MN_NO_CAIRO as why. */
const char *mn_report_cairo(void);
#ifdef MN_CAIRO
/* The one PNG writer (the chart, the timeline's picture, predictions.png):
 * sf into a temporary file beside path, committed (mn_commit_file), so a
 * reader sees the old picture or the new one, never half of one. A failure
 * names the file (mn_error), removes the temporary one and returns nonzero. */
struct _cairo_surface;
mn_status mn_report_png(const mn_comm *c, struct _cairo_surface *sf, const char *path);
#endif
#define MN_NO_CAIRO "this darknet_mn was built without cairo (make CAIRO=1 with libcairo2-dev)"

#endif
