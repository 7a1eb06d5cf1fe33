/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the handshake's frames mean for an endpoint: which endpoint a
 * caller's HELLO is for, a peer that calls again or restarted, the answer
 * to our own call; and what the transport reports (rn_ep_conn_ops).
 *
 * Simultaneous connect: when a HELLO arrives while our own call to the
 * same peer is still in its handshake, the call of the node whose name
 * sorts first survives, on both sides, so exactly one endpoint remains.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "channel_add_pvt.h"
#include "endpoint_pvt.h"
#include "handshake_pvt.h"
#include "notify_tcp_pvt.h"

void
rn_ep_send_hello(struct rn_plane *pl, struct rn_conn *c, uint8_t type)
{
	rn_handshake_send_hello(c, type, &c->ep->req->local,
				pl->cfg->notify.enabled);
}

/*
 * Where our sim device's wire reaches the peer of c, and with what: the
 * address c comes from (or goes to), never the one its HELLO or ACCEPT
 * names, which could point our worker anywhere; and the token of this
 * exchange, which the peer's device presents to ours and ours to it.
 * Returns NULL, or why the endpoint fails.
 */
static const char *
bind_wire(struct rn_plane *pl, const struct rn_conn *c,
	  struct rn_nic_addr *addr)
{
	uint8_t ip[4];

	if (rn_handshake_wire_token(c, &pl->auth, addr->token) != 0)
		return "authentication: no wire token (libcrypto failed)";
	if (pl->cfg->nic.provider != RN_NIC_SIM)
		return NULL;
	if (rn_conn_peer_ipv4(c, ip) != 0)
		return "the sim device's wire needs an IPv4 control connection";
	memset(addr->gid, 0, 10);
	addr->gid[10] = 0xff;
	addr->gid[11] = 0xff;
	memcpy(&addr->gid[12], ip, sizeof(ip));
	return NULL;
}

/* A HELLO for ep while ep->conn, our own call, is still in its handshake. */
static bool
lost_the_race(struct rn_plane *pl, struct rn_conn *c, struct rn_endpoint *ep)
{
	struct rn_conn *mine = ep->conn;

	if (mine == NULL || mine == c || !mine->outbound ||
	    mine->phase == RN_CONN_ESTABLISHED)
		return false;
	if (strcmp(pl->cfg->dataplane.name, ep->name) < 0) {
		rn_handshake_refuse(c, RN_REFUSE_DUPLICATE, "simultaneous connect: the call "
		       "of the node whose name sorts first stays");
		return true;
	}
	/* Theirs stays: drop our call, keep our QPs for serving theirs,
	 * unless they are already being connected to its ACCEPT. */
	RN_PLANE_LOG(INFO, "endpoint %s: simultaneous connect, serving the "
		     "peer's call", ep->name);
	if (mine->phase >= RN_CONN_CONNECTING_QPS)
		rn_ep_retire_qps(pl, ep);
	rn_ep_close_conn(mine);
	return false;
}

