/* SPDX-License-Identifier: BSD-3-Clause */
/* Error CQEs, kept out of the polling loop. */
#include "rn_cq.h"

/* The verbs status of each mlx5 syndrome, as libmlx5 maps them
 * (providers/mlx5/cq.c). Zero entries: IBV_WC_GENERAL_ERR. */
static const uint8_t syndrome_status[256] = {
	[MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR] = IBV_WC_LOC_LEN_ERR,
	[MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR] = IBV_WC_LOC_QP_OP_ERR,
	[MLX5_CQE_SYNDROME_LOCAL_PROT_ERR] = IBV_WC_LOC_PROT_ERR,
	[MLX5_CQE_SYNDROME_WR_FLUSH_ERR] = IBV_WC_WR_FLUSH_ERR,
	[MLX5_CQE_SYNDROME_MW_BIND_ERR] = IBV_WC_MW_BIND_ERR,
	[MLX5_CQE_SYNDROME_BAD_RESP_ERR] = IBV_WC_BAD_RESP_ERR,
	[MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR] = IBV_WC_LOC_ACCESS_ERR,
	[MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR] = IBV_WC_REM_INV_REQ_ERR,
	[MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR] = IBV_WC_REM_ACCESS_ERR,
	[MLX5_CQE_SYNDROME_REMOTE_OP_ERR] = IBV_WC_REM_OP_ERR,
	[MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR] = IBV_WC_RETRY_EXC_ERR,
	[MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR] = IBV_WC_RNR_RETRY_EXC_ERR,
	[MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR] = IBV_WC_REM_ABORT_ERR,
};

enum ibv_wc_status
rn_wc_status_ibv(uint8_t status)
{
	RTE_BUILD_BUG_ON(IBV_WC_SUCCESS != 0);
	if (status == 0)
		return IBV_WC_SUCCESS;
	return syndrome_status[status] != 0 ?
	       (enum ibv_wc_status)syndrome_status[status] : IBV_WC_GENERAL_ERR;
}

void
rn_cq_decode_error(const struct mlx5_cqe64 *cqe, uint8_t opcode,
		   struct rn_qp *qp, struct rn_wc *wc)
{
	const struct mlx5_err_cqe *err = (const void *)cqe;
	uint16_t wqe_counter = rte_be_to_cpu_16(cqe->wqe_counter);

	wc->status = err->syndrome;
	wc->vendor_err = err->vendor_err_synd;
	wc->byte_len = 0;
	if (opcode == MLX5_CQE_REQ_ERR) {
		/* s_wqe_opcode_qpn: the failed WQE's opcode in the top byte. */
		wc->opcode = rn_wc_send_opcode(
			(uint8_t)(rte_be_to_cpu_32(err->s_wqe_opcode_qpn) >> 24));
		rn_cq_complete_send(qp, wqe_counter, wc);
	} else {
		wc->opcode = RN_WC_RECV;
		rn_cq_complete_recv(qp, wqe_counter, wc);
	}
}
