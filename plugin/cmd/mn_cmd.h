/* The commands of ./darknet_mn, each a whole run on every rank returning
 * the status main.c turns into the exit status. */
#ifndef MN_CMD_H
#define MN_CMD_H

#include "train/mn_training.h"

/* Training and evaluation. */
/* map_epochs: -map's epochs, 0 without. */
mn_status mn_train(mn_comm *c, mn_task task, const char *datacfg, const char *cfgfile,
                   const char *weightfile, int clear, int map_epochs);
mn_status mn_classifier_valid(mn_comm *c, const char *datacfg, const char *cfgfile,
                              const char *weightfile);
/* Detector evaluation on the valid list, scattered over the ranks and
 * gathered on rank 0: valid writes stock Darknet's VOC files, recall prints
 * stock's recall summary, map prints VOC AP@0.5 per class and their mean. */
mn_status mn_detector_valid(mn_comm *c, const char *datacfg, const char *cfgfile,
                            const char *weightfile, const char *outfile);
mn_status mn_detector_recall(mn_comm *c, const char *datacfg, const char *cfgfile,
                             const char *weightfile);
mn_status mn_detector_map(mn_comm *c, const char *datacfg, const char *cfgfile,
                          const char *weightfile);

/* ./darknet_mn info [cfg]: the setup, every rank, the communicator a cfg
 * would get, and a proof that every rank can talk. */
mn_status mn_info(mn_comm *c, const char *cfgfile);

/* ./darknet_mn bench allreduce */
mn_status mn_bench_allreduce(mn_comm *c, int argc, char **argv);
/* ./darknet_mn bench replica <cfg>: the replica check's cost */
mn_status mn_bench_replica(mn_comm *c, int argc, char **argv);
/* ./darknet_mn bench step <cfg>: one rank's pass times */
mn_status mn_bench_step(mn_comm *c, int argc, char **argv);

/* One-process commands: rank 0 does the work, the others wait, and all
 * leave with rank 0's status. */
/* Stock `darknet partial`: the first `layers` layers of weights, seen
 * cleared, written atomically. */
mn_status mn_partial(mn_comm *c, const char *cfgfile, const char *weightfile, const char *out,
                     const char *layers);
/* Stock `detector test` on one image: prints the detections and, where the
 * build has cairo, draws them into <prefix>.png. */
mn_status mn_detector_test(mn_comm *c, const char *datacfg, const char *cfgfile, const char *weightfile,
                           const char *image, const char *prefix, const char *thresh);
/* Stock `classifier predict` on one image: prints the data cfg's top-k. */
mn_status mn_classifier_predict(mn_comm *c, const char *datacfg, const char *cfgfile, const char *weightfile,
                                const char *image);

#endif
