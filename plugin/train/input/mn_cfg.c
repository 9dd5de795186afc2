/* The network cfg, read and checked before Darknet parses it, and the one
 * place that reads it: Darknet's parser names neither file nor line,
 * replaces an unknown activation or policy with a default, reads "nan" as a
 * number, and crashes on a line before the first section or on
 * subdivisions=0. The [distributed] options come from here too
 * (mn_option_set checks each key), and before MPI_Init mn_cfg_peek reads
 * single keys with the same reader. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "train/input/mn_input.h"
#include "base/mn_base.h"

/* One option line after Darknet's normalisation (whitespace dropped). */
typedef struct {
    int line, section;   /* section: index of its section's header entry */
    char *key, *val;     /* val NULL: a section header ("[net]" in key) */
} entry;

typedef struct {
    const char *file;
    entry *e;
    int n, cap;
    char err[768];       /* the first problem, "file:line: ..." */
} cfg;


static int in(const char *const *names, const char *s)
{
    for (int i = 0; names[i]; ++i)
        if (!strcmp(names[i], s)) return 1;
    return 0;
}

static void join(const char *const *names, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; names[i] && n < cap; ++i)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? ", " : "", names[i]);
}

static int fail(cfg *g, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(cfg *g, int line, const char *fmt, ...)
{
    if (g->err[0]) return 0;
    int n = line > 0 ? snprintf(g->err, sizeof g->err, "%s:%d: ", g->file, line)
                     : snprintf(g->err, sizeof g->err, "%s: ", g->file);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err + n, sizeof g->err - (size_t)n, fmt, ap);
    va_end(ap);
    return 0;
}

static int push(cfg *g, int line, int section, char *key, char *val)
{
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        entry *e = realloc(g->e, sizeof *e * (size_t)cap);
        if (!e) return fail(g, 0, "out of memory reading the cfg");
        g->e = e;
        g->cap = cap;
    }
    g->e[g->n++] = (entry){line, section, key, val};
    return 1;
}

static void cfg_free(cfg *g)
{
    for (int i = 0; i < g->n; ++i) free(g->e[i].key);   /* val points into key's line */
    free(g->e);
}

/* One line, normalised as Darknet's read_cfg does (patch 0007: a CR before
 * the line end dropped, '#' starts a comment; strip(): spaces and tabs
 * dropped). Takes ownership of s. */
static int add_line(cfg *g, char *s, size_t len, int line, int *section)
{
    if (strlen(s) != len) { free(s); return fail(g, line, "holds a NUL byte; a cfg is text"); }
    /* As fgetl: the line end, then one CR before it; a CR elsewhere is a control byte. */
    if (len > 0 && s[len - 1] == '\n') s[--len] = 0;
    if (len > 0 && s[len - 1] == '\r') s[--len] = 0;
    size_t k = 0;
    for (size_t i = 0; i < len && s[i] != '#'; ++i) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == ' ' || ch == '\t') continue;
        if (ch < 0x20 || ch == 0x7f) { free(s); return fail(g, line, "holds the control byte 0x%02x; a cfg is text", ch); }
        s[k++] = s[i];
    }
    s[k] = 0;
    if (k == 0 || s[0] == ';') { free(s); return 1; }
    if (s[0] == '[') {
        if (s[k - 1] != ']') { int r = fail(g, line, "section header '%s' has no closing ']'", s); free(s); return r; }
        if (!in(mn_base_sections, s)) {
            char known[1024];
            join(mn_base_sections, known, sizeof known);
            int r = fail(g, line, "unknown section %s; known sections: %s", s, known);
            free(s);
            return r;
        }
        int first = *section < 0;
        if (first && strcmp(s, "[net]") && strcmp(s, "[network]")) {
            int r = fail(g, line, "the first section is %s; a cfg starts with [net]", s);
            free(s);
            return r;
        }
        if (!first && (!strcmp(s, "[net]") || !strcmp(s, "[network]"))) {
            int r = fail(g, line, "a second %s section; only the first section is [net]", s);
            free(s);
            return r;
        }
        for (int i = 0; i < g->n; ++i)
            if (!g->e[i].val && !strcmp(s, "[distributed]") && !strcmp(g->e[i].key, s)) {
                int r = fail(g, line, "a second [distributed] section (the first is on line %d)", g->e[i].line);
                free(s);
                return r;
            }
        *section = g->n;
        return push(g, line, g->n, s, NULL) || (free(s), 0);
    }
    char *eq = strchr(s, '=');
    int r;
    if (*section < 0) r = fail(g, line, "'%s' comes before the first section ([net])", s);
    else if (!eq) r = fail(g, line, "'%s' is not key=value", s);
    else if (eq == s) r = fail(g, line, "'%s' has no key before '='", s);
    else { *eq = 0; return push(g, line, *section, s, eq + 1) || (free(s), 0); }
    free(s);
    return r;
}

