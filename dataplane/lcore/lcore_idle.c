/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Adaptive idle. A sleeping lcore cannot miss a command: the control thread
 * enqueues first, then writes the lcore's eventfd, which stays readable
 * (level-triggered) until the lcore reads it, so a command that lands between
 * the last empty poll and epoll_wait still ends the sleep at once.
 * Application threads write the eventfd only when the lcore says it sleeps
 * (a syscall per notification otherwise): the lcore raises `sleeping`, then
 * looks at its rings once more; the sender queues, then looks at `sleeping`.
 * Client processes do the same with the status page's word for this lcore
 * (rn_client_shm.h), which is raised and lowered with `sleeping`.
 *
 * How long a sleep lasts: idle_sleep_us, the bound on how late the
 * lcore's timers run (the sim's ACK timeouts and held-back frames, parked
 * EP_OPENs, frames held for a client, endpoints draining). An lcore that
 * has slept QUIET_AFTER_US in a row without anything to do sleeps
 * QUIET_SLEEP_US (or idle_sleep_us, when longer) instead, if nothing timed
 * can be pending and the NIC's descriptors end a sleep (the sim's; an
 * mlx5 CQ does not, so there idle_sleep_us stays the bound on how late a
 * completion is seen). Whatever arrives by a descriptor ends a sleep at
 * once, and the next one is short again. An idle daemon's worker
 * otherwise wakes 1,000 times a second, about 3% of a CPU on a VM.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>

#include "lcore_pvt.h"
#include "rn_lcore_xfer.h"

#define SLEEP_MAX_EVENTS 16
#define QUIET_AFTER_US 1000000u
#define QUIET_SLEEP_US 10000u

/* Anything queued for this lcore by another thread? */
static bool
has_work(const struct rn_lcore *lc)
{
	return !rte_ring_empty(lc->cmd_ring) ||
	       !rte_ring_empty(lc->notify_requests) ||
	       !rte_ring_empty(lc->notify_releases) ||
	       rn_lcore_client_pending(lc) ||
	       rn_lcore_xfer_queued(lc);
}

void
rn_lcore_wake(struct rn_lcore *lc)
{
	if (lc->idle != RN_IDLE_ADAPTIVE)
		return;
	/* Pairs with the store in rn_lcore_sleep(): either the lcore sees our
	 * work before sleeping, or we see it sleeping and wake it. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&lc->sleeping, __ATOMIC_RELAXED))
		eventfd_write(lc->wake_fd, 1);
}

static void
set_awake(struct rn_lcore *lc)
{
	__atomic_store_n(&lc->sleeping, 0, __ATOMIC_RELAXED);
	if (lc->client_sleeping != NULL)
		__atomic_store_n(lc->client_sleeping, 0, __ATOMIC_RELAXED);
}

/* Whether nothing of lc's runs on a timer: then only a descriptor (or a
 * command, by the wake eventfd) can give it work. */
static bool
untimed(const struct rn_lcore *lc)
{
	return lc->nic->ops->wait_fds != NULL && lc->n_parked == 0 &&
	       lc->closing == NULL && lc->failing == NULL &&
	       lc->channels_failed == 0 && !rn_lcore_client_holding(lc);
}

uint32_t
rn_lcore_sleep_us(struct rn_lcore *lc)
{
	/* Work done since the last sleep: quiet from now on. */
	if (lc->stats.busy_loops != lc->quiet_busy_loops) {
		lc->quiet_busy_loops = lc->stats.busy_loops;
		lc->quiet_us = 0;
	}
	if (lc->quiet_us >= QUIET_AFTER_US && untimed(lc))
		return RTE_MAX(lc->idle_sleep_us, QUIET_SLEEP_US);
	return lc->idle_sleep_us;
}

bool
rn_lcore_sleep(struct rn_lcore *lc)
{
	struct epoll_event events[SLEEP_MAX_EVENTS];
	uint32_t us = rn_lcore_sleep_us(lc);
	struct timespec timeout = {
		.tv_sec = us / 1000000,
		.tv_nsec = (long)(us % 1000000) * 1000,
	};
	int n;

	__atomic_store_n(&lc->sleeping, 1, __ATOMIC_SEQ_CST);
	/* Pairs with a client's enqueue, then load of the word. */
	if (lc->client_sleeping != NULL)
		__atomic_store_n(lc->client_sleeping, 1, __ATOMIC_SEQ_CST);
	if (has_work(lc)) {
		set_awake(lc);
		return true;
	}
	rn_lcore_count(&lc->stats.sleeps, 1);
	n = epoll_pwait2(lc->epoll_fd, events, SLEEP_MAX_EVENTS, &timeout,
			 NULL);
	set_awake(lc);
	/* Woken: what follows may be an exchange. Timed out: quieter. */
	lc->quiet_us = n > 0 ? 0 : lc->quiet_us + us;
	for (int i = 0; i < n; i++) {
		if (events[i].data.fd == lc->wake_fd) {
			eventfd_t value;

			eventfd_read(lc->wake_fd, &value);
		}
	}
	return n > 0;
}
