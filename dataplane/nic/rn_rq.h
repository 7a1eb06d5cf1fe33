/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_RQ_H
#define RN_RQ_H

/*
 * Posting receive WQEs. Owning lcore only. A receive WQE is max_sge data
 * segments; a shorter list ends with a {0, MLX5_INVALID_LKEY, 0} segment.
 * Receives need no MMIO doorbell: the NIC reads the doorbell record.
 */

#include <errno.h>
#include <rte_atomic.h>
#include <rte_byteorder.h>

#include "rn_queues.h"

/*
 * Empty entries are left out (a byte count of 0 means 2 GiB to the NIC).
 * Returns 0, -EAGAIN when the ring is full, -EINVAL for too many SGEs.
 */
static inline int
rn_rq_post(struct rn_rq *rq, const struct rn_sge *sg, uint32_t num_sge,
	   uint64_t wr_id)
{
	uint32_t wqe_index = rq->head & rq->wqe_mask;
	struct mlx5_wqe_data_seg *seg =
		(void *)(rq->buf + ((size_t)wqe_index << rq->stride_shift));
	uint32_t n = 0;

	if (unlikely(num_sge > rq->max_sge))
		return -EINVAL;
	if (unlikely(rq->head - rq->tail > rq->wqe_mask))
		return -EAGAIN;
	for (uint32_t i = 0; i < num_sge; i++)
		if (likely(sg[i].length != 0))
			mlx5dv_set_data_seg(&seg[n++], sg[i].length, sg[i].lkey,
					    sg[i].addr);
	if (n < rq->max_sge)
		mlx5dv_set_data_seg(&seg[n], 0, MLX5_INVALID_LKEY, 0);
	rq->wr_id[wqe_index] = wr_id;
	rq->head++;
	return 0;
}

/*
 * The common case, leaner: one buffer, sge->length > 0. Returns 0, or
 * -EAGAIN when the ring is full.
 */
static inline int
rn_rq_post_sge(struct rn_rq *rq, const struct rn_sge *sge, uint64_t wr_id)
{
	uint32_t wqe_index = rq->head & rq->wqe_mask;
	struct mlx5_wqe_data_seg *seg =
		(void *)(rq->buf + ((size_t)wqe_index << rq->stride_shift));

	if (unlikely(rq->head - rq->tail > rq->wqe_mask))
		return -EAGAIN;
	rq->wr_id[wqe_index] = wr_id;
	rq->head++;
	if (rq->max_sge > 1)
		mlx5dv_set_data_seg(&seg[1], 0, MLX5_INVALID_LKEY, 0);
	mlx5dv_set_data_seg(seg, sge->length, sge->lkey, sge->addr);
	return 0;
}

/* Publish every receive WQE posted so far. */
static inline void
rn_rq_ring_doorbell(struct rn_rq *rq)
{
	rte_io_wmb();          /* WQEs before the doorbell record */
	*rq->dbrec = rte_cpu_to_be_32(rq->head & 0xffff);
}

#endif /* RN_RQ_H */
