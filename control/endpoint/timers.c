/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Everything with a deadline, checked on every tick of the control loop:
 * handshake phases, heartbeats, silence that declares a peer dead, the
 * periodic RDMA probe, retries after a failure, the stable period after
 * which the backoff starts over, commands waiting for a worker, and the
 * peer's answers when a native channel is added (channel_add.c).
 */
#include <stdio.h>

#include "channel_add_pvt.h"
#include "commands_pvt.h"
#include "endpoint_pvt.h"
#include "timers_pvt.h"

#define RN_EP_STABLE_MS 10000       /* connected this long: backoff resets */
#define RN_EP_PROBE_EVERY_HEARTBEATS 10

static const char *const phase_names[] = {
	[RN_CONN_TCP_CONNECTING] = "TCP connect",
	[RN_CONN_WAIT_ANSWER] = "waiting for ANSWER",
	[RN_CONN_TCP_UP] = "QP creation",
	[RN_CONN_WAIT_HELLO] = "waiting for HELLO",
	[RN_CONN_WAIT_PROOF] = "waiting for PROOF",
	[RN_CONN_SERVING] = "QP creation for the peer",
	[RN_CONN_WAIT_ACCEPT] = "waiting for ACCEPT",
	[RN_CONN_CONNECTING_QPS] = "QP connection",
	[RN_CONN_WAIT_READY] = "waiting for READY",
	[RN_CONN_ESTABLISHED] = "established",
};

static void
check_conn(struct rn_plane *pl, struct rn_conn *c, uint64_t now)
{
	const struct rn_control_config *cc = &pl->cfg->control;
	char why[128];

	if (c->phase != RN_CONN_ESTABLISHED) {
		if (now < c->deadline_ms)
			return;
		snprintf(why, sizeof(why), "%s timed out after %u ms",
			 phase_names[c->phase], cc->connect_timeout_ms);
		rn_conn_fail(c, why);
		return;
	}
	if (c->rx_held) {
		/* Not reading (the application's ring is full): the peer's
		 * heartbeats wait unread, so silence proves nothing. The RDMA
		 * probe still fails a dead peer's endpoint. */
		rn_conn_resume(c);
	} else if (now - c->last_rx_ms >= cc->dead_after_ms) {
		struct rn_endpoint *ep = c->ep;

		snprintf(why, sizeof(why), "peer silent for %lu ms: declared dead",
			 (unsigned long)(now - c->last_rx_ms));
		rn_ep_fail(pl, ep, why);
		return;
	}
	if (now - c->last_tx_ms >= cc->heartbeat_ms) {
		uint8_t frame[RN_PROTO_HEADER_SIZE];

		rn_conn_send(c, frame, rn_proto_encode_heartbeat(frame, sizeof(frame)));
	}
}

static void
check_endpoint(struct rn_plane *pl, struct rn_endpoint *ep, uint64_t now)
{
	const struct rn_control_config *cc = &pl->cfg->control;

	if (ep->state == RN_EP_CONNECTED) {
		if (ep->backoff_ms != cc->reconnect_min_ms &&
		    now - ep->connected_at_ms >= RN_EP_STABLE_MS)
			ep->backoff_ms = cc->reconnect_min_ms;
		/* Periodic: skipped while commands wait for the lcore. */
		if (now >= ep->next_probe_ms && ep->req != NULL &&
		    !rn_ep_commands_waiting(pl, ep)) {
			rn_ep_send_command(pl, ep, RN_LCORE_CMD_EP_PROBE, ep->req);
			ep->next_probe_ms = now + (uint64_t)cc->heartbeat_ms *
					    RN_EP_PROBE_EVERY_HEARTBEATS;
		}
		rn_chan_add_check(pl, ep, now);
		return;
	}
	if (ep->retry_at_ms != 0 && now >= ep->retry_at_ms && ep->conn == NULL &&
	    ep->configured)
		rn_ep_connect(pl, ep);
}

void
rn_timers_run(struct rn_plane *pl, uint64_t now)
{
	struct rn_conn *c = pl->conns.live;

	rn_plane_push_commands(pl);
	rn_watchdog_run(pl, now);
	while (c != NULL) {
		struct rn_conn *next = c->next;   /* c may close */

		check_conn(pl, c, now);
		c = next;
	}
	for (unsigned int i = 0; i < pl->n_eps; i++)
		check_endpoint(pl, pl->eps[i], now);
}
