/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QP lifecycle: rings laid out as mlx5 lays them out, the RC state machine
 * (RESET -> INIT -> RTR -> RTS, any -> ERR or RESET), and flushing: a QP in
 * ERR completes every outstanding WQE, send and receive, with WR_FLUSH.
 */
#include <errno.h>
#include <rte_byteorder.h>
#include <stdlib.h>
#include <string.h>

#include "sim_wqe_pvt.h"

static uint32_t
log2_u32(uint32_t v)
{
	return 31u - (uint32_t)__builtin_clz(v);
}

/* BBs of the largest WQE these caps allow. */
static uint32_t
max_wqe_bbs(const struct rn_qp_caps *caps)
{
	uint32_t data = RTE_MAX(caps->max_send_sge * 16,
				RTE_ALIGN_CEIL(4 + caps->max_inline, 16));

	return (32 + data + 63) / 64;   /* ctrl + raddr, then data */
}

static void *
zalloc_aligned(size_t size)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, RTE_MAX(size, (size_t)64)) != 0)
		return NULL;
	memset(p, 0, size);
	return p;
}

static int
alloc_qpn(struct sim_ctx *ctx)
{
	/* Lowest free number: a destroyed QP's QPN comes back first, as
	 * hardware may do; routing must never rely on QPNs being fresh. */
	for (int i = 0; i < SIM_MAX_QPS; i++)
		if (ctx->qps[i] == NULL)
			return i;
	return -ENOSPC;
}

int
rn_sim_qp_create(struct sim_ctx *ctx, struct rn_cq *scq, struct rn_cq *rcq,
		 const struct rn_qp_caps *caps, struct rn_qp *qp)
{
	struct sim_qp *sqp;
	uint32_t rq_stride;
	int index = alloc_qpn(ctx);

	if (index < 0)
		return index;
	if (caps->max_send_wr == 0 || caps->max_send_wr > 32768 ||
	    caps->max_recv_wr > 32768 || caps->max_recv_sge > 64 ||
	    caps->max_inline > 512)
		return -EINVAL;
	sqp = calloc(1, sizeof(*sqp));
	if (sqp == NULL)
		return -ENOMEM;
	sqp->ctx = ctx;
	sqp->qp = qp;
	sqp->qpn = SIM_QPN_BASE + (uint32_t)index;
	sqp->scq = scq->priv;
	sqp->rcq = rcq->priv;
	sqp->sq_wqe_cnt = rte_align32pow2(caps->max_send_wr * max_wqe_bbs(caps));
	if (sqp->sq_wqe_cnt > 32768) { /* the 16-bit WQE counter must not lap */
		free(sqp);
		return -EINVAL;
	}
	sqp->rq_wqe_cnt = rte_align32pow2(RTE_MAX(caps->max_recv_wr, 1u));
	rq_stride = rte_align32pow2(16 * RTE_MAX(caps->max_recv_sge, 1u));
	sqp->rq_max_sge = rq_stride / 16;   /* as mlx5: the stride decides */
	sqp->rq_stride_shift = log2_u32(rq_stride);
	sqp->inflight_cap = sqp->sq_wqe_cnt;
	sqp->dbrec = zalloc_aligned(64);
	sqp->sq_buf = zalloc_aligned((size_t)sqp->sq_wqe_cnt * 64);
	sqp->rq_buf = zalloc_aligned((size_t)sqp->rq_wqe_cnt * rq_stride);
	sqp->inflight = calloc(sqp->inflight_cap, sizeof(*sqp->inflight));
	if (sqp->dbrec == NULL || sqp->sq_buf == NULL || sqp->rq_buf == NULL ||
	    sqp->inflight == NULL) {
		rn_sim_qp_destroy(ctx, sqp);
		return -ENOMEM;
	}
	sqp->state = RN_QP_RESET;

	qp->qpn = sqp->qpn;
	qp->priv = sqp;
	qp->sq = (struct rn_sq){
		.buf = sqp->sq_buf,
		.wqe_mask = sqp->sq_wqe_cnt - 1,
		.qpn_shifted = sqp->qpn << 8,
		.max_inline = caps->max_inline,
		.dbrec = &sqp->dbrec[MLX5_SND_DBR],
		.bf_reg = ctx->doorbell,
		.bf_size = SIM_BF_SIZE,
	};
	qp->rq = (struct rn_rq){
		.buf = sqp->rq_buf,
		.wqe_mask = sqp->rq_wqe_cnt - 1,
		.stride_shift = sqp->rq_stride_shift,
		.max_sge = sqp->rq_max_sge,
		.dbrec = &sqp->dbrec[MLX5_RCV_DBR],
	};
	ctx->qps[index] = sqp;
	sqp->next = ctx->live;
	ctx->live = sqp;
	return 0;
}