static int read_cfg_file(cfg *g)
{
    FILE *fp = fopen(g->file, "r");
    if (!fp) return fail(g, 0, "cannot open cfg: %s", strerror(errno));
    struct stat st;
    int isdir = fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode);
    if (isdir || (fstat(fileno(fp), &st) == 0 && !S_ISREG(st.st_mode))) {
        fclose(fp);
        return fail(g, 0, "the cfg is %s, not a file", isdir ? "a directory" : "not a regular file");
    }
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    int no = 0, section = -1, ok = 1;
    while (ok && (len = getline(&line, &lcap, fp)) >= 0) {
        ok = add_line(g, line, (size_t)len, ++no, &section);
        line = NULL;
        lcap = 0;
    }
    free(line);
    fclose(fp);
    if (ok && section < 0) return fail(g, 0, "holds no sections (an empty cfg?); a cfg starts with [net]");
    return ok;
}

static int parse_long(const char *v, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno) return 0;
    *out = x;
    return 1;
}

static int parse_double(const char *v, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end) return 0;
    *out = x;
    return 1;
}

static const entry *find(const cfg *g, int section, const char *key)
{
    const entry *hit = NULL;   /* Darknet's option_find takes the last one */
    for (int i = section + 1; i < g->n && g->e[i].section == section; ++i)
        if (!strcmp(g->e[i].key, key)) hit = &g->e[i];
    return hit;
}

/* An integer [net] key: lo..hi, or its default when absent. */
static int net_int(cfg *g, const char *key, long def, long lo, long hi, long *out)
{
    const entry *e = find(g, 0, key);
    *out = def;
    if (!e) return 1;
    if (!parse_long(e->val, out) || *out < lo || *out > hi)
        return fail(g, e->line, "[net] %s='%s' must be an integer from %ld to %ld", key, e->val, lo, hi);
    return 1;
}

/* Values Darknet reads with atof: numbers (lists of them for steps, scales)
 * that must be finite, since NaN breaks the layers' comparisons. */
static int check_numbers(cfg *g, const entry *e)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", e->val);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        double x;
        if (parse_double(tok, &x) && !isfinite(x))
            return fail(g, e->line, "%s %s='%s' is not a finite number", g->e[e->section].key, e->key, e->val);
    }
    return 1;
}

