/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoint QPs on their owning lcore: created on EP_OPEN, connected on
 * EP_CONNECT, probed with an RDMA READ of the peer's identity, and on
 * EP_CLOSE moved to ERR, drained of their completions, then destroyed.
 * The notify QP's own steps are the native channel's (lcore_channel.c),
 * called from here. Runs on the worker; nothing here is per packet,
 * except the dispatch of completions.
 */
#include <errno.h>
#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_random.h>
#include <string.h>

#include "lcore_pvt.h"
#include "rn_cq.h"
#include "rn_rq.h"
#include "rn_sq.h"

#define WR_ID_PROBE RN_EP_WR_ID(0, RN_EP_WR_PROBE, 0)

static void
destroy_qps(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	for (uint32_t i = 0; i < ep->n_qps; i++)
		rn_nic_qp_destroy(lc->nic, &ep->qps[i]);
	rn_lcore_count(&lc->stats.qps, -(uint64_t)ep->n_qps);
	ep->n_qps = 0;
}

/* A CQ with need CQEs unreserved, growing the set if none has; or -1. */
static int
pick_cq(struct rn_lcore *lc, uint32_t need)
{
	for (uint32_t c = 0; c < lc->n_cqs; c++)
		if (lc->cqs[c].cq.cqe_cnt - lc->cqs[c].reserved >= need)
			return (int)c;
	if (need > lc->cq_cqes || rn_lcore_cq_grow(lc) != 0)
		return -1;
	return (int)lc->n_cqs - 1;
}

static void
reserve_cq(struct rn_lcore *lc, struct rn_lcore_ep *ep, uint32_t cq,
	   uint32_t cqes)
{
	ep->cq = cq;
	ep->cq_reserved = cqes;
	lc->cqs[cq].reserved += cqes;
	rn_lcore_count(&lc->stats.cq_reserved, cqes);
}

static void
free_ep(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	destroy_qps(lc, ep);
	/* Every CQE of its QPs has drained: the room is free again. */
	lc->cqs[ep->cq].reserved -= ep->cq_reserved;
	rn_lcore_count(&lc->stats.cq_reserved, -(uint64_t)ep->cq_reserved);
	ep->cq_reserved = 0;
	rn_lcore_channel_fini(lc, ep);
	rn_lcore_xfer_ep_fini(lc, ep);
	if (ep->probe_mr.priv != NULL)
		lc->nic->ops->mr_dereg(lc->nic, &ep->probe_mr);
	rte_free(ep->probe);
	rte_free(ep->early);
	rte_free(ep);
}

static void
unlink_ep(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	if (ep->prev_all != NULL)
		ep->prev_all->next_all = ep->next_all;
	else
		lc->eps = ep->next_all;
	if (ep->next_all != NULL)
		ep->next_all->prev_all = ep->prev_all;
	rn_lcore_count(&lc->stats.endpoints, -1);
}

/*
 * Room for the endpoint: CQEs for its data QPs, on a CQ that also has room
 * for a notify QP when the endpoint wants one and a bay is free (*channel:
 * the channel reserves its own as it opens). Without those it has no
 * native channel (the handshake says so, the fallback rules apply);
 * without room for the data QPs it cannot open. Endpoints already open are
 * never touched.
 */
static int
reserve(struct rn_lcore *lc, struct rn_lcore_ep *ep, bool *channel)
{
	const struct rn_ep_request *req = ep->req;
	struct rn_qp_caps data = rn_lcore_qp_caps(lc, req, RN_EP_QP_DATA);
	struct rn_qp_caps notify = rn_lcore_qp_caps(lc, req, RN_EP_QP_NOTIFY);
	uint32_t data_need = req->n_data_qps * rn_qp_cqes(&data);
	uint32_t notify_need = rn_qp_cqes(&notify);
	int cq = -1;

	if (req->notify && lc->notify.base != NULL &&
	    rn_notify_bay_available(&lc->notify)) {
		cq = pick_cq(lc, data_need + notify_need);
		if (cq < 0)
			rn_lcore_count(&lc->stats.no_cq_room, 1);
	}
	*channel = cq >= 0;
	if (cq >= 0) {
		reserve_cq(lc, ep, (uint32_t)cq, data_need);
		return 0;
	}
	cq = pick_cq(lc, data_need);
	if (cq < 0) {
		rn_lcore_count(&lc->stats.no_cq_room, 1);
		return -ENOSPC;
	}
	reserve_cq(lc, ep, (uint32_t)cq, data_need);
	return 0;
}

