/* The one training driver, for the classifier and the detector alike, and the
 * multi-node classifier evaluator.
 *
 * Each rank runs the same loop: get b*subdivisions images, train_network()
 * (which reaches update_network once, where the optimizer hook averages the
 * gradients over all ranks), report on rank 0. The data come from the rank's
 * own shard of the list (random sampling with Darknet's loaders and
 * augmentation), or in deterministic mode from fixed global positions: the
 * global batch is the next N*b paths of the list and rank r takes its slice. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include "mn_internal.h"
#include "data.h"
#include "option_list.h"
#include "utils.h"

/* Not in Darknet's headers, but exported by data.c. */
void fill_truth_detection(char *path, int num_boxes, float *truth, int classes, int flip,
                          float dx, float dy, float sx, float sy);

double mn_now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* What the data cfg says, checked on every rank (they all read it; it is small). */
typedef struct {
    char *train, *valid, *backup, *labels_file;
    char **labels;
    int classes;
} data_cfg;

static char *str_or(list *o, const char *key, char *def)
{
    char *v = option_find(o, (char *)key);
    return v ? v : def;
}

static mn_status read_data_file(mn_comm *c, const char *datacfg, mn_task task, data_cfg *d)
{
    memset(d, 0, sizeof *d);
    FILE *fp = fopen(datacfg, "r");
    if (!fp) {
        if (c->rank == 0) mn_error(c, "cannot open data file %s: %s", datacfg, strerror(errno));
        return MN_ERR_USER;
    }
    fclose(fp);
    list *o = read_data_cfg((char *)datacfg);
    d->train = str_or(o, "train", NULL);
    d->valid = str_or(o, "valid", NULL);
    d->backup = str_or(o, "backup", "backup");
    d->classes = option_find_int_quiet(o, "classes", 0);
    d->labels_file = str_or(o, "labels", NULL);
    if (task == MN_TASK_CLASSIFIER) {
        if (d->classes < 1) {
            if (c->rank == 0) mn_error(c, "%s: 'classes' must be a positive integer", datacfg);
            return MN_ERR_USER;
        }
        if (!d->labels_file) {
            if (c->rank == 0) mn_error(c, "%s: no 'labels' file given", datacfg);
            return MN_ERR_USER;
        }
        fp = fopen(d->labels_file, "r");
        if (!fp) {
            if (c->rank == 0) mn_error(c, "cannot open labels file %s (from %s): %s", d->labels_file, datacfg, strerror(errno));
            return MN_ERR_USER;
        }
        fclose(fp);
        list *l = get_paths(d->labels_file);
        if (l->size < d->classes) {
            if (c->rank == 0)
                mn_error(c, "labels file %s has %d labels, but %s says classes=%d", d->labels_file, l->size, datacfg, d->classes);
            return MN_ERR_USER;
        }
        d->labels = (char **)list_to_array(l);
    }
    return MN_OK;
}

/* The class of a path: the one label it contains (Darknet matches labels as
 * substrings). -1 when none or several match. */
static int path_class(char **labels, int k, const char *path, int *matches)
{
    int cls = -1;
    *matches = 0;
    for (int i = 0; i < k; ++i)
        if (strstr(path, labels[i])) { cls = i; ++*matches; }
    return *matches == 1 ? cls : -1;
}

static mn_status check_readable(const mn_comm *c, const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) { mn_error(c, "cannot read image %s: %s", path, strerror(errno)); return MN_ERR_USER; }
    fclose(fp);
    return MN_OK;
}

/* Deterministic batch: rows[j*b + i] is global position
 * first + j*N*b + r*b + i of the list (mod its length); no augmentation. */
