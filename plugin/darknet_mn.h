/* darknet-mn: synchronous data-parallel training for Darknet over MPI, one
 * process per core or GPU: the gradients are averaged before every update,
 * so N processes with batch b train like one with batch N*b. The whole
 * public API, the public header of each layer that has one (docs/design.md);
 * a network is an opaque handle, so a program needs no Darknet header. */
#ifndef DARKNET_MN_H
#define DARKNET_MN_H

#include "core/mn_status.h"      /* the job handle, status codes, errors, agreement */
#include "coll/mn_comm.h"        /* the communicator, GPU placement, the gradient mean */
#include "train/mn_training.h"   /* options, networks, the optimizer, weights, lists, mAP */
#include "cmd/mn_cmd.h"          /* the commands of ./darknet_mn */

#endif
