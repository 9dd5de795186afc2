/* Evaluation during training (plugin/train/eval; docs/evaluation.md). */
#ifndef MN_EVAL_H
#define MN_EVAL_H

#include "train/mn_training.h"
#include "train/input/mn_input.h"
#include "train/checkpoint/mn_checkpoint.h"

/* Collective, after each iteration mn_eval_due chose: scores the eval
 * list; a better score goes into best and <base>_best.weights. net's batch
 * and size stay. *state starts NULL; mo: net's optimizer. */
typedef struct mn_eval_state mn_eval_state;
mn_status mn_eval_during_training(mn_comm *c, network *net, mn_optimizer *mo, mn_task task, const mn_data_cfg *dc,
                                  const mn_options *opt, size_t it, const char *base, const char *cfgfile,
                                  mn_eval_state **state, mn_best *best);
void mn_eval_free(mn_eval_state *state);
/* The score at iteration it, or NAN. */
double mn_eval_score(const mn_eval_state *state, size_t it);

#endif
