/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory the daemon can map: rn_client_alloc() makes a memfd (on 2 MiB
 * hugepages when the length is a multiple of them and the host has free
 * ones; else of whole 4 KiB pages), maps it shared here and remembers
 * (address, length, page size, fd), so that rn_client_reg() can pass that
 * fd for the pages of any range inside. Plain malloc()
 * memory has no fd the daemon could map: it is refused there (-EFAULT).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client_pvt.h"

#define HUGE_2M (2ull << 20)

#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004u
#endif
#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21u << 26)
#endif

/* A memfd of len bytes mapped shared: 0 with *fd and *addr, or -errno.
 * On hugetlbfs the pages are reserved at mmap(), so no SIGBUS later: a
 * host without free ones fails here, and the caller falls back. */
static int
memfd_map(size_t len, unsigned int flags, int *fd, void **addr)
{
	/* Sealable: the daemon seals it against shrinking at REG, and
	 * refuses memory it cannot seal. */
	int f = memfd_create("rnotify",
			     MFD_CLOEXEC | MFD_ALLOW_SEALING | flags);
	int rc;
	void *p;

	if (f < 0)
		return -errno;
	if (ftruncate(f, (off_t)len) != 0) {
		rc = -errno;
		goto close_fd;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto close_fd;
	}
	*fd = f;
	*addr = p;
	return 0;

close_fd:
	close(f);
	return rc;
}

int
rn_client_alloc(struct rn_client *c, size_t length, void **out)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct rn_client_alloc *a;
	int rc = -1;

	if (length == 0 || out == NULL || length > (size_t)INT64_MAX - page)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
	if (length % HUGE_2M == 0) {
		a->unit = HUGE_2M;
		a->len = length;
		rc = memfd_map(length, MFD_HUGETLB | MFD_HUGE_2MB, &a->fd,
			       (void **)&a->base);
	}
	if (rc != 0) {
		/* Whole pages: the daemon maps what REG names by them. */
		a->unit = page;
		a->len = (length + page - 1) / page * page;
		rc = memfd_map(a->len, 0, &a->fd, (void **)&a->base);
	}
	if (rc != 0) {
		free(a);
		/* EMFILE and ENFILE too: out of what it takes. */
		return -ENOMEM;
	}
	/* A new memfd reads as zeroes, on hugepages too. */
	a->next = c->allocs;
	c->allocs = a;
	*out = a->base;
	return 0;
}

int
rn_client_free(struct rn_client *c, void *addr)
{
	struct rn_client_alloc **p = &c->allocs;

	for (; *p != NULL; p = &(*p)->next) {
		struct rn_client_alloc *a = *p;

		if (a->base != addr)
			continue;
		if (a->users != 0)
			return -EBUSY;
		*p = a->next;
		munmap(a->base, a->len);
		close(a->fd);
		free(a);
		return 0;
	}
	return -EINVAL;
}

struct rn_client_alloc *
rn_client_alloc_find(struct rn_client *c, uint64_t addr, uint64_t len)
{
	for (struct rn_client_alloc *a = c->allocs; a != NULL; a = a->next) {
		uint64_t base = (uintptr_t)a->base;

		if (addr >= base && addr - base < a->len &&
		    len <= a->len - (addr - base))
			return a;
	}
	return NULL;
}

void
rn_client_alloc_free_all(struct rn_client *c)
{
	while (c->allocs != NULL) {
		struct rn_client_alloc *a = c->allocs;

		c->allocs = a->next;
		munmap(a->base, a->len);
		close(a->fd);
		free(a);
	}
}
