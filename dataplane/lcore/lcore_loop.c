/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The run-to-completion loop. Each iteration is a short checklist:
 *   1. drain the command ring (at most RN_LCORE_BURST commands),
 *   2. progress the NIC (the sim device's work; nothing for hardware) and
 *      poll the queues this lcore owns,
 *   3. apply the idle policy when the iteration found nothing to do.
 */
#include <sys/eventfd.h>

#include "lcore_internal.h"

static void
post_event(struct rn_lcore *lc, struct rn_lcore_event ev)
{
	if (rte_ring_mp_enqueue_elem(lc->event_ring, &ev, sizeof(ev)) != 0) {
		rn_lcore_count(&lc->stats.events_dropped, 1);
		return;
	}
	/* Events are rare (replies, errors): a syscall here is affordable. */
	eventfd_write(lc->control_wake_fd, 1);
}

static void
execute(struct rn_lcore *lc, const struct rn_lcore_cmd *cmd)
{
	switch ((enum rn_lcore_cmd_type)cmd->type) {
	case RN_LCORE_CMD_PING: {
		struct rn_lcore_event ev = {
			.type = RN_LCORE_EVENT_PONG,
			.lcore_id = (uint16_t)lc->lcore_id,
			.arg = cmd->arg,
			.cookie = cmd->cookie,
		};
		post_event(lc, ev);
		break;
	}
	case RN_LCORE_CMD_STOP:
		lc->running = false;
		break;
	}
}

static inline unsigned int
drain_commands(struct rn_lcore *lc)
{
	struct rn_lcore_cmd cmds[RN_LCORE_BURST];
	unsigned int n = rte_ring_sc_dequeue_burst_elem(lc->cmd_ring, cmds,
							sizeof(cmds[0]),
							RN_LCORE_BURST, NULL);

	for (unsigned int i = 0; i < n; i++)
		execute(lc, &cmds[i]);
	rn_lcore_count(&lc->stats.commands, n);
	return n;
}

int
rn_lcore_run(void *arg)
{
	struct rn_lcore *lc = arg;

	RN_LCORE_LOG(INFO, "lcore %u: running, idle policy %s", lc->lcore_id,
		     rn_idle_policy_name(lc->idle));
	lc->running = true;
	lc->idle_polls_left = lc->idle_polls;
	while (lc->running) {
		unsigned int work = drain_commands(lc);

		work += rn_nic_progress(lc->nic);

		rn_lcore_count(&lc->stats.loops, 1);
		if (work != 0) {
			rn_lcore_count(&lc->stats.busy_loops, 1);
			lc->idle_polls_left = lc->idle_polls;
		} else if (lc->idle == RN_IDLE_ADAPTIVE &&
			   --lc->idle_polls_left == 0) {
			rn_lcore_sleep(lc);
			lc->idle_polls_left = lc->idle_polls;
		}
	}
	RN_LCORE_LOG(INFO, "lcore %u: stopped", lc->lcore_id);
	return 0;
}
