/* hank-ai's Darknet V5 (MN_BASE_HANKAI) as the plugin's C files see it: its
 * headers are C++ but for darknet.h, so the plugin's C includes this instead
 * of a darknet.h of its own. The network, its layers and a data cfg's
 * option list stay opaque (only pointers cross; mn_base_hankai.cpp casts
 * them to the fork's types); the plain structs the plugin reads are the
 * fork's own C header's (box, detection) or the plugin's (mn_batch,
 * mn_image, mn_truth): no layout of the fork's is copied. */
#ifndef MN_MN_BASE_HANKAI_H
#define MN_MN_BASE_HANKAI_H

#include <stdint.h>
#ifdef __cplusplus
/* The adapter: the fork's own definitions of every type below. */
#include "darknet_internal.hpp"
typedef Darknet::Tree tree;
#else
#define DARKNET_INCLUDE_ORIGINAL_API   /* box, detection, NMS_KIND */
#include "darknet.h"
typedef struct tree tree;              /* a classifier's label tree: opaque here */
typedef struct list list;              /* a data cfg's options (mn_base_util.h): opaque here */
#endif
typedef struct network network;        /* a Darknet::Network */
typedef struct layer layer;            /* a Darknet::Layer */

#endif
