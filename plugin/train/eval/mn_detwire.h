/* The wire format of gathered detections (mn_detwire.c): records built on
 * every rank, gathered to rank 0 and read back there. */
#ifndef MN_MN_DETWIRE_H
#define MN_MN_DETWIRE_H

#include "train/mn_training.h"
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "base/mn_base_util.h"

/* A growing byte buffer. */
typedef struct {
    unsigned char *p;
    size_t n, cap;
    int failed;
} mn_bytes;

/* A record read back on rank 0. Arrays point into the buffer (unaligned). */
typedef struct {
    char path[4096];
    int w, h, ntruth, rows;
    const unsigned char *truth, *row;
} mn_record;

/* Appends one image's record: its truth boxes and one row per detection
 * and class with a non-zero probability. Out of memory sets b->failed. */
void mn_put_record(mn_bytes *b, const char *path, int w, int h, const mn_truth *truth, int ntruth,
                   const detection *dets, int ndets, int classes);
/* Rank 0 receives every rank's bytes, in rank order (MPI counts are int). */
mn_status mn_gather_bytes(mn_comm *c, const mn_bytes *mine, mn_bytes *all);
/* Reads the record at *p and advances; 0 at the end. */
int mn_next_record(const unsigned char **p, const unsigned char *end, mn_record *r);
/* Row i of a record: class, probability and stock's printed corners
 * (1-based pixels, clipped to the image). */
int mn_get_row(const mn_record *r, int i, float *prob, float *x0, float *y0, float *x1, float *y1);
/* Rank 0: the gathered records as boxes in 1-based pixel corners, the same
 * numbers the VOC files hold. */
mn_status mn_records_to_boxes(const mn_bytes *all, mn_box **dets, size_t *nd, mn_box **truth, size_t *nt,
                              size_t *images);

#endif
