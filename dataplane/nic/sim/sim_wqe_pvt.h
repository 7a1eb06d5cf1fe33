/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_SIM_WQE_PVT_H
#define RN_SIM_WQE_PVT_H

/* Reading a send WQE out of the SQ ring, as the NIC fetches it. */

#include <rte_byteorder.h>
#include <string.h>

#include "sim_pvt.h"

struct sim_wqe {
	uint32_t bb;               /* first BB, free running */
	uint8_t opcode;
	uint32_t ds;
	uint32_t nbb;
	bool signaled;
	uint32_t imm;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t first_data;       /* 16-byte unit where data starts */
	bool inl;
};

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

#endif /* RN_SIM_WQE_PVT_H */