static int
open_ep(struct rn_lcore *lc, struct rn_ep_request *req)
{
	struct rn_lcore_ep *ep = rte_zmalloc("rn_ep", sizeof(*ep), 0);
	bool channel = false;
	int rc;

	if (ep == NULL)
		return -ENOMEM;
	ep->req = req;
	ep->lc = lc;
	ep->bay = -1;
	ep->delivering = !req->defer_deliveries;
	ep->probe = rte_zmalloc("rn_ep_probe",
				RN_EP_PROBE_PARTS * RN_EP_PROBE_SIZE,
				RN_EP_PROBE_SIZE);
	if (ep->probe == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	ep->probe[0] = (struct ep_probe){ .magic = RN_EP_PROBE_MAGIC,
					  .generation = req->local.generation,
					  .session_id = req->local.session_id,
					  .lcore_id = lc->lcore_id };
	ep->peer_lcore = UINT32_MAX;
	memcpy(ep->probe[0].name, req->local.name, sizeof(ep->probe[0].name));
	/* The peer READs the identity and WRITEs the credit word. */
	rc = rn_nic_mr_reg(lc->nic, ep->probe,
			   RN_EP_PROBE_PARTS * RN_EP_PROBE_SIZE,
			   RN_ACCESS_LOCAL_WRITE | RN_ACCESS_REMOTE_READ |
			   RN_ACCESS_REMOTE_WRITE, &ep->probe_mr);
	if (rc == 0)
		rc = reserve(lc, ep, &channel);
	for (uint32_t i = 0; rc == 0 && i < req->n_data_qps; i++)
		rc = rn_lcore_qp_create(lc, ep, RN_EP_QP_DATA);
	/* Its receives are posted as it connects, and only if the peer has a
	 * notify QP too: the handshake offers one before it knows. Without
	 * it, the endpoint opens all the same. */
	if (rc == 0 && channel)
		(void)rn_lcore_channel_open(lc, ep);
	/* Only this channel can receive before EP_DELIVER: one is added to
	 * a connected endpoint only, after it. */
	if (rc == 0 && !ep->delivering && ep->n.state == RN_CHANNEL_OPEN) {
		ep->early = rte_malloc("rn_ep_early", lc->notify.slots *
				       sizeof(*ep->early), 0);
		if (ep->early == NULL)
			rc = -ENOMEM;
	}
	if (rc == 0)
		rc = lc->nic->ops->query_addr(lc->nic, &req->local.addr);
	if (rc != 0)
		goto fail;
	req->local.n_qps = ep->n_qps;
	req->local.probe_addr = (uintptr_t)&ep->probe[0];
	req->local.probe_rkey = ep->probe_mr.rkey;
	req->ep = ep;
	ep->next_all = lc->eps;
	if (lc->eps != NULL)
		lc->eps->prev_all = ep;
	lc->eps = ep;
	rn_lcore_count(&lc->stats.endpoints, 1);
	return 0;
fail:
	free_ep(lc, ep);
	req->ep = NULL;
	return rc;
}

static int
connect_ep(struct rn_lcore *lc, struct rn_ep_request *req)
{
	struct rn_lcore_ep *ep = req->ep;
	uint32_t n_data;
	int rc;

	/* The notify QP is the last one, and still in INIT. */
	if (ep->n.state == RN_CHANNEL_OPEN &&
	    rn_lcore_qp_peer(req, ep->n_qps - 1) == NULL) {
		rn_lcore_channel_drop(lc, ep);
		rn_lcore_bay_returned(lc, false);
	}
	n_data = ep->n_qps - (ep->n.qp != NULL);
	for (uint32_t i = 0; i < n_data; i++) {
		const struct rn_ep_qp_info *peer = rn_lcore_qp_peer(req, i);

		if (peer == NULL && i == 0)
			return -EPROTO;   /* data QP 0 carries the probe */
		if (peer == NULL)
			continue;   /* the peer has fewer: this one stays unused */
		rc = rn_lcore_qp_connect(lc, ep, i, peer);
		if (rc != 0)
			return rc;
	}
	if (ep->n.state == RN_CHANNEL_OPEN) {
		/* Both ends have one: it sends at once. */
		rc = rn_lcore_channel_connect(lc, ep);
		if (rc != 0)
			return rc;
		rn_lcore_channel_enable(lc, ep);
	}
	lc->by_index[req->ep_index] = ep;
	return 0;
}

/* ep takes no more sends: the send path finds it no more. */
static void
unlist(struct rn_lcore *lc, const struct rn_lcore_ep *ep)
{
	if (lc->by_index[ep->req->ep_index] == ep)
		lc->by_index[ep->req->ep_index] = NULL;
}

/* READ the peer's identity over data QP 0: proof the RDMA path works and
 * reaches the incarnation the handshake named. */
static int
probe_ep(struct rn_lcore *lc, struct rn_ep_request *req)
{
	struct rn_lcore_ep *ep = req->ep;
	struct rn_sge sge = { (uintptr_t)&ep->probe[1], RN_EP_PROBE_SIZE,
			      ep->probe_mr.lkey };
	struct rn_wr wr = { .wr_id = WR_ID_PROBE, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_READ, .flags = RN_WR_SIGNALED,
			    .raddr = req->remote.probe_addr,
			    .rkey = req->remote.probe_rkey };
	int rc;

	(void)lc;
	if (ep->probing || ep->failed)
		return -EBUSY;
	memset(&ep->probe[1], 0, RN_EP_PROBE_SIZE);
	rc = rn_sq_post(&ep->qps[0].sq, &wr);
	if (rc != 0)
		return rc;
	rn_sq_ring_doorbell(&ep->qps[0].sq);
	ep->probing = true;
	return 0;
}

static void unfail(struct rn_lcore *lc, struct rn_lcore_ep *ep);

static void
close_ep(struct rn_lcore *lc, struct rn_ep_request *req)
{
	struct rn_lcore_ep *ep = req->ep;

	/* Closed while failing (the peer closed, say): EP_FAILED is news to
	 * nobody now. */
	unfail(lc, ep);
	unlist(lc, ep);
	ep->closing = true;
	/* ERR flushes every outstanding WQE: their CQEs drain below. */
	for (uint32_t i = 0; i < ep->n_qps; i++)
		rn_nic_qp_modify(lc->nic, &ep->qps[i], RN_QP_ERR, NULL);
	/* Closed before EP_DELIVER (a handshake that failed): its early
	 * receives are the application's all the same. Their slots are not
	 * on the RQ, which ERR flushes; the deliveries hold the endpoint,
	 * slots and all, until they are given back (rn_lcore_ep_reap()). */
	if (!ep->delivering)
		rn_lcore_notify_deliver(lc, ep);
	ep->drain_deadline = rte_get_tsc_cycles() +
			     RN_LCORE_DRAIN_MAX_S * lc->tsc_hz;
	ep->next = lc->closing;
	lc->closing = ep;
}

/* Whether a closing endpoint holds a bay: it comes back once it drained. */
static bool
bay_draining(const struct rn_lcore *lc)
{
	for (const struct rn_lcore_ep *ep = lc->closing; ep != NULL;
	     ep = ep->next)
		if (ep->bay >= 0)
			return true;
	return false;
}

/*
 * An endpoint that wants a native channel when every bay is taken, one
 * of them by an endpoint still draining (a replaced incarnation, maybe
 * with slots its application has not released yet): its QPs wait for that
 * bay, up to req->bay_wait_ms, rather than open without a native channel
 * (one can still be added later, but only once another bay comes back).
 * Returns whether req was parked.
 */
static bool
park(struct rn_lcore *lc, struct rn_ep_request *req)
{
	if (!req->notify || lc->notify.base == NULL || req->bay_wait_ms == 0 ||
	    rn_notify_bay_available(&lc->notify) || !bay_draining(lc) ||
	    lc->n_parked == RTE_DIM(lc->parked))
		return false;
	lc->parked[lc->n_parked].req = req;
	lc->parked[lc->n_parked].until = rte_get_tsc_cycles() +
					 req->bay_wait_ms * lc->tsc_hz / 1000;
	lc->n_parked++;
	RN_LCORE_LOG(INFO, "lcore %u: endpoint %u waits up to %u ms for "
		     "a bay still draining", lc->lcore_id, req->ep_index,
		     req->bay_wait_ms);
	return true;
}

/* Take req off the parked list; false when it was not on it. */
static bool
unpark(struct rn_lcore *lc, const struct rn_ep_request *req)
{
	for (uint32_t i = 0; i < lc->n_parked; i++) {
		if (lc->parked[i].req != req)
			continue;
		lc->n_parked--;
		memmove(&lc->parked[i], &lc->parked[i + 1],
			(lc->n_parked - i) * sizeof(lc->parked[0]));
		return true;
	}
	return false;
}

/* Open the parked endpoints whose bay came back, or whose wait is over. */
static void
open_parked(struct rn_lcore *lc)
{
	uint64_t now = rte_get_tsc_cycles();

	while (lc->n_parked != 0 &&
	       (rn_notify_bay_available(&lc->notify) || !bay_draining(lc) ||
		now >= lc->parked[0].until)) {
		struct rn_ep_request *req = lc->parked[0].req;

		unpark(lc, req);
		rn_lcore_ep_post(lc, RN_LCORE_EVENT_EP_OPENED,
				 open_ep(lc, req), req);
	}
}

/* NOTIFY_OPEN: a channel for a connected endpoint that has none (every
 * bay was taken when it connected, and one came back). */
static int
add_channel(struct rn_lcore *lc, struct rn_ep_request *req)
{
	struct rn_lcore_ep *ep = rn_lcore_ep_live(req);

	return ep == NULL ? -ENOTCONN : rn_lcore_channel_open(lc, ep);
}

void
rn_lcore_ep_command(struct rn_lcore *lc, const struct rn_lcore_cmd *cmd)
{
	struct rn_ep_request *req = (void *)(uintptr_t)cmd->cookie;
	int rc;

	switch ((enum rn_lcore_cmd_type)cmd->type) {
	case RN_LCORE_CMD_EP_OPEN:
		if (!park(lc, req))
			rn_lcore_ep_post(lc, RN_LCORE_EVENT_EP_OPENED,
					 open_ep(lc, req), req);
		return;
	case RN_LCORE_CMD_EP_CONNECT:
		rn_lcore_ep_post(lc, RN_LCORE_EVENT_EP_CONNECTED,
				 connect_ep(lc, req), req);
		return;
	case RN_LCORE_CMD_EP_PROBE:
		rc = probe_ep(lc, req);
		if (rc != 0 && rc != -EBUSY)
			rn_lcore_ep_post(lc, RN_LCORE_EVENT_EP_PROBED, rc, req);
		return;
	case RN_LCORE_CMD_EP_CLOSE:
		/* Parked: given up before it opened. */
		if (unpark(lc, req) || req->ep == NULL)
			rn_lcore_ep_post(lc, RN_LCORE_EVENT_EP_CLOSED, 0, req);
		else
			close_ep(lc, req);
		return;
	case RN_LCORE_CMD_EP_DELIVER:
		/* Failed or closing since: its early receives went then. */
		if (rn_lcore_ep_live(req) != NULL)
			rn_lcore_notify_deliver(lc, req->ep);
		return;
	/* A native channel added to a connected endpoint: the same steps as
	 * one made with it, each on the control thread's word. */
	case RN_LCORE_CMD_NOTIFY_OPEN:
		rn_lcore_ep_post(lc, RN_LCORE_EVENT_NOTIFY_OPENED,
				 add_channel(lc, req), req);
		return;
	case RN_LCORE_CMD_NOTIFY_CONNECT:
		rn_lcore_ep_post(lc, RN_LCORE_EVENT_NOTIFY_CONNECTED,
				 rn_lcore_ep_live(req) == NULL ? -ENOTCONN :
				 rn_lcore_channel_connect(lc, req->ep), req);
		return;
	case RN_LCORE_CMD_NOTIFY_ENABLE:
		if (rn_lcore_ep_live(req) != NULL)
			rn_lcore_channel_enable(lc, req->ep);
		return;
	case RN_LCORE_CMD_NOTIFY_DROP:
		/* Refused: only ever before it connected. */
		if (req->ep != NULL && !req->ep->closing &&
		    req->ep->n.state == RN_CHANNEL_OPEN) {
			rn_lcore_channel_drop(lc, req->ep);
			rn_lcore_bay_returned(lc, true);
		}
		return;
	case RN_LCORE_CMD_NOTIFY_CLOSE:
		if (rn_lcore_ep_live(req) != NULL)
			rn_lcore_channel_peer_closed(lc, req->ep);
		return;
	default:
		return;
	}
}

static int
probe_result(const struct rn_lcore_ep *ep)
{
	const struct ep_probe *got = &ep->probe[1];
	const struct rn_ep_side *peer = &ep->req->remote;

	if (got->magic != RN_EP_PROBE_MAGIC ||
	    got->generation != peer->generation ||
	    got->session_id != peer->session_id ||
	    strncmp(got->name, peer->name, sizeof(got->name)) != 0)
		return -EBADMSG;
	return 0;
}

/*
 * Failing: how EP_FAILED waits for the failure notices.
 *
 * A batch that fails sends the target its failure notice on the notify QP
 * as it ends (lcore_transfer.c). When a data QP's error is what failed
 * it, the endpoint fails too, and the control thread, told, closes it at
 * once: its notify QP goes to ERR and a SEND not yet acknowledged is
 * flushed, notice and all. So a data QP's error makes the endpoint
 * failing rather than telling the control thread: it takes nothing more
 * (unlisted, as failed), its data QPs go to ERR (their chunks flush, each
 * batch ends and posts its notice), and its notify QP lives on. EP_FAILED
 * goes once no batch of it is left in the engine and every SEND posted on
 * its channel completed: a signalled credit WRITE after them (the fence)
 * completed, the peer's ACK of it covering them all. The peer placed a
 * SEND (its receive CQE made) before it acknowledged it, so the notice is
 * the peer's before the plane closes anything.
 *
 * Bounded: at most the longer of one ACK timeout of the notify QP and
 * RN_LCORE_DRAIN_MAX_S. A live peer acknowledges within one timeout; a
 * peer that died since it answered holds EP_FAILED back that long, not
 * for the QP's retries. An error that says the peer cannot be reached
 * (retries exceeded), an error of the notify QP, and an endpoint without
 * a working native channel fail it at once: no notice could go.
 */

/* Whether syndrome says that nothing sent to the peer would arrive. */
static bool
peer_unreachable(uint8_t syndrome)
{
	return syndrome == MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR ||
	       syndrome == MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR;
}

/* How long a failing endpoint may wait for its notices, in TSC cycles. */
static uint64_t
fail_grace(const struct rn_lcore *lc, const struct rn_lcore_ep *ep)
{
	/* The ACK timeout: 4.096 us << qp_timeout (IB's local ACK timeout). */
	uint64_t ack_us = (UINT64_C(4096) << RTE_MIN(ep->req->qp_timeout, 31))
			  / 1000;
	uint64_t grace_us = RTE_MAX(ack_us,
				    (uint64_t)RN_LCORE_DRAIN_MAX_S * 1000000);

	return grace_us * (lc->tsc_hz / 1000000);
}

static void
start_failing(struct rn_lcore *lc, struct rn_lcore_ep *ep, uint8_t syndrome)
{
	ep->fail_syndrome = syndrome;
	ep->fence_posted = false;
	ep->fail_deadline = rte_get_tsc_cycles() + fail_grace(lc, ep);
	/* Their chunks flush now, not when the endpoint closes. */
	for (uint32_t i = 0; i < ep->n_qps; i++)
		if (&ep->qps[i] != ep->n.qp)
			rn_nic_qp_modify(lc->nic, &ep->qps[i], RN_QP_ERR, NULL);
	ep->next_failing = lc->failing;
	lc->failing = ep;
}

/* Take ep off lc->failing, if it is there. */
static void
unfail(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	for (struct rn_lcore_ep **link = &lc->failing; *link != NULL;
	     link = &(*link)->next_failing) {
		if (*link == ep) {
			*link = ep->next_failing;
			ep->next_failing = NULL;
			return;
		}
	}
}

/* Whether failing ep's notices are the peer's (or can never be). */
static bool
notices_gone(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	const struct rn_sq *sq;

	if (rn_lcore_xfer_ep_busy(lc, ep))
		return false;
	/* A channel that failed too has failed its SENDs; one whose last
	 * SEND was signalled and completed has nothing in flight. */
	if (ep->n.state != RN_CHANNEL_NATIVE ||
	    rn_send_window_used(&ep->n.sends) == 0)
		return true;
	sq = &ep->n.qp->sq;
	if (!ep->fence_posted) {
		if (rn_lcore_notify_fence(lc, ep) == 0) {
			ep->fence_posted = true;
			ep->fence_end = sq->pi;
		}
		return false;
	}
	/* Completed up to the fence: ci moves on with each CQE. */
	return (int32_t)(sq->ci - ep->fence_end) >= 0;
}

/* Tell the control thread of the failing endpoints whose notices went,
 * or whose grace is over. */
static void
settle_failing(struct rn_lcore *lc)
{
	uint64_t now = rte_get_tsc_cycles();
	struct rn_lcore_ep **link = &lc->failing;

	while (*link != NULL) {
		struct rn_lcore_ep *ep = *link;

		if (!notices_gone(lc, ep) && now < ep->fail_deadline) {
			link = &ep->next_failing;
			continue;
		}
		*link = ep->next_failing;
		ep->next_failing = NULL;
		rn_lcore_ep_post(lc, RN_LCORE_EVENT_EP_FAILED,
				 ep->fail_syndrome, ep->req);
	}
}

/* A QP of ep completed in error: the control thread is told, once; at
 * once, or when failing ends. */
static void
ep_failed(struct rn_lcore *lc, struct rn_lcore_ep *ep, const struct rn_wc *wc)
{
	/* The first error of a live endpoint is news; flushes of one that is
	 * closing, or already failed, are not. */
	if (ep->closing || ep->failed)
		return;
	ep->failed = true;
	unlist(lc, ep);
	/* Failed before EP_DELIVER: no send back will ever be taken, and
	 * what it received is the application's, as on any endpoint that
	 * fails. Now, so that receives completed after the error follow
	 * them. */
	if (!ep->delivering)
		rn_lcore_notify_deliver(lc, ep);
	if (wc->qp != ep->n.qp && ep->n.state == RN_CHANNEL_NATIVE &&
	    !peer_unreachable(wc->status))
		start_failing(lc, ep, wc->status);
	else
		rn_lcore_ep_post(lc, RN_LCORE_EVENT_EP_FAILED, wc->status,
				 ep->req);
}

void
rn_lcore_ep_completion(struct rn_lcore *lc, const struct rn_wc *wc)
{
	struct rn_lcore_ep *ep = wc->qp->user;

	if (wc->qp == ep->n.qp) {
		if (likely(wc->status == 0))
			rn_lcore_notify_completion(lc, ep, wc);
		else if (rn_lcore_channel_error(lc, ep, wc))
			ep_failed(lc, ep, wc);
		return;
	}
	if (RN_EP_WR_KIND(wc->wr_id) == RN_EP_WR_XFER)
		rn_lcore_xfer_completion(lc, ep, wc);
	if (wc->status != 0) {
		ep_failed(lc, ep, wc);
		return;
	}
	if (wc->opcode == RN_WC_READ && RN_EP_WR_KIND(wc->wr_id) == RN_EP_WR_PROBE) {
		int rc = probe_result(ep);

		ep->probing = false;
		if (rc == 0)
			ep->peer_lcore = ep->probe[1].lcore_id;
		rn_lcore_ep_post(lc, RN_LCORE_EVENT_EP_PROBED, rc, ep->req);
	}
}

static bool
drained(const struct rn_lcore_ep *ep)
{
	for (uint32_t i = 0; i < ep->n_qps; i++)
		if (!rn_lcore_qp_drained(&ep->qps[i]))
			return false;
	return true;
}

void
rn_lcore_ep_reap(struct rn_lcore *lc)
{
	uint64_t now = rte_get_tsc_cycles();
	struct rn_lcore_ep **link = &lc->closing;
	bool room_back = false;

	if (lc->failing != NULL)
		settle_failing(lc);
	while (*link != NULL) {
		struct rn_lcore_ep *ep = *link;
		struct rn_ep_request *req = ep->req;

		/* Slots the application still reads keep the endpoint (and
		 * its bay) however long; QPs that do not drain, only a while. */
		if (ep->n.held != 0 ||
		    (!drained(ep) && now < ep->drain_deadline)) {
			link = &ep->next;
			continue;
		}
		*link = ep->next;
		req->ep = NULL;
		room_back = true;   /* its CQ room, and its bay if it had one */
		unlink_ep(lc, ep);
		free_ep(lc, ep);
		rn_lcore_ep_post(lc, RN_LCORE_EVENT_EP_CLOSED, 0, req);
	}
	open_parked(lc);
	if (room_back)
		/* What the parked ones left. */
		rn_lcore_bay_returned(lc, false);
}

void
rn_lcore_ep_free_all(struct rn_lcore *lc)
{
	while (lc->eps != NULL) {
		struct rn_lcore_ep *ep = lc->eps;

		ep->req->ep = NULL;
		unlink_ep(lc, ep);
		free_ep(lc, ep);
	}
	lc->closing = NULL;
	lc->failing = NULL;
	lc->n_parked = 0;   /* their requests are the control thread's */
}
