/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Channel add: a native channel added to a connected endpoint. An endpoint that
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
 * dataplane/api/notify_order_pvt.h). Offers that cross: the one of the node
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
 * its new QP is connected to itself, as loop_back() (events.c) does
 * with the others, and it sends at once.
 *
 * A native channel whose notify QP fails locally closes, the data QPs
 * untouched: CLOSED tells the peer, which sends nothing more into it. Each
 * side's lcore retires its failed channel once drained, and the bay coming
 * back starts an offer as above: a new channel, in the same incarnation.
 */
#include <stdio.h>
#include <string.h>

#include "channel_add_pvt.h"
#include "commands_pvt.h"
#include "endpoint_pvt.h"
#include "handshake_pvt.h"
#include "rn_lcore.h"

static const char *const state_names[] = {
	[RN_CHAN_ADD_IDLE] = "idle",
	[RN_CHAN_ADD_OPENING] = "opening",
	[RN_CHAN_ADD_OFFERED] = "offered",
	[RN_CHAN_ADD_CONNECTING] = "connecting",
	[RN_CHAN_ADD_ACCEPTED] = "accepted",
};
_Static_assert(RTE_DIM(state_names) == RN_CHAN_ADD_N_STATES,
	       "a name for every state");

#define TO(s) (1u << (s))
/* Where each state may go: every other move is a bug, logged as one. */
static const uint32_t allowed[RN_CHAN_ADD_N_STATES] = {
	[RN_CHAN_ADD_IDLE] = TO(RN_CHAN_ADD_OPENING),
	[RN_CHAN_ADD_OPENING] = TO(RN_CHAN_ADD_IDLE) | TO(RN_CHAN_ADD_OFFERED) |
				TO(RN_CHAN_ADD_CONNECTING),
	[RN_CHAN_ADD_OFFERED] = TO(RN_CHAN_ADD_IDLE) |
				TO(RN_CHAN_ADD_CONNECTING),
	[RN_CHAN_ADD_CONNECTING] = TO(RN_CHAN_ADD_IDLE) |
				   TO(RN_CHAN_ADD_ACCEPTED),
	[RN_CHAN_ADD_ACCEPTED] = TO(RN_CHAN_ADD_IDLE),
};
#undef TO

static const char *
rn_chan_add_state_name(enum rn_chan_add_state state)
{
	return state < RN_CHAN_ADD_N_STATES ? state_names[state] : "?";
}

/*
 * Every change of ep's channel-add state goes through here, logged by
 * name. A state that waits on the peer or the lcore gets
 * connect_timeout_ms from now.
 */
static void
enter(struct rn_plane *pl, struct rn_endpoint *ep,
      enum rn_chan_add_state next, const char *why)
{
	enum rn_chan_add_state now = ep->add.state;

	if (now == next)
		return;
	if ((allowed[now] & (1u << next)) == 0)
		RN_PLANE_LOG(ERR, "endpoint %s: channel add: no move from %s "
			     "to %s (%s)", ep->name, rn_chan_add_state_name(now),
			     rn_chan_add_state_name(next), why);
	RN_PLANE_LOG(INFO, "endpoint %s: channel add %s -> %s (%s; offer %u "
		     "by %s, generation %u)", ep->name,
		     rn_chan_add_state_name(now), rn_chan_add_state_name(next),
		     why, ep->add.offer, ep->add.ours ? "this side" : "the peer",
		     ep->generation);
	ep->add.state = next;
	if (next == RN_CHAN_ADD_OPENING || next == RN_CHAN_ADD_OFFERED ||
	    next == RN_CHAN_ADD_ACCEPTED)
		ep->add.deadline_ms = rn_now_ms() +
				      pl->cfg->control.connect_timeout_ms;
}

/* Our notify QP's record, the last of ours. */
static struct rn_proto_qp
our_qp(const struct rn_endpoint *ep)
{
	return rn_handshake_qp_record(&ep->req->local.qps[ep->req->local.n_qps - 1]);
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
		rn_conn_send(ep->conn, frame, rn_proto_encode_notify_qp(
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
	struct rn_ep_qp_info *place = rn_ep_side_notify_qp(remote);

	if (place == NULL && remote->n_qps == RN_EP_MAX_QPS)
		return false;
	if (place == NULL)
		place = &remote->qps[remote->n_qps++];
	*place = rn_handshake_qp_info(qp);
	return true;
}

/* Answer the peer's offer numbered offer with a refusal. */
static void
refuse(struct rn_endpoint *ep, uint16_t offer, uint8_t reason)
{
	send_step(ep, RN_NOTIFY_QP_REFUSE, reason, offer);
}

/* Our notify QP goes back, unused: its bay and CQ room with it. */
static void
drop(struct rn_plane *pl, struct rn_endpoint *ep, const char *why)
{
	rn_ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_DROP, ep->req);
	enter(pl, ep, RN_CHAN_ADD_IDLE, why);
}

/* Our lcore makes our notify QP: for our offer (ours), or the peer's. */
static void
start(struct rn_plane *pl, struct rn_endpoint *ep, bool ours)
{
	if (ours)
		ep->add.offer++;
	ep->add.ours = ours;
	enter(pl, ep, RN_CHAN_ADD_OPENING, ours ? "a bay came back" :
						  "the peer offered");
	ep->req->notify = true;
	rn_ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_OPEN, ep->req);
}

