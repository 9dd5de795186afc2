/* The backup folder's lock. An flock alone is not enough: on NFS and
 * Lustre a dead host's flock outlives it, and where flock is node-local or
 * a no-op two jobs both get it. So the lock file also holds a record of the
 * owning job, with a lease that a thread of rank 0 renews, and the record
 * decides.
 *
 * The record is one line padded to RECORD bytes, so that a rewrite never
 * truncates the file, ending in a checksum, so that a reader catching a
 * rewrite half done reads again:
 *   <host> <pid> <run> job=<id|-> lease=<s> renewed=<epoch s> held|released token=<hex> sum=<hex>
 * Every read opens the file anew: NFS's close-to-open consistency then
 * gives the last record written. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include "train/checkpoint/mn_checkpoint.h"

#define LOCK_NAME ".darknet_mn.lock"
#define RECORD 512

typedef struct {
    char host[64], job[64], state[16];
    long pid;
    uint64_t run, token;
    int lease;        /* seconds unrenewed until the holder counts as gone */
    double renewed;   /* seconds since the epoch, on the holder's clock */
} lock_rec;

/* What reading the file found. */
enum { REC_MISSING, REC_EMPTY, REC_OLD, REC_BAD, REC_ERR, REC_OK };

struct mn_lock {
    const mn_comm *c;   /* rank 0's, for the thread's messages */
    char dir[4096], path[4200];
    int fd, flocked;
    lock_rec mine;      /* this job's record */
    lock_rec other;     /* the record that replaced it, once lost */
    int lost;           /* another job took the folder over (atomic: read every iteration) */
    int rerun;          /* the record found was an earlier run of this job */
    uint64_t last_run;  /* the run id of the record found (0: none) */
    int told, write_failed;
    long long interval_ms;   /* between renewals */
    pthread_t thread;
    int started, quit;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static int parse(const char *buf, lock_rec *r)
{
    memset(r, 0, sizeof *r);
    unsigned long long run = 0, token = 0, stored = 0;
    const char *sum = strstr(buf, " sum=");
    if (sum && sscanf(buf, "%63s %ld %llx job=%63s lease=%d renewed=%lf %15s token=%llx", r->host, &r->pid, &run,
                      r->job, &r->lease, &r->renewed, r->state, &token) == 8 &&
        sscanf(sum, " sum=%llx", &stored) == 1 && mn_fnv1a(MN_FNV_SEED, buf, (size_t)(sum - buf)) == stored) {
        r->run = run;
        r->token = token;
        return REC_OK;
    }
    int end = 0;
    /* An older darknet-mn's whole record: "host pid run" and nothing after. */
    if (sscanf(buf, "%63s %ld %llx %n", r->host, &r->pid, &run, &end) == 3 && buf[end] == 0) {
        snprintf(r->job, sizeof r->job, "-");
        return REC_OLD;
    }
    for (const char *p = buf; *p; ++p)
        if (!isspace((unsigned char)*p)) return REC_BAD;
    return REC_EMPTY;
}

/* The record in path, read up to `tries` times while it is half written. */
static int read_rec(const char *path, lock_rec *r, int tries)
{
    int st = REC_ERR;
    for (int i = 0; i < tries; ++i) {
        if (i) sleep_s(0.05);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            memset(r, 0, sizeof *r);
            if (errno == ENOENT) return REC_MISSING;
            st = REC_ERR;
            continue;
        }
        char buf[RECORD + 1];
        ssize_t k = pread(fd, buf, RECORD, 0);
        close(fd);
        buf[k > 0 ? k : 0] = 0;
        st = k < 0 ? REC_ERR : parse(buf, r);
        if (st == REC_OK || st == REC_OLD || st == REC_EMPTY) return st;
    }
    return st;
}

/* Rewrites this job's record in place, durably. 0 with errno on failure. */
static int write_rec(mn_lock *l, const char *state)
{
    lock_rec *m = &l->mine;
    m->renewed = mn_wall();
    snprintf(m->state, sizeof m->state, "%s", state);
    char line[RECORD];
    int k = snprintf(line, sizeof line, "%s %ld %016llx job=%s lease=%d renewed=%.3f %s token=%016llx", m->host,
                     m->pid, (unsigned long long)m->run, m->job, m->lease, m->renewed, m->state,
                     (unsigned long long)m->token);
    k += snprintf(line + k, sizeof line - (size_t)k, " sum=%016llx",
                  (unsigned long long)mn_fnv1a(MN_FNV_SEED, line, (size_t)k));
    memset(line + k, ' ', RECORD - 1 - (size_t)k);
    line[RECORD - 1] = '\n';
    struct stat st;
    return pwrite(l->fd, line, RECORD, 0) == RECORD && fstat(l->fd, &st) == 0 &&
           (st.st_size <= RECORD || ftruncate(l->fd, RECORD) == 0) && fsync(l->fd) == 0;
}

