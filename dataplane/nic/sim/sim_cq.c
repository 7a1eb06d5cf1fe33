/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CQE writer. Like the hardware it writes the whole CQE, then op_own
 * last (a release store) with owner = bit log2(cqe_cnt) of its producer
 * index, and refuses to overrun software's consumer index: an overrun puts
 * the CQ in error for good and no further CQE is written to it.
 */
#include <errno.h>
#include <rte_byteorder.h>
#include <stdlib.h>
#include <string.h>

#include "sim_pvt.h"

int
rn_sim_cq_create(struct sim_ctx *ctx, uint32_t cqe_cnt, struct rn_cq *cq)
{
	struct sim_cq *scq = calloc(1, sizeof(*scq));

	if (scq == NULL)
		return -ENOMEM;
	if (posix_memalign((void **)&scq->buf, 4096,
			   (size_t)cqe_cnt * sizeof(struct mlx5_cqe64)) != 0) {
		free(scq);
		return -ENOMEM;
	}
	scq->ctx = ctx;
	scq->cqe_cnt = cqe_cnt;
	/* Software owns nothing until the device writes: opcode INVALID. */
	for (uint32_t i = 0; i < cqe_cnt; i++) {
		struct mlx5_cqe64 *cqe = (void *)(scq->buf + i * 64);

		memset(cqe, 0, sizeof(*cqe));
		cqe->op_own = MLX5_CQE_INVALID << 4;
	}
	cq->buf = scq->buf;
	cq->cqe_cnt = cqe_cnt;
	cq->cqe_shift = 6;
	cq->dbrec = &scq->dbrec[0];
	cq->cqn = (uint32_t)(uintptr_t)scq & 0xffffff;
	cq->priv = scq;
	return 0;
}

void
rn_sim_cq_destroy(struct rn_cq *cq)
{
	struct sim_cq *scq = cq->priv;

	free(scq->buf);
	free(scq);
	cq->priv = NULL;
}

static bool
sim_cq_full(struct sim_cq *scq)
{
	uint32_t ci = rte_be_to_cpu_32(__atomic_load_n(&scq->dbrec[0],
						       __ATOMIC_ACQUIRE));

	return ((scq->pi - ci) & 0xffffff) >= scq->cqe_cnt;
}

/* The CQ overran: it stops for good, as the hardware's does. */
static void
overrun(struct sim_cq *scq)
{
	struct sim_ctx *ctx = scq->ctx;

	scq->error = true;
	ctx->stats.cq_overruns++;
	rn_sim_event_raise(ctx, SIM_EVENT_CQ_ERR);
	/* Every QP completing to it fails with it; their flushes to a
	 * healthy CQ still arrive, those to this one are lost. */
	for (struct sim_qp *q = ctx->live; q != NULL; q = q->next)
		if ((q->scq == scq || q->rcq == scq) && q->state != RN_QP_ERR)
			rn_sim_qp_enter_err(q);
}

void
rn_sim_overrun_cq(struct rn_cq *cq)
{
	struct sim_cq *scq = cq->priv;

	if (!scq->error)
		overrun(scq);
}

void
rn_sim_cq_push(struct sim_cq *scq, struct mlx5_cqe64 *src)
{
	struct mlx5_cqe64 *dst;
	uint8_t op_own;

	if (scq->error)
		return;
	if (sim_cq_full(scq)) {
		overrun(scq);
		return;
	}
	dst = (void *)(scq->buf + (size_t)(scq->pi & (scq->cqe_cnt - 1)) * 64);
	op_own = (uint8_t)((src->op_own & 0xf0) |
			   ((scq->pi & scq->cqe_cnt) ? 1 : 0));
	memcpy(dst, src, offsetof(struct mlx5_cqe64, op_own));
	__atomic_store_n(&dst->op_own, op_own, __ATOMIC_RELEASE);
	scq->pi++;
}

void
rn_sim_cq_push_error(struct sim_cq *scq, uint8_t cqe_opcode, uint8_t syndrome,
		     uint8_t wqe_opcode, uint32_t qpn, uint16_t wqe_counter)
{
	struct mlx5_cqe64 cqe;
	struct mlx5_err_cqe *err = (void *)&cqe;

	memset(&cqe, 0, sizeof(cqe));
	err->syndrome = syndrome;
	err->vendor_err_synd = 0;
	err->s_wqe_opcode_qpn = rte_cpu_to_be_32((uint32_t)wqe_opcode << 24 |
						 (qpn & 0xffffff));
	err->wqe_counter = rte_cpu_to_be_16(wqe_counter);
	err->op_own = (uint8_t)(cqe_opcode << 4);
	rn_sim_cq_push(scq, &cqe);
}
