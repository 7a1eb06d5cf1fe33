/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lcores' news, on the control thread: the answers about an
 * endpoint's QPs (opened, connected, probed, failed, closed), the native
 * channel's events, sends for the TCP fallback, and a worker whose device
 * failed. Answers about an incarnation that is no longer current are
 * ignored, except EP_CLOSED, which hands its request back to be freed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel_add_pvt.h"
#include "endpoint_pvt.h"
#include "handshake_pvt.h"
#include "notify_tcp_pvt.h"

#define RN_EP_SLOW_ANSWER_MS 1000   /* an lcore this slow to open or
				     * connect QPs is worth a log line */

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
	/* Only its own QPs know it: nobody can join them on the sim wire. */
	if (rn_handshake_random_token(ep->req->remote.addr.token) != 0) {
		rn_ep_fail(pl, ep, "no random bytes for its wire token");
		return;
	}
	ep->peer_session = me->session_id;
	ep->peer_generation = me->generation;
	ep->peer_caps = RN_CAP_TCP_FALLBACK |
			(pl->cfg->notify.enabled ? RN_CAP_NOTIFY_ENABLED : 0);
	if (rn_ep_side_notify_qp(me) != NULL)
		ep->peer_caps |= RN_CAP_NATIVE_NOTIFY;
	rn_ep_connect_qps(pl, ep);
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
		rn_ep_send_hello(pl, ep->conn, RN_PROTO_HELLO);
}

static void
qps_connected(struct rn_plane *pl, struct rn_endpoint *ep)
{
	struct rn_conn *c = ep->conn;

	if (ep->self) {
		rn_ep_established(pl, ep);
		return;
	}
	if (c == NULL)
		return;
	if (!c->outbound) {
		rn_ep_send_hello(pl, c, RN_PROTO_ACCEPT);
		return;
	}
	rn_handshake_send_ready(c, ep->generation);
	if (ep->conn == c)
		rn_ep_established(pl, ep);
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
	ep = pl->eps[req->ep_index];
	if (ev->type == RN_LCORE_EVENT_EP_CLOSED) {
		free(req);
		pl->requests_out--;
		ep->requests_out--;
		/* A removed peer's index is free once its last QPs are. */
		if (ep->removed && ep->requests_out == 0)
			rn_ep_release(pl, ep);
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
