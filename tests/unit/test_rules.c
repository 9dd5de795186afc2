/* Two rules darknet-mn takes over from the forks, by exact values:
 *  - -map's cadence (mn_eval_due), as AlexeyAB's train_detector computes
 *    it: every max(100, epochs * images / batch) iterations after the
 *    last evaluation, not before burn_in, and at max_batches; eval_interval
 *    overrides it;
 *  - where an image's labels are (mn_label_fallback): the base's rule,
 *    else the file beside the image, else Darknet's images -> labels folder.
 * usage: test_rules <scratch folder> */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"
#include "mn_expect.h"


/* The iterations in 1..until at which training evaluates, from start. */
static void schedule(const mn_options *o, size_t start, size_t until, size_t max_batches, size_t burn_in,
                     size_t images, size_t batch, char *out, size_t cap)
{
    size_t last = start, len = 0;
    out[0] = 0;
    for (size_t it = start + 1; it <= until && len < cap; ++it)
        if (mn_eval_due(o, it, last, max_batches, burn_in, images, batch)) {
            len += (size_t)snprintf(out + len, cap - len, "%s%zu", len ? " " : "", it);
            last = it;
        }
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
}

int main(int argc, char **argv)
{
    char got[512];
    mn_options o;
    mn_default_options(&o);
    /* The defaults: no evaluation, not even at max_batches. */
    schedule(&o, 0, 3000, 3000, 1000, 1000, 16, got, sizeof got);
    EXPECT(!strcmp(got, ""), "no -map, no eval_interval: evaluated at '%s'", got);
    /* -map: 4 epochs of 1000 images at 16 a step is 250 iterations, from
     * burn_in 1000 on; and at max_batches 2100. */
    o.eval_epochs = 4;
    schedule(&o, 0, 2100, 2100, 1000, 1000, 16, got, sizeof got);
    EXPECT(!strcmp(got, "1000 1250 1500 1750 2000 2100"), "-map, 1000 images, batch 16: '%s'", got);
    /* At least 100 iterations apart: 100 images at 64 is 6. */
    schedule(&o, 0, 450, 450, 0, 100, 64, got, sizeof got);
    EXPECT(!strcmp(got, "100 200 300 400 450"), "-map, 100 images, batch 64: '%s'", got);
    /* Resumed at 130: counted from where it started, as the fork's iter_map. */
    schedule(&o, 130, 450, 450, 0, 100, 64, got, sizeof got);
    EXPECT(!strcmp(got, "230 330 430 450"), "-map resumed at 130: '%s'", got);
    /* -mAP_epochs 10: 10 * 1000 / 16 = 625 (integer division, as the fork). */
    o.eval_epochs = 10;
    schedule(&o, 0, 1300, 1300, 0, 1000, 16, got, sizeof got);
    EXPECT(!strcmp(got, "625 1250 1300"), "-mAP_epochs 10: '%s'", got);
    /* eval_interval in [distributed] wins over -map. */
    o.eval_interval = 50;
    schedule(&o, 0, 210, 210, 1000, 1000, 16, got, sizeof got);
    EXPECT(!strcmp(got, "50 100 150 200"), "eval_interval=50 with -map: '%s'", got);
    char who[64];
    EXPECT(!strcmp(mn_eval_asker(&o, who, sizeof who), "eval_interval=50"), "asker: %s", who);
    o.eval_interval = 0;
    EXPECT(!strcmp(mn_eval_asker(&o, who, sizeof who), "-map"), "asker: %s", who);

    /* Labels: a scratch tree with both layouts. */
    if (argc < 2) { fprintf(stderr, "usage: test_rules <scratch folder>\n"); return 2; }
    char d[3072], p[4096], lp[4096];
    snprintf(d, sizeof d, "%s/rules", argv[1]);
    mkdir(d, 0777);
    snprintf(p, sizeof p, "%s/images", d), mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/labels", d), mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/images/a.txt", d), touch(p);     /* beside only */
    snprintf(p, sizeof p, "%s/labels/b.txt", d), touch(p);     /* folder only */
    snprintf(p, sizeof p, "%s/images/c.txt", d), touch(p);     /* both */
    snprintf(p, sizeof p, "%s/labels/c.txt", d), touch(p);
    struct { const char *image, *rule, *want; int how; } cases[] = {
        /* pjreddie's rule (images -> labels) finds none: the file beside. */
        {"images/a.png", "labels/a.txt", "images/a.txt", MN_LABELS_BESIDE},
        /* The fork's rule (beside) finds none: Darknet's labels folder. */
        {"images/b.jpg", "images/b.txt", "labels/b.txt", MN_LABELS_FOLDER},
        /* Where the base's rule finds one, it stands. */
        {"images/c.jpg", "labels/c.txt", "labels/c.txt", MN_LABELS_RULE},
        {"images/c.jpg", "images/c.txt", "images/c.txt", MN_LABELS_RULE},
        /* Nowhere: the rule's path stays, for the error to name. */
        {"images/d.jpg", "labels/d.txt", "labels/d.txt", MN_LABELS_RULE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        char image[4096], want[4096];
        snprintf(image, sizeof image, "%s/%s", d, cases[i].image);
        snprintf(lp, sizeof lp, "%s/%s", d, cases[i].rule);
        snprintf(want, sizeof want, "%s/%s", d, cases[i].want);
        int how = mn_label_fallback(image, lp, sizeof lp);
        EXPECT(how == cases[i].how && !strcmp(lp, want), "%s with rule %s: %d %s, want %d %s", cases[i].image,
               cases[i].rule, how, lp, cases[i].how, want);
    }
    /* An extension-less image and a dot in a folder name: beside is name.txt. */
    snprintf(p, sizeof p, "%s/x.v2", d), mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/x.v2/e.txt", d), touch(p);
    char image[4096];
    snprintf(image, sizeof image, "%s/x.v2/e", d);
    snprintf(lp, sizeof lp, "%s/x.v2/e-rule.txt", d);
    EXPECT(mn_label_fallback(image, lp, sizeof lp) == MN_LABELS_BESIDE && strstr(lp, "/x.v2/e.txt"),
           "extension-less image: %s", lp);
    if (failures) return 1;
    printf("test_rules: -map's cadence (6 schedules) and the label rules (6 layouts) as expected\n");
    return 0;
}
