/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software mlx5 device as RC hardware behaves: data moved and checked,
 * CQEs with the right opcode, byte count, QPN, WQE counter and immediate,
 * and every error path with its syndrome and the QP/CQ state after it.
 * Two device contexts in this process, joined by the loopback wire.
 */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rn_notify_window.h"
#include "sim_pair.h"

#define BUF_SIZE (1 << 20)

static int
pair_setup(void **state)
{
	return pair_open(state, BUF_SIZE);
}

static void
test_send_recv(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 3000, p->amr.lkey };
	struct rn_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };
	struct rn_wc wc;

	fill(p->abuf, 3000, 1);
	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 4096, p->bmr.lkey, 77), 0);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	wc = expect_wc(p, &p->b, RN_WC_RECV, 0, 77);
	assert_int_equal(wc.byte_len, 3000);
	assert_memory_equal(p->bbuf, p->abuf, 3000);
	expect_wc(p, &p->a, RN_WC_SEND, 0, 1);
}

static void
test_send_imm_inline(void **state)
{
	struct pair *p = *state;
	char msg[] = "hello, inline";
	struct rn_sge sge = { (uintptr_t)msg, sizeof(msg), 0 };
	struct rn_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND_IMM, .imm = htobe32(0xfeed),
			    .flags = RN_WR_SIGNALED | RN_WR_INLINE };
	struct rn_wc wc;

	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 64, p->bmr.lkey, 5), 0);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	wc = expect_wc(p, &p->b, RN_WC_RECV_IMM, 0, 5);
	assert_int_equal(wc.imm, htobe32(0xfeed));
	assert_int_equal(wc.byte_len, sizeof(msg));
	assert_string_equal((char *)p->bbuf, msg);
	expect_wc(p, &p->a, RN_WC_SEND, 0, 2);
}

static void
test_zero_byte_send(void **state)
{
	struct pair *p = *state;
	struct rn_wr wr = { .wr_id = 3, .num_sge = 0, .opcode = RN_WR_SEND,
			    .flags = RN_WR_SIGNALED };
	struct rn_wc wc;

	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 64, p->bmr.lkey, 6), 0);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	wc = expect_wc(p, &p->b, RN_WC_RECV, 0, 6);
	assert_int_equal(wc.byte_len, 0);
	expect_wc(p, &p->a, RN_WC_SEND, 0, 3);
}

static void
test_write_and_write_imm(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 65536, p->amr.lkey };
	struct rn_wr wr = { .wr_id = 4, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_WRITE, .flags = RN_WR_SIGNALED,
			    .raddr = (uintptr_t)p->bbuf + 4096, .rkey = p->bmr.rkey };
	struct rn_wc wc;

	fill(p->abuf, 65536, 9);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 4);
	assert_memory_equal(p->bbuf + 4096, p->abuf, 65536);
	/* A plain WRITE consumes no receive WQE and makes no responder CQE. */
	expect_no_wc(p, &p->b, 20);

	wr.opcode = RN_WR_WRITE_IMM;
	wr.imm = htobe32(31);
	wr.wr_id = 5;
	assert_int_equal(rn_harness_post_recv(&p->b, NULL, 0, p->bmr.lkey, 8), 0);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	wc = expect_wc(p, &p->b, RN_WC_RECV_WRITE_IMM, 0, 8);
	assert_int_equal(wc.imm, htobe32(31));
	assert_int_equal(wc.byte_len, 65536);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 5);
}

static void
test_read_into_gather(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge[3] = {
		{ (uintptr_t)p->abuf, 100, p->amr.lkey },
		{ (uintptr_t)p->abuf + 1000, 5000, p->amr.lkey },
		{ (uintptr_t)p->abuf + 9000, 900, p->amr.lkey },
	};
	struct rn_wr wr = { .wr_id = 6, .sg_list = sge, .num_sge = 3,
			    .opcode = RN_WR_READ, .flags = RN_WR_SIGNALED,
			    .raddr = (uintptr_t)p->bbuf + 10, .rkey = p->bmr.rkey };
	struct rn_wc wc;

	fill(p->bbuf, 8192, 3);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	wc = expect_wc(p, &p->a, RN_WC_READ, 0, 6);
	assert_int_equal(wc.byte_len, 6000);
	assert_memory_equal(p->abuf, p->bbuf + 10, 100);
	assert_memory_equal(p->abuf + 1000, p->bbuf + 110, 5000);
	assert_memory_equal(p->abuf + 9000, p->bbuf + 5110, 900);
}

