/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided RDMA on the software mlx5 device, as a ConnectX does it: WRITE,
 * WRITE_IMM and READ move bytes exactly; the responder checks the QP's
 * rights, its READ resources, then the rkey's registration, rights and
 * bounds; every failure has the syndrome hardware gives (libmlx5 turns
 * REMOTE_ACCESS 0x13 into IBV_WC_REM_ACCESS_ERR, LOCAL_PROT 0x04 into
 * IBV_WC_LOC_PROT_ERR, WR_FLUSH 0x05 into IBV_WC_WR_FLUSH_ERR,
 * REMOTE_INVAL_REQ 0x12 into IBV_WC_REM_INV_REQ_ERR, LOCAL_ACCESS 0x11 into
 * IBV_WC_LOC_ACCESS_ERR) and leaves the QPs as hardware leaves them; the
 * READ limits hold; the hold-back fault delays one QP only. Two device
 * contexts in this process, joined by the loopback wire. Random choices
 * print their seed (RNOTIFY_TEST_SEED replays them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rn_test_seed.h"
#include "sim_pair.h"

#define MIB (1u << 20)
#define BUF_SIZE (4 * MIB)
/* abuf: [0, 2 MiB) what a WRITEs, [2 MiB, 4 MiB) where its READs land. */
#define READ_AT (2 * MIB)

static int
pair_setup(void **state)
{
	return pair_open(state, BUF_SIZE);
}

static uint32_t rng;

static uint32_t
next(void)
{
	return pair_next(&rng);
}

static void
random_bytes(uint8_t *buf, size_t len)
{
	pair_random_bytes(&rng, buf, len);
}

static void
post_rdma(struct end *e, uint8_t opcode, void *local, uint32_t len,
	  uint32_t lkey, uint64_t raddr, uint32_t rkey, uint8_t flags,
	  uint64_t wr_id)
{
	pair_post_rdma(e, opcode, (uintptr_t)local, len, lkey, raddr, rkey, 0,
		       flags, wr_id);
}

/* WRITE len bytes from abuf + src to bbuf + dst, then READ them back to
 * abuf + READ_AT + src, both checked byte for byte. */
static void
write_then_read_back(struct pair *p, uint32_t src, uint32_t dst, uint32_t len,
		     uint64_t wr_id)
{
	struct rn_wc wc;

	random_bytes(p->abuf + src, len);
	memset(p->abuf + READ_AT + src, 0, len);
	post_rdma(&p->a, RN_WR_WRITE, p->abuf + src, len, p->amr.lkey,
		  (uintptr_t)p->bbuf + dst, p->bmr.rkey, RN_WR_SIGNALED, wr_id);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, wr_id);
	assert_memory_equal(p->bbuf + dst, p->abuf + src, len);
	post_rdma(&p->a, RN_WR_READ, p->abuf + READ_AT + src, len, p->amr.lkey,
		  (uintptr_t)p->bbuf + dst, p->bmr.rkey, RN_WR_SIGNALED,
		  wr_id + 1);
	wc = expect_wc(p, &p->a, RN_WC_READ, 0, wr_id + 1);
	assert_int_equal(wc.byte_len, len);
	assert_memory_equal(p->abuf + READ_AT + src, p->abuf + src, len);
}

static void
test_write_then_read_back(void **state)
{
	static const uint32_t sizes[] = { 1, 4096, MIB };
	struct pair *p = *state;

	rng = rn_test_seed("test_write_then_read_back", 1801) | 1;
	for (unsigned int i = 0; i < RTE_DIM(sizes); i++)
		write_then_read_back(p, 0, 8, sizes[i], 10 * i);
	/* A seeded random set: sizes up to the largest message, at any
	 * offset (alignment is no concern of RDMA). */
	for (unsigned int i = 0; i < 40; i++) {
		uint32_t len = 1 + next() % (i % 4 == 0 ? MIB : 65536);
		uint32_t src = next() % (READ_AT - len + 1);
		uint32_t dst = next() % (BUF_SIZE - len + 1);

		write_then_read_back(p, src, dst, len, 100 + 2 * i);
	}
	/* Nothing on the responder: one-sided operations make no CQE. */
	expect_no_wc(p, &p->b, 10);
}

/* Several data segments: a WRITE gathers them in order, a READ scatters
 * into them in order. */
static void
test_gather_write_scatter_read(void **state)
{
	struct pair *p = *state;
	struct rn_sge gather[4], scatter[4];
	uint32_t lens[4], total = 0;
	struct rn_wr wr = { .num_sge = 4, .flags = RN_WR_SIGNALED,
			    .rkey = p->bmr.rkey,
			    .raddr = (uintptr_t)p->bbuf + 12345 };
	struct rn_wc wc;
	uint32_t at = 0;

	rng = rn_test_seed("test_gather_write_scatter_read", 1802) | 1;
	for (int i = 0; i < 4; i++) {
		lens[i] = 1 + next() % 100000;
		gather[i] = (struct rn_sge){ (uintptr_t)p->abuf + 200000 * i,
					     lens[i], p->amr.lkey };
		scatter[i] = (struct rn_sge){
			(uintptr_t)p->abuf + READ_AT + 300000 * i, lens[i],
			p->amr.lkey };
		random_bytes(p->abuf + 200000 * i, lens[i]);
		total += lens[i];
	}
	wr.opcode = RN_WR_WRITE;
	wr.sg_list = gather;
	wr.wr_id = 1;
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 1);
	for (int i = 0; i < 4; i++) {
		assert_memory_equal(p->bbuf + 12345 + at, p->abuf + 200000 * i,
				    lens[i]);
		at += lens[i];
	}
	wr.opcode = RN_WR_READ;
	wr.sg_list = scatter;
	wr.wr_id = 2;
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	wc = expect_wc(p, &p->a, RN_WC_READ, 0, 2);
	assert_int_equal(wc.byte_len, total);
	for (int i = 0; i < 4; i++)
		assert_memory_equal(p->abuf + READ_AT + 300000 * i,
				    p->abuf + 200000 * i, lens[i]);
}

/*
 * A bad rkey: REMOTE_ACCESS for the WQE (unsignalled, still reported),
 * the requester's QP in ERR and every WQE after it flushed, the ones
 * posted later too; the responder's QP in ERR as well (a class C error),
 * and nothing written.
 */
