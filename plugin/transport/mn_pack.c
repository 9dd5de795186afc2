/* Arrays packed end to end (mn_pack.h). */
#include "transport/mn_pack.h"

size_t mn_pack_offsets(const size_t *lens, int n, size_t *offs)
{
    size_t off = 0;
    for (int k = 0; k < n; ++k) {
        offs[k] = off;
        off += lens[k];
    }
    offs[n] = off;
    return off;
}
