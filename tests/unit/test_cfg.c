/* The cfg check must not refuse a cfg Darknet itself takes: every cfg given
 * (run.sh passes every cfg of Darknet's source package and ours) passes
 * mn_cfg_read. And the [distributed] keys by exact values: the defaults,
 * a value of every kind taken, and every message a bad value gets. */
#include <stdio.h>
#include <string.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"
#include "mn_expect.h"

static const char *const comms = "naive, flat, hierarchical, two_dimensional, single_node, pure_nccl, auto";

/* Each bad value's message, byte for byte. */
static const struct { const char *key, *value, *why; } bad_values[] = {
    {"comunicator", "flat", "unknown key 'comunicator' in [distributed]; valid keys: communicator, "
     "allreduce_grad_dtype, double_buffering, double_buffering_fresh, double_buffering_local, "
     "double_buffering_handover, double_buffering_compensation, double_buffering_prediction, overlap, bucket_mb, "
     "timeline, bn_average, sync_bn, eval_interval, eval_list, deterministic, shuffle, seed, backup_interval, "
     "save_interval, checkpoint_interval, checkpoint_keep, nonfinite, bad_labels, collective_timeout, lock_lease, "
     "chart, cache_mb, global_batch, rescue, save_retry, checkpoint_minutes"},
    {"communicator", "ring", "[distributed] communicator 'ring' is unknown; valid communicators: %s"},
    {"communicator", "", "[distributed] communicator '' is empty; valid communicators: %s"},
    {"allreduce_grad_dtype", "int8", "[distributed] allreduce_grad_dtype='int8' is invalid; valid: float32, float16"},
    {"double_buffering", "2", "[distributed] double_buffering='2' must be 0 or 1"},
    {"double_buffering_local", "", "[distributed] double_buffering_local='' must be 0 or 1"},
    {"overlap", "-1", "[distributed] overlap='-1' must be 0 or 1"},
    {"sync_bn", "1.0", "[distributed] sync_bn='1.0' must be 0 or 1"},
    {"seed", "seven", "[distributed] seed='seven' must be a non-negative integer"},
    {"seed", "2147483648", "[distributed] seed='2147483648' must be a non-negative integer"},
    {"double_buffering_fresh", "x", "[distributed] double_buffering_fresh='x' must be a non-negative integer"},
    {"double_buffering_handover", "-1", "[distributed] double_buffering_handover='-1' must be a non-negative integer"},
    {"eval_interval", "-1", "[distributed] eval_interval='-1' must be a non-negative integer"},
    {"cache_mb", "-1", "[distributed] cache_mb='-1' must be a non-negative integer"},
    {"backup_interval", "0", "[distributed] backup_interval='0' must be a positive integer"},
    {"lock_lease", "", "[distributed] lock_lease='' must be a positive integer"},
    {"double_buffering_compensation", "-1", "[distributed] double_buffering_compensation='-1' must be a number "
     "from 0 (none) to 1000000 (100 by default with double_buffering_local=0)"},
    {"double_buffering_prediction", "2", "[distributed] double_buffering_prediction='2' must be a number from 0 "
     "(none) to 1 (1 by default with double_buffering_local=0)"},
    {"bucket_mb", "0", "[distributed] bucket_mb='0' must be a number of MiB above 0 and at most 1048576 (e.g. 4 or 0.5)"},
    {"bucket_mb", "nan", "[distributed] bucket_mb='nan' must be a number of MiB above 0 and at most 1048576 (e.g. 4 or 0.5)"},
    {"checkpoint_minutes", "x", "[distributed] checkpoint_minutes='x' must be a number of minutes from 0 (none) to "
     "1000000 (e.g. 30 or 0.5)"},
    {"nonfinite", "maybe", "[distributed] nonfinite='maybe' is invalid; valid: stop, skip"},
    {"bad_labels", "", "[distributed] bad_labels='' is invalid; valid: stop, skip"},
    {"global_batch", "more", "[distributed] global_batch='more' is invalid; valid: keep, strict, cfg"},
};