static void
test_bad_rkey_fails_and_flushes(void **state)
{
	struct pair *p = *state;
	struct rn_wc wc;

	fill(p->abuf, 4096, 7);
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, 64, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey ^ 0x100, 0, 1);
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, 64, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey, RN_WR_SIGNALED, 2);
	post_rdma(&p->a, RN_WR_READ, p->abuf + READ_AT, 64, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey, 0, 3);
	wc = expect_wc(p, &p->a, RN_WC_WRITE,
		       MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, 1);
	assert_int_equal(rn_wc_status_ibv(wc.status), IBV_WC_REM_ACCESS_ERR);
	wc = expect_wc(p, &p->a, RN_WC_WRITE, MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
		       2);
	assert_int_equal(rn_wc_status_ibv(wc.status), IBV_WC_WR_FLUSH_ERR);
	expect_wc(p, &p->a, RN_WC_READ, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 3);
	assert_int_equal(rn_sim_qp_state(&p->a.qp), RN_QP_ERR);
	assert_int_equal(rn_sim_qp_state(&p->b.qp), RN_QP_ERR);
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, 64, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey, 0, 4);
	expect_wc(p, &p->a, RN_WC_WRITE, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 4);
	assert_int_equal(p->a.qp.sq.ci, p->a.qp.sq.pi);
	for (int i = 0; i < 64; i++)
		assert_int_equal(p->bbuf[i], 0);
	/* A deregistered region's rkey is a bad rkey too. */
	pair_reconnect(p, 0, 0, all_access);
	{
		struct rn_mr gone;

		assert_int_equal(rn_nic_mr_reg(p->b.nic, p->bbuf + MIB, 4096,
					       all_access, &gone), 0);
		assert_int_equal(rn_nic_mr_dereg(p->b.nic, &gone), 0);
		assert_int_equal(rn_nic_mr_dereg(p->b.nic, &gone), -EINVAL);
		post_rdma(&p->a, RN_WR_READ, p->abuf + READ_AT, 64, p->amr.lkey,
			  (uintptr_t)p->bbuf + MIB, gone.rkey, 0, 5);
		expect_wc(p, &p->a, RN_WC_READ,
			  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, 5);
	}
}

/* Bounds: one byte past the end, before the start, or a length that
 * wraps: each REMOTE_ACCESS; the exact region works. */
static void
test_out_of_bounds(void **state)
{
	struct pair *p = *state;
	struct rn_mr small;
	uint8_t *base = p->bbuf + MIB;
	const struct {
		uint8_t opcode;
		uint64_t raddr;
		uint32_t len;
		uint8_t status;
	} cases[] = {
		{ RN_WR_WRITE, (uintptr_t)base, 4096, 0 },
		{ RN_WR_READ, (uintptr_t)base, 4096, 0 },
		{ RN_WR_WRITE, (uintptr_t)base + 1, 4096,
		  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR },
		{ RN_WR_READ, (uintptr_t)base + 4095, 2,
		  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR },
		{ RN_WR_WRITE, (uintptr_t)base - 1, 1,
		  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR },
		{ RN_WR_READ, UINT64_MAX - 10, 64,
		  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR },
	};

	/* b's big region also covers these bytes: a 4 KiB one of its own
	 * is what the rkey names. */
	assert_int_equal(rn_nic_mr_reg(p->b.nic, base, 4096, all_access,
				       &small), 0);
	for (unsigned int i = 0; i < RTE_DIM(cases); i++) {
		uint8_t *local = p->abuf +
				 (cases[i].opcode == RN_WR_READ ? READ_AT : 0);

		print_message("# case %u: opcode 0x%x at region %+ld, "
			      "%u bytes\n", i, cases[i].opcode,
			      (long)(cases[i].raddr - (uintptr_t)base),
			      cases[i].len);
		post_rdma(&p->a, cases[i].opcode, local, cases[i].len,
			  p->amr.lkey, cases[i].raddr, small.rkey,
			  RN_WR_SIGNALED, i);
		expect_wc(p, &p->a, cases[i].opcode == RN_WR_READ ? RN_WC_READ :
								   RN_WC_WRITE,
			  cases[i].status, i);
		if (cases[i].status != 0) {
			assert_int_equal(rn_sim_qp_state(&p->a.qp), RN_QP_ERR);
			assert_int_equal(rn_sim_qp_state(&p->b.qp), RN_QP_ERR);
			pair_reconnect(p, 0, 0, all_access);
		}
	}
	assert_int_equal(rn_nic_mr_dereg(p->b.nic, &small), 0);
}

/*
 * Rights. The registration's: a region without REMOTE_WRITE refuses
 * WRITEs, one without REMOTE_READ READs, with REMOTE_ACCESS. The QP's
 * (what RTR granted the peer): an operation it does not allow is an
 * invalid request, REMOTE_INVAL_REQ, as rxe and the IB spec have it.
 */
static void
test_missing_access(void **state)
{
	struct pair *p = *state;
	struct rn_mr ro, wo;
	uint8_t *r = p->bbuf + MIB, *w = p->bbuf + 2 * MIB;

	assert_int_equal(rn_nic_mr_reg(p->b.nic, r, 4096, RN_ACCESS_REMOTE_READ,
				       &ro), 0);
	assert_int_equal(rn_nic_mr_reg(p->b.nic, w, 4096,
				       RN_ACCESS_LOCAL_WRITE |
				       RN_ACCESS_REMOTE_WRITE, &wo), 0);
	/* What each allows works. */
	post_rdma(&p->a, RN_WR_READ, p->abuf + READ_AT, 4096, p->amr.lkey,
		  (uintptr_t)r, ro.rkey, RN_WR_SIGNALED, 1);
	expect_wc(p, &p->a, RN_WC_READ, 0, 1);
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, 4096, p->amr.lkey,
		  (uintptr_t)w, wo.rkey, RN_WR_SIGNALED, 2);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 2);
	/* What each does not. */
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, 16, p->amr.lkey, (uintptr_t)r,
		  ro.rkey, RN_WR_SIGNALED, 3);
	expect_wc(p, &p->a, RN_WC_WRITE, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR,
		  3);
	pair_reconnect(p, 0, 0, all_access);
	post_rdma(&p->a, RN_WR_READ, p->abuf + READ_AT, 16, p->amr.lkey,
		  (uintptr_t)w, wo.rkey, RN_WR_SIGNALED, 4);
	expect_wc(p, &p->a, RN_WC_READ, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, 4);
	/* The QP's rights: b's QP lets the peer READ, not WRITE. */
	pair_reconnect(p, 0, 0, RN_ACCESS_LOCAL_WRITE | RN_ACCESS_REMOTE_READ);
	post_rdma(&p->a, RN_WR_READ, p->abuf + READ_AT, 16, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey, RN_WR_SIGNALED, 5);
	expect_wc(p, &p->a, RN_WC_READ, 0, 5);
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, 16, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey, RN_WR_SIGNALED, 6);
	expect_wc(p, &p->a, RN_WC_WRITE, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
		  6);
	assert_int_equal(rn_sim_qp_state(&p->b.qp), RN_QP_ERR);
	/* Registration refuses REMOTE_WRITE without LOCAL_WRITE, as
	 * ibv_reg_mr does, and what no provider could register. */
	assert_int_equal(rn_nic_mr_reg(p->b.nic, w, 64, RN_ACCESS_REMOTE_WRITE,
				       &ro), -EINVAL);
	assert_int_equal(rn_nic_mr_reg(p->b.nic, w, 0, all_access, &ro),
			 -EINVAL);
	assert_int_equal(rn_nic_mr_reg(p->b.nic, w, 64, 1u << 7, &ro), -EINVAL);
	assert_int_equal(rn_nic_mr_reg_dmabuf(p->b.nic, 0, 4096, 0, 0,
					      all_access, &ro), -EOPNOTSUPP);
	assert_int_equal(rn_nic_mr_reg_dmabuf(p->b.nic, 0, 4096, 0, -1,
					      all_access, &ro), -EBADF);
}