/* Connect our notify QP to the peer's, whose record is in req->remote. */
static void
connect_qp(struct rn_plane *pl, struct rn_endpoint *ep, const char *why)
{
	enter(pl, ep, RN_CHAN_ADD_CONNECTING, why);
	rn_ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_CONNECT, ep->req);
}

/* Both QPs are connected: ours sends from now on. */
static void
done(struct rn_plane *pl, struct rn_endpoint *ep)
{
	enter(pl, ep, RN_CHAN_ADD_IDLE, "native channel added");
	ep->native = true;
	ep->info.native_added++;
	RN_PLANE_LOG(NOTICE, "endpoint %s: native notification channel added "
		     "(%s offered it; generation %u)", ep->name,
		     ep->add.ours ? "this side" : "the peer",
		     ep->generation);
	rn_ep_publish(pl, ep);
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
	       !ep->peer_native_off && ep->add.state == RN_CHAN_ADD_IDLE &&
	       ep->state == RN_EP_CONNECTED && ep->req != NULL &&
	       (ep->self || (ep->conn != NULL &&
			     ep->conn->phase == RN_CONN_ESTABLISHED));
}

void
rn_chan_add_bay_free(struct rn_plane *pl, uint16_t lcore_id, bool after_drop)
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
		enter(pl, ep, RN_CHAN_ADD_IDLE, "no bay or CQ room");
		if (!ep->add.ours)
			send_step(ep, RN_NOTIFY_QP_REFUSE, RN_NOTIFY_QP_NO_ROOM,
				  ep->add.offer);
		return;
	}
	if (ep->self) {   /* its own peer */
		ours = our_qp(ep);
		if (!add_peer_qp(ep, &ours)) {
			drop(pl, ep, "no room for the QP record");
			return;
		}
		connect_qp(pl, ep, "looping back");
		return;
	}
	if (ep->add.ours) {
		enter(pl, ep, RN_CHAN_ADD_OFFERED, "our QP is open");
		send_step(ep, RN_NOTIFY_QP_OFFER, 0, ep->add.offer);
		return;
	}
	connect_qp(pl, ep, "our QP is open");
}

static void
connected(struct rn_plane *pl, struct rn_endpoint *ep, int rc)
{
	char why[96];

	if (rc != 0) {
		snprintf(why, sizeof(why), "added notify QP: connection failed: "
			 "%s", strerror(-rc));
		rn_ep_fail(pl, ep, why);
		return;
	}
	if (!ep->add.ours) {
		enter(pl, ep, RN_CHAN_ADD_ACCEPTED, "our QP is connected");
		send_step(ep, RN_NOTIFY_QP_ACCEPT, 0, ep->add.offer);
		return;
	}
	/* The peer's QP was connected before it ACCEPTed: send. */
	rn_ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_ENABLE, ep->req);
	send_step(ep, RN_NOTIFY_QP_READY, 0, ep->add.offer);
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
		rn_ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_CLOSE, ep->req);
	ep->native = false;
	/* A channel being added that failed already: no READY or connection
	 * may now make it native. It retires; the bay coming back starts
	 * the next try. */
	enter(pl, ep, RN_CHAN_ADD_IDLE, "the channel closed");
	RN_PLANE_LOG(WARNING, "endpoint %s: native notification channel "
		     "closed: %s notify QP failed; data QPs unaffected "
		     "(generation %u)", ep->name, by_peer ? "the peer's" : "our",
		     ep->generation);
	rn_ep_publish(pl, ep);
}

void
rn_chan_add_event(struct rn_plane *pl, struct rn_endpoint *ep,
		  const struct rn_lcore_event *ev)
{
	if (ev->type == RN_LCORE_EVENT_NOTIFY_FAILED)
		channel_closed(pl, ep, false);
	else if (ev->type == RN_LCORE_EVENT_NOTIFY_OPENED &&
		 ep->add.state == RN_CHAN_ADD_OPENING)
		opened(pl, ep, ev->arg);
	else if (ev->type == RN_LCORE_EVENT_NOTIFY_CONNECTED &&
		 ep->add.state == RN_CHAN_ADD_CONNECTING)
		connected(pl, ep, ev->arg);
}

