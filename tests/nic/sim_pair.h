/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_TEST_SIM_PAIR_H
#define RN_TEST_SIM_PAIR_H

/*
 * cmocka fixtures of the sim tests (test_sim.c, test_sim_rdma.c): a pair
 * of connected ends in this process, each with a buffer registered for
 * every access, and waits for completions that print what they got.
 * Include after <cmocka.h>.
 */

#include <stdlib.h>

#include "nic_harness.h"

#define WAIT_MS 5000   /* a deadline for events, not a timing assertion */

struct pair {
	struct end a, b;
	struct end *ends[3];
	uint8_t *abuf, *bbuf;
	size_t buf_size;
	struct rn_mr amr, bmr;
};

static const uint32_t all_access = RN_ACCESS_ALL;

/* Two connected ends with buf_size bytes each, registered for all. */
static inline int
pair_open(void **state, size_t buf_size)
{
	struct pair *p = calloc(1, sizeof(*p));

	if (p == NULL || rn_harness_open(&p->a, NULL, 256, NULL) != 0 ||
	    rn_harness_open(&p->b, NULL, 256, NULL) != 0)
		return -1;
	p->buf_size = buf_size;
	p->abuf = calloc(1, buf_size);
	p->bbuf = calloc(1, buf_size);
	if (p->abuf == NULL || p->bbuf == NULL ||
	    rn_nic_mr_reg(p->a.nic, p->abuf, buf_size, all_access,
			  &p->amr) != 0 ||
	    rn_nic_mr_reg(p->b.nic, p->bbuf, buf_size, all_access,
			  &p->bmr) != 0)
		return -1;
	rn_harness_pair(&p->a, &p->b);
	p->ends[0] = &p->a;
	p->ends[1] = &p->b;
	*state = p;
	return 0;
}

static inline int
pair_teardown(void **state)
{
	struct pair *p = *state;

	rn_harness_close(&p->a);
	rn_harness_close(&p->b);
	free(p->abuf);
	free(p->bbuf);
	free(p);
	return 0;
}

static inline void
print_wc(const struct rn_wc *wc)
{
	print_message("# wc: wr_id %lu qpn 0x%x opcode %u status 0x%x len %u\n",
		      (unsigned long)wc->wr_id, wc->qp->qpn, wc->opcode,
		      wc->status, wc->byte_len);
}

/* Wait for one completion on e and check what matters. */
static inline struct rn_wc
expect_wc(struct pair *p, struct end *e, uint8_t opcode, uint8_t status,
	  uint64_t wr_id)
{
	struct rn_wc wc = { 0 };

	if (rn_harness_wait(p->ends, e, &wc, 1, WAIT_MS) != 1)
		fail_msg("no completion on qpn 0x%x (state %s)", e->qp.qpn,
			 rn_qp_state_name(rn_sim_qp_state(&e->qp)));
	print_wc(&wc);
	assert_int_equal(wc.status, status);
	assert_int_equal(wc.opcode, opcode);
	assert_int_equal(wc.wr_id, wr_id);
	assert_ptr_equal(wc.qp, &e->qp);
	return wc;
}

static inline void
expect_no_wc(struct pair *p, struct end *e, int ms)
{
	struct rn_wc wc;

	if (rn_harness_wait(p->ends, e, &wc, 1, ms) != 0) {
		print_wc(&wc);
		fail_msg("unexpected completion");
	}
}

static inline void
fill(uint8_t *buf, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 31 + (i >> 8));
}

/* xorshift32, for the tests' seeded choices (rn_test_seed()). */
static inline uint32_t
pair_next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static inline void
pair_random_bytes(uint32_t *x, uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(pair_next(x) >> 11);
}

/* Post one WQE with one data segment at local through the lean one-sided
 * path (rn_sq_post_rdma()) and ring the doorbell. */
static inline void
pair_post_rdma(struct end *e, uint8_t opcode, uint64_t local, uint32_t len,
	       uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t imm,
	       uint8_t flags, uint64_t wr_id)
{
	struct rn_sge sge = { local, len, lkey };

	assert_int_equal(rn_sq_post_rdma(&e->qp.sq, opcode, &sge, raddr, rkey,
					 imm, flags, wr_id), 0);
	rn_sq_ring_doorbell(&e->qp.sq);
}

/* Both QPs back to RESET, then connected again with ca (a's) and cb
 * (b's); the counters of the sim's QPs carry on. */
static inline void
pair_reconnect_with(struct pair *p, const struct rn_qp_connect *ca,
		    const struct rn_qp_connect *cb)
{
	assert_int_equal(rn_nic_qp_modify(p->a.nic, &p->a.qp, RN_QP_RESET,
					  NULL), 0);
	assert_int_equal(rn_nic_qp_modify(p->b.nic, &p->b.qp, RN_QP_RESET,
					  NULL), 0);
	assert_int_equal(rn_harness_connect(&p->a, ca), 0);
	assert_int_equal(rn_harness_connect(&p->b, cb), 0);
}

/* The harness's connection parameters of a and b (toward each other). */
static inline void
pair_params(const struct pair *p, struct rn_qp_connect *ca,
	    struct rn_qp_connect *cb)
{
	struct end_info ia = { .addr = p->a.addr, .qpn = p->a.qp.qpn };
	struct end_info ib = { .addr = p->b.addr, .qpn = p->b.qp.qpn };

	*ca = rn_harness_connect_params(&ib);
	*cb = rn_harness_connect_params(&ia);
}

/* Connected again with these READ limits and b's rights. */
static inline void
pair_reconnect(struct pair *p, uint8_t a_max_rd, uint8_t b_max_dest,
	       uint32_t b_access)
{
	struct rn_qp_connect ca, cb;

	pair_params(p, &ca, &cb);
	ca.max_rd_atomic = a_max_rd;
	cb.max_dest_rd_atomic = b_max_dest;
	cb.access = b_access;
	pair_reconnect_with(p, &ca, &cb);
}

#endif /* RN_TEST_SIM_PAIR_H */