/*
 * A bad local key: LOCAL_PROT at the requester, found before anything is
 * sent (the responder sees nothing and stays in RTS). For a READ the
 * local segment must grant LOCAL_WRITE and hold the bytes.
 */
static void
test_bad_lkey(void **state)
{
	struct pair *p = *state;
	struct rn_mr ro;
	const struct {
		uint8_t opcode;
		uint32_t len;
		bool ro_key;      /* the read-only region's key, else a's */
		uint32_t key_xor;
	} cases[] = {
		{ RN_WR_WRITE, 64, false, 0x100 },   /* no such key */
		{ RN_WR_READ, 64, false, 0x100 },
		{ RN_WR_READ, 64, true, 0 },          /* no LOCAL_WRITE */
		{ RN_WR_WRITE, 8192, true, 0 },       /* past its end */
	};
	struct rn_sim_stats before, after;
	struct rn_wc wc;

	assert_int_equal(rn_nic_mr_reg(p->a.nic, p->abuf + READ_AT, 4096, 0,
				       &ro), 0);
	for (unsigned int i = 0; i < RTE_DIM(cases); i++) {
		uint32_t key = (cases[i].ro_key ? ro.lkey : p->amr.lkey) ^
			       cases[i].key_xor;

		rn_sim_stats(p->b.nic, &before);
		post_rdma(&p->a, cases[i].opcode, p->abuf + READ_AT,
			  cases[i].len, key, (uintptr_t)p->bbuf, p->bmr.rkey,
			  0, i);
		wc = expect_wc(p, &p->a, cases[i].opcode == RN_WR_READ ?
				   RN_WC_READ : RN_WC_WRITE,
			       MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, i);
		assert_int_equal(rn_wc_status_ibv(wc.status),
				 IBV_WC_LOC_PROT_ERR);
		assert_int_equal(rn_sim_qp_state(&p->a.qp), RN_QP_ERR);
		assert_int_equal(rn_sim_qp_state(&p->b.qp), RN_QP_RTS);
		rn_sim_stats(p->b.nic, &after);
		assert_int_equal(after.frames_received, before.frames_received);
		pair_reconnect(p, 0, 0, all_access);
	}
	/* A READ works into the same place with a's own key. */
	post_rdma(&p->a, RN_WR_READ, p->abuf + READ_AT, 64, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey, RN_WR_SIGNALED, 9);
	expect_wc(p, &p->a, RN_WC_READ, 0, 9);
}

/* Larger than one frame may carry (RN_SIM_MAX_MSG): LOCAL_LENGTH, before
 * anything is sent. */
static void
test_message_over_the_frame_bound(void **state)
{
	struct pair *p = *state;

	post_rdma(&p->a, RN_WR_WRITE, p->abuf, RN_SIM_MAX_MSG + 1, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey, RN_WR_SIGNALED, 1);
	expect_wc(p, &p->a, RN_WC_WRITE, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, 1);
	pair_reconnect(p, 0, 0, all_access);
	post_rdma(&p->a, RN_WR_READ, p->abuf + READ_AT, RN_SIM_MAX_MSG + 1,
		  p->amr.lkey, (uintptr_t)p->bbuf, p->bmr.rkey, RN_WR_SIGNALED,
		  2);
	expect_wc(p, &p->a, RN_WC_READ, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, 2);
	assert_int_equal(rn_sim_qp_state(&p->b.qp), RN_QP_RTS);
}

/*
 * WRITE_IMM: the bytes are placed, and the target's receive WQE (its
 * buffer untouched) completes with the immediate and the byte count. With
 * a bad rkey, the receive WQE completes with LOCAL_ACCESS and the rest of
 * the receive queue is flushed; the requester gets REMOTE_ACCESS.
 */
static void
test_write_imm(void **state)
{
	struct pair *p = *state;
	uint8_t untouched[16];
	struct rn_wc wc;

	rng = rn_test_seed("test_write_imm", 1803) | 1;
	random_bytes(p->abuf, 8192);
	memset(p->bbuf + 3 * MIB, 0x5c, sizeof(untouched));
	memcpy(untouched, p->bbuf + 3 * MIB, sizeof(untouched));
	assert_int_equal(rn_harness_post_recv(&p->b, p->bbuf + 3 * MIB, 16,
					      p->bmr.lkey, 70), 0);
	{
		struct rn_sge sge = { (uintptr_t)p->abuf, 8192, p->amr.lkey };

		assert_int_equal(rn_sq_post_rdma(&p->a.qp.sq, RN_WR_WRITE_IMM,
						 &sge, (uintptr_t)p->bbuf + 100,
						 p->bmr.rkey, htobe32(0xfeed),
						 RN_WR_SIGNALED, 7), 0);
		rn_sq_ring_doorbell(&p->a.qp.sq);
	}
	wc = expect_wc(p, &p->b, RN_WC_RECV_WRITE_IMM, 0, 70);
	assert_int_equal(wc.imm, htobe32(0xfeed));
	assert_int_equal(wc.byte_len, 8192);
	assert_memory_equal(p->bbuf + 100, p->abuf, 8192);
	assert_memory_equal(p->bbuf + 3 * MIB, untouched, sizeof(untouched));
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 7);

	/* A bad rkey. */
	assert_int_equal(rn_harness_post_recv(&p->b, NULL, 0, p->bmr.lkey, 71),
			 0);
	assert_int_equal(rn_harness_post_recv(&p->b, NULL, 0, p->bmr.lkey, 72),
			 0);
	{
		struct rn_sge sge = { (uintptr_t)p->abuf, 64, p->amr.lkey };

		assert_int_equal(rn_sq_post_rdma(&p->a.qp.sq, RN_WR_WRITE_IMM,
						 &sge, (uintptr_t)p->bbuf,
						 p->bmr.rkey + 0x100,
						 htobe32(1), 0, 8), 0);
		rn_sq_ring_doorbell(&p->a.qp.sq);
	}
	expect_wc(p, &p->b, RN_WC_RECV, MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, 71);
	expect_wc(p, &p->b, RN_WC_RECV, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 72);
	expect_wc(p, &p->a, RN_WC_WRITE, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR,
		  8);
}

