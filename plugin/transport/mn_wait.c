/* The wait with a deadline (mn_wait.h). */
#include "transport/mn_wait.h"

/* With no timeout, errors are still polled for. */
mn_poll mn_wait(const mn_waiter *w, double timeout)
{
    double start = w->now(w->arg);
    for (;;) {
        mn_poll p = w->poll(w->arg);
        if (p == MN_POLL_DONE) return p;
        double waited = w->now(w->arg) - start;
        if (p == MN_POLL_PENDING && timeout > 0 && waited > timeout) p = MN_POLL_TIMEOUT;
        if (p != MN_POLL_PENDING) {   /* an error, or out of time: nothing may go on using it */
            w->abort(w->arg);
            return p == MN_POLL_TIMEOUT ? p : MN_POLL_ERROR;
        }
        w->pause(w->arg, waited);
    }
}