void
rn_chan_add_check(struct rn_plane *pl, struct rn_endpoint *ep, uint64_t now)
{
	if (ep->add.state == RN_CHAN_ADD_IDLE)
		return;
	if (ep->conn != NULL && ep->conn->rx_held) {
		/* The answer may wait unread behind a held NOTIFY. */
		ep->add.deadline_ms = now + pl->cfg->control.connect_timeout_ms;
		return;
	}
	if (now < ep->add.deadline_ms)
		return;
	if (ep->add.state == RN_CHAN_ADD_OFFERED) {
		RN_PLANE_LOG(WARNING, "endpoint %s: no answer to our offer of a "
			     "native notification channel in %u ms", ep->name,
			     pl->cfg->control.connect_timeout_ms);
		drop(pl, ep, "no answer");
		ep->peer_declined = true;
	} else if (ep->add.state == RN_CHAN_ADD_ACCEPTED) {
		rn_ep_fail(pl, ep, "added notify QP: no READY from the peer");
	}
}

/* The peer offers its notify QP, as its offer number offer. */
static void
offered(struct rn_plane *pl, struct rn_endpoint *ep,
	const struct rn_proto_qp *qp, uint16_t offer)
{
	enum rn_chan_add_state s = ep->add.state;

	if (!pl->cfg->notify.enabled || ep->self) {
		refuse(ep, offer, RN_NOTIFY_QP_DISABLED);
		return;
	}
	if (ep->native || s == RN_CHAN_ADD_CONNECTING ||
	    s == RN_CHAN_ADD_ACCEPTED ||
	    (s != RN_CHAN_ADD_IDLE &&
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
	ep->add.offer = offer;
	if (s == RN_CHAN_ADD_IDLE) {
		start(pl, ep, false);
		return;
	}
	/* Crossing offers, the peer's first: ours answers it. */
	ep->add.ours = false;
	if (s == RN_CHAN_ADD_OFFERED)
		opened(pl, ep, 0);
	/* Still OPENING: opened() connects it when our QP is there. */
}

/* The peer refused our offer: why says whether to offer again. */
static void
refused(struct rn_plane *pl, struct rn_endpoint *ep, uint8_t reason)
{
	drop(pl, ep, "the peer refused");
	ep->peer_native_off = reason == RN_NOTIFY_QP_DISABLED;
	ep->peer_declined = reason == RN_NOTIFY_QP_NO_ROOM;
	RN_PLANE_LOG(INFO, "endpoint %s: the peer has no native "
		     "notification channel to add (%s)", ep->name,
		     ep->peer_native_off ? "notifications off" :
		     reason == RN_NOTIFY_QP_NO_ROOM ?
		     "no buffers free: it offers one when it has" :
		     "it offers one itself");
}

void
rn_chan_add_frame(struct rn_plane *pl, struct rn_endpoint *ep,
		  const struct rn_proto_frame *f)
{
	bool ours_now = ep->add.state == RN_CHAN_ADD_OFFERED && ep->add.ours &&
			f->notify_qp.offer == ep->add.offer;

	if (ep->req == NULL || f->notify_qp.generation != ep->peer_generation)
		return;   /* of another incarnation */
	switch (f->notify_qp.step) {
	case RN_NOTIFY_QP_OFFER:
		offered(pl, ep, &f->notify_qp.qp, f->notify_qp.offer);
		return;
	case RN_NOTIFY_QP_ACCEPT:
		if (!ours_now) {
			/* Its QP is connected to one of ours we gave up. */
			rn_ep_fail(pl, ep, "added notify QP: an ACCEPT of an "
				   "offer given up");
			return;
		}
		if (!add_peer_qp(ep, &f->notify_qp.qp))
			return;
		connect_qp(pl, ep, "the peer accepted");
		return;
	case RN_NOTIFY_QP_REFUSE:
		if (ours_now)
			refused(pl, ep, f->notify_qp.reason);
		/* Else BUSY: we answer the peer's offer. */
		return;
	case RN_NOTIFY_QP_READY:
		if (ep->add.state != RN_CHAN_ADD_ACCEPTED || ep->add.ours ||
		    f->notify_qp.offer != ep->add.offer)
			return;
		rn_ep_send_command(pl, ep, RN_LCORE_CMD_NOTIFY_ENABLE, ep->req);
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