/* A WRITE_IMM finds no receive WQE: RNR, nothing placed, then delivered
 * once one is posted. */
static void
test_write_imm_waits_for_a_receive(void **state)
{
	struct pair *p = *state;
	struct rn_sim_stats stats;
	struct rn_sge sge = { (uintptr_t)p->abuf, 4096, p->amr.lkey };

	fill(p->abuf, 4096, 3);
	assert_int_equal(rn_sq_post_rdma(&p->a.qp.sq, RN_WR_WRITE_IMM, &sge,
					 (uintptr_t)p->bbuf, p->bmr.rkey,
					 htobe32(5), RN_WR_SIGNALED, 1), 0);
	rn_sq_ring_doorbell(&p->a.qp.sq);
	expect_no_wc(p, &p->a, 30);
	rn_sim_stats(p->b.nic, &stats);
	assert_true(stats.rnr_naks_sent >= 1);
	assert_int_equal(p->bbuf[1], 0);
	assert_int_equal(rn_harness_post_recv(&p->b, NULL, 0, p->bmr.lkey, 2),
			 0);
	expect_wc(p, &p->b, RN_WC_RECV_WRITE_IMM, 0, 2);
	assert_memory_equal(p->bbuf, p->abuf, 4096);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 1);
}

/* n signalled READs of 4 KiB each, one doorbell; their CQEs in order. */
static void
post_reads_expect_in_order(struct pair *p, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct rn_sge sge = { (uintptr_t)p->abuf + READ_AT + 4096 * i,
				      4096, p->amr.lkey };

		assert_int_equal(rn_sq_post_rdma(&p->a.qp.sq, RN_WR_READ, &sge,
						 (uintptr_t)p->bbuf + 4096 * i,
						 p->bmr.rkey, 0, RN_WR_SIGNALED,
						 i), 0);
	}
	rn_sq_ring_doorbell(&p->a.qp.sq);
	for (uint32_t i = 0; i < n; i++)
		expect_wc(p, &p->a, RN_WC_READ, 0, i);
	assert_memory_equal(p->abuf + READ_AT, p->bbuf, 4096 * n);
}

/*
 * max_rd_atomic 1: four READs posted at once complete in order, and the
 * requester never has more than one out: it waited for each. The same
 * four with the default limit are all out at once, so the counter would
 * show a requester that does not wait.
 */
static void
test_max_rd_atomic_one(void **state)
{
	struct pair *p = *state;
	struct rn_sim_qp_stats st;

	rng = rn_test_seed("test_max_rd_atomic_one", 1804) | 1;
	random_bytes(p->bbuf, 4 * 4096);
	pair_reconnect(p, 1, 0, all_access);
	post_reads_expect_in_order(p, 4);
	rn_sim_qp_stats(&p->a.qp, &st);
	print_message("# limit 1: at most %u out, %lu waits\n",
		      st.reads_outstanding_max, (unsigned long)st.read_waits);
	assert_int_equal(st.reads_outstanding_max, 1);
	assert_int_equal(st.reads_outstanding, 0);
	assert_true(st.read_waits >= 3);

	random_bytes(p->bbuf, 4 * 4096);
	pair_reconnect(p, 0, 0, all_access);
	post_reads_expect_in_order(p, 4);
	rn_sim_qp_stats(&p->a.qp, &st);
	print_message("# default limit: at most %u out\n",
		      st.reads_outstanding_max);
	assert_int_equal(st.reads_outstanding_max, 4);
}

/*
 * The responder takes max_dest_rd_atomic READs at once: a requester
 * allowed more (a mismatch the connection should never make) gets the
 * next one refused as an invalid request, REMOTE_INVAL_REQ, and the rest
 * flushed. The four requests leave in one frame burst and arrive in one
 * progress of the responder.
 */
static void
test_max_dest_rd_atomic_refuses_more(void **state)
{
	struct pair *p = *state;
	struct rn_sim_qp_stats st;

	pair_reconnect(p, 4, 1, all_access);
	for (uint32_t i = 0; i < 4; i++) {
		struct rn_sge sge = { (uintptr_t)p->abuf + READ_AT + 64 * i, 64,
				      p->amr.lkey };

		assert_int_equal(rn_sq_post_rdma(&p->a.qp.sq, RN_WR_READ, &sge,
						 (uintptr_t)p->bbuf,
						 p->bmr.rkey, 0,
						 RN_WR_SIGNALED, i), 0);
	}
	rn_sq_ring_doorbell(&p->a.qp.sq);
	expect_wc(p, &p->a, RN_WC_READ, 0, 0);
	expect_wc(p, &p->a, RN_WC_READ, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
		  1);
	expect_wc(p, &p->a, RN_WC_READ, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 2);
	expect_wc(p, &p->a, RN_WC_READ, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 3);
	rn_sim_qp_stats(&p->b.qp, &st);
	assert_int_equal(st.reads_refused, 1);
	assert_int_equal(rn_sim_qp_state(&p->b.qp), RN_QP_ERR);
	/* Matched limits never refuse: 1 and 1. */
	pair_reconnect(p, 1, 1, all_access);
	post_reads_expect_in_order(p, 4);
}

/*
 * A fenced WQE starts only once the READs before it completed: a READ
 * into a buffer, then a fenced WRITE of that buffer onward, carries what
 * the READ brought (unfenced, it could carry the old bytes).
 */
static void
test_fence_waits_for_reads(void **state)
{
	struct pair *p = *state;
	struct rn_sim_qp_stats st;
	uint8_t *staging = p->abuf + READ_AT;

	rng = rn_test_seed("test_fence_waits_for_reads", 1805) | 1;
	random_bytes(p->bbuf, 65536);
	memset(staging, 0, 65536);
	post_rdma(&p->a, RN_WR_READ, staging, 65536, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey, 0, 1);
	post_rdma(&p->a, RN_WR_WRITE, staging, 65536, p->amr.lkey,
		  (uintptr_t)p->bbuf + MIB, p->bmr.rkey,
		  RN_WR_FENCE | RN_WR_SIGNALED, 2);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 2);
	assert_memory_equal(p->bbuf + MIB, p->bbuf, 65536);
	rn_sim_qp_stats(&p->a.qp, &st);
	assert_true(st.fence_waits >= 1);
}

/* Both QPs connected again with path MTU mtu (an IBV_MTU_* value), a
 * 1 ms ACK timeout and every retry. */