void
rn_sim_qp_destroy(struct sim_ctx *ctx, struct sim_qp *sqp)
{
	uint32_t index = sqp->qpn - SIM_QPN_BASE;

	if (index < SIM_MAX_QPS && ctx->qps[index] == sqp) {
		ctx->qps[index] = NULL;
		for (struct sim_qp **l = &ctx->live; *l != NULL; l = &(*l)->next) {
			if (*l == sqp) {
				*l = sqp->next;
				break;
			}
		}
	}
	rn_sim_qp_drop_held(sqp);
	free(sqp->dbrec);
	free(sqp->sq_buf);
	free(sqp->rq_buf);
	free(sqp->inflight);
	free(sqp);
}

/* Which transitions the RC state machine allows (IB spec 10.3.1). */
static bool
transition_allowed(enum rn_qp_state from, enum rn_qp_state to)
{
	switch (to) {
	case RN_QP_RESET:
	case RN_QP_ERR:
		return true;
	case RN_QP_INIT:
		return from == RN_QP_RESET || from == RN_QP_INIT;
	case RN_QP_RTR:
		return from == RN_QP_INIT;
	case RN_QP_RTS:
		return from == RN_QP_RTR || from == RN_QP_RTS;
	}
	return false;
}

static void
reset(struct sim_qp *sqp)
{
	/* RESET zeroes both doorbell record words, as mlx5 does. */
	sqp->dbrec[MLX5_RCV_DBR] = 0;
	sqp->dbrec[MLX5_SND_DBR] = 0;
	sqp->sq_next = 0;
	sqp->rq_next = 0;
	sqp->inflight_head = sqp->inflight_count = 0;
	sqp->reads_out = 0;
	sqp->resp_reads = 0;
	sqp->rd_resp_pkts = sqp->rd_resp_bytes = 0;
	sqp->rx.active = false;
	sqp->req_state = SIM_REQ_SEND;
	sqp->resend_at = 0;
	sqp->deadline_ns = 0;
	rn_sim_qp_drop_held(sqp);
}

/* The path MTU in bytes: the peer's port's (IBV_MTU_256 = 1 ..
 * IBV_MTU_4096 = 5), no more than this device's, RN_SIM_MTU. Both ends
 * must use the same: the responder makes a READ's response packets by
 * its own, the requester counts their PSNs by its own (as on IB, where
 * RTR sets one path MTU for both). */
static uint32_t
path_mtu(uint8_t remote)
{
	uint32_t mtu = remote >= IBV_MTU_256 && remote <= IBV_MTU_4096 ?
		       128u << remote : RN_SIM_MTU;

	return RTE_MIN(mtu, (uint32_t)RN_SIM_MTU);
}

/* READs outstanding: what the connection asks (0: the most the device
 * takes, RN_QP_MAX_RD_ATOMIC, which also caps what is asked). */
static uint8_t
rd_atomic(uint8_t asked)
{
	return asked == 0 || asked > RN_QP_MAX_RD_ATOMIC ? RN_QP_MAX_RD_ATOMIC :
							   asked;
}

int
rn_sim_qp_modify(struct sim_ctx *ctx, struct sim_qp *sqp, enum rn_qp_state state,
		 const struct rn_qp_connect *conn)
{
	(void)ctx;
	if (!transition_allowed(sqp->state, state))
		return -EINVAL;
	switch (state) {
	case RN_QP_RESET:
		reset(sqp);
		break;
	case RN_QP_INIT:
		break;
	case RN_QP_RTR:
		if (conn->min_rnr_timer > 31)
			return -EINVAL;
		sqp->conn = *conn;
		rn_sim_addr_from_nic(&conn->remote, &sqp->remote);
		sqp->expected_psn = conn->remote_psn & 0xffffff;
		sqp->max_dest_rd_atomic = rd_atomic(conn->max_dest_rd_atomic);
		sqp->mtu = path_mtu(conn->remote.mtu);
		break;
	case RN_QP_RTS:
		if (sqp->state == RN_QP_RTS) {
			/* RTS -> RTS may change these two only (IBA 11.2.4.2):
			 * the send PSN and the retry counts stay. */
			sqp->conn.min_rnr_timer = conn->min_rnr_timer;
			sqp->conn.access = conn->access;
			return 0;
		}
		if (conn->retry_cnt > 7 || conn->rnr_retry > 7 ||
		    conn->timeout > 31)
			return -EINVAL;
		sqp->conn.local_psn = conn->local_psn;
		sqp->conn.timeout = conn->timeout;
		sqp->conn.retry_cnt = conn->retry_cnt;
		sqp->conn.rnr_retry = conn->rnr_retry;
		sqp->next_psn = conn->local_psn & 0xffffff;
		sqp->retries_left = conn->retry_cnt;
		sqp->rnr_left = conn->rnr_retry;
		sqp->max_rd_atomic = rd_atomic(conn->max_rd_atomic);
		break;
	case RN_QP_ERR:
		if (sqp->state != RN_QP_ERR)
			rn_sim_qp_enter_err(sqp);
		return 0;
	}
	sqp->state = state;
	return 0;
}

