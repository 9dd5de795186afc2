/* The training layer's headers (plugin/train), and every layer below it:
 * the subsystems and the commands include this one. */
#ifndef MN_INTERNAL_H
#define MN_INTERNAL_H

#include "mn_training.h"
#include "mn_coll.h"
#include "mn_base.h"
#include "mn_engine.h"
#include "mn_dbuf.h"
#include "mn_weights.h"
#include "mn_data.h"
#include "mn_optimizer.h"
#include "mn_lock.h"
#include "mn_checkpoint.h"
#include "mn_eval.h"

#endif
