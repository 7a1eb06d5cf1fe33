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
#include <rte_debug.h>
#include <rte_io.h>
#include <string.h>

#include "rn_queues.h"

#define RN_WQE_MAX_DS 63           /* 6-bit DS field: 1008 bytes */
#define RN_WQE_SEG 16

/* The 16-byte unit at byte offset off of the ring, wrapping at its end. */
static inline uint8_t *
rn_sq_at(const struct rn_sq *sq, uint32_t off)
{
	return sq->buf + (off & sq->byte_mask);
}

/* Copy len bytes to ring offset off, wrapping at the end of the ring. */
static inline void
rn_sq_copy_in(const struct rn_sq *sq, uint32_t off, const void *src,
	      uint32_t len)
{
	uint32_t start = off & sq->byte_mask;
	uint32_t room = sq->byte_mask + 1 - start;

	if (likely(len <= room)) {
		memcpy(sq->buf + start, src, len);
		return;
	}
	memcpy(sq->buf + start, src, room);
	memcpy(sq->buf, (const uint8_t *)src + room, len - room);
}

/* Inline segment at ring offset off: byte count | MLX5_INLINE_SEG, data. */
static inline void
rn_sq_set_inline(const struct rn_sq *sq, uint32_t off, const struct rn_wr *wr,
		 uint32_t total)
{
	struct mlx5_wqe_inl_data_seg *inl = (void *)rn_sq_at(sq, off);

	inl->byte_count = rte_cpu_to_be_32(total | MLX5_INLINE_SEG);
	off += sizeof(*inl);
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		rn_sq_copy_in(sq, off, (const void *)(uintptr_t)wr->sg_list[i].addr,
			      wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}
}

/*
 * Data segments for the non-empty entries of wr: to the NIC a byte count of
 * 0 means 2 GiB, so an empty entry is left out, as libmlx5 does.
 */
static inline uint32_t
rn_sq_set_data(const struct rn_sq *sq, uint32_t off, const struct rn_wr *wr)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < wr->num_sge; i++) {
		const struct rn_sge *sge = &wr->sg_list[i];

		if (unlikely(sge->length == 0))
			continue;
		mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)rn_sq_at(sq, off),
				    sge->length, sge->lkey, sge->addr);
		off += RN_WQE_SEG;
		n++;
	}
	return n;
}

/*
 * The remote-address segment of WRITE, WRITE_IMM and READ: the peer's
 * virtual address and the rkey of its registration, big endian, the
 * reserved word zero (as rdma-core writes it).
 */
static inline void
rn_sq_set_raddr(struct mlx5_wqe_raddr_seg *seg, uint64_t raddr, uint32_t rkey)
{
	seg->raddr = rte_cpu_to_be_64(raddr);
	seg->rkey = rte_cpu_to_be_32(rkey);
	seg->reserved = 0;
}

/* The ctrl segment's immediate: what the work request carries for
 * SEND_IMM and WRITE_IMM, 0 for every other opcode (as rdma-core, which
 * reads the immediate only for those two). The _IMM opcodes are the odd
 * ones (0x0b, 0x09; SEND 0x0a, WRITE 0x08, READ 0x10): no branch. */
static inline __be32
rn_wr_ctrl_imm(uint8_t opcode, __be32 imm)
{
	RTE_BUILD_BUG_ON(!(RN_WR_SEND_IMM & 1) || !(RN_WR_WRITE_IMM & 1) ||
			 (RN_WR_SEND & 1) || (RN_WR_WRITE & 1) ||
			 (RN_WR_READ & 1));
	return imm & (__be32)-(uint32_t)(opcode & 1);
}

/* Free BBs: how much a caller may post before the next completion. */
static inline uint32_t
rn_sq_room(const struct rn_sq *sq)
{
	return sq->limit - (sq->pi - sq->ci);
}

