/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The run-to-completion loop. Each iteration is a short checklist:
 *   1. drain the command ring (at most RN_LCORE_BURST commands),
 *   2. progress the NIC (the sim device's work; nothing for hardware),
 *   3. poll the CQ of this lcore's endpoints and dispatch the completions,
 *      then take the application's notifications to send and the receive
 *      slots it released, then the client processes' submit rings
 *      (lcore_client.c) and the transfer batches (lcore_transfer.c),
 *   4. reap endpoints whose QPs finished draining, tell the control
 *      thread of failed ones whose notices went, and retire failed native
 *      channels (rarely any),
 *   5. apply the idle policy when the iteration found nothing to do.
 *
 * An iteration that found nothing gives the CPU away (sched_yield()) when
 * another thread wants it: on a machine without a core per busy thread
 * (two daemons and their clients on two cores), a poller that keeps its
 * CPU makes the thread it waits for wait for a time slice, milliseconds
 * per hop. A yield with nobody else runnable returns at once (a syscall,
 * about 0.5 us here), so the spin stays a spin where cores are spare.
 * adaptive yields after every empty poll until it sleeps; busy at most
 * every RN_LCORE_BUSY_YIELD_US of empty polling, so that an lcore with a
 * core of its own loses next to nothing.
 */
#include <sched.h>

#include <rte_cycles.h>

#include "lcore_pvt.h"
#include "rn_cq.h"
#include "rn_lcore_xfer.h"

static void
execute(struct rn_lcore *lc, const struct rn_lcore_cmd *cmd)
{
	switch (cmd->type) {
	case RN_LCORE_CMD_PING: {
		struct rn_lcore_event ev = {
			.type = RN_LCORE_EVENT_PONG,
			.lcore_id = (uint16_t)lc->lcore_id,
			.arg = cmd->arg,
			.cookie = cmd->cookie,
		};
		rn_lcore_post_event(lc, ev);
		break;
	}
	case RN_LCORE_CMD_STOP:
		lc->running = false;
		break;
	case RN_LCORE_CMD_CLIENT_ADD:
	case RN_LCORE_CMD_CLIENT_REMOVE:
		rn_lcore_client_command(lc, cmd);
		break;
	case RN_LCORE_CMD_CLIENT_REG:
	case RN_LCORE_CMD_CLIENT_DEREG:
		rn_lcore_client_reg_command(lc, cmd);
		break;
	default:
		rn_lcore_ep_command(lc, cmd);
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

static inline unsigned int
poll_completions(struct rn_lcore *lc)
{
	struct rn_wc wc[RN_LCORE_BURST];
	unsigned int total = 0;

	for (uint32_t c = 0; c < lc->n_cqs; c++) {
		struct rn_cq *cq = &lc->cqs[c].cq;
		unsigned int n = rn_cq_poll(cq, wc, RN_LCORE_BURST);

		for (unsigned int i = 0; i < n; i++)
			rn_lcore_ep_completion(lc, &wc[i]);
		total += n;
		if (unlikely(cq->stale != 0)) {
			rn_lcore_count(&lc->stats.stale_cqes, cq->stale);
			cq->stale = 0;
		}
	}
	if (total != 0)
		rn_lcore_count(&lc->stats.completions, total);
	return total;
}

/* Longest empty polling of a busy lcore between two yields. */
#define RN_LCORE_BUSY_YIELD_US 5

/* Step 5: this turn found nothing. */
static inline void
idle(struct rn_lcore *lc, uint64_t *yield_tsc, uint64_t yield_gap)
{
	if (lc->idle == RN_IDLE_BUSY) {
		uint64_t now = rte_rdtsc();

		if (now >= *yield_tsc) {
			sched_yield();
			*yield_tsc = now + yield_gap;
		}
		return;
	}
	if (--lc->idle_polls_left != 0) {
		sched_yield();
		return;
	}
	/* A sleep that only timed out is followed by one poll, not
	 * idle_polls: an idle lcore then costs a poll (a syscall for the
	 * sim's progress) per sleep. A wake-up by a descriptor, or work
	 * found, restores the full count, for the exchange that may
	 * follow. */
	lc->idle_polls_left = rn_lcore_sleep(lc) ? lc->idle_polls : 1;
}

int
rn_lcore_run(void *arg)
{
	struct rn_lcore *lc = arg;
	uint64_t yield_tsc = 0;
	uint64_t yield_gap = lc->tsc_hz * RN_LCORE_BUSY_YIELD_US / 1000000;

	RN_LCORE_LOG(INFO, "lcore %u: running, idle policy %s", lc->lcore_id,
		     rn_idle_policy_name(lc->idle));
	lc->running = true;
	lc->idle_polls_left = lc->idle_polls;
	while (lc->running) {
		unsigned int work = drain_commands(lc);

		work += rn_nic_progress(lc->nic);
		work += poll_completions(lc);
		work += rn_lcore_notify_poll(lc);
		if (lc->n_clients != 0)
			work += rn_lcore_client_poll(lc);
		work += rn_lcore_xfer_poll(lc);
		if (unlikely(lc->closing != NULL || lc->failing != NULL))
			rn_lcore_ep_reap(lc);
		if (unlikely(lc->channels_failed != 0))
			rn_lcore_channel_reap(lc);

		rn_lcore_count(&lc->stats.loops, 1);
		if (work != 0) {
			rn_lcore_count(&lc->stats.busy_loops, 1);
			lc->idle_polls_left = lc->idle_polls;
		} else {
			idle(lc, &yield_tsc, yield_gap);
		}
	}
	RN_LCORE_LOG(INFO, "lcore %u: stopped", lc->lcore_id);
	return 0;
}
