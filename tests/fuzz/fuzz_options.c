/* libFuzzer target: the cfg's [distributed] section (mn_parse_options).
 * The input is the section's text: every line goes through Darknet's own
 * strip() and read_option() as read_cfg does, into the kvp list that the
 * parser hands to net->distributed. Checks: no crash; the status is MN_OK,
 * MN_ERR_USER or MN_ERR_UNAVAILABLE; on MN_OK every field is in its range,
 * every key was marked used, and each numeric field holds the value of the
 * last line that set it. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mn_internal.h"
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
    network net = {0};
    net.distributed = o;
    mn_options opt;
    mn_status s = mn_parse_options(&net, "fuzz.cfg", 1, &opt);
    CHECK(s == MN_OK || s == MN_ERR_USER || s == MN_ERR_UNAVAILABLE);
    if (s == MN_OK) {
        CHECK(opt.communicator[0] == 0 || mn_comm_check_name(opt.communicator) == NULL);
        CHECK(memchr(opt.communicator, 0, sizeof opt.communicator));
        CHECK(opt.grad_dtype_half == 0 || opt.grad_dtype_half == 1);
        CHECK(opt.double_buffering == 0 || opt.double_buffering == 1);
        CHECK(opt.bn_average == 0 || opt.bn_average == 1);
        CHECK(opt.sync_bn == 0 || opt.sync_bn == 1);
        CHECK(opt.deterministic == 0 || opt.deterministic == 1);
        CHECK(opt.shuffle == 0 || opt.shuffle == 1);
        CHECK(opt.nonfinite_skip == 0 || opt.nonfinite_skip == 1);
        CHECK(!opt.eval_list || opt.eval_list[0]);
        check_num(o, "eval_interval", opt.eval_interval, 0);
        check_num(o, "seed", opt.seed, 0);
        check_num(o, "backup_interval", opt.backup_interval, 1);
        check_num(o, "save_interval", opt.save_interval, 1);
        check_num(o, "checkpoint_interval", opt.checkpoint_interval, 0);
        check_num(o, "checkpoint_keep", opt.checkpoint_keep, 1);
        check_num(o, "collective_timeout", opt.collective_timeout, 0);
        for (node *n = o->front; n; n = n->next) CHECK(((kvp *)n->val)->used);
    }
    for (node *n = o->front; n; n = n->next) {
        kvp *p = n->val;
        free(p->key);
        free(p);
    }
    free_list(o);
    return 0;
}
