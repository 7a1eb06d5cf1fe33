/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handshake, frame by frame. The caller sends HELLO (its QPs in INIT);
 * the callee creates and connects its QPs and answers ACCEPT; the caller
 * connects its QPs and sends READY. A frame that makes no sense in the
 * connection's phase closes the connection, with one log line.
 *
 * Simultaneous connect: when a HELLO arrives while our own call to the
 * same peer is still in its handshake, the call of the node whose name
 * sorts first survives, on both sides, so exactly one endpoint remains.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "plane.h"

struct rn_ep_qp_info
rn_handshake_qp_info(const struct rn_proto_qp *q)
{
	return (struct rn_ep_qp_info){
		.kind = q->kind, .qpn = q->qpn, .psn = q->psn,
		.recv_depth = q->recv_depth, .slot_size = q->slot_size,
		.credits = q->credits,
	};
}

struct rn_proto_qp
rn_handshake_qp_record(const struct rn_ep_qp_info *q)
{
	return (struct rn_proto_qp){
		.kind = q->kind, .qpn = q->qpn, .psn = q->psn,
		.recv_depth = q->recv_depth, .slot_size = q->slot_size,
		.credits = q->credits,
	};
}

static void
side_from_hello(const struct rn_proto_hello *h, struct rn_ep_side *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", h->name);
	s->session_id = h->session_id;
	s->generation = h->generation;
	memcpy(s->addr.gid, h->gid, sizeof(s->addr.gid));
	s->addr.lid = h->lid;
	s->addr.mtu = h->mtu;
	s->n_qps = h->n_qps;
	s->probe_addr = h->probe_addr;
	s->probe_rkey = h->probe_rkey;
	for (uint8_t i = 0; i < h->n_qps; i++)
		s->qps[i] = rn_handshake_qp_info(&h->qps[i]);
}

void
rn_handshake_send_hello(struct rn_conn *c, uint8_t type)
{
	const struct rn_ep_side *me = &c->ep->req->local;
	struct rn_proto_hello h = {
		.session_id = me->session_id,
		.generation = me->generation,
		.caps = RN_CAP_TCP_FALLBACK |
			(c->pl->cfg->notify.enabled ? RN_CAP_NOTIFY_ENABLED : 0),
		.lid = me->addr.lid,
		.mtu = me->addr.mtu,
		.n_qps = (uint8_t)me->n_qps,
		.probe_addr = me->probe_addr,
		.probe_rkey = me->probe_rkey,
	};
	uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_HELLO_MAX];

	snprintf(h.name, sizeof(h.name), "%s", me->name);
	memcpy(h.gid, me->addr.gid, sizeof(h.gid));
	for (uint32_t i = 0; i < me->n_qps; i++) {
		const struct rn_ep_qp_info *q = &me->qps[i];

		h.qps[i] = rn_handshake_qp_record(q);
		if (q->kind == RN_EP_QP_NOTIFY)
			h.caps |= RN_CAP_NATIVE_NOTIFY;
	}
	rn_conn_send(c, frame, rn_proto_encode_hello(frame, sizeof(frame), type, &h));
	if (c->dead)
		return;
	rn_conn_enter(c, type == RN_PROTO_HELLO ? RN_CONN_WAIT_ACCEPT :
					       RN_CONN_WAIT_READY);
}

/* Refuse and close a connection that has no endpoint of its own. */
static void
refuse(struct rn_conn *c, uint16_t code, const char *text)
{
	RN_PLANE_LOG(NOTICE, "refused %s: %s (%s)", c->peer, text,
		     rn_proto_refusal_name(code));
	rn_conn_send_refuse(c, code, text);
	rn_conn_close(c);
}

/* Every endpoint needs a data QP: the probe, and RDMA, run over QP 0. */
static bool
has_data_qp(const struct rn_proto_hello *h)
{
	for (uint8_t i = 0; i < h->n_qps; i++)
		if (h->qps[i].kind == RN_PROTO_QP_DATA)
			return true;
	return false;
}

/*
 * The IP address in the first len characters of text, as an IPv6 address
 * (an IPv4 one mapped, ::ffff:a.b.c.d, as a dual-stack listener sees it).
 */
