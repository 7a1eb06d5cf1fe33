/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registrations known by an iova other than their address
 * (rn_nic_mr_reg_iova(), as rnotifyd registers a client's memory): every
 * address a WQE's data segments or a peer's raddr name is an iova, and
 * the sim places and reads the bytes at the region's own address, on the
 * requester (gathers, READ responses scattered) and on the responder
 * (SEND receive buffers, WRITE, WRITE_IMM, READ); keys, rights and
 * bounds are checked against the iova range, so a raddr that is a valid
 * address of the region but not an iova of it fails. Two contexts, or
 * two regions of one, may use the same iovas. Each test picks its iovas
 * at random (seed printed, RNOTIFY_TEST_SEED replays), far from the
 * buffers' addresses.
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
#define READ_AT (2 * MIB)   /* where a's READs land in its buffer */

/* Both sides' buffers registered again, known by iovas of their own. */
struct iova_pair {
	struct pair *p;
	uint64_t a_iova, b_iova;
	struct rn_mr amr, bmr;
};

static uint32_t rng;

/* An iova that no buffer of this process is at: high in the 64-bit
 * space, any byte alignment. */
static uint64_t
random_iova(void)
{
	uint64_t hi = pair_next(&rng), lo = pair_next(&rng) & 0xffff;

	return (0xabcull << 48) | hi << 16 | lo;
}

static int
setup(void **state)
{
	return pair_open(state, BUF_SIZE);
}

/* Register both buffers again by random iovas (seeded under name). */
static void
reg_iovas(struct iova_pair *ip, void **state, const char *name,
	  unsigned int fixed)
{
	struct pair *p = *state;

	rng = rn_test_seed(name, fixed) | 1;
	ip->p = p;
	ip->a_iova = random_iova();
	do
		ip->b_iova = random_iova();
	while (ip->b_iova == ip->a_iova);
	print_message("# a: %p as 0x%llx, b: %p as 0x%llx\n", (void *)p->abuf,
		      (unsigned long long)ip->a_iova, (void *)p->bbuf,
		      (unsigned long long)ip->b_iova);
	assert_int_equal(rn_nic_mr_reg_iova(p->a.nic, p->abuf, BUF_SIZE,
					    ip->a_iova, all_access, &ip->amr),
			 0);
	assert_int_equal(rn_nic_mr_reg_iova(p->b.nic, p->bbuf, BUF_SIZE,
					    ip->b_iova, all_access, &ip->bmr),
			 0);
	/* The device and peers know them by iova. */
	assert_int_equal((uintptr_t)ip->amr.addr, ip->a_iova);
	assert_int_equal((uintptr_t)ip->bmr.addr, ip->b_iova);
	assert_int_equal(ip->amr.length, BUF_SIZE);
}

static void
dereg_iovas(struct iova_pair *ip)
{
	assert_int_equal(rn_nic_mr_dereg(ip->p->a.nic, &ip->amr), 0);
	assert_int_equal(rn_nic_mr_dereg(ip->p->b.nic, &ip->bmr), 0);
}

static void
post_recv(struct end *e, const struct rn_sge *sg, uint32_t n, uint64_t wr_id)
{
	assert_int_equal(rn_rq_post(&e->qp.rq, sg, n, wr_id), 0);
	rn_rq_ring_doorbell(&e->qp.rq);
}

/*
 * WRITE from a's iova to b's, then READ back to a's iova: one packet,
 * several, one segment (frames cut from the region where it lies) and a
 * gather of several; the bytes land at the buffers' addresses.
 */
static void
test_write_read_by_iova(void **state)
{
	static const uint32_t sizes[] = { 1, 4096, 100000, MIB };
	struct iova_pair ip;
	struct pair *p;
	struct rn_wc wc;

	reg_iovas(&ip, state, "test_write_read_by_iova", 1901);
	p = ip.p;
	for (unsigned int i = 0; i < RTE_DIM(sizes) + 8; i++) {
		uint32_t len = i < RTE_DIM(sizes) ? sizes[i] :
			       1 + pair_next(&rng) % 200000;
		uint32_t src = pair_next(&rng) % (READ_AT - len + 1);
		uint32_t dst = pair_next(&rng) % (BUF_SIZE - len + 1);

		print_message("# %u bytes from a+%u to b+%u\n", len, src, dst);
		pair_random_bytes(&rng, p->abuf + src, len);
		memset(p->abuf + READ_AT + src, 0, len);
		pair_post_rdma(&p->a, RN_WR_WRITE, ip.a_iova + src, len,
			       ip.amr.lkey, ip.b_iova + dst, ip.bmr.rkey, 0,
			       RN_WR_SIGNALED, 2 * i);
		expect_wc(p, &p->a, RN_WC_WRITE, 0, 2 * i);
		assert_memory_equal(p->bbuf + dst, p->abuf + src, len);
		pair_post_rdma(&p->a, RN_WR_READ, ip.a_iova + READ_AT + src,
			       len, ip.amr.lkey, ip.b_iova + dst, ip.bmr.rkey,
			       0, RN_WR_SIGNALED, 2 * i + 1);
		wc = expect_wc(p, &p->a, RN_WC_READ, 0, 2 * i + 1);
		assert_int_equal(wc.byte_len, len);
		assert_memory_equal(p->abuf + READ_AT + src, p->abuf + src,
				    len);
	}
	/* Several segments: gathered, and scattered, by iova. */
	{
		struct rn_sge g[3], s[3];
		struct rn_wr wr = { .num_sge = 3, .flags = RN_WR_SIGNALED,
				    .rkey = ip.bmr.rkey,
				    .raddr = ip.b_iova + 777 };
		uint32_t lens[3], at = 0;

		for (int k = 0; k < 3; k++) {
			lens[k] = 1 + pair_next(&rng) % 20000;
			g[k] = (struct rn_sge){ ip.a_iova + 50000 * k, lens[k],
						ip.amr.lkey };
			s[k] = (struct rn_sge){ ip.a_iova + READ_AT + 60000 * k,
						lens[k], ip.amr.lkey };
			pair_random_bytes(&rng, p->abuf + 50000 * k, lens[k]);
			memset(p->abuf + READ_AT + 60000 * k, 0, lens[k]);
		}
		wr.opcode = RN_WR_WRITE;
		wr.sg_list = g;
		wr.wr_id = 100;
		assert_int_equal(rn_harness_post(&p->a, &wr), 0);
		expect_wc(p, &p->a, RN_WC_WRITE, 0, 100);
		for (int k = 0; k < 3; k++) {
			assert_memory_equal(p->bbuf + 777 + at,
					    p->abuf + 50000 * k, lens[k]);
			at += lens[k];
		}
		wr.opcode = RN_WR_READ;
		wr.sg_list = s;
		wr.wr_id = 101;
		assert_int_equal(rn_harness_post(&p->a, &wr), 0);
		expect_wc(p, &p->a, RN_WC_READ, 0, 101);
		for (int k = 0; k < 3; k++)
			assert_memory_equal(p->abuf + READ_AT + 60000 * k,
					    p->abuf + 50000 * k, lens[k]);
	}
	dereg_iovas(&ip);
}

/*
 * SEND (one segment, and a gather) into a receive WQE of two segments
 * named by iova; WRITE_IMM by iova, its receive WQE's buffer untouched.
 */
static void
test_send_and_write_imm_by_iova(void **state)
{
	struct iova_pair ip;
	struct pair *p;
	struct rn_wc wc;
	uint32_t len, first;

	reg_iovas(&ip, state, "test_send_and_write_imm_by_iova", 1902);
	p = ip.p;
	/* A SEND of several packets over two receive segments. */
	len = 10000 + pair_next(&rng) % 50000;
	first = 1 + pair_next(&rng) % (len - 1);
	pair_random_bytes(&rng, p->abuf + 123, len);
	{
		struct rn_sge r[2] = {
			{ ip.b_iova + MIB, first, ip.bmr.lkey },
			{ ip.b_iova + 3 * MIB + 5, len - first, ip.bmr.lkey },
		};
		struct rn_sge g = { ip.a_iova + 123, len, ip.amr.lkey };
		struct rn_wr wr = { .opcode = RN_WR_SEND, .sg_list = &g,
				    .num_sge = 1, .flags = RN_WR_SIGNALED,
				    .wr_id = 1 };

		post_recv(&p->b, r, 2, 50);
		assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	}
	wc = expect_wc(p, &p->b, RN_WC_RECV, 0, 50);
	assert_int_equal(wc.byte_len, len);
	expect_wc(p, &p->a, RN_WC_SEND, 0, 1);
	assert_memory_equal(p->bbuf + MIB, p->abuf + 123, first);
	assert_memory_equal(p->bbuf + 3 * MIB + 5, p->abuf + 123 + first,
			    len - first);

	/* A gathered SEND (copied through the scratch buffer). */
	{
		struct rn_sge r = { ip.b_iova + 2 * MIB, 300, ip.bmr.lkey };
		struct rn_sge g[2] = { { ip.a_iova + 7, 100, ip.amr.lkey },
				       { ip.a_iova + MIB, 200, ip.amr.lkey } };
		struct rn_wr wr = { .opcode = RN_WR_SEND, .sg_list = g,
				    .num_sge = 2, .flags = RN_WR_SIGNALED,
				    .wr_id = 2 };

		pair_random_bytes(&rng, p->abuf + 7, 100);
		pair_random_bytes(&rng, p->abuf + MIB, 200);
		post_recv(&p->b, &r, 1, 51);
		assert_int_equal(rn_harness_post(&p->a, &wr), 0);
		expect_wc(p, &p->b, RN_WC_RECV, 0, 51);
		expect_wc(p, &p->a, RN_WC_SEND, 0, 2);
		assert_memory_equal(p->bbuf + 2 * MIB, p->abuf + 7, 100);
		assert_memory_equal(p->bbuf + 2 * MIB + 100, p->abuf + MIB,
				    200);
	}

	/* WRITE_IMM: placed at b_iova + dst, the receive buffer untouched. */
	len = 1 + pair_next(&rng) % 30000;
	pair_random_bytes(&rng, p->abuf, len);
	memset(p->bbuf + 3 * MIB, 0x5c, 16);
	{
		struct rn_sge r = { ip.b_iova + 3 * MIB, 16, ip.bmr.lkey };

		post_recv(&p->b, &r, 1, 52);
	}
	pair_post_rdma(&p->a, RN_WR_WRITE_IMM, ip.a_iova, len, ip.amr.lkey,
		       ip.b_iova + 4242, ip.bmr.rkey, htobe32(0xbeef),
		       RN_WR_SIGNALED, 3);
	wc = expect_wc(p, &p->b, RN_WC_RECV_WRITE_IMM, 0, 52);
	assert_int_equal(wc.imm, htobe32(0xbeef));
	assert_int_equal(wc.byte_len, len);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 3);
	assert_memory_equal(p->bbuf + 4242, p->abuf, len);
	for (int i = 0; i < 16; i++)
		assert_int_equal(p->bbuf[3 * MIB + i], 0x5c);
	dereg_iovas(&ip);
}

