/* The GPU paths' host logic, without a GPU (mn_wait.h, mn_sync.h,
 * mn_gpu.h, mn_pack.h): the wait loop every
 * NCCL wait goes through, with stubbed polls and a stubbed clock (done,
 * error, timeout; each failure aborts exactly once); the route of an update
 * step (one rank takes no mean); the node legs' plan (one node has no
 * inter-node leg); the pack kernels' index maths, run here on host arrays
 * as the kernels run it; cuDNN's version numbers of both formats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "transport/mn_transport.h"
#include "train/optimizer/mn_sync.h"
#include "mn_expect.h"
#include "transport/mn_gpu.h"
#include "transport/mn_pack.h"
#include "transport/mn_wait.h"


/* A stub: `script` is the poll results in order (the last repeats); the
 * clock advances `tick` seconds per pause. */
typedef struct {
    const mn_poll *script;
    int len, polls, aborts, pauses;
    double clock, tick;
} stub;

static mn_poll stub_poll(void *a)
{
    stub *s = a;
    int i = s->polls++;
    return s->script[i < s->len ? i : s->len - 1];
}
static void stub_abort(void *a) { ((stub *)a)->aborts++; }
static double stub_now(void *a) { return ((stub *)a)->clock; }
static void stub_pause(void *a, double waited)
{
    stub *s = a;
    (void)waited;
    s->pauses++;
    s->clock += s->tick;
}

static mn_poll run_wait(stub *s, double timeout)
{
    mn_waiter w = {stub_poll, stub_abort, stub_now, stub_pause, s};
    return mn_wait(&w, timeout);
}

static void test_wait(void)
{
    const mn_poll done_third[] = {MN_POLL_PENDING, MN_POLL_PENDING, MN_POLL_DONE};
    stub s = {done_third, 3, 0, 0, 0, 0, 1};
    EXPECT(run_wait(&s, 10) == MN_POLL_DONE && s.polls == 3 && s.aborts == 0, "done: %d polls, %d aborts", s.polls, s.aborts);

    const mn_poll error_second[] = {MN_POLL_PENDING, MN_POLL_ERROR, MN_POLL_DONE};
    stub e = {error_second, 3, 0, 0, 0, 0, 1};
    EXPECT(run_wait(&e, 10) == MN_POLL_ERROR && e.polls == 2 && e.aborts == 1, "error: %d polls, %d aborts", e.polls, e.aborts);

    const mn_poll never[] = {MN_POLL_PENDING};
    stub t = {never, 1, 0, 0, 0, 100, 1};   /* the clock starts anywhere */
    mn_poll p = run_wait(&t, 5);
    EXPECT(p == MN_POLL_TIMEOUT && t.aborts == 1 && t.clock > 105 && t.clock <= 107,
           "timeout: result %d after %g s, %d aborts", (int)p, t.clock - 100, t.aborts);

    /* No limit (collective_timeout=0): a long wait still ends when done, and an error is still read. */
    mn_poll *slow = malloc(1001 * sizeof *slow);
    for (int i = 0; i < 1000; ++i) slow[i] = MN_POLL_PENDING;
    slow[1000] = MN_POLL_DONE;
    stub u = {slow, 1001, 0, 0, 0, 0, 60};
    EXPECT(run_wait(&u, 0) == MN_POLL_DONE && u.aborts == 0 && u.polls == 1001, "no limit: %d polls, %d aborts", u.polls, u.aborts);
    slow[1000] = MN_POLL_ERROR;
    stub v = {slow, 1001, 0, 0, 0, 0, 60};
    EXPECT(run_wait(&v, 0) == MN_POLL_ERROR && v.aborts == 1, "no limit, error: %d aborts", v.aborts);
    free(slow);

    /* Done on the first poll past the deadline: done (nothing to abort). */
    const mn_poll late[] = {MN_POLL_PENDING, MN_POLL_PENDING, MN_POLL_DONE};
    stub l = {late, 3, 0, 0, 0, 0, 10};
    EXPECT(run_wait(&l, 15) == MN_POLL_DONE && l.aborts == 0, "done past the deadline: done, %d aborts", l.aborts);
}

