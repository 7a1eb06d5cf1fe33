/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The requester: executes send WQEs once the doorbell record passes them,
 * keeps them in flight until the responder acknowledges them, retries after
 * an RNR NAK or an ACK timeout (go-back-N from the oldest in flight, with
 * the same PSNs), and writes requester CQEs: for signalled WQEs, or the
 * error CQE of the WQE that failed.
 */
#include <rte_byteorder.h>
#include <stdlib.h>
#include <string.h>

#include "sim_wqe_pvt.h"

/* IB min_rnr_timer encoding (IBA table 45), in microseconds x 100. */
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

/* Local ACK timeout: 4.096 us * 2^timeout; 0 means none. */
static uint64_t
ack_timeout_ns(uint8_t timeout)
{
	return timeout == 0 ? 0 : 4096ull << timeout;
}

static uint32_t
opcode_min_ds(uint8_t opcode)
{
	switch (opcode) {
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		return 1;
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
	case MLX5_OPCODE_RDMA_READ:
		return 2;
	default:
		return 0;   /* not an opcode this device executes */
	}
}

int
rn_sim_wqe_parse(const struct sim_qp *sqp, uint32_t bb, struct sim_wqe *w)
{
	const struct mlx5_wqe_ctrl_seg *ctrl = (const void *)rn_sim_wqe_unit(sqp, bb, 0);
	uint32_t opmod_idx_opcode = rte_be_to_cpu_32(ctrl->opmod_idx_opcode);
	uint32_t qpn_ds = rte_be_to_cpu_32(ctrl->qpn_ds);
	uint32_t min_ds;

	memset(w, 0, sizeof(*w));
	w->bb = bb;
	w->opcode = (uint8_t)opmod_idx_opcode;
	w->ds = qpn_ds & 0x3f;
	w->nbb = RTE_MAX((w->ds + 3) / 4, 1u);
	w->signaled = (ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) != 0;
	w->imm = ctrl->imm;
	min_ds = opcode_min_ds(w->opcode);
	if (((opmod_idx_opcode >> 8) & 0xffff) != (bb & 0xffff) ||
	    (qpn_ds >> 8) != sqp->qpn || min_ds == 0 || w->ds < min_ds ||
	    w->nbb > sqp->sq_wqe_cnt)
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	w->first_data = 1;
	if (min_ds == 2) {
		const struct mlx5_wqe_raddr_seg *r = (const void *)rn_sim_wqe_unit(sqp, bb, 1);

		w->raddr = rte_be_to_cpu_64(r->raddr);
		w->rkey = rte_be_to_cpu_32(r->rkey);
		w->first_data = 2;
	}
	if (w->ds > w->first_data) {
		const struct mlx5_wqe_inl_data_seg *inl =
			(const void *)rn_sim_wqe_unit(sqp, bb, w->first_data);

		w->inl = (rte_be_to_cpu_32(inl->byte_count) & MLX5_INLINE_SEG) != 0;
		if (w->inl && w->opcode == MLX5_OPCODE_RDMA_READ)
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	}
	return 0;
}

/* Make room in ctx->scratch for len bytes. */
static uint8_t *
scratch(struct sim_ctx *ctx, size_t len)
{
	if (len > ctx->scratch_cap) {
		uint8_t *p = realloc(ctx->scratch, len);

		if (p == NULL)
			return NULL;
		ctx->scratch = p;
		ctx->scratch_cap = len;
	}
	return ctx->scratch;
}

/*
 * The data segments of w: total length, lkeys checked for access. A byte
 * count of 0 means 2 GiB, as on the NIC. Messages over SIM_MAX_MSG fail
 * with LOCAL_LENGTH, as over the port's max_msg_sz.
 */