static bool
ip_of(const char *text, size_t len, struct in6_addr *out)
{
	char buf[INET6_ADDRSTRLEN];
	struct in_addr v4;

	if (len >= sizeof(buf))
		return false;
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, out) == 1)
		return true;
	if (inet_pton(AF_INET, buf, &v4) != 1)
		return false;
	memset(out, 0, sizeof(*out));
	out->s6_addr[10] = 0xff;
	out->s6_addr[11] = 0xff;
	memcpy(&out->s6_addr[12], &v4, sizeof(v4));
	return true;
}

/*
 * The connection ("ADDRESS port N") comes from the configured address,
 * however either is written (0:0::1 and ::1 are one address, and so are
 * 10.0.0.1 and ::ffff:10.0.0.1).
 */
static bool
from_configured_address(const struct rn_conn *c, const struct rn_endpoint *ep)
{
	const char *end = strstr(c->peer, " port ");
	struct in6_addr from, configured;

	return end != NULL && ip_of(c->peer, (size_t)(end - c->peer), &from) &&
	       ip_of(ep->address, strlen(ep->address), &configured) &&
	       memcmp(&from, &configured, sizeof(from)) == 0;
}

static bool
caps_understood(struct rn_conn *c, uint32_t caps)
{
	char text[96];

	if ((caps & ~RN_CAP_KNOWN) == 0)
		return true;
	snprintf(text, sizeof(text), "capabilities 0x%x not understood; this "
		 "side knows 0x%x", caps, RN_CAP_KNOWN);
	refuse(c, RN_REFUSE_CAPABILITY, text);
	return false;
}

/* A HELLO for ep while ep->conn, our own call, is still in its handshake. */
static bool
lost_the_race(struct rn_conn *c, struct rn_endpoint *ep)
{
	struct rn_conn *mine = ep->conn;

	if (mine == NULL || mine == c || !mine->outbound ||
	    mine->phase == RN_CONN_ESTABLISHED)
		return false;
	if (strcmp(c->pl->cfg->dataplane.name, ep->name) < 0) {
		refuse(c, RN_REFUSE_DUPLICATE, "simultaneous connect: the call "
		       "of the node whose name sorts first stays");
		return true;
	}
	/* Theirs stays: drop our call, keep our QPs for serving theirs,
	 * unless they are already being connected to its ACCEPT. */
	RN_PLANE_LOG(INFO, "endpoint %s: simultaneous connect, serving the "
		     "peer's call", ep->name);
	if (mine->phase >= RN_CONN_CONNECTING_QPS)
		rn_ep_retire_qps(c->pl, ep);
	rn_conn_close(mine);
	return false;
}

