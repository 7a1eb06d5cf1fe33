/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handshake's frames: what each frame means in each phase of a
 * connection, and the frames it sends. The caller sends HELLO (its QPs in
 * INIT); the callee creates and connects its QPs and answers ACCEPT; the
 * caller connects its QPs and sends READY. A frame that makes no sense in
 * the connection's phase closes the connection, with one log line. What a
 * frame means for an endpoint is the caller's to decide (ep_handshake.c):
 * this layer only names it.
 */
#include <stdio.h>
#include <string.h>

#include "handshake_pvt.h"
#include "log_pvt.h"

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

void
rn_handshake_side(const struct rn_proto_hello *h, struct rn_ep_side *s)
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
rn_handshake_send_hello(struct rn_conn *c, uint8_t type,
			const struct rn_ep_side *me, bool notify_on)
{
	struct rn_proto_hello h = {
		.session_id = me->session_id,
		.generation = me->generation,
		.caps = RN_CAP_TCP_FALLBACK |
			(notify_on ? RN_CAP_NOTIFY_ENABLED : 0),
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

void
rn_handshake_send_ready(struct rn_conn *c, uint32_t generation)
{
	uint8_t frame[RN_PROTO_HEADER_SIZE + 4];

	rn_conn_send(c, frame, rn_proto_encode_ready(frame, sizeof(frame),
						     generation));
	if (!c->dead)
		c->phase = RN_CONN_ESTABLISHED;
}

void
rn_handshake_refuse(struct rn_conn *c, uint16_t code, const char *text)
{
	RN_PLANE_LOG(NOTICE, "refused %s: %s (%s)", c->peer, text,
		     rn_proto_refusal_name(code));
	rn_conn_send_refuse(c, code, text);
	rn_conn_close(c);
}

bool
rn_handshake_has_data_qp(const struct rn_proto_hello *h)
{
	for (uint8_t i = 0; i < h->n_qps; i++)
		if (h->qps[i].kind == RN_PROTO_QP_DATA)
			return true;
	return false;
}

static bool
caps_understood(struct rn_conn *c, uint32_t caps)
{
	char text[96];

	if ((caps & ~RN_CAP_KNOWN) == 0)
		return true;
	snprintf(text, sizeof(text), "capabilities 0x%x not understood; this "
		 "side knows 0x%x", caps, RN_CAP_KNOWN);
	rn_handshake_refuse(c, RN_REFUSE_CAPABILITY, text);
	return false;
}

static void
out_of_order(struct rn_conn *c, uint8_t type)
{
	char why[96];

	snprintf(why, sizeof(why), "bad frame: %s out of order",
		 rn_proto_type_name(type));
	rn_conn_fail(c, why);
}

enum rn_handshake_news
rn_handshake_frame(struct rn_conn *c, const struct rn_proto_frame *f,
		   bool owner, uint32_t peer_generation)
{
	if (f->type == RN_PROTO_HEARTBEAT && c->ep != NULL)
		return RN_HS_NONE;   /* liveness only: last_rx_ms is updated */
	switch (c->phase) {
	case RN_CONN_WAIT_HELLO:
		if (f->type != RN_PROTO_HELLO)
			break;
		if (!caps_understood(c, f->hello.caps))
			return RN_HS_NONE;
		if (!rn_handshake_has_data_qp(&f->hello)) {
			rn_handshake_refuse(c, RN_REFUSE_PROTOCOL, "no data QP");
			return RN_HS_NONE;
		}
		return RN_HS_HELLO;
	case RN_CONN_WAIT_ACCEPT:
		if (f->type == RN_PROTO_ACCEPT)
			return RN_HS_ACCEPT;
		if (f->type == RN_PROTO_REFUSE)
			return RN_HS_REFUSED;
		break;
	case RN_CONN_WAIT_READY:
		if (f->type == RN_PROTO_READY &&
		    f->ready_generation == peer_generation) {
			c->phase = RN_CONN_ESTABLISHED;
			return RN_HS_READY;
		}
		break;
	case RN_CONN_ESTABLISHED:
		if (f->type == RN_PROTO_CLOSE)
			return RN_HS_CLOSE;
		if (f->type == RN_PROTO_NOTIFY)
			return RN_HS_NOTIFY;
		if (f->type == RN_PROTO_NOTIFY_QP)
			return RN_HS_NOTIFY_QP;
		break;
	default:
		break;
	}
	if (f->type == RN_PROTO_CLOSE && owner)
		return RN_HS_CLOSE;
	out_of_order(c, f->type);
	return RN_HS_NONE;
}