static int
gather(struct sim_qp *sqp, const struct sim_wqe *w, uint8_t *out,
       uint32_t *total, uint32_t access)
{
	uint64_t sum = 0;

	for (uint32_t u = w->first_data; u < w->ds; u++) {
		const struct mlx5_wqe_data_seg *d = (const void *)rn_sim_wqe_unit(sqp, w->bb, u);
		uint64_t len = rn_sim_seg_bytes(d->byte_count);
		uint64_t addr = rte_be_to_cpu_64(d->addr);
		uint32_t lkey = rte_be_to_cpu_32(d->lkey);

		if (lkey == MLX5_INVALID_LKEY)
			break;
		if (sum + len > SIM_MAX_MSG)
			return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
		if (rn_sim_mr_check(sqp->ctx, lkey, addr, len, access) == NULL)
			return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		if (out != NULL)
			memcpy(out + sum, (const void *)(uintptr_t)addr, len);
		sum += len;
	}
	*total = (uint32_t)sum;
	return 0;
}

/* Send the request for w with psn. Returns 0 or a local syndrome. */
static int
execute(struct sim_qp *sqp, const struct sim_wqe *w, uint32_t psn)
{
	struct sim_ctx *ctx = sqp->ctx;
	struct sim_pkt_hdr h = {
		.type = SIM_PKT_REQUEST,
		.opcode = w->opcode,
		.dst_qpn = sqp->conn.remote_qpn,
		.src_qpn = sqp->qpn,
		.psn = psn,
		.imm = w->imm,
		.raddr = w->raddr,
		.rkey = w->rkey,
	};
	uint8_t *payload = NULL;
	uint32_t total = 0;
	int rc;

	if (w->opcode == MLX5_OPCODE_RDMA_READ) {
		rc = gather(sqp, w, NULL, &total, RN_ACCESS_LOCAL_WRITE);
		h.dma_len = total;
	} else if (w->inl) {
		const struct mlx5_wqe_inl_data_seg *inl =
			(const void *)rn_sim_wqe_unit(sqp, w->bb, w->first_data);

		total = rte_be_to_cpu_32(inl->byte_count) & ~MLX5_INLINE_SEG;
		if (4 + total > (w->ds - w->first_data) * 16)
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		payload = scratch(ctx, RTE_MAX(total, 1u));
		if (payload == NULL)
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		rn_sim_wqe_copy(sqp, w->bb, w->first_data * 16 + 4, payload, total);
		h.length = h.dma_len = total;
		rc = 0;
	} else {
		rc = gather(sqp, w, NULL, &total, 0);
		payload = rc == 0 ? scratch(ctx, RTE_MAX(total, 1u)) : NULL;
		if (rc == 0 && payload == NULL)
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		if (rc == 0)
			rc = gather(sqp, w, payload, &total, 0);
		h.length = h.dma_len = total;
	}
	if (rc != 0)
		return rc;
	rn_sim_wire_send(ctx, &sqp->remote, &h, payload);
	return 0;
}

static struct sim_inflight *
oldest(struct sim_qp *sqp)
{
	return &sqp->inflight[sqp->inflight_head];
}

