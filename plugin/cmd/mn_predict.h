/* One-process commands around training (mn_predict.c): under mpiexec rank 0
 * does the work, the other ranks wait, and all leave with rank 0's status. */
#ifndef MN_PREDICT_H
#define MN_PREDICT_H

#include "darknet_mn.h"

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
