/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_SQ_H
#define RN_SQ_H

/*
 * Posting send WQEs in the mlx5 format and ringing the doorbell. Owning
 * lcore only. A WQE is ctrl [+ raddr] + (inline | data segments), in 16-byte
 * units (DS); it occupies ceil(DS / 4) 64-byte BBs and may wrap at the end of
 * the ring, even in the middle of inline data.
 */

#include <errno.h>
#include <stdbool.h>
#include <rte_atomic.h>
#include <rte_byteorder.h>
#include <rte_io.h>
#include <string.h>

#include "rn_queues.h"

#define RN_WQE_MAX_DS 63           /* 6-bit DS field: 1008 bytes */
#define RN_WQE_SEG 16

static inline void *
rn_sq_wrap(const struct rn_sq *sq, void *p)
{
	return (uint8_t *)p >= sq->buf_end ?
		       (uint8_t *)p - (sq->buf_end - sq->buf) : p;
}

/* Copy len bytes to dst inside the SQ ring, wrapping at its end. */
static inline void
rn_sq_copy_wrapped(const struct rn_sq *sq, uint8_t *dst, const void *src,
		   uint32_t len)
{
	uint32_t room = (uint32_t)(sq->buf_end - dst);

	if (likely(len <= room)) {
		memcpy(dst, src, len);
		return;
	}
	memcpy(dst, src, room);
	memcpy(sq->buf, (const uint8_t *)src + room, len - room);
}

/* Inline segment: byte count with MLX5_INLINE_SEG, then the data. */
static inline uint32_t
rn_sq_set_inline(const struct rn_sq *sq, uint8_t *seg, const struct rn_wr *wr)
{
	struct mlx5_wqe_inl_data_seg *inl = (void *)seg;
	uint8_t *dst = rn_sq_wrap(sq, seg + sizeof(*inl));
	uint32_t total = 0;

	for (uint32_t i = 0; i < wr->num_sge; i++) {
		const struct rn_sge *sge = &wr->sg_list[i];

		rn_sq_copy_wrapped(sq, dst, (const void *)(uintptr_t)sge->addr,
				   sge->length);
		dst = rn_sq_wrap(sq, dst + sge->length);
		total += sge->length;
	}
	inl->byte_count = rte_cpu_to_be_32(total | MLX5_INLINE_SEG);
	return RTE_ALIGN_CEIL(sizeof(*inl) + total, RN_WQE_SEG) / RN_WQE_SEG;
}

static inline uint32_t
rn_sq_set_data(const struct rn_sq *sq, uint8_t *seg, const struct rn_wr *wr)
{
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		const struct rn_sge *sge = &wr->sg_list[i];

		mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)seg,
				    sge->length, sge->lkey, sge->addr);
		seg = rn_sq_wrap(sq, seg + RN_WQE_SEG);
	}
	return wr->num_sge;
}

static inline uint32_t
rn_wr_inline_bytes(const struct rn_wr *wr)
{
	uint32_t total = 0;

	for (uint32_t i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	return total;
}

/*
 * Write one WQE for wr. It is not visible to the NIC until
 * rn_sq_ring_doorbell(). Returns 0, -EAGAIN when the ring has no room (retry
 * after completions), or -EINVAL (READ inline, too many SGEs, inline data
 * over max_inline).
 */
static inline int
rn_sq_post(struct rn_sq *sq, const struct rn_wr *wr)
{
	bool remote = wr->opcode != RN_WR_SEND && wr->opcode != RN_WR_SEND_IMM;
	bool inl = (wr->flags & RN_WR_INLINE) != 0;
	uint32_t ds_max = 1 + remote + (inl ?
		(uint32_t)RTE_ALIGN_CEIL(4 + sq->max_inline, RN_WQE_SEG) / RN_WQE_SEG :
		wr->num_sge);
	uint32_t slot = sq->pi & sq->wqe_mask;
	struct mlx5_wqe_ctrl_seg *ctrl = (void *)(sq->buf + slot * MLX5_SEND_WQE_BB);
	uint8_t *seg = (uint8_t *)ctrl + sizeof(*ctrl);
	uint8_t fm_ce_se = 0;
	uint32_t ds, nbb;

	if (unlikely(wr->num_sge > RN_WR_MAX_SGE ||
		     (inl && (wr->opcode == RN_WR_READ ||
			      rn_wr_inline_bytes(wr) > sq->max_inline))))
		return -EINVAL;
	/* Room for the largest this WQE can be, before writing any of it. */
	if (unlikely(sq->pi - sq->ci + (ds_max + 3) / 4 > sq->wqe_mask + 1))
		return -EAGAIN;
	if (remote) {
		struct mlx5_wqe_raddr_seg *raddr = (void *)seg;

		raddr->raddr = rte_cpu_to_be_64(wr->raddr);
		raddr->rkey = rte_cpu_to_be_32(wr->rkey);
		raddr->reserved = 0;
		seg += sizeof(*raddr);
	}
	/* ctrl + raddr are 32 bytes: the segments start inside the first BB. */
	ds = 1 + remote + (inl ? rn_sq_set_inline(sq, seg, wr) :
				 rn_sq_set_data(sq, seg, wr));
	nbb = (ds + 3) / 4;
	sq->unsignaled_bbs += nbb;
	/* Signal at least twice per ring, or the ring never frees. */
	if ((wr->flags & RN_WR_SIGNALED) ||
	    sq->unsignaled_bbs > (sq->wqe_mask + 1) / 2) {
		fm_ce_se |= MLX5_WQE_CTRL_CQ_UPDATE;
		sq->unsignaled_bbs = 0;
	}
	if (wr->flags & RN_WR_SOLICITED)
		fm_ce_se |= MLX5_WQE_CTRL_SOLICITED;
	if (wr->flags & RN_WR_FENCE)
		fm_ce_se |= MLX5_WQE_CTRL_FENCE;
	mlx5dv_set_ctrl_seg(ctrl, (uint16_t)sq->pi, wr->opcode, 0,
			    sq->qpn_shifted >> 8, fm_ce_se, (uint8_t)ds, 0,
			    wr->imm);
	sq->wr_id[slot] = wr->wr_id;
	sq->pi += nbb;
	sq->wqe_end[slot] = sq->pi;
	sq->last_ctrl = ctrl;
	return 0;
}

/*
 * Make every WQE posted since the last doorbell visible to the NIC: one
 * doorbell covers a burst. Order: WQE stores, doorbell record, MMIO.
 */
static inline void
rn_sq_ring_doorbell(struct rn_sq *sq)
{
	if (sq->last_ctrl == NULL)
		return;
	rte_io_wmb();          /* WQEs before the doorbell record */
	*sq->dbrec = rte_cpu_to_be_32(sq->pi & 0xffff);
	rte_wmb();             /* doorbell record before the doorbell */
	rte_write64_relaxed(*(uint64_t *)sq->last_ctrl,
			    sq->bf_reg + sq->bf_offset);
	rte_wmb();             /* flush the write-combining buffer */
	sq->bf_offset ^= sq->bf_size;
	sq->last_ctrl = NULL;
}

/* Free BBs: how much a caller may post before the next completion. */
static inline uint32_t
rn_sq_room(const struct rn_sq *sq)
{
	return sq->wqe_mask + 1 - (sq->pi - sq->ci);
}

#endif /* RN_SQ_H */
