/* Errors: one line naming the rank and host, on the terminal from every rank;
 * and the one fatal path. */
#include <stdarg.h>
#include <stdio.h>
#include "mn_core.h"

void mn_error(const mn_comm *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    FILE *f = mn_output_errors();
    if (c) fprintf(f, "darknet-mn: rank %d (%s): %s\n", c->rank, c->host, msg);
    else fprintf(f, "darknet-mn: %s\n", msg);
    fflush(f);
}

void mn_abort(const mn_comm *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mn_error(c, "fatal: %s", msg);
    mn_die(1);
}
