/* Evaluation during training (plugin/train/eval): the evaluator
 * (mn_evaluator.c), the detections gathered to rank 0 (mn_detwire.c,
 * private to this folder) and VOC mAP (mn_voc.c). */
#ifndef MN_EVAL_H
#define MN_EVAL_H

#include "mn_training.h"
#include "mn_input.h"
#include "mn_checkpoint.h"

/* Called by every rank at the end of each iteration mn_eval_due chose:
 * scores the eval list (classifier top-1, detector mAP) at the cfg's input
 * size; rank 0 prints it and saves <backup>/<base>_best.weights when it
 * beats best, which then holds it. It runs on a network of its own, given
 * net's parameters each time, so that net's batch, size and buffers are
 * never touched. *state starts NULL; mo: the optimizer net trains with. */
typedef struct mn_eval_state mn_eval_state;
mn_status mn_eval_during_training(mn_comm *c, network *net, mn_optimizer *mo, mn_task task, const mn_data_cfg *dc,
                                  const mn_options *opt, size_t it, const char *base, const char *cfgfile,
                                  mn_eval_state **state, mn_best *best);
void mn_eval_free(mn_eval_state *state);
/* The score evaluated at iteration it, or NAN when none was. */
double mn_eval_score(const mn_eval_state *state, size_t it);

#endif
