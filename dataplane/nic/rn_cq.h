/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CQ_H
#define RN_CQ_H

/*
 * Polling a CQ of mlx5_cqe64 entries. Owning lcore only. The CQE at
 * consumer index ci belongs to software iff its opcode is not INVALID and its
 * owner bit equals bit log2(cqe_cnt) of ci: the device flips the owner value
 * it writes on every lap of the ring.
 */

#include <rte_atomic.h>
#include <rte_byteorder.h>

#include "rn_queues.h"

static inline struct mlx5_cqe64 *
rn_cq_cqe(const struct rn_cq *cq, uint32_t index)
{
	return (void *)(cq->buf + ((size_t)(index & (cq->cqe_cnt - 1)) <<
				   cq->cqe_shift));
}

/* Completion of send WQE wqe_counter: it and every earlier WQE are done. */
static inline void
rn_cq_complete_send(struct rn_qp *qp, uint16_t wqe_counter, struct rn_wc *wc)
{
	struct rn_sq *sq = &qp->sq;
	uint32_t wqe_index = wqe_counter & sq->wqe_mask;

	wc->wr_id = sq->wr_id[wqe_index];
	sq->ci = sq->wqe_end[wqe_index];
}

static inline void
rn_cq_complete_recv(struct rn_qp *qp, uint16_t wqe_counter, struct rn_wc *wc)
{
	struct rn_rq *rq = &qp->rq;

	wc->wr_id = rq->wr_id[wqe_counter & rq->wqe_mask];
	rq->tail++;
}

/* Error CQEs are rare: decoded out of line (cq_error.c). */
void rn_cq_decode_error(const struct mlx5_cqe64 *cqe, uint8_t opcode,
			struct rn_qp *qp, struct rn_wc *wc);

/*
 * wc->status (0 or an mlx5 CQE syndrome) as the verbs status libmlx5
 * reports for it: MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR is
 * IBV_WC_REM_ACCESS_ERR, LOCAL_PROT IBV_WC_LOC_PROT_ERR, WR_FLUSH
 * IBV_WC_WR_FLUSH_ERR, and so on; one it does not know,
 * IBV_WC_GENERAL_ERR. ibv_wc_status_str() names it for a log line.
 */
enum ibv_wc_status rn_wc_status_ibv(uint8_t status);

static inline uint8_t
rn_wc_send_opcode(uint8_t wqe_opcode)
{
	if (wqe_opcode == MLX5_OPCODE_RDMA_READ)
		return RN_WC_READ;
	/* RDMA_WRITE 0x08 and RDMA_WRITE_IMM 0x09 */
	return (wqe_opcode & ~1) == MLX5_OPCODE_RDMA_WRITE ? RN_WC_WRITE :
							    RN_WC_SEND;
}

/*
 * Decode the CQE of a live QP into wc. Always inlined: it is most of a
 * CQE's cost and an out-of-line call added a tenth to it (docs/performance.md).
 */
static __rte_always_inline void
rn_cq_decode(const struct mlx5_cqe64 *cqe, uint8_t opcode, uint32_t qpn_word,
	     struct rn_qp *qp, struct rn_wc *wc)
{
	uint16_t wqe_counter = rte_be_to_cpu_16(cqe->wqe_counter);

	wc->qp = qp;
	wc->status = 0;
	switch (opcode) {
	case MLX5_CQE_REQ:
		wc->opcode = rn_wc_send_opcode((uint8_t)(qpn_word >> 24));
		wc->byte_len = rte_be_to_cpu_32(cqe->byte_cnt);
		rn_cq_complete_send(qp, wqe_counter, wc);
		return;
	case MLX5_CQE_RESP_WR_IMM:
	case MLX5_CQE_RESP_SEND:
	case MLX5_CQE_RESP_SEND_IMM:
		wc->opcode = opcode;   /* enum rn_wc_opcode shares these */
		wc->byte_len = rte_be_to_cpu_32(cqe->byte_cnt);
		wc->imm = cqe->imm_inval_pkey;
		rn_cq_complete_recv(qp, wqe_counter, wc);
		return;
	default:
		rn_cq_decode_error(cqe, opcode, qp, wc);
	}
}

/*
 * Poll up to max completions into wc. CQEs of QPNs unknown to cq->qps (QPs
 * already destroyed) are consumed and counted in cq->stale. Publishes the
 * new consumer index once per call. Returns the number of wc filled.
 */
static inline unsigned int
rn_cq_poll(struct rn_cq *cq, struct rn_wc *wc, unsigned int max)
{
	/* Locals: stores into wc must not make the compiler reload them. */
	uint8_t *const buf = cq->buf;
	const uint32_t cqe_cnt = cq->cqe_cnt;
	const uint32_t shift = cq->cqe_shift;
	const struct rn_qp_table *const qps = cq->qps;
	uint32_t ci = cq->ci;
	unsigned int n = 0;

	while (n < max) {
		struct mlx5_cqe64 *cqe =
			(void *)(buf + ((size_t)(ci & (cqe_cnt - 1)) << shift));
		uint8_t op_own = cqe->op_own;
		uint8_t opcode = op_own >> 4;
		uint32_t qpn_word;
		struct rn_qp *qp;

		if (opcode == MLX5_CQE_INVALID ||
		    (op_own & MLX5_CQE_OWNER_MASK) != !!(ci & cqe_cnt))
			break;
		rte_io_rmb();  /* owner check before the CQE's other fields */
		ci++;
		qpn_word = rte_be_to_cpu_32(cqe->sop_drop_qpn);
		qp = rn_qp_table_lookup(qps, qpn_word & 0xffffff);
		if (unlikely(qp == NULL)) {
			cq->stale++;
			continue;
		}
		rn_cq_decode(cqe, opcode, qpn_word, qp, &wc[n++]);
	}
	if (ci != cq->ci) {
		cq->ci = ci;
		/* Reads of the CQEs before the device may reuse their entries. */
		__atomic_store_n(cq->dbrec, rte_cpu_to_be_32(ci & 0xffffff),
				 __ATOMIC_RELEASE);
	}
	return n;
}

#endif /* RN_CQ_H */
