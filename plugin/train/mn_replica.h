/* The replica check (mn_replica.c): every rank must hold the same model. */
#ifndef MN_REPLICA_H
#define MN_REPLICA_H

#include "mn_training.h"

/* Collective. Every rank hashes its parameters, the momentum Darknet keeps in
 * its update arrays (o may be NULL: none) and, when stats_shared, the running
 * statistics (they differ by design unless sync_bn=1); rank 0 compares. A
 * mismatch is reported on rank 0 with the ranks and the first layer that
 * differs, and returns MN_ERR_DIVERGED on every rank; so do NaN or Inf in the
 * parameters (nothing such is worth saving). *first_layer (may be NULL) gets
 * the first differing layer over all ranks, or -1. */
mn_status mn_replica_check(mn_comm *c, network *net, mn_optimizer *o, int stats_shared, size_t iteration,
                           int *first_layer);
/* 64-bit FNV-1a over 64-bit words (a tail shorter than a word bytewise):
 * about eight times faster than the bytewise hash, for whole models. */
uint64_t mn_hash_words(uint64_t h, const void *p, size_t bytes);

#endif