static double physical_memory(void)
{
    return (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
}

static int check_net(cfg *g, int ranks)
{
    long batch, sub, w, h, ch;
    if (!net_int(g, "batch", 1, 1, INT_MAX, &batch) || !net_int(g, "subdivisions", 1, 1, INT_MAX, &sub) ||
        !net_int(g, "width", 0, 1, 1 << 16, &w) || !net_int(g, "height", 0, 1, 1 << 16, &h) ||
        !net_int(g, "channels", 0, 1, 1 << 16, &ch))
        return 0;
    if (sub > batch) {
        const entry *e = find(g, 0, "subdivisions");
        return fail(g, e->line, "[net] subdivisions=%ld is larger than batch=%ld (batch is the images per "
                    "update on one rank, split in subdivisions parts)", sub, batch);
    }
    int bl = find(g, 0, "batch") ? find(g, 0, "batch")->line : 0;
    if ((int64_t)batch * ranks > INT_MAX)
        return fail(g, bl, "[net] batch=%ld on %d ranks is %lld images per update, more than %d",
                    batch, ranks, (long long)batch * ranks, INT_MAX);
    /* One update's input images alone, as floats: a batch beyond memory
     * would only swap until the machine gives up. */
    double need = (double)batch * (double)(w ? w : 1) * (double)(h ? h : 1) * (double)(ch ? ch : 1) * 4.0;
    double mem = physical_memory();
    if (mem > 0 && need > mem)
        return fail(g, bl, "[net] batch=%ld needs %.1f GiB for one update's input images, more than this "
                    "machine's %.1f GiB", batch, need / 1073741824.0, mem / 1073741824.0);
    static const char *const floats[] = {"learning_rate", "momentum", "decay", NULL};
    for (int i = 0; floats[i]; ++i) {
        const entry *e = find(g, 0, floats[i]);
        double x;
        if (e && !parse_double(e->val, &x))
            return fail(g, e->line, "[net] %s='%s' is not a number", e->key, e->val);
    }
    const entry *p = find(g, 0, "policy");
    if (p && !in(mn_base_policies, p->val)) {
        char known[256];
        join(mn_base_policies, known, sizeof known);
        return fail(g, p->line, "[net] policy='%s' is unknown; valid policies: %s", p->val, known);
    }
    if (p && !strcmp(p->val, "steps")) {
        const entry *st = find(g, 0, "steps"), *sc = find(g, 0, "scales");
        if (!st || !sc) return fail(g, p->line, "[net] policy=steps needs both steps= and scales=");
        int a = 1, b = 1;
        for (const char *q = st->val; *q; ++q) a += *q == ',';
        for (const char *q = sc->val; *q; ++q) b += *q == ',';
        if (a != b) return fail(g, sc->line, "[net] steps= has %d values but scales= has %d", a, b);
    }
    return 1;
}

static int check_entries(cfg *g, int ranks)
{
    for (int i = 0; i < g->n; ++i) {
        const entry *e = &g->e[i];
        if (!e->val) continue;
        if (!check_numbers(g, e)) return 0;
        if (!strcmp(e->key, "activation") && !in(mn_base_activations, e->val)) {
            char known[256];
            join(mn_base_activations, known, sizeof known);
            return fail(g, e->line, "%s activation='%s' is unknown; valid activations: %s",
                        g->e[e->section].key, e->val, known);
        }
    }
    return check_net(g, ranks);
}

/* A key of the section at header index sec, as an integer (def when absent or not one). */
static long sec_int(const cfg *g, int sec, const char *key, long def)
{
    const entry *e = find(g, sec, key);
    long v;
    return e && parse_long(e->val, &v) ? v : def;
}

/* The layer a route or shortcut names ("-3" or "12") from layer i, or -1. */
static int layer_ref(const char *tok, int i)
{
    long v;
    if (!parse_long(tok, &v)) return -1;
    if (v < 0) v += i;
    return v >= 0 && v < i ? (int)v : -1;
}

/* Each layer's output width and height, walked as Darknet's parser sizes
 * them, so that a route of inputs of two sizes, a reference outside the
 * net, an output shrunk to nothing, or (on the fork) a shortcut across a
 * stride is refused with the layer named: Darknet's parser asserts, or
 * builds zero-sized layers that crash later. Layers whose size this walk
 * does not model end it quietly. */
static int check_shapes(cfg *g)
{
    long w = sec_int(g, 0, "width", 0), h = sec_int(g, 0, "height", 0);
    if (w <= 0 || h <= 0) return 1;
    int cap = 0, n = 0, ok = 1;
    for (int i = 0; i < g->n; ++i) cap += !g->e[i].val;
    long *ow = malloc(sizeof *ow * (size_t)cap), *oh = malloc(sizeof *oh * (size_t)cap);
    if (!ow || !oh) { free(ow); free(oh); return 1; }
    for (int i = 0; ok && i < g->n; ++i) {
        const entry *e = &g->e[i];
        if (e->val || i == 0 || !strcmp(e->key, "[distributed]")) continue;
        const char *k = e->key;
        long iw = n ? ow[n - 1] : w, ih = n ? oh[n - 1] : h;
        long size = sec_int(g, i, "size", 1), stride = sec_int(g, i, "stride", 1);
        long sx = sec_int(g, i, "stride_x", stride), sy = sec_int(g, i, "stride_y", stride);
        if (!strcmp(k, "[convolutional]") || !strcmp(k, "[conv]")) {
            long pad = sec_int(g, i, "pad", 0) ? size / 2 : sec_int(g, i, "padding", 0);
            if (sx < 1 || sy < 1) break;
            ow[n] = (iw + 2 * pad - size) / sx + 1;
            oh[n] = (ih + 2 * pad - size) / sy + 1;
        } else if (!strcmp(k, "[maxpool]") || !strcmp(k, "[max]") || !strcmp(k, "[local_avgpool]") ||
                   !strcmp(k, "[local_avg]")) {
            size = sec_int(g, i, "size", stride);
            long pad = sec_int(g, i, "padding", size - 1);
            if (sx < 1 || sy < 1) break;
            int depth = sec_int(g, i, "maxpool_depth", 0) != 0;   /* pools over channels: w, h kept */
            ow[n] = depth ? iw : (iw + pad - size) / sx + 1;
            oh[n] = depth ? ih : (ih + pad - size) / sy + 1;
        } else if (!strcmp(k, "[upsample]")) {
            stride = sec_int(g, i, "stride", 2);
            ow[n] = stride < 0 ? iw / -stride : iw * stride;
            oh[n] = stride < 0 ? ih / -stride : ih * stride;
        } else if (!strcmp(k, "[reorg]") || !strcmp(k, "[reorg3d]")) {
            int rev = sec_int(g, i, "reverse", 0) != 0;
            if (stride < 1) break;
            ow[n] = rev ? iw * stride : iw / stride;
            oh[n] = rev ? ih * stride : ih / stride;
        } else if (!strcmp(k, "[avgpool]") || !strcmp(k, "[avg]") || !strcmp(k, "[connected]") ||
                   !strcmp(k, "[conn]")) {
            ow[n] = oh[n] = 1;
        } else if (!strcmp(k, "[scale_channels]") || !strcmp(k, "[sam]")) {
            /* Scales the from= layer by its input: the output is the from= layer's size. */
            const entry *from = find(g, i, "from");
            int j = from ? layer_ref(from->val, n) : -1;
            if (j < 0 || ow[j] < 0) break;
            ow[n] = ow[j];
            oh[n] = oh[j];
        } else if (!strcmp(k, "[route]") || !strcmp(k, "[shortcut]")) {
            int route = !strcmp(k, "[route]");
            const entry *from = find(g, i, route ? "layers" : "from");
            if (!from) { ok = fail(g, e->line, "layer %d (%s) has no %s=", n, k, route ? "layers" : "from"); break; }
            char buf[256];
            snprintf(buf, sizeof buf, "%s", from->val);
            int first = -1, unknown = 0;
            for (char *tok = strtok(buf, ","); ok && !unknown && tok; tok = strtok(NULL, ",")) {
                int j = layer_ref(tok, n);
                if (j < 0) { ok = fail(g, from->line, "layer %d (%s) %s=%s names layer '%s', outside layers 0..%d before it", n, k, from->key, from->val, tok, n - 1); break; }
                if (ow[j] < 0) { unknown = 1; break; }
                if (first < 0) first = j;
                long rw = route ? ow[first] : iw, rh = route ? oh[first] : ih;
                const char *why = route ? "a route joins channels of inputs of one size" :
                                  "AlexeyAB's Darknet adds only layers of one size (pjreddie's resamples)";
                if ((route || mn_base_shortcut_same_size()) && (ow[j] != rw || oh[j] != rh))
                    ok = fail(g, from->line, "layer %d (%s) takes layer %d, %ldx%ld, and layer %d, %ldx%ld: %s",
                              n, k, route ? first : n - 1, rw, rh, j, ow[j], oh[j], why);
            }
            if (!ok || unknown) break;
            ow[n] = route ? ow[first] : iw;
            oh[n] = route ? oh[first] : ih;
        } else if (!strcmp(k, "[dropout]") || !strcmp(k, "[batchnorm]") || !strcmp(k, "[activation]") ||
                   !strcmp(k, "[softmax]") || !strcmp(k, "[soft]") ||
                   !strcmp(k, "[cost]") || !strcmp(k, "[yolo]") || !strcmp(k, "[Gaussian_yolo]") ||
                   !strcmp(k, "[region]") || !strcmp(k, "[logistic]") || !strcmp(k, "[l2norm]") ||
                   !strcmp(k, "[normalization]") || !strcmp(k, "[lrn]") || !strcmp(k, "[silence]") || !strcmp(k, "[empty]")) {
            ow[n] = iw;
            oh[n] = ih;
        } else {
            break;   /* crop, local, deconvolutional, recurrent, ...: not modelled */
        }
        if (ow[n] < 1 || oh[n] < 1) {
            ok = fail(g, e->line, "layer %d (%s) would output %ldx%ld from its %ldx%ld input: width=%ld height=%ld is "
                      "too small for this net's strides", n, k, ow[n], oh[n], iw, ih, w, h);
            break;
        }
        ++n;
    }
    free(ow);
    free(oh);
    return ok;
}

/* A detection layer's anchors against its num: Darknet sizes biases for num
 * pairs and indexes them by mask, but copies every listed anchor (the
 * fork's yolo parser; pjreddie's yolo and region) and takes any mask: more
 * pairs than num write past biases, a mask of num or more reads past it
 * (AlexeyAB's cspx-p7-mish.cfg: 20 pairs, num=16, mask up to 19). */
static int check_anchors(cfg *g)
{
    for (int i = 0; i < g->n; ++i) {
        const char *k = g->e[i].key;
        if (g->e[i].val || (strcmp(k, "[yolo]") && strcmp(k, "[Gaussian_yolo]") && strcmp(k, "[region]"))) continue;
        long num = sec_int(g, i, "num", 1);
        const entry *a = find(g, i, "anchors"), *m = find(g, i, "mask");
        int pairs = 0;
        for (const char *p = a ? a->val : ""; *p; ++p) pairs += *p == ',';
        pairs = a && a->val[0] ? (pairs + 2) / 2 : 0;
        if (pairs > num)
            return fail(g, a->line, "%s anchors= lists %d pairs, more than num=%ld: Darknet copies them all into room for "
                        "num pairs (set num=%d)", k, pairs, num, pairs);
        char buf[256];
        snprintf(buf, sizeof buf, "%s", m ? m->val : "");
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            long v;
            if (parse_long(tok, &v) && (v < 0 || v >= num))
                return fail(g, m->line, "%s mask=%s names anchor %ld, outside anchors 0..%ld of num=%ld", k, m->val, v,
                            num - 1, num);
        }
    }
    return 1;
}