/*
 * The ctrl segment's flags for a WQE of nbb BBs. Signals at least twice per
 * sq->limit BBs even when the caller never asks, or the ring would never
 * free: a WQE that finds no room always has a signalled one ahead of it.
 *
 * RN_WR_PACED WQEs are left out of that count, which saves the send path
 * its upkeep: their caller signals one in every k of them (or more often)
 * by its own rule, and posts none over rn_sq_paced_max_bbs(sq, k) = m BBs,
 * so that k of them take at most half of sq->limit (the notify QP's inline
 * SENDs: k is RN_SEND_SIGNAL_EVERY, or fewer with a smaller send window). The
 * unsignalled WQEs in flight after the last signalled one then take at most
 * sq->limit / 2 - m BBs in paced ones (k - 1 of them) and sq->limit / 2 in
 * counted ones (whose count restarts at any signalled WQE): a WQE of m BBs
 * or fewer that finds no room (more than sq->limit - m in flight) still
 * has a signalled one ahead. (The notify QP's counted WQEs take one BB.)
 */
static inline uint8_t
rn_sq_fm_ce_se(struct rn_sq *sq, uint32_t nbb, uint8_t flags)
{
	uint8_t fm_ce_se = 0;

	if (!(flags & RN_WR_PACED))
		sq->unsignaled_bbs += nbb;
	if ((flags & RN_WR_SIGNALED) ||
	    (!(flags & RN_WR_PACED) && sq->unsignaled_bbs > sq->limit / 2)) {
		fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
		sq->unsignaled_bbs = 0;
	}
	if (unlikely(flags & (RN_WR_SOLICITED | RN_WR_FENCE)))
		fm_ce_se |= ((flags & RN_WR_SOLICITED) ? MLX5_WQE_CTRL_SOLICITED : 0) |
			    ((flags & RN_WR_FENCE) ? MLX5_WQE_CTRL_FENCE : 0);
	return fm_ce_se;
}

/* The largest paced WQE, in BBs, for a caller that signals one in every
 * k: k of them take half of sq->limit at most. 0: none fits. */
static inline uint32_t
rn_sq_paced_max_bbs(const struct rn_sq *sq, uint32_t k)
{
	return sq->limit / (2 * k);
}

/*
 * The ctrl segment of the WQE at sq->pi, all 16 bytes: what
 * mlx5dv_set_ctrl_seg() writes, and the reserved dci_stream_channel_id it
 * leaves alone, which the ring's last lap may have filled with inline
 * data (rdma-core zeroes it as well).
 */
static inline void
rn_sq_set_ctrl(const struct rn_sq *sq, struct mlx5_wqe_ctrl_seg *ctrl,
	       uint8_t opcode, uint32_t ds /* 32 bits: no zero-extension */,
	       uint8_t fm_ce_se, __be32 imm)
{
	/* signature, dci_stream_channel_id and fm_ce_se: bytes 8 to 11, in
	 * one store rather than three. */
	uint32_t flags_word = rte_cpu_to_le_32((uint32_t)fm_ce_se << 24);

	RTE_BUILD_BUG_ON(offsetof(struct mlx5_wqe_ctrl_seg, signature) != 8 ||
			 offsetof(struct mlx5_wqe_ctrl_seg, fm_ce_se) != 11);
	RTE_ASSERT(ds <= RN_WQE_MAX_DS);

	ctrl->opmod_idx_opcode =
		rte_cpu_to_be_32(((uint32_t)(uint16_t)sq->pi << 8) | opcode);
	ctrl->qpn_ds = rte_cpu_to_be_32(sq->qpn_shifted | ds);
	memcpy(&ctrl->signature, &flags_word, sizeof(flags_word));
	ctrl->imm = imm;
}

/* Record the WQE at ring offset off and move the producer past it. */
static inline void
rn_sq_commit(struct rn_sq *sq, uint32_t off, uint32_t nbb, uint64_t wr_id,
	     struct mlx5_wqe_ctrl_seg *ctrl)
{
	uint32_t wqe_index = off / MLX5_SEND_WQE_BB;

	sq->wr_id[wqe_index] = wr_id;
	sq->pi += nbb;
	sq->wqe_end[wqe_index] = sq->pi;
	sq->last_ctrl = ctrl;
}

/* Total bytes of wr, in 64 bits: 32-bit lengths must not wrap the sum. */
static inline uint64_t
rn_wr_length(const struct rn_wr *wr)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	return total;
}

/*
 * Write one WQE for wr. It is not visible to the NIC until
 * rn_sq_ring_doorbell(). Everything is checked before the first store, so a
 * refused WQE leaves the ring untouched.
 * Returns 0, -EAGAIN when the ring has no room (retry after completions), or
 * -EINVAL (too many SGEs, READ inline, inline data over max_inline).
 */
