/* Communicators: every algorithm's mean of known per-rank inputs equals the
 * closed-form value exactly (float32) or within half-precision rounding
 * (float16), identically on every rank, for empty, odd, split and large
 * buffers, for any rank count and node layout; an algorithm that cannot run
 * on this layout or build is refused and the previous one stays; auto is the
 * one its rule names, bit for bit. Also checks the topology fields and the
 * half conversions.
 *
 * usage: test_comm [algorithm...]  (default: all; named ones must be accepted) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"
#include "mn_expect.h"
#include "transport/mn_gpu.h"
#include "transport/mn_half.h"
#include "transport/mn_shm.h"

static int N;

/* float32: rank r contributes v(r,i) = (r+1)*N + (i % 97) - 48, so the sum over
 * ranks is N*N(N+1)/2 + N*((i%97)-48) and the mean N(N+1)/2 + (i%97) - 48: all
 * small integers, exact in float. */
static float input(int r, size_t i) { return (float)((r + 1) * N) + (float)(i % 97) - 48.0f; }
static float mean(size_t i) { return (float)(N * (N + 1) / 2) + (float)(i % 97) - 48.0f; }

/* float16: values in (-2^14, 2^14) of every magnitude down to 2^-22, so that
 * subnormal halves, rounding and cancellation all occur. */
static float input_h(int r, size_t i)
{
    unsigned s = (unsigned)(i * 2654435761u) ^ (unsigned)(r * 40503u + 17u);
    s = s * 1103515245u + 12345u;
    float u = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    return ldexpf(u, (int)(i % 37) - 22);
}

/* The float16 result may differ from the float32 mean by the rounding of each
 * x/N to half and of each partial sum (bounded by the largest |x|). */
static int close_to_mean(float got, const float *v, int n)
{
    double m = 0, big = 0;
    for (int r = 0; r < n; ++r) { m += v[r]; if (fabs(v[r]) > big) big = fabs(v[r]); }
    m /= n;
    double tol = (n + 1) * (big * 0x1p-11 + 0x1p-24);
    return isfinite(got) && fabs(got - m) <= tol;
}

static unsigned long long hash(float **arrays, const size_t *lens, int n)
{
    unsigned long long h = 1469598103934665603ull;
    for (int i = 0; i < n; ++i) {
        const unsigned char *p = (const unsigned char *)arrays[i];
        for (size_t j = 0; j < lens[i] * sizeof(float); ++j) h = (h ^ p[j]) * 1099511628211ull;
    }
    return h;
}

