/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_QUEUES_H
#define RN_QUEUES_H

/*
 * The data path's view of one QP's rings and one CQ, laid out by the device
 * (mlx5: what mlx5dv_init_obj returns; sim: the same layout in host memory).
 * Only the owning lcore touches them.
 */

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <stdint.h>

#include "rn_wr.h"

/* Send queue: a ring of 64-byte basic blocks (BBs). */
struct rn_sq {
	uint8_t *buf;               /* wqe_cnt BBs */
	uint32_t wqe_mask;          /* wqe_cnt - 1 (a power of two) */
	uint32_t byte_mask;         /* wqe_cnt * 64 - 1: WQEs wrap at the end */
	uint32_t limit;             /* BBs in use at most (<= wqe_cnt): the
				     * CQEs reserved for them */
	uint32_t pi;                /* next BB to write; free running */
	uint32_t ci;                /* first BB not known complete */
	uint32_t qpn_shifted;       /* qpn << 8, ready for qpn_ds */
	uint32_t unsignaled_bbs;    /* BBs posted since the last signalled WQE */
	uint32_t max_inline;        /* inline bytes this QP was created for */
	__be32 *dbrec;              /* &dbrec[MLX5_SND_DBR] */
	uint8_t *bf_reg;            /* doorbell register (UAR) */
	uint32_t bf_size;           /* the register toggles between two halves */
	uint32_t bf_offset;
	struct mlx5_wqe_ctrl_seg *last_ctrl; /* last WQE not doorbelled yet */
	/* Per WQE, indexed by its WQE index: that of its first BB. */
	uint64_t *wr_id;
	uint32_t *wqe_end;          /* pi after the WQE: ci once it completes */
};

/* Receive queue: a ring of fixed-stride WQEs of data segments. */
struct rn_rq {
	uint8_t *buf;
	uint32_t wqe_mask;          /* wqe_cnt - 1 */
	uint32_t stride_shift;      /* log2(stride), stride = 16 * max_sge */
	uint32_t max_sge;
	uint32_t head;              /* next WQE to post; free running */
	uint32_t tail;              /* next WQE to complete */
	__be32 *dbrec;              /* &dbrec[MLX5_RCV_DBR] */
	uint64_t *wr_id;            /* per WQE index */
};

struct rn_qp {
	struct rn_sq sq;
	struct rn_rq rq;
	uint32_t qpn;
	struct rn_qp_table *table;  /* where its CQs look it up */
	struct rn_qp *hash_next;    /* bucket chain in table */
	void *user;                 /* the owner's object (endpoint) */
	struct rn_nic *nic;
	void *priv;                 /* the provider's QP */
	struct rn_cq *send_cq, *recv_cq;
	int state;                  /* enum rn_qp_state, as last set */
};

/*
 * QPN -> QP for one lcore's CQs. A shared CQ delivers CQEs of QPs that are
 * gone (libmlx5 stops scrubbing after mlx5dv_init_obj), so a miss is normal
 * and counted, never fatal. Buckets by the low QPN bits, chained.
 */
struct rn_qp_table {
	uint32_t mask;
	struct rn_qp *bucket[];
};

static inline struct rn_qp *
rn_qp_table_lookup(const struct rn_qp_table *t, uint32_t qpn)
{
	struct rn_qp *qp = t->bucket[qpn & t->mask];

	while (qp != NULL && qp->qpn != qpn)
		qp = qp->hash_next;
	return qp;
}

/* Completion queue. */
struct rn_cq {
	uint8_t *buf;               /* the mlx5_cqe64 of entry 0 (with 128-byte
				     * CQEs, the second half of the entry) */
	uint32_t cqe_cnt;           /* a power of two */
	uint32_t cqe_shift;         /* log2(cqe_size): 6 or 7 */
	uint32_t ci;                /* consumer index; free running */
	__be32 *dbrec;              /* &dbrec[0]: consumer index, 24 bits */
	uint32_t cqn;
	struct rn_qp_table *qps;
	uint64_t stale;             /* CQEs of QPNs not in qps */
	void *priv;                 /* the provider's CQ */
	struct rn_nic *nic;
};

#endif /* RN_QUEUES_H */