static mn_status load_fixed(mn_comm *c, network *net, mn_task task, const data_cfg *dc,
                            const mn_list *l, size_t first, data *out)
{
    int b = net->batch, s = net->subdivisions, rows = b * s;
    int boxes = net->layers[net->n - 1].max_boxes;
    data d = {0};
    d.shallow = 0;
    d.X = make_matrix(rows, net->w * net->h * net->c);
    d.y = make_matrix(rows, task == MN_TASK_CLASSIFIER ? dc->classes : 5 * (boxes ? boxes : 90));
    for (int j = 0; j < s; ++j) {
        for (int i = 0; i < b; ++i) {
            size_t g = (first + (size_t)j * c->size * b + (size_t)c->rank * b + i) % l->global_n;
            char *path = l->paths[g];
            MN_CHECK(check_readable(c, path));
            image im = load_image_color(path, net->w, net->h);
            memcpy(d.X.vals[j * b + i], im.data, sizeof(float) * (size_t)d.X.cols);
            free_image(im);
            if (task == MN_TASK_CLASSIFIER) {
                int m, cls = path_class(dc->labels, dc->classes, path, &m);
                if (cls < 0) {
                    mn_error(c, "image %s matches %d labels of %s; it must contain exactly one", path, m, dc->labels_file);
                    free_data(d);
                    return MN_ERR_USER;
                }
                d.y.vals[j * b + i][cls] = 1;
            } else {
                fill_truth_detection(path, boxes ? boxes : 90, d.y.vals[j * b + i], dc->classes, 0, 0, 0, 1, 1);
            }
        }
    }
    *out = d;
    return MN_OK;
}

static load_args random_args(network *net, mn_task task, const data_cfg *dc, const mn_list *l, data *buffer)
{
    load_args a = get_base_args(net);
    a.paths = l->paths;
    a.m = (int)l->n;
    a.n = net->batch * net->subdivisions;
    a.d = buffer;
    a.threads = 8;
    if (task == MN_TASK_CLASSIFIER) {
        a.min = (int)(net->min_ratio * net->w);
        a.max = (int)(net->max_ratio * net->w);
        a.center = 0;
        a.hierarchy = net->hierarchy;
        a.classes = dc->classes;
        a.labels = dc->labels;
        a.type = CLASSIFICATION_DATA;
    } else {
        layer last = net->layers[net->n - 1];
        a.coords = last.coords;
        a.classes = last.classes;
        a.jitter = last.jitter;
        a.num_boxes = last.max_boxes;
        a.type = DETECTION_DATA;
    }
    return a;
}

/* Averages every batch-norm running statistic over the ranks (bn_average=1). */
static mn_status average_bn(mn_comm *c, network *net)
{
    for (int i = 0; i < net->n; ++i) {
        layer *l = &net->layers[i];
        if (!l->rolling_mean) continue;
        mn_param p[MN_MAX_LAYER_PARAMS];
        int k = mn_layer_params(l, p, MN_MAX_LAYER_PARAMS);
        for (int j = 0; j < k; ++j) {
            if (p[j].data != l->rolling_mean && p[j].data != l->rolling_variance) continue;
#ifdef GPU
            if (net->gpu_index >= 0) cuda_pull_array(p[j].data == l->rolling_mean ? l->rolling_mean_gpu : l->rolling_variance_gpu, p[j].data, p[j].n);
#endif
            MN_CHECK(mn_comm_mean_grad(c, &p[j].data, &p[j].n, 1));
#ifdef GPU
            if (net->gpu_index >= 0) cuda_push_array(p[j].data == l->rolling_mean ? l->rolling_mean_gpu : l->rolling_variance_gpu, p[j].data, p[j].n);
#endif
        }
    }
    return MN_OK;
}

/* Collective: every rank calls it at the same iterations; rank 0 writes. */
static mn_status save_all(mn_comm *c, network *net, const mn_options *o, const char *path)
{
    if (o->bn_average) MN_CHECK(average_bn(c, net));
    mn_status s = c->rank == 0 ? mn_save_weights(c, net, path) : MN_OK;
    return mn_agree(c, s);
}

static void format_duration(double s, char *buf, size_t n)
{
    long t = s < 0 ? 0 : (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

static mn_status ensure_dir(mn_comm *c, const char *dir)
{
    mn_status s = MN_OK;
    if (c->rank == 0) {
        struct stat st;
        if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0) {
            mn_error(c, "cannot create backup directory %s: %s", dir, strerror(errno));
            s = MN_ERR_USER;
        } else if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
            mn_error(c, "backup path %s is not a directory", dir);
            s = MN_ERR_USER;
        }
    }
    return mn_agree(c, s);
}