static void
reconnect_mtu(struct pair *p, uint8_t mtu, uint8_t timeout)
{
	struct rn_qp_connect ca, cb;

	pair_params(p, &ca, &cb);
	ca.remote.mtu = cb.remote.mtu = mtu;
	ca.timeout = cb.timeout = timeout;
	pair_reconnect_with(p, &ca, &cb);
}

/*
 * Messages go as packets of the path MTU, one frame and one PSN each: a
 * WRITE, a READ's response, a SEND into a receive WQE of several
 * segments, and a WRITE_IMM, at a 256-byte MTU and odd sizes, arrive
 * byte exact, in as many frames as packets.
 */
static void
test_packets_of_the_path_mtu(void **state)
{
	static const uint32_t sizes[] = { 1, 255, 256, 257, 4097, 65535 };
	struct pair *p = *state;
	struct rn_sim_stats before, after;
	struct rn_wc wc;

	rng = rn_test_seed("test_packets_of_the_path_mtu", 1807) | 1;
	reconnect_mtu(p, IBV_MTU_256, 18);
	for (unsigned int i = 0; i < RTE_DIM(sizes); i++) {
		uint32_t len = sizes[i];

		rn_sim_stats(p->a.nic, &before);
		write_then_read_back(p, 3 * i, 7 * i, len, 10 * i);
		rn_sim_stats(p->a.nic, &after);
		/* WRITE packets and the READ request went out. */
		assert_int_equal(after.frames_sent - before.frames_sent,
				 (len + 255) / 256 + 1);
	}
	/* A SEND of 1000 bytes into four segments of 300, 300, 300, 100. */
	{
		struct rn_sge r[4];
		struct rn_sge s = { (uintptr_t)p->abuf, 1000, p->amr.lkey };
		struct rn_wr wr = { .wr_id = 90, .sg_list = &s, .num_sge = 1,
				    .opcode = RN_WR_SEND_IMM,
				    .imm = htobe32(4),
				    .flags = RN_WR_SIGNALED };

		for (int i = 0; i < 4; i++)
			r[i] = (struct rn_sge){
				(uintptr_t)p->bbuf + MIB + 1000 * i,
				i == 3 ? 100 : 300, p->bmr.lkey };
		random_bytes(p->abuf, 1000);
		assert_int_equal(rn_rq_post(&p->b.qp.rq, r, 4, 91), 0);
		rn_rq_ring_doorbell(&p->b.qp.rq);
		assert_int_equal(rn_harness_post(&p->a, &wr), 0);
		wc = expect_wc(p, &p->b, RN_WC_RECV_IMM, 0, 91);
		assert_int_equal(wc.byte_len, 1000);
		assert_int_equal(wc.imm, htobe32(4));
		for (int i = 0; i < 4; i++)
			assert_memory_equal(p->bbuf + MIB + 1000 * i,
					    p->abuf + 300 * i,
					    i == 3 ? 100 : 300);
		expect_wc(p, &p->a, RN_WC_SEND, 0, 90);
	}
	/* A WRITE_IMM of 10,000 bytes: one receive CQE, at its last packet. */
	{
		struct rn_sge s = { (uintptr_t)p->abuf, 10000, p->amr.lkey };

		random_bytes(p->abuf, 10000);
		assert_int_equal(rn_harness_post_recv(&p->b, NULL, 0,
						      p->bmr.lkey, 92), 0);
		assert_int_equal(rn_sq_post_rdma(&p->a.qp.sq,
						 RN_WR_WRITE_IMM, &s,
						 (uintptr_t)p->bbuf + 2 * MIB,
						 p->bmr.rkey, htobe32(6),
						 RN_WR_SIGNALED, 93), 0);
		rn_sq_ring_doorbell(&p->a.qp.sq);
		wc = expect_wc(p, &p->b, RN_WC_RECV_WRITE_IMM, 0, 92);
		assert_int_equal(wc.byte_len, 10000);
		assert_memory_equal(p->bbuf + 2 * MIB, p->abuf, 10000);
		expect_wc(p, &p->a, RN_WC_WRITE, 0, 93);
		expect_no_wc(p, &p->b, 10);
	}
}

/*
 * Go-back-N across packets: a delayed wire and a 1 ms ACK timeout make
 * the requester resend multi-packet WRITEs, WRITE_IMMs and READs while
 * their first packets are still on the way. Every byte lands once, every
 * message completes once.
 */
static void
test_resent_packets_land_once(void **state)
{
	struct pair *p = *state;
	struct rn_sim_stats stats;
	struct rn_wc wc[8];
	unsigned int got = 0, recvs = 0;

	rng = rn_test_seed("test_resent_packets_land_once", 1808) | 1;
	reconnect_mtu(p, IBV_MTU_1024, 8);   /* 1 ms, 7 retries */
	assert_int_equal(rn_sim_wire_delay(p->a.nic, &p->b.addr, 3000), 0);
	random_bytes(p->abuf, 3 * 20000);
	random_bytes(p->bbuf + MIB, 20000);
	for (int i = 0; i < 2; i++)
		assert_int_equal(rn_harness_post_recv(&p->b, NULL, 0,
						      p->bmr.lkey, 50 + i), 0);
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, 20000, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey, RN_WR_SIGNALED, 1);
	{
		struct rn_sge s = { (uintptr_t)p->abuf + 20000, 20000,
				    p->amr.lkey };

		assert_int_equal(rn_sq_post_rdma(&p->a.qp.sq,
						 RN_WR_WRITE_IMM, &s,
						 (uintptr_t)p->bbuf + 20000,
						 p->bmr.rkey, htobe32(9),
						 RN_WR_SIGNALED, 2), 0);
	}
	post_rdma(&p->a, RN_WR_READ, p->abuf + READ_AT, 20000, p->amr.lkey,
		  (uintptr_t)p->bbuf + MIB, p->bmr.rkey, RN_WR_SIGNALED, 3);
	while (got < 3) {
		unsigned int n = rn_harness_wait(p->ends, &p->a, wc + got,
						 3 - got, WAIT_MS);

		if (n == 0)
			fail_msg("the requester's WQEs did not complete");
		got += n;
	}
	for (unsigned int i = 0; i < 3; i++) {
		print_wc(&wc[i]);
		assert_int_equal(wc[i].status, 0);
		assert_int_equal(wc[i].wr_id, i + 1);
	}
	assert_memory_equal(p->bbuf, p->abuf, 40000);
	assert_memory_equal(p->abuf + READ_AT, p->bbuf + MIB, 20000);
	recvs = rn_harness_wait(p->ends, &p->b, wc, 2, 50);
	assert_int_equal(recvs, 1);   /* the WRITE_IMM's, once */
	assert_int_equal(wc[0].wr_id, 50);
	assert_int_equal(wc[0].imm, htobe32(9));
	rn_sim_stats(p->a.nic, &stats);
	print_message("# %lu resends\n", (unsigned long)stats.retransmits);
	assert_true(stats.retransmits > 0);
	assert_int_equal(rn_sim_wire_delay(p->a.nic, &p->b.addr, 0), 0);
}