/* Ten unsignalled SENDs and one signalled: one requester CQE retires all. */
static void
test_selective_signalling(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 8, p->amr.lkey };
	struct rn_sge rsge = { (uintptr_t)p->bbuf, 8, p->bmr.lkey };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_SEND };
	struct rn_wc wc[11];

	for (int i = 0; i < 11; i++)
		assert_int_equal(rn_rq_post(&p->b.qp.rq, &rsge, 1, 100 + i), 0);
	rn_rq_ring_doorbell(&p->b.qp.rq);
	for (int i = 0; i < 11; i++) {
		wr.wr_id = (uint64_t)i;
		wr.flags = i == 10 ? RN_WR_SIGNALED : 0;
		assert_int_equal(rn_sq_post(&p->a.qp.sq, &wr), 0);
	}
	rn_sq_ring_doorbell(&p->a.qp.sq);   /* one doorbell, eleven WQEs */
	assert_int_equal(rn_harness_wait(p->ends, &p->b, wc, 11, WAIT_MS), 11);
	for (int i = 0; i < 11; i++)
		assert_int_equal(wc[i].wr_id, 100 + i);   /* in order */
	expect_wc(p, &p->a, RN_WC_SEND, 0, 10);
	assert_int_equal(p->a.qp.sq.ci, p->a.qp.sq.pi);
	expect_no_wc(p, &p->a, 20);
}

/* Hundreds of CQEs through a 256-entry CQ: the owner bit over many laps. */
static void
test_many_laps(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 4, p->amr.lkey };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_SEND,
			    .flags = RN_WR_SIGNALED };
	struct rn_wc wc;

	for (uint32_t i = 0; i < 1100; i++) {
		uint32_t *word = (uint32_t *)p->abuf;

		*word = i;
		assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 4, p->bmr.lkey, i), 0);
		wr.wr_id = i;
		assert_int_equal(rn_harness_post(&p->a, &wr), 0);
		wc = expect_wc(p, &p->b, RN_WC_RECV, 0, i);
		assert_int_equal(wc.byte_len, 4);
		assert_int_equal(*(uint32_t *)p->bbuf, i);
		expect_wc(p, &p->a, RN_WC_SEND, 0, i);
	}
	assert_true(p->a.cq.ci > 4 * p->a.cq.cqe_cnt);
}

/* No receive WQE: RNR NAK, retry after min_rnr_timer, then delivery. */
static void
test_rnr_then_delivery(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 16, p->amr.lkey };
	struct rn_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };
	struct rn_sim_stats stats;

	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_no_wc(p, &p->a, 30);
	rn_sim_stats(p->b.nic, &stats);
	assert_true(stats.rnr_naks_sent >= 1);
	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 64, p->bmr.lkey, 10), 0);
	expect_wc(p, &p->b, RN_WC_RECV, 0, 10);
	expect_wc(p, &p->a, RN_WC_SEND, 0, 9);
}

static void
reconnect_a(struct pair *p, uint8_t rnr_retry, uint8_t retry_cnt)
{
	struct end_info ib = { .addr = p->b.addr, .qpn = p->b.qp.qpn };
	struct rn_qp_connect c = rn_harness_connect_params(&ib);

	c.rnr_retry = rnr_retry;
	c.retry_cnt = retry_cnt;
	c.timeout = 8;   /* 1 ms */
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RESET, NULL), 0);
	assert_int_equal(rn_harness_connect(&p->a, &c), 0);
}

static void
test_rnr_retry_exceeded(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 16, p->amr.lkey };
	struct rn_wr wr = { .wr_id = 11, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = 0 };

	struct rn_sim_stats stats;

	reconnect_a(p, 2, 3);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	wr.wr_id = 12;
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	/* Unsignalled, yet it completes: errors always do. */
	expect_wc(p, &p->a, RN_WC_SEND, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, 11);
	expect_wc(p, &p->a, RN_WC_SEND, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 12);
	rn_sim_stats(p->b.nic, &stats);
	assert_int_equal(stats.rnr_naks_sent, 2 + 1);   /* rnr_retry + 1 */
	assert_int_equal(rn_sim_qp_state(&p->a.qp), RN_QP_ERR);
	assert_int_equal(p->a.qp.sq.ci, p->a.qp.sq.pi);
}

