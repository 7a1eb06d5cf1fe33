/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lcore's answers and news to the control thread: 16-byte events on
 * the ring all lcores share, then a write to the control thread's eventfd.
 * Events are rare (replies, errors, TCP hand-offs): a syscall each is
 * affordable.
 */
#include <sys/eventfd.h>

#include <rte_pause.h>

#include "lcore_pvt.h"

void
rn_lcore_post_event(struct rn_lcore *lc, struct rn_lcore_event ev)
{
	if (rte_ring_mp_enqueue_elem(lc->event_ring, &ev, sizeof(ev)) != 0) {
		rn_lcore_count(&lc->stats.events_dropped, 1);
		return;
	}
	eventfd_write(lc->control_wake_fd, 1);
}

void
rn_lcore_post_event_wait(struct rn_lcore *lc, struct rn_lcore_event ev)
{
	/* The control thread drains the ring whenever it is woken. */
	while (rte_ring_mp_enqueue_elem(lc->event_ring, &ev, sizeof(ev)) != 0) {
		eventfd_write(lc->control_wake_fd, 1);
		rte_pause();
	}
	eventfd_write(lc->control_wake_fd, 1);
}
