/* The multi-node evaluator. */
#include <stdio.h>
#include <stdlib.h>
#include "mn_internal.h"
#include "option_list.h"

/* Classifier evaluation: the valid list is scattered, each rank scores its
 * shard exactly as stock validate_classifier_single does, and the hit counts
 * are summed on rank 0. */
mn_status mn_classifier_valid(mn_comm *c, const char *datacfg, const char *cfgfile,
                              const char *weightfile)
{
    mn_data_cfg dc;
    MN_CHECK(mn_agree(c, mn_read_data_cfg(c, datacfg, MN_TASK_CLASSIFIER, &dc)));
    if (!dc.valid) {
        if (c->rank == 0) mn_error(c, "%s: no 'valid' list given", datacfg);
        return mn_agree(c, MN_ERR_USER);
    }
    network *net;
    MN_CHECK(mn_load_network(c, cfgfile, weightfile, 0, &net));
    mn_options opt;
    MN_CHECK(mn_agree(c, mn_parse_options(net, cfgfile, c->rank == 0, &opt)));
    set_batch_network(net, 1);
    mn_list shard;
    MN_CHECK(mn_scatter_list(c, dc.valid, 0, 0, &shard));
    list *o = read_data_cfg((char *)datacfg);
    int topk = option_find_int_quiet(o, "top", 1);
    if (topk < 1 || topk > dc.classes) topk = dc.classes < 5 ? dc.classes : 5;
    int *idx = calloc((size_t)topk, sizeof(int));
    long hits[3] = {0, 0, 0};   /* top-1, top-k, images */
    mn_status s = MN_OK;
    for (size_t i = 0; i < shard.n && s == MN_OK; ++i) {
        int m, cls = mn_path_class(dc.labels, dc.classes, shard.paths[i], &m);
        if (cls < 0) {
            mn_error(c, "image %s matches %d labels of %s; it must contain exactly one", shard.paths[i], m, dc.labels_file);
            s = MN_ERR_USER;
            break;
        }
        if ((s = mn_check_readable(c, shard.paths[i])) != MN_OK) break;
        image im = load_image_color(shard.paths[i], 0, 0);
        image resized = resize_min(im, net->w);
        image crop = crop_image(resized, (resized.w - net->w) / 2, (resized.h - net->h) / 2, net->w, net->h);
        float *pred = network_predict(net, crop.data);
        if (net->hierarchy) hierarchy_predictions(pred, net->outputs, net->hierarchy, 1, 1);
        top_k(pred, dc.classes, topk, idx);
        hits[0] += idx[0] == cls;
        for (int j = 0; j < topk; ++j) hits[1] += idx[j] == cls;
        hits[2] += 1;
        if (resized.data != im.data) free_image(resized);
        free_image(im);
        free_image(crop);
    }
    s = mn_agree(c, s);
    if (s == MN_OK) {
        MPI_Allreduce(MPI_IN_PLACE, hits, 3, MPI_LONG, MPI_SUM, c->world);
        if (c->rank == 0)
            printf("darknet-mn: %ld images on %d ranks: top-1 %.4f (%ld), top-%d %.4f (%ld)\n", hits[2], c->size,
                   (double)hits[0] / hits[2], hits[0], topk, (double)hits[1] / hits[2], hits[1]);
    }
    free(idx);
    mn_free_list(&shard);
    free_network(net);
    return s;
}