static inline int
rn_sq_post(struct rn_sq *sq, const struct rn_wr *wr)
{
	uint32_t off = (sq->pi & sq->wqe_mask) * MLX5_SEND_WQE_BB;
	struct mlx5_wqe_ctrl_seg *ctrl = (void *)(sq->buf + off);
	bool remote = wr->opcode != RN_WR_SEND && wr->opcode != RN_WR_SEND_IMM;
	uint32_t head = 1 + remote;     /* ctrl [+ raddr], in 16-byte units */
	uint64_t inline_len = 0;
	uint32_t ds, nbb;

	if (unlikely(wr->num_sge > RN_WR_MAX_SGE))
		return -EINVAL;
	if (wr->flags & RN_WR_INLINE) {
		inline_len = rn_wr_length(wr);
		if (unlikely(inline_len > sq->max_inline ||
			     wr->opcode == RN_WR_READ))
			return -EINVAL;
		ds = head + (uint32_t)(4 + inline_len + RN_WQE_SEG - 1) /
			    RN_WQE_SEG;
	} else {
		/* An upper bound for the room check: empty entries are left
		 * out as the segments are written. */
		ds = head + wr->num_sge;
	}
	nbb = (ds + 3) / 4;
	if (unlikely(nbb > rn_sq_room(sq)))
		return -EAGAIN;
	if (remote)
		rn_sq_set_raddr((struct mlx5_wqe_raddr_seg *)(ctrl + 1),
				wr->raddr, wr->rkey);
	/* ctrl + raddr are 32 bytes: the rest starts inside the first BB. */
	if (wr->flags & RN_WR_INLINE) {
		rn_sq_set_inline(sq, off + head * RN_WQE_SEG, wr,
				 (uint32_t)inline_len);
	} else {
		ds = head + rn_sq_set_data(sq, off + head * RN_WQE_SEG, wr);
		nbb = (ds + 3) / 4;
	}
	rn_sq_set_ctrl(sq, ctrl, wr->opcode, ds,
		       rn_sq_fm_ce_se(sq, nbb, wr->flags),
		       rn_wr_ctrl_imm(wr->opcode, wr->imm));
	rn_sq_commit(sq, off, nbb, wr->wr_id, ctrl);
	return 0;
}

/*
 * The transfer case, leaner than rn_sq_post(): one-sided RDMA between one
 * local buffer and raddr/rkey, by a data segment. opcode is RN_WR_WRITE,
 * RN_WR_WRITE_IMM (imm passed to the peer's receive CQE) or RN_WR_READ
 * (sge is where the bytes land; its lkey must grant LOCAL_WRITE);
 * sge->length > 0 (an empty entry would be left out: use rn_sq_post()).
 * ctrl + raddr + data: 3 units in one BB that never wraps. Same checks,
 * same results as rn_sq_post(): 0 or -EAGAIN when the ring is full.
 */
static inline int
rn_sq_post_rdma(struct rn_sq *sq, uint8_t opcode, const struct rn_sge *sge,
		uint64_t raddr, uint32_t rkey, __be32 imm, uint8_t flags,
		uint64_t wr_id)
{
	uint32_t off = (sq->pi & sq->wqe_mask) * MLX5_SEND_WQE_BB;
	struct mlx5_wqe_ctrl_seg *ctrl = (void *)(sq->buf + off);
	struct mlx5_wqe_raddr_seg *rseg = (void *)(ctrl + 1);

	RTE_ASSERT(sge->length != 0);
	RTE_ASSERT(opcode == RN_WR_WRITE || opcode == RN_WR_WRITE_IMM ||
		   opcode == RN_WR_READ);
	if (unlikely(rn_sq_room(sq) == 0))
		return -EAGAIN;
	rn_sq_set_raddr(rseg, raddr, rkey);
	mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(rseg + 1), sge->length,
			    sge->lkey, sge->addr);
	rn_sq_set_ctrl(sq, ctrl, opcode, 3, rn_sq_fm_ce_se(sq, 1, flags),
		       rn_wr_ctrl_imm(opcode, imm));
	rn_sq_commit(sq, off, 1, wr_id, ctrl);
	return 0;
}

