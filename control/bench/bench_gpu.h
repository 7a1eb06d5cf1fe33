/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef BENCH_GPU_H
#define BENCH_GPU_H

/*
 * rnotify-bench --gpu (bench_gpu.c): buffers in GPU memory, through the
 * CUDA driver API loaded at run time (dlopen("libcuda.so.1")): no build
 * dependency on CUDA. Errors come back as one line of text in err.
 */

#include <stddef.h>
#include <stdint.h>

struct rn_bench_gpu;

/* Open GPU ordinal (its primary context), checking that it can export
 * dma-bufs. Returns 0, or -1 with why in err (no driver, the CUDA stub
 * library, no such GPU, no dma-buf support). */
int rn_bench_gpu_open(int ordinal, struct rn_bench_gpu **out, char *err,
		      size_t err_len);
/* "GPU N: NAME" */
const char *rn_bench_gpu_name(const struct rn_bench_gpu *g);
void rn_bench_gpu_close(struct rn_bench_gpu *g);

/* length bytes of GPU memory (cuMemAlloc), exported as a dma-buf whose
 * offset 0 is *addr: *fd, for rn_transfer_reg_dmabuf(). 0 or -1 (err). */
int rn_bench_gpu_alloc(struct rn_bench_gpu *g, size_t length, uint64_t *addr,
		       int *fd, char *err, size_t err_len);
/* Close fd and free the memory at addr. */
void rn_bench_gpu_free(struct rn_bench_gpu *g, uint64_t addr, int fd);
/* Set length bytes at addr to byte, and wait for it. 0 or -EIO. */
int rn_bench_gpu_fill(struct rn_bench_gpu *g, uint64_t addr, uint8_t byte,
		      size_t length);
/* Copy length bytes at addr to dst (host). 0 or -EIO. */
int rn_bench_gpu_read(struct rn_bench_gpu *g, void *dst, uint64_t addr,
		      size_t length);

#endif /* BENCH_GPU_H */
