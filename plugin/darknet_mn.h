/* darknet-mn: synchronous data-parallel training for Darknet over MPI.
 *
 * One MPI process per core (or GPU). A communicator sums the gradients of all
 * processes before every weight update, so N processes with batch b train
 * like one process with batch N*b. This header is the whole public API: the
 * public header of each layer that has one (docs/design.md), none of which
 * names Darknet: a network is an opaque handle, and a program built against
 * this header needs no Darknet header. */
#ifndef DARKNET_MN_H
#define DARKNET_MN_H

#include "mn_status.h"     /* core: the job handle, status codes, errors, agreement */
#include "mn_comm.h"       /* coll: the communicator, GPU placement, the gradient mean */
#include "mn_training.h"   /* train: options, networks, the optimizer, weights, lists, mAP */
#include "mn_cmd.h"        /* cmd: the commands of ./darknet_mn */

#endif
