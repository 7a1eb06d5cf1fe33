/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_WR_H
#define RN_WR_H

/*
 * Work requests and completions as the data path's callers see them. The
 * opcodes are the mlx5 WQE opcodes themselves, so building a WQE needs no
 * translation table.
 */

#include <endian.h>
#include <infiniband/mlx5dv.h>
#include <stdint.h>

#define RN_WR_MAX_SGE 16       /* gather entries per send WQE */

struct rn_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum rn_wr_opcode {
	RN_WR_SEND = MLX5_OPCODE_SEND,
	RN_WR_SEND_IMM = MLX5_OPCODE_SEND_IMM,
	RN_WR_WRITE = MLX5_OPCODE_RDMA_WRITE,
	RN_WR_WRITE_IMM = MLX5_OPCODE_RDMA_WRITE_IMM,
	RN_WR_READ = MLX5_OPCODE_RDMA_READ,
};

enum rn_wr_flags {
	RN_WR_SIGNALED = 1 << 0,   /* ask for a CQE (covers earlier WQEs too) */
	RN_WR_INLINE = 1 << 1,     /* copy the data into the WQE */
	RN_WR_SOLICITED = 1 << 2,
	RN_WR_FENCE = 1 << 3,      /* wait for earlier READs to complete */
	RN_WR_PACED = 1 << 4,      /* the caller's own rule signals often
				    * enough: see rn_sq_fm_ce_se() */
};

struct rn_wr {
	uint64_t wr_id;            /* returned in the completion */
	const struct rn_sge *sg_list;
	uint32_t num_sge;
	uint8_t opcode;            /* enum rn_wr_opcode */
	uint8_t flags;             /* enum rn_wr_flags */
	__be32 imm;                /* SEND_IMM, WRITE_IMM: passed through as
				    * is; the other opcodes send 0 */
	uint64_t raddr;            /* WRITE, READ */
	uint32_t rkey;
};

/*
 * What completed, decoded from an mlx5_cqe64. Receive kinds keep the CQE's
 * own opcode values, so decoding them is a copy.
 */
enum rn_wc_opcode {
	RN_WC_RECV_WRITE_IMM = MLX5_CQE_RESP_WR_IMM, /* consumed a receive WQE */
	RN_WC_RECV = MLX5_CQE_RESP_SEND,             /* a SEND arrived */
	RN_WC_RECV_IMM = MLX5_CQE_RESP_SEND_IMM,     /* a SEND_IMM arrived */
	RN_WC_SEND = 16,
	RN_WC_WRITE,
	RN_WC_READ,
};

struct rn_qp;

struct rn_wc {
	uint64_t wr_id;
	struct rn_qp *qp;    /* its QPN: qp->qpn */
	uint32_t byte_len;   /* receives and READs */
	__be32 imm;
	uint8_t opcode;      /* enum rn_wc_opcode; on error, send or recv side */
	uint8_t status;      /* 0, or the CQE syndrome (MLX5_CQE_SYNDROME_*) */
	uint8_t vendor_err;
};

#endif /* RN_WR_H */
