/* MN_GPU_PROFILE=1: two events on the base's stream around the averaging
 * hook, their time added up a step later (mn_observe.h). A failing event
 * call is said and the run goes on without the profile where it can. */
#ifdef GPU
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/observe/mn_observe.h"
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "transport/mn_device.h"

struct mn_profile {
    mn_comm *comm;
    void *ev[2];
    double ms;
    long steps;
    int pending;   /* the last pair is not yet read */
};

mn_profile *mn_profile_new(mn_comm *c)
{
    const char *v = getenv("MN_GPU_PROFILE");
    if (!v || strcmp(v, "1")) return NULL;
    mn_profile *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->comm = c;
    if (mn_device_ok(c, mn_device_event_new(&p->ev[0], 1), "cudaEventCreate") &&
        mn_device_ok(c, mn_device_event_new(&p->ev[1], 1), "cudaEventCreate"))
        return p;
    if (p->ev[0]) mn_device_ok(c, mn_device_event_free(p->ev[0]), "cudaEventDestroy");   /* both or none */
    free(p);
    return NULL;
}

void mn_profile_mark(mn_profile *p, int end)
{
    if (!p) return;
    if (!end && p->pending) {
        float ms = 0;
        mn_device_must(p->comm, mn_device_event_wait(p->ev[1]), "MN_GPU_PROFILE's event");
        mn_device_must(p->comm, mn_device_event_ms(&ms, p->ev[0], p->ev[1]), "MN_GPU_PROFILE's elapsed time");
        p->ms += ms;
        ++p->steps;
        p->pending = 0;
    }
    mn_device_must(p->comm, mn_device_event_record(p->ev[end ? 1 : 0], mn_base_stream()), "MN_GPU_PROFILE's event");
    p->pending = end;
}

void mn_profile_free(mn_profile *p, const char *route)
{
    if (!p) return;
    if (p->comm->rank == 0)
        printf("darknet-mn: MN_GPU_PROFILE: the averaging hook held the base's stream %.3f ms a step on average "
               "(%ld steps, rank 0, route %s)\n", p->steps ? p->ms / (double)p->steps : 0.0, p->steps, route);
    for (int i = 0; i < 2; ++i) mn_device_ok(p->comm, mn_device_event_free(p->ev[i]), "cudaEventDestroy");
    free(p);
}
#endif
