/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GPU memory for rnotify-bench --gpu: the CUDA driver API, loaded with
 * dlopen("libcuda.so.1") when asked for, so that building needs no CUDA
 * and hosts without a GPU run the rest. Each buffer is cuMemAlloc'd and
 * exported as a dma-buf (cuMemGetHandleForAddressRange), which the
 * transfer engine registers with the NIC (rn_transfer_reg_dmabuf():
 * ibv_reg_dmabuf_mr on mlx5), known by its device address.
 *
 * The stub library of the CUDA toolkit (lib64/stubs/libcuda.so) is not a
 * driver: its cuInit fails (CUDA_ERROR_STUB_LIBRARY), which is reported
 * as such.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench_gpu.h"

/*
 * The few declarations used, as CUDA 13.0's cuda.h has them (types,
 * values, prototypes). Versioned entry points are looked up by the names
 * cuda.h #defines the plain ones to (cuMemAlloc is cuMemAlloc_v2: the
 * unsuffixed symbol is the 32-bit legacy one).
 */
typedef int CUresult;                        /* enum cudaError_enum */
typedef int CUdevice;                        /* CUdevice_v1 */
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;      /* CUdeviceptr_v2 */
#define CUDA_SUCCESS 0
#define CUDA_ERROR_STUB_LIBRARY 34
#define CUDA_ERROR_NO_DEVICE 100
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 0x1

struct cuda {
	CUresult (*Init)(unsigned int flags);
	CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
	CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
	CUresult (*DeviceGetAttribute)(int *v, int attrib, CUdevice dev);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice dev);     /* _v2 */
	CUresult (*CtxSetCurrent)(CUcontext ctx);
	CUresult (*CtxSynchronize)(void);
	CUresult (*MemAlloc)(CUdeviceptr *dptr, size_t size);  /* _v2 */
	CUresult (*MemFree)(CUdeviceptr dptr);                 /* _v2 */
	CUresult (*MemsetD8)(CUdeviceptr dst, unsigned char uc,
			     size_t n);                        /* _v2 */
	CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src,
			       size_t n);                      /* _v2 */
	CUresult (*MemGetHandleForAddressRange)(void *handle, CUdeviceptr dptr,
						size_t size, int type,
						unsigned long long flags);
	CUresult (*GetErrorString)(CUresult error, const char **str);
	CUresult (*GetErrorName)(CUresult error, const char **str);
};

struct rn_bench_gpu {
	void *lib;
	struct cuda cu;
	CUdevice dev;
	CUcontext ctx;
	char name[192];
};

/* GPU allocations are made in 2 MiB pages; dma-buf exports want whole
 * host pages: round to both. */
#define GPU_ALIGN (2u << 20)

static void
say(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, len, "--gpu: ");

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < len)
		vsnprintf(err + n, len - (size_t)n, fmt, ap);
	va_end(ap);
}

/* "CUDA_ERROR_X (text)" of rc, into buf. */
static const char *
cu_text(const struct rn_bench_gpu *g, CUresult rc, char *buf, size_t len)
{
	const char *name = NULL, *text = NULL;

	if (g->cu.GetErrorName == NULL ||
	    g->cu.GetErrorName(rc, &name) != CUDA_SUCCESS)
		name = NULL;
	if (g->cu.GetErrorString == NULL ||
	    g->cu.GetErrorString(rc, &text) != CUDA_SUCCESS)
		text = NULL;
	if (name == NULL && rc == CUDA_ERROR_STUB_LIBRARY)
		name = "CUDA_ERROR_STUB_LIBRARY";   /* the stub names nothing */
	if (text == NULL)
		text = "no text";
	if (name != NULL)
		snprintf(buf, len, "%s (%s)", name, text);
	else
		snprintf(buf, len, "CUresult %d (%s)", rc, text);
	return buf;
}

