/* libFuzzer target: the network cfg check (mn_cfg_read) that runs before
 * Darknet's parser, on one MPI rank (run under `mpiexec -n 1`). The input is
 * the cfg file. Checks: no crash, no leak; the status is MN_OK or
 * MN_ERR_USER; what it accepts starts with [net] or [network] (after blank
 * and comment lines) and Darknet's read_cfg (patch 0007) reads as many
 * sections, the first of them the network's. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"
#include "fuzz.h"
#include "list.h"
#include "option_list.h"
#include "parser.h"

/* parser.c's, not in its header. */
typedef struct {
    char *type;
    list *options;
} section;
list *read_cfg(char *filename);

static char cfgfile[256];

static void finish(void)
{
    unlink(cfgfile);
    fuzz_mpi_finish();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_mpi_init(argc, argv);
    fuzz_tmp_path(cfgfile, sizeof cfgfile, "fuzz_cfg.cfg");
    atexit(finish);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *fp = fopen(cfgfile, "wb");
    CHECK(fp && fwrite(data, 1, size, fp) == size && fclose(fp) == 0);
    mn_options opt;
    mn_status s = mn_cfg_read(fuzz_comm, cfgfile, &opt);
    CHECK(s == MN_OK || s == MN_ERR_USER);
    if (s == MN_OK) {
        list *sections = read_cfg(cfgfile);
        CHECK(sections->size >= 1);
        section *first = sections->front->val;
        CHECK(!strcmp(first->type, "[net]") || !strcmp(first->type, "[network]"));
        for (node *n = sections->front; n; n = n->next) {
            section *sec = n->val;
            for (node *o = sec->options->front; o; o = o->next) {
                kvp *p = o->val;
                CHECK(p->key && p->key[0] && p->val);   /* every line was key=value */
                free(p->key);
                free(p);
            }
            free_list(sec->options);
            free(sec->type);
            free(sec);
        }
        free_list(sections);
    }
    return 0;
}
