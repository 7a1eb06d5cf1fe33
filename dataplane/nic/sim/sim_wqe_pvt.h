/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_SIM_WQE_PVT_H
#define RN_SIM_WQE_PVT_H

/* Reading a send WQE out of the SQ ring, as the NIC fetches it (sim_wqe.c). */

#include <rte_byteorder.h>
#include <string.h>

#include "sim_pvt.h"

struct sim_wqe {
	uint32_t bb;               /* first BB, free running */
	uint8_t opcode;
	uint32_t ds;
	uint32_t nbb;
	bool signaled;
	bool fence;                /* wait for earlier READs to complete */
	uint32_t imm;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t first_data;       /* 16-byte unit where data starts */
	bool inl;
};

/* 64-byte BBs taken by a WQE of ds 16-byte units: at least one. */
static inline uint32_t
rn_sim_wqe_bbs(uint32_t ds)
{
	return RTE_MAX((ds + 3) / 4, 1u);
}

/* The 16-byte unit number unit of the WQE at bb, wrapping at the ring end. */
static inline const uint8_t *
rn_sim_wqe_unit(const struct sim_qp *sqp, uint32_t bb, uint32_t unit)
{
	size_t ring = (size_t)sqp->sq_wqe_cnt * 64;
	size_t off = ((size_t)(bb & (sqp->sq_wqe_cnt - 1)) * 64 + unit * 16) % ring;

	return sqp->sq_buf + off;
}

/* Copy len bytes starting at byte byte_off of the WQE, wrapping. */
static inline void
rn_sim_wqe_copy(const struct sim_qp *sqp, uint32_t bb, uint32_t byte_off,
		void *dst, uint32_t len)
{
	size_t ring = (size_t)sqp->sq_wqe_cnt * 64;
	size_t off = ((size_t)(bb & (sqp->sq_wqe_cnt - 1)) * 64 + byte_off) % ring;
	size_t first = RTE_MIN((size_t)len, ring - off);

	memcpy(dst, sqp->sq_buf + off, first);
	memcpy((uint8_t *)dst + first, sqp->sq_buf, len - first);
}

/*
 * Parse and validate the WQE at bb: its index matches bb, its QPN is this
 * QP's, its DS fits its opcode. Returns 0 or MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR.
 */
int rn_sim_wqe_parse(const struct sim_qp *sqp, uint32_t bb, struct sim_wqe *w);

/*
 * The data segments of w: their total length into *total, their lkeys
 * checked for access, their bytes copied to out unless NULL. A byte count
 * of 0 means 2 GiB, as on the NIC. Returns 0, LOCAL_PROT for a bad lkey, or
 * LOCAL_LENGTH over RN_SIM_MAX_MSG (the port's max_msg_sz).
 */
int rn_sim_wqe_gather(const struct sim_qp *sqp, const struct sim_wqe *w,
		      uint8_t *out, uint32_t *total, uint32_t access);

/* The bytes of w's data when they are one segment (checked already with
 * rn_sim_wqe_gather()), else NULL: frames are cut from them where they
 * lie, with no gather into a scratch buffer. */
const uint8_t *rn_sim_wqe_contiguous(const struct sim_qp *sqp,
				     const struct sim_wqe *w);

/* Copy len bytes of data over w's data segments, from byte offset of
 * them on, in order (a READ's response packet). The caller checked them
 * with rn_sim_wqe_gather(). */
void rn_sim_wqe_scatter(const struct sim_qp *sqp, const struct sim_wqe *w,
			uint32_t offset, const uint8_t *data, uint32_t len);

#endif /* RN_SIM_WQE_PVT_H */