/* "[section]\n" and "key=value\n" lines in order: what every rank must share. */
static char *normalised(const cfg *g, size_t *len)
{
    size_t n = 1;
    for (int i = 0; i < g->n; ++i) n += strlen(g->e[i].key) + (g->e[i].val ? strlen(g->e[i].val) + 1 : 0) + 1;
    char *t = malloc(n), *p = t;
    if (!t) return NULL;
    for (int i = 0; i < g->n; ++i)
        p += g->e[i].val ? sprintf(p, "%s=%s\n", g->e[i].key, g->e[i].val) : sprintf(p, "%s\n", g->e[i].key);
    *len = (size_t)(p - t);
    return t;
}

/* On a rank whose cfg differs from rank 0's (text0: rank 0's file name, a
 * newline, its normalised cfg): the first entry that differs. */
static void describe_difference(const cfg *g, const char *text0, char *out, size_t cap)
{
    const char *p = strchr(text0, '\n') + 1;
    int name0 = (int)(p - 1 - text0);
    for (int i = 0; i < g->n; ++i) {
        const entry *e = &g->e[i];
        char mine[1024];
        if (e->val) snprintf(mine, sizeof mine, "%s=%s", e->key, e->val);
        else snprintf(mine, sizeof mine, "%s", e->key);
        const char *end = strchr(p, '\n');
        int l0 = end ? (int)(end - p) : 0;
        const char *sec = e->val ? g->e[e->section].key : "section";
        if (!end) {
            snprintf(out, cap, "%s:%d: %s '%s' is past the end of rank 0's %.*s", g->file, e->line, sec, mine,
                     name0, text0);
            return;
        }
        if ((int)strlen(mine) != l0 || strncmp(mine, p, (size_t)l0)) {
            snprintf(out, cap, "%s:%d: %s '%s' here, but '%.*s' in rank 0's %.*s", g->file, e->line, sec, mine,
                     l0, p, name0, text0);
            return;
        }
        p = end + 1;
    }
    const char *end = strchr(p, '\n');
    snprintf(out, cap, "%s ends where rank 0's %.*s goes on with '%.*s'", g->file, name0, text0,
             end ? (int)(end - p) : 0, p);
}

