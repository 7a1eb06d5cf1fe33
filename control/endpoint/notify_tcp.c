/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TCP fallback: notifications as NOTIFY frames on the endpoint's
 * control connection (no connection per notification), for a peer without
 * a native channel or a message over a slot, when [notify] oob_fallback
 * allows. Same frame, same size rule, in order on that connection.
 * Backpressure both ways, as credits give the native channel: a sender
 * whose queue to the peer is long gets -EAGAIN, and a receiver whose
 * application ring is full, or whose peer holds its quota of it
 * (RN_NOTIFY_TCP_PEER_*), stops reading that connection (conn.c).
 * Notifications to this node itself take no connection: they go straight
 * to the application's ring.
 */
#include <errno.h>
#include <stdlib.h>

#include "rn_notify_engine.h"
#include "endpoint_pvt.h"
#include "notify_tcp_pvt.h"

/* NOTIFY frames stop queueing here (-EAGAIN: the peer's application is not
 * taking them), well before RN_CONN_TX_MAX would cut the connection off. */
#define RN_CONN_NOTIFY_TX_MAX (1u << 20)

/* A send's fate (0: it left), to the application; logged when lost. */
static void
report(struct rn_plane *pl, uint64_t cookie)
{
	if (rn_notify_complete(pl->completions, cookie, 0))
		return;
	pl->reports_dropped++;
	RN_PLANE_LOG(WARNING, "completion report dropped: the application is "
		     "not taking them (%lu so far)",
		     (unsigned long)pl->reports_dropped);
}

/* Room for a frame of len bytes from ep_index's peer, quota and ring. */
static bool
has_room(const struct rn_plane *pl, uint32_t ep_index, uint64_t len)
{
	const struct rn_notify_tcp_quota *q = &pl->tcp_quota;

	return pl->tcp_in != NULL && !rte_ring_full(pl->tcp_in) &&
	       __atomic_load_n(&q->entries[ep_index], __ATOMIC_RELAXED) <
	       RN_NOTIFY_TCP_PEER_ENTRIES &&
	       __atomic_load_n(&q->bytes[ep_index], __ATOMIC_RELAXED) + len <=
	       RN_NOTIFY_TCP_PEER_BYTES &&
	       __atomic_load_n(&q->total_bytes, __ATOMIC_RELAXED) + len <=
	       RN_NOTIFY_TCP_BYTES;
}

