/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Provider-independent half of the NIC control path: picks the provider,
 * owns the data path's software rings (wr_id arrays) and the QPN table, and
 * keeps the data path's counters in step with the QP state machine.
 */
#include <errno.h>
#include <rte_common.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_cq.h"
#include "rn_nic.h"

static const char *const qp_state_names[] = {
	[RN_QP_RESET] = "RESET", [RN_QP_INIT] = "INIT", [RN_QP_RTR] = "RTR",
	[RN_QP_RTS] = "RTS", [RN_QP_ERR] = "ERR",
};

const char *
rn_qp_state_name(enum rn_qp_state state)
{
	return qp_state_names[state];
}

int
rn_nic_open(const struct rn_nic_config *cfg, const char *listen,
	    struct rn_nic **out, char *why, size_t why_len)
{
	const struct rn_nic_ops *ops = cfg->provider == RN_NIC_MLX5 ?
		&rn_nic_mlx5_ops : &rn_nic_sim_ops;
	int rc;

	why[0] = '\0';
	rc = ops->open(cfg, listen, out, why, why_len);
	if (rc != 0 && why[0] == '\0')
		snprintf(why, why_len, "%s device: %s", ops->name,
			 strerror(-rc));

	if (rc == 0) {
		(*out)->ops = ops;
		(*out)->provider = cfg->provider;
	}
	return rc;
}

void
rn_nic_close(struct rn_nic *nic)
{
	nic->ops->close(nic);
}

