/* libFuzzer target: list files through mn_scatter_list and mn_bcast_list on
 * one MPI rank (run under `mpiexec -n 1`; MPI_Init in LLVMFuzzerInitialize).
 * The input is written to a temporary list file. Checks against a model of
 * the format (a path per line, trailing CR, LF and spaces dropped, empty
 * lines skipped; a NUL byte makes the file invalid): the status is MN_OK
 * exactly when the model finds a path; then n equals the model's count, the
 * one shard is the whole list (offset 0, global_n = n), the broadcast list is
 * the model's in order and the shuffled scatter is a permutation of it. */
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


static char file[256];

static void finish(void)
{
    unlink(file);
    fuzz_mpi_finish();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_mpi_init(argc, argv);
    fuzz_tmp_path(file, sizeof file, "fuzz_list");
    atexit(finish);
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The model's paths (pointers into text, a copy of the input). */
static size_t model_paths(char *text, size_t size, char **out)
{
    size_t k = 0;
    for (size_t i = 0; i < size;) {
        char *line = text + i, *nl = memchr(line, '\n', size - i);
        size_t len = nl ? (size_t)(nl - line) : size - i;
        i += len + 1;
        while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ')) --len;
        line[len] = 0;
        if (len) out[k++] = line;
    }
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *fp = fopen(file, "wb");
    CHECK(fp && fwrite(data, 1, size, fp) == size && fclose(fp) == 0);
    char *text = malloc(size + 1), **want = malloc((size + 1) * sizeof *want);
    memcpy(text, data, size);
    size_t k = model_paths(text, size, want);
    int valid = k > 0 && !memchr(data, 0, size);

    mn_list b, sc;
    mn_status s = mn_bcast_list(fuzz_comm, file, 0, 1, &b);
    CHECK(s == (valid ? MN_OK : MN_ERR_USER));
    if (s == MN_OK) {
        CHECK(b.n == k && b.global_n == k && b.offset == 0);
        for (size_t i = 0; i < k; ++i) CHECK(!strcmp(b.paths[i], want[i]));
    }
    mn_free_list(&b);

    s = mn_scatter_list(fuzz_comm, file, 1, (int)(size * 2654435761u >> 1), &sc);
    CHECK(s == (valid ? MN_OK : MN_ERR_USER));
    if (s == MN_OK) {
        CHECK(sc.n == k && sc.global_n == k && sc.offset == 0);
        qsort(sc.paths, sc.n, sizeof *sc.paths, cmp);
        qsort(want, k, sizeof *want, cmp);
        for (size_t i = 0; i < k; ++i) CHECK(!strcmp(sc.paths[i], want[i]));
    }
    mn_free_list(&sc);
    free(text);
    free(want);
    return 0;
}
