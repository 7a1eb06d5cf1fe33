/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An endpoint's native notification channel on its owning lcore: the
 * notify QP on a bay of buffers, made with the endpoint's other QPs or
 * added to a connected endpoint when a bay came back (the control thread's
 * NOTIFY_* commands, control/endpoint/upgrade.c); its receive slots posted
 * before it connects; dropped, bay and CQ room with it, when it is not to
 * be used; closed when the peer's fails, and retired, once drained, when
 * either failed.
 */
#include <errno.h>
#include <rte_cycles.h>

#include "lcore_internal.h"
#include "rn_rq.h"

/* Fill every receive slot of the bay: the peer's initial credits. */
int
rn_lcore_channel_post_receives(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			       struct rn_qp *qp)
{
	const struct rn_notify_region *r = &lc->notify;

	for (uint32_t i = 0; i < r->slots; i++) {
		struct rn_sge sge = {
			(uintptr_t)rn_notify_recv_slot(r, (uint32_t)ep->bay, i),
			r->slot_size, r->mr.lkey,
		};
		int rc = rn_rq_post(&qp->rq, &sge, 1,
				    RN_EP_WR_ID(ep->req->local.generation,
						RN_EP_WR_RECV, i));

		if (rc != 0)
			return rc;
	}
	rn_rq_ring_doorbell(&qp->rq);
	return 0;
}

/* ep's bay, and the CQ room its notify QP reserved, to whoever needs them
 * next. */
static void
give_back_bay(struct rn_lcore *lc, struct rn_lcore_ep *ep, uint32_t cqes)
{
	rn_notify_bay_put(&lc->notify, (uint32_t)ep->bay);
	ep->bay = -1;
	lc->cqs[ep->cq].reserved -= cqes;
	ep->cq_reserved -= cqes;
	rn_lcore_count(&lc->stats.cq_reserved, -(uint64_t)cqes);
}

/*
 * The notify QP on ep's bay (and the CQ room reserved for it), in INIT.
 * When the device refuses it (a ring past what it allows, say), the bay
 * and the room go back and the endpoint has no native channel, as without
 * a bay: the fallback rules apply, and the line says why.
 */
static int
create_channel(struct rn_lcore *lc, struct rn_lcore_ep *ep, uint32_t cqes)
{
	uint32_t index = ep->n_qps;
	int rc = rn_lcore_ep_create_qp(lc, ep, RN_EP_QP_NOTIFY);

	if (ep->n_qps > index)
		ep->n.qp = &ep->qps[index];
	if (rc == 0)
		rc = rn_lcore_notify_open(lc, ep);
	if (rc == 0) {
		ep->req->local.qps[index].credits = lc->notify.slots;
		return 0;
	}
	if (!lc->notify_qp_refused_said)
		RN_LCORE_LOG(WARNING, "lcore %u: endpoint %u: no native "
			     "channel: the notify QP (%u slots, frames up to %u "
			     "bytes inline) failed: %s (said once per worker)",
			     lc->lcore_id, ep->req->ep_index, lc->notify.slots,
			     lc->max_inline, strerror(-rc));
	lc->notify_qp_refused_said = true;
	if (ep->n.qp != NULL)
		rn_lcore_channel_drop(lc, ep);
	else
		give_back_bay(lc, ep, cqes);
	return rc;
}

/*
 * The native notification channel: the notify QP on the endpoint's bay of
 * buffers. Its receives are posted when it is connected (connect_ep()),
 * still in INIT, and only if the peer has a notify QP too: the handshake
 * offers one before it knows. Without it (create_channel()), the endpoint
 * opens all the same.
 */
void
rn_lcore_channel_open(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	struct rn_qp_caps caps = rn_lcore_ep_qp_caps(lc, ep->req,
						     RN_EP_QP_NOTIFY);

	(void)create_channel(lc, ep, rn_qp_cqes(&caps));
}

/*
 * A notify QP not to be used: the peer has none (handshake), or refused or
 * left unanswered the offer of this one (added later), and nothing was
 * ever posted on it; or it failed and drained (retire_channel()). It goes
 * now, and its bay and CQEs with it, to the next endpoint that has a use
 * for them.
 */
void
rn_lcore_channel_drop(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	struct rn_qp_caps caps = rn_lcore_ep_qp_caps(lc, ep->req,
						     RN_EP_QP_NOTIFY);
	uint32_t cqes = rn_qp_cqes(&caps);

	rn_nic_qp_destroy(lc->nic, ep->n.qp);
	ep->n.qp = NULL;
	ep->n_qps--;
	ep->req->local.n_qps = ep->n_qps;
	rn_lcore_count(&lc->stats.qps, -1);
	give_back_bay(lc, ep, cqes);
	rn_lcore_notify_free(lc, ep);
}

