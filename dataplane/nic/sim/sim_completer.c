/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The completer: what comes back for the WQEs in flight, and what does not.
 * An ACK retires every WQE up to its PSN; a READ response is scattered into
 * its WQE; an RNR NAK makes the requester wait, then resend; a NAK fails
 * the WQE; no answer within the ACK timeout makes the requester resend,
 * retry_cnt times. It writes the requester CQEs of the WQEs in flight: for
 * signalled ones, or the error CQE of the one that failed.
 */
#include <rte_byteorder.h>
#include <string.h>

#include "sim_wqe_pvt.h"

/* IB min_rnr_timer encoding (IBA table 45), in units of 10 us. */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
	384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
	24576, 32768, 49152,
};

static uint64_t
rnr_timer_ns(uint8_t code)
{
	return (uint64_t)rnr_timer_10us[code & 31] * 10000;
}

static void
push_req_cqe(struct sim_qp *sqp, const struct sim_inflight *f,
	     uint32_t byte_cnt)
{
	struct mlx5_cqe64 cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.byte_cnt = rte_cpu_to_be_32(byte_cnt);
	cqe.sop_drop_qpn = rte_cpu_to_be_32((uint32_t)f->opcode << 24 | sqp->qpn);
	cqe.wqe_counter = rte_cpu_to_be_16((uint16_t)f->bb);
	cqe.op_own = MLX5_CQE_REQ << 4;
	rn_sim_cq_push(sqp->scq, &cqe);
}

/* The oldest WQE in flight completes in error. */
static void
push_error_oldest(struct sim_qp *sqp, uint8_t syndrome)
{
	struct sim_inflight f = rn_sim_inflight_retire(sqp);

	rn_sim_cq_push_error(sqp->scq, MLX5_CQE_REQ_ERR, syndrome, f.opcode,
			     sqp->qpn, (uint16_t)f.bb);
}

/* The responder got further: the retry counts and the ACK timer start over. */
static void
progress_made(struct sim_qp *sqp)
{
	sqp->retries_left = sqp->conn.retry_cnt;
	sqp->rnr_left = sqp->conn.rnr_retry;
	rn_sim_ack_timer_start(sqp);
}

/*
 * Retire every in-flight WQE whose last PSN is before limit (or up to and
 * including it when inclusive). A READ needs its response: an ACK stops
 * there. A CQE that overruns the send CQ puts the QP in ERR, which flushes
 * the rest: the loop ends there.
 */
static void
retire_until(struct sim_qp *sqp, uint32_t limit, bool inclusive)
{
	bool progressed = false;

	while (sqp->state == RN_QP_RTS && sqp->inflight_count > 0) {
		const struct sim_inflight *f = rn_sim_inflight_at(sqp, 0);
		int32_t d = rn_sim_psn_diff(f->last_psn, limit);
		struct sim_inflight done;

		if (d > 0 || (d == 0 && !inclusive) ||
		    f->opcode == MLX5_OPCODE_RDMA_READ)
			break;
		done = rn_sim_inflight_retire(sqp);
		if (done.signaled)
			push_req_cqe(sqp, &done, 0);
		progressed = true;
	}
	if (progressed && sqp->state == RN_QP_RTS)
		progress_made(sqp);
}

