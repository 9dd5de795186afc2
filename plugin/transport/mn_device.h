/* CUDA's runtime for the layers above transport, without its header: each
 * call's status (0: success) goes to mn_device_ok or mn_device_must. */
#ifndef MN_DEVICE_H
#define MN_DEVICE_H

#include <stddef.h>
#include <stdint.h>
#include "core/mn_core.h"

#ifdef GPU
/* 0: failed, said, cleared. */
int mn_device_ok(const mn_comm *c, int e, const char *what);
/* A failure ends the job. */
void mn_device_must(const mn_comm *c, int e, const char *what);
void mn_device_clear(void);

int mn_device_alloc(void **p, size_t bytes);
int mn_device_free(void *p);
/* Page-locked host memory. */
int mn_device_alloc_host(void **p, size_t bytes);
int mn_device_free_host(void *p);
int mn_device_pin(void *p, size_t bytes);
int mn_device_unpin(void *p);
int mn_device_get(int *device);
int mn_device_set(int device);

typedef enum { MN_TO_HOST, MN_TO_DEVICE, MN_ON_DEVICE } mn_copy_way;
int mn_device_copy(void *to, const void *from, size_t bytes, mn_copy_way way, void *stream);
int mn_device_zero(void *p, size_t bytes, void *stream);
int mn_device_wait(void *stream);

int mn_device_event_new(void **e, int timing);
int mn_device_event_free(void *e);
int mn_device_event_record(void *e, void *stream);
int mn_device_event_wait(void *e);
int mn_device_event_ms(float *ms, void *e0, void *e1);

/* Device arrays' addresses and packed offsets (mn_pack_offsets), for the kernels. */
typedef struct {
    float **ptrs;
    size_t *offs;
    int n;
    size_t total;
} mn_pack_tables;
mn_status mn_pack_tables_make(const mn_comm *c, float *const *dev, const size_t *lens, int n, void *stream,
                             mn_pack_tables *t);
void mn_pack_tables_free(const mn_comm *c, mn_pack_tables *t);
#endif

/* Kernels (mn_kernels.cu), returning the launch's status: pack [lo, hi) of
 * the packed order; *_nonfinite flag Inf or NaN; compensate, local and
 * predict: mn_dbuf.h's and mn_dbuf_predict.h's arithmetic, bit for bit. */
int mn_gpu_pack_halves(uint16_t *h, float *const *ptrs, const size_t *offs, int n, size_t total, float scale, void *stream);
int mn_gpu_unpack_halves(float *const *ptrs, const uint16_t *h, const size_t *offs, int n, size_t total, void *stream);
int mn_gpu_add(float *y, const float *x, size_t n, void *stream);
int mn_gpu_halves_nonfinite(const uint16_t *h, size_t n, int *dev_flag, void *stream);
int mn_gpu_arrays_nonfinite(float *const *ptrs, const size_t *offs, int n, size_t total, int *dev_flag, void *stream);
int mn_gpu_pack(float *packed, float *const *ptrs, const size_t *offs, int n, size_t lo, size_t hi, void *stream);
int mn_gpu_unpack(float *const *ptrs, const float *packed, const size_t *offs, int n, size_t total, void *stream);
int mn_gpu_halves(uint16_t *h, float *x, size_t n, float scale, int to, void *stream);
int mn_gpu_floats_nonfinite(const float *x, size_t n, int *dev_flag, void *stream);
int mn_gpu_scale(float *x, size_t n, float s, void *stream);
int mn_gpu_compensate(float *u, const float *w, const float *eval, float *prev, float *v, size_t n, float lambda, int apply,
                      void *stream);
int mn_gpu_local(float *u, const float *g, float *own, size_t n, int had, void *stream);
int mn_gpu_predict(float *w, float *k0, size_t n, float k, void *stream);

#endif
