/* mn_wcmp A B [tol] [FROM]: compares two Darknet weights files. Prints the
 * relative difference of their parameters (L2) and the two seen counters;
 * exits 0 when the headers and sizes match and the difference is <= tol
 * (default 1e-5). With FROM, the weights both runs started from, it compares
 * what training changed (A - FROM against B - FROM): a few small updates
 * leave the weights themselves nearly equal whatever the gradient was. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static float *load(const char *path, size_t *n, int hdr[3], size_t *seen)
{
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "mn_wcmp: cannot open %s\n", path); exit(2); }
    if (fread(hdr, sizeof(int), 3, f) != 3 || fread(seen, sizeof(size_t), 1, f) != 1) {
        fprintf(stderr, "mn_wcmp: %s: short header\n", path);
        exit(2);
    }
    size_t cap = 1 << 20, k = 0;
    float *v = malloc(cap * sizeof(float));
    size_t got;
    while ((got = fread(v + k, sizeof(float), cap - k, f)) > 0) {
        k += got;
        if (k == cap) v = realloc(v, (cap *= 2) * sizeof(float));
    }
    fclose(f);
    *n = k;
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 3) { fprintf(stderr, "usage: mn_wcmp A B [tol] [FROM]\n"); return 2; }
    double tol = argc > 3 ? atof(argv[3]) : 1e-5;
    int ha[3], hb[3];
    size_t na, nb, sa, sb;
    float *a = load(argv[1], &na, ha, &sa), *b = load(argv[2], &nb, hb, &sb);
    if (na != nb || ha[0] != hb[0] || ha[1] != hb[1]) {
        printf("mn_wcmp: different layouts: %zu vs %zu floats\n", na, nb);
        return 1;
    }
    if (argc > 4) {
        int hf[3];
        size_t nf, sf;
        float *f = load(argv[4], &nf, hf, &sf);
        if (nf != na) { printf("mn_wcmp: %s has %zu floats, not %zu\n", argv[4], nf, na); return 1; }
        for (size_t i = 0; i < na; ++i) { a[i] -= f[i]; b[i] -= f[i]; }
        free(f);
    }
    double num = 0, den = 0;
    for (size_t i = 0; i < na; ++i) { num += (a[i] - b[i]) * (double)(a[i] - b[i]); den += (double)b[i] * b[i]; }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    printf("mn_wcmp: %zu floats, relative difference %.3g%s, seen %zu vs %zu\n", na, rel,
           argc > 4 ? " of the updates" : "", sa, sb);
    return rel <= tol ? 0 : 1;
}