/* What every provider refuses alike, before it is asked. */
static int
mr_check(size_t length, uint32_t access)
{
	if (length == 0 || (access & ~(uint32_t)RN_ACCESS_ALL) != 0 ||
	    ((access & RN_ACCESS_REMOTE_WRITE) &&
	     !(access & RN_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	return 0;
}

int
rn_nic_mr_reg(struct rn_nic *nic, void *addr, size_t length, uint32_t access,
	      struct rn_mr *mr)
{
	return rn_nic_mr_reg_iova(nic, addr, length, (uintptr_t)addr, access,
				  mr);
}

int
rn_nic_mr_reg_iova(struct rn_nic *nic, void *addr, size_t length,
		   uint64_t iova, uint32_t access, struct rn_mr *mr)
{
	int rc = mr_check(length, access);

	return rc != 0 ? rc : nic->ops->mr_reg(nic, addr, length, iova, access,
					       mr);
}

int
rn_nic_mr_reg_dmabuf(struct rn_nic *nic, uint64_t offset, size_t length,
		     uint64_t iova, int fd, uint32_t access, struct rn_mr *mr)
{
	int rc = mr_check(length, access);

	if (rc == 0 && fd < 0)
		rc = -EBADF;
	return rc != 0 ? rc : nic->ops->mr_reg_dmabuf(nic, offset, length, iova,
						      fd, access, mr);
}

int
rn_nic_mr_dereg(struct rn_nic *nic, struct rn_mr *mr)
{
	if (mr->priv == NULL)
		return -EINVAL;
	return nic->ops->mr_dereg(nic, mr);
}

int
rn_qp_table_create(unsigned int order, struct rn_qp_table **out)
{
	struct rn_qp_table *t = calloc(1, sizeof(*t) +
				       (sizeof(t->bucket[0]) << order));

	if (t == NULL)
		return -ENOMEM;
	t->mask = (1u << order) - 1;
	*out = t;
	return 0;
}

void
rn_qp_table_free(struct rn_qp_table *t)
{
	free(t);
}

void
rn_qp_table_add(struct rn_qp_table *t, struct rn_qp *qp)
{
	struct rn_qp **bucket = &t->bucket[qp->qpn & t->mask];

	qp->hash_next = *bucket;
	*bucket = qp;
}

void
rn_qp_table_remove(struct rn_qp_table *t, struct rn_qp *qp)
{
	for (struct rn_qp **link = &t->bucket[qp->qpn & t->mask]; *link != NULL;
	     link = &(*link)->hash_next) {
		if (*link == qp) {
			*link = qp->hash_next;
			qp->hash_next = NULL;
			return;
		}
	}
}

int
rn_nic_cq_create(struct rn_nic *nic, uint32_t min_cqe,
		 struct rn_qp_table *qps, struct rn_cq *cq)
{
	int rc;

	memset(cq, 0, sizeof(*cq));
	rc = nic->ops->cq_create(nic, rte_align32pow2(RTE_MAX(min_cqe, 2u)), cq);
	if (rc != 0)
		return rc;
	cq->qps = qps;
	cq->nic = nic;
	return 0;
}

int
rn_nic_cq_destroy(struct rn_nic *nic, struct rn_cq *cq)
{
	return nic->ops->cq_destroy(nic, cq);
}

/* The data path's counters start from zero, as the device's do. */
static void
reset_rings(struct rn_qp *qp)
{
	qp->sq.pi = qp->sq.ci = 0;
	qp->sq.unsignaled_bbs = 0;
	qp->sq.bf_offset = 0;
	qp->sq.last_ctrl = NULL;
	qp->rq.head = qp->rq.tail = 0;
}

/* Send BBs (and so CQEs) a QP of caps may have in use: see rn_qp_cqes(). */
static uint32_t
send_cqes(const struct rn_qp_caps *caps)
{
	uint32_t data = RTE_MAX(caps->max_send_sge * 16,
				RTE_ALIGN_CEIL(4 + caps->max_inline, 16));
	uint32_t bbs = (32 + data + 63) / 64;   /* ctrl + raddr, then data */

	return rte_align32pow2(caps->max_send_wr * bbs);
}

uint32_t
rn_qp_cqes(const struct rn_qp_caps *caps)
{
	return send_cqes(caps) + rte_align32pow2(RTE_MAX(caps->max_recv_wr, 1u));
}

int
rn_nic_qp_create(struct rn_nic *nic, struct rn_cq *send_cq,
		 struct rn_cq *recv_cq, const struct rn_qp_caps *caps,
		 struct rn_qp *qp)
{
	int rc;

	/* One table per QP: a QP sits in one bucket chain. */
	if (send_cq->qps != recv_cq->qps || caps->max_send_sge > RN_WR_MAX_SGE)
		return -EINVAL;
	memset(qp, 0, sizeof(*qp));
	rc = nic->ops->qp_create(nic, send_cq, recv_cq, caps, qp);
	if (rc != 0)
		return rc;
	qp->nic = nic;
	qp->sq.byte_mask = (qp->sq.wqe_mask + 1) * MLX5_SEND_WQE_BB - 1;
	/* A device may size its ring for WQEs larger than ours (mlx5 leaves
	 * room in each for a registration's segments): never use more of it
	 * than the CQEs rn_qp_cqes() promised, one per BB at most. */
	qp->sq.limit = RTE_MIN(qp->sq.wqe_mask + 1, send_cqes(caps));
	qp->sq.wr_id = calloc(qp->sq.wqe_mask + 1, sizeof(*qp->sq.wr_id));
	qp->sq.wqe_end = calloc(qp->sq.wqe_mask + 1, sizeof(*qp->sq.wqe_end));
	qp->rq.wr_id = calloc(qp->rq.wqe_mask + 1, sizeof(*qp->rq.wr_id));
	if (qp->sq.wr_id == NULL || qp->sq.wqe_end == NULL ||
	    qp->rq.wr_id == NULL) {
		rn_nic_qp_destroy(nic, qp);
		return -ENOMEM;
	}
	reset_rings(qp);
	qp->send_cq = send_cq;
	qp->recv_cq = recv_cq;
	qp->state = RN_QP_RESET;
	qp->table = send_cq->qps;
	rn_qp_table_add(qp->table, qp);
	return 0;
}

/*
 * Mark the CQEs of qpn not polled yet in cq as stale. As libmlx5 does for
 * its own CQs (and stops doing once they are handed to direct verbs): a QP
 * that is reset, or a new QP that gets the same number, must never see the
 * completions of the QP that was.
 */
static void
scrub_cq(struct rn_cq *cq, uint32_t qpn)
{
	for (uint32_t ci = cq->ci;; ci++) {
		struct mlx5_cqe64 *cqe = rn_cq_cqe(cq, ci);
		uint8_t op_own = cqe->op_own;

		if ((op_own >> 4) == MLX5_CQE_INVALID ||
		    (op_own & MLX5_CQE_OWNER_MASK) != !!(ci & cq->cqe_cnt))
			return;
		rte_io_rmb();
		if ((rte_be_to_cpu_32(cqe->sop_drop_qpn) & 0xffffff) == qpn)
			cqe->sop_drop_qpn = rte_cpu_to_be_32(
				(rte_be_to_cpu_32(cqe->sop_drop_qpn) &
				 0xff000000) | RN_QPN_STALE);
	}
}

static void
scrub(struct rn_qp *qp)
{
	scrub_cq(qp->send_cq, qp->qpn);
	if (qp->recv_cq != qp->send_cq)
		scrub_cq(qp->recv_cq, qp->qpn);
}

int
rn_nic_qp_modify(struct rn_nic *nic, struct rn_qp *qp, enum rn_qp_state state,
		 const struct rn_qp_connect *conn)
{
	int rc;

	if ((state == RN_QP_RTR || state == RN_QP_RTS) && conn == NULL)
		return -EINVAL;
	rc = nic->ops->qp_modify(nic, qp, state, conn);
	if (rc != 0)
		return rc;
	qp->state = state;
	if (state == RN_QP_RESET) {
		scrub(qp);
		reset_rings(qp);
	}
	return 0;
}

int
rn_nic_qp_destroy(struct rn_nic *nic, struct rn_qp *qp)
{
	int rc = 0;

	if (qp->table != NULL)
		rn_qp_table_remove(qp->table, qp);
	qp->table = NULL;
	if (qp->priv != NULL) {
		rc = nic->ops->qp_destroy(nic, qp);
		scrub(qp);
	}
	qp->priv = NULL;
	free(qp->sq.wr_id);
	free(qp->sq.wqe_end);
	free(qp->rq.wr_id);
	qp->sq.wr_id = NULL;
	qp->sq.wqe_end = NULL;
	qp->rq.wr_id = NULL;
	return rc;
}