static void
test_cut_wire_transport_retry_exceeded(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 16, p->amr.lkey };
	struct rn_wr wr = { .wr_id = 13, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };
	struct rn_sim_stats stats;

	reconnect_a(p, 7, 2);
	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 64, p->bmr.lkey, 1), 0);
	assert_int_equal(rn_sim_wire_cut(p->a.nic, &p->b.addr), 0);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->a, RN_WC_SEND,
		  MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, 13);
	assert_int_equal(rn_sim_qp_state(&p->a.qp), RN_QP_ERR);
	rn_sim_stats(p->a.nic, &stats);
	assert_int_equal(stats.retransmits, 2);   /* retry_cnt */
	expect_no_wc(p, &p->b, 20);                  /* nothing got through */
	/* Restored, a fresh connection works again. */
	assert_int_equal(rn_sim_wire_restore(p->a.nic, &p->b.addr), 0);
	reconnect_a(p, 7, 2);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->b, RN_WC_RECV, 0, 1);
	expect_wc(p, &p->a, RN_WC_SEND, 0, 13);
}

/* A delayed wire still delivers, in order, and timeouts resend safely. */
static void
test_delayed_wire_delivers_once(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 4, p->amr.lkey };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_SEND,
			    .flags = RN_WR_SIGNALED };
	struct rn_wc wc[4];
	struct rn_sim_stats stats;

	reconnect_a(p, 7, 7);   /* 1 ms timeout, 7 retries: 8 ms budget */
	assert_int_equal(rn_sim_wire_delay(p->a.nic, &p->b.addr, 3000), 0);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf + 64 * i, 64,
						      p->bmr.lkey, i), 0);
	for (uint32_t i = 0; i < 4; i++) {
		*(uint32_t *)(p->abuf + 4 * i) = 1000 + i;
		sge.addr = (uintptr_t)p->abuf + 4 * i;
		wr.wr_id = i;
		assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	}
	assert_int_equal(rn_harness_wait(p->ends, &p->b, wc, 4, WAIT_MS), 4);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, i);
		assert_int_equal(*(uint32_t *)(p->bbuf + 64 * i), 1000 + i);
	}
	assert_int_equal(rn_harness_wait(p->ends, &p->a, wc, 4, WAIT_MS), 4);
	expect_no_wc(p, &p->b, 20);   /* resends were not delivered twice */
	rn_sim_stats(p->a.nic, &stats);
	assert_true(stats.retransmits > 0);
}

static void
test_bad_rkey_and_out_of_bounds(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 64, p->amr.lkey };
	struct rn_wr wr = { .wr_id = 14, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_WRITE, .flags = RN_WR_SIGNALED,
			    .raddr = (uintptr_t)p->bbuf, .rkey = p->bmr.rkey + 1 };

	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->a, RN_WC_WRITE, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, 14);
	assert_int_equal(rn_sim_qp_state(&p->a.qp), RN_QP_ERR);
	assert_int_equal(rn_sim_qp_state(&p->b.qp), RN_QP_ERR);

	/* Fresh pair: READ past the end of the region. */
	reconnect_a(p, 7, 3);
	assert_int_equal(rn_nic_qp_modify(p->b.nic, &p->b.qp, RN_QP_RESET, NULL), 0);
	{
		struct end_info ia = { .addr = p->a.addr, .qpn = p->a.qp.qpn };
		struct rn_qp_connect c = rn_harness_connect_params(&ia);

		assert_int_equal(rn_harness_connect(&p->b, &c), 0);
	}
	wr.opcode = RN_WR_READ;
	wr.rkey = p->bmr.rkey;
	wr.raddr = (uintptr_t)p->bbuf + BUF_SIZE - 32;
	wr.wr_id = 15;
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->a, RN_WC_READ, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, 15);
}

static void
test_local_length_error(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 200, p->amr.lkey };
	struct rn_wr wr = { .wr_id = 16, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };

	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 100, p->bmr.lkey, 20), 0);
	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 100, p->bmr.lkey, 21), 0);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->b, RN_WC_RECV, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, 20);
	expect_wc(p, &p->b, RN_WC_RECV, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 21);
	expect_wc(p, &p->a, RN_WC_SEND, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
		  16);
	assert_int_equal(rn_sim_qp_state(&p->b.qp), RN_QP_ERR);
}