void
rn_lcore_channel_stop(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	ep->n.failed = true;
	ep->n.max_frame = 0;
	ep->n.max_inline = 0;
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
	if (ep->n.qp == NULL || ep->n.failed)
		return;
	rn_lcore_channel_stop(lc, ep);
	rn_nic_qp_modify(lc->nic, ep->n.qp, RN_QP_ERR, NULL);
	RN_LCORE_LOG(INFO, "lcore %u: the notify QP of %s failed at its end: "
		     "native channel closed, data QPs unaffected",
		     lc->lcore_id, ep->req->remote.name);
}

/*
 * A failed native channel retires once its QP drained (ERR flushed every
 * WQE; one that does not drain goes after RN_LCORE_DRAIN_MAX_S, its CQEs
 * scrubbed) and the application released every slot delivered from it:
 * the QP goes, its bay and CQ room with it, and the endpoint is one without
 * a native channel (the fallback rules apply) until the control thread adds
 * a new one, which the bay coming back prompts (upgrade.c). What the
 * endpoint's channels counted carries over to the next. Looked at no more
 * than once a millisecond: the application may hold slots a long time.
 */
static void
retire_channel(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	RTE_ASSERT(ep->n.qp == &ep->qps[ep->n_qps - 1]);
	ep->natives_posted += ep->n.sends.posted;
	ep->natives_received = ep->n.native_received;
	rn_lcore_channel_drop(lc, ep);
	ep->n = (struct ep_notify){ 0 };
	/* The peer's running count of slots it reposted for the old channel
	 * is no credit for the next, whose count starts at 0: nothing more
	 * lands here through the QP just destroyed. */
	__atomic_store_n((uint32_t *)&ep->probe[EP_PROBE_CREDITS], 0,
			 __ATOMIC_RELEASE);
}

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
		/* A channel of a failed or closing endpoint goes with it. A
		 * stopped channel keeps its QP until it retires here. */
		if (!ep->n.failed || ep->closing || ep->failed)
			continue;
		if (ep->n.held != 0 || (!rn_lcore_qp_drained(ep->n.qp) &&
					now < ep->drain_deadline)) {
			waiting++;
			continue;
		}
		retire_channel(lc, ep);
		retired = true;
	}
	lc->channels_failed = waiting;
	if (retired)
		rn_lcore_bay_returned(lc, false);
}

/*
 * A bay, or CQ room, came back, and a bay is free: endpoints without a
 * native channel may get one now. after_drop: it was the bay of an
 * offer a peer refused or left unanswered.
 */
void
rn_lcore_bay_returned(struct rn_lcore *lc, bool after_drop)
{
	if (rn_notify_bay_available(&lc->notify))
		rn_lcore_ep_post(lc, RN_LCORE_EVENT_BAY_FREE, after_drop, NULL);
}

/*
 * A native channel added to a connected endpoint that has none (every bay
 * was taken when it connected, and one came back): a bay and CQ room on the
 * endpoint's CQ, and the notify QP in INIT. Its receives are posted when it
 * connects, so nothing is outstanding on it should it be dropped.
 */
int
rn_lcore_channel_add(struct rn_lcore *lc, struct rn_ep_request *req)
{
	struct rn_lcore_ep *ep = rn_lcore_ep_live(req);
	struct rn_qp_caps caps = rn_lcore_ep_qp_caps(lc, req, RN_EP_QP_NOTIFY);
	uint32_t need = rn_qp_cqes(&caps);
	struct rn_lcore_cq *room;
	int rc;

	if (ep == NULL)
		return -ENOTCONN;
	if (ep->n.qp != NULL || ep->n_qps == RN_EP_MAX_QPS)
		return -EALREADY;
	room = &lc->cqs[ep->cq];
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
	rc = create_channel(lc, ep, need);
	if (rc == 0)
		req->local.n_qps = ep->n_qps;
	return rc;
}

/*
 * The added notify QP toward the peer's (req->remote, as the control thread
 * appended it): its receive slots first, then RTR and RTS. It sends once
 * enabled (RN_LCORE_CMD_NOTIFY_ENABLE): the peer's may not be ready yet.
 */
int
rn_lcore_channel_connect(struct rn_lcore *lc, struct rn_ep_request *req)
{
	struct rn_lcore_ep *ep = rn_lcore_ep_live(req);
	const struct rn_ep_qp_info *peer;
	uint32_t index;
	int rc;

	if (ep == NULL)
		return -ENOTCONN;
	if (ep->n.qp == NULL)
		return -EINVAL;
	index = (uint32_t)(ep->n.qp - ep->qps);
	peer = rn_lcore_ep_peer_qp(req, index);
	if (peer == NULL)
		return -EPROTO;
	rc = rn_lcore_channel_post_receives(lc, ep, ep->n.qp);
	if (rc == 0)
		rc = rn_lcore_ep_connect_qp(lc, ep, index, peer);
	if (rc != 0)
		return rc;
	rn_lcore_notify_attach(lc, ep, peer);
	return 0;
}