static void same_on_all_ranks(float **arrays, const size_t *lens, int n, const char *what)
{
    unsigned long long h = hash(arrays, lens, n), h0 = h;
    MPI_Bcast(&h0, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    EXPECT(h == h0, "%s: results differ from rank 0's", what);
}

/* Several arrays in one call: empty, 1, odd, not divisible by the node size,
 * a large one that spans several pieces. layout 0: separate allocations; 1:
 * back to back in malloc'd memory; 2: back to back in the communicator's
 * arena (mn_comm_arena_alloc: a node-shared window where there is one, which
 * the shm allreduce reads in place). */
static void check_mean(mn_comm *c, const char *name, int half, int layout)
{
    const size_t lens_in[] = {0, 1, 3, 7, 1000003, 0, 64, 4099};
    enum { n = (int)(sizeof lens_in / sizeof *lens_in) };
    size_t total = 0, lens[n];
    memcpy(lens, lens_in, sizeof lens);
    for (int i = 0; i < n; ++i) total += lens[i];
    float *arena = NULL, *arrays[n];
    if (layout == 2) EXPECT(mn_comm_arena_alloc(c, total, &arena) == MN_OK, "%s: arena", name);
    else arena = malloc((total + 1) * sizeof(float));
    size_t off = 0;
    for (int i = 0; i < n; ++i) {
        arrays[i] = layout ? arena + off : malloc((lens[i] + 1) * sizeof(float));
        for (size_t j = 0; j < lens[i]; ++j) arrays[i][j] = half ? input_h(rank, off + j) : input(rank, j);
        off += lens[i];
    }
    EXPECT(mn_comm_mean_grad(c, arrays, lens, n) == MN_OK, "%s mean_grad", name);
    long bad = 0;
    float *v = malloc(sizeof(float) * (size_t)N);
    off = 0;
    for (int i = 0; i < n; ++i) {
        for (size_t j = 0; j < lens[i]; ++j) {
            if (!half) { bad += arrays[i][j] != mean(j); continue; }
            for (int r = 0; r < N; ++r) v[r] = input_h(r, off + j);
            int ok = close_to_mean(arrays[i][j], v, N);
            if (!ok && bad < 3) fprintf(stderr, "rank %d: %s float16 array %d [%zu] = %g\n", rank, name, i, j, arrays[i][j]);
            bad += !ok;
        }
        off += lens[i];
    }
    EXPECT(bad == 0, "%s %s layout %d: %ld wrong values", name, half ? "float16" : "float32", layout, bad);
    same_on_all_ranks(arrays, lens, n, name);
    free(v);
    if (!layout) for (int i = 0; i < n; ++i) free(arrays[i]);
    if (layout == 2) mn_comm_arena_free(c, arena);
    else free(arena);
    /* zero arrays, and all-empty arrays, are fine */
    EXPECT(mn_comm_mean_grad(c, NULL, NULL, 0) == MN_OK, "%s: no arrays", name);
    size_t zero[3] = {0, 0, 0};
    float *none[3] = {NULL, NULL, NULL};
    EXPECT(mn_comm_mean_grad(c, none, zero, 3) == MN_OK, "%s: empty arrays", name);
}

/* Each rank's values x[r*k + j] for j < k go through one float16 mean_grad;
 * the results must lie within half rounding of the float32 mean. */
static void mean_of(mn_comm *c, const char *name, const char *what, const float *x, int k, float *got)
{
    float *p = got;
    size_t len = (size_t)k;
    memcpy(got, x + rank * k, sizeof(float) * (size_t)k);
    EXPECT(mn_comm_mean_grad(c, &p, &len, 1) == MN_OK, "%s: %s", name, what);
    for (int j = 0; j < k; ++j) {
        float col[8];
        for (int r = 0; r < N; ++r) col[r] = x[r * k + j];
        EXPECT(close_to_mean(got[j], col, N), "%s float16 %s %d: got %g", name, what, j, got[j]);
    }
    same_on_all_ranks(&p, &len, 1, name);
}

/* float16 at the edges of the half range: values up to 65504 on 4 ranks
 * neither overflow nor become Inf (with N a power of two x/N is exact, so they
 * must stay in half; at other N a rounding up past 65504 is caught and summed
 * in float32); gradients beyond the range still average right; and a value
 * half cannot hold shows that halves really travel. */
static void check_half_edges(mn_comm *c, const char *name)
{
    enum { A = 8, B = 2 };
    float a[A * 8], b[B * 8], got[A];
    if (N > 8) return;
    for (int r = 0; r < N; ++r) {
        float *x = a + r * A;
        x[0] = 65504.0f;                        /* the largest half, on every rank */
        x[1] = -65504.0f;
        x[2] = r == 0 ? 65504.0f : 0.0f;
        x[3] = 65504.0f - 32.0f * (float)r;
        x[4] = 20000.0f;                        /* a sum over 4 ranks would pass 65504 */
        x[5] = 1e-6f * (float)(r + 1);          /* subnormal halves */
        x[6] = -3e-8f;                          /* below half's range: 0 */
        x[7] = 1.0f + 0x1p-20f;                 /* not a half */
        b[r * B] = 1e6f * (float)(r + 1);       /* beyond half: summed again in float32 */
        b[r * B + 1] = 70000.0f;
    }
    mean_of(c, name, "near 65504", a, A, got);
    int pow2 = (N & (N - 1)) == 0;
    if (N > 1 && pow2) EXPECT(got[7] != 1.0f + 0x1p-20f, "%s float16: 1+2^-20 came back exact: values near 65504 did not stay in half", name);
    mean_of(c, name, "beyond 65504", b, B, got);
    float m[8];
    for (int r = 0; r < N; ++r) m[r] = 1.0f + 0x1p-20f;
    mean_of(c, name, "marker", m, 1, got);
    if (N > 1) EXPECT(got[0] != 1.0f + 0x1p-20f, "%s float16: 1+2^-20 came back exact: it did not travel as half", name);
}

/* Known conversions, every half through float and back, and (where the
 * compiler has _Float16) a sample of floats against the compiler's rounding. */
static void check_conversions(void)
{
    static const struct { float f; unsigned short h; } known[] = {
        {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00}, {-2.0f, 0xc000}, {65504.0f, 0x7bff},
        {65519.99f, 0x7bff}, {65520.0f, 0x7c00}, {1e9f, 0x7c00}, {-1e9f, 0xfc00}, {INFINITY, 0x7c00},
        {0x1p-14f, 0x0400}, {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000}, {0x1.8p-25f, 0x0001}, {0x1.8p-24f, 0x0002},
        {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 0x3p-11f, 0x3c02}, {0x1.ffcp-15f, 0x0400}, {0.1f, 0x2e66},
    };
    for (size_t k = 0; k < sizeof known / sizeof *known; ++k)
        EXPECT(mn_float_to_half(known[k].f) == known[k].h, "half(%a) = 0x%04x, want 0x%04x",
               known[k].f, mn_float_to_half(known[k].f), known[k].h);
    unsigned short nan = mn_float_to_half(NAN);
    EXPECT((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff), "NaN -> 0x%04x", nan);
    long bad = 0;
    for (unsigned h = 0; h < 65536; ++h) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;
        bad += mn_float_to_half(mn_half_to_float((uint16_t)h)) != h;
    }
    EXPECT(bad == 0, "%ld halves do not survive a round trip through float", bad);
#ifdef __FLT16_MAX__
    bad = 0;
    for (unsigned long long x = 0; x <= 0xffffffffull; x += 4099) {
        uint32_t u = (uint32_t)x;
        float f;
        memcpy(&f, &u, sizeof f);
        if (f != f) continue;
        _Float16 r = (_Float16)f;
        uint16_t want;
        memcpy(&want, &r, sizeof want);
        bad += mn_float_to_half(f) != want;
    }
    EXPECT(bad == 0, "%ld sampled floats round differently from the compiler's _Float16", bad);
#endif
}

