/* The data cfg (mn_data.c). */
#ifndef MN_MN_DATA_H
#define MN_MN_DATA_H

#include "mn_internal.h"

/* What a data cfg says (mn_data.c). Read on every rank: it is small. */
typedef struct {
    char *train, *valid, *backup, *labels_file;
    char **labels;
    int classes;
    int nlabels;      /* lines in the labels file (>= classes) */
    list *options;    /* the parsed data cfg; the strings above point into it */
} mn_data_cfg;
/* On error nothing is left to free; on success mn_free_data_cfg releases it. */
mn_status mn_read_data_cfg(mn_comm *c, const char *datacfg, mn_task task, mn_data_cfg *d);
void mn_free_data_cfg(mn_data_cfg *d);
/* An integer option of a data cfg (options), or def where it is not given. */
int mn_data_int(list *options, const char *key, int def);

#endif
