/* GPU placement (mn_gpu_select, a pure function): the device and whether
 * the rank has it to itself; and what the communicators' queries make of
 * it: auto's choice for a job of ranks like this one (pure_nccl where it
 * may, else flat), the communicator requested accepted, or pure_nccl's
 * refusal; for a table of cases with the exact outputs expected. No MPI,
 * no CUDA. */
#include <stdio.h>
#include <string.h>
#include "coll/mn_coll.h"

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

static const mn_comm_ops *const all[] = {&mn_comm_naive_ops, &mn_comm_flat_ops, &mn_comm_hierarchical_ops,
                                         &mn_comm_two_dimensional_ops, &mn_comm_single_node_ops, &mn_comm_pure_nccl_ops};
#define NALL ((int)(sizeof all / sizeof *all))

/* The answer of the algorithm named (NULL, "": auto's) on one node of
 * local_size ranks like k; *chosen: the one a job of such ranks gets. */
static void answer(const gpu_case *k, const mn_gpu_out *o, mn_comm_answer *a, const char **chosen)
{
    mn_comm_shape s = {.ranks = k->in.local_size, .nodes = 1, .per_node = k->in.local_size, .gpu = k->in,
                       .device = o->device, .own = o->own};
    int best = -1;
    mn_comm_answer mine[NALL];
    for (int i = 0; i < NALL; ++i) {
        memset(&mine[i], 0, sizeof mine[i]);
        all[i]->query(&s, &mine[i]);
        if (mine[i].refused == MN_OK && (best < 0 || mine[i].priority > mine[best].priority)) best = i;
        if (k->requested && !strcmp(k->requested, all[i]->name)) *a = mine[i];
    }
    *chosen = all[best]->name;
    if (!k->requested || !*k->requested) *a = mine[best];
}

int main(void)
{
    int failures = 0, n = (int)(sizeof cases / sizeof *cases);
    for (int i = 0; i < n; ++i) {
        const gpu_case *k = &cases[i];
        mn_gpu_out o;
        mn_comm_answer a;
        const char *chosen = "";
        memset(&o, 0x5a, sizeof o);
        memset(&a, 0x5a, sizeof a);
        mn_gpu_select(&k->in, &o);
        answer(k, &o, &a, &chosen);
        /* pure_nccl where NCCL is not in the build is refused by the build's message instead */
        int by_build = k->requested && !strcmp(k->requested, "pure_nccl") && !k->in.nccl;
        const char *error = a.refused == MN_OK ? "" : a.why;
        int good = o.device == k->device && o.own == k->own && !strcmp(chosen, k->fallback) &&
                   (by_build ? a.refused == MN_ERR_UNAVAILABLE
                    : k->error[0] ? a.refused == MN_ERR_USER && strstr(error, k->error) != NULL : a.refused == MN_OK);
        if (!good) {
            ++failures;
            fprintf(stderr, "FAIL case %d (visible %d, local %d/%d, nogpu %d, nccl %d, sharers %d, '%s'): device %d own %d "
                            "default %s error '%s'; want %d %d %s '%s'\n", i, k->in.visible, k->in.local_rank,
                    k->in.local_size, k->in.nogpu, k->in.nccl, k->in.sharers, k->requested ? k->requested : "(null)", o.device,
                    o.own, chosen, error, k->device, k->own, k->fallback, k->error);
        }
    }
    printf("test_gpu_select: %d cases, %d failed\n", n, failures);
    return failures != 0;
}