uint32_t
rn_sim_rq_posted(const struct sim_qp *sqp)
{
	uint32_t head = rte_be_to_cpu_32(__atomic_load_n(
		&sqp->dbrec[MLX5_RCV_DBR], __ATOMIC_ACQUIRE)) & 0xffff;

	return (head - sqp->rq_next) & 0xffff;
}

uint32_t
rn_sim_sq_posted(const struct sim_qp *sqp)
{
	uint32_t head = rte_be_to_cpu_32(__atomic_load_n(
		&sqp->dbrec[MLX5_SND_DBR], __ATOMIC_ACQUIRE)) & 0xffff;

	return (head - sqp->sq_next) & 0xffff;
}

/*
 * Flush posted send WQEs from sq_next to the doorbell record. Only the
 * control segment is read, unchecked: a flush CQE carries the opcode and
 * WQE counter, and a malformed WQE is flushed like any other.
 */
static unsigned int
flush_sq(struct sim_qp *sqp)
{
	uint32_t left = rn_sim_sq_posted(sqp);
	unsigned int n = 0;

	while (left > 0) {
		const struct mlx5_wqe_ctrl_seg *ctrl =
			(const void *)rn_sim_wqe_unit(sqp, sqp->sq_next, 0);
		uint8_t opcode = (uint8_t)rte_be_to_cpu_32(ctrl->opmod_idx_opcode);
		uint32_t bbs = rn_sim_wqe_bbs(rte_be_to_cpu_32(ctrl->qpn_ds) &
					      0x3f);

		rn_sim_cq_push_error(sqp->scq, MLX5_CQE_REQ_ERR,
				     MLX5_CQE_SYNDROME_WR_FLUSH_ERR, opcode,
				     sqp->qpn, (uint16_t)sqp->sq_next);
		sqp->sq_next += bbs;
		left = bbs < left ? left - bbs : 0;
		n++;
	}
	return n;
}

static unsigned int
flush_rq(struct sim_qp *sqp)
{
	unsigned int n = 0;

	for (uint32_t left = rn_sim_rq_posted(sqp); left > 0; left--, n++) {
		rn_sim_cq_push_error(sqp->rcq, MLX5_CQE_RESP_ERR,
				     MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 0, sqp->qpn,
				     (uint16_t)sqp->rq_next);
		sqp->rq_next++;
	}
	return n;
}

void
rn_sim_qp_flush_inflight(struct sim_qp *sqp)
{
	while (sqp->inflight_count > 0) {
		struct sim_inflight f = rn_sim_inflight_retire(sqp);

		rn_sim_cq_push_error(sqp->scq, MLX5_CQE_REQ_ERR,
				     MLX5_CQE_SYNDROME_WR_FLUSH_ERR, f.opcode,
				     sqp->qpn, (uint16_t)f.bb);
	}
}

void
rn_sim_qp_drop_held(struct sim_qp *sqp)
{
	while (sqp->held != NULL) {
		struct sim_held_frame *f = sqp->held;

		sqp->held = f->next;
		free(f);
	}
	sqp->held_tail = NULL;
	sqp->stats.frames_held_now = 0;
	/* The replies it owes go too: a QP out of RTR and RTS sends nothing. */
	sqp->resp_head = sqp->resp_count = 0;
	sqp->resp_reads = sqp->resp_made = 0;
	sqp->resp_wire = NULL;
}

void
rn_sim_qp_enter_err(struct sim_qp *sqp)
{
	sqp->state = RN_QP_ERR;
	rn_sim_qp_drop_held(sqp);
	rn_sim_qp_flush_inflight(sqp);
	sqp->req_state = SIM_REQ_SEND;
	sqp->resend_at = 0;
	flush_sq(sqp);
	flush_rq(sqp);
}

unsigned int
rn_sim_qp_flush_new(struct sim_qp *sqp)
{
	return flush_sq(sqp) + flush_rq(sqp);
}

bool
rn_sim_qp_from_peer(const struct sim_qp *sqp, const struct sim_wire *wire,
		    uint32_t src_qpn)
{
	const struct sim_addr *src = rn_sim_wire_remote(wire);

	return src_qpn == sqp->conn.remote_qpn && src != NULL &&
	       rn_sim_addr_equal(src, &sqp->remote);
}

struct sim_qp *
rn_sim_qp_lookup(struct sim_ctx *ctx, uint32_t qpn)
{
	uint32_t index = qpn - SIM_QPN_BASE;

	return index < SIM_MAX_QPS ? ctx->qps[index] : NULL;
}
