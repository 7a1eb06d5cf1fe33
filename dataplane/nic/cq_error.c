/* SPDX-License-Identifier: BSD-3-Clause */
/* Error CQEs, kept out of the polling loop. */
#include "rn_cq.h"

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