static void
test_bad_lkey_is_local_protection_error(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 64, 0xdead00 };
	struct rn_wr wr = { .wr_id = 17, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = 0 };

	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->a, RN_WC_SEND, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, 17);
	assert_int_equal(rn_sim_qp_state(&p->a.qp), RN_QP_ERR);
}

/* A WQE whose index does not match the producer is rejected. */
static void
test_malformed_wqe_is_local_qp_op_error(void **state)
{
	struct pair *p = *state;
	struct rn_wr wr = { .wr_id = 18, .num_sge = 0, .opcode = RN_WR_SEND,
			    .flags = RN_WR_SIGNALED };
	struct mlx5_wqe_ctrl_seg *ctrl = (void *)p->a.qp.sq.buf;

	assert_int_equal(rn_sq_post(&p->a.qp.sq, &wr), 0);
	ctrl->qpn_ds = htobe32((p->a.qp.qpn + 1) << 8 | 1);   /* wrong QPN */
	rn_sq_ring_doorbell(&p->a.qp.sq);
	expect_wc(p, &p->a, RN_WC_SEND, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, 18);
}

/* Entering ERR flushes every outstanding WQE, send and receive. */
static void
test_qp_error_flushes_both_queues(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 16, p->amr.lkey };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_SEND };
	struct rn_wc wc[8];

	/* Sends wait behind an RNR on b (no receives), receives on a idle. */
	for (uint64_t i = 0; i < 3; i++) {
		wr.wr_id = i;
		assert_int_equal(rn_harness_post(&p->a, &wr), 0);
		assert_int_equal(rn_harness_post_recv(&p->a, p->abuf, 64, p->amr.lkey,
						      50 + i), 0);
	}
	expect_no_wc(p, &p->a, 20);
	assert_int_equal(rn_sim_qp_fail(p->a.nic, &p->a.qp), 0);
	assert_int_equal(rn_harness_wait(p->ends, &p->a, wc, 6, WAIT_MS), 6);
	for (int i = 0; i < 6; i++) {
		print_wc(&wc[i]);
		assert_int_equal(wc[i].status, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	}
	/* Sends first (they were in flight), in order; then receives. */
	assert_int_equal(wc[0].wr_id, 0);
	assert_int_equal(wc[2].wr_id, 2);
	assert_int_equal(wc[3].wr_id, 50);
	assert_int_equal(wc[5].wr_id, 52);
	/* Posted in ERR: flushed as well. */
	wr.wr_id = 9;
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->a, RN_WC_SEND, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 9);
	/* And the state machine refuses ERR -> RTS. */
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RTS,
					  &(struct rn_qp_connect){ 0 }), -EINVAL);
}

/*
 * A destroyed QP's number is reused by the next QP. A SEND still addressed
 * to the old incarnation must fail, never land in the new QP.
 */
static void
test_send_to_destroyed_qpn_never_reaches_its_reuser(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 16, p->amr.lkey };
	struct rn_wr wr = { .wr_id = 19, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };
	struct rn_qp *fresh = &p->b.qp;   /* same storage, new incarnation */
	uint32_t old_qpn = p->b.qp.qpn;
	struct rn_sim_stats stats;

	reconnect_a(p, 7, 2);
	assert_int_equal(rn_nic_qp_destroy(p->b.nic, &p->b.qp), 0);
	assert_int_equal(rn_nic_qp_create(p->b.nic, &p->b.cq, &p->b.cq,
					  &rn_harness_caps, fresh), 0);
	assert_int_equal(fresh->qpn, old_qpn);
	{
		/* The new QP talks to someone else (another QP of a). */
		struct end_info other = { .addr = p->a.addr, .qpn = p->a.qp.qpn + 7 };
		struct rn_qp_connect c = rn_harness_connect_params(&other);

		assert_int_equal(rn_nic_qp_modify(p->b.nic, fresh, RN_QP_INIT, NULL), 0);
		assert_int_equal(rn_nic_qp_modify(p->b.nic, fresh, RN_QP_RTR, &c), 0);
	}
	{
		struct rn_sge r = { (uintptr_t)p->bbuf, 64, p->bmr.lkey };

		assert_int_equal(rn_rq_post(&fresh->rq, &r, 1, 1), 0);
		rn_rq_ring_doorbell(&fresh->rq);
	}
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->a, RN_WC_SEND,
		  MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, 19);
	expect_no_wc(p, &p->b, 20);
	rn_sim_stats(p->b.nic, &stats);
	assert_true(stats.dropped_no_qp >= 1);
}

