/* VOC AP and mAP (mn_voc_map) against cases worked out by hand.
 *
 * Class 0: truth A, B in image 0 and C in image 1; detections by descending
 * probability: hit A, A again (a duplicate: false), nothing, hit C, nothing.
 * TP pattern T F F T F: recall 1/3 1/3 1/3 2/3 2/3, precision 1 1/2 1/3 1/2
 * 2/5; the envelope is 1 up to recall 1/3 and 1/2 up to 2/3, so
 * AP = 1/3 * 1 + 1/3 * 1/2 = 1/2.
 * Class 1: one truth box, one exact detection: AP 1.
 * Class 2: no truth: AP n/a (-1), left out of the mean.
 * Class 3: truth in images 0 and 1; detections: a miss (.9), then both hits:
 * precision 0, 1/2, 2/3 at recall 0, 1/2, 1: AP = 1/2 * 2/3 + 1/2 * 2/3 = 2/3.
 * mAP = (1/2 + 1 + 2/3) / 3 = 13/18.
 * Then: IoU exactly at the threshold is no match (VOC's ">"); ties keep input
 * order; a detection in another image does not match; a class with truth
 * and no detections scores 0. */
#include <math.h>
#include <stdio.h>
#include "darknet_mn.h"

static int failures;
#define CLOSE(got, want) do { double g_ = (got), w_ = (want); if (fabs(g_ - w_) > 1e-12) { ++failures; \
    fprintf(stderr, "FAIL %s:%d: %s = %.17g, want %.17g\n", __FILE__, __LINE__, #got, g_, w_); } } while (0)

#define BOX(img, cls, p, x0, y0, x1, y1) {img, cls, p, x0, y0, x1, y1}

int main(void)
{
    const mn_box truth[] = {
        BOX(0, 0, 1, 10, 10, 20, 20),   /* A */
        BOX(0, 0, 1, 50, 50, 60, 60),   /* B */
        BOX(1, 0, 1, 10, 10, 20, 20),   /* C */
        BOX(0, 1, 1, 30, 30, 40, 45),
        BOX(0, 3, 1, 0, 0, 10, 10),
        BOX(1, 3, 1, 0, 0, 10, 10),
    };
    /* Given out of order: the function sorts by probability. */
    const mn_box dets[] = {
        BOX(1, 0, .6f, 11, 10, 21, 20),  /* C, IoU 9/11 */
        BOX(0, 0, .9f, 10, 10, 20, 20),  /* A */
        BOX(0, 0, .5f, 80, 80, 90, 90),  /* nothing */
        BOX(0, 0, .8f, 10, 11, 20, 21),  /* A again: duplicate */
        BOX(0, 0, .7f, 200, 200, 210, 210),
        BOX(0, 1, .3f, 30, 30, 40, 45),
        BOX(0, 3, .9f, 100, 100, 110, 110),
        BOX(1, 3, .7f, 0, 0, 10, 10),
        BOX(0, 3, .8f, 0, 0, 10, 10),
    };
    double ap[4];
    double map = mn_voc_map(dets, sizeof dets / sizeof dets[0], truth, sizeof truth / sizeof truth[0], 4, .5f, ap);
    CLOSE(ap[0], 0.5);
    CLOSE(ap[1], 1.0);
    CLOSE(ap[2], -1.0);
    CLOSE(ap[3], 2.0 / 3.0);
    CLOSE(map, 13.0 / 18.0);

    /* IoU exactly 1/2 (area 1 inside area 2) is no match at .5, a match below. */
    const mn_box t2[] = {BOX(0, 0, 1, 0, 0, 2, 1)};
    const mn_box d2[] = {BOX(0, 0, .9f, 0, 0, 1, 1)};
    mn_voc_map(d2, 1, t2, 1, 1, .5f, ap);
    CLOSE(ap[0], 0.0);
    mn_voc_map(d2, 1, t2, 1, 1, .49f, ap);
    CLOSE(ap[0], 1.0);

    /* Equal probabilities: the first given takes the truth box, the second is
     * a duplicate; swapping them changes which one is false, not the AP. A
     * detection in image 1 cannot match image 0's box. */
    const mn_box t3[] = {BOX(0, 0, 1, 0, 0, 10, 10), BOX(0, 0, 1, 20, 20, 30, 30)};
    const mn_box d3[] = {BOX(1, 0, .5f, 0, 0, 10, 10), BOX(0, 0, .5f, 0, 0, 10, 10), BOX(0, 0, .5f, 20, 20, 30, 30)};
    /* F T T: precision 0, 1/2, 2/3 at recall 0, 1/2, 1: AP 2/3. */
    mn_voc_map(d3, 3, t3, 2, 1, .5f, ap);
    CLOSE(ap[0], 2.0 / 3.0);

    /* Truth and no detections: AP 0; no truth anywhere: mAP -1. */
    CLOSE(mn_voc_map(NULL, 0, t3, 2, 1, .5f, ap), 0.0);
    CLOSE(mn_voc_map(d3, 3, NULL, 0, 1, .5f, ap), -1.0);

    printf("test_map: %s\n", failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
