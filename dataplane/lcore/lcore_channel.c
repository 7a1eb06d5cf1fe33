/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An endpoint's native notification channel on its owning lcore, as the
 * state machine of enum rn_channel_state (lcore_pvt.h): the notify QP on
 * a bay of buffers, opened the same way whether with the endpoint's other
 * QPs or added to a connected endpoint when a bay came back (the control
 * thread's NOTIFY_* commands, control/endpoint/channel_add.c); its receive
 * slots posted as it connects; dropped, bay and CQ room with it, when it is
 * not to be used; stopped when it or the peer's fails, and retired once
 * drained. The notifications it carries are lcore_notify.c's.
 */
#include <errno.h>
#include <rte_cycles.h>
#include <string.h>

#include "lcore_pvt.h"
#include "rn_rq.h"

static const char *const state_names[RN_CHANNEL_STATES] = {
	[RN_CHANNEL_NONE] = "none",
	[RN_CHANNEL_OPEN] = "open",
	[RN_CHANNEL_CONNECTED] = "connected",
	[RN_CHANNEL_NATIVE] = "native",
	[RN_CHANNEL_DRAINING] = "draining",
};

#define FROM(s) (1u << (s))
/* Which states each state may be entered from. */
static const uint8_t entered_from[RN_CHANNEL_STATES] = {
	[RN_CHANNEL_NONE] = FROM(RN_CHANNEL_OPEN) | FROM(RN_CHANNEL_DRAINING),
	[RN_CHANNEL_OPEN] = FROM(RN_CHANNEL_NONE),
	[RN_CHANNEL_CONNECTED] = FROM(RN_CHANNEL_OPEN),
	[RN_CHANNEL_NATIVE] = FROM(RN_CHANNEL_CONNECTED),
	[RN_CHANNEL_DRAINING] = FROM(RN_CHANNEL_OPEN) |
				FROM(RN_CHANNEL_CONNECTED) |
				FROM(RN_CHANNEL_NATIVE),
};

const char *
rn_channel_state_name(unsigned int state)
{
	return state < RN_CHANNEL_STATES ? state_names[state] : "?";
}

bool
rn_channel_can_enter(unsigned int from, unsigned int to)
{
	return from < RN_CHANNEL_STATES && to < RN_CHANNEL_STATES &&
	       (entered_from[to] & FROM(from)) != 0;
}

/* The one place a channel changes state. Its callers check the state they
 * leave; one they do not is a bug. Debug lines only: a channel changes
 * state a handful of times in its life, never per notification. */
static void
set_state(struct rn_lcore *lc, struct rn_lcore_ep *ep,
	  enum rn_channel_state to)
{
	enum rn_channel_state from = ep->n.state;

	RTE_ASSERT(rn_channel_can_enter(from, to));
	ep->n.state = (uint8_t)to;
	RN_LCORE_LOG(DEBUG, "lcore %u: endpoint %u: native channel %s -> %s",
		     lc->lcore_id, ep->req->ep_index,
		     rn_channel_state_name(from), rn_channel_state_name(to));
}

static uint32_t
channel_cqes(const struct rn_lcore *lc, const struct rn_lcore_ep *ep)
{
	struct rn_qp_caps caps = rn_lcore_qp_caps(lc, ep->req, RN_EP_QP_NOTIFY);

	return rn_qp_cqes(&caps);
}

/* The notify QP (if made), ep's bay and the CQ room reserved for it, to
 * whoever needs them next; the window with them. */
static void
release(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	uint32_t cqes = channel_cqes(lc, ep);

	if (ep->n.qp != NULL) {
		rn_nic_qp_destroy(lc->nic, ep->n.qp);
		ep->n.qp = NULL;
		ep->n_qps--;
		ep->req->local.n_qps = ep->n_qps;
		rn_lcore_count(&lc->stats.qps, -1);
	}
	rn_notify_bay_put(&lc->notify, (uint32_t)ep->bay);
	ep->bay = -1;
	lc->cqs[ep->cq].reserved -= cqes;
	ep->cq_reserved -= cqes;
	rn_lcore_count(&lc->stats.cq_reserved, -(uint64_t)cqes);
	rn_lcore_notify_fini(lc, ep);
}

int
rn_lcore_channel_open(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	uint32_t need = channel_cqes(lc, ep);
	struct rn_lcore_cq *room = &lc->cqs[ep->cq];
	uint32_t index = ep->n_qps;
	int rc;

	if (ep->n.state != RN_CHANNEL_NONE || ep->n_qps == RN_EP_MAX_QPS)
		return -EALREADY;
	if (lc->notify.base == NULL || !rn_notify_bay_available(&lc->notify))
		return -ENOSPC;
	if (room->cq.cqe_cnt - room->reserved < need) {
		rn_lcore_count(&lc->stats.no_cq_room, 1);
		return -ENOSPC;
	}
	ep->bay = rn_notify_bay_take(&lc->notify);
	room->reserved += need;
	ep->cq_reserved += need;
	rn_lcore_count(&lc->stats.cq_reserved, need);
	ep->n = (struct ep_notify){ 0 };
	rc = rn_lcore_qp_create(lc, ep, RN_EP_QP_NOTIFY);
	if (ep->n_qps > index)
		ep->n.qp = &ep->qps[index];
	if (rc == 0)
		rc = rn_lcore_notify_init(lc, ep);
	if (rc == 0) {
		ep->req->local.qps[index].credits = lc->notify.slots;
		ep->req->local.n_qps = ep->n_qps;
		set_state(lc, ep, RN_CHANNEL_OPEN);
		return 0;
	}
	/* The device refused it (a ring past what it allows, say): the
	 * endpoint has no native channel, as without a bay, and the fallback
	 * rules apply. */
	if (!lc->notify_qp_refused_said)
		RN_LCORE_LOG(WARNING, "lcore %u: endpoint %u: no native "
			     "channel: the notify QP (%u slots, frames up to %u "
			     "bytes inline) failed: %s (said once per worker)",
			     lc->lcore_id, ep->req->ep_index, lc->notify.slots,
			     lc->max_inline, strerror(-rc));
	lc->notify_qp_refused_said = true;
	release(lc, ep);
	return rc;
}

/* Fill every receive slot of the bay: the peer's initial credits. */
static int
post_receives(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	const struct rn_notify_region *r = &lc->notify;

	for (uint32_t i = 0; i < r->slots; i++) {
		struct rn_sge sge = {
			(uintptr_t)rn_notify_recv_slot(r, (uint32_t)ep->bay, i),
			r->slot_size, r->mr.lkey,
		};
		int rc = rn_rq_post(&ep->n.qp->rq, &sge, 1,
				    RN_EP_WR_ID(ep->req->local.generation,
						RN_EP_WR_RECV, i));

		if (rc != 0)
			return rc;
	}
	rn_rq_ring_doorbell(&ep->n.qp->rq);
	return 0;
}

/* Receives first: the peer's QP may send as soon as ours is RTR. */
int
rn_lcore_channel_connect(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	const struct rn_ep_qp_info *peer;
	uint32_t index;
	int rc;

	if (ep->n.state != RN_CHANNEL_OPEN)
		return -EINVAL;
	index = (uint32_t)(ep->n.qp - ep->qps);
	peer = rn_lcore_qp_peer(ep->req, index);
	if (peer == NULL)
		return -EPROTO;
	rc = post_receives(lc, ep);
	if (rc == 0)
		rc = rn_lcore_qp_connect(lc, ep, index, peer);
	if (rc != 0)
		return rc;
	rn_lcore_notify_attach(lc, ep, peer);
	set_state(lc, ep, RN_CHANNEL_CONNECTED);
	return 0;
}

void
rn_lcore_channel_enable(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	if (ep->n.state != RN_CHANNEL_CONNECTED)
		return;
	set_state(lc, ep, RN_CHANNEL_NATIVE);
	rn_lcore_notify_enable(lc, ep);
}

/*
 * A notify QP not to be used: the peer has none (handshake), or refused or
 * left unanswered the offer of this one (added later), and nothing was
 * ever posted on it. It goes now, and its bay and CQEs with it, to the
 * next endpoint that has a use for them.
 */
void
rn_lcore_channel_drop(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	if (ep->n.state != RN_CHANNEL_OPEN)
		return;
	RTE_ASSERT(ep->n.qp == &ep->qps[ep->n_qps - 1]);
	release(lc, ep);
	set_state(lc, ep, RN_CHANNEL_NONE);
}

/* No SEND or credit WRITE more; it retires once drained
 * (rn_lcore_channel_reap()). */
static void
stop(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	set_state(lc, ep, RN_CHANNEL_DRAINING);
	rn_lcore_notify_stop(ep);
	ep->drain_deadline = rte_get_tsc_cycles() +
			     RN_LCORE_DRAIN_MAX_S * lc->tsc_hz;
	lc->channels_failed++;
}

/*
 * The peer's notify QP failed locally (its NOTIFY_QP CLOSED): ours sends
 * no more, and goes to ERR, which fails what it had in flight (-EPIPE,
 * never replayed) at once rather than after its retries.
 */
void
rn_lcore_channel_peer_closed(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	if (ep->n.state == RN_CHANNEL_NONE ||
	    ep->n.state == RN_CHANNEL_DRAINING)
		return;
	stop(lc, ep);
	rn_nic_qp_modify(lc->nic, ep->n.qp, RN_QP_ERR, NULL);
	RN_LCORE_LOG(INFO, "lcore %u: the notify QP of %s failed at its end: "
		     "native channel draining, data QPs unaffected",
		     lc->lcore_id, ep->req->remote.name);
}

static bool
local_fault(uint8_t syndrome)
{
	return syndrome == MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR ||
	       syndrome == MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR ||
	       syndrome == MLX5_CQE_SYNDROME_LOCAL_PROT_ERR ||
	       syndrome == MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR;
}

bool
rn_lcore_channel_error(struct rn_lcore *lc, struct rn_lcore_ep *ep,
		       const struct rn_wc *wc)
{
	if (RN_EP_WR_GENERATION(wc->wr_id) != ep->req->local.generation) {
		rn_lcore_count(&lc->stats.notify_stale, 1);
		return false;
	}
	/* An error on the send side: every SEND in flight failed. */
	if (RN_EP_WR_KIND(wc->wr_id) != RN_EP_WR_RECV)
		rn_lcore_notify_fail_pending(lc, ep);
	if (wc->status == MLX5_CQE_SYNDROME_WR_FLUSH_ERR ||
	    ep->n.state == RN_CHANNEL_DRAINING)
		return false;
	if (!local_fault(wc->status))
		return true;
	/* Ours alone: the channel stops, the data QPs go on. The peer is
	 * told, else its SENDs into our QP, now in ERR, would exhaust their
	 * retries and fail the endpoint, data QPs and all. */
	stop(lc, ep);
	RN_LCORE_LOG(WARNING, "lcore %u: notify QP of %s failed locally "
		     "(syndrome 0x%x): native channel draining, data QPs "
		     "unaffected", lc->lcore_id, ep->req->remote.name,
		     wc->status);
	rn_lcore_ep_post(lc, RN_LCORE_EVENT_NOTIFY_FAILED, wc->status, ep->req);
	return false;
}

/*
 * A stopped channel retires once its QP drained (ERR flushed every WQE;
 * one that does not drain goes after RN_LCORE_DRAIN_MAX_S, its CQEs
 * scrubbed) and the application released every slot delivered from it,
 * early receives (lcore_notify.c) delivered first:
 * the QP goes, its bay and CQ room with it, and the endpoint is one without
 * a native channel (the fallback rules apply) until the control thread adds
 * a new one, which the bay coming back prompts (channel_add.c). What the
 * endpoint's channels counted carries over to the next.
 */
static void
retire(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	RTE_ASSERT(ep->n.qp == &ep->qps[ep->n_qps - 1]);
	ep->natives_posted += ep->n.sends.posted - ep->n.agent_posted;
	ep->natives_received = ep->n.native_received;
	release(lc, ep);
	set_state(lc, ep, RN_CHANNEL_NONE);
	ep->n = (struct ep_notify){ 0 };
	/* The peer's running count of slots it reposted for the old channel
	 * is no credit for the next, whose count starts at 0: nothing more
	 * lands here through the QP just destroyed. */
	__atomic_store_n((uint32_t *)&ep->probe[EP_PROBE_CREDITS], 0,
			 __ATOMIC_RELEASE);
}

/* Looked at no more than once a millisecond: the application may hold
 * slots a long time. */
void
rn_lcore_channel_reap(struct rn_lcore *lc)
{
	uint64_t now = rte_get_tsc_cycles();
	uint32_t waiting = 0;
	bool retired = false;

	if (now < lc->channel_reap_tsc)
		return;
	lc->channel_reap_tsc = now + lc->tsc_hz / 1000;
	for (struct rn_lcore_ep *ep = lc->eps; ep != NULL; ep = ep->next_all) {
		/* A channel of a failed or closing endpoint goes with it. */
		if (ep->n.state != RN_CHANNEL_DRAINING || ep->closing ||
		    ep->failed)
			continue;
		/* Early receives are in its slots too, to be delivered on
		 * EP_DELIVER, or as the endpoint fails or closes. */
		if (ep->n.held != 0 || ep->n_early != 0 ||
		    (!rn_lcore_qp_drained(ep->n.qp) &&
		     now < ep->drain_deadline)) {
			waiting++;
			continue;
		}
		retire(lc, ep);
		retired = true;
	}
	lc->channels_failed = waiting;
	if (retired)
		rn_lcore_bay_returned(lc, false);
}

void
rn_lcore_channel_fini(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	/* Its slots are free again only now: every CQE of theirs is in. */
	if (ep->bay >= 0)
		rn_notify_bay_put(&lc->notify, (uint32_t)ep->bay);
	ep->bay = -1;
	rn_lcore_notify_fini(lc, ep);
}

void
rn_lcore_bay_returned(struct rn_lcore *lc, bool after_drop)
{
	if (rn_notify_bay_available(&lc->notify))
		rn_lcore_ep_post(lc, RN_LCORE_EVENT_BAY_FREE, after_drop, NULL);
}