/* Count a delivery against its peer's quota (add) or give it back. */
static void
account(struct rn_notify_tcp_quota *q, uint32_t ep_index, uint64_t len,
	bool add)
{
	if (add) {
		__atomic_fetch_add(&q->entries[ep_index], 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&q->bytes[ep_index], len, __ATOMIC_RELAXED);
		__atomic_fetch_add(&q->total_bytes, len, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_sub(&q->entries[ep_index], 1, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&q->bytes[ep_index], len, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&q->total_bytes, len, __ATOMIC_RELAXED);
	}
}

void
rn_plane_tcp_release(struct rn_plane *pl, const struct rn_notify_delivery *d)
{
	account(&pl->tcp_quota, d->ep_index, d->len, false);
	free(d->frame);
}

/*
 * A copy of the frame on the application's ring, as if it had come in,
 * sent after native_before native ones of this incarnation.
 */
static int
deliver(struct rn_plane *pl, struct rn_endpoint *ep, uint32_t native_before,
	const void *name, uint32_t name_len, const void *msg, uint32_t msg_len)
{
	uint64_t len = rn_notify_frame_size(name_len, msg_len);
	struct rn_notify_delivery d = { .len = (uint32_t)len,
					.ep_index = (uint16_t)ep->index,
					.index = RN_NOTIFY_VIA_TCP,
					.seq = native_before,
					.pos = ep->tcp_received,
					.generation = ep->generation };

	if (!has_room(pl, ep->index, len))
		return -EAGAIN;
	d.frame = malloc(len);
	if (d.frame == NULL)
		return -ENOMEM;
	/* Written before it is enqueued: the application may take it at once.
	 * Counted first: it may also give it back at once. */
	rn_notify_frame_write(d.frame, name, name_len, msg, msg_len);
	account(&pl->tcp_quota, ep->index, len, true);
	if (rte_ring_sp_enqueue_elem(pl->tcp_in, &d, sizeof(d)) != 0) {
		account(&pl->tcp_quota, ep->index, len, false);
		free(d.frame);
		return -EAGAIN;
	}
	ep->tcp_received++;
	return 0;
}

/* Native ones sent after it wait for it at the receiver: count it. */
static void
queued(struct rn_endpoint *ep)
{
	__atomic_store_n(&ep->req->tcp_queued, ep->req->tcp_queued + 1,
			 __ATOMIC_RELEASE);
}

/* To this node itself, without a native channel: straight to the ring,
 * and a full ring is backpressure, as a peer's missing credit would be. */
static void
deliver_to_self(struct rn_plane *pl, struct rn_endpoint *ep,
		struct rn_notify_request *req)
{
	const struct rn_notify_out *o = &req->out[0];
	int rc = deliver(pl, ep, req->native_before, o->name, o->name_len,
			 o->msg, o->msg_len);

	if (rc == 0) {
		queued(ep);
		if (req->flags & RN_NOTIFY_WANT_COMPLETION)
			report(pl, o->cookie);
	}
	rn_notify_answer(req, rc);
}

void
rn_notify_tcp_send(struct rn_plane *pl, void *request)
{
	struct rn_notify_request *req = request;
	const struct rn_notify_out *o = &req->out[0];   /* the only one here */
	struct rn_endpoint *ep = req->ep_index < pl->n_eps ?
				 pl->eps[req->ep_index] : NULL;
	size_t n;

	/* The incarnation it was sent in, or it may not wait for the right
	 * native ones (or for ones that never come). */
	if (ep == NULL || ep->req == NULL ||
	    ep->req->local.generation != req->generation) {
		rn_notify_answer(req, -ENOTCONN);
		return;
	}
	if (ep->self && ep->state == RN_EP_CONNECTED) {
		deliver_to_self(pl, ep, req);
		return;
	}
	if (ep->conn == NULL || ep->conn->phase != RN_CONN_ESTABLISHED) {
		rn_notify_answer(req, -ENOTCONN);
		return;
	}
	if (pl->notify_frame == NULL &&
	    (pl->notify_frame = malloc(RN_CONN_RX_MAX)) == NULL) {
		rn_notify_answer(req, -ENOMEM);
		return;
	}
	n = rn_proto_encode_notify(pl->notify_frame, RN_CONN_RX_MAX,
				   req->native_before, o->name, o->name_len,
				   o->msg, o->msg_len);
	if (rn_conn_queued(ep->conn) + n > RN_CONN_NOTIFY_TX_MAX) {
		/* The peer's application is behind: backpressure, as a
		 * missing credit is on the native channel. */
		rn_notify_answer(req, -EAGAIN);
		return;
	}
	rn_conn_send(ep->conn, pl->notify_frame, n);
	if (ep->conn == NULL) {   /* the queue overflowed: it failed */
		rn_notify_answer(req, -ENOTCONN);
		return;
	}
	/* Queued on the connection, in order: that is all TCP says. */
	queued(ep);
	if (req->flags & RN_NOTIFY_WANT_COMPLETION)
		report(pl, o->cookie);
	rn_notify_answer(req, 0);
}

bool
rn_notify_tcp_held(const struct rn_plane *pl, const struct rn_endpoint *ep,
		   const struct rn_proto_frame *f)
{
	/* Without an endpoint the handshake refuses the frame. */
	return ep != NULL && pl->tcp_in != NULL &&
	       !has_room(pl, ep->index, rn_notify_frame_size(
			 f->notify.name_len, f->notify.msg_len));
}

void
rn_notify_tcp_receive(struct rn_plane *pl, struct rn_endpoint *ep,
		   const struct rn_proto_frame *f)
{
	if (deliver(pl, ep, f->notify.native_before, f->notify.name,
		    f->notify.name_len, f->notify.msg, f->notify.msg_len) == 0)
		return;
	/* Out of memory: the frame cannot be kept (a full ring or quota
	 * never gets here: the connection holds the frame back instead). Its place is
	 * taken all the same: the next one is the sender's next. */
	ep->tcp_received++;
	pl->tcp_dropped++;
	RN_PLANE_LOG(ERR, "endpoint %s: notification over TCP dropped: out of "
		     "memory (%lu so far)", ep->name,
		     (unsigned long)pl->tcp_dropped);
}
