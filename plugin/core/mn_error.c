/* Errors: one line naming the rank and host, on the terminal from every rank;
 * and the one fatal path. */
#include <stdarg.h>
#include <stdio.h>
#include "core/mn_core.h"
#include "core/mn_fault.h"
#include "core/mn_output.h"

/* One error line: PREFIX and the formatted message. */
static void report(const mn_comm *c, const char *prefix, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    FILE *to[2] = {mn_output_errors(), mn_output_error_copy()};
    for (int i = 0; i < 2 && to[i]; ++i) {
        if (c) fprintf(to[i], "darknet-mn: rank %d (%s): %s%s\n", c->rank, c->host, prefix, msg);
        else fprintf(to[i], "darknet-mn: %s%s\n", prefix, msg);
        fflush(to[i]);
    }
}

void mn_error(const mn_comm *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(c, "", fmt, ap);
    va_end(ap);
}

void mn_abort(const mn_comm *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(c, "fatal: ", fmt, ap);
    va_end(ap);
    mn_die(MN_EXIT_RERUN);
}