static int is_mine(const mn_lock *l, const lock_rec *r)
{
    return r->token == l->mine.token && r->pid == l->mine.pid && !strcmp(r->host, l->mine.host);
}

/* "job J, host H, pid P", without the job part for no identity. */
static void describe(const lock_rec *r, char *buf, size_t n)
{
    if (strcmp(r->job, "-")) snprintf(buf, n, "job %s, host %s, pid %ld", r->job, r->host, r->pid);
    else snprintf(buf, n, "host %s, pid %ld", r->host, r->pid);
}

/* Whether the file still holds this job's record; else the lock is lost.
 * A failed read (an NFS error) proves nothing: 1. With l->mu held, or
 * before the thread. */
static int verify(mn_lock *l)
{
    lock_rec r;
    int st = read_rec(l->path, &r, 20);
    if (st == REC_ERR || (st == REC_OK && is_mine(l, &r))) return 1;
    if (st == REC_MISSING) {
        /* Removed by hand or by a cleaner: re-taken at once with this job's
         * record in a new file, unless another job made one meanwhile. */
        int fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) return 1;
        int got = flock(fd, LOCK_EX | LOCK_NB) == 0;
        if (!got && errno == EWOULDBLOCK) {
            close(fd);
            return 1;
        }
        close(l->fd);
        l->fd = fd;
        l->flocked = got;
        if (write_rec(l, "held"))
            mn_error(l->c, "warning: the lock file %s was removed while this job held it: re-taken with this job's "
                     "record", l->path);
        return 1;
    }
    l->other = r;
    __atomic_store_n(&l->lost, 1, __ATOMIC_RELAXED);
    return 0;
}

/* One renewal; with l->mu held. */
static void renew(mn_lock *l)
{
    /* Taken over from a dead host whose flock lingered: ours once it lapses. */
    if (!l->flocked) l->flocked = flock(l->fd, LOCK_EX | LOCK_NB) == 0;
    if (!verify(l) || write_rec(l, "held") || l->write_failed) return;
    l->write_failed = 1;   /* said once: the lease lapses if this goes on */
    mn_error(l->c, "cannot renew the lease in the lock file %s: %s; another job may take the folder over %d s "
             "after the last renewal", l->path, strerror(errno), l->mine.lease);
}