mn_status mn_train(mn_comm *c, mn_task task, const char *datacfg, const char *cfgfile,
                   const char *weightfile, int clear)
{
    data_cfg dc;
    MN_CHECK(mn_agree(c, read_data_file(c, datacfg, task, &dc)));
    if (!dc.train) {
        if (c->rank == 0) mn_error(c, "%s: no 'train' list given", datacfg);
        return mn_agree(c, MN_ERR_USER);
    }
    network *net;
    MN_CHECK(mn_load_network(c, cfgfile, weightfile, clear, &net));
    mn_options opt;
    MN_CHECK(mn_agree(c, mn_parse_options(net, cfgfile, c->rank == 0, &opt)));
    MN_CHECK(mn_comm_select(c, opt.communicator));
    if (task == MN_TASK_DETECTOR && net->layers[net->n - 1].type != YOLO &&
        net->layers[net->n - 1].type != REGION && net->layers[net->n - 1].type != DETECTION) {
        if (c->rank == 0) mn_error(c, "%s: the last layer is not a yolo, region or detection layer", cfgfile);
        return mn_agree(c, MN_ERR_USER);
    }
    srand((unsigned)(opt.seed * 7919 + c->rank));
    mn_list shard;
    MN_CHECK(opt.deterministic ? mn_bcast_list(c, dc.train, opt.shuffle, opt.seed, &shard)
                               : mn_scatter_list(c, dc.train, opt.shuffle, opt.seed, &shard));
    MN_CHECK(ensure_dir(c, dc.backup));
    mn_optimizer *mo;
    MN_CHECK(mn_agree(c, mn_attach(c, net, &opt, &mo)));

    char *base = basecfg((char *)cfgfile);
    int imgs = net->batch * net->subdivisions;         /* per rank, per update */
    long global_imgs = (long)imgs * c->size;
    if (c->rank == 0)
        printf("darknet-mn: %s on %d ranks (%d node%s), communicator %s, batch %d x %d ranks = %ld images per update, "
               "lr %g, momentum %g, decay %g, %zu images%s\n",
               base, c->size, c->nodes, c->nodes > 1 ? "s" : "", mn_comm_name(c), imgs, c->size, global_imgs,
               net->learning_rate, net->momentum, net->decay, shard.global_n,
               opt.deterministic ? ", deterministic" : "");

    data train = {0}, buffer = {0};
    load_args args = random_args(net, task, &dc, &shard, &buffer);
    pthread_t loader = 0;
    int dim = net->w, count = 0;
    layer last = net->layers[net->n - 1];
    int resizes = task == MN_TASK_DETECTOR && last.random && !opt.deterministic;
    if (!opt.deterministic && !resizes) loader = load_data(args);

    double start = mn_now(), avg_loss = -1;
    size_t first_batch = get_current_batch(net);
    mn_status s = MN_OK;
    while (get_current_batch(net) < (size_t)net->max_batches && s == MN_OK) {
        double t0 = mn_now();
        if (resizes && count++ % 10 == 0) {
            /* Rank 0 draws the size for everyone, so no rank waits on a larger one. */
            int d = (rand() % 10 + 10) * 32;
            if (get_current_batch(net) + 200 > (size_t)net->max_batches) d = 608;
            MPI_Bcast(&d, 1, MPI_INT, 0, c->world);
            if (loader) { pthread_join(loader, 0); free_data(buffer); }
            dim = d;
            args.w = args.h = dim;
            resize_network(net, dim, dim);
            loader = load_data(args);
        }
        if (opt.deterministic) {
            s = mn_agree(c, load_fixed(c, net, task, &dc, &shard, get_current_batch(net) * (size_t)global_imgs, &train));
            if (s != MN_OK) break;
        } else {
            pthread_join(loader, 0);
            train = buffer;
            loader = load_data(args);
        }
        float loss = train_network(net, train);
        free_data(train);
        float sum = loss;
        MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_FLOAT, MPI_SUM, c->world);
        loss = sum / c->size;
        avg_loss = avg_loss < 0 ? loss : avg_loss * .9 + loss * .1;
        size_t it = get_current_batch(net);
        double now = mn_now();
        if (c->rank == 0) {
            char el[32], eta[32];
            double per = (now - start) / (double)(it - first_batch);
            format_duration(now - start, el, sizeof el);
            format_duration(per * (double)(net->max_batches - it), eta, sizeof eta);
            printf("%zu: loss %f, avg %f, rate %f, %.1f img/s, %s elapsed, ETA %s, %zu images\n", it, loss, avg_loss,
                   get_current_rate(net), global_imgs / (now - t0), el, eta, *net->seen);
            fflush(stdout);
        }
        char path[4096];
        if (it % (size_t)opt.backup_interval == 0) {
            snprintf(path, sizeof path, "%s/%s.backup", dc.backup, base);
            s = save_all(c, net, &opt, path);
        }
        if (s == MN_OK && it % (size_t)opt.save_interval == 0) {
            snprintf(path, sizeof path, "%s/%s_%zu.weights", dc.backup, base, it);
            s = save_all(c, net, &opt, path);
        }
    }
    if (loader) { pthread_join(loader, 0); free_data(buffer); }
    if (s == MN_OK) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s_final.weights", dc.backup, base);
        s = save_all(c, net, &opt, path);
        if (s == MN_OK && c->rank == 0) printf("darknet-mn: wrote %s\n", path);
    }
    mn_detach(net, mo);
    mn_free_list(&shard);
    free_network(net);
    free(base);
    return s;
}