/*
 * Checked by iova: a raddr that is the region's own address (valid as
 * an address, not as an iova) fails REMOTE_ACCESS, and nothing is
 * written; so does one byte past the iova range; the exact range works.
 * A local segment named by address, not iova, fails LOCAL_PROT.
 */
static void
test_checked_by_iova(void **state)
{
	struct iova_pair ip;
	struct pair *p;
	struct rn_mr small;
	uint8_t *base;
	uint64_t small_iova;
	struct rn_wc wc;

	reg_iovas(&ip, state, "test_checked_by_iova", 1903);
	p = ip.p;
	base = p->bbuf + MIB;
	small_iova = random_iova();
	/* Only read and write from afar: a bound and rights of its own. */
	assert_int_equal(rn_nic_mr_reg_iova(p->b.nic, base, 4096, small_iova,
					    all_access, &small), 0);
	const struct {
		uint8_t opcode;
		uint64_t raddr;
		uint32_t len;
		uint8_t status;
	} cases[] = {
		{ RN_WR_WRITE, small_iova, 4096, 0 },
		{ RN_WR_READ, small_iova, 4096, 0 },
		{ RN_WR_WRITE, (uintptr_t)base, 64,
		  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR },
		{ RN_WR_READ, (uintptr_t)base, 64,
		  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR },
		{ RN_WR_WRITE, small_iova + 1, 4096,
		  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR },
		{ RN_WR_READ, small_iova - 1, 2,
		  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR },
	};

	for (unsigned int i = 0; i < RTE_DIM(cases); i++) {
		uint64_t local = ip.a_iova +
				 (cases[i].opcode == RN_WR_READ ? READ_AT : 0);

		print_message("# case %u: opcode 0x%x at iova %+lld, "
			      "%u bytes\n",
			      i, cases[i].opcode,
			      (long long)(cases[i].raddr - small_iova),
			      cases[i].len);
		fill(p->abuf, 4096, (uint8_t)i);
		memset(base, 0, 4096);
		pair_post_rdma(&p->a, cases[i].opcode, local, cases[i].len,
			       ip.amr.lkey, cases[i].raddr, small.rkey, 0,
			       RN_WR_SIGNALED, i);
		wc = expect_wc(p, &p->a, cases[i].opcode == RN_WR_READ ?
				   RN_WC_READ : RN_WC_WRITE,
			       cases[i].status, i);
		if (cases[i].status == 0) {
			if (cases[i].opcode == RN_WR_WRITE)
				assert_memory_equal(base, p->abuf, 4096);
			continue;
		}
		assert_int_equal(rn_wc_status_ibv(wc.status),
				 IBV_WC_REM_ACCESS_ERR);
		for (int k = 0; k < 4096; k++)
			assert_int_equal(base[k], 0);
		assert_int_equal(rn_sim_qp_state(&p->b.qp), RN_QP_ERR);
		pair_reconnect(p, 0, 0, all_access);
	}
	/* Local segments by address rather than iova: LOCAL_PROT. */
	for (int i = 0; i < 2; i++) {
		uint8_t opcode = i == 0 ? RN_WR_WRITE : RN_WR_READ;

		pair_post_rdma(&p->a, opcode, (uintptr_t)p->abuf + READ_AT, 64,
			       ip.amr.lkey, small_iova, small.rkey, 0,
			       RN_WR_SIGNALED, 10 + i);
		wc = expect_wc(p, &p->a, i == 0 ? RN_WC_WRITE : RN_WC_READ,
			       MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, 10 + i);
		assert_int_equal(rn_wc_status_ibv(wc.status),
				 IBV_WC_LOC_PROT_ERR);
		pair_reconnect(p, 0, 0, all_access);
	}
	/* A receive segment by address: the SEND fails at the responder
	 * (LOCAL_PROT there, REMOTE_OP for the requester). */
	{
		struct rn_sge r = { (uintptr_t)base, 64, small.lkey };
		struct rn_sge g = { ip.a_iova, 64, ip.amr.lkey };
		struct rn_wr wr = { .opcode = RN_WR_SEND, .sg_list = &g,
				    .num_sge = 1, .flags = RN_WR_SIGNALED,
				    .wr_id = 20 };

		memset(base, 0, 64);
		post_recv(&p->b, &r, 1, 60);
		assert_int_equal(rn_harness_post(&p->a, &wr), 0);
		expect_wc(p, &p->b, RN_WC_RECV,
			  MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, 60);
		expect_wc(p, &p->a, RN_WC_SEND,
			  MLX5_CQE_SYNDROME_REMOTE_OP_ERR, 20);
		for (int k = 0; k < 64; k++)
			assert_int_equal(base[k], 0);
	}
	assert_int_equal(rn_nic_mr_dereg(p->b.nic, &small), 0);
	dereg_iovas(&ip);
}

