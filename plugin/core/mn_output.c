/* Only rank 0 reports: Darknet prints from its layers and parser on every
 * rank. Other ranks' output leaves the terminal; darknet-mn's errors and
 * Darknet's last words before a crash still reach it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "core/mn_output.h"

/* A fatal-signal handler can reach only static storage: set once, before
 * any other thread exists. */
static int terminal_fd = -1;     /* the terminal's stderr */
static int captured_fd = -1;     /* where stderr writes: the buffer or a log */
static int captured_is_log;      /* a file the user keeps, never trimmed */
static FILE *terminal;
static int log_failing;          /* the log refused its last write */
static char log_path[4096];

/* Above this the buffer starts over: a crash replays only its tail. */
#define MN_CAPTURE_MAX (1 << 20)
#define MN_REPLAY_BYTES 2048

/* Other ranks' stdout goes to /dev/null and their stderr to a buffer a
 * crash replays, or both to <dir>/rank-<N>.log with MN_RANK_LOG=<dir>. */
int mn_output_rank0_only(int rank, const char *log0, char *why, size_t cap)
{
    if ((rank == 0 && !log0) || terminal_fd >= 0) return 0;
    const char *dir = getenv("MN_RANK_LOG");
    char path[4096] = "";
    int out, err;
    if (rank == 0) snprintf(path, sizeof path, "%s", log0);   /* -log FILE: hank-ai's flag */
    else if (dir && *dir) snprintf(path, sizeof path, "%s/rank-%d.log", dir, rank);
    snprintf(log_path, sizeof log_path, "%s", path);
    if (path[0]) {   /* appended, so a requeued job's runs all stay */
        out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (out < 0) {
            snprintf(why, cap, "%s: cannot write %s: %s", rank == 0 ? "-log" : "MN_RANK_LOG", path, strerror(errno));
            return -1;
        }
        err = dup(out);
        captured_is_log = 1;
    } else {
        out = open("/dev/null", O_WRONLY | O_CLOEXEC);
        err = memfd_create("darknet-mn-stderr", MFD_CLOEXEC);
    }
    int saved = dup(2);
    if (out < 0 || err < 0 || saved < 0) {
        snprintf(why, cap, "cannot redirect rank %d's output: %s", rank, strerror(errno));
        if (out >= 0) close(out);
        if (err >= 0) close(err);
        if (saved >= 0) close(saved);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    close(out);
    terminal_fd = saved;
    captured_fd = err;
    terminal = fdopen(saved, "w");
    if (terminal) setvbuf(terminal, NULL, _IONBF, 0);
    return 0;
}

FILE *mn_output_errors(void) { return terminal ? terminal : stderr; }
FILE *mn_output_error_copy(void) { return terminal && captured_is_log ? stderr : NULL; }
int mn_output_error_fd(void) { return terminal_fd >= 0 ? terminal_fd : 2; }

void mn_output_trim(void)
{
    /* A log refusing writes (a full disk): said once, and again when it
     * takes them. */
    if (captured_is_log && terminal) {
        errno = 0;
        int bad = fflush(stdout) != 0 || ferror(stdout) || ferror(stderr);
        int err = errno;
        if (bad && !log_failing)
            fprintf(terminal, "darknet-mn: cannot write the log %s: %s; training goes on, its output lost until the "
                    "file takes writes again\n", log_path, strerror(err ? err : EIO));
        else if (!bad && log_failing)
            fprintf(terminal, "darknet-mn: the log %s takes writes again\n", log_path);
        log_failing = bad;
        clearerr(stdout);
        clearerr(stderr);
    }
    if (captured_fd < 0 || captured_is_log) return;
    if (lseek(captured_fd, 0, SEEK_CUR) > MN_CAPTURE_MAX) {
        if (ftruncate(captured_fd, 0) == 0) lseek(captured_fd, 0, SEEK_SET);
    }
}

void mn_output_replay(void)
{
    if (captured_fd < 0 || terminal_fd < 0) return;
    char buf[MN_REPLAY_BYTES];
    off_t end = lseek(captured_fd, 0, SEEK_END);
    off_t from = end > (off_t)sizeof buf ? end - (off_t)sizeof buf : 0;
    ssize_t n = end > 0 ? pread(captured_fd, buf, (size_t)(end - from), from) : 0;
    if (n <= 0) return;
    /* From the first whole line, unless the tail is one line. */
    ssize_t start = 0;
    if (from > 0) {
        while (start < n && buf[start] != '\n') ++start;
        start = start < n ? start + 1 : 0;
    }
    ssize_t r = write(terminal_fd, buf + start, (size_t)(n - start));
    if (r >= 0 && buf[n - 1] != '\n') r = write(terminal_fd, "\n", 1);
    (void)r;
}