/* A caller's HELLO (its capabilities understood, a data QP in it). */
static void
on_hello(struct rn_plane *pl, struct rn_conn *c, const struct rn_proto_hello *h)
{
	struct rn_endpoint *ep;
	const char *why;

	if (strcmp(h->name, pl->cfg->dataplane.name) == 0) {
		rn_handshake_refuse(c, RN_REFUSE_NAME, "that is this node's own name");
		return;
	}
	if (rn_hs_auth_on(&pl->auth) &&
	    (strcmp(h->name, c->auth.peer_name) != 0 ||
	     h->session_id != c->auth.peer_session)) {
		rn_handshake_refuse(c, RN_REFUSE_AUTH, "HELLO names another node "
				    "or session than its proof");
		return;
	}
	ep = rn_ep_find(pl, h->name);
	if (ep != NULL && ep->conn != NULL && ep->conn != c &&
	    !ep->conn->outbound) {
		/* What the peer sent on its old connection before it called
		 * again (READY, CLOSE) goes first: an accepted connection is
		 * read at once, possibly before the old one's bytes, already
		 * here, in the same wakeup; taken after the HELLO, they would
		 * be dropped with the old connection and the endpoint's
		 * transitions lost (test_endpoint_churn_leaks_nothing). */
		rn_conn_read_pending(ep->conn);
		ep = rn_ep_find(pl, h->name);
	}
	if (rn_hs_auth_on(&pl->auth) && !pl->cfg->control.accept_unknown &&
	    (ep == NULL || !ep->configured)) {
		rn_handshake_refuse(c, RN_REFUSE_NAME, "unknown name: no [peer] "
				    "section names it, and [control] "
				    "accept_unknown is off");
		return;
	}
	if (rn_hs_auth_on(&pl->auth) && ep != NULL && ep->conn != NULL &&
	    ep->conn != c &&
	    ep->conn->phase == RN_CONN_ESTABLISHED &&
	    ep->peer_session == h->session_id) {
		/* Only a new incarnation of the peer replaces a live session;
		 * the same one calling again waits until this side sees the
		 * old connection die. */
		rn_handshake_refuse(c, RN_REFUSE_DUPLICATE, "already connected "
				    "to that session");
		return;
	}
	if (ep != NULL && ep->configured && !rn_conn_from_address(c, ep->address)) {
		/* Not proof of identity, but a stray process elsewhere cannot
		 * take over a configured peer's endpoint by its name. */
		rn_handshake_refuse(c, RN_REFUSE_NAME, "that name is configured at another "
		       "address");
		return;
	}
	if (ep == NULL)
		ep = rn_ep_add(pl, h->name);   /* a peer we did not configure */
	if (ep == NULL) {
		rn_handshake_refuse(c, RN_REFUSE_RESOURCES, "endpoint table full");
		return;
	}
	if (rn_ep_worker_out(pl, ep)) {
		/* Said once to the caller, who stops calling for a while. */
		rn_handshake_refuse(c, RN_REFUSE_RESOURCES, "this node's worker for it "
		       "failed; it needs a restart");
		return;
	}
	if (lost_the_race(pl, c, ep))
		return;
	if (ep->conn != NULL) {
		/* The peer calls again: it gave up on the old connection. */
		RN_PLANE_LOG(NOTICE, "endpoint %s: the peer called again; "
			     "replacing its connection", ep->name);
		rn_ep_close_conn(ep->conn);
		rn_ep_retire_qps(pl, ep);
	}
	if (ep->peer_session != 0 && ep->peer_session != h->session_id) {
		RN_PLANE_LOG(NOTICE, "endpoint %s: peer restarted (session "
			     "%016lx -> %016lx)", ep->name,
			     (unsigned long)ep->peer_session,
			     (unsigned long)h->session_id);
		rn_ep_retire_qps(pl, ep);
	}
	if (!ep->configured)
		snprintf(ep->address, sizeof(ep->address), "%s", c->peer);
	ep->conn = c;
	c->ep = ep;
	rn_conn_enter(c, RN_CONN_SERVING);
	ep->peer_session = h->session_id;
	ep->peer_generation = h->generation;
	ep->peer_caps = h->caps;
	if (ep->state != RN_EP_CONNECTING && ep->state != RN_EP_RECONNECTING)
		rn_ep_set_state(pl, ep, ep->state == RN_EP_IDLE ||
				 ep->state == RN_EP_CLOSED ? RN_EP_CONNECTING :
				 RN_EP_RECONNECTING, "the peer called");
	if (ep->req == NULL)   /* no bay for a caller without the channel */
		rn_ep_open_qps(pl, ep, (h->caps & RN_CAP_NATIVE_NOTIFY) != 0);
	if (ep->req == NULL)
		return;   /* out of memory: rn_ep_open_qps failed the endpoint */
	rn_handshake_side(h, &ep->req->remote);
	why = bind_wire(pl, c, &ep->req->remote.addr);
	if (why != NULL) {
		rn_ep_fail(pl, ep, why);
		return;
	}
	ep->serving = true;
	if (ep->qps_open)
		rn_ep_connect_qps(pl, ep);
}

static void
on_accept(struct rn_plane *pl, struct rn_conn *c,
	  const struct rn_proto_hello *h)
{
	struct rn_endpoint *ep = c->ep;
	const char *bound;
	char why[128];

	if ((h->caps & ~RN_CAP_KNOWN) != 0 || strcmp(h->name, ep->name) != 0 ||
	    !rn_handshake_has_data_qp(h) ||
	    (rn_hs_auth_on(&pl->auth) &&
	     h->session_id != c->auth.peer_session)) {
		snprintf(why, sizeof(why), "ACCEPT from '%s' with capabilities "
			 "0x%x: not the peer '%s' this side knows", h->name,
			 h->caps, ep->name);
		rn_ep_fail(pl, ep, why);
		return;
	}
	if (ep->peer_session != 0 && ep->peer_session != h->session_id)
		RN_PLANE_LOG(NOTICE, "endpoint %s: peer restarted (session "
			     "%016lx -> %016lx)", ep->name,
			     (unsigned long)ep->peer_session,
			     (unsigned long)h->session_id);
	ep->peer_session = h->session_id;
	ep->peer_generation = h->generation;
	ep->peer_caps = h->caps;
	rn_handshake_side(h, &ep->req->remote);
	bound = bind_wire(pl, c, &ep->req->remote.addr);
	if (bound != NULL) {
		rn_ep_fail(pl, ep, bound);
		return;
	}
	rn_conn_enter(c, RN_CONN_CONNECTING_QPS);
	rn_ep_connect_qps(pl, ep);
}