static void
retire_oldest(struct sim_qp *sqp)
{
	sqp->inflight_head = (sqp->inflight_head + 1) % sqp->inflight_cap;
	sqp->inflight_count--;
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

/* The responder got as far as psn: retire what it acknowledged. */
static void
progress_made(struct sim_qp *sqp)
{
	sqp->retries_left = sqp->conn.retry_cnt;
	sqp->rnr_left = sqp->conn.rnr_retry;
	sqp->deadline_ns = sqp->ctx->now_ns + ack_timeout_ns(sqp->conn.timeout);
}

/*
 * Retire every in-flight WQE with a PSN before limit (or up to and
 * including it when inclusive). A READ needs its response: an ACK stops
 * there.
 */
static void
retire_until(struct sim_qp *sqp, uint32_t limit, bool inclusive)
{
	bool progressed = false;

	while (sqp->inflight_count > 0) {
		struct sim_inflight *f = oldest(sqp);
		int32_t d = rn_sim_psn_diff(f->psn, limit);

		if (d > 0 || (d == 0 && !inclusive) ||
		    f->opcode == MLX5_OPCODE_RDMA_READ)
			break;
		if (f->signaled)
			push_req_cqe(sqp, f, 0);
		retire_oldest(sqp);
		progressed = true;
	}
	if (progressed)
		progress_made(sqp);
}

static void
flush_oldest(struct sim_qp *sqp)
{
	struct sim_inflight *f = oldest(sqp);

	rn_sim_cq_push_error(sqp->scq, MLX5_CQE_REQ_ERR,
			     MLX5_CQE_SYNDROME_WR_FLUSH_ERR, f->opcode, sqp->qpn,
			     (uint16_t)f->bb);
	retire_oldest(sqp);
}

void
rn_sim_requester_fail(struct sim_qp *sqp, uint8_t syndrome)
{
	if (sqp->inflight_count > 0) {
		struct sim_inflight *f = oldest(sqp);

		rn_sim_cq_push_error(sqp->scq, MLX5_CQE_REQ_ERR, syndrome,
				     f->opcode, sqp->qpn, (uint16_t)f->bb);
		retire_oldest(sqp);
	}
	rn_sim_qp_enter_err(sqp);
}

/*
 * A WQE that was never sent failed locally. Completions stay in order:
 * what is in flight before it is flushed first, then its error, then the
 * WQEs after it.
 */
static void
fail_unsent(struct sim_qp *sqp, const struct sim_wqe *w, uint8_t syndrome)
{
	uint32_t posted = (rte_be_to_cpu_32(__atomic_load_n(
		&sqp->dbrec[MLX5_SND_DBR], __ATOMIC_ACQUIRE)) - sqp->sq_next) & 0xffff;

	rn_sim_qp_flush_inflight(sqp);
	rn_sim_cq_push_error(sqp->scq, MLX5_CQE_REQ_ERR, syndrome, w->opcode,
			     sqp->qpn, (uint16_t)sqp->sq_next);
	/* A malformed WQE's size cannot be trusted past what was posted. */
	sqp->sq_next += RTE_MIN(w->nbb, RTE_MAX(posted, 1u));
	rn_sim_qp_enter_err(sqp);
}

/* Go-back-N: send every in-flight WQE again, same PSNs. */
static void
resend_all(struct sim_qp *sqp)
{
	for (uint32_t i = 0; i < sqp->inflight_count; i++) {
		struct sim_inflight *f =
			&sqp->inflight[(sqp->inflight_head + i) % sqp->inflight_cap];
		struct sim_wqe w;
		int rc = rn_sim_wqe_parse(sqp, f->bb, &w);

		if (rc == 0)
			rc = execute(sqp, &w, f->psn);
		if (rc != 0) {
			/* Its memory went away since the first try: everything
			 * before it completes (flushed), then it fails. */
			for (uint32_t j = 0; j < i; j++)
				flush_oldest(sqp);
			rn_sim_requester_fail(sqp, (uint8_t)rc);
			return;
		}
		sqp->ctx->stats.retransmits++;
	}
	sqp->deadline_ns = sqp->ctx->now_ns + ack_timeout_ns(sqp->conn.timeout);
}

/* RNR wait and ACK timeout. Returns true when the QP may send new WQEs. */
static bool
check_timers(struct sim_qp *sqp)
{
	uint64_t now = sqp->ctx->now_ns;

	if (sqp->flags & SIM_QP_RNR_WAIT) {
		if (now < sqp->rnr_resume_ns)
			return false;
		sqp->flags &= ~SIM_QP_RNR_WAIT;
		resend_all(sqp);
		return sqp->state == RN_QP_RTS;
	}
	if (sqp->inflight_count == 0 || sqp->conn.timeout == 0 ||
	    now < sqp->deadline_ns)
		return true;
	if (sqp->retries_left == 0) {
		rn_sim_requester_fail(sqp,
				      MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
		return false;
	}
	sqp->retries_left--;
	resend_all(sqp);
	return sqp->state == RN_QP_RTS;
}

unsigned int
rn_sim_requester_run(struct sim_qp *sqp)
{
	unsigned int done = 0;
	uint32_t head;

	if (sqp->state == RN_QP_ERR)
		return rn_sim_qp_flush_new(sqp);
	if (sqp->state != RN_QP_RTS || !check_timers(sqp))
		return 0;
	head = rte_be_to_cpu_32(__atomic_load_n(&sqp->dbrec[MLX5_SND_DBR],
						__ATOMIC_ACQUIRE)) & 0xffff;
	while (((head - sqp->sq_next) & 0xffff) != 0 && done < SIM_EXEC_BUDGET) {
		struct sim_wqe w;
		struct sim_inflight *f;
		int rc = rn_sim_wqe_parse(sqp, sqp->sq_next, &w);

		if (rc == 0)
			rc = execute(sqp, &w, sqp->next_psn);
		if (rc != 0) {
			fail_unsent(sqp, &w, (uint8_t)rc);
			return done + 1;
		}
		if (sqp->inflight_count == 0)
			sqp->deadline_ns = sqp->ctx->now_ns +
					   ack_timeout_ns(sqp->conn.timeout);
		f = &sqp->inflight[(sqp->inflight_head + sqp->inflight_count) %
				   sqp->inflight_cap];
		*f = (struct sim_inflight){ .bb = sqp->sq_next,
					    .psn = sqp->next_psn,
					    .opcode = w.opcode,
					    .signaled = w.signaled };
		sqp->inflight_count++;
		sqp->next_psn = (sqp->next_psn + 1) & 0xffffff;
		sqp->sq_next += w.nbb;
		done++;
	}
	return done;
}

void
rn_sim_requester_ack(struct sim_qp *sqp, const struct sim_pkt_hdr *h)
{
	retire_until(sqp, h->psn, true);
}

void
rn_sim_requester_read_resp(struct sim_qp *sqp, const struct sim_pkt_hdr *h,
			   const uint8_t *data)
{
	struct sim_inflight *f;
	struct sim_wqe w;
	uint32_t capacity, done = 0;

	retire_until(sqp, h->psn, false);
	if (sqp->inflight_count == 0)
		return;
	f = oldest(sqp);
	if (f->psn != h->psn || f->opcode != MLX5_OPCODE_RDMA_READ)
		return;   /* a duplicate response to a resent READ */
	rn_sim_wqe_parse(sqp, f->bb, &w);
	if (gather(sqp, &w, NULL, &capacity, RN_ACCESS_LOCAL_WRITE) != 0) {
		rn_sim_requester_fail(sqp, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
		return;
	}
	/* Scatter the response over the WQE's data segments. */
	for (uint32_t u = w.first_data; u < w.ds && done < h->length; u++) {
		const struct mlx5_wqe_data_seg *d = (const void *)rn_sim_wqe_unit(sqp, w.bb, u);
		uint32_t len = RTE_MIN(rte_be_to_cpu_32(d->byte_count),
				       h->length - done);

		memcpy((void *)(uintptr_t)rte_be_to_cpu_64(d->addr), data + done,
		       len);
		done += len;
	}
	if (f->signaled)
		push_req_cqe(sqp, f, h->length);
	retire_oldest(sqp);
	progress_made(sqp);
}

void
rn_sim_requester_rnr_nak(struct sim_qp *sqp, const struct sim_pkt_hdr *h)
{
	retire_until(sqp, h->psn, false);
	if (sqp->inflight_count == 0 || (sqp->flags & SIM_QP_RNR_WAIT))
		return;
	if (sqp->conn.rnr_retry != 7) {   /* 7: retry forever */
		if (sqp->rnr_left == 0) {
			rn_sim_requester_fail(sqp,
					      MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
			return;
		}
		sqp->rnr_left--;
	}
	sqp->flags |= SIM_QP_RNR_WAIT;
	sqp->rnr_resume_ns = sqp->ctx->now_ns + rnr_timer_ns(h->rnr_timer);
}

void
rn_sim_requester_nak(struct sim_qp *sqp, const struct sim_pkt_hdr *h)
{
	retire_until(sqp, h->psn, false);
	if (sqp->inflight_count > 0 && oldest(sqp)->psn == h->psn)
		rn_sim_requester_fail(sqp, h->syndrome);
}
