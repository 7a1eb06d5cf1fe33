/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoint commands to the worker lcores, without ever waiting on one.
 * When a worker's command ring is full (a worker that stopped draining it,
 * or more commands at once than the ring holds), its commands wait here,
 * oldest first, and go onto the ring as it frees: before any newer command
 * for that worker, and on every tick. Meanwhile the control thread goes on
 * with heartbeats, handshakes and telemetry.
 */
#include <stdlib.h>

#include "commands_pvt.h"
#include "endpoint_pvt.h"

struct rn_cmd_waiting {
	struct rn_lcore_cmd cmd;
	struct rn_cmd_waiting *next;
};

/* Onto worker's ring, oldest first, as many as fit. True when none wait. */
static bool
push(struct rn_plane *pl, unsigned int worker)
{
	struct rn_cmd_backlog *b = &pl->worker_ctl[worker].backlog;

	while (b->head != NULL) {
		struct rn_cmd_waiting *w = b->head;

		if (rn_lcore_cmd_send(pl->workers[worker], w->cmd) != 0)
			return false;
		b->head = w->next;
		if (b->head == NULL)
			b->tail = NULL;
		free(w);
		if (b->head == NULL)
			RN_PLANE_LOG(NOTICE, "lcore %u: command ring has room "
				     "again; %lu command(s) had to wait",
				     pl->workers[worker]->lcore_id,
				     (unsigned long)b->waited);
	}
	return true;
}

void
rn_ep_send_command(struct rn_plane *pl, struct rn_endpoint *ep, uint32_t type,
		struct rn_ep_request *req)
{
	struct rn_cmd_backlog *b = &pl->worker_ctl[ep->lcore].backlog;
	struct rn_lcore_cmd cmd = { .type = type, .cookie = (uintptr_t)req };
	struct rn_cmd_waiting *w;

	if (push(pl, ep->lcore) &&
	    rn_lcore_cmd_send(pl->workers[ep->lcore], cmd) == 0)
		return;
	w = malloc(sizeof(*w));
	if (w == NULL) {
		/* The last resort: without memory, wait for the ring. */
		while (!push(pl, ep->lcore) ||
		       rn_lcore_cmd_send(pl->workers[ep->lcore], cmd) != 0)
			;
		return;
	}
	if (b->head == NULL) {
		RN_PLANE_LOG(WARNING, "lcore %u: command ring full; commands "
			     "wait on the control thread (is the lcore stuck?)",
			     pl->workers[ep->lcore]->lcore_id);
		b->waited = 0;
	}
	*w = (struct rn_cmd_waiting){ .cmd = cmd };
	if (b->tail != NULL)
		b->tail->next = w;
	else
		b->head = w;
	b->tail = w;
	b->waited++;
}

bool
rn_ep_commands_waiting(const struct rn_plane *pl, const struct rn_endpoint *ep)
{
	return pl->worker_ctl[ep->lcore].backlog.head != NULL;
}

void
rn_plane_push_commands(struct rn_plane *pl)
{
	for (unsigned int i = 0; i < pl->n_workers; i++)
		push(pl, i);
}

void
rn_cmd_backlog_free(struct rn_plane *pl)
{
	if (pl->worker_ctl == NULL)
		return;
	for (unsigned int i = 0; i < pl->n_workers; i++) {
		struct rn_cmd_backlog *b = &pl->worker_ctl[i].backlog;

		while (b->head != NULL) {
			struct rn_cmd_waiting *w = b->head;

			b->head = w->next;
			free(w);
		}
	}
	free(pl->worker_ctl);
	pl->worker_ctl = NULL;
}
