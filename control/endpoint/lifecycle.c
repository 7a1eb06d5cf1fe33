/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint state machine: its states, its QPs per incarnation (each
 * (re)connection is a new one: a new generation and a new set of QPs),
 * our calls, failure and the backoff before calling again, closing on
 * purpose, and the events clients hear of it.
 */
#include <errno.h>
#include <rte_random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands_pvt.h"
#include "endpoint_pvt.h"
#include "rn_client.h"

static const char *const state_names[] = {
	[RN_EP_IDLE] = "idle", [RN_EP_CONNECTING] = "connecting",
	[RN_EP_CONNECTED] = "connected", [RN_EP_CLOSING] = "closing",
	[RN_EP_CLOSED] = "closed", [RN_EP_FAILED] = "failed",
	[RN_EP_RECONNECTING] = "reconnecting",
};

const char *
rn_ep_state_name(enum rn_ep_state state)
{
	return state_names[state];
}

void
rn_ep_tell(struct rn_plane *pl, struct rn_endpoint *ep, int event)
{
	if (pl->observer != NULL)
		pl->observer(pl->observer_arg, ep->index, event);
}

/*
 * The one place an endpoint's state changes. Clients hear of it after
 * their status page shows it (rn_ep_publish()): PEER_UP when it connects
 * (the first time too: a client attached before wants to know), or
 * PEER_RESTARTED when it connects to another incarnation of the peer than
 * the last time (another session id: the peer restarted); PEER_DOWN when
 * it stops being connected, unless it was removed (PEER_REMOVED says so)
 * or this node shuts down (its clients lose the daemon anyway).
 */
void
rn_ep_set_state(struct rn_plane *pl, struct rn_endpoint *ep,
	     enum rn_ep_state state, const char *why)
{
	enum rn_ep_state was = ep->state;

	if (was == state)
		return;
	RN_PLANE_LOG(INFO, "endpoint %s: %s -> %s (%s, generation %u)",
		     ep->name, rn_ep_state_name(was),
		     rn_ep_state_name(state), why, ep->generation);
	ep->state = state;
	ep->info.transitions[state]++;
	rn_ep_publish(pl, ep);
	if (state == RN_EP_CONNECTED) {
		rn_ep_tell(pl, ep, ep->up_session == 0 ||
			   ep->up_session == ep->peer_session ?
			   RN_CLIENT_EVENT_PEER_UP :
			   RN_CLIENT_EVENT_PEER_RESTARTED);
		ep->up_session = ep->peer_session;
	} else if (was == RN_EP_CONNECTED && !ep->removed &&
		   !pl->shutting_down) {
		rn_ep_tell(pl, ep, RN_CLIENT_EVENT_PEER_DOWN);
	}
}

void
rn_ep_open_qps(struct rn_plane *pl, struct rn_endpoint *ep, bool notify)
{
	const struct rn_config *cfg = pl->cfg;
	struct rn_ep_request *req;

	if (rn_ep_worker_out(pl, ep)) {
		rn_ep_fail(pl, ep, pl->worker_failed[ep->lcore]);
		return;
	}
	req = calloc(1, sizeof(*req));
	if (req == NULL) {
		rn_ep_fail(pl, ep, "out of memory");
		return;
	}
	ep->generation++;
	ep->tcp_received = 0;
	ep->native = false;
	/* A new incarnation adds its channel afresh; offer numbers go on. */
	ep->add.state = RN_CHAN_ADD_IDLE;
	ep->add.ours = false;
	ep->peer_native_off = false;
	ep->peer_declined = false;
	req->ep_index = ep->index;
	req->peer_tag = ep->tag;   /* the lcore checks clients' sends by it */
	req->n_data_qps = cfg->nic.data_qps;
	req->notify = cfg->notify.enabled && notify;
	req->notify_depth = cfg->notify.slots;
	req->notify_slot_size = cfg->notify.slot_size;
	req->qp_timeout = (uint8_t)cfg->nic.qp_timeout;
	req->qp_retry_cnt = (uint8_t)cfg->nic.qp_retry_cnt;
	/* Half the handshake step's budget: the peer must not give up. */
	req->bay_wait_ms = cfg->control.connect_timeout_ms / 2;
	/* The peer may send as soon as its handshake ends, before ours
	 * does: what it sends waits until a send back is taken
	 * (rn_ep_established()). */
	req->defer_deliveries = true;
	snprintf(req->local.name, sizeof(req->local.name), "%s",
		 cfg->dataplane.name);
	req->local.session_id = pl->session_id;
	req->local.generation = ep->generation;
	ep->req = req;
	ep->qps_open = false;
	ep->serving = false;
	pl->requests_out++;
	ep->requests_out++;
	ep->asked_ms = rn_now_ms();
	rn_ep_send_command(pl, ep, RN_LCORE_CMD_EP_OPEN, req);
}

