/*
 * mn_fashion: turn the Fashion-MNIST IDX files into what Darknet's
 * classifier expects: one PNG per image, a list file per split and a
 * labels file.
 *
 *   mn_fashion <idx-dir> <out-dir> [--limit-train N] [--limit-test M]
 *
 * Darknet's classifier derives an image's class by strstr(path, label)
 * over all labels (fill_truth in src/data.c), so the label names are
 * chosen (and checked here) such that every listed path contains exactly
 * one label: its own.
 *
 * Output order matters for interrupted runs: old lists and the stamp are
 * removed first, images are written next, lists and labels are renamed
 * into place from temporary files, and the stamp comes last. A list
 * therefore never names an image that was not written completely.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <zlib.h>

#define NCLASSES 10
#define IMG_SIDE 28
#define MAGIC_IMAGES 0x00000803u /* unsigned bytes, 3 dimensions */
#define MAGIC_LABELS 0x00000801u /* unsigned bytes, 1 dimension */
/* Bump when the output layout changes so old stamps stop matching. */
#define FORMAT_VERSION 1

/*
 * The "cN_" prefix makes every label unique as a substring: no label can
 * occur inside another (e.g. "shirt" inside "tshirt"), and the digits and
 * "train"/"test" parts of generated paths cannot form one either.
 */
static const char *const LABELS[NCLASSES] = {
    "c0_tshirt", "c1_trouser", "c2_pullover", "c3_dress", "c4_coat",
    "c5_sandal", "c6_shirt",   "c7_sneaker",  "c8_bag",   "c9_ankleboot",
};

struct split {
    const char *name;        /* "train" or "test": sub-folder and list */
    const char *images_file; /* IDX base names, without ".gz" */
    const char *labels_file;
    long limit;              /* -1: all */
    char images_path[4096];  /* resolved input paths */
    char labels_path[4096];
    unsigned char *pixels;   /* count * IMG_SIDE * IMG_SIDE */
    unsigned char *labels;   /* count */
    long count;
};

