/* The commands of ./darknet_mn (plugin/cmd), each a whole run on every
 * rank that returns the status main.c turns into the exit status. Part of
 * the public API (darknet_mn.h). */
#ifndef MN_CMD_H
#define MN_CMD_H

#include "mn_training.h"

/* Training and evaluation. */
/* clear: -clear; map_epochs: -map (with -mAP_epochs, else 4), 0 without. */
mn_status mn_train(mn_comm *c, mn_task task, const char *datacfg, const char *cfgfile,
                   const char *weightfile, int clear, int map_epochs);
mn_status mn_classifier_valid(mn_comm *c, const char *datacfg, const char *cfgfile,
                              const char *weightfile);
/* Detector evaluation on the data cfg's valid list, scattered over the ranks;
 * rank 0 gathers every shard's detections. valid writes stock Darknet's VOC
 * files <results>/<outfile><class>.txt (outfile NULL: "comp4_det_test_");
 * recall prints stock's proposal/recall summary; map prints VOC AP@0.5 per
 * class and their mean against the labels/ files. */
mn_status mn_detector_valid(mn_comm *c, const char *datacfg, const char *cfgfile,
                            const char *weightfile, const char *outfile);
mn_status mn_detector_recall(mn_comm *c, const char *datacfg, const char *cfgfile,
                             const char *weightfile);
mn_status mn_detector_map(mn_comm *c, const char *datacfg, const char *cfgfile,
                          const char *weightfile);

/* ./darknet_mn info [cfg]: the setup, every rank, the communicator a cfg
 * would get, and a proof that every rank can talk; MN_OK when all is well. */
mn_status mn_info(mn_comm *c, const char *cfgfile);

/* ./darknet_mn bench allreduce */
mn_status mn_bench_allreduce(mn_comm *c, int argc, char **argv);
/* ./darknet_mn bench replica <cfg>: the replica check's cost */
mn_status mn_bench_replica(mn_comm *c, int argc, char **argv);
/* ./darknet_mn bench step <cfg>: one rank's forward, backward and update times */
mn_status mn_bench_step(mn_comm *c, int argc, char **argv);

/* One-process commands around training (mn_predict.c): under mpiexec rank 0
 * does the work, the other ranks wait, and all leave with rank 0's status. */
/* Stock `darknet partial`: the first `layers` layers of weights (loaded into
 * cfg, seen cleared) written to out, atomically. */
mn_status mn_partial(mn_comm *c, const char *cfgfile, const char *weightfile, const char *out,
                     const char *layers);
/* Stock `detector test` on one image: prints the detections above thresh
 * (NULL: 0.25; NMS 0.45) and draws them with class names into
 * <prefix>.png (NULL: "predictions"), at the image's own size; a build
 * without cairo says it draws none. */
mn_status mn_detector_test(mn_comm *c, const char *datacfg, const char *cfgfile, const char *weightfile,
                           const char *image, const char *prefix, const char *thresh);
/* Stock `classifier predict` on one image: prints the data cfg's top-k
 * (its `top`, default 1) as "percent%: label". */
mn_status mn_classifier_predict(mn_comm *c, const char *datacfg, const char *cfgfile, const char *weightfile,
                                const char *image);

#endif