/* The lowest rank with *failed set prints msg; every rank learns whether any failed. */
static mn_status report_lowest(mn_comm *c, int failed, const char *msg)
{
    int mine = failed ? c->rank : c->size, low = c->size;
    MN_MPI(c, MPI_Allreduce(&mine, &low, 1, MPI_INT, MPI_MIN, c->world));
    if (low < c->size && c->rank == low) mn_error(c, "%s", msg);
    return low < c->size ? MN_ERR_USER : MN_OK;
}

static mn_status compare_with_rank0(mn_comm *c, const cfg *g)
{
    size_t len = 0;
    char *text = normalised(g, &len);
    uint64_t mine = text ? mn_fnv1a(MN_FNV_SEED, text, len) : 0, *all = malloc(sizeof(uint64_t) * (size_t)c->size);
    mn_status s = mn_agree(c, text && all ? MN_OK : MN_ERR_NOMEM);
    if (s != MN_OK) { free(text); free(all); return s; }
    MN_MPI(c, MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, c->world));
    int differs = 0;
    for (int r = 1; r < c->size; ++r) differs |= all[r] != all[0];
    int me = all[c->rank] != all[0];
    free(all);
    if (!differs) { free(text); return MN_OK; }
    /* Rank 0's file name and text, for the ranks that differ to name the key. */
    uint64_t n0 = strlen(g->file) + 1 + len;
    MN_MPI(c, MPI_Bcast(&n0, 1, MPI_UINT64_T, 0, c->world));
    char *t0 = malloc(n0 + 1);
    if (c->rank == 0 && t0) { sprintf(t0, "%s\n", g->file); memcpy(t0 + strlen(g->file) + 1, text, len); }
    free(text);
    s = mn_agree(c, t0 ? MN_OK : MN_ERR_NOMEM);
    if (s != MN_OK) { free(t0); return s; }
    MN_MPI(c, MPI_Bcast(t0, (int)n0, MPI_CHAR, 0, c->world));
    t0[n0] = 0;
    char what[1536] = "", msg[2048];
    if (me) describe_difference(g, t0, what, sizeof what);
    free(t0);
    snprintf(msg, sizeof msg, "this rank's cfg differs from rank 0's: %s; every rank must run the same cfg", what);
    return report_lowest(c, me, msg);
}

