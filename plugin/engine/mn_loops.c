/* Darknet's loops without its per-element dispatch, the same expressions in
 * the same order: finite results are Darknet's to the bit. */
#include "engine/mn_engine.h"

/* pjreddie's leaky_activate, the product in double. */
void mn_leaky_double(float *x, size_t n)
{
    for (size_t i = 0; i < n; ++i) x[i] = x[i] > 0 ? x[i] : (float)(.1 * x[i]);
}

/* gradient_array for leaky on the output y. */
void mn_leaky_gradient(const float *y, float *delta, size_t n)
{
    for (size_t i = 0; i < n; ++i) delta[i] *= y[i] > 0 ? 1.0f : (float).1;
}

/* forward_maxpool_layer for size 2, stride 2, even w and h; a NaN wins as
 * in patch 0007. planes = batch * channels. */
void mn_maxpool2(const float *in, float *out, int *indexes, int w, int h, int planes)
{
    int ow = w / 2, oh = h / 2;
    for (int p = 0; p < planes; ++p) {
        for (int i = 0; i < oh; ++i) {
            int top = (p * h + 2 * i) * w;
            float *o = out + (size_t)(p * oh + i) * ow;
            int *x = indexes ? indexes + (size_t)(p * oh + i) * ow : NULL;
            for (int j = 0; j < ow; ++j) {
                int at[4] = {top + 2 * j, top + 2 * j + 1, top + w + 2 * j, top + w + 2 * j + 1};
                int best = at[0];
                float max = in[best];
                for (int q = 1; q < 4; ++q) {
                    float v = in[at[q]];
                    int take = v > max || v != v;
                    best = take ? at[q] : best;
                    max = take ? v : max;
                }
                o[j] = max;
                if (x) x[j] = best;
            }
        }
    }
}
