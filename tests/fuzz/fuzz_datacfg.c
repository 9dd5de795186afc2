/* libFuzzer target: data cfg reading and label matching (mn_read_data_cfg,
 * mn_path_class), on one MPI rank (run under `mpiexec -n 1`).
 * The input holds three parts separated by lines "%%": the data cfg, the
 * labels file, and paths to classify. "@L" in the data cfg stands for the
 * labels file's name; an input starting with '!' reads for the detector
 * (no labels). Checks: the status is MN_OK or MN_ERR_USER; on MN_OK for the
 * classifier, classes >= 1, at least classes labels, none of them empty;
 * each path's class is the one label it contains, or -1 with the number of
 * labels it contains (not 1); mn_free_data_cfg leaves no leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"
#include "fuzz.h"


static char cfgfile[256], labelsfile[256];

static void finish(void)
{
    unlink(cfgfile);
    unlink(labelsfile);
    fuzz_mpi_finish();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_mpi_init(argc, argv);
    fuzz_tmp_path(cfgfile, sizeof cfgfile, "fuzz_datacfg.data");
    fuzz_tmp_path(labelsfile, sizeof labelsfile, "fuzz_datacfg.labels");
    atexit(finish);
    return 0;
}

/* The next part of [*p, end): up to a line "%%" (or the end). */
static const uint8_t *part(const uint8_t **p, const uint8_t *end, size_t *len)
{
    const uint8_t *start = *p;
    for (const uint8_t *q = start; q < end; ++q) {
        if ((q == start || q[-1] == '\n') && end - q >= 3 && !memcmp(q, "%%\n", 3)) {
            *len = (size_t)(q - start);
            *p = q + 3;
            return start;
        }
    }
    *len = (size_t)(end - start);
    *p = end;
    return start;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    mn_task task = MN_TASK_CLASSIFIER;
    if (size && data[0] == '!') { task = MN_TASK_DETECTOR; ++p; }
    size_t nc, nl, np;
    const uint8_t *cfg = part(&p, end, &nc), *labels = part(&p, end, &nl), *paths = part(&p, end, &np);

    FILE *fp = fopen(cfgfile, "wb");
    CHECK(fp);
    for (size_t i = 0; i < nc; ++i) {
        if (i + 1 < nc && cfg[i] == '@' && cfg[i + 1] == 'L') { fputs(labelsfile, fp); ++i; }
        else fputc(cfg[i], fp);
    }
    CHECK(fclose(fp) == 0);
    fp = fopen(labelsfile, "wb");
    CHECK(fp && fwrite(labels, 1, nl, fp) == nl && fclose(fp) == 0);

    mn_data_cfg d;
    mn_status s = mn_read_data_cfg(fuzz_comm, cfgfile, task, &d);
    CHECK(s == MN_OK || s == MN_ERR_USER);
    if (s == MN_OK && task == MN_TASK_CLASSIFIER) {
        CHECK(d.classes >= 1 && d.nlabels >= d.classes && d.labels);
        for (int i = 0; i < d.classes; ++i) CHECK(d.labels[i] && d.labels[i][0]);
        /* Paths: one a line, NUL-terminated copies. */
        for (size_t i = 0; i < np;) {
            const uint8_t *nlp = memchr(paths + i, '\n', np - i);
            size_t len = nlp ? (size_t)(nlp - (paths + i)) : np - i;
            char *path = strndup((const char *)paths + i, len);
            i += len + 1;
            int m = -7, cls = mn_path_class(d.labels, d.classes, path, &m), contained = 0;
            for (int j = 0; j < d.classes; ++j) contained += strstr(path, d.labels[j]) != NULL;
            CHECK(m == contained);
            if (contained == 1) CHECK(cls >= 0 && cls < d.classes && strstr(path, d.labels[cls]));
            else CHECK(cls == -1);
            free(path);
        }
    }
    if (s == MN_OK) mn_free_data_cfg(&d);
    return 0;
}
