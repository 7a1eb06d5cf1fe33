/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The faults of diagnostic requests (rn_notify_diag.h), made on the lcore
 * that owns the endpoint, as a real fault would happen there; the sim
 * device only. lcore_notify.c hands these requests over as it drains the
 * request ring, so that the send path carries no fault of its own.
 */
#include <errno.h>
#include <rte_cycles.h>

#include "lcore_pvt.h"
#include "rn_notify_engine.h"
#include "rn_notify_diag.h"
#include "rn_sim.h"
#include "rn_sq.h"

/* A WQE whose lkey no region has: the NIC fails it locally. */
static int
local_fault(struct rn_lcore_ep *ep)
{
	struct rn_sge sge = { (uintptr_t)ep->probe, 8, 0xbad00 };
	struct rn_wr wr = {
		.wr_id = RN_EP_WR_ID(ep->req->local.generation,
				     RN_EP_WR_CREDIT, 0),
		.sg_list = &sge, .num_sge = 1, .opcode = RN_WR_SEND,
		.flags = RN_WR_SIGNALED,
	};
	int rc;

	if (ep->n.qp == NULL)
		return -ENOTSUP;
	rc = rn_sq_post(&ep->n.qp->sq, &wr);
	if (rc == 0)
		rn_sq_ring_doorbell(&ep->n.qp->sq);
	return rc;
}

/*
 * The length to send out[0]'s frame as: one byte past what its lengths
 * say, on a native channel only. Returns 0 after answering req when it
 * cannot go.
 */
static uint64_t
bad_frame(const struct rn_lcore_ep *ep, struct rn_notify_request *req)
{
	const struct rn_notify_out *o = &req->out[0];
	uint64_t len = rn_notify_frame_size(o->name_len, o->msg_len) + 1;
	int rc;

	if (ep->n.state == RN_CHANNEL_DRAINING)
		rc = -EPIPE;
	else if (ep->n.state != RN_CHANNEL_NATIVE)
		rc = -ENOTSUP;
	else if (len > ep->n.max_frame)
		rc = -EMSGSIZE;
	else
		return len;
	rn_notify_answer(req, rc);
	return 0;
}

uint64_t
rn_lcore_diag_fault(struct rn_lcore *lc, struct rn_lcore_ep *ep,
		    struct rn_notify_request *req)
{
	if (lc->nic->provider != RN_NIC_SIM) {
		rn_notify_answer(req, -ENOTSUP);
		return 0;
	}
	switch (req->fault) {
	case RN_NOTIFY_FAULT_LOCAL:
		rn_notify_answer(req, local_fault(ep));
		break;
	case RN_NOTIFY_FAULT_BAD_FRAME:
		return bad_frame(ep, req);
	case RN_NOTIFY_FAULT_STALL:
		/* Answered first: the caller is not the one stalled. */
		rn_notify_answer(req, 0);
		rte_delay_us_block(RN_NOTIFY_STALL_MS * 1000u);
		break;
	case RN_NOTIFY_FAULT_CQ_OVERRUN:
		rn_sim_overrun_cq(&lc->cqs[ep->cq].cq);
		rn_notify_answer(req, 0);
		break;
	default:
		rn_notify_answer(req, -EINVAL);
		break;
	}
	return 0;
}
