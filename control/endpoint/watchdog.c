/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A worker whose loop stops turning (stuck in a call, or starved of its
 * CPU) stalls every endpoint it owns, and nothing else would say so. The
 * control thread looks at each worker's loop counter on every tick and
 * logs when it stops moving and when it moves again. An adaptive worker
 * asleep still wakes every idle_sleep_us, so only silence longer than
 * twice that, and a second, is news.
 */
#include "endpoint_pvt.h"
#include "timers_pvt.h"

void
rn_watchdog_run(struct rn_plane *pl, uint64_t now)
{
	uint64_t quiet_ms = 1000 + 2 * (uint64_t)
			    pl->cfg->dataplane.idle_sleep_us / 1000;

	for (unsigned int i = 0; i < pl->n_workers; i++) {
		struct rn_worker_watch *w = &pl->worker_ctl[i].watch;
		unsigned int lcore_id = pl->workers[i]->lcore_id;
		struct rn_lcore_stats stats;

		rn_lcore_stats_read(pl->workers[i], &stats);
		if (stats.loops != w->loops) {
			if (w->stuck)
				RN_PLANE_LOG(NOTICE, "lcore %u: its loop turns "
					     "again after %lu ms", lcore_id,
					     (unsigned long)(now - w->moved_ms));
			w->loops = stats.loops;
			w->moved_ms = now;
			w->stuck = false;
		} else if (!w->stuck && now - w->moved_ms >= quiet_ms) {
			w->stuck = true;
			RN_PLANE_LOG(WARNING, "lcore %u: its loop has not turned "
				     "for %lu ms (stuck, or without its CPU); "
				     "its endpoints wait", lcore_id,
				     (unsigned long)(now - w->moved_ms));
		}
	}
}
