/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_API_PVT_H
#define RN_NOTIFY_API_PVT_H

/*
 * The application side's own state (notify_api.c) and the one way its
 * requests reach an lcore, which the diagnostic entry points
 * (notify_diag.c) share with the sends.
 */

#include <pthread.h>
#include <rte_ring.h>
#include <stdbool.h>

#include "rn_notify_engine.h"

struct rn_notify_order;

struct rn_notify {
	struct rn_plane *plane;
	struct rn_lcore **workers;
	unsigned int n_workers;
	struct rte_ring *completions;   /* MP/SC */
	struct rte_ring *tcp_deliveries;/* control -> app, SP/SC */
	struct rte_ring *uses;          /* app -> control: connect the
					 * endpoint of this index */
	pthread_mutex_t poll_lock;
	struct rn_notify_delivery held[RN_NOTIFY_POLL_MAX];
	unsigned int n_held;
	struct rn_notify_order *order;  /* across native and TCP; poll_lock */
	unsigned int first_ring;        /* where the next poll starts; poll_lock */
};

/*
 * Hand req (its out, count and flags set; or, for a diagnostic request,
 * its fault) to the lcore that owns peer's endpoint and wait for the
 * answer: how many went (1 for a fault made), or rn_notify_send()'s errors
 * of finding the peer (-ENOENT, -EAGAIN, -ENOTCONN) and the lcore's.
 */
int rn_notify_submit(struct rn_notify *nf, const char *peer,
		     struct rn_notify_request *req);

#endif /* RN_NOTIFY_API_PVT_H */