static void
on_hello(struct rn_conn *c, const struct rn_proto_hello *h)
{
	struct rn_plane *pl = c->pl;
	struct rn_endpoint *ep;

	if (!caps_understood(c, h->caps))
		return;
	if (!has_data_qp(h)) {
		refuse(c, RN_REFUSE_PROTOCOL, "no data QP");
		return;
	}
	if (strcmp(h->name, pl->cfg->dataplane.name) == 0) {
		refuse(c, RN_REFUSE_NAME, "that is this node's own name");
		return;
	}
	ep = rn_ep_find(pl, h->name);
	if (ep != NULL && ep->configured && !from_configured_address(c, ep)) {
		/* Not proof of identity, but a stray process elsewhere cannot
		 * take over a configured peer's endpoint by its name. */
		refuse(c, RN_REFUSE_NAME, "that name is configured at another "
		       "address");
		return;
	}
	if (ep == NULL)
		ep = rn_ep_add(pl, h->name);   /* a peer we did not configure */
	if (ep == NULL) {
		refuse(c, RN_REFUSE_RESOURCES, "endpoint table full");
		return;
	}
	if (plane_worker_failed(pl, ep)) {
		/* Said once to the caller, who stops calling for a while. */
		refuse(c, RN_REFUSE_RESOURCES, "this node's worker for it "
		       "failed; it needs a restart");
		return;
	}
	if (lost_the_race(c, ep))
		return;
	if (ep->conn != NULL) {
		/* The peer calls again: it gave up on the old connection. */
		struct rn_conn *old = ep->conn;

		RN_PLANE_LOG(NOTICE, "endpoint %s: the peer called again; "
			     "replacing its connection", ep->name);
		rn_conn_close(old);
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
	side_from_hello(h, &ep->req->remote);
	ep->serving = true;
	if (ep->qps_open)
		rn_ep_connect_qps(pl, ep);
}

static void
on_accept(struct rn_conn *c, const struct rn_proto_hello *h)
{
	struct rn_endpoint *ep = c->ep;
	char why[128];

	if ((h->caps & ~RN_CAP_KNOWN) != 0 || strcmp(h->name, ep->name) != 0 ||
	    !has_data_qp(h)) {
		snprintf(why, sizeof(why), "ACCEPT from '%s' with capabilities "
			 "0x%x: not the peer '%s' this side knows", h->name,
			 h->caps, ep->name);
		rn_ep_fail(c->pl, ep, why);
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
	side_from_hello(h, &ep->req->remote);
	rn_conn_enter(c, RN_CONN_CONNECTING_QPS);
	rn_ep_connect_qps(c->pl, ep);
}

static void
on_refuse(struct rn_conn *c, uint16_t code, const char *text)
{
	struct rn_endpoint *ep = c->ep;
	char why[RN_PROTO_REASON_MAX + 48];

	if (code == RN_REFUSE_DUPLICATE &&
	    strcmp(ep->name, c->pl->cfg->dataplane.name) < 0) {
		/* The peer's own call to us wins (its name sorts first): wait
		 * for it. From a peer that sorts after us it is a fault. */
		RN_PLANE_LOG(INFO, "endpoint %s: simultaneous connect, waiting "
			     "for the peer's call", ep->name);
		rn_conn_close(c);
		ep->retry_at_ms = rn_now_ms() + c->pl->cfg->control.connect_timeout_ms;
		return;
	}
	snprintf(why, sizeof(why), "refused by the peer: %s (%s)", text,
		 rn_proto_refusal_name(code));
	rn_ep_fail(c->pl, ep, why);
}

static void
out_of_order(struct rn_conn *c, uint8_t type)
{
	char why[96];

	snprintf(why, sizeof(why), "bad frame: %s out of order",
		 rn_proto_type_name(type));
	rn_conn_fail(c, why);
}

void
rn_handshake_frame(struct rn_conn *c, const struct rn_proto_frame *f)
{
	if (f->type == RN_PROTO_HEARTBEAT && c->ep != NULL)
		return;   /* liveness only: last_rx_ms is already updated */
	switch (c->phase) {
	case RN_CONN_WAIT_HELLO:
		if (f->type == RN_PROTO_HELLO) {
			on_hello(c, &f->hello);
			return;
		}
		break;
	case RN_CONN_WAIT_ACCEPT:
		if (f->type == RN_PROTO_ACCEPT) {
			on_accept(c, &f->hello);
			return;
		}
		if (f->type == RN_PROTO_REFUSE) {
			on_refuse(c, f->refuse.code, f->refuse.text);
			return;
		}
		break;
	case RN_CONN_WAIT_READY:
		if (f->type == RN_PROTO_READY &&
		    f->ready_generation == c->ep->peer_generation) {
			c->phase = RN_CONN_ESTABLISHED;
			rn_ep_established(c->pl, c->ep);
			return;
		}
		break;
	case RN_CONN_ESTABLISHED:
		if (f->type == RN_PROTO_CLOSE) {
			rn_ep_closed_by_peer(c->pl, c->ep);
			return;
		}
		if (f->type == RN_PROTO_NOTIFY) {
			rn_notify_tcp_receive(c->pl, c->ep, f);
			return;
		}
		if (f->type == RN_PROTO_NOTIFY_QP) {
			rn_chan_add_frame(c->pl, c->ep, f);
			return;
		}
		break;
	default:
		break;
	}
	if (f->type == RN_PROTO_CLOSE && c->ep != NULL && c->ep->conn == c) {
		rn_ep_closed_by_peer(c->pl, c->ep);
		return;
	}
	out_of_order(c, f->type);
}