static int
load(struct rn_bench_gpu *g, char *err, size_t len)
{
	static const struct { const char *sym; size_t off; } syms[] = {
#define S(field, sym) { sym, offsetof(struct cuda, field) }
		S(Init, "cuInit"),
		S(DeviceGet, "cuDeviceGet"),
		S(DeviceGetName, "cuDeviceGetName"),
		S(DeviceGetAttribute, "cuDeviceGetAttribute"),
		S(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
		S(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
		S(CtxSetCurrent, "cuCtxSetCurrent"),
		S(CtxSynchronize, "cuCtxSynchronize"),
		S(MemAlloc, "cuMemAlloc_v2"),
		S(MemFree, "cuMemFree_v2"),
		S(MemsetD8, "cuMemsetD8_v2"),
		S(MemcpyDtoH, "cuMemcpyDtoH_v2"),
		S(MemGetHandleForAddressRange, "cuMemGetHandleForAddressRange"),
		S(GetErrorString, "cuGetErrorString"),
		S(GetErrorName, "cuGetErrorName"),
#undef S
	};

	g->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (g->lib == NULL) {
		say(err, len, "no CUDA driver on this host: %s", dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *f = dlsym(g->lib, syms[i].sym);

		if (f == NULL) {
			/* cuMemGetHandleForAddressRange came with 11.7. */
			say(err, len, "libcuda.so.1 has no %s: a CUDA driver "
			    "of 11.7 or later is needed", syms[i].sym);
			return -1;
		}
		*(void **)((char *)&g->cu + syms[i].off) = f;
	}
	return 0;
}

int
rn_bench_gpu_open(int ordinal, struct rn_bench_gpu **out, char *err,
		  size_t err_len)
{
	struct rn_bench_gpu *g = calloc(1, sizeof(*g));
	char text[160];
	int dmabuf = 0;
	CUresult rc;

	if (g == NULL) {
		say(err, err_len, "out of memory");
		return -1;
	}
	if (load(g, err, err_len) != 0)
		goto fail;
	rc = g->cu.Init(0);
	if (rc != CUDA_SUCCESS) {
		say(err, err_len, "cuInit: %s: %s", cu_text(g, rc, text,
							    sizeof(text)),
		    rc == CUDA_ERROR_STUB_LIBRARY ?
		    "libcuda.so.1 is the CUDA toolkit's stub, not a driver" :
		    rc == CUDA_ERROR_NO_DEVICE ? "no GPU on this host" :
		    "no usable GPU driver");
		goto fail;
	}
	rc = g->cu.DeviceGet(&g->dev, ordinal);
	if (rc != CUDA_SUCCESS) {
		say(err, err_len, "no GPU %d: %s", ordinal,
		    cu_text(g, rc, text, sizeof(text)));
		goto fail;
	}
	if (g->cu.DeviceGetName(text, sizeof(text), g->dev) != CUDA_SUCCESS)
		snprintf(text, sizeof(text), "?");
	snprintf(g->name, sizeof(g->name), "GPU %d: %s", ordinal, text);
	rc = g->cu.DeviceGetAttribute(&dmabuf,
				      CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
				      g->dev);
	if (rc != CUDA_SUCCESS || dmabuf == 0) {
		say(err, err_len, "%s cannot export dma-bufs "
		    "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0): it needs "
		    "NVIDIA's open kernel modules and Linux 5.12 or later",
		    g->name);
		goto fail;
	}
	rc = g->cu.DevicePrimaryCtxRetain(&g->ctx, g->dev);
	if (rc != CUDA_SUCCESS) {
		say(err, err_len, "%s: cuDevicePrimaryCtxRetain: %s", g->name,
		    cu_text(g, rc, text, sizeof(text)));
		goto fail;
	}
	*out = g;
	return 0;
fail:
	if (g->lib != NULL)
		dlclose(g->lib);
	free(g);
	return -1;
}

const char *
rn_bench_gpu_name(const struct rn_bench_gpu *g)
{
	return g->name;
}

void
rn_bench_gpu_close(struct rn_bench_gpu *g)
{
	if (g == NULL)
		return;
	g->cu.DevicePrimaryCtxRelease(g->dev);
	/* libcuda stays loaded: it does not support being unloaded. */
	free(g);
}

int
rn_bench_gpu_alloc(struct rn_bench_gpu *g, size_t length, uint64_t *addr,
		   int *fd, char *err, size_t err_len)
{
	size_t size = (length + GPU_ALIGN - 1) & ~(size_t)(GPU_ALIGN - 1);
	CUdeviceptr p = 0;
	char text[160];
	int handle = -1;
	CUresult rc;

	/* Calls go to the current context, which is per thread. */
	rc = g->cu.CtxSetCurrent(g->ctx);
	if (rc == CUDA_SUCCESS)
		rc = g->cu.MemAlloc(&p, size);
	if (rc != CUDA_SUCCESS) {
		say(err, err_len, "%s: cuMemAlloc of %zu bytes: %s", g->name,
		    size, cu_text(g, rc, text, sizeof(text)));
		return -1;
	}
	rc = g->cu.MemGetHandleForAddressRange(&handle, p, size,
					       CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
					       0);
	if (rc != CUDA_SUCCESS || handle < 0) {
		say(err, err_len, "%s: cuMemGetHandleForAddressRange "
		    "(dma-buf): %s", g->name,
		    cu_text(g, rc, text, sizeof(text)));
		g->cu.MemFree(p);
		return -1;
	}
	*addr = p;
	*fd = handle;
	return 0;
}

void
rn_bench_gpu_free(struct rn_bench_gpu *g, uint64_t addr, int fd)
{
	if (fd >= 0)
		close(fd);
	if (addr != 0 && g->cu.CtxSetCurrent(g->ctx) == CUDA_SUCCESS)
		g->cu.MemFree(addr);
}

int
rn_bench_gpu_fill(struct rn_bench_gpu *g, uint64_t addr, uint8_t byte,
		  size_t length)
{
	/* cuMemsetD8 on device memory may return before it is done. */
	if (g->cu.CtxSetCurrent(g->ctx) != CUDA_SUCCESS ||
	    g->cu.MemsetD8(addr, byte, length) != CUDA_SUCCESS ||
	    g->cu.CtxSynchronize() != CUDA_SUCCESS)
		return -EIO;
	return 0;
}

int
rn_bench_gpu_read(struct rn_bench_gpu *g, void *dst, uint64_t addr,
		  size_t length)
{
	if (g->cu.CtxSetCurrent(g->ctx) != CUDA_SUCCESS ||
	    g->cu.MemcpyDtoH(dst, addr, length) != CUDA_SUCCESS)
		return -EIO;
	return 0;
}
