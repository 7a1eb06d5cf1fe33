/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A native channel added to a connected endpoint. An endpoint that
 * connected while every bay of notification buffers was taken (on either
 * side) has none, and its notifications go over TCP. When a bay comes back
 * on a worker, the control thread offers a native channel to each of that
 * worker's endpoints that lacks one, over its control connection:
 *
 *   OFFER   my notify QP (in INIT), as in a handshake's QP record
 *   ACCEPT  the peer's, already connected to mine, its receives posted
 *           (or REFUSE: notifications off there, no bay there now, or the
 *           peer offered at the same time and its offer goes first)
 *   READY   mine is connected to the peer's: the peer may send
 *
 * The offering side sends natively once it has connected its QP to the
 * ACCEPTed one; the other once READY came: neither sends before the
 * other's QP can receive. Notifications queued over TCP before the switch
 * still arrive first (the send order across channels,
 * control/notify/notify_order.h). Offers that cross: the one of the node
 * whose name sorts first goes on, the other side answers it. The steps are
 * of one incarnation: a new one starts idle, and frames naming another
 * generation are ignored. Each offer has a number, which its answers and
 * READY repeat: an answer to an offer given up is not taken for another.
 * A peer that does not answer an OFFER within connect_timeout_ms (while
 * its connection is read) gets our bay back, dropped; an ACCEPT that comes
 * after that, or no READY after our ACCEPT, fails the endpoint: a QP is
 * connected to one that is gone, and a reconnection starts both afresh.
 * A peer that refused for want of buffers, or did not answer, is offered
 * again only when room came back from elsewhere than such an offer (else
 * the two would offer and refuse for ever), or when it offers itself.
 * The endpoint to this node itself has no connection and no peer to ask:
 * its new QP is connected to itself, as loop_back() (lifecycle.c) does
 * with the others, and it sends at once.
 *
 * A native channel whose notify QP fails locally closes, the data QPs
 * untouched: CLOSED tells the peer, which sends nothing more into it. Each
 * side's lcore retires its failed channel once drained, and the bay coming
 * back starts an offer as above: a new channel, in the same incarnation.
 */
#include <stdio.h>
#include <string.h>

#include "plane.h"
#include "rn_lcore.h"

/* The side's notify QP record, or NULL. */
static struct rn_ep_qp_info *
notify_qp_of(const struct rn_ep_side *side)
{
	for (uint32_t i = 0; i < side->n_qps; i++)
		if (side->qps[i].kind == RN_EP_QP_NOTIFY)
			return (struct rn_ep_qp_info *)&side->qps[i];
	return NULL;
}

bool
upgrade_native_at_handshake(const struct rn_endpoint *ep)
{
	return ep->req != NULL && notify_qp_of(&ep->req->local) != NULL &&
	       notify_qp_of(&ep->req->remote) != NULL;
}

/* Our notify QP's record, the last of ours. */
static struct rn_proto_qp
our_qp(const struct rn_endpoint *ep)
{
	return qp_record_of(&ep->req->local.qps[ep->req->local.n_qps - 1]);
}

/* Whether ep is still connected (sending may have failed it). */
static bool
live(const struct rn_endpoint *ep)
{
	return ep->state == RN_EP_CONNECTED && (ep->self || ep->conn != NULL);
}

/* One step, of the offer numbered offer (ours, or the peer's we answer). */
static void
send_step(struct rn_endpoint *ep, uint8_t step, uint8_t reason, uint16_t offer)
{
	uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_NOTIFY_QP_FIXED +
		      RN_PROTO_QP_SIZE];
	struct rn_proto_qp qp;
	bool with_qp = step == RN_NOTIFY_QP_OFFER || step == RN_NOTIFY_QP_ACCEPT;

	if (with_qp)
		qp = our_qp(ep);
	if (ep->conn != NULL)
		conn_send(ep->conn, frame, rn_proto_encode_notify_qp(
			frame, sizeof(frame), ep->generation, step, reason,
			offer, with_qp ? &qp : NULL));
}