static bool
fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/*
 * The consumer index never advances: the device detects the overrun, and
 * raises it as an asynchronous event (no CQE could say it), as a ConnectX
 * raises IBV_EVENT_CQ_ERR.
 */
static void
test_cq_overrun_puts_cq_in_error(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 4, p->amr.lkey };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_WRITE,
			    .flags = RN_WR_SIGNALED, .raddr = (uintptr_t)p->bbuf,
			    .rkey = p->bmr.rkey };
	struct rn_sim_stats stats;
	uint64_t deadline = rn_harness_now_ms() + WAIT_MS;
	char text[64];
	bool fatal;

	/* 300 signalled WRITEs (no receives needed) into a 256-entry CQ
	 * that nobody polls. */
	assert_int_equal(p->a.cq.cqe_cnt, 256);
	for (int i = 0; i < 300; i++) {
		wr.wr_id = (uint64_t)i;
		assert_int_equal(rn_sq_post(&p->a.qp.sq, &wr), 0);
	}
	rn_sq_ring_doorbell(&p->a.qp.sq);
	while (!rn_sim_cq_in_error(&p->a.cq) && rn_harness_now_ms() < deadline)
		rn_harness_progress(p->ends);
	assert_true(rn_sim_cq_in_error(&p->a.cq));
	assert_int_equal(rn_sim_qp_state(&p->a.qp), RN_QP_ERR);
	/* The overrun came from an ACK's CQE: the flush emptied the list of
	 * WQEs in flight, and the ACK's retire loop must not count below 0. */
	assert_int_equal(rn_sim_qp_inflight(&p->a.qp), 0);
	rn_sim_stats(p->a.nic, &stats);
	assert_int_equal(stats.cq_overruns, 1);
	assert_true(fd_readable(p->a.nic->ops->event_fd(p->a.nic)));
	assert_int_equal(p->a.nic->ops->take_event(p->a.nic, text,
						   sizeof(text), &fatal), 1);
	assert_true(fatal);
	assert_string_equal(text, "CQ error (overrun)");
	assert_int_equal(p->a.nic->ops->take_event(p->a.nic, text,
						   sizeof(text), &fatal), 0);
	assert_false(fd_readable(p->a.nic->ops->event_fd(p->a.nic)));
	/* b saw nothing of it. */
	assert_int_equal(p->b.nic->ops->take_event(p->b.nic, text,
						   sizeof(text), &fatal), 0);
}

/* Completions of a QP's earlier life never reach it after RESET. */
static void
test_reset_scrubs_unpolled_cqes(void **state)
{
	struct pair *p = *state;
	struct end_info ia = { .addr = p->a.addr, .qpn = p->a.qp.qpn };
	struct rn_qp_connect c = rn_harness_connect_params(&ia);
	struct rn_sge sge = { (uintptr_t)p->abuf, 8, p->amr.lkey };
	struct rn_wr wr = { .wr_id = 40, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };

	for (uint64_t i = 0; i < 3; i++)
		assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 64, p->bmr.lkey, i), 0);
	assert_int_equal(rn_sim_qp_fail(p->b.nic, &p->b.qp), 0);
	/* Three flush CQEs wait in b's CQ, unpolled, when b is reset. */
	assert_int_equal(rn_nic_qp_modify(p->b.nic, &p->b.qp, RN_QP_RESET, NULL), 0);
	assert_int_equal(rn_harness_connect(&p->b, &c), 0);
	reconnect_a(p, 7, 3);
	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 64, p->bmr.lkey, 9), 0);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->b, RN_WC_RECV, 0, 9);
	assert_int_equal(p->b.cq.stale, 3);
	assert_int_equal(p->b.qp.rq.tail, p->b.qp.rq.head);
}

