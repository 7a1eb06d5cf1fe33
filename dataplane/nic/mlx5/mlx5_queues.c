/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CQs and RC QPs on ConnectX, handed to the data path with mlx5dv_init_obj.
 * CQE compression stays off (the poller reads plain mlx5_cqe64 entries) and
 * scatter-to-CQE is disabled (a small SEND always lands in its buffer).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mlx5_pvt.h"

static uint32_t
log2_u32(uint32_t v)
{
	return 31u - (uint32_t)__builtin_clz(v);
}

int
rn_mlx5_cq_create(struct rn_nic *nic, uint32_t cqe, struct rn_cq *cq)
{
	struct mlx5_ctx *ctx = mlx5_ctx_of(nic);
	struct ibv_cq_init_attr_ex attr = { .cqe = cqe };
	struct mlx5dv_cq_init_attr dv_attr = { .comp_mask = 0 };
	struct mlx5dv_obj obj = { 0 };
	struct mlx5dv_cq dv = { 0 };   /* comp_mask is an input: zero it */
	struct ibv_cq_ex *cq_ex = mlx5dv_create_cq(ctx->verbs, &attr, &dv_attr);

	if (cq_ex == NULL)
		return -errno;
	obj.cq.in = ibv_cq_ex_to_cq(cq_ex);
	obj.cq.out = &dv;
	if (mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ) != 0) {
		ibv_destroy_cq(obj.cq.in);
		return -EIO;
	}
	/* With 128-byte CQEs the mlx5_cqe64 is the second half. */
	cq->buf = (uint8_t *)dv.buf + (dv.cqe_size == 128 ? 64 : 0);
	cq->cqe_cnt = dv.cqe_cnt;
	cq->cqe_shift = log2_u32(dv.cqe_size);
	cq->dbrec = dv.dbrec;
	cq->cqn = dv.cqn;
	cq->priv = obj.cq.in;
	return 0;
}

int
rn_mlx5_cq_destroy(struct rn_nic *nic, struct rn_cq *cq)
{
	(void)nic;
	return -ibv_destroy_cq(cq->priv);
}

int
rn_mlx5_qp_create(struct rn_nic *nic, struct rn_cq *send_cq,
		  struct rn_cq *recv_cq, const struct rn_qp_caps *caps,
		  struct rn_qp *qp)
{
	struct mlx5_ctx *ctx = mlx5_ctx_of(nic);
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = IBV_QPT_RC,
		.send_cq = send_cq->priv,
		.recv_cq = recv_cq->priv,
		.sq_sig_all = 0,
		.cap = {
			.max_send_wr = caps->max_send_wr,
			.max_recv_wr = caps->max_recv_wr,
			.max_send_sge = caps->max_send_sge,
			.max_recv_sge = caps->max_recv_sge,
			.max_inline_data = caps->max_inline,
		},
		/* The operations we post: without them rdma-core sizes each
		 * WQE for UMR and memory windows too (192 bytes of room). */
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = ctx->parent,
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_READ,
	};
	struct mlx5dv_qp_init_attr dv_attr = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS,
		.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE,
	};
	struct mlx5dv_obj obj = { 0 };
	struct mlx5dv_qp dv = { 0 };   /* comp_mask is an input: zero it */
	struct ibv_qp *iqp = mlx5dv_create_qp(ctx->verbs, &attr, &dv_attr);

	if (iqp == NULL)
		return -errno;
	obj.qp.in = iqp;
	obj.qp.out = &dv;
	if (mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP) != 0) {
		ibv_destroy_qp(iqp);
		return -EIO;
	}
	qp->qpn = iqp->qp_num;
	qp->priv = iqp;
	qp->sq = (struct rn_sq){
		.buf = dv.sq.buf,
		.wqe_mask = dv.sq.wqe_cnt - 1,
		.qpn_shifted = iqp->qp_num << 8,
		.max_inline = attr.cap.max_inline_data,
		.dbrec = &dv.dbrec[MLX5_SND_DBR],
		.bf_reg = dv.bf.reg,
		.bf_size = dv.bf.size,
	};
	qp->rq = (struct rn_rq){ .dbrec = &dv.dbrec[MLX5_RCV_DBR] };
	if (dv.rq.wqe_cnt != 0) {   /* no receive queue: posts get -EINVAL */
		qp->rq.buf = dv.rq.buf;
		qp->rq.wqe_mask = dv.rq.wqe_cnt - 1;
		qp->rq.stride_shift = log2_u32(dv.rq.stride);
		qp->rq.max_sge = dv.rq.stride / sizeof(struct mlx5_wqe_data_seg);
	}
	return 0;
}