/*
 * The peer's notify QP, after the QPs the handshake exchanged; in place of
 * the one its HELLO offered, if it did (it dropped that one when ours had
 * none).
 */
static bool
add_peer_qp(struct rn_endpoint *ep, const struct rn_proto_qp *qp)
{
	struct rn_ep_side *remote = &ep->req->remote;
	struct rn_ep_qp_info *slot = notify_qp_of(remote);

	if (slot == NULL && remote->n_qps == RN_EP_MAX_QPS)
		return false;
	if (slot == NULL)
		slot = &remote->qps[remote->n_qps++];
	*slot = qp_info_of(qp);
	return true;
}

/* Answer the peer's offer numbered offer with a refusal. */
static void
refuse(struct rn_endpoint *ep, uint16_t offer, uint8_t reason)
{
	send_step(ep, RN_NOTIFY_QP_REFUSE, reason, offer);
}

static void drop(struct rn_plane *pl, struct rn_endpoint *ep);

static void
start(struct rn_plane *pl, struct rn_endpoint *ep, bool ours)
{
	ep->upgrade = EP_UPGRADE_OPENING;
	if (ours)
		ep->upgrade_offer++;
	ep->upgrade_deadline_ms = rn_now_ms() +
				  pl->cfg->control.connect_timeout_ms;
	ep->upgrade_ours = ours;
	ep->req->notify = true;
	ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_OPEN, ep->req);
}

static void
done(struct rn_plane *pl, struct rn_endpoint *ep)
{
	ep->upgrade = EP_UPGRADE_IDLE;
	ep->native = true;
	ep->info.native_added++;
	RN_PLANE_LOG(NOTICE, "endpoint %s: native notification channel added "
		     "(%s offered it; generation %u)", ep->name,
		     ep->upgrade_ours ? "this side" : "the peer",
		     ep->generation);
	plane_publish(pl, ep);
}

/*
 * Whether we may offer ep a native channel now: only to a peer whose
 * handshake said its notifications are on (it had no bay then, or we had
 * none), never to one that cannot take it.
 */
static bool
wants_native(const struct rn_plane *pl, const struct rn_endpoint *ep)
{
	return pl->cfg->notify.enabled && !ep->native &&
	       (ep->peer_caps & RN_CAP_NOTIFY_ENABLED) &&
	       !ep->peer_native_off && ep->upgrade == EP_UPGRADE_IDLE &&
	       ep->state == RN_EP_CONNECTED && ep->req != NULL &&
	       (ep->self || (ep->conn != NULL &&
			     ep->conn->phase == RN_CONN_ESTABLISHED));
}

void
upgrade_bay_free(struct rn_plane *pl, uint16_t lcore_id, bool after_drop)
{
	for (unsigned int i = 0; i < pl->n_eps; i++) {
		struct rn_endpoint *ep = pl->eps[i];

		if (pl->workers[ep->lcore]->lcore_id != lcore_id ||
		    !wants_native(pl, ep) || (after_drop && ep->peer_declined))
			continue;
		ep->peer_declined = false;
		start(pl, ep, true);
	}
}

/* Our QP is open: offer it, or connect it to the peer's offered one. */
static void
opened(struct rn_plane *pl, struct rn_endpoint *ep, int rc)
{
	struct rn_proto_qp ours;

	if (rc != 0) {
		/* No bay or CQ room after all (another took it). */
		ep->upgrade = EP_UPGRADE_IDLE;
		if (!ep->upgrade_ours)
			send_step(ep, RN_NOTIFY_QP_REFUSE, RN_NOTIFY_QP_NO_ROOM,
				  ep->upgrade_offer);
		return;
	}
	if (ep->self) {   /* its own peer */
		ours = our_qp(ep);
		if (!add_peer_qp(ep, &ours)) {
			drop(pl, ep);
			return;
		}
		ep->upgrade = EP_UPGRADE_CONNECTING;
		ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_CONNECT, ep->req);
		return;
	}
	if (ep->upgrade_ours) {
		ep->upgrade = EP_UPGRADE_OFFERED;
		ep->upgrade_deadline_ms = rn_now_ms() +
					  pl->cfg->control.connect_timeout_ms;
		send_step(ep, RN_NOTIFY_QP_OFFER, 0, ep->upgrade_offer);
		return;
	}
	ep->upgrade = EP_UPGRADE_CONNECTING;
	ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_CONNECT, ep->req);
}