static void test_routes(void)
{
    EXPECT(mn_sync_route(0, 1, 0) == MN_ROUTE_HOST && mn_sync_route(0, 4, 1) == MN_ROUTE_HOST, "CPU runs: host");
    EXPECT(mn_sync_route(1, 1, 0) == MN_ROUTE_LOCAL && mn_sync_route(1, 1, 1) == MN_ROUTE_LOCAL,
           "one GPU rank: no mean, no copies");
    EXPECT(mn_sync_route(1, 2, 1) == MN_ROUTE_DEVICE, "NCCL: on the device");
    EXPECT(mn_sync_route(1, 2, 0) == MN_ROUTE_STAGED, "MPI: staged");
    EXPECT(mn_nccl_legs(1, 0) == MN_LEGS_NODE_AVG && mn_nccl_legs(1, 1) == MN_LEGS_NODE_AVG,
           "one node: no inter-node leg, for hierarchical and two_dimensional");
    EXPECT(mn_nccl_legs(2, 0) == MN_LEGS_REDUCE_BCAST && mn_nccl_legs(3, 1) == MN_LEGS_SCATTER_GATHER, "several nodes: three legs");
}

/* The pack kernels' loop on the host: every element through mn_pack_find. */
static void pack_like_kernel(float *packed, float **ptrs, const size_t *offs, int n, size_t total, int to)
{
    for (size_t i = 0; i < total; ++i) {
        int k = mn_pack_find(offs, n, i);
        float *p = ptrs[k] + (i - offs[k]);
        if (to) packed[i] = *p;
        else *p = packed[i];
    }
}

static void test_pack(void)
{
    unsigned seed = 7;
    for (int trial = 0; trial < 200; ++trial) {
        int n = 1 + (int)(rand_r(&seed) % 40);
        size_t lens[41], offs[42];
        for (int k = 0; k < n; ++k) lens[k] = rand_r(&seed) % 4 == 0 ? 0 : rand_r(&seed) % 300;   /* empty arrays too */
        size_t total = mn_pack_offsets(lens, n, offs);
        size_t sum = 0;
        for (int k = 0; k < n; ++k) { EXPECT(offs[k] == sum, "trial %d: offs[%d]", trial, k); sum += lens[k]; }
        EXPECT(total == sum && offs[n] == sum, "trial %d: total %zu, want %zu", trial, total, sum);
        for (size_t i = 0; i < total; ++i) {
            int k = mn_pack_find(offs, n, i);
            if (!(k >= 0 && k < n && offs[k] <= i && i < offs[k] + lens[k])) {
                EXPECT(0, "trial %d: element %zu found in array %d [%zu, %zu)", trial, i, k, offs[k], offs[k] + lens[k]);
                break;
            }
        }
        /* Packing is concatenation, and unpacking puts every value back where it was. */
        float *src[41], *back[41], *packed = malloc((total + 1) * sizeof(float));
        for (int k = 0; k < n; ++k) {
            src[k] = malloc((lens[k] + 1) * sizeof(float));
            back[k] = calloc(lens[k] + 1, sizeof(float));
            for (size_t j = 0; j < lens[k]; ++j) src[k][j] = (float)(k * 1000 + (int)j);
        }
        pack_like_kernel(packed, src, offs, n, total, 1);
        pack_like_kernel(packed, back, offs, n, total, 0);
        int same = 1;
        for (int k = 0; k < n; ++k)
            for (size_t j = 0; j < lens[k]; ++j) {
                same &= packed[offs[k] + j] == src[k][j];
                same &= back[k][j] == src[k][j];
            }
        EXPECT(same, "trial %d: pack/unpack is not concatenation and back", trial);
        for (int k = 0; k < n; ++k) { free(src[k]); free(back[k]); }
        free(packed);
    }
}

static void test_cudnn_version(void)
{
    static const struct { size_t v; int major, minor, patch; } cases[] = {
        {91900, 9, 19, 0}, {90100, 9, 1, 0}, {90000, 9, 0, 0}, {8907, 8, 9, 7}, {8600, 8, 6, 0}, {7605, 7, 6, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        int a, b, p;
        mn_cudnn_version(cases[i].v, &a, &b, &p);
        EXPECT(a == cases[i].major && b == cases[i].minor && p == cases[i].patch, "cuDNN %zu read as %d.%d.%d, want %d.%d.%d",
               cases[i].v, a, b, p, cases[i].major, cases[i].minor, cases[i].patch);
    }
}

int main(void)
{
    test_wait();
    test_routes();
    test_pack();
    test_cudnn_version();
    if (failures) { fprintf(stderr, "test_gpu_logic: %d FAILED\n", failures); return 1; }
    printf("test_gpu_logic: the wait loop (done, error, timeout: one abort), routes, node legs, 200 packings, cuDNN versions: OK\n");
    return 0;
}