/* READs outstanding: what the connection asks (0: the most), within
 * what the device allows (ctx, at most RN_QP_MAX_RD_ATOMIC). */
static uint8_t
rd_atomic(uint8_t asked, uint8_t device)
{
	return asked == 0 ? device : RTE_MIN(asked, device);
}

/* Remote rights come at RTR, from the connection, as in the sim. */
static int
to_init(struct ibv_qp *iqp, uint8_t port)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = port,
		.qp_access_flags = 0,
	};

	return ibv_modify_qp(iqp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int
to_rtr(struct mlx5_ctx *ctx, struct ibv_qp *iqp,
       const struct rn_qp_connect *c)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.qp_access_flags = (unsigned int)rn_mlx5_access(c->access),
		.path_mtu = RTE_MIN(ctx->mtu, (enum ibv_mtu)c->remote.mtu),
		.dest_qp_num = c->remote_qpn,
		.rq_psn = c->remote_psn & 0xffffff,
		.max_dest_rd_atomic = rd_atomic(c->max_dest_rd_atomic,
						ctx->max_dest_rd_atomic),
		.min_rnr_timer = c->min_rnr_timer,
		.ah_attr = {
			.is_global = 1,
			.dlid = c->remote.lid,
			.sl = ctx->service_level,
			.port_num = ctx->port,
			.grh = { .hop_limit = 64, .sgid_index = ctx->gid_index,
				 .traffic_class = ctx->traffic_class },
		},
	};

	memcpy(a.ah_attr.grh.dgid.raw, c->remote.gid, 16);
	return ibv_modify_qp(iqp, &a, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER |
			     IBV_QP_ACCESS_FLAGS);
}

static int
to_rts(struct mlx5_ctx *ctx, struct ibv_qp *iqp, const struct rn_qp_connect *c,
       bool from_rts)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.sq_psn = c->local_psn & 0xffffff,
		.timeout = c->timeout,
		.retry_cnt = c->retry_cnt,
		.rnr_retry = c->rnr_retry,
		.max_rd_atomic = rd_atomic(c->max_rd_atomic,
					   ctx->max_rd_atomic),
	};

	/* RTS -> RTS may change the responder's RNR timer and rights only. */
	if (from_rts) {
		a.min_rnr_timer = c->min_rnr_timer;
		a.qp_access_flags = (unsigned int)rn_mlx5_access(c->access);
		return ibv_modify_qp(iqp, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER |
				     IBV_QP_ACCESS_FLAGS);
	}
	return ibv_modify_qp(iqp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

int
rn_mlx5_qp_modify(struct rn_nic *nic, struct rn_qp *qp, enum rn_qp_state state,
		  const struct rn_qp_connect *conn)
{
	struct mlx5_ctx *ctx = mlx5_ctx_of(nic);
	struct ibv_qp_attr a = { 0 };
	int rc;

	switch (state) {
	case RN_QP_INIT:
		rc = to_init(qp->priv, ctx->port);
		break;
	case RN_QP_RTR:
		rc = to_rtr(ctx, qp->priv, conn);
		break;
	case RN_QP_RTS:
		rc = to_rts(ctx, qp->priv, conn, qp->state == RN_QP_RTS);
		break;
	case RN_QP_ERR:
		a.qp_state = IBV_QPS_ERR;
		rc = ibv_modify_qp(qp->priv, &a, IBV_QP_STATE);
		break;
	case RN_QP_RESET:
	default:
		a.qp_state = IBV_QPS_RESET;
		rc = ibv_modify_qp(qp->priv, &a, IBV_QP_STATE);
		break;
	}
	return -rc;
}

int
rn_mlx5_qp_destroy(struct rn_nic *nic, struct rn_qp *qp)
{
	(void)nic;
	return -ibv_destroy_qp(qp->priv);
}