/*
 * The same iova in two contexts at different addresses (two clients of
 * one daemon), and twice in one context: the key decides where the
 * bytes are. a WRITEs from X (its abuf) to X of b's first region, then
 * of its second; a READs b's second region's X back into a's second X.
 */
static void
test_same_iova_different_memory(void **state)
{
	struct pair *p = *state;
	struct rn_mr a1, a2, b1, b2;
	uint64_t x;
	uint32_t len;

	rng = rn_test_seed("test_same_iova_different_memory", 1904) | 1;
	x = random_iova();
	len = 1 + pair_next(&rng) % (MIB - 1);
	print_message("# iova 0x%llx, %u bytes\n", (unsigned long long)x, len);
	assert_int_equal(rn_nic_mr_reg_iova(p->a.nic, p->abuf, MIB, x,
					    all_access, &a1), 0);
	assert_int_equal(rn_nic_mr_reg_iova(p->a.nic, p->abuf + 2 * MIB, MIB,
					    x, all_access, &a2), 0);
	assert_int_equal(rn_nic_mr_reg_iova(p->b.nic, p->bbuf, MIB, x,
					    all_access, &b1), 0);
	assert_int_equal(rn_nic_mr_reg_iova(p->b.nic, p->bbuf + 2 * MIB, MIB,
					    x, all_access, &b2), 0);
	pair_random_bytes(&rng, p->abuf, len);
	pair_post_rdma(&p->a, RN_WR_WRITE, x, len, a1.lkey, x, b1.rkey, 0,
		       RN_WR_SIGNALED, 1);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 1);
	assert_memory_equal(p->bbuf, p->abuf, len);
	for (uint32_t k = 0; k < len; k++)
		assert_int_equal(p->bbuf[2 * MIB + k], 0);
	pair_random_bytes(&rng, p->abuf, len);
	pair_post_rdma(&p->a, RN_WR_WRITE, x, len, a1.lkey, x, b2.rkey, 0,
		       RN_WR_SIGNALED, 2);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 2);
	assert_memory_equal(p->bbuf + 2 * MIB, p->abuf, len);
	assert_memory_not_equal(p->bbuf, p->abuf, len);
	pair_post_rdma(&p->a, RN_WR_READ, x, len, a2.lkey, x, b2.rkey, 0,
		       RN_WR_SIGNALED, 3);
	expect_wc(p, &p->a, RN_WC_READ, 0, 3);
	assert_memory_equal(p->abuf + 2 * MIB, p->abuf, len);
	assert_int_equal(rn_nic_mr_dereg(p->a.nic, &a1), 0);
	assert_int_equal(rn_nic_mr_dereg(p->a.nic, &a2), 0);
	assert_int_equal(rn_nic_mr_dereg(p->b.nic, &b1), 0);
	assert_int_equal(rn_nic_mr_dereg(p->b.nic, &b2), 0);
}

