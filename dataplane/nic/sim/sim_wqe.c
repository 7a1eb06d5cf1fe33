/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send WQE reader, shared by the requester (which executes WQEs) and
 * the completer (which scatters READ responses into them): parse a WQE
 * out of the SQ ring, gather its data segments, scatter bytes into them.
 */
#include <rte_byteorder.h>
#include <string.h>

#include "sim_wqe_pvt.h"

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
	const struct mlx5_wqe_ctrl_seg *ctrl =
		(const void *)rn_sim_wqe_unit(sqp, bb, 0);
	uint32_t opmod_idx_opcode = rte_be_to_cpu_32(ctrl->opmod_idx_opcode);
	uint32_t qpn_ds = rte_be_to_cpu_32(ctrl->qpn_ds);
	uint32_t min_ds;

	memset(w, 0, sizeof(*w));
	w->bb = bb;
	w->opcode = (uint8_t)opmod_idx_opcode;
	w->ds = qpn_ds & 0x3f;
	w->nbb = rn_sim_wqe_bbs(w->ds);
	w->signaled = (ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) != 0;
	/* Bits 7:5, the fence mode: any fence waits for the READs before. */
	w->fence = (ctrl->fm_ce_se & 0xe0) != 0;
	w->imm = ctrl->imm;
	min_ds = opcode_min_ds(w->opcode);
	if (((opmod_idx_opcode >> 8) & 0xffff) != (bb & 0xffff) ||
	    (qpn_ds >> 8) != sqp->qpn || min_ds == 0 || w->ds < min_ds ||
	    w->nbb > sqp->sq_wqe_cnt)
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	w->first_data = 1;
	if (min_ds == 2) {
		const struct mlx5_wqe_raddr_seg *r =
			(const void *)rn_sim_wqe_unit(sqp, bb, 1);

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

int
rn_sim_wqe_gather(const struct sim_qp *sqp, const struct sim_wqe *w,
		  uint8_t *out, uint32_t *total, uint32_t access)
{
	uint64_t sum = 0;

	for (uint32_t u = w->first_data; u < w->ds; u++) {
		const struct mlx5_wqe_data_seg *d =
			(const void *)rn_sim_wqe_unit(sqp, w->bb, u);
		uint64_t len = rn_sim_seg_bytes(d->byte_count);
		uint64_t addr = rte_be_to_cpu_64(d->addr);
		uint32_t lkey = rte_be_to_cpu_32(d->lkey);
		const struct sim_mr *m;

		if (lkey == MLX5_INVALID_LKEY)
			break;
		if (sum + len > RN_SIM_MAX_MSG)
			return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
		m = rn_sim_mr_check(sqp->ctx, lkey, addr, len, access);
		if (m == NULL)
			return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		if (out != NULL)
			memcpy(out + sum, rn_sim_mr_ptr(m, addr), len);
		sum += len;
	}
	*total = (uint32_t)sum;
	return 0;
}

const uint8_t *
rn_sim_wqe_contiguous(const struct sim_qp *sqp, const struct sim_wqe *w)
{
	const struct mlx5_wqe_data_seg *d;
	const struct sim_mr *m;
	uint64_t addr;

	if (w->first_data >= w->ds)
		return NULL;
	if (w->first_data + 1 < w->ds) {
		const struct mlx5_wqe_data_seg *next =
			(const void *)rn_sim_wqe_unit(sqp, w->bb,
						      w->first_data + 1);

		if (rte_be_to_cpu_32(next->lkey) != MLX5_INVALID_LKEY)
			return NULL;
	}
	d = (const void *)rn_sim_wqe_unit(sqp, w->bb, w->first_data);
	if (rte_be_to_cpu_32(d->lkey) == MLX5_INVALID_LKEY)
		return NULL;
	addr = rte_be_to_cpu_64(d->addr);
	m = rn_sim_mr_check(sqp->ctx, rte_be_to_cpu_32(d->lkey), addr,
			    rn_sim_seg_bytes(d->byte_count), 0);
	return m != NULL ? rn_sim_mr_ptr(m, addr) : NULL;
}

void
rn_sim_wqe_scatter(const struct sim_qp *sqp, const struct sim_wqe *w,
		   uint32_t offset, const uint8_t *data, uint32_t len)
{
	uint32_t done = 0;

	for (uint32_t u = w->first_data; u < w->ds && done < len; u++) {
		const struct mlx5_wqe_data_seg *d =
			(const void *)rn_sim_wqe_unit(sqp, w->bb, u);
		uint64_t seg = rn_sim_seg_bytes(d->byte_count);
		uint64_t addr = rte_be_to_cpu_64(d->addr);
		const struct sim_mr *m;
		uint32_t n;

		if (offset >= seg) {   /* placed by earlier packets */
			offset -= (uint32_t)seg;
			continue;
		}
		n = (uint32_t)RTE_MIN(seg - offset, (uint64_t)(len - done));
		m = rn_sim_mr_check(sqp->ctx, rte_be_to_cpu_32(d->lkey),
				    addr + offset, n, RN_ACCESS_LOCAL_WRITE);
		if (m == NULL)
			return;   /* checked by the caller: not reached */
		/* (A payload the wire read to its place is there.) */
		if (rn_sim_mr_ptr(m, addr + offset) != data + done)
			memcpy(rn_sim_mr_ptr(m, addr + offset), data + done, n);
		offset = 0;
		done += n;
	}
}