void
rn_ep_retire_qps(struct rn_plane *pl, struct rn_endpoint *ep)
{
	if (ep->req == NULL)
		return;
	/* The lcore drains and destroys them, then hands req back. */
	rn_ep_send_command(pl, ep, RN_LCORE_CMD_EP_CLOSE, ep->req);
	ep->req = NULL;
	ep->qps_open = false;
	ep->serving = false;
}

void
rn_ep_connect_qps(struct rn_plane *pl, struct rn_endpoint *ep)
{
	ep->asked_ms = rn_now_ms();
	rn_ep_send_command(pl, ep, RN_LCORE_CMD_EP_CONNECT, ep->req);
}

/* Start our own call to a configured peer. Its QPs are made once the TCP
 * connection is up: a peer that is down costs no QP churn. */
void
rn_ep_connect(struct rn_plane *pl, struct rn_endpoint *ep)
{
	struct rn_conn *c;
	char why[96];
	int rc;

	if (pl->shutting_down || ep->conn != NULL ||
	    (ep->self && ep->req != NULL))
		return;
	if (rn_ep_worker_out(pl, ep)) {   /* failed it stays: no call */
		if (ep->state != RN_EP_FAILED)
			rn_ep_fail(pl, ep, pl->worker_failed[ep->lcore]);
		return;
	}
	ep->retry_at_ms = 0;
	rn_ep_set_state(pl, ep, ep->state == RN_EP_IDLE || ep->state == RN_EP_CLOSED ?
			 RN_EP_CONNECTING : RN_EP_RECONNECTING,
		     ep->self ? "looping back" : "calling");
	if (ep->self) {
		rn_ep_open_qps(pl, ep, true);   /* loop_back() once they are open */
		return;
	}
	rc = rn_conn_connect(&pl->conns, ep->address, ep->port, &c);
	if (rc != 0) {
		snprintf(why, sizeof(why), "cannot call %s port %u: %s",
			 ep->address, ep->port, strerror(-rc));
		rn_ep_fail(pl, ep, why);
		return;
	}
	c->ep = ep;
	ep->conn = c;
	rn_ep_publish(pl, ep);
}

static void
schedule_retry(struct rn_plane *pl, struct rn_endpoint *ep)
{
	uint32_t max = pl->cfg->control.reconnect_max_ms;
	/* Jitter of +-25%: peers that failed together do not call together. */
	uint32_t jitter = ep->backoff_ms / 2;
	uint64_t delay = ep->backoff_ms - ep->backoff_ms / 4 +
			 (jitter != 0 ? rte_rand_max(jitter + 1) : 0);

	ep->retry_at_ms = rn_now_ms() + RTE_MIN(delay, (uint64_t)max);
	ep->backoff_ms = ep->backoff_ms > max / 2 ? max : ep->backoff_ms * 2;
}

