/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An endpoint's QPs on its owning lcore, whatever they carry: their caps,
 * their creation in INIT on the endpoint's CQ, the peer's QP each pairs
 * with, and RTR then RTS toward it. The endpoint (lcore_endpoint.c) and its
 * native channel (lcore_channel.c) both build on these; nothing here calls
 * either.
 */
#include <rte_random.h>

#include "lcore_pvt.h"
#include "rn_lcore_xfer.h"

/*
 * The notify QP carries node-level frames of up to lc->max_inline bytes
 * inline (at least the 8 bytes of an empty one), agent frames of the same
 * name and msg with agents of up to RN_LCORE_AGENT_INLINE bytes each on
 * top, and the 4-byte credit word. Inline, a client's SEND is written
 * straight into its WQE as an embedded one is: from a send buffer it
 * cost the lcore some fifty instructions more (docs/performance.md). The
 * price is SQ room: a window entry keeps room for the largest. Only as
 * far as the ring stays within RN_LCORE_SQ_MAX_BBS, though: a deep window
 * (slots = 4096) with a large max_inline gets less room for agents, down
 * to none, rather than a notify QP the device refuses.
 */
static uint32_t
notify_inline(const struct rn_lcore *lc, uint32_t depth)
{
	uint32_t want = RTE_MIN(lc->max_inline + RN_LCORE_AGENT_FRAME_EXTRA,
				RN_LCORE_INLINE_MAX);
	/* A window entry's BBs, as rn_qp_cqes() and the device count them
	 * (ctrl and raddr, then the inline data in 16-byte units): nbb of
	 * them hold 64 * nbb - 36 bytes inline. */
	uint32_t nbb = RN_LCORE_SQ_MAX_BBS / RTE_MAX(depth, 1u);
	uint32_t fits = nbb * 64 > 36 ? nbb * 64 - 36 : 0;

	return RTE_MAX(lc->max_inline, RTE_MIN(want, fits));
}

struct rn_qp_caps
rn_lcore_qp_caps(const struct rn_lcore *lc, const struct rn_ep_request *req,
		 uint8_t kind)
{
	if (kind == RN_EP_QP_NOTIFY)
		return (struct rn_qp_caps){
			.max_send_wr = req->notify_depth,
			.max_recv_wr = req->notify_depth,
			.max_send_sge = 2, .max_recv_sge = 1,
			.max_inline = notify_inline(lc, req->notify_depth) };
	return (struct rn_qp_caps){ .max_send_wr = 64, .max_recv_wr = 1,
				    .max_send_sge = 4, .max_recv_sge = 1,
				    .max_inline = 64 };
}

int
rn_lcore_qp_create(struct rn_lcore *lc, struct rn_lcore_ep *ep, uint8_t kind)
{
	struct rn_ep_request *req = ep->req;
	struct rn_qp_caps caps = rn_lcore_qp_caps(lc, req, kind);
	struct rn_qp *qp = &ep->qps[ep->n_qps];
	struct rn_ep_qp_info *info = &req->local.qps[ep->n_qps];
	struct rn_cq *cq = &lc->cqs[ep->cq].cq;
	int rc = rn_nic_qp_create(lc->nic, cq, cq, &caps, qp);

	if (rc != 0)
		return rc;
	ep->n_qps++;
	rn_lcore_count(&lc->stats.qps, 1);
	qp->user = ep;
	rc = rn_nic_qp_modify(lc->nic, qp, RN_QP_INIT, NULL);
	*info = (struct rn_ep_qp_info){
		.kind = kind, .qpn = qp->qpn,
		.psn = (uint32_t)rte_rand() & 0xffffff,
	};
	if (kind == RN_EP_QP_NOTIFY) {
		info->recv_depth = req->notify_depth;
		info->slot_size = req->notify_slot_size;
		info->credits = 0;   /* no receive slots are posted yet */
	}
	return rc;
}

const struct rn_ep_qp_info *
rn_lcore_qp_peer(const struct rn_ep_request *req, uint32_t i)
{
	uint8_t kind = req->local.qps[i].kind;
	uint32_t rank = 0;

	for (uint32_t j = 0; j < i; j++)
		rank += req->local.qps[j].kind == kind;
	for (uint32_t j = 0; j < req->remote.n_qps; j++)
		if (req->remote.qps[j].kind == kind && rank-- == 0)
			return &req->remote.qps[j];
	return NULL;
}

int
rn_lcore_qp_connect(struct rn_lcore *lc, struct rn_lcore_ep *ep, uint32_t i,
		    const struct rn_ep_qp_info *peer)
{
	const struct rn_ep_request *req = ep->req;
	struct rn_qp_connect c = {
		.remote = req->remote.addr,
		.remote_qpn = peer->qpn,
		.remote_psn = peer->psn,
		.local_psn = req->local.qps[i].psn,
		.timeout = req->qp_timeout,
		.retry_cnt = req->qp_retry_cnt,
		.rnr_retry = 7,
		.min_rnr_timer = 1,
		.access = RN_ACCESS_LOCAL_WRITE | RN_ACCESS_REMOTE_WRITE |
			  RN_ACCESS_REMOTE_READ,
		/* Transfers' READs: the engine keeps within it, and the
		 * peer's data QP takes as many. */
		.max_rd_atomic = RN_XFER_RD_ATOMIC,
		.max_dest_rd_atomic = RN_XFER_RD_ATOMIC,
	};
	int rc = rn_nic_qp_modify(lc->nic, &ep->qps[i], RN_QP_RTR, &c);

	return rc != 0 ? rc : rn_nic_qp_modify(lc->nic, &ep->qps[i], RN_QP_RTS,
					       &c);
}