static void
on_refuse(struct rn_plane *pl, struct rn_conn *c, uint16_t code,
	  const char *text)
{
	struct rn_endpoint *ep = c->ep;
	char why[RN_PROTO_REASON_MAX + 48];

	if (code == RN_REFUSE_DUPLICATE &&
	    strcmp(ep->name, pl->cfg->dataplane.name) < 0) {
		/* The peer's own call to us wins (its name sorts first): wait
		 * for it. From a peer that sorts after us it is a fault. */
		RN_PLANE_LOG(INFO, "endpoint %s: simultaneous connect, waiting "
			     "for the peer's call", ep->name);
		rn_ep_close_conn(c);
		ep->retry_at_ms = rn_now_ms() + pl->cfg->control.connect_timeout_ms;
		return;
	}
	snprintf(why, sizeof(why), "refused by the peer: %s (%s)", text,
		 rn_proto_refusal_name(code));
	rn_ep_fail(pl, ep, why);
}

/* Our call may go on: make our QPs, or send HELLO if they are made. */
static void
open_or_hello(struct rn_plane *pl, struct rn_conn *c)
{
	struct rn_endpoint *ep = c->ep;

	if (ep->req == NULL)
		/* The peer's channels are not known yet: offer ours. HELLO
		 * goes when they are made. */
		rn_ep_open_qps(pl, ep, true);
	else if (ep->qps_open)
		rn_ep_send_hello(pl, c, RN_PROTO_HELLO);
}

/* A whole frame on c. */
static int
on_frame(struct rn_conn *c, const struct rn_proto_frame *f)
{
	struct rn_plane *pl = rn_plane_of(c);
	struct rn_endpoint *ep = c->ep;

	switch (rn_handshake_frame(c, f, ep != NULL && ep->conn == c,
				   ep != NULL ? ep->peer_generation : 0,
				   &pl->auth)) {
	case RN_HS_AUTHED:
		open_or_hello(pl, c);
		break;
	case RN_HS_HELLO:
		on_hello(pl, c, &f->hello);
		break;
	case RN_HS_ACCEPT:
		on_accept(pl, c, &f->hello);
		break;
	case RN_HS_REFUSED:
		on_refuse(pl, c, f->refuse.code, f->refuse.text);
		break;
	case RN_HS_READY:
		rn_ep_established(pl, ep);
		break;
	case RN_HS_CLOSE:
		rn_ep_closed_by_peer(pl, ep);
		break;
	case RN_HS_NOTIFY:
		/* Only an established connection's NOTIFY gets here: a held
		 * one comes back the same way, as the classing has no side
		 * effects. */
		if (rn_notify_tcp_held(pl, ep, f))
			return -EAGAIN;   /* no room in the ring or the quota */
		rn_notify_tcp_receive(pl, ep, f);
		break;
	case RN_HS_NOTIFY_QP:
		rn_chan_add_frame(pl, ep, f);
		break;
	case RN_HS_DESC_REQUEST:
		rn_desc_serve(pl, c, f);
		break;
	case RN_HS_DESC_ANSWER:
		rn_desc_answered(pl, ep, f);
		break;
	case RN_HS_NONE:
		break;
	}
	return 0;
}

/* c failed: its endpoint (if it is its own) fails with it; a connection
 * without one is closed with a log line naming the peer. */
static void
on_failed(struct rn_conn *c, const char *why)
{
	if (c->ep != NULL && c->ep->conn == c) {
		rn_ep_fail(rn_plane_of(c), c->ep, why);
	} else {
		char more[48];

		if (rn_handshake_log_allowed(more, sizeof(more)))
			RN_PLANE_LOG(NOTICE, "control connection from %s: %s%s",
				     c->peer, why, more);
		rn_conn_close(c);
	}
}

/* Our call's TCP connection is up: with a secret, the callee proves it
 * first (RN_HS_AUTHED); no QP is made for a callee that did not. */
static void
on_connected(struct rn_conn *c)
{
	struct rn_plane *pl = rn_plane_of(c);

	if (rn_hs_auth_on(&pl->auth))
		rn_handshake_challenge(c, &pl->auth, c->ep->name);
	else
		open_or_hello(pl, c);
}

const struct rn_conn_ops rn_ep_conn_ops = {
	.frame = on_frame,
	.connected = on_connected,
	.failed = on_failed,
};
