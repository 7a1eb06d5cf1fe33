/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TCP fallback: notifications as NOTIFY frames on the endpoint's
 * control connection (no connection per notification), for a peer without
 * a native channel or a message over a slot, when [notify] oob_fallback
 * allows. Same frame, same size rule, in order on that connection.
 */
#include <errno.h>
#include <stdlib.h>

#include "notify_engine.h"
#include "plane.h"

void
notify_tcp_send(struct rn_plane *pl, void *request)
{
	struct rn_notify_request *req = request;
	struct rn_endpoint *ep = req->ep_slot < pl->n_eps ?
				 pl->eps[req->ep_slot] : NULL;
	size_t n;

	if (ep == NULL || ep->conn == NULL ||
	    ep->conn->phase != RN_CONN_ESTABLISHED) {
		rn_notify_answer(req, -ENOTCONN);
		return;
	}
	if (pl->notify_frame == NULL &&
	    (pl->notify_frame = malloc(RN_CONN_RX_MAX)) == NULL) {
		rn_notify_answer(req, -ENOMEM);
		return;
	}
	n = rn_proto_encode_notify(pl->notify_frame, RN_CONN_RX_MAX, req->name,
				   req->name_len, req->msg, req->msg_len);
	conn_send(ep->conn, pl->notify_frame, n);
	if (ep->conn == NULL) {   /* the queue overflowed: it failed */
		rn_notify_answer(req, -ENOTCONN);
		return;
	}
	/* Handed to the kernel's socket, in order: that is all TCP says. */
	if (req->flags & RN_NOTIFY_WANT_COMPLETION)
		rn_notify_complete(pl->completions, req->cookie, 0);
	rn_notify_answer(req, 0);
}

void
notify_tcp_receive(struct rn_plane *pl, struct rn_endpoint *ep,
		   const struct rn_proto_frame *f)
{
	uint64_t len = rn_notify_frame_size(f->notify.name_len,
					    f->notify.msg_len);
	struct rn_notify_delivery d = { .len = (uint32_t)len,
					.ep_slot = (uint16_t)ep->slot };

	d.frame = malloc(len);
	/* Written before it is enqueued: the application may take it at once. */
	if (d.frame != NULL)
		rn_notify_frame_write(d.frame, f->notify.name,
				      f->notify.name_len, f->notify.msg,
				      f->notify.msg_len);
	if (d.frame == NULL || pl->tcp_in == NULL ||
	    rte_ring_sp_enqueue_elem(pl->tcp_in, &d, sizeof(d)) != 0) {
		free(d.frame);
		pl->tcp_dropped++;
		RN_PLANE_LOG(WARNING, "endpoint %s: notification over TCP "
			     "dropped: the application is not polling (%lu so "
			     "far)", ep->name, (unsigned long)pl->tcp_dropped);
	}
}
