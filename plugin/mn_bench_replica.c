/* ./darknet_mn bench replica <cfg> [-iters K]: what the replica check costs.
 * On the cfg's model with its optimizer attached (so the momentum arena is
 * hashed too), K checks and K gradient allreduces (the job's communicator)
 * interleaved; the slowest rank's median of each, and their ratio. A check
 * runs once per save (backup_interval, 100 by default), the allreduce once
 * per iteration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mn_internal.h"
#include "mn_replica.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of_slowest(mn_comm *c, double *t, int k)
{
    qsort(t, (size_t)k, sizeof *t, cmp_double);
    double m = t[k / 2];
    MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, c->world);
    return m;
}

static mn_status run(mn_comm *c, const char *cfg, int iters)
{
    network *net;
    MN_CHECK(mn_load_network(c, cfg, NULL, 0, &net));
    mn_options opt;
    mn_default_options(&opt);
    opt.collective_timeout = 0;
    mn_optimizer *o;
    mn_status s = mn_attach(c, net, &opt, &o);
    if (s != MN_OK) { free_network(net); return s; }
    size_t total = 0, nparams = mn_params_count(net);
    float *arena = mn_optimizer_arena(o, &total);
    double *tc = calloc((size_t)iters + 2, sizeof *tc), *ta = calloc((size_t)iters + 2, sizeof *ta);
    s = mn_agree(c, tc && ta ? MN_OK : MN_ERR_NOMEM);
    for (int i = -2; s == MN_OK && i < iters; ++i) {   /* two warm-ups */
        MPI_Barrier(c->world);
        double t0 = mn_now();
        s = mn_replica_check(c, net, o, 0, 0, NULL);
        double t1 = mn_now();
        MPI_Barrier(c->world);
        double t2 = mn_now();
        if (s == MN_OK) s = mn_comm_mean_grad(c, &arena, &total, 1);
        double t3 = mn_now();
        if (i >= 0) { tc[i] = t1 - t0; ta[i] = t3 - t2; }
    }
    if (s == MN_OK) {
        double check = median_of_slowest(c, tc, iters), mean = median_of_slowest(c, ta, iters);
        double bytes = (double)(nparams + total) * sizeof(float);
        if (c->rank == 0) {
            printf("# model %s: %zu parameters and statistics, %zu momentum floats; %d ranks, %s, %d iterations\n",
                   cfg, nparams, total, c->size, mn_comm_name(c), iters);
            printf("%-18s %10s %10s %12s\n", "what", "time_ms", "MiB", "GB/s");
            printf("%-18s %10.3f %10.2f %12.2f\n", "replica check", check * 1e3, bytes / 1048576, bytes / check / 1e9);
            if (c->size > 1) {   /* one rank has nothing to average */
                printf("%-18s %10.3f %10.2f %12.2f\n", "gradient mean", mean * 1e3, total * 4.0 / 1048576, total * 4.0 / mean / 1e9);
                printf("# the check costs %.2f gradient allreduces; once per save (backup_interval=100): "
                       "%.4f of one per iteration\n", check / mean, check / mean / 100);
            }
        }
    }
    free(tc);
    free(ta);
    mn_detach(net, o);
    free_network(net);
    return s;
}

mn_status mn_bench_replica(mn_comm *c, int argc, char **argv)
{
    int iters = 10;
    const char *cfg = NULL;
    for (int i = 3; i < argc; ++i) {
        if (!strcmp(argv[i], "-iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "-nogpu")) cfg = argv[i];
    }
    if (!cfg || iters < 1) {
        if (c->rank == 0) mn_error(c, "usage: bench replica <cfg> [-iters K] (K >= 1)");
        return MN_ERR_USER;
    }
    return mn_agree(c, run(c, cfg, iters));
}