static void
connected(struct rn_plane *pl, struct rn_endpoint *ep, int rc)
{
	char why[96];

	if (rc != 0) {
		snprintf(why, sizeof(why), "added notify QP: connection failed: "
			 "%s", strerror(-rc));
		ep_fail(pl, ep, why);
		return;
	}
	if (!ep->upgrade_ours) {
		ep->upgrade = EP_UPGRADE_ACCEPTED;
		ep->upgrade_deadline_ms = rn_now_ms() +
					  pl->cfg->control.connect_timeout_ms;
		send_step(ep, RN_NOTIFY_QP_ACCEPT, 0, ep->upgrade_offer);
		return;
	}
	/* The peer's QP was connected before it ACCEPTed: send. */
	ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_ENABLE, ep->req);
	send_step(ep, RN_NOTIFY_QP_READY, 0, ep->upgrade_offer);
	if (live(ep))
		done(pl, ep);
}

/*
 * The native channel closed, the data QPs untouched: our notify QP failed
 * locally (by_peer false: the peer is told, and stops sending into it), or
 * the peer's did (by_peer).
 */
static void
channel_closed(struct rn_plane *pl, struct rn_endpoint *ep, bool by_peer)
{
	if (!by_peer)
		send_step(ep, RN_NOTIFY_QP_CLOSED, 0, 0);
	else
		ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_CLOSE, ep->req);
	ep->native = false;
	/* A channel being added that failed already: no READY or connection
	 * may now make it native. It retires; the bay coming back starts
	 * the next try. */
	ep->upgrade = EP_UPGRADE_IDLE;
	RN_PLANE_LOG(WARNING, "endpoint %s: native notification channel "
		     "closed: %s notify QP failed; data QPs unaffected "
		     "(generation %u)", ep->name, by_peer ? "the peer's" : "our",
		     ep->generation);
	plane_publish(pl, ep);
}

void
upgrade_event(struct rn_plane *pl, struct rn_endpoint *ep,
	      const struct rn_lcore_event *ev)
{
	if (ev->type == RN_LCORE_EVENT_NOTIFY_FAILED)
		channel_closed(pl, ep, false);
	else if (ev->type == RN_LCORE_EVENT_NOTIFY_OPENED &&
	    ep->upgrade == EP_UPGRADE_OPENING)
		opened(pl, ep, ev->arg);
	else if (ev->type == RN_LCORE_EVENT_NOTIFY_CONNECTED &&
		 ep->upgrade == EP_UPGRADE_CONNECTING)
		connected(pl, ep, ev->arg);
}

/* Our notify QP goes back, unused: its bay and CQ room with it. */
static void
drop(struct rn_plane *pl, struct rn_endpoint *ep)
{
	ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_DROP, ep->req);
	ep->upgrade = EP_UPGRADE_IDLE;
}

void
upgrade_check(struct rn_plane *pl, struct rn_endpoint *ep, uint64_t now)
{
	if (ep->upgrade == EP_UPGRADE_IDLE)
		return;
	if (ep->conn != NULL && ep->conn->rx_held) {
		/* The answer may wait unread behind a held NOTIFY. */
		ep->upgrade_deadline_ms = now +
					  pl->cfg->control.connect_timeout_ms;
		return;
	}
	if (now < ep->upgrade_deadline_ms)
		return;
	if (ep->upgrade == EP_UPGRADE_OFFERED) {
		RN_PLANE_LOG(WARNING, "endpoint %s: no answer to our offer of a "
			     "native notification channel in %u ms", ep->name,
			     pl->cfg->control.connect_timeout_ms);
		drop(pl, ep);
		ep->peer_declined = true;
	} else if (ep->upgrade == EP_UPGRADE_ACCEPTED) {
		ep_fail(pl, ep, "added notify QP: no READY from the peer");
	}
}