/* Nor does a new QP that was given a destroyed QP's number. */
static void
test_destroy_scrubs_for_the_next_user_of_the_qpn(void **state)
{
	struct pair *p = *state;
	struct rn_sge sge = { (uintptr_t)p->abuf, 8, p->amr.lkey };
	struct rn_wr wr = { .wr_id = 41, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };
	struct rn_sim_stats stats;
	uint32_t qpn = p->b.qp.qpn;
	struct rn_wc wc;
	uint64_t deadline = rn_harness_now_ms() + WAIT_MS;

	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 64, p->bmr.lkey, 1), 0);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	/* Progress until b's receive CQE is written, but do not poll it. */
	do {
		rn_harness_progress(p->ends);
		rn_sim_stats(p->b.nic, &stats);
	} while (stats.frames_received < 2 && rn_harness_now_ms() < deadline);
	expect_wc(p, &p->a, RN_WC_SEND, 0, 41);
	assert_int_equal(rn_nic_qp_destroy(p->b.nic, &p->b.qp), 0);
	assert_int_equal(rn_nic_qp_create(p->b.nic, &p->b.cq, &p->b.cq,
					  &rn_harness_caps, &p->b.qp), 0);
	assert_int_equal(p->b.qp.qpn, qpn);
	assert_int_equal(rn_cq_poll(&p->b.cq, &wc, 1), 0);
	assert_int_equal(p->b.cq.stale, 1);
	assert_int_equal(p->b.qp.rq.tail, 0);
}

/* In-flight WQEs complete before the later WQE that failed locally. */
static void
test_error_completions_stay_in_order(void **state)
{
	struct pair *p = *state;
	struct rn_sge good = { (uintptr_t)p->abuf, 8, p->amr.lkey };
	struct rn_sge bad = { (uintptr_t)p->abuf, 8, 0xbad00 };
	struct rn_wr wr = { .wr_id = 50, .sg_list = &good, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };

	/* A waits on RNR (b posts no receive); then B has a bad lkey. */
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_no_wc(p, &p->a, 20);
	wr.wr_id = 51;
	wr.sg_list = &bad;
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->a, RN_WC_SEND, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 50);
	expect_wc(p, &p->a, RN_WC_SEND, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, 51);
	assert_int_equal(p->a.qp.sq.ci, p->a.qp.sq.pi);
}

/* RTS -> RTS changes the RNR timer and rights, never the send PSN. */
static void
test_rts_to_rts_keeps_the_psn(void **state)
{
	struct pair *p = *state;
	struct end_info ib = { .addr = p->b.addr, .qpn = p->b.qp.qpn };
	struct rn_qp_connect c = rn_harness_connect_params(&ib);
	struct rn_sge sge = { (uintptr_t)p->abuf, 8, p->amr.lkey };
	struct rn_wr wr = { .wr_id = 60, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };

	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 64, p->bmr.lkey, 1), 0);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->b, RN_WC_RECV, 0, 1);
	expect_wc(p, &p->a, RN_WC_SEND, 0, 60);
	c.local_psn = 0x100;   /* what the first RTS had: would replay PSNs */
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RTS, &c), 0);
	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf, 64, p->bmr.lkey, 2), 0);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->b, RN_WC_RECV, 0, 2);   /* delivered, not a duplicate */
	expect_wc(p, &p->a, RN_WC_SEND, 0, 60);
}

static void
test_state_machine(void **state)
{
	struct pair *p = *state;
	struct rn_qp_connect c = { .min_rnr_timer = 1 };

	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RESET, NULL), 0);
	assert_int_equal(rn_sim_qp_state(&p->a.qp), RN_QP_RESET);
	assert_int_equal(be32toh(p->a.qp.sq.dbrec[0]), 0);
	assert_int_equal(p->a.qp.sq.pi, 0);
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RTR, &c), -EINVAL);
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RTS, &c), -EINVAL);
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_INIT, NULL), 0);
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RTS, &c), -EINVAL);
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RTR, NULL), -EINVAL);
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RTR, &c), 0);
	c.retry_cnt = 8;
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RTS, &c), -EINVAL);
	c.retry_cnt = 7;
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RTS, &c), 0);
	assert_int_equal(rn_sim_qp_state(&p->a.qp), RN_QP_RTS);
}

/*
 * What a QP can produce fits what rn_qp_cqes() says to reserve for it: no
 * more send BBs in use than the reservation's send part, whatever ring the
 * device made, and the receive WQEs on top.
 */