/* A second connected QP on each end, on the ends' CQs. */
static void
second_qps(struct pair *p, struct rn_qp *qa, struct rn_qp *qb)
{
	struct end_info ia = { .addr = p->a.addr };
	struct end_info ib = { .addr = p->b.addr };
	struct rn_qp_connect ca, cb;

	assert_int_equal(rn_nic_qp_create(p->a.nic, &p->a.cq, &p->a.cq,
					  &rn_harness_caps, qa), 0);
	assert_int_equal(rn_nic_qp_create(p->b.nic, &p->b.cq, &p->b.cq,
					  &rn_harness_caps, qb), 0);
	ia.qpn = qa->qpn;
	ib.qpn = qb->qpn;
	ca = rn_harness_connect_params(&ib);
	cb = rn_harness_connect_params(&ia);
	assert_int_equal(rn_nic_qp_modify(p->a.nic, qa, RN_QP_INIT, NULL), 0);
	assert_int_equal(rn_nic_qp_modify(p->a.nic, qa, RN_QP_RTR, &ca), 0);
	assert_int_equal(rn_nic_qp_modify(p->a.nic, qa, RN_QP_RTS, &ca), 0);
	assert_int_equal(rn_nic_qp_modify(p->b.nic, qb, RN_QP_INIT, NULL), 0);
	assert_int_equal(rn_nic_qp_modify(p->b.nic, qb, RN_QP_RTR, &cb), 0);
	assert_int_equal(rn_nic_qp_modify(p->b.nic, qb, RN_QP_RTS, &cb), 0);
}

/* The "notification": a SEND on qa into a receive on qb. */
static void
send_note(struct pair *p, struct rn_qp *qa, struct rn_qp *qb, uint64_t wr_id)
{
	struct rn_sge r = { (uintptr_t)p->bbuf + 3 * MIB, 64, p->bmr.lkey };
	struct rn_sge s = { (uintptr_t)p->abuf + 3 * MIB, 8, p->amr.lkey };
	struct rn_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };

	assert_int_equal(rn_rq_post(&qb->rq, &r, 1, wr_id), 0);
	rn_rq_ring_doorbell(&qb->rq);
	assert_int_equal(rn_sq_post(&qa->sq, &wr), 0);
	rn_sq_ring_doorbell(&qa->sq);
}

/* Wait for b's receive of the note; a's completions on the way are
 * kept (the WRITE's must not come, the note's may). */
static void
expect_note_first(struct pair *p, struct rn_qp *qb, uint64_t wr_id,
		  uint8_t *dst, uint32_t len)
{
	struct rn_wc wc;

	if (rn_harness_wait(p->ends, &p->b, &wc, 1, WAIT_MS) != 1)
		fail_msg("the note did not arrive");
	print_wc(&wc);
	assert_ptr_equal(wc.qp, qb);
	assert_int_equal(wc.opcode, RN_WC_RECV);
	assert_int_equal(wc.wr_id, wr_id);
	/* The data WRITE, posted before it on the held QP, has not landed. */
	for (uint32_t i = 0; i < len; i++)
		if (dst[i] != 0)
			fail_msg("byte %u of the WRITE landed before the "
				 "note", i);
}

/*
 * The ordering fault: one QP's request frames held back while another
 * QP's go. A WRITE on the held QP, then a SEND on the other: the SEND
 * arrives, the WRITE's bytes are not there and it has not completed.
 * Released, the WRITE lands and completes. Delayed by 50 ms instead, the
 * same order, and the WRITE lands no earlier than 50 ms after it was made.
 */
static void
test_hold_back_delays_one_qp_only(void **state)
{
	struct pair *p = *state;
	struct rn_qp qa, qb;
	struct rn_sim_qp_stats st;
	struct rn_wc wc[2];
	uint8_t *dst = p->bbuf + MIB;
	uint64_t posted;

	rng = rn_test_seed("test_hold_back_delays_one_qp_only", 1806) | 1;
	second_qps(p, &qa, &qb);
	random_bytes(p->abuf, 65536);

	assert_int_equal(rn_sim_qp_hold(&p->a.qp), 0);
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, 65536, p->amr.lkey,
		  (uintptr_t)dst, p->bmr.rkey, RN_WR_SIGNALED, 1);
	send_note(p, &qa, &qb, 2);
	expect_note_first(p, &qb, 2, dst, 65536);
	/* The note's SEND completes; held as long as we like, nothing
	 * moves on the data QP. */
	if (rn_harness_wait(p->ends, &p->a, wc, 1, WAIT_MS) != 1)
		fail_msg("the note's SEND did not complete");
	assert_ptr_equal(wc[0].qp, &qa);
	assert_int_equal(wc[0].wr_id, 2);
	expect_no_wc(p, &p->a, 50);
	rn_sim_qp_stats(&p->a.qp, &st);
	assert_int_equal(st.frames_held_now, 65536 / 4096);   /* its packets */
	assert_int_equal(dst[0] | dst[65535], 0);
	assert_int_equal(rn_sim_qp_release(&p->a.qp), 0);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 1);
	assert_memory_equal(dst, p->abuf, 65536);
	rn_sim_qp_stats(&p->a.qp, &st);
	assert_int_equal(st.frames_held, 65536 / 4096);
	assert_int_equal(st.frames_held_now, 0);

	/* Delayed by 50 ms. */
	memset(dst, 0, 65536);
	random_bytes(p->abuf, 65536);
	assert_int_equal(rn_sim_qp_delay(&p->a.qp, 50000), 0);
	posted = rn_harness_now_ms();
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, 65536, p->amr.lkey,
		  (uintptr_t)dst, p->bmr.rkey, RN_WR_SIGNALED, 3);
	send_note(p, &qa, &qb, 4);
	expect_note_first(p, &qb, 4, dst, 65536);
	if (rn_harness_wait(p->ends, &p->a, wc, 2, WAIT_MS) != 2)
		fail_msg("the WRITE and the note did not both complete");
	assert_ptr_equal(wc[0].qp, &qa);     /* the note's first */
	assert_int_equal(wc[1].wr_id, 3);
	assert_true(rn_harness_now_ms() - posted >= 50);
	assert_memory_equal(dst, p->abuf, 65536);
	assert_int_equal(rn_sim_qp_delay(&p->a.qp, 0), 0);

	/* Not held any more: the order is the posting order again. */
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, 16, p->amr.lkey,
		  (uintptr_t)dst, p->bmr.rkey, RN_WR_SIGNALED, 5);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 5);
	assert_int_equal(rn_nic_qp_destroy(p->a.nic, &qa), 0);
	assert_int_equal(rn_nic_qp_destroy(p->b.nic, &qb), 0);
}

