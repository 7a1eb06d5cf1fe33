/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoint states and the lcore's answers about its QPs. Every
 * (re)connection is a new incarnation: a new generation and a new set of
 * QPs. Answers about an incarnation that is no longer current are ignored,
 * except EP_CLOSED, which hands its request back to be freed.
 */
#include <errno.h>
#include <rte_random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plane.h"

void
rn_ep_set_state(struct rn_plane *pl, struct rn_endpoint *ep,
	     enum rn_ep_state state, const char *why)
{
	if (ep->state == state)
		return;
	RN_PLANE_LOG(INFO, "endpoint %s: %s -> %s (%s, generation %u)",
		     ep->name, rn_ep_state_name(ep->state),
		     rn_ep_state_name(state), why, ep->generation);
	ep->state = state;
	ep->info.transitions[state]++;
	rn_ep_publish(pl, ep);
}

void
rn_ep_open_qps(struct rn_plane *pl, struct rn_endpoint *ep, bool notify)
{
	const struct rn_config *cfg = pl->cfg;
	struct rn_ep_request *req;

	if (plane_worker_failed(pl, ep)) {
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
	req->slot = ep->slot;
	req->n_data_qps = cfg->nic.data_qps;
	req->notify = cfg->notify.enabled && notify;
	req->notify_depth = cfg->notify.slots;
	req->notify_slot_size = cfg->notify.slot_size;
	req->qp_timeout = (uint8_t)cfg->nic.qp_timeout;
	req->qp_retry_cnt = (uint8_t)cfg->nic.qp_retry_cnt;
	/* Half the handshake step's budget: the peer must not give up. */
	req->bay_wait_ms = cfg->control.connect_timeout_ms / 2;
	snprintf(req->local.name, sizeof(req->local.name), "%s",
		 cfg->dataplane.name);
	req->local.session_id = pl->session_id;
	req->local.generation = ep->generation;
	ep->req = req;
	ep->qps_open = false;
	ep->serving = false;
	pl->requests_out++;
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

/*
 * Notifications to this node itself: the endpoint's QPs are connected to
 * themselves (each QP is its own peer, through the NIC's loopback), so they
 * take the same data path as any peer's; no control connection, no
 * handshake, nothing to time out.
 */
static void
loop_back(struct rn_plane *pl, struct rn_endpoint *ep)
{
	struct rn_ep_side *me = &ep->req->local;

	ep->req->remote = *me;
	ep->peer_session = me->session_id;
	ep->peer_generation = me->generation;
	ep->peer_caps = RN_CAP_TCP_FALLBACK |
			(pl->cfg->notify.enabled ? RN_CAP_NOTIFY_ENABLED : 0);
	for (uint32_t i = 0; i < me->n_qps; i++)
		if (me->qps[i].kind == RN_EP_QP_NOTIFY)
			ep->peer_caps |= RN_CAP_NATIVE_NOTIFY;
	rn_ep_connect_qps(pl, ep);
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
	if (plane_worker_failed(pl, ep)) {   /* failed it stays: no call */
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
	rc = rn_conn_connect(pl, ep, &c);
	if (rc != 0) {
		snprintf(why, sizeof(why), "cannot call %s port %u: %s",
			 ep->address, ep->port, strerror(-rc));
		rn_ep_fail(pl, ep, why);
		return;
	}
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
		rn_conn_close(ep->conn);
	}
	rn_ep_retire_qps(pl, ep);
	rn_ep_set_state(pl, ep, RN_EP_FAILED, why);
	if (plane_worker_failed(pl, ep)) {
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
		rn_conn_close(ep->conn);
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
rn_ep_established(struct rn_plane *pl, struct rn_endpoint *ep)
{
	uint64_t now = rn_now_ms();

	ep->native = rn_chan_add_native_at_handshake(ep);
	rn_ep_set_state(pl, ep, RN_EP_CONNECTED, "handshake done");
	ep->connected_at_ms = now;
	ep->retry_at_ms = 0;
	ep->next_probe_ms = now;   /* prove the RDMA path right away */
	ep->info.last_error[0] = '\0';
	rn_ep_publish(pl, ep);
}

static const char *
syndrome_name(int32_t syndrome)
{
	switch (syndrome) {
	case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR: return "local length";
	case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR: return "local QP operation";
	case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR: return "local protection";
	case MLX5_CQE_SYNDROME_WR_FLUSH_ERR: return "flushed";
	case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR: return "remote invalid request";
	case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR: return "remote access";
	case MLX5_CQE_SYNDROME_REMOTE_OP_ERR: return "remote operation";
	case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
		return "transport retry counter exceeded";
	case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
	default: return "other";
	}
}

/* A handshake waits for these answers: a slow lcore is worth knowing
 * about (an intermittent stall of a whole connect timeout was seen once). */
static void
log_slow_answer(struct rn_plane *pl, struct rn_endpoint *ep,
		const struct rn_lcore_event *ev)
{
	uint64_t took = rn_now_ms() - ep->asked_ms;

	if (took >= RN_EP_SLOW_ANSWER_MS)
		RN_PLANE_LOG(WARNING, "endpoint %s: lcore %u took %lu ms to %s "
			     "the QPs", ep->name,
			     pl->workers[ep->lcore]->lcore_id,
			     (unsigned long)took,
			     ev->type == RN_LCORE_EVENT_EP_OPENED ? "open" :
			     "connect");
}

/* The QPs are ready on our side: go on with the handshake. */
static void
qps_opened(struct rn_plane *pl, struct rn_endpoint *ep)
{
	ep->qps_open = true;
	if (ep->self)
		loop_back(pl, ep);
	else if (ep->serving)
		rn_ep_connect_qps(pl, ep);
	else if (ep->conn != NULL && ep->conn->phase == RN_CONN_TCP_UP)
		rn_handshake_send_hello(ep->conn, RN_PROTO_HELLO);
}

static void
qps_connected(struct rn_plane *pl, struct rn_endpoint *ep)
{
	struct rn_conn *c = ep->conn;
	uint8_t frame[RN_PROTO_HEADER_SIZE + 4];

	if (ep->self) {
		rn_ep_established(pl, ep);
		return;
	}
	if (c == NULL)
		return;
	if (!c->outbound) {
		rn_handshake_send_hello(c, RN_PROTO_ACCEPT);
		return;
	}
	rn_conn_send(c, frame, rn_proto_encode_ready(frame, sizeof(frame),
						  ep->generation));
	if (ep->conn == c) {
		c->phase = RN_CONN_ESTABLISHED;
		rn_ep_established(pl, ep);
	}
}

void
rn_plane_event(struct rn_plane *pl, const struct rn_lcore_event *ev)
{
	struct rn_ep_request *req = (void *)(uintptr_t)ev->cookie;
	struct rn_endpoint *ep;
	char why[128];

	if (ev->type == RN_LCORE_EVENT_NOTIFY_TCP) {
		rn_notify_tcp_send(pl, (void *)(uintptr_t)ev->cookie);
		return;
	}
	if (ev->type == RN_LCORE_EVENT_BAY_FREE) {
		rn_chan_add_bay_free(pl, ev->lcore_id, ev->arg != 0);
		return;
	}
	ep = pl->eps[req->slot];
	if (ev->type == RN_LCORE_EVENT_EP_CLOSED) {
		free(req);
		pl->requests_out--;
		return;
	}
	if (ep->req != req)
		return;   /* an incarnation already retired */
	switch (ev->type) {
	case RN_LCORE_EVENT_EP_OPENED:
	case RN_LCORE_EVENT_EP_CONNECTED:
		log_slow_answer(pl, ep, ev);
		if (ev->arg != 0) {
			snprintf(why, sizeof(why), "QP %s failed: %s",
				 ev->type == RN_LCORE_EVENT_EP_OPENED ?
				 "creation" : "connection", strerror(-ev->arg));
			rn_ep_fail(pl, ep, why);
		} else if (ev->type == RN_LCORE_EVENT_EP_OPENED) {
			qps_opened(pl, ep);
		} else {
			qps_connected(pl, ep);
		}
		return;
	case RN_LCORE_EVENT_EP_PROBED:
		if (ev->arg == 0) {
			ep->info.probes_ok++;
		} else {
			ep->info.probes_bad++;
			RN_PLANE_LOG(WARNING, "endpoint %s: RDMA probe: %s",
				     ep->name, ev->arg == -EBADMSG ?
				     "read an identity that is not the peer's "
				     "current incarnation" : strerror(-ev->arg));
		}
		rn_ep_publish(pl, ep);
		return;
	case RN_LCORE_EVENT_EP_FAILED:
		snprintf(why, sizeof(why), "QP error: syndrome 0x%x (%s)",
			 ev->arg, syndrome_name(ev->arg));
		rn_ep_fail(pl, ep, why);
		return;
	case RN_LCORE_EVENT_NOTIFY_OPENED:
	case RN_LCORE_EVENT_NOTIFY_CONNECTED:
	case RN_LCORE_EVENT_NOTIFY_FAILED:
		rn_chan_add_event(pl, ep, ev);
		return;
	default:
		return;
	}
}

void
rn_plane_worker_failed(struct rn_plane *pl, unsigned int worker,
		       const char *what)
{
	char *why;

	if (worker >= pl->n_workers || pl->worker_out[worker])
		return;
	why = pl->worker_failed[worker];
	snprintf(why, sizeof(pl->worker_failed[0]), "its worker's device "
		 "failed (%s); restart rnotifyd", what);
	__atomic_store_n(&pl->worker_out[worker], true, __ATOMIC_RELEASE);
	for (unsigned int i = 0; i < pl->n_eps; i++) {
		struct rn_endpoint *ep = pl->eps[i];

		if (ep->lcore == worker && ep->req != NULL &&
		    ep->state != RN_EP_CLOSING && ep->state != RN_EP_CLOSED)
			rn_ep_fail(pl, ep, why);
	}
}

bool
rn_plane_worker_out(const struct rn_plane *pl, unsigned int worker)
{
	return worker < pl->n_workers &&
	       __atomic_load_n(&pl->worker_out[worker], __ATOMIC_ACQUIRE);
}