void
rn_ep_fail(struct rn_plane *pl, struct rn_endpoint *ep, const char *why)
{
	RN_PLANE_LOG(WARNING, "endpoint %s (%s): failed: %s", ep->name,
		     ep->conn != NULL ? ep->conn->peer : ep->address, why);
	snprintf(ep->info.last_error, sizeof(ep->info.last_error), "%s", why);
	if (ep->conn != NULL) {
		/* How long the peer had been silent when this was noticed. */
		if (ep->state == RN_EP_CONNECTED)
			ep->info.last_detect_ms = rn_now_ms() -
						  ep->conn->last_rx_ms;
		rn_ep_close_conn(ep->conn);
	}
	rn_ep_retire_qps(pl, ep);
	rn_ep_set_state(pl, ep, RN_EP_FAILED, why);
	if (rn_ep_worker_out(pl, ep)) {
		/* Nothing to retry until rnotifyd restarts: failed it stays,
		 * and sends answer -ENOTCONN. */
	} else if (ep->configured && ep->in_use && !pl->shutting_down) {
		rn_ep_set_state(pl, ep, RN_EP_RECONNECTING, "backoff");
		schedule_retry(pl, ep);
	} else {
		/* A peer that called us calls again when it is back. */
		rn_ep_set_state(pl, ep, RN_EP_CLOSED, "not ours to call");
	}
	rn_ep_publish(pl, ep);
}

void
rn_ep_closed_by_peer(struct rn_plane *pl, struct rn_endpoint *ep)
{
	if (ep->conn != NULL)
		rn_ep_close_conn(ep->conn);
	rn_ep_retire_qps(pl, ep);
	rn_ep_set_state(pl, ep, RN_EP_CLOSING, "the peer closed it");
	rn_ep_set_state(pl, ep, RN_EP_CLOSED, "the peer closed it");
	if (ep->configured && ep->in_use && !pl->shutting_down) {
		/* It may come back: keep calling, gently. */
		rn_ep_set_state(pl, ep, RN_EP_RECONNECTING, "backoff");
		schedule_retry(pl, ep);
	}
	rn_ep_publish(pl, ep);
}

void
rn_ep_close(struct rn_plane *pl, struct rn_endpoint *ep, const char *why)
{
	uint8_t frame[RN_PROTO_HEADER_SIZE + 2];
	size_t n = rn_proto_encode_close(frame, sizeof(frame), 0);

	if (ep->conn != NULL) {
		struct rn_conn *c = ep->conn;

		/* Best effort: the peer need not wait to find us gone. The
		 * send itself may fail and close c. */
		rn_conn_send(c, frame, n);
		if (!c->dead)
			rn_ep_close_conn(c);
	}
	rn_ep_retire_qps(pl, ep);
	ep->retry_at_ms = 0;
	if (ep->state != RN_EP_CLOSED && ep->state != RN_EP_IDLE) {
		rn_ep_set_state(pl, ep, RN_EP_CLOSING, why);
		rn_ep_set_state(pl, ep, RN_EP_CLOSED, why);
	}
}

void
rn_ep_established(struct rn_plane *pl, struct rn_endpoint *ep)
{
	uint64_t now = rn_now_ms();

	ep->native = ep->req != NULL &&
		     rn_ep_side_notify_qp(&ep->req->local) != NULL &&
		     rn_ep_side_notify_qp(&ep->req->remote) != NULL;
	rn_ep_set_state(pl, ep, RN_EP_CONNECTED, "handshake done");
	ep->connected_at_ms = now;
	ep->retry_at_ms = 0;
	ep->next_probe_ms = now;   /* prove the RDMA path right away */
	ep->info.last_error[0] = '\0';
	rn_ep_publish(pl, ep);
	/* Sends to the peer are taken now (published above, before the
	 * command ring's release): the lcore may deliver what it received. */
	if (ep->req != NULL)
		rn_ep_send_command(pl, ep, RN_LCORE_CMD_EP_DELIVER, ep->req);
}