/* A held QP that fails drops what it held: nothing it held arrives. */
static void
test_hold_back_dropped_on_error(void **state)
{
	struct pair *p = *state;
	struct rn_sim_qp_stats st;

	fill(p->abuf, 64, 9);
	assert_int_equal(rn_sim_qp_hold(&p->a.qp), 0);
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, 64, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey, RN_WR_SIGNALED, 1);
	expect_no_wc(p, &p->a, 20);
	assert_int_equal(rn_sim_qp_fail(p->a.nic, &p->a.qp), 0);
	expect_wc(p, &p->a, RN_WC_WRITE, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 1);
	rn_sim_qp_stats(&p->a.qp, &st);
	assert_int_equal(st.frames_held_now, 0);
	assert_int_equal(rn_sim_qp_release(&p->a.qp), 0);
	expect_no_wc(p, &p->b, 20);
	assert_int_equal(p->bbuf[0], 0);
}

/* Pairs with 16 MiB each: READs past the wire's window (SIM_WIRE_WINDOW,
 * 4 MiB), whose responses are made as it drains. */
#define BIG_SIZE (16 * MIB)
#define BIG_READS 12

static int
big_pair_setup(void **state)
{
	return pair_open(state, BIG_SIZE);
}

/*
 * Twelve 1 MiB READs: more response than the wire's window, so the
 * responder makes it as the wire drains, across turns, while b's own
 * WRITEs to a go between its packets on the same stream (four after each
 * READ that completes). a reads most response packets straight to their
 * place: every byte of both lands where it belongs. (A frame between the
 * packets a predicted: test_sim_wire.c, which writes the stream by hand.)
 */
static void
test_read_responses_interleaved(void **state)
{
	struct pair *p = *state;
	const uint32_t wlen = 4096, wat = 14 * MIB;
	struct rn_sim_stats sa, sb;
	unsigned int writes = 0;

	rng = rn_test_seed("test_read_responses_interleaved", 1810) | 1;
	random_bytes(p->bbuf, BIG_READS * MIB);
	random_bytes(p->bbuf + wat, 2 * MIB);
	rn_sim_stats(p->a.nic, &sa);
	for (uint32_t i = 0; i < BIG_READS; i++) {
		struct rn_sge sge = { (uintptr_t)p->abuf + i * MIB, MIB,
				      p->amr.lkey };

		assert_int_equal(rn_sq_post_rdma(&p->a.qp.sq, RN_WR_READ, &sge,
						 (uintptr_t)p->bbuf + i * MIB,
						 p->bmr.rkey, 0,
						 RN_WR_SIGNALED, i), 0);
	}
	rn_sq_ring_doorbell(&p->a.qp.sq);
	for (uint32_t i = 0; i < BIG_READS; i++) {
		struct rn_wc wc = expect_wc(p, &p->a, RN_WC_READ, 0, i);

		assert_int_equal(wc.byte_len, MIB);
		for (int k = 0; k < 4 && writes < 2 * MIB / wlen; k++, writes++)
			post_rdma(&p->b, RN_WR_WRITE,
				  p->bbuf + wat + writes * wlen, wlen,
				  p->bmr.lkey,
				  (uintptr_t)p->abuf + wat + writes * wlen,
				  p->amr.rkey, 0, 100 + writes);
	}
	post_rdma(&p->b, RN_WR_WRITE, p->bbuf + wat, 1, p->bmr.lkey,
		  (uintptr_t)p->abuf + wat, p->amr.rkey, RN_WR_SIGNALED, 99);
	expect_wc(p, &p->b, RN_WC_WRITE, 0, 99);
	assert_memory_equal(p->abuf, p->bbuf, BIG_READS * MIB);
	assert_memory_equal(p->abuf + wat, p->bbuf + wat, writes * wlen);
	rn_sim_stats(p->a.nic, &sb);
	print_message("# a: %lu payloads read to their place, %lu "
		      "predictions missed, %u WRITEs between\n",
		      (unsigned long)(sb.rx_placed - sa.rx_placed),
		      (unsigned long)(sb.rx_mispredicted - sa.rx_mispredicted),
		      writes);
	assert_true(sb.rx_placed - sa.rx_placed > BIG_READS * MIB / 4096 / 2);
}

/*
 * A region deregistered while READ responses from it are still owed, or
 * made and not yet taken by the socket: what was made arrives intact
 * (copied off the region as it went: the bytes are overwritten right
 * after), the first READ not yet made fails REMOTE_ACCESS, as one whose
 * rkey had gone before it came, and the ones after it are flushed.
 */
