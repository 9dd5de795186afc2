/* libFuzzer target: the cfg's [distributed] keys (mn_option_set, which
 * mn_cfg_read calls for each line of the section). The input is the
 * section's text: every line goes through Darknet's own strip() and
 * read_option() as read_cfg does. Checks: no crash; a refused line comes
 * with a reason; when every line is taken, every field is in its range and
 * each numeric field holds the value of the last line that set it. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"
#include "fuzz.h"
#include "option_list.h"
#include "utils.h"


/* The value of the last line with this key, or NULL. */
static const char *last(list *o, const char *key)
{
    const char *v = NULL;
    for (node *n = o->front; n; n = n->next) {
        kvp *p = n->val;
        if (!strcmp(p->key, key)) v = p->val;
    }
    return v;
}

static void check_num(list *o, const char *key, int field, long lo)
{
    const char *v = last(o, key);
    CHECK(field >= lo);
    if (v) CHECK(strtol(v, NULL, 10) == field);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_keep_stderr();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    list *o = make_list();
    /* Lines as read_cfg sees them: fgetl stops at '\n' and a NUL ends a line's text. */
    for (size_t i = 0; i < size;) {
        const uint8_t *nl = memchr(data + i, '\n', size - i);
        size_t len = nl ? (size_t)(nl - (data + i)) : size - i;
        char *line = malloc(len + 1);
        memcpy(line, data + i, len);
        line[len] = 0;
        i += len + 1;
        strip(line);
        if (line[0] == 0 || line[0] == '#' || line[0] == ';' || line[0] == '[' || !read_option(line, o)) free(line);
    }
    mn_options opt;
    mn_default_options(&opt);
    int taken = 1;
    for (node *n = o->front; n && taken; n = n->next) {
        kvp *p = n->val;
        char why[600] = "";
        if (!p->val) continue;   /* a line without '=': mn_cfg_read refuses it before the keys */
        taken = mn_option_set(&opt, p->key, p->val, why, sizeof why);
        CHECK(taken || why[0]);
        CHECK(memchr(why, 0, sizeof why));
    }
    if (taken) {
        CHECK(opt.communicator[0] == 0 || mn_comm_check_name(opt.communicator) == NULL);
        CHECK(memchr(opt.communicator, 0, sizeof opt.communicator));
        CHECK(opt.grad_dtype_half == 0 || opt.grad_dtype_half == 1);
        CHECK(opt.double_buffering == 0 || opt.double_buffering == 1);
        CHECK(opt.bn_average == 0 || opt.bn_average == 1);
        CHECK(opt.sync_bn == 0 || opt.sync_bn == 1);
        CHECK(opt.deterministic == 0 || opt.deterministic == 1);
        CHECK(opt.shuffle == 0 || opt.shuffle == 1);
        CHECK(opt.nonfinite_skip == 0 || opt.nonfinite_skip == 1);
        CHECK(memchr(opt.eval_list, 0, sizeof opt.eval_list) && memchr(opt.timeline, 0, sizeof opt.timeline));
        check_num(o, "eval_interval", opt.eval_interval, 0);
        check_num(o, "seed", opt.seed, 0);
        check_num(o, "backup_interval", opt.backup_interval, 1);
        check_num(o, "save_interval", opt.save_interval, 1);
        check_num(o, "checkpoint_interval", opt.checkpoint_interval, 0);
        check_num(o, "checkpoint_keep", opt.checkpoint_keep, 1);
        check_num(o, "collective_timeout", opt.collective_timeout, 0);
        check_num(o, "lock_lease", opt.lock_lease, 1);
    }
    for (node *n = o->front; n; n = n->next) {
        kvp *p = n->val;
        free(p->key);
        free(p);
    }
    free_list(o);
    return 0;
}
