/* GPU placement (mn_gpu_select, a pure function): the device, whether the
 * rank has it to itself, the default communicator and the refusals, for a
 * table of cases with the exact outputs expected. No MPI, no CUDA. */
#include <stdio.h>
#include <string.h>
#include "mn_gpu.h"

typedef struct {
    mn_gpu_in in;
    const char *requested;
    int device, own;
    const char *fallback;
    const char *error;   /* "" or a part of the message */
} gpu_case;

static const gpu_case cases[] = {
    /* visible, local rank, local size, nogpu, nccl, ranks on this rank's physical GPU */
    {{4, 0, 4, 0, 1, 0}, "", 0, 1, "pure_nccl", ""},                    /* one GPU per rank */
    {{4, 3, 4, 0, 1, 0}, "pure_nccl", 3, 1, "pure_nccl", ""},
    {{4, 3, 4, 0, 0, 0}, "", 3, 1, "flat", ""},                         /* GPU build without NCCL */
    {{4, 2, 3, 0, 1, 0}, NULL, 2, 1, "pure_nccl", ""},                  /* fewer ranks than GPUs */
    {{1, 0, 1, 0, 1, 0}, "", 0, 1, "pure_nccl", ""},                    /* --gpus-per-task=1: a group of one */
    {{2, 3, 4, 0, 1, 0}, "", 1, 0, "flat", ""},                         /* 4 ranks on 2 GPUs: 3 -> 1 */
    {{2, 2, 4, 0, 1, 0}, "flat", 0, 0, "flat", ""},                     /* shared GPUs: MPI communicators may */
    {{2, 2, 4, 0, 1, 0}, "hierarchical", 0, 0, "flat", ""},
    {{2, 1, 4, 0, 1, 0}, "pure_nccl", 1, 0, "flat",
     "communicator 'pure_nccl' needs a GPU of its own per rank: 4 ranks of this host share 2 visible GPUs; "
     "start at most 2 ranks per host, or use flat, hierarchical or two_dimensional"},
    {{1, 1, 2, 0, 1, 0}, "pure_nccl", 0, 0, "flat", "2 ranks of this host share 1 visible GPU; start at most 1 rank per host"},
    {{4, 1, 4, 1, 1, 0}, "", -1, 0, "flat", ""},                        /* -nogpu */
    {{4, 1, 4, 1, 1, 0}, "pure_nccl", -1, 0, "flat",
     "communicator 'pure_nccl' needs a GPU per rank; this rank runs on the CPU (-nogpu)"},
    {{0, 1, 4, 0, 1, 0}, "pure_nccl", -1, 0, "flat", "this rank runs on the CPU (no CUDA device visible)"},
    {{0, 0, 2, 0, 0, 0}, "", -1, 0, "flat", ""},                        /* a CPU build */
    {{0, 0, 2, 0, 0, 0}, "pure_nccl", -1, 0, "flat", ""},               /* refused by the NCCL stub instead */
    {{0, 0, 2, 1, 0, 0}, "naive", -1, 0, "flat", ""},
    {{0, 0, 0, 0, 0, 0}, "", -1, 0, "flat", ""},                        /* never placed (mn_comm_create) */
    {{8, 5, 8, 0, 1, 0}, "two_dimensional", 5, 1, "pure_nccl", ""},
    {{2, 1, 2, 0, 1, 1}, "pure_nccl", 1, 1, "pure_nccl", ""},           /* counted: alone on its GPU */
    {{2, 1, 2, 0, 1, 2}, "", 1, 0, "flat", ""},                         /* visible sets overlap: {0,1} and {1} */
    {{2, 1, 2, 0, 1, 2}, "pure_nccl", 1, 0, "flat",
     "2 ranks of this host are on this rank's GPU (their CUDA_VISIBLE_DEVICES overlap)"},
    {{1, 0, 1, 0, 1, 3}, "flat", 0, 0, "flat", ""},
};

int main(void)
{
    int failures = 0, n = (int)(sizeof cases / sizeof *cases);
    for (int i = 0; i < n; ++i) {
        const gpu_case *k = &cases[i];
        mn_gpu_out o;
        memset(&o, 0x5a, sizeof o);
        mn_gpu_select(&k->in, k->requested, &o);
        int good = o.device == k->device && o.own == k->own && !strcmp(o.fallback, k->fallback) &&
                   (k->error[0] ? strstr(o.error, k->error) != NULL : o.error[0] == 0);
        if (!good) {
            ++failures;
            fprintf(stderr, "FAIL case %d (visible %d, local %d/%d, nogpu %d, nccl %d, sharers %d, '%s'): device %d own %d "
                            "default %s error '%s'; want %d %d %s '%s'\n", i, k->in.visible, k->in.local_rank,
                    k->in.local_size, k->in.nogpu, k->in.nccl, k->in.sharers, k->requested ? k->requested : "(null)", o.device,
                    o.own, o.fallback, o.error, k->device, k->own, k->fallback, k->error);
        }
    }
    printf("test_gpu_select: %d cases, %d failed\n", n, failures);
    return failures != 0;
}