static void
test_region_deregistered_mid_response(void **state)
{
	struct pair *p = *state;
	const uint32_t reads = 8;
	struct rn_sim_stats sb;
	struct rn_sim_qp_stats qs;
	uint8_t *orig = malloc(reads * MIB);
	struct end *b_only[] = { &p->b, NULL };
	struct rn_mr src;
	uint32_t done = 0;
	uint64_t deadline;

	assert_non_null(orig);
	rng = rn_test_seed("test_region_deregistered_mid_response", 1811) | 1;
	random_bytes(p->bbuf, reads * MIB);
	memcpy(orig, p->bbuf, reads * MIB);
	assert_int_equal(rn_nic_mr_reg(p->b.nic, p->bbuf, reads * MIB,
				       all_access, &src), 0);
	rn_sim_stats(p->b.nic, &sb);
	{
		uint64_t before = sb.frames_received;

		for (uint32_t i = 0; i < reads; i++) {
			struct rn_sge sge = { (uintptr_t)p->abuf + i * MIB, MIB,
					      p->amr.lkey };

			assert_int_equal(rn_sq_post_rdma(&p->a.qp.sq,
							 RN_WR_READ, &sge,
							 (uintptr_t)p->bbuf +
								 i * MIB,
							 src.rkey, 0,
							 RN_WR_SIGNALED, i),
					 0);
		}
		rn_sq_ring_doorbell(&p->a.qp.sq);
		rn_nic_progress(p->a.nic);   /* the requests leave */
		deadline = rn_harness_now_ms() + WAIT_MS;
		while (sb.frames_received - before < reads) {
			if (rn_harness_now_ms() > deadline)
				fail_msg("b did not get the READs");
			rn_harness_progress(b_only);
			rn_sim_stats(p->b.nic, &sb);
		}
	}
	assert_int_equal(rn_nic_mr_dereg(p->b.nic, &src), 0);
	memset(p->bbuf, 0xee, reads * MIB);
	for (; done < reads; done++) {
		struct rn_wc wc;

		if (rn_harness_wait(p->ends, &p->a, &wc, 1, WAIT_MS) != 1)
			fail_msg("READ %u did not complete", done);
		print_wc(&wc);
		assert_int_equal(wc.wr_id, done);
		if (wc.status != 0) {
			assert_int_equal(wc.status,
					 MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
			break;
		}
		assert_memory_equal(p->abuf + done * MIB, orig + done * MIB,
				    MIB);
	}
	for (uint32_t i = done + 1; i < reads; i++)
		expect_wc(p, &p->a, RN_WC_READ, MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
			  i);
	rn_sim_stats(p->b.nic, &sb);
	rn_sim_qp_stats(&p->b.qp, &qs);
	print_message("# %u READs made before the region went, %lu bytes "
		      "copied off it\n", done, (unsigned long)sb.tx_unlent);
	/* (How much was still queued when the region went depends on how
	 * much the socket took: none at all would leave the copy off it
	 * untested, not wrong.) */
	assert_true(done >= 1 && done < reads);
	assert_int_equal(qs.reads_region_gone, 1);
	assert_int_equal(rn_sim_qp_state(&p->b.qp), RN_QP_ERR);
	free(orig);
}

/*
 * A wire whose socket is full sends nothing more until epoll says it has
 * room: 2 MiB of WRITEs toward a peer that does not read fill it, and
 * turns of the requester alone then make no system call to send (each
 * would copy its iovecs in to be told EAGAIN). Once the peer reads, the
 * WRITEs land byte exact.
 */
static void
test_full_socket_waits_for_room(void **state)
{
	struct pair *p = *state;
	struct end *only_a[] = { &p->a, NULL };
	struct rn_sim_stats full, later;
	uint64_t deadline;

	rng = rn_test_seed("test_full_socket_waits_for_room", 1809) | 1;
	random_bytes(p->abuf, 2 * MIB);
	memset(p->bbuf, 0, 2 * MIB);
	post_rdma(&p->a, RN_WR_WRITE, p->abuf, MIB, p->amr.lkey,
		  (uintptr_t)p->bbuf, p->bmr.rkey, 0, 1);
	post_rdma(&p->a, RN_WR_WRITE, p->abuf + MIB, MIB, p->amr.lkey,
		  (uintptr_t)p->bbuf + MIB, p->bmr.rkey, RN_WR_SIGNALED, 2);
	/* Until the socket is full (b's end is not even accepted: the
	 * kernel holds what it was sent). */
	deadline = rn_harness_now_ms() + WAIT_MS;
	do {
		rn_harness_progress(only_a);
		rn_sim_stats(p->a.nic, &full);
	} while (full.tx_full == 0 && rn_harness_now_ms() < deadline);
	assert_true(full.tx_full >= 1);
	for (int i = 0; i < 100; i++)
		rn_harness_progress(only_a);
	rn_sim_stats(p->a.nic, &later);
	print_message("# a: %lu sends until full, %lu in the 100 turns "
		      "after\n", (unsigned long)full.tx_calls,
		      (unsigned long)(later.tx_calls - full.tx_calls));
	assert_int_equal(later.tx_calls, full.tx_calls);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 2);
	assert_memory_equal(p->bbuf, p->abuf, 2 * MIB);
	rn_sim_stats(p->a.nic, &later);
	assert_true(later.tx_calls > full.tx_calls);
}

/*
 * A go-back-N resend keeps to the wire's window as new WQEs do: with 8
 * MiB of WRITEs posted toward a peer that does not read, the wire holds
 * a window's worth unsent, and the ACK timeouts that follow resend
 * nothing (all at once, they queued every WQE in flight again behind the
 * first copies). Once the peer reads, the WRITEs land byte exact.
 */
static void
test_resend_keeps_to_the_window(void **state)
{
	struct pair *p = *state;
	struct end *only_a[] = { &p->a, NULL };
	struct rn_sim_stats before, stalled;
	uint64_t until;

	rng = rn_test_seed("test_resend_keeps_to_the_window", 1810) | 1;
	reconnect_mtu(p, IBV_MTU_4096, 14);   /* 67 ms, 7 retries */
	random_bytes(p->abuf, 8 * MIB);
	memset(p->bbuf, 0, 8 * MIB);
	for (uint32_t i = 0; i < 8; i++)
		post_rdma(&p->a, RN_WR_WRITE, p->abuf + i * MIB, MIB,
			  p->amr.lkey, (uintptr_t)p->bbuf + i * MIB,
			  p->bmr.rkey, i == 7 ? RN_WR_SIGNALED : 0, i);
	rn_sim_stats(p->a.nic, &before);
	/* Two timeouts or more, with b silent. */
	until = rn_harness_now_ms() + 200;
	while (rn_harness_now_ms() < until)
		rn_harness_progress(only_a);
	rn_sim_stats(p->a.nic, &stalled);
	print_message("# a: %lu WQEs resent while its wire was full\n",
		      (unsigned long)(stalled.retransmits -
				      before.retransmits));
	assert_int_equal(stalled.retransmits, before.retransmits);
	assert_int_equal(rn_sim_qp_state(&p->a.qp), RN_QP_RTS);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 7);
	assert_memory_equal(p->bbuf, p->abuf, 8 * MIB);
}

#define PAIR_TEST(f) \
	cmocka_unit_test_setup_teardown(f, pair_setup, pair_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		PAIR_TEST(test_write_then_read_back),
		PAIR_TEST(test_gather_write_scatter_read),
		PAIR_TEST(test_bad_rkey_fails_and_flushes),
		PAIR_TEST(test_out_of_bounds),
		PAIR_TEST(test_missing_access),
		PAIR_TEST(test_bad_lkey),
		PAIR_TEST(test_message_over_the_frame_bound),
		PAIR_TEST(test_write_imm),
		PAIR_TEST(test_write_imm_waits_for_a_receive),
		PAIR_TEST(test_max_rd_atomic_one),
		PAIR_TEST(test_max_dest_rd_atomic_refuses_more),
		PAIR_TEST(test_fence_waits_for_reads),
		PAIR_TEST(test_packets_of_the_path_mtu),
		PAIR_TEST(test_resent_packets_land_once),
		PAIR_TEST(test_hold_back_delays_one_qp_only),
		PAIR_TEST(test_hold_back_dropped_on_error),
		PAIR_TEST(test_full_socket_waits_for_room),
		cmocka_unit_test_setup_teardown(test_resend_keeps_to_the_window,
						big_pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_read_responses_interleaved,
						big_pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(
			test_region_deregistered_mid_response, big_pair_setup,
			pair_teardown),
	};

	return cmocka_run_group_tests_name("sim_rdma", tests, NULL, NULL);
}