static void *renew_main(void *arg)
{
    mn_lock *l = arg;
    pthread_mutex_lock(&l->mu);
    while (!l->quit && !l->lost) {
        /* From now, not from the last deadline: after a SIGSTOP, one renewal, not a burst. */
        struct timespec at;
        clock_gettime(CLOCK_MONOTONIC, &at);
        long long ns = (long long)at.tv_nsec + l->interval_ms * 1000000LL;
        at.tv_sec += (time_t)(ns / 1000000000LL);
        at.tv_nsec = (long)(ns % 1000000000LL);
        while (!l->quit && pthread_cond_timedwait(&l->cv, &l->mu, &at) != ETIMEDOUT) {}
        if (!l->quit) renew(l);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* This job's identity, the same in every run of one Slurm job or one
 * scripts/mn_rerun.sh invocation; "-": none. */
static void job_identity(char *out, size_t n)
{
    const char *slurm = getenv("SLURM_JOB_ID"), *cluster = getenv("SLURM_CLUSTER_NAME"), *rerun = getenv("MN_RERUN_ID");
    int named = cluster && *cluster;
    if (slurm && *slurm) snprintf(out, n, "slurm:%s%s%s", named ? cluster : "", named ? ":" : "", slurm);
    else if (rerun && *rerun) snprintf(out, n, "mn_rerun:%s", rerun);
    else snprintf(out, n, "-");
    for (char *p = out; *p; ++p)   /* one word of the record */
        if (!isalnum((unsigned char)*p) && !strchr("._:-@", *p)) *p = '_';
}

/* A process of this host that still runs: a zombie (a killed rank that
 * mpiexec's daemon has not yet reaped) renews nothing. */
static int pid_alive(long pid)
{
    if (pid <= 0 || pid == (long)getpid() || (kill((pid_t)pid, 0) != 0 && errno != EPERM)) return 0;
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 1;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = 0;
    const char *end = strrchr(stat, ')');   /* "pid (comm) state ...": comm may hold spaces */
    return !(end && end[1] == ' ' && end[2] == 'Z');
}

/* Whether dir may be shared between hosts, where flock may be node-local
 * or a no-op: any but a local file system, where the flock decides. */
static int shared_fs(const char *dir)
{
    struct statfs s;
    if (statfs(dir, &s) != 0) return 1;
    switch ((unsigned long)s.f_type) {
    case 0xEF53:       /* ext2, ext3, ext4 */
    case 0x58465342:   /* xfs */
    case 0x9123683E:   /* btrfs */
    case 0x01021994:   /* tmpfs */
    case 0x794C7630:   /* overlayfs */
    case 0x2FC12FC1:   /* zfs */
        return 0;
    default:
        return 1;
    }
}

/* Rank 0: takes the folder, or says why not. */
static mn_status acquire(mn_comm *c, mn_lock *l, const char *dir, int lease_s)
{
    lock_rec *m = &l->mine;
    snprintf(l->dir, sizeof l->dir, "%s", dir);
    snprintf(l->path, sizeof l->path, "%s/%s", dir, LOCK_NAME);
    snprintf(m->host, sizeof m->host, "%s", c->host);
    m->pid = (long)getpid();
    m->lease = lease_s;
    job_identity(m->job, sizeof m->job);
    uint64_t t = (uint64_t)(mn_wall() * 1e6);
    m->run = mn_fnv1a(mn_fnv1a(MN_FNV_SEED, c->host, strlen(c->host)), &t, sizeof t);
    m->token = mn_fnv1a(m->run, &m->pid, sizeof m->pid);
    l->fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (l->fd < 0) {
        mn_error(c, "cannot open the lock file %s: %s", l->path, strerror(errno));
        return MN_ERR_USER;
    }
    int busy = 0;
    if (flock(l->fd, LOCK_EX | LOCK_NB) == 0) l->flocked = 1;
    else if (errno == EWOULDBLOCK) busy = 1;
    else printf("darknet-mn: flock on %s failed (%s): its lease alone guards the folder\n", l->path, strerror(errno));
    lock_rec r;
    int st = read_rec(l->path, &r, 1);
    /* Half written, or a holder between its create and its first record. */
    if (st == REC_BAD || st == REC_ERR || (st == REC_EMPTY && busy)) st = read_rec(l->path, &r, 20);
    double age = mn_wall() - r.renewed;
    if (age < 0) age = 0;   /* the hosts' clocks a little apart */
    char who[200];
    describe(&r, who, sizeof who);
    const char *held = busy ? "; its flock is still held" : "";
    int taken = 0;   /* another job's record overwritten: a second taker must not win too */
    l->rerun = st == REC_OK && strcmp(m->job, "-") && !strcmp(r.job, m->job);
    l->last_run = st == REC_OK ? r.run : 0;
    if (st == REC_OK && strcmp(r.state, "released")) {
        if (l->rerun) {
            printf("darknet-mn: taking over the lock of backup folder %s from an earlier run of this job (%s; its "
                   "lease renewed %.1f s ago)%s\n", dir, who, age, held);
            taken = 1;
        } else if (l->flocked && !strcmp(r.host, c->host) && !pid_alive(r.pid)) {
            /* Its process ended on this host without releasing it: free. */
        } else if (age > r.lease) {
            char from[100] = "a job";
            if (strcmp(r.job, "-")) snprintf(from, sizeof from, "job %s", r.job);
            printf("darknet-mn: taking over the lock of backup folder %s from %s (host %s, pid %ld): its lease was "
                   "renewed %.1f s ago, stale after %d s%s\n", dir, from, r.host, r.pid, age, r.lease, held);
            taken = 1;
        } else {
            mn_error(c, "backup folder %s is in use by another job (%s; its lease renewed %.1f s ago, stale after %d "
                     "s); lock file %s (if that job is gone, rerun once its lease is stale)", dir, who, age, r.lease,
                     l->path);
            return MN_ERR_REFUSED;
        }
    } else if (st != REC_OK && busy) {
        if (st == REC_OLD)
            mn_error(c, "backup folder %s is in use by another job (host %s, pid %ld, of a darknet-mn without leases); "
                     "lock file %s", dir, r.host, r.pid, l->path);
        else
            mn_error(c, "backup folder %s is in use by another job (its flock is held, and the lock file holds no "
                     "record of it); lock file %s", dir, l->path);
        return MN_ERR_REFUSED;
    }
    fflush(stdout);
    if (!write_rec(l, "held")) {
        mn_error(c, "cannot write the lock file %s: %s", l->path, strerror(errno));
        return MN_ERR_USER;
    }
    /* Two jobs that both found the lock stale or free, where flock may say
     * yes to both, both wrote: the record still there after a while wins,
     * before either writes into the folder. */
    if (taken || !l->flocked || shared_fs(dir)) {
        sleep_s(lease_s / 4.0 < 1 ? lease_s / 4.0 : 1);
        if (!verify(l)) {
            describe(&l->other, who, sizeof who);
            mn_error(c, "backup folder %s was taken at the same moment by another job (%s); lock file %s", dir, who,
                     l->path);
            return MN_ERR_REFUSED;
        }
    }
    return MN_OK;
}

static void lock_free(mn_lock *l)
{
    if (l->fd >= 0) close(l->fd);   /* drops the flock; the file stays for the next job */
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

mn_status mn_backup_lock(mn_comm *c, const char *dir, int lease_s, mn_lock **lock)
{
    *lock = NULL;
    mn_status s = MN_OK;
    mn_lock *l = NULL;
    if (c->rank == 0) {
        l = calloc(1, sizeof *l);
        if (!l) {
            mn_error(c, "no memory for the backup folder's lock");
            s = MN_ERR_NOMEM;
        } else {
            l->c = c;
            l->fd = -1;
            l->interval_ms = lease_s * 1000LL / 6 < 100 ? 100 : lease_s * 1000LL / 6;
            pthread_condattr_t ca;
            pthread_condattr_init(&ca);
            pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
            pthread_cond_init(&l->cv, &ca);
            pthread_condattr_destroy(&ca);
            pthread_mutex_init(&l->mu, NULL);
            s = acquire(c, l, dir, lease_s);
            if (s == MN_OK && pthread_create(&l->thread, NULL, renew_main, l) != 0) {
                mn_error(c, "cannot start the thread that renews the lease of %s", l->path);
                s = MN_ERR_NOMEM;
            }
            l->started = s == MN_OK;
            if (s != MN_OK) {
                if (s != MN_ERR_REFUSED) write_rec(l, "released");
                lock_free(l);
                l = NULL;
            }
        }
    }
    s = mn_agree(c, s);
    if (s != MN_OK) mn_backup_unlock(l);
    else *lock = l;
    return s;
}

void mn_backup_unlock(mn_lock *l)
{
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->quit = 1;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (l->started) pthread_join(l->thread, NULL);
    if (!l->lost && verify(l)) write_rec(l, "released");
    lock_free(l);
}

mn_status mn_backup_check(mn_comm *c, mn_lock *l)
{
    mn_status s = MN_OK;
    if (c->rank == 0 && l) {
        pthread_mutex_lock(&l->mu);
        if (!l->lost) verify(l);
        if (l->lost) {
            if (!l->told) {
                char who[200] = "its lock file no longer holds this job's record";
                if (l->other.host[0]) describe(&l->other, who, sizeof who);
                mn_error(c, "lost the lock of backup folder %s to another job (%s), which took it over while this "
                         "job's lease was stale: this job was stopped, or cut off from the folder, for longer than "
                         "lock_lease=%d s; stopping without writing into the folder", l->dir, who, l->mine.lease);
            }
            l->told = 1;
            s = MN_ERR_REFUSED;
        }
        pthread_mutex_unlock(&l->mu);
    }
    return mn_agree(c, s);
}

int mn_backup_lost(mn_lock *l)
{
    return l && __atomic_load_n(&l->lost, __ATOMIC_RELAXED);
}

int mn_backup_mine(mn_lock *l)
{
    if (!l) return 1;
    pthread_mutex_lock(&l->mu);
    if (!l->lost) verify(l);
    int mine = !l->lost;
    pthread_mutex_unlock(&l->mu);
    return mine;
}

const char *mn_backup_rerun_of(const mn_lock *l)
{
    return l && l->rerun ? l->mine.job : NULL;
}

uint64_t mn_backup_last_run(const mn_lock *l)
{
    return l ? l->last_run : 0;
}

void mn_backup_set_run(mn_lock *l, uint64_t run)
{
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->mine.run = run;
    if (!l->lost) renew(l);   /* at once: pruning reads the run from the file */
    pthread_mutex_unlock(&l->mu);
}