/* What registration refuses, and rn_nic_mr_reg() as iova = addr. */
static void
test_registration(void **state)
{
	struct pair *p = *state;
	struct rn_mr mr;

	assert_int_equal(rn_nic_mr_reg_iova(p->a.nic, p->abuf, 0, 0x1000,
					    all_access, &mr), -EINVAL);
	assert_int_equal(rn_nic_mr_reg_iova(p->a.nic, p->abuf, 4096, 0x1000,
					    RN_ACCESS_REMOTE_WRITE, &mr),
			 -EINVAL);
	/* An iova range past the end of the 64-bit space. */
	assert_int_equal(rn_nic_mr_reg_iova(p->a.nic, p->abuf, 4096,
					    UINT64_MAX - 100, all_access, &mr),
			 -EINVAL);
	assert_int_equal(rn_nic_mr_reg(p->a.nic, p->abuf, 4096, all_access,
				       &mr), 0);
	assert_ptr_equal(mr.addr, p->abuf);
	assert_int_equal(rn_nic_mr_dereg(p->a.nic, &mr), 0);
	/* iova 0 is an iova like any other. */
	assert_int_equal(rn_nic_mr_reg_iova(p->b.nic, p->bbuf + 64, 4096, 0,
					    all_access, &mr), 0);
	assert_null(mr.addr);
	fill(p->abuf, 100, 3);
	pair_post_rdma(&p->a, RN_WR_WRITE, (uintptr_t)p->abuf, 100,
		       p->amr.lkey, 10, mr.rkey, 0, RN_WR_SIGNALED, 1);
	expect_wc(p, &p->a, RN_WC_WRITE, 0, 1);
	assert_memory_equal(p->bbuf + 74, p->abuf, 100);
	assert_int_equal(rn_nic_mr_dereg(p->b.nic, &mr), 0);
}

#define PAIR_TEST(f) cmocka_unit_test_setup_teardown(f, setup, pair_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		PAIR_TEST(test_write_read_by_iova),
		PAIR_TEST(test_send_and_write_imm_by_iova),
		PAIR_TEST(test_checked_by_iova),
		PAIR_TEST(test_same_iova_different_memory),
		PAIR_TEST(test_registration),
	};

	return cmocka_run_group_tests_name("sim_iova", tests, NULL, NULL);
}