/* 16-byte units of an inline SEND of len bytes: ctrl, byte count, data. */
static inline uint32_t
rn_sq_send_inline_ds(uint32_t len)
{
	return 1 + (uint32_t)(sizeof(struct mlx5_wqe_inl_data_seg) + len +
			      RN_WQE_SEG - 1) / RN_WQE_SEG;
}

/* BBs of an inline SEND of len bytes: (ds + 3) / 4, from len alone. */
static inline uint32_t
rn_sq_send_inline_bbs(uint32_t len)
{
	return (sizeof(struct mlx5_wqe_ctrl_seg) +
		sizeof(struct mlx5_wqe_inl_data_seg) + len +
		MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB;
}

/* The most bytes an inline SEND of nbb BBs (or fewer) carries. */
static inline uint32_t
rn_sq_send_inline_max(uint32_t nbb)
{
	return nbb == 0 ? 0 : nbb * MLX5_SEND_WQE_BB -
			      sizeof(struct mlx5_wqe_ctrl_seg) -
			      sizeof(struct mlx5_wqe_inl_data_seg);
}

/* Ctrl and byte count of the inline SEND of len bytes at ring offset off. */
static inline void
rn_sq_send_inline_finish(struct rn_sq *sq, uint32_t off, uint32_t len,
			 uint8_t opcode, __be32 imm, uint8_t flags,
			 uint64_t wr_id)
{
	struct mlx5_wqe_ctrl_seg *ctrl = (void *)(sq->buf + off);
	struct mlx5_wqe_inl_data_seg *inl = (void *)(ctrl + 1);
	uint32_t ds = rn_sq_send_inline_ds(len);
	uint32_t nbb = rn_sq_send_inline_bbs(len);

	inl->byte_count = rte_cpu_to_be_32(len | MLX5_INLINE_SEG);
	rn_sq_set_ctrl(sq, ctrl, opcode, ds,
		       rn_sq_fm_ce_se(sq, nbb, flags), imm);
	rn_sq_commit(sq, off, nbb, wr_id, ctrl);
}

/*
 * The small common case, leaner than rn_sq_post(): one contiguous buffer
 * sent inline as SEND or SEND_IMM (opcode). Same checks, same results.
 */
static inline int
rn_sq_post_send_inline(struct rn_sq *sq, const void *data, uint32_t len,
		       uint8_t opcode, __be32 imm, uint8_t flags,
		       uint64_t wr_id)
{
	uint32_t off = (sq->pi & sq->wqe_mask) * MLX5_SEND_WQE_BB;

	if (unlikely(len > sq->max_inline))
		return -EINVAL;
	if (unlikely(rn_sq_send_inline_bbs(len) > rn_sq_room(sq)))
		return -EAGAIN;
	rn_sq_copy_in(sq, off + sizeof(struct mlx5_wqe_ctrl_seg) +
		      sizeof(struct mlx5_wqe_inl_data_seg), data, len);
	rn_sq_send_inline_finish(sq, off, len, opcode, imm, flags, wr_id);
	return 0;
}

/*
 * The other common case: one buffer sent by a data segment as SEND or
 * SEND_IMM (opcode), sge->length > 0. Same checks, same results as
 * rn_sq_post().
 */
static inline int
rn_sq_post_send_sge(struct rn_sq *sq, const struct rn_sge *sge,
		    uint8_t opcode, __be32 imm, uint8_t flags, uint64_t wr_id)
{
	uint32_t off = (sq->pi & sq->wqe_mask) * MLX5_SEND_WQE_BB;
	struct mlx5_wqe_ctrl_seg *ctrl = (void *)(sq->buf + off);

	if (unlikely(rn_sq_room(sq) == 0))
		return -EAGAIN;
	/* ctrl + data: 2 units, one BB, never wrapping. */
	mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(ctrl + 1), sge->length,
			    sge->lkey, sge->addr);
	rn_sq_set_ctrl(sq, ctrl, opcode, 2,
		       rn_sq_fm_ce_se(sq, 1, flags), imm);
	rn_sq_commit(sq, off, 1, wr_id, ctrl);
	return 0;
}

/*
 * A 4-byte word RDMA WRITTEN inline to raddr (credit updates): ctrl, raddr
 * and an inline segment, 3 units in one BB that never wraps. Same checks,
 * same results as rn_sq_post() for that work request.
 */