static void
test_qp_never_outgrows_its_cqes(void **state)
{
	static const struct rn_qp_caps caps[] = {
		{ .max_send_wr = 64, .max_recv_wr = 1, .max_send_sge = 4,
		  .max_recv_sge = 1, .max_inline = 64 },
		{ .max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = 2,
		  .max_recv_sge = 1, .max_inline = 512 },
		{ .max_send_wr = 3, .max_recv_wr = 0, .max_send_sge = 1,
		  .max_recv_sge = 1, .max_inline = 0 },
	};
	struct pair *p = *state;

	for (unsigned int i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		struct rn_qp qp;

		assert_int_equal(rn_nic_qp_create(p->b.nic, &p->b.cq, &p->b.cq,
						  &caps[i], &qp), 0);
		assert_true(qp.sq.limit >= 1 && qp.sq.limit <= qp.sq.wqe_mask + 1);
		assert_true(qp.sq.limit + qp.rq.wqe_mask + 1 <=
			    rn_qp_cqes(&caps[i]));
		assert_int_equal(rn_sq_room(&qp.sq), qp.sq.limit);
		assert_int_equal(rn_nic_qp_destroy(p->b.nic, &qp), 0);
	}
}

/*
 * The notify QP as the lcore asks for it (rn_lcore_qp_caps(): a send
 * and a receive WQE per slot, frames of [notify] max_inline + 8 bytes
 * inline), for every number of slots from 2 and several max_inline: the
 * ring the device makes lets the slots' signalling (one in k,
 * rn_send_window_init()) pace inline SENDs of the largest frame, so the
 * lcore's clamp on max_inline never bites. A ring past 32768 BBs is
 * refused (its 16-bit WQE counter would lap).
 */
static void
test_notify_ring_paces_the_largest_inline_send(void **state)
{
	static const uint32_t max_inline[] = { 0, 64, 200, 504 };
	struct pair *p = *state;

	for (uint32_t slots = 2; slots <= 4096; slots *= 2) {
		struct rn_send_window sends;
		uint32_t k;

		rn_send_window_init(&sends, slots, NULL, NULL);
		k = sends.signal_mask + 1;

		for (unsigned int i = 0; i < RTE_DIM(max_inline); i++) {
			struct rn_qp_caps caps = {
				.max_send_wr = slots, .max_recv_wr = slots,
				.max_send_sge = 2, .max_recv_sge = 1,
				.max_inline = max_inline[i] + 8 };
			uint32_t bbs = rn_sq_send_inline_bbs(caps.max_inline);
			struct rn_qp qp;
			int rc = rn_nic_qp_create(p->b.nic, &p->b.cq, &p->b.cq,
						  &caps, &qp);

			if (slots * bbs > 32768) {
				assert_int_equal(rc, -EINVAL);
				continue;
			}
			assert_int_equal(rc, 0);
			assert_true(rn_sq_send_inline_max(rn_sq_paced_max_bbs(
					    &qp.sq, k)) >= caps.max_inline);
			assert_int_equal(rn_nic_qp_destroy(p->b.nic, &qp), 0);
		}
	}
}

#define PAIR_TEST(f) cmocka_unit_test_setup_teardown(f, pair_setup, pair_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		PAIR_TEST(test_send_recv),
		PAIR_TEST(test_send_imm_inline),
		PAIR_TEST(test_zero_byte_send),
		PAIR_TEST(test_write_and_write_imm),
		PAIR_TEST(test_read_into_gather),
		PAIR_TEST(test_selective_signalling),
		PAIR_TEST(test_many_laps),
		PAIR_TEST(test_rnr_then_delivery),
		PAIR_TEST(test_rnr_retry_exceeded),
		PAIR_TEST(test_cut_wire_transport_retry_exceeded),
		PAIR_TEST(test_delayed_wire_delivers_once),
		PAIR_TEST(test_bad_rkey_and_out_of_bounds),
		PAIR_TEST(test_local_length_error),
		PAIR_TEST(test_bad_lkey_is_local_protection_error),
		PAIR_TEST(test_malformed_wqe_is_local_qp_op_error),
		PAIR_TEST(test_qp_error_flushes_both_queues),
		PAIR_TEST(test_send_to_destroyed_qpn_never_reaches_its_reuser),
		PAIR_TEST(test_cq_overrun_puts_cq_in_error),
		PAIR_TEST(test_reset_scrubs_unpolled_cqes),
		PAIR_TEST(test_destroy_scrubs_for_the_next_user_of_the_qpn),
		PAIR_TEST(test_error_completions_stay_in_order),
		PAIR_TEST(test_rts_to_rts_keeps_the_psn),
		PAIR_TEST(test_state_machine),
		PAIR_TEST(test_qp_never_outgrows_its_cqes),
		PAIR_TEST(test_notify_ring_paces_the_largest_inline_send),
	};

	return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
