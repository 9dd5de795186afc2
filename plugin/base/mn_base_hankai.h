/* hank-ai's Darknet V5 as the plugin's C sees it: its headers are C++, so
 * network, layer and the option list stay opaque here and only
 * mn_base_hankai.cpp casts them to the fork's types. */
#ifndef MN_MN_BASE_HANKAI_H
#define MN_MN_BASE_HANKAI_H

#include <stdint.h>
#ifdef __cplusplus
#include "darknet_internal.hpp"
typedef Darknet::Tree tree;
#else
#define DARKNET_INCLUDE_ORIGINAL_API   /* box, detection, NMS_KIND */
#include "darknet.h"
typedef struct tree tree;
typedef struct list list;
#endif
typedef struct network network;        /* a Darknet::Network */
typedef struct layer layer;            /* a Darknet::Layer */

#endif