/* The [distributed] section's keys into opt, in order (a repeated key: the
 * last wins, as Darknet's option_find). */
static int in_distributed(const cfg *g, const entry *e)
{
    return e->val && !strcmp(g->e[e->section].key, "[distributed]");
}

static int read_options(cfg *g, mn_options *opt)
{
    mn_default_options(opt);
    for (int i = 0; i < g->n; ++i) {
        const entry *e = &g->e[i];
        if (!in_distributed(g, e)) continue;
        char why[600];
        if (!mn_option_set(opt, e->key, e->val, why, sizeof why)) return fail(g, e->line, "%s", why);
    }
    char why[600];
    const char *key = mn_options_resolve(opt, why, sizeof why);
    if (!key) return 1;
    int line = 0;   /* the refused key's last line */
    for (int i = 0; i < g->n; ++i)
        if (in_distributed(g, &g->e[i]) && !strcmp(g->e[i].key, key)) line = g->e[i].line;
    return fail(g, line, "%s", why);
}

mn_status mn_cfg_read(mn_comm *c, const char *cfgfile, mn_options *opt)
{
    cfg g = {0};
    mn_options scratch;
    g.file = cfgfile;
    int ok = read_cfg_file(&g) && check_entries(&g, c->size) && check_shapes(&g) && check_anchors(&g) && read_options(&g, opt ? opt : &scratch);
    mn_status s = report_lowest(c, !ok, g.err);
    if (s == MN_OK) s = compare_with_rank0(c, &g);
    cfg_free(&g);
    return s;
}

