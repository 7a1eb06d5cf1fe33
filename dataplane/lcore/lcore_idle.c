/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Adaptive idle. A sleeping lcore cannot miss a command: the control thread
 * enqueues first, then writes the lcore's eventfd, which stays readable
 * (level-triggered) until the lcore reads it, so a command that lands between
 * the last empty poll and epoll_wait still ends the sleep at once.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>

#include "lcore_internal.h"

#define SLEEP_MAX_EVENTS 16

void
rn_lcore_sleep(struct rn_lcore *lc)
{
	struct epoll_event events[SLEEP_MAX_EVENTS];
	struct timespec timeout = {
		.tv_sec = lc->idle_sleep_us / 1000000,
		.tv_nsec = (long)(lc->idle_sleep_us % 1000000) * 1000,
	};
	int n;

	rn_lcore_count(&lc->stats.sleeps, 1);
	n = epoll_pwait2(lc->epoll_fd, events, SLEEP_MAX_EVENTS, &timeout,
			 NULL);
	for (int i = 0; i < n; i++) {
		if (events[i].data.fd == lc->wake_fd) {
			eventfd_t value;

			eventfd_read(lc->wake_fd, &value);
		}
	}
}