/* The defaults, every field; then values of every kind taken, the empty
 * ones giving the default back; then each refusal's message. */
static void check_options(void)
{
    mn_options want, got;
    memset(&want, 0, sizeof want);
    snprintf(want.communicator, sizeof want.communicator, "auto");
    want.shuffle = want.seed = want.chart = want.rescue = want.dbuf_local = 1;
    want.backup_interval = 100, want.save_interval = 1000, want.checkpoint_keep = 3;
    want.collective_timeout = 300, want.lock_lease = 60, want.save_retry = 120;
    want.bucket_mb = 1, want.checkpoint_minutes = 30;
    want.cache_mb = want.dbuf_fresh = want.dbuf_handover = -1;
    want.dbuf_compensation = want.dbuf_prediction = -1;
    mn_default_options(&got);
    EXPECT(!memcmp(&want, &got, sizeof got), "the defaults differ");
    char why[600] = "", big[4097];
    const char *set[][2] = {{"communicator", "flat"}, {"allreduce_grad_dtype", "float16"}, {"global_batch", "cfg"},
                            {"double_buffering_fresh", "0"}, {"double_buffering_handover", "7"}, {"cache_mb", "0"},
                            {"double_buffering_compensation", "0.5"}, {"bucket_mb", "0.25"}, {"nonfinite", "skip"},
                            {"timeline", "t.json"}, {"seed", "2147483647"}, {"overlap", "1"}};
    for (size_t i = 0; i < sizeof set / sizeof *set; ++i)
        EXPECT(mn_option_set(&got, set[i][0], set[i][1], why, sizeof why), "%s=%s: %s", set[i][0], set[i][1], why);
    EXPECT(!strcmp(got.communicator, "flat") && got.grad_dtype_half == 1 && got.global_batch == MN_GLOBAL_BATCH_CFG &&
           got.dbuf_fresh == 0 && got.dbuf_handover == 7 && got.cache_mb == 0 && got.dbuf_compensation == 0.5 &&
           got.bucket_mb == 0.25 && got.nonfinite_skip == 1 && !strcmp(got.timeline, "t.json") &&
           got.seed == 2147483647 && got.overlap == 1, "the values set");
    for (size_t i = 0; i < 3; ++i)
        EXPECT(mn_option_set(&got, set[3 + i][0], "", why, sizeof why), "%s= (empty): %s", set[3 + i][0], why);
    EXPECT(got.dbuf_fresh == -1 && got.dbuf_handover == -1 && got.cache_mb == -1, "empty values: the defaults");
    memset(big, 'a', sizeof big - 1), big[sizeof big - 1] = 0;
    EXPECT(!mn_option_set(&got, "eval_list", big, why, sizeof why) &&
           !strcmp(why, "[distributed] eval_list is longer than 4095 bytes"), "eval_list of 4096 bytes: %s", why);
    for (size_t i = 0; i < sizeof bad_values / sizeof *bad_values; ++i) {
        char want_why[600];
        snprintf(want_why, sizeof want_why, bad_values[i].why, comms);
        why[0] = 0;
        EXPECT(!mn_option_set(&got, bad_values[i].key, bad_values[i].value, why, sizeof why) && !strcmp(why, want_why),
               "%s='%s': got '%s'", bad_values[i].key, bad_values[i].value, why);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_options();
    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    int refused = 0;
    for (int i = 1; c && i < argc; ++i)
        if (mn_cfg_read(c, argv[i], NULL) != MN_OK) {
            if (mn_comm_rank(c) == 0) printf("test_cfg: FAIL %s refused\n", argv[i]);
            ++refused;
        }
    if (c && mn_comm_rank(c) == 0)
        printf("test_cfg: %d of %d cfgs accepted; %zu bad values refused, %d failures\n", argc - 1 - refused,
               argc - 1, sizeof bad_values / sizeof *bad_values, failures);
    mn_comm_free(c);
    MPI_Finalize();
    return !c || refused || argc < 2 || failures;
}