/* The last value of key in the [distributed] section, into out; 0: none. */
static int distributed_value(const cfg *g, const char *key, char *out, size_t cap)
{
    int found = 0;
    for (int i = 0; i < g->n; ++i)
        if (in_distributed(g, &g->e[i]) && !strcmp(g->e[i].key, key)) {
            snprintf(out, cap, "%s", g->e[i].val);
            found = 1;
        }
    return found;
}

int mn_cfg_peek(const char *cfgfile, const char *key, char *out, size_t cap)
{
    cfg g = {0};
    g.file = cfgfile;
    int found = cfgfile && read_cfg_file(&g) && distributed_value(&g, key, out, cap);
    cfg_free(&g);
    return found;
}

int mn_cfg_wants_threads(const char *cfgfile)
{
    cfg g = {0};
    char v[32], w[32];
    g.file = cfgfile;
    int ok = cfgfile && read_cfg_file(&g);   /* read once for both keys */
    int threads = ok && ((distributed_value(&g, "double_buffering", v, sizeof v) && !strcmp(v, "1")) ||
                         (distributed_value(&g, "overlap", w, sizeof w) && !strcmp(w, "1")));
    cfg_free(&g);
    return threads;
}

/* One value with each comma-separated number in one spelling. */
static void canonical_value(const char *v, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (const char *p = v; n < cap;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char tok[256];
        double x;
        snprintf(tok, sizeof tok, "%.*s", (int)len, p);
        if (len < sizeof tok && parse_double(tok, &x)) n += (size_t)snprintf(out + n, cap - n, "%.9g", x);
        else n += (size_t)snprintf(out + n, cap - n, "%.*s", (int)len, p);
        if (!end || n >= cap) break;
        n += (size_t)snprintf(out + n, cap - n, ",");
        p = end + 1;
    }
}

static int by_key(const void *a, const void *b)
{
    return strcmp((*(const entry *const *)a)->key, (*(const entry *const *)b)->key);
}

