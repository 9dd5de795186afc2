/* Evaluation during training (plugin/train/eval): the evaluator
 * (mn_evaluator.c) over detections gathered to rank 0 (mn_detwire.c,
 * mn_detwire.h, private to this folder) and VOC mAP (mn_voc.c, declared in
 * mn_training.h). */
#ifndef MN_EVAL_H
#define MN_EVAL_H

#include "mn_training.h"
#include "mn_input.h"
#include "mn_checkpoint.h"

/* Evaluation during training (mn_evaluator.c). Called by every rank at the
 * end of every iteration mn_eval_due chose; it scores the eval list
 * (classifier top-1, detector mAP) at the cfg's input size (whatever size
 * random=1 trains at now), rank 0 prints it and saves
 * <backup>/<base>_best.weights when it beats best (which it then holds;
 * a resumed run starts from its checkpoint's). It runs on a network of
 * its own, parsed from cfgfile at batch 1 (mn_base_parse_batch1) and given
 * net's parameters each time: net's batch, size, buffers and cuDNN
 * descriptors are never touched. *state starts NULL. mo: the optimizer net
 * trains with (mn_average_bn_stats). */
typedef struct mn_eval_state mn_eval_state;
mn_status mn_eval_during_training(mn_comm *c, network *net, mn_optimizer *mo, mn_task task, const mn_data_cfg *dc,
                                  const mn_options *opt, size_t it, const char *base, const char *cfgfile,
                                  mn_eval_state **state, mn_best *best);
void mn_eval_free(mn_eval_state *state);
/* The score evaluated at iteration it, or NAN when none was. */
double mn_eval_score(const mn_eval_state *state, size_t it);

#endif
