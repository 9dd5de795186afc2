/* darknet-mn: synchronous data-parallel training for Darknet over MPI, one
 * process per core or GPU: the gradients are averaged before every update,
 * so N processes with batch b train like one with batch N*b. The whole
 * public API, the public header of each layer that has one (docs/design.md);
 * a network is an opaque handle, so a program needs no Darknet header. */
#ifndef DARKNET_MN_H
#define DARKNET_MN_H

#include "mn_status.h"     /* core: the job handle, status codes, errors, agreement */
#include "mn_comm.h"       /* coll: the communicator, GPU placement, the gradient mean */
#include "mn_training.h"   /* train: options, networks, the optimizer, weights, lists, mAP */
#include "mn_cmd.h"        /* cmd: the commands of ./darknet_mn */

#endif
