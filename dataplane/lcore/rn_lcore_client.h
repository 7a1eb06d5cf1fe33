/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_LCORE_CLIENT_H
#define RN_LCORE_CLIENT_H

/*
 * An attached client process, as the daemon holds it. The control thread
 * (control/client) makes it at ATTACH, hands it to every lcore with
 * RN_LCORE_CMD_CLIENT_ADD, and frees it only after every lcore answered
 * RN_LCORE_CMD_CLIENT_REMOVE with RN_LCORE_EVENT_CLIENT_REMOVED. Between
 * those, each lcore polls its own submit ring of the region and delivers
 * to its own deliver ring (rn_client_shm.h); nothing else is written by
 * two threads.
 */

#include <stdint.h>
#include <unistd.h>

#include "rn_client.h"
#include "rn_client_shm.h"

/* Clients an lcore serves at most: [client] max_clients is no more. */
#define RN_LCORE_MAX_CLIENTS 64

struct rn_client_link {
	struct rn_client_region *region;  /* the daemon's mapping */
	uint64_t region_size;
	uint32_t client_id;
	int efd;                  /* the client's eventfd (daemon -> client) */
	uint8_t agent_len;
	char agent[RN_CLIENT_AGENT_MAX];
};

/*
 * A client's region, for RN_LCORE_CMD_CLIENT_REG and _DEREG. The control
 * thread fills it, maps host memory, and sends the same op to every lcore;
 * each lcore registers it with its own device (rn_nic_mr_reg_iova() at
 * addr, known by iova; or rn_nic_mr_reg_dmabuf() of dmabuf_fd), writes its
 * rkey[worker index], keeps the registration in its own table of the
 * client's regions (batches find their local triples there), and answers
 * with an event. The op lives until every lcore answered DEREGISTERED, or
 * CLIENT_REMOVED for its client.
 */
struct rn_client_reg_op {
	const struct rn_client_link *link;   /* whose region */
	uint32_t region;          /* 0 .. RN_CLIENT_MAX_REGIONS - 1 */
	uint32_t access;          /* enum rn_access */
	uint64_t iova;            /* the client's address of its first byte */
	uint64_t length;
	void *addr;               /* the daemon's mapping; NULL: a dma-buf */
	int dmabuf_fd;            /* addr NULL: the dma-buf, at dmabuf_offset */
	uint64_t dmabuf_offset;
	uint32_t rkey[RN_CLIENT_MAX_LCORES];   /* by worker index */
};

struct rn_lcore;

/* Before the lcores run: lc is worker index (0 to n_lcores - 1 of every
 * region: its rings are submit[index] and deliver[index]), and sleeping
 * is its word in the status page that says it may sleep (a client reads
 * it to know when to write lc's wake eventfd). Without this call an lcore
 * is worker 0 and raises no word. */
void rn_lcore_set_client_sleeping(struct rn_lcore *lc, uint32_t index,
				  uint32_t *sleeping);

/* Wake the client of link when it armed its eventfd (rn_client_shm.h). Any
 * thread, after it enqueued for the client. */
static inline void
rn_client_link_wake(const struct rn_client_link *link)
{
	/* Pairs with the client's store of armed before its last look at
	 * the rings: either it sees our entry, or we see it armed. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&link->region->armed, __ATOMIC_RELAXED) != 0 &&
	    __atomic_exchange_n(&link->region->armed, 0,
				__ATOMIC_SEQ_CST) != 0) {
		uint64_t one = 1;
		ssize_t n = write(link->efd, &one, sizeof(one));

		(void)n;
	}
}

#endif /* RN_LCORE_CLIENT_H */