static void die(const char *fmt, ...)
{
    va_list ap;
    fputs("mn_fashion: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* snprintf that treats truncation as fatal: a cut path would be wrong. */
static void fmt_path(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size)
        die("path too long (starts with \"%.60s\")", buf);
}

static void mkdir_p(const char *dir)
{
    char tmp[4096];
    fmt_path(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; ; ++p) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
                die("cannot create directory %s: %s", tmp, strerror(errno));
            *p = c;
            if (c == '\0')
                break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        die("%s exists but is not a directory", dir);
}

/* Prefer the .gz that Debian ships, but accept an already unpacked file. */
static void resolve_input(char *out, size_t size, const char *dir, const char *base)
{
    fmt_path(out, size, "%s/%s.gz", dir, base);
    if (access(out, R_OK) == 0)
        return;
    fmt_path(out, size, "%s/%s", dir, base);
    if (access(out, R_OK) == 0)
        return;
    die("cannot read %s/%s.gz (nor %s unpacked): %s", dir, base, base,
        strerror(errno));
}

static void gz_read_exact(gzFile f, const char *path, void *buf, size_t n, const char *what)
{
    unsigned char *p = buf;
    while (n > 0) {
        /* gzread takes an unsigned count; stay well below INT_MAX. */
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        int got = gzread(f, p, chunk);
        if (got <= 0) {
            int err = 0;
            const char *msg = gzerror(f, &err);
            die("%s: truncated or unreadable while reading %s (%s)", path, what,
                err ? msg : "unexpected end of file");
        }
        p += got;
        n -= (size_t)got;
    }
}

static unsigned be32(const unsigned char b[4])
{
    return (unsigned)b[0] << 24 | (unsigned)b[1] << 16 | (unsigned)b[2] << 8 | b[3];
}

/*
 * Reads a whole IDX file, checking its magic number and dimensions, and
 * that it holds exactly the announced amount of data (gzread also reads
 * uncompressed files, so both forms work).
 */
static unsigned char *read_idx(const char *path, unsigned magic, long *count)
{
    gzFile f = gzopen(path, "rb");
    if (!f)
        die("%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
    gzbuffer(f, 1u << 17);

    unsigned char hdr[16];
    int ndims = magic == MAGIC_IMAGES ? 3 : 1;
    gz_read_exact(f, path, hdr, 4 + 4 * (size_t)ndims, "the header");
    unsigned got_magic = be32(hdr);
    if (got_magic != magic)
        die("%s: bad magic number 0x%08x, expected 0x%08x (%s IDX file)", path,
            got_magic, magic, magic == MAGIC_IMAGES ? "an image" : "a label");

    unsigned n = be32(hdr + 4);
    if (n == 0 || n > 10000000u)
        die("%s: implausible item count %u", path, n);
    size_t item = 1;
    if (ndims == 3) {
        unsigned rows = be32(hdr + 8), cols = be32(hdr + 12);
        if (rows != IMG_SIDE || cols != IMG_SIDE)
            die("%s: images are %ux%u, expected %dx%d", path, rows, cols,
                IMG_SIDE, IMG_SIDE);
        item = (size_t)IMG_SIDE * IMG_SIDE;
    }

    size_t bytes = (size_t)n * item;
    unsigned char *data = malloc(bytes);
    if (!data)
        die("%s: out of memory for %zu bytes", path, bytes);
    gz_read_exact(f, path, data, bytes, "the data");

    /* Trailing bytes mean the header does not describe this file. */
    unsigned char extra;
    if (gzread(f, &extra, 1) != 0)
        die("%s: more data than the header announces (%u items)", path, n);
    if (gzclose(f) != Z_OK)
        die("%s: read error on close", path);
    *count = (long)n;
    return data;
}

static void load_split(struct split *s)
{
    long nimg, nlab;
    s->pixels = read_idx(s->images_path, MAGIC_IMAGES, &nimg);
    s->labels = read_idx(s->labels_path, MAGIC_LABELS, &nlab);
    if (nimg != nlab)
        die("%s holds %ld images but %s holds %ld labels", s->images_path, nimg,
            s->labels_path, nlab);
    for (long i = 0; i < nlab; ++i)
        if (s->labels[i] >= NCLASSES)
            die("%s: item %ld has label %u, expected 0..%d", s->labels_path, i,
                s->labels[i], NCLASSES - 1);
    s->count = (s->limit >= 0 && s->limit < nimg) ? s->limit : nimg;
}

/* The check Darknet effectively does: exactly one label, the right one. */
static void check_path_label(const char *path, int want)
{
    int hits = 0, hit = -1;
    for (int k = 0; k < NCLASSES; ++k)
        if (strstr(path, LABELS[k])) {
            ++hits;
            hit = k;
        }
    if (hits != 1 || hit != want)
        die("path %s matches %d labels (expected only %s); Darknet would mislabel it",
            path, hits, LABELS[want]);
}

static void check_labels(const char *outdir)
{
    for (int a = 0; a < NCLASSES; ++a) {
        for (int b = 0; b < NCLASSES; ++b)
            if (a != b && strstr(LABELS[a], LABELS[b]))
                die("label %s contains label %s", LABELS[a], LABELS[b]);
        /* A label in the directory part would match every image. */
        if (strstr(outdir, LABELS[a]))
            die("output directory %s contains the label name %s; Darknet would "
                "give that class to every image. Choose another directory.",
                outdir, LABELS[a]);
    }
}

static void put32(unsigned char *p, unsigned long v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Appends one PNG chunk (length, type, data, CRC over type and data). */
static size_t put_chunk(unsigned char *out, const char *type, const unsigned char *data,
                        size_t len)
{
    put32(out, (unsigned long)len);
    memcpy(out + 4, type, 4);
    if (len)
        memcpy(out + 8, data, len);
    put32(out + 8 + len, crc32(crc32(0L, Z_NULL, 0), out + 4, (uInt)(len + 4)));
    return 12 + len;
}

/*
 * Minimal 8-bit grayscale PNG writer on zlib. stb_image_write allocates a
 * large hash table per image, and even zlib's fastest compression costs
 * ~40 us per 28x28 image, so pixels go in stored (level 0) deflate blocks:
 * an 880-byte file still takes one 4 KiB filesystem block, like a
 * compressed one would, and the whole conversion stays around 2-3 s.
 *
 * An existing file with the same bytes is left alone, and a different one
 * is overwritten in place: truncating and rewriting 70,000 files makes
 * ext4 flush each one (auto_da_alloc), which made re-runs 4x slower.
 */
static void write_png(z_stream *zs, const char *path, const unsigned char *pixels)
{
    enum { ROW = IMG_SIDE + 1, RAW = ROW * IMG_SIDE };
    unsigned char raw[RAW], zbuf[RAW + 256], png[RAW + 512], old[RAW + 513];

    for (int y = 0; y < IMG_SIDE; ++y) {
        raw[y * ROW] = 0; /* filter type "None" per row */
        memcpy(raw + y * ROW + 1, pixels + y * IMG_SIDE, IMG_SIDE);
    }
    if (deflateReset(zs) != Z_OK)
        die("deflateReset failed");
    zs->next_in = raw;
    zs->avail_in = RAW;
    zs->next_out = zbuf;
    zs->avail_out = sizeof zbuf;
    if (deflate(zs, Z_FINISH) != Z_STREAM_END)
        die("deflate failed for %s", path);
    size_t zlen = sizeof zbuf - zs->avail_out;

    static const unsigned char sig[8] = { 137, 'P', 'N', 'G', '\r', '\n', 26, '\n' };
    unsigned char ihdr[13] = { 0 };
    put32(ihdr, IMG_SIDE);
    put32(ihdr + 4, IMG_SIDE);
    ihdr[8] = 8; /* bit depth; colour type 0 (gray), no interlace */
    size_t n = sizeof sig;
    memcpy(png, sig, n);
    n += put_chunk(png + n, "IHDR", ihdr, sizeof ihdr);
    n += put_chunk(png + n, "IDAT", zbuf, zlen);
    n += put_chunk(png + n, "IEND", NULL, 0);

    int fd = open(path, O_RDWR | O_CREAT, 0666);
    if (fd < 0)
        die("cannot create %s: %s", path, strerror(errno));
    ssize_t got = pread(fd, old, sizeof old, 0);
    int same = got == (ssize_t)n && memcmp(old, png, n) == 0;
    int bad = got < 0;
    if (!same && !bad) {
        bad = pwrite(fd, png, n, 0) != (ssize_t)n;
        if (!bad && got > (ssize_t)n)
            bad = ftruncate(fd, (off_t)n) != 0;
    }
    bad |= close(fd) != 0;
    if (bad)
        die("cannot write %s: %s", path, strerror(errno));
}

/* Writes text to path via a temporary name so readers see all or nothing. */
static void write_atomic(const char *path, const char *text, size_t len)
{
    char tmp[4200];
    fmt_path(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        die("cannot create %s: %s", tmp, strerror(errno));
    int bad = fwrite(text, 1, len, f) != len;
    bad |= fclose(f) != 0;
    if (bad)
        die("cannot write %s: %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0)
        die("cannot rename %s to %s: %s", tmp, path, strerror(errno));
}

/* Growable text buffer for list files (about 2.5 MB for the train list). */
struct text {
    char *buf;
    size_t len, cap;
};

static void text_add(struct text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1 << 16;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *p = realloc(t->buf, cap);
        if (!p)
            die("out of memory");
        t->buf = p;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n + 1);
    t->len += n;
}

static void write_split(const char *outdir, const struct split *s)
{
    char dir[4096], path[4200], list[4200];
    fmt_path(dir, sizeof dir, "%s/%s", outdir, s->name);
    mkdir_p(dir);

    /* Zero-padded index keeps names unique and the listing sorted. */
    int width = 5;
    for (long n = s->count; n >= 100000; n /= 10)
        ++width;

    z_stream zs = { 0 };
    if (deflateInit(&zs, Z_NO_COMPRESSION) != Z_OK)
        die("deflateInit failed");

    struct text t = { 0 };
    long step = s->count / 4 > 0 ? s->count / 4 : 1;
    for (long i = 0; i < s->count; ++i) {
        int lab = s->labels[i];
        fmt_path(path, sizeof path, "%s/%0*ld_%s.png", dir, width, i, LABELS[lab]);
        check_path_label(path, lab);
        write_png(&zs, path, s->pixels + (size_t)i * IMG_SIDE * IMG_SIDE);
        text_add(&t, path);
        text_add(&t, "\n");
        if ((i + 1) % step == 0 || i + 1 == s->count) {
            printf("  %s: %ld/%ld images\n", s->name, i + 1, s->count);
            fflush(stdout);
        }
    }
    fmt_path(list, sizeof list, "%s/%s.list", outdir, s->name);
    write_atomic(list, t.buf ? t.buf : "", t.len);
    free(t.buf);
    deflateEnd(&zs);
}

/*
 * The stamp names everything the output depends on, so a matching stamp
 * means the output is complete and current and the run can be skipped.
 */
static void describe(char *buf, size_t size, const char *outdir, struct split *sp, int nsplit)
{
    int n = snprintf(buf, size, "mn_fashion format %d\nout %s\nlabels", FORMAT_VERSION, outdir);
    for (int k = 0; k < NCLASSES && n >= 0 && (size_t)n < size; ++k)
        n += snprintf(buf + n, size - (size_t)n, " %s", LABELS[k]);
    for (int i = 0; i < nsplit && n >= 0 && (size_t)n < size; ++i) {
        const char *in[2] = { sp[i].images_path, sp[i].labels_path };
        n += snprintf(buf + n, size - (size_t)n, "\n%s limit %ld", sp[i].name, sp[i].limit);
        for (int j = 0; j < 2 && n >= 0 && (size_t)n < size; ++j) {
            struct stat st;
            if (stat(in[j], &st) != 0)
                die("%s: %s", in[j], strerror(errno));
            n += snprintf(buf + n, size - (size_t)n, "\n  %s %lld %lld", in[j],
                          (long long)st.st_size, (long long)st.st_mtime);
        }
    }
    if (n < 0 || (size_t)n + 2 >= size)
        die("stamp description too long");
    strcat(buf, "\n");
}

static int stamp_matches(const char *stamp, const char *want)
{
    FILE *f = fopen(stamp, "rb");
    if (!f)
        return 0;
    char have[32768];
    size_t n = fread(have, 1, sizeof have - 1, f);
    fclose(f);
    have[n] = '\0';
    return strcmp(have, want) == 0;
}

static long parse_limit(const char *opt, const char *val)
{
    char *end;
    errno = 0;
    long v = val ? strtol(val, &end, 10) : -1;
    /* Zero is refused: Darknet cannot cope with an empty list. */
    if (!val || errno || *end || end == val || v < 1)
        die("%s needs a positive integer", opt);
    return v;
}

static void remove_if_present(const char *path)
{
    if (unlink(path) != 0 && errno != ENOENT)
        die("cannot remove %s: %s", path, strerror(errno));
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc % 2 == 0) {
        fprintf(stderr, "usage: %s <idx-dir> <out-dir> [--limit-train N] [--limit-test M]\n",
                argv[0]);
        return 2;
    }
    const char *idxdir = argv[1];
    char outdir[4096];
    fmt_path(outdir, sizeof outdir, "%s", argv[2]);
    /* "dir/" would give "dir//train/..." paths; strip trailing slashes. */
    for (size_t n = strlen(outdir); n > 1 && outdir[n - 1] == '/'; --n)
        outdir[n - 1] = '\0';

    struct split sp[2] = {
        { .name = "train", .images_file = "train-images-idx3-ubyte",
          .labels_file = "train-labels-idx1-ubyte", .limit = -1 },
        { .name = "test", .images_file = "t10k-images-idx3-ubyte",
          .labels_file = "t10k-labels-idx1-ubyte", .limit = -1 },
    };
    for (int i = 3; i < argc; i += 2) {
        if (strcmp(argv[i], "--limit-train") == 0)
            sp[0].limit = parse_limit(argv[i], argv[i + 1]);
        else if (strcmp(argv[i], "--limit-test") == 0)
            sp[1].limit = parse_limit(argv[i], argv[i + 1]);
        else
            die("unknown option %s", argv[i]);
    }

    check_labels(outdir);
    for (int i = 0; i < 2; ++i) {
        resolve_input(sp[i].images_path, sizeof sp[i].images_path, idxdir, sp[i].images_file);
        resolve_input(sp[i].labels_path, sizeof sp[i].labels_path, idxdir, sp[i].labels_file);
    }

    char stamp[4200], labels_txt[4200], list[4200];
    static char desc[32768];
    fmt_path(stamp, sizeof stamp, "%s/.stamp", outdir);
    fmt_path(labels_txt, sizeof labels_txt, "%s/labels.txt", outdir);
    describe(desc, sizeof desc, outdir, sp, 2);
    if (stamp_matches(stamp, desc)) {
        printf("mn_fashion: %s is up to date\n", outdir);
        return 0;
    }

    /* Everything is read and checked before the old output is touched. */
    for (int i = 0; i < 2; ++i) {
        load_split(&sp[i]);
        printf("mn_fashion: %s: %ld images (%s)\n", sp[i].name, sp[i].count,
               sp[i].images_path);
    }

    mkdir_p(outdir);
    remove_if_present(stamp);
    for (int i = 0; i < 2; ++i) {
        fmt_path(list, sizeof list, "%s/%s.list", outdir, sp[i].name);
        remove_if_present(list);
    }
    for (int i = 0; i < 2; ++i)
        write_split(outdir, &sp[i]);

    struct text t = { 0 };
    for (int k = 0; k < NCLASSES; ++k) {
        text_add(&t, LABELS[k]);
        text_add(&t, "\n");
    }
    write_atomic(labels_txt, t.buf, t.len);
    free(t.buf);
    write_atomic(stamp, desc, strlen(desc));

    for (int i = 0; i < 2; ++i) {
        free(sp[i].pixels);
        free(sp[i].labels);
    }
    printf("mn_fashion: wrote %s/{train,test}.list, labels.txt\n", outdir);
    return 0;
}
