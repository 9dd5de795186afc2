/* The Darknet underneath: what differs between pjreddie's Darknet (Debian's
 * package) and AlexeyAB's fork, behind one interface. One adapter per base
 * (mn_base_pjreddie.c, mn_base_alexeyab.c); the Makefile's DARKNET= picks it
 * (MN_BASE_ALEXEYAB), and the other file compiles to nothing. The rest of the
 * plugin holds a network * and calls these instead of the Darknet functions
 * whose signatures differ between the bases. */
#ifndef MN_MN_BASE_H
#define MN_MN_BASE_H

#include <stddef.h>
#include "darknet.h"
#ifdef MN_BASE_ALEXEYAB
/* The fork keeps these out of darknet.h (its network.h would bring utils.h,
 * whose names collide with the plugin's). */
#include "list.h"
#include "data.h"
#include "box.h"
int resize_network(network *net, int w, int h);
char *get_layer_string(LAYER_TYPE a);
void load_weights(network *net, char *filename);
#endif

/* "pjreddie" or "alexeyab". */
const char *mn_base_name(void);
/* parse_network_cfg on the heap (the fork returns the network by value). */
network *mn_base_parse(const char *cfgfile);
void mn_base_free(network *net);
/* The global iteration (seen / (batch * subdivisions * ranks)) and its
 * learning rate. */
size_t mn_base_iteration(const network *net);
float mn_base_rate(const network *net);
/* One update: the rows of d in subdivisions of net->batch; returns the loss. */
float mn_base_train(network *net, data d);
/* This rank's loss on its last subdivision (read in the update hook). */
float mn_base_cost(const network *net);
/* Darknet's save_weights_upto: the first cutoff layers (net->n: all). */
void mn_base_save_weights(network *net, const char *path, int cutoff);
float *mn_base_predict(network *net, float *input);
/* The input a detector sees for im, as the base's own validation makes it
 * (pjreddie letterboxes, the fork resizes); *letter tells mn_base_boxes. */
image mn_base_detector_input(const network *net, image im, int *letter);
detection *mn_base_boxes(network *net, int w, int h, float thresh, float hier, int relative, int letter, int *num);
void mn_base_hierarchy(float *pred, int n, tree *hier);
/* Floats per truth box of the last layer, and one image's truth boxes as the
 * training loader writes them (no augmentation). */
int mn_base_truth_size(const network *net);
void mn_base_fill_truth(const network *net, const char *path, int boxes, float *truth, int classes);
/* The base's own detector loader arguments (augmentation keys of [net] and
 * the last layer) on top of get_base_args and the last layer's coords,
 * classes, jitter and max_boxes. */
void mn_base_detector_args(network *net, load_args *a);
/* The adapter also defines mn_layer_params (mn_params.h): the parameter
 * arrays of each layer type the base saves. For a layer it refuses (-1
 * there), what the layer is, for the message ("a shortcut layer with
 * weights"); NULL for a layer it can train. */
const char *mn_base_refused_layer(const layer *l);
/* Features this base cannot run in this build (sync_bn: only where every
 * batch-norm site calls the hook); NULL when all is well, else why not. */
const char *mn_base_refuse(const network *net, int sync_bn);

#endif