static int is_nan_half(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

/* The bulk conversions and the half sum (F16C where the CPU has it) against
 * the scalar ones: every float from 2^-26 to 2^17 in magnitude (all that
 * round to a non-zero finite half, and their neighbours) and every 61st
 * block of 2^20 elsewhere; those blocks also divided by 3; every half; every
 * half plus each of 64 others. NaN must stay NaN. */
static void check_bulk_conversions(mn_comm *c)
{
    enum { K = 1 << 20 };
    float *f = malloc(K * sizeof *f);
    uint16_t *h = malloc(K * sizeof *h), *h2 = malloc(K * sizeof *h2);
    long bad = 0, bad3 = 0, badf = 0, bads = 0;
    for (unsigned long long base = 0; base < (1ull << 32); base += K) {
        unsigned e = (unsigned)(base >> 23) & 0xffu;   /* a block lies within one exponent */
        int sampled = base % (61ull * K) == 0;
        if (!sampled && (e < 101 || e > 143)) continue;
        for (uint32_t j = 0; j < K; ++j) { uint32_t u = (uint32_t)(base + j); memcpy(&f[j], &u, sizeof u); }
        mn_floats_to_halves(h, f, K, 1.0f);
        for (uint32_t j = 0; j < K; ++j) {
            uint16_t want = mn_float_to_half(f[j]);
            bad += f[j] != f[j] ? !is_nan_half(h[j]) : h[j] != want;
        }
        if (sampled) {
            mn_floats_to_halves(h, f, K, 3.0f);
            for (uint32_t j = 0; j < K; ++j)
                if (f[j] == f[j]) bad3 += h[j] != mn_float_to_half(f[j] * (1.0f / 3.0f));
        }
    }
    for (uint32_t j = 0; j < 65536; ++j) h[j] = (uint16_t)j;
    mn_halves_to_floats(f, h, 65536);
    for (uint32_t j = 0; j < 65536; ++j) {
        float want = mn_half_to_float((uint16_t)j);
        badf += is_nan_half((uint16_t)j) ? f[j] == f[j] : memcmp(&f[j], &want, sizeof want) != 0;
    }
    MPI_Op op;
    EXPECT(mn_half_op_create(c, &op) == MN_OK, "half op");
    for (int k = 0; k < 64; ++k) {
        uint16_t b = (uint16_t)(k * 1031u + 7u);
        for (uint32_t j = 0; j < 65536; ++j) h2[j] = b;
        MPI_Reduce_local(h, h2, 65536, MPI_UINT16_T, op);
        for (uint32_t j = 0; j < 65536; ++j) {
            uint16_t want = mn_float_to_half(mn_half_to_float((uint16_t)j) + mn_half_to_float(b));
            bads += is_nan_half(want) ? !is_nan_half(h2[j]) : h2[j] != want;
        }
    }
    MPI_Op_free(&op);
    EXPECT(bad == 0, "%ld floats convert to half differently in bulk", bad);
    EXPECT(bad3 == 0, "%ld floats / 3 convert to half differently in bulk", bad3);
    EXPECT(badf == 0, "%ld halves convert to float differently in bulk", badf);
    EXPECT(bads == 0, "%ld half sums differ from the scalar sum", bads);
    free(f);
    free(h);
    free(h2);
}

/* What auto must choose here: pure_nccl where every rank may use NCCL, else
 * flat (the rule of mn_comm.c; the reasons are checked by tests/e2e/run_comm.sh). */
static const char *auto_choice(mn_comm *c)
{
    int nccl = mn_nccl_usable(c);
    MPI_Allreduce(MPI_IN_PLACE, &nccl, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return nccl ? "pure_nccl" : "flat";
}

/* One float32 and one float16 mean of inputs whose sums round, hashed. */
static unsigned long long mean_hash(mn_comm *c, const char *name)
{
    enum { K = 300007 };
    float *x = malloc(K * sizeof *x);
    size_t len = K;
    unsigned long long h = 0;
    for (int half = 0; half < 2; ++half) {
        for (size_t j = 0; j < K; ++j) x[j] = input_h(rank, j) * (half ? 1.0f : 3.1f);
        EXPECT(mn_comm_set_dtype(c, half) == MN_OK && mn_comm_mean_grad(c, &x, &len, 1) == MN_OK, "%s: mean", name);
        h = h * 31 + hash(&x, &len, 1);
    }
    EXPECT(mn_comm_set_dtype(c, 0) == MN_OK, "set_dtype");
    free(x);
    return h;
}

/* auto averages bit for bit as the communicator it names does, selected by
 * name from another one, and only auto carries a reason. */
static void check_auto_same(mn_comm *c, const char *chosen)
{
    EXPECT(mn_comm_select(c, chosen) == MN_OK && !*mn_comm_auto_why(c), "%s by name", chosen);
    unsigned long long named = mean_hash(c, chosen);
    EXPECT(mn_comm_select(c, "naive") == MN_OK && mn_comm_select(c, "auto") == MN_OK, "naive, then auto");
    EXPECT(!strcmp(mn_comm_name(c), chosen) && *mn_comm_auto_why(c), "auto is %s, want %s", mn_comm_name(c), chosen);
    EXPECT(mean_hash(c, "auto") == named, "auto's mean differs from %s's", chosen);
}

/* Whether this layout or build may refuse the algorithm, and with what. */
static mn_status expected_refusal(mn_comm *c, const char *name)
{
    char layout[256];
    int even;
    if (mn_comm_layout(c, layout, sizeof layout, &even) != MN_OK) return MN_ERR_MPI;
    if (!strcmp(name, "two_dimensional") && !even) return MN_ERR_USER;
    if (!strcmp(name, "single_node") && c->nodes > 1) return MN_ERR_USER;
    if (!strcmp(name, "pure_nccl") && !mn_nccl_usable(c)) return MN_ERR_UNAVAILABLE;
    return MN_OK;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    EXPECT(c && st == MN_OK, "create");
    if (!c) { MPI_Finalize(); return 1; }
    EXPECT(mn_comm_rank(c) == rank && mn_comm_size(c) == N, "rank/size");
    EXPECT(mn_comm_intra_rank(c) < mn_comm_intra_size(c), "intra");
    int sum_intra = 0;
    int one = mn_comm_intra_rank(c) == 0;
    MPI_Allreduce(&one, &sum_intra, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    EXPECT(mn_comm_inter_size(c) == sum_intra || getenv("MN_RANKS_PER_NODE"), "inter size %d vs nodes %d", mn_comm_inter_size(c), sum_intra);
    const char *rpn = getenv("MN_RANKS_PER_NODE");
    if (rpn) {
        int k = atoi(rpn);
        EXPECT(mn_comm_intra_rank(c) == rank % k, "forced intra rank %d", mn_comm_intra_rank(c));
        EXPECT(mn_comm_inter_rank(c) == rank / k, "forced inter rank %d", mn_comm_inter_rank(c));
    }
    check_conversions();
    if (N == 1) check_bulk_conversions(c);   /* seconds: once, in the one-rank run */

    static const char *all[] = {"naive", "flat", "hierarchical", "two_dimensional", "single_node", "pure_nccl", "auto"};
    const char **names = argc > 1 ? (const char **)argv + 1 : all;
    int count = argc > 1 ? argc - 1 : (int)(sizeof all / sizeof *all), strict = argc > 1;
    for (int a = 0; a < count; ++a) {
        const char *before = mn_comm_name(c);
        mn_status want = strict ? MN_OK : expected_refusal(c, names[a]);
        if (want != MN_OK && rank == 0) fprintf(stderr, "(a refusal of '%s' is expected next)\n", names[a]);
        st = mn_comm_select(c, names[a]);
        EXPECT(st == want, "select %s: status %d, want %d", names[a], st, want);
        if (st != MN_OK) {
            EXPECT(!strcmp(mn_comm_name(c), before), "algorithm lost after a refused select of %s", names[a]);
            continue;
        }
        int is_auto = !strcmp(names[a], "auto");
        const char *want_name = is_auto ? auto_choice(c) : names[a];
        EXPECT(!strcmp(mn_comm_name(c), want_name), "%s is %s, want %s", names[a], mn_comm_name(c), want_name);
        for (int half = 0; half < 2; ++half) {
            EXPECT(mn_comm_set_dtype(c, half) == MN_OK, "set_dtype");
            for (int layout = 0; layout < 3; ++layout) check_mean(c, names[a], half, layout);
            if (half) check_half_edges(c, names[a]);
        }
        EXPECT(mn_comm_set_dtype(c, 0) == MN_OK, "set_dtype");
        if (is_auto) check_auto_same(c, want_name);
    }
    /* An unknown name is refused on every rank, and the old algorithm stays. */
    const char *before = mn_comm_name(c);
    if (rank == 0) fprintf(stderr, "(an error about 'bogus' is expected next)\n");
    EXPECT(mn_comm_select(c, "bogus") == MN_ERR_USER, "bogus accepted");
    EXPECT(!strcmp(mn_comm_name(c), before), "algorithm lost after a bad select");

    mn_comm_free(c);
    int sum = 0;
    MPI_Allreduce(&failures, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_comm: %d ranks: %s\n", N, sum ? "FAIL" : "ok");
    MPI_Finalize();
    return sum ? 1 : 0;
}
