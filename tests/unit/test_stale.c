/* Delay compensation (double_buffering_compensation, mn_dbuf_compensate)
 * by exact values: the first Taylor term u -= lambda u^2/sqrt(v) (w - prev)
 * with v's running mean square, its bound |u| either way, no term where v
 * is 0, nothing but prev moved on a step without a mean or with a
 * non-finite one; prev moved to the weights the gradient was taken at.
 * Weight prediction (double_buffering_prediction, mn_dbuf_predict) on the host:
 * the weights become w + k (w - w0), w0 those before the last update, and
 * come back; the first step only keeps them. double_buffering_local's
 * step (mn_dbuf_local) by exact values. No MPI. */
#include <math.h>
#include <string.h>
#include "train/optimizer/mn_dbuf.h"
#include "train/optimizer/mn_dbuf_predict.h"
#include "mn_expect.h"

int main(void)
{
    /* [0] within the bound: v = 0.95 + 0.05 = 1, u = -1 - 2 * 1 * 0.25 = -1.5;
     * [1], [2] bounded: the term is 2 * 4 / sqrt(0.2) * 0.5 = 8.9 (> |u| = 2),
     * so u becomes 2 - 2 and 2 + 2; [3] u = 0 and v = 0: no term. */
    float u[4] = {-1, 2, 2, 0}, w[4] = {0.5f, 1.5f, 1.0f, 3}, prev[4] = {0.25f, 1.0f, 1.5f, 2}, v[4] = {1, 0, 0, 0};
    mn_dbuf_compensate(u, w, w, prev, v, 4, 2.0f, 1);
    EXPECT(u[0] == -1.5f && u[1] == 0 && u[2] == 4 && u[3] == 0, "compensated means %g %g %g %g, want -1.5 0 4 0",
           u[0], u[1], u[2], u[3]);
    EXPECT(v[0] == 1 && v[1] == 0.05f * 4 && v[2] == 0.05f * 4 && v[3] == 0, "mean squares %g %g %g %g", v[0], v[1],
           v[2], v[3]);
    EXPECT(prev[0] == 0.5f && prev[1] == 1.5f && prev[2] == 1.0f && prev[3] == 3, "prev not moved to w");
    /* No mean this step (the first stale one): only prev follows w. */
    float w2[4] = {7, 8, 9, 10};
    mn_dbuf_compensate(u, w2, w2, prev, v, 4, 2.0f, 0);
    EXPECT(u[0] == -1.5f && v[0] == 1 && prev[0] == 7 && prev[3] == 10, "apply 0 changed u or v, or left prev");
    /* A NaN or Inf mean (nonfinite=skip drops that update) is left as it is,
     * and v keeps its value rather than the NaN for good. */
    float un[2] = {NAN, INFINITY}, wn[2] = {1, 1}, pn[2] = {0, 0}, vn[2] = {1, 1};
    mn_dbuf_compensate(un, wn, wn, pn, vn, 2, 2.0f, 1);
    EXPECT(isnan(un[0]) && isinf(un[1]) && vn[0] == 1 && vn[1] == 1 && pn[0] == 1, "a non-finite mean: u %g %g, v %g %g",
           un[0], un[1], vn[0], vn[1]);
    /* lambda 0: the mean is left as it is. */
    float u0[1] = {3}, w0[1] = {1}, p0[1] = {0}, v0[1] = {1};
    mn_dbuf_compensate(u0, w0, w0, p0, v0, 1, 0, 1);
    EXPECT(u0[0] == 3, "lambda 0 changed the mean to %g", u0[0]);
    /* The term uses the weights the mean is applied at (w), prev becomes the
     * weights this step's gradient was taken at (a prediction). */
    float ue[1] = {-1}, we[1] = {0.5f}, ee[1] = {0.75f}, pe[1] = {0.25f}, ve[1] = {1};
    mn_dbuf_compensate(ue, we, ee, pe, ve, 1, 2.0f, 1);
    EXPECT(ue[0] == -1.5f && pe[0] == 0.75f, "compensation with a prediction: u %g (want -1.5), prev %g (want 0.75)",
           ue[0], pe[0]);

    /* double_buffering_local's step: g + (mean - own), own = g; g alone
     * where there was no mean. mean - own first: with mean = own = 2^24 and
     * g = 1, (mean + g) - own would round to 0. */
    float own = 1.0f;
    EXPECT(mn_dbuf_local(1.5f, 0.25f, &own, 1) == 0.75f && own == 1.5f, "local step: want 0.75 and own 1.5, own %g", own);
    EXPECT(mn_dbuf_local(-2.0f, 9.0f, &own, 0) == -2.0f && own == -2.0f, "local step without a mean: own %g", own);
    own = 16777216.0f;
    EXPECT(mn_dbuf_local(1.0f, 16777216.0f, &own, 1) == 1.0f, "local step: the own gradient's cancellation rounded");

    /* Prediction on two arrays of 2 and 1 floats, k = 0.5. */
    float a[2] = {1, 2}, b[1] = {-4}, *arrs[2] = {a, b};
    size_t lens[2] = {2, 1};
    mn_dbuf_predict *p = NULL;
    EXPECT(mn_dbuf_predict_new(NULL, arrs, NULL, lens, 2, 0.5f, &p) == MN_OK && p, "mn_dbuf_predict_new failed");
    if (!p) return 1;
    mn_dbuf_predict_step(p, 0);   /* the first step: kept, not predicted */
    EXPECT(!mn_dbuf_predict_holds(p) && a[0] == 1 && b[0] == -4, "the first step changed the weights");
    a[0] = 3, a[1] = 1, b[0] = -2;   /* an update: by 2, -1, 2 */
    mn_dbuf_predict_step(p, 1);
    EXPECT(mn_dbuf_predict_holds(p) && a[0] == 4 && a[1] == 0.5f && b[0] == -1, "predicted %g %g %g, want 4 0.5 -1",
           a[0], a[1], b[0]);
    const float *kept = mn_dbuf_predict_kept(p);
    EXPECT(kept[0] == 3 && kept[1] == 1 && kept[2] == -2, "kept %g %g %g, want 3 1 -2", kept[0], kept[1], kept[2]);
    mn_dbuf_predict_back(p);
    EXPECT(!mn_dbuf_predict_holds(p) && a[0] == 3 && a[1] == 1 && b[0] == -2, "back: %g %g %g, want 3 1 -2", a[0], a[1], b[0]);
    mn_dbuf_predict_back(p);   /* twice: nothing more */
    EXPECT(a[0] == 3, "a second back moved the weights");
    /* A checkpoint: w0 out and into a fresh one, which predicts the same. */
    float saved[3];
    mn_dbuf_predict_get(p, saved);
    a[0] = 5;   /* the next update: by 2 */
    mn_dbuf_predict *q = NULL;
    EXPECT(mn_dbuf_predict_new(NULL, arrs, NULL, lens, 2, 0.5f, &q) == MN_OK && q, "mn_dbuf_predict_new failed");
    if (!q) return 1;
    mn_dbuf_predict_set(q, saved);
    mn_dbuf_predict_step(q, 1);
    EXPECT(a[0] == 6 && a[1] == 1 && b[0] == -2, "resumed prediction %g %g %g, want 6 1 -2", a[0], a[1], b[0]);
    mn_dbuf_predict_free(p);
    mn_dbuf_predict_free(q);

    if (failures) { fprintf(stderr, "test_stale: %d FAILED\n", failures); return 1; }
    printf("test_stale: delay compensation by exact values (within the bound, bounded both ways, v = 0, no mean, "
           "a non-finite mean, lambda 0, a prediction's weights); the local step (with and without a mean, the "
           "cancellation); weight prediction (kept, predicted, back, resumed): OK\n");
    return 0;
}
