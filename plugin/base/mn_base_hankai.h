/* hank-ai's Darknet V5 (MN_BASE_HANKAI) as the plugin's C files see it: its
 * headers are C++ but for darknet.h, so the plugin's C includes this instead
 * of a darknet.h of its own. The network and its layers stay opaque (only
 * pointers cross; mn_base_hankai.cpp casts them to Darknet::Network and
 * Darknet::Layer); the plain structs the plugin reads are the fork's own
 * (image, box, detection from its C header) or copies of its layouts
 * (mn_base_hankai_types.h), which the adapter checks field by field
 * against the fork's definitions when it compiles. */
#ifndef MN_MN_BASE_HANKAI_H
#define MN_MN_BASE_HANKAI_H

#include <stdint.h>
#ifdef __cplusplus
/* The adapter: the fork's own definitions of every type below. */
#include "darknet_internal.hpp"
typedef Darknet::Tree tree;
#else
#define DARKNET_INCLUDE_ORIGINAL_API   /* image, box, detection, NMS_KIND */
#include "darknet.h"
#include "mn_base_hankai_types.h"
typedef struct tree tree;              /* a classifier's label tree: opaque here */
#endif
typedef struct network network;        /* a Darknet::Network */
typedef struct layer layer;            /* a Darknet::Layer */

#endif
