/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_LCORE_INTERNAL_H
#define RN_LCORE_INTERNAL_H

#include <rte_log.h>

#include "rn_lcore.h"
#include "rn_lcore_ep.h"
#include "rn_wr.h"

extern int rn_lcore_logtype;
#define RN_LCORE_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, rn_lcore_logtype, "rnotify.lcore: " fmt "\n", \
		##__VA_ARGS__)

/* A single-writer counter that other threads read with relaxed loads. */
static inline void
rn_lcore_count(uint64_t *counter, uint64_t n)
{
	__atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED);
}

/* Post ev to the control thread; waits for room rather than drop it. */
void rn_lcore_post_event_wait(struct rn_lcore *lc, struct rn_lcore_event ev);

/* Endpoint commands, completions and teardown (lcore_endpoint.c). */
void rn_lcore_ep_command(struct rn_lcore *lc, const struct rn_lcore_cmd *cmd);
void rn_lcore_ep_completion(struct rn_lcore *lc, const struct rn_wc *wc);
void rn_lcore_ep_reap(struct rn_lcore *lc);
/* At exit: destroy every endpoint still open, without events. */
void rn_lcore_ep_free_all(struct rn_lcore *lc);

/*
 * Adaptive idle (owning lcore only): block on the lcore's epoll set until
 * the control thread or a wire wakes it, or idle_sleep_us pass.
 */
void rn_lcore_sleep(struct rn_lcore *lc);

#endif /* RN_LCORE_INTERNAL_H */