/* The experiment's lines of the section at header index sec, appended at *n. */
static int section_lines(const cfg *g, int sec, const char *scope, char **t, size_t *n, size_t *cap)
{
    const entry *keys[1024];
    int k = 0;
    for (int i = sec + 1; i < g->n && g->e[i].section == sec && k < 1024; ++i) {
        const entry *e = &g->e[i];
        if (sec == 0 && (!strcmp(e->key, "batch") || !strcmp(e->key, "subdivisions") || !strcmp(e->key, "max_batches")))
            continue;
        if (find(g, sec, e->key) == e) keys[k++] = e;   /* the last of a repeated key */
    }
    qsort(keys, (size_t)k, sizeof *keys, by_key);
    for (int i = -1; i < k; ++i) {
        char val[1024];
        if (i >= 0) canonical_value(keys[i]->val, val, sizeof val);
        size_t need = strlen(scope) + (i < 0 ? strlen(g->e[sec].key) : strlen(keys[i]->key) + strlen(val)) + 4;
        if (*n + need >= *cap) {
            size_t c2 = (*cap + need) * 2;
            char *t2 = realloc(*t, c2);
            if (!t2) return 0;
            *t = t2;
            *cap = c2;
        }
        if (i < 0 && sec == 0) continue;   /* [net] has no type line */
        *n += (size_t)(i < 0 ? sprintf(*t + *n, "%s\t\t%s\n", scope, g->e[sec].key)
                             : sprintf(*t + *n, "%s\t%s\t%s\n", scope, keys[i]->key, val));
    }
    return 1;
}

/* Tab-separated scope, key and value lines for every [net] key but batch,
 * subdivisions and max_batches, then each layer's type and keys; keys
 * sorted, numbers in one spelling. */
char *mn_cfg_experiment(const char *cfgfile)
{
    cfg g = {0};
    g.file = cfgfile;
    size_t n = 0, cap = 4096;
    char *t = malloc(cap);
    int ok = t && read_cfg_file(&g);
    if (ok) t[0] = 0;
    for (int i = 0, layer = 0; ok && i < g.n; ++i) {
        if (g.e[i].val || !strcmp(g.e[i].key, "[distributed]")) continue;
        char scope[16];
        if (i == 0) snprintf(scope, sizeof scope, "net");
        else snprintf(scope, sizeof scope, "%d", layer++);
        ok = section_lines(&g, i, scope, &t, &n, &cap);
    }
    cfg_free(&g);
    if (!ok) { free(t); return NULL; }
    return t;
}

mn_status mn_check_net_size(const mn_comm *c, const network *net, const char *cfgfile)
{
    /* Darknet sizes a layer's arrays as int batch*outputs: past INT_MAX the
     * product wraps and calloc gets a wrong size. */
    mn_net_info in = mn_net_get(net);
    double bytes = 4.0 * in.batch * in.inputs;
    for (int i = 0; i < mn_net_layers(net); ++i) {
        mn_layer_info l = mn_layer_get(net, i);
        int64_t n = (int64_t)l.batch * (l.outputs > l.inputs ? l.outputs : l.inputs);
        if (n > INT_MAX) {
            if (c->rank == 0)
                mn_error(c, "%s: [net] batch/subdivisions=%d makes layer %d hold %lld values per array, more than "
                         "Darknet's int sizes (%d); lower batch or raise subdivisions", cfgfile, in.batch, i,
                         (long long)n, INT_MAX);
            return MN_ERR_USER;
        }
        bytes += 8.0 * l.batch * l.outputs;   /* output and delta */
    }
    double mem = physical_memory();
    if (mem > 0 && bytes > mem) {
        if (c->rank == 0)
            mn_error(c, "%s: [net] batch/subdivisions=%d needs %.1f GiB for the layers' outputs and deltas, more "
                     "than this machine's %.1f GiB; lower batch or raise subdivisions", cfgfile, in.batch,
                     bytes / 1073741824.0, mem / 1073741824.0);
        return MN_ERR_USER;
    }
    return MN_OK;
}