/* Classifier evaluation: the valid list is scattered, each rank scores its
 * shard exactly as stock validate_classifier_single does, and the hit counts
 * are summed on rank 0. */
mn_status mn_classifier_valid(mn_comm *c, const char *datacfg, const char *cfgfile,
                              const char *weightfile)
{
    data_cfg dc;
    MN_CHECK(mn_agree(c, read_data_file(c, datacfg, MN_TASK_CLASSIFIER, &dc)));
    if (!dc.valid) {
        if (c->rank == 0) mn_error(c, "%s: no 'valid' list given", datacfg);
        return mn_agree(c, MN_ERR_USER);
    }
    network *net;
    MN_CHECK(mn_load_network(c, cfgfile, weightfile, 0, &net));
    mn_options opt;
    MN_CHECK(mn_agree(c, mn_parse_options(net, cfgfile, c->rank == 0, &opt)));
    set_batch_network(net, 1);
    mn_list shard;
    MN_CHECK(mn_scatter_list(c, dc.valid, 0, 0, &shard));
    list *o = read_data_cfg((char *)datacfg);
    int topk = option_find_int_quiet(o, "top", 1);
    if (topk < 1 || topk > dc.classes) topk = dc.classes < 5 ? dc.classes : 5;
    int *idx = calloc((size_t)topk, sizeof(int));
    long hits[3] = {0, 0, 0};   /* top-1, top-k, images */
    mn_status s = MN_OK;
    for (size_t i = 0; i < shard.n && s == MN_OK; ++i) {
        int m, cls = path_class(dc.labels, dc.classes, shard.paths[i], &m);
        if (cls < 0) {
            mn_error(c, "image %s matches %d labels of %s; it must contain exactly one", shard.paths[i], m, dc.labels_file);
            s = MN_ERR_USER;
            break;
        }
        if ((s = check_readable(c, shard.paths[i])) != MN_OK) break;
        image im = load_image_color(shard.paths[i], 0, 0);
        image resized = resize_min(im, net->w);
        image crop = crop_image(resized, (resized.w - net->w) / 2, (resized.h - net->h) / 2, net->w, net->h);
        float *pred = network_predict(net, crop.data);
        if (net->hierarchy) hierarchy_predictions(pred, net->outputs, net->hierarchy, 1, 1);
        top_k(pred, dc.classes, topk, idx);
        hits[0] += idx[0] == cls;
        for (int j = 0; j < topk; ++j) hits[1] += idx[j] == cls;
        hits[2] += 1;
        if (resized.data != im.data) free_image(resized);
        free_image(im);
        free_image(crop);
    }
    s = mn_agree(c, s);
    if (s == MN_OK) {
        MPI_Allreduce(MPI_IN_PLACE, hits, 3, MPI_LONG, MPI_SUM, c->world);
        if (c->rank == 0)
            printf("darknet-mn: %ld images on %d ranks: top-1 %.4f (%ld), top-%d %.4f (%ld)\n", hits[2], c->size,
                   (double)hits[0] / hits[2], hits[0], topk, (double)hits[1] / hits[2], hits[1]);
    }
    free(idx);
    mn_free_list(&shard);
    free_network(net);
    return s;
}