static inline int
rn_sq_post_write_word(struct rn_sq *sq, uint32_t word, uint64_t raddr,
		      uint32_t rkey, uint8_t flags, uint64_t wr_id)
{
	uint32_t off = (sq->pi & sq->wqe_mask) * MLX5_SEND_WQE_BB;
	struct mlx5_wqe_ctrl_seg *ctrl = (void *)(sq->buf + off);
	struct mlx5_wqe_raddr_seg *rseg = (void *)(ctrl + 1);
	struct mlx5_wqe_inl_data_seg *inl = (void *)(rseg + 1);

	if (unlikely(sizeof(word) > sq->max_inline))
		return -EINVAL;
	if (unlikely(rn_sq_room(sq) == 0))
		return -EAGAIN;
	rn_sq_set_raddr(rseg, raddr, rkey);
	inl->byte_count = rte_cpu_to_be_32(sizeof(word) | MLX5_INLINE_SEG);
	memcpy(inl + 1, &word, sizeof(word));
	rn_sq_set_ctrl(sq, ctrl, RN_WR_WRITE, 3,
		       rn_sq_fm_ce_se(sq, 1, flags), 0);
	rn_sq_commit(sq, off, 1, wr_id, ctrl);
	return 0;
}

/*
 * An inline SEND whose data the caller writes in place instead of copying
 * it from a buffer, in two steps. rn_sq_send_inline_place() says where the
 * len bytes of the next WQE's data go (len <= max_inline, which the caller
 * checked), contiguous, in at->data, or returns false when they would wrap
 * at the end of the ring or the ring has no room (rn_sq_post_send_inline()
 * from a buffer handles both); the caller writes them there, then posts
 * the WQE with rn_sq_post_send_inline_placed(), before
 * rn_sq_ring_doorbell(). Data first: written after the WQE's fields, its
 * byte stores, which may alias anything, would make the compiler read
 * those fields again. A bool rather than a pointer that may be NULL: the
 * compiler cannot tell that buf + offset is not, and would test it.
 */
struct rn_sq_place {
	uint8_t *data;  /* where the len bytes go */
	uint32_t off;   /* the WQE's ring offset */
};

static inline bool
rn_sq_send_inline_place(const struct rn_sq *sq, uint32_t len,
			struct rn_sq_place *at)
{
	uint32_t data;

	RTE_ASSERT(len <= sq->max_inline);
	at->off = (sq->pi & sq->wqe_mask) * MLX5_SEND_WQE_BB;
	data = at->off + sizeof(struct mlx5_wqe_ctrl_seg) +
	       sizeof(struct mlx5_wqe_inl_data_seg);
	/* data >= 20: data + len - 1 is the last byte, and cannot wrap. */
	if (unlikely(rn_sq_send_inline_bbs(len) > rn_sq_room(sq) ||
		     data + len - 1 > sq->byte_mask))
		return false;
	at->data = sq->buf + data;
	return true;
}

static inline void
rn_sq_post_send_inline_placed(struct rn_sq *sq, const struct rn_sq_place *at,
			      uint32_t len, uint8_t opcode, __be32 imm,
			      uint8_t flags, uint64_t wr_id)
{
	rn_sq_send_inline_finish(sq, at->off, len, opcode, imm, flags, wr_id);
}

/*
 * Make the WQEs posted since the last doorbell visible to the NIC, at
 * least one of them: one doorbell covers a burst. Order: WQE stores,
 * doorbell record, MMIO.
 */
static inline void
rn_sq_ring_doorbell_posted(struct rn_sq *sq)
{
	rte_io_wmb();          /* WQEs before the doorbell record */
	*sq->dbrec = rte_cpu_to_be_32(sq->pi & 0xffff);
	rte_wmb();             /* doorbell record before the doorbell */
	rte_write64_relaxed(*(uint64_t *)sq->last_ctrl,
			    sq->bf_reg + sq->bf_offset);
	rte_wmb();             /* flush the write-combining buffer */
	sq->bf_offset ^= sq->bf_size;
	sq->last_ctrl = NULL;
}

/* The same when there may be nothing to make visible. */
static inline void
rn_sq_ring_doorbell(struct rn_sq *sq)
{
	if (sq->last_ctrl != NULL)
		rn_sq_ring_doorbell_posted(sq);
}

#endif /* RN_SQ_H */