void
rn_sim_completer_fail(struct sim_qp *sqp, uint32_t pos, uint8_t syndrome)
{
	/* Each CQE may overrun the CQ, which flushes the rest (ERR). */
	if (sqp->inflight_count > pos) {
		for (uint32_t i = 0; i < pos && sqp->state != RN_QP_ERR; i++)
			push_error_oldest(sqp, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
		if (sqp->state != RN_QP_ERR)
			push_error_oldest(sqp, syndrome);
	}
	if (sqp->state != RN_QP_ERR)
		rn_sim_qp_enter_err(sqp);
}

/*
 * A READ response packet: for the oldest WQE in flight, a READ, the next
 * of its packets (the k-th has the READ's PSN + k), scattered at the
 * bytes its predecessors took; the last completes the READ. Anything else
 * is a duplicate (the READ was resent) or comes after a lost one (the
 * ACK timer resends): dropped.
 */
static void
receive_read_resp(struct sim_qp *sqp, const struct sim_frame_hdr *h,
		  const uint8_t *data)
{
	const struct sim_inflight *f;
	struct sim_inflight done;
	struct sim_wqe w;
	uint32_t capacity, at;

	retire_until(sqp, h->psn, false);
	if (sqp->state != RN_QP_RTS || sqp->inflight_count == 0)
		return;
	f = rn_sim_inflight_at(sqp, 0);
	if (f->opcode != MLX5_OPCODE_RDMA_READ ||
	    h->psn != ((f->psn + sqp->rd_resp_pkts) & 0xffffff))
		return;
	rn_sim_wqe_parse(sqp, f->bb, &w);
	/* Its memory may have gone since the READ went out: checked again. */
	if (rn_sim_wqe_gather(sqp, &w, NULL, &capacity,
			      RN_ACCESS_LOCAL_WRITE) != 0) {
		rn_sim_completer_fail(sqp, 0, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
		return;
	}
	at = sqp->rd_resp_bytes;
	/* Not what was asked: more bytes, or the last packet short. */
	if (h->length > capacity - at ||
	    (h->psn == f->last_psn) != (at + h->length == capacity)) {
		rn_sim_completer_fail(sqp, 0, MLX5_CQE_SYNDROME_BAD_RESP_ERR);
		return;
	}
	rn_sim_wqe_scatter(sqp, &w, at, data, h->length);
	sqp->rd_resp_bytes = at + h->length;
	sqp->rd_resp_pkts++;
	if (h->psn != f->last_psn) {
		progress_made(sqp);
		return;
	}
	sqp->rd_resp_pkts = sqp->rd_resp_bytes = 0;
	done = rn_sim_inflight_retire(sqp);
	if (done.signaled)
		push_req_cqe(sqp, &done, capacity);
	if (sqp->state == RN_QP_RTS)
		progress_made(sqp);
}

static void
receive_rnr_nak(struct sim_qp *sqp, const struct sim_frame_hdr *h)
{
	retire_until(sqp, h->psn, false);
	if (sqp->state != RN_QP_RTS || sqp->inflight_count == 0 ||
	    sqp->req_state == SIM_REQ_RNR_WAIT)
		return;
	if (sqp->conn.rnr_retry != 7) {   /* 7: retry forever */
		if (sqp->rnr_left == 0) {
			rn_sim_completer_fail(sqp, 0,
					      MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
			return;
		}
		sqp->rnr_left--;
	}
	sqp->req_state = SIM_REQ_RNR_WAIT;
	sqp->rnr_resume_ns = sqp->ctx->now_ns + rnr_timer_ns(h->rnr_timer);
}

static void
receive_nak(struct sim_qp *sqp, const struct sim_frame_hdr *h)
{
	const struct sim_inflight *f;

	retire_until(sqp, h->psn, false);
	if (sqp->state != RN_QP_RTS || sqp->inflight_count == 0)
		return;
	/* Any packet of the oldest WQE may be the one refused. */
	f = rn_sim_inflight_at(sqp, 0);
	if (rn_sim_psn_diff(h->psn, f->psn) >= 0 &&
	    rn_sim_psn_diff(h->psn, f->last_psn) <= 0)
		rn_sim_completer_fail(sqp, 0, h->syndrome);
}

bool
rn_sim_completer_place(struct sim_ctx *ctx, struct sim_wire *wire,
		       const struct sim_frame_hdr *h, struct sim_place *out)
{
	struct sim_qp *sqp = rn_sim_qp_lookup(ctx, h->dst_qpn);
	const struct sim_inflight *f;
	const uint8_t *base;
	struct sim_wqe w;
	uint32_t capacity, at;

	if (h->type != SIM_FRAME_READ_RESP || sqp == NULL ||
	    sqp->state != RN_QP_RTS || sqp->inflight_count == 0 ||
	    !rn_sim_qp_from_peer(sqp, wire, h->src_qpn))
		return false;
	/* receive_read_resp()'s checks, for the oldest WQE as it is (an
	 * implicit ACK that would retire WQEs before it: not placed). */
	f = rn_sim_inflight_at(sqp, 0);
	if (f->opcode != MLX5_OPCODE_RDMA_READ ||
	    h->psn != ((f->psn + sqp->rd_resp_pkts) & 0xffffff) ||
	    rn_sim_wqe_parse(sqp, f->bb, &w) != 0 ||
	    rn_sim_wqe_gather(sqp, &w, NULL, &capacity,
			      RN_ACCESS_LOCAL_WRITE) != 0)
		return false;
	at = sqp->rd_resp_bytes;
	base = rn_sim_wqe_contiguous(sqp, &w);
	if (base == NULL || h->length == 0 || h->length > capacity - at ||
	    (h->psn == f->last_psn) != (at + h->length == capacity))
		return false;
	*out = (struct sim_place){ .dst = (uint8_t *)(uintptr_t)(base + at),
				   .span = capacity - at, .mtu = sqp->mtu };
	return true;
}

bool
rn_sim_completer_receive(struct sim_ctx *ctx, struct sim_wire *wire,
			 const struct sim_frame_hdr *h, const uint8_t *payload)
{
	struct sim_qp *sqp = rn_sim_qp_lookup(ctx, h->dst_qpn);

	if (sqp == NULL || sqp->state != RN_QP_RTS ||
	    !rn_sim_qp_from_peer(sqp, wire, h->src_qpn)) {
		ctx->stats.dropped_no_qp++;
		return false;
	}
	switch (h->type) {
	case SIM_FRAME_ACK:
		retire_until(sqp, h->psn, true);
		break;
	case SIM_FRAME_READ_RESP:
		receive_read_resp(sqp, h, payload);
		break;
	case SIM_FRAME_RNR_NAK:
		receive_rnr_nak(sqp, h);
		break;
	case SIM_FRAME_NAK:
		receive_nak(sqp, h);
		break;
	}
	return true;
}

void
rn_sim_completer_timeout(struct sim_qp *sqp)
{
	/* A requester waiting for READs waits for this very timer too, and
	 * so does one whose resend waits for room on the wire. */
	if (sqp->state != RN_QP_RTS ||
	    (sqp->req_state != SIM_REQ_SEND &&
	     sqp->req_state != SIM_REQ_WAIT_READS &&
	     sqp->req_state != SIM_REQ_RESEND) ||
	    sqp->inflight_count == 0 || sqp->conn.timeout == 0 ||
	    sqp->ctx->now_ns < sqp->deadline_ns)
		return;
	if (sqp->retries_left == 0) {
		rn_sim_completer_fail(sqp, 0,
				      MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
		return;
	}
	sqp->retries_left--;
	sqp->req_state = SIM_REQ_RESEND;
	sqp->resend_at = 0;
	rn_sim_ack_timer_start(sqp);   /* a resend with no room counts too */
}
