/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_MLX5_PROVIDER_H
#define RN_MLX5_PROVIDER_H

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <rte_common.h>

#include "rn_nic.h"

struct mlx5_ctx {
	struct rn_nic nic;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_td *td;        /* this context's doorbell, lock free */
	struct ibv_pd *parent;    /* pd + td: QPs are created in it */
	union ibv_gid gid;
	uint16_t lid;
	uint8_t port;
	uint8_t gid_index;
	enum ibv_mtu mtu;
	uint8_t traffic_class;      /* [nic] traffic_class, service_level */
	uint8_t service_level;
	uint8_t max_rd_atomic;      /* READs a QP may have out, at most 16 */
	uint8_t max_dest_rd_atomic; /* and take in, as the device allows */
};

static inline struct mlx5_ctx *
mlx5_ctx_of(struct rn_nic *nic)
{
	return container_of(nic, struct mlx5_ctx, nic);
}

int rn_mlx5_access(uint32_t access);
int rn_mlx5_cq_create(struct rn_nic *nic, uint32_t cqe, struct rn_cq *cq);
int rn_mlx5_cq_destroy(struct rn_nic *nic, struct rn_cq *cq);
int rn_mlx5_qp_create(struct rn_nic *nic, struct rn_cq *send_cq,
		      struct rn_cq *recv_cq, const struct rn_qp_caps *caps,
		      struct rn_qp *qp);
int rn_mlx5_qp_modify(struct rn_nic *nic, struct rn_qp *qp,
		      enum rn_qp_state state, const struct rn_qp_connect *conn);
int rn_mlx5_qp_destroy(struct rn_nic *nic, struct rn_qp *qp);

#endif /* RN_MLX5_PROVIDER_H */
