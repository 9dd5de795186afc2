/* Evaluation during training and the helpers it shares (mn_evaluator.c). */
#ifndef MN_MN_EVAL_H
#define MN_MN_EVAL_H

#include "mn_internal.h"

/* Whether training evaluates after iteration it (mn_options.c): every eval_interval
 * iterations; else, with -map (eval_epochs), at AlexeyAB's and hank-ai's
 * cadence: max(100, eval_epochs * images / global_batch) iterations after
 * the last evaluation (last: the iteration training started at, before the
 * first), not before burn_in, and at max_batches. */
int mn_eval_due(const mn_options *opt, size_t it, size_t last, size_t max_batches, size_t burn_in, size_t images,
                size_t global_batch);
/* What asked for evaluation, for messages: "eval_interval=50" or "-map". */
const char *mn_eval_asker(const mn_options *opt, char *buf, size_t n);

/* Evaluation during training (mn_evaluator.c). Called by every rank at the
 * end of every iteration mn_eval_due chose; it scores the eval list
 * (classifier top-1, detector mAP) at the cfg's input size (whatever size
 * random=1 trains at now), rank 0 prints it and saves
 * <backup>/<base>_best.weights when it beats best (which it then holds;
 * a resumed run starts from its checkpoint's). It runs on a network of
 * its own, parsed from cfgfile at batch 1 (mn_base_parse_batch1) and given
 * net's parameters each time: net's batch, size, buffers and cuDNN
 * descriptors are never touched. *state starts NULL. */
typedef struct mn_eval_state mn_eval_state;
mn_status mn_eval_during_training(mn_comm *c, network *net, mn_task task, const mn_data_cfg *dc,
                                  const mn_options *opt, size_t it, const char *base, const char *cfgfile,
                                  mn_eval_state **state, mn_best *best);
void mn_eval_free(mn_eval_state *state);
/* The score evaluated at iteration it, or NAN when none was. */
double mn_eval_score(const mn_eval_state *state, size_t it);
/* The class of a path: the one label it contains (Darknet matches labels as
 * substrings); -1 when none or several match, with their count in *matches. */
int mn_path_class(char **labels, int k, const char *path, int *matches);
/* An image that cannot be opened is reported with its path and this rank. */
mn_status mn_check_readable(const mn_comm *c, const char *path);

#endif