/* The peer offers its notify QP, as its offer number offer. */
static void
offered(struct rn_plane *pl, struct rn_endpoint *ep,
	const struct rn_proto_qp *qp, uint16_t offer)
{
	if (!pl->cfg->notify.enabled || ep->self) {
		refuse(ep, offer, RN_NOTIFY_QP_DISABLED);
		return;
	}
	if (ep->native || ep->upgrade > EP_UPGRADE_OFFERED ||
	    (ep->upgrade != EP_UPGRADE_IDLE &&
	     strcmp(pl->cfg->dataplane.name, ep->name) < 0)) {
		/* Ours goes first, or one is being added already. */
		refuse(ep, offer, RN_NOTIFY_QP_BUSY);
		return;
	}
	if (!add_peer_qp(ep, qp)) {
		refuse(ep, offer, RN_NOTIFY_QP_BUSY);   /* no room for it */
		return;
	}
	ep->peer_declined = false;
	ep->upgrade_offer = offer;
	if (ep->upgrade == EP_UPGRADE_IDLE) {
		start(pl, ep, false);
		return;
	}
	/* Crossing offers, the peer's first: ours answers it. */
	ep->upgrade_ours = false;
	if (ep->upgrade == EP_UPGRADE_OFFERED)
		opened(pl, ep, 0);
	/* Still OPENING: opened() connects it when our QP is there. */
}

void
upgrade_frame(struct rn_plane *pl, struct rn_endpoint *ep,
	      const struct rn_proto_frame *f)
{
	bool ours_now = ep->upgrade == EP_UPGRADE_OFFERED && ep->upgrade_ours &&
			f->notify_qp.offer == ep->upgrade_offer;

	if (ep->req == NULL || f->notify_qp.generation != ep->peer_generation)
		return;   /* of another incarnation */
	switch (f->notify_qp.step) {
	case RN_NOTIFY_QP_OFFER:
		offered(pl, ep, &f->notify_qp.qp, f->notify_qp.offer);
		return;
	case RN_NOTIFY_QP_ACCEPT:
		if (!ours_now) {
			/* Its QP is connected to one of ours we gave up. */
			ep_fail(pl, ep, "added notify QP: an ACCEPT of an offer "
				"given up");
			return;
		}
		if (!add_peer_qp(ep, &f->notify_qp.qp))
			return;
		ep->upgrade = EP_UPGRADE_CONNECTING;
		ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_CONNECT, ep->req);
		return;
	case RN_NOTIFY_QP_REFUSE:
		if (!ours_now)
			return;   /* BUSY: we answer the peer's offer */
		drop(pl, ep);
		ep->peer_native_off = f->notify_qp.reason ==
				      RN_NOTIFY_QP_DISABLED;
		ep->peer_declined = f->notify_qp.reason == RN_NOTIFY_QP_NO_ROOM;
		RN_PLANE_LOG(INFO, "endpoint %s: the peer has no native "
			     "notification channel to add (%s)", ep->name,
			     ep->peer_native_off ? "notifications off" :
			     f->notify_qp.reason == RN_NOTIFY_QP_NO_ROOM ?
			     "no buffers free: it offers one when it has" :
			     "it offers one itself");
		return;
	case RN_NOTIFY_QP_READY:
		if (ep->upgrade != EP_UPGRADE_ACCEPTED || ep->upgrade_ours ||
		    f->notify_qp.offer != ep->upgrade_offer)
			return;
		ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_ENABLE, ep->req);
		done(pl, ep);
		return;
	case RN_NOTIFY_QP_CLOSED:
		if (ep->native)
			channel_closed(pl, ep, true);
		return;
	default:
		return;
	}
}
