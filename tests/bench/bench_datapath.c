/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data path microbenchmark, run under callgrind by scripts/bench-datapath.sh.
 * Two sim device contexts in this process (loopback wire). Each measured
 * operation is one noinline function around the data path's inline code,
 * so its inclusive instruction count is the data path's alone: the software
 * device runs in rn_nic_progress(), outside every bench_* function.
 * Prints how many times each bench_* function ran.
 */
#include <stdio.h>
#include <stdlib.h>

#include "nic_harness.h"

#define ITERATIONS 20000
#define BURST 16
#define NOINLINE __attribute__((noinline))

NOINLINE void
bench_post_inline_send(struct rn_sq *sq, const void *data)
{
	rn_sq_post_send_inline(sq, data, 64, RN_WR_SEND, 0, RN_WR_SIGNALED, 0);
	rn_sq_ring_doorbell(sq);
}

NOINLINE void
bench_post_gather_send(struct rn_sq *sq, const struct rn_wr *wr)
{
	rn_sq_post(sq, wr);
	rn_sq_ring_doorbell(sq);
}

/* One RDMA WRITE of one buffer (the transfer engine's chunk), posted
 * signalled and doorbelled on its own. */
NOINLINE void
bench_post_write(struct rn_sq *sq, const struct rn_sge *sge, uint64_t raddr,
		 uint32_t rkey)
{
	rn_sq_post_rdma(sq, RN_WR_WRITE, sge, raddr, rkey, 0, RN_WR_SIGNALED,
			0);
	rn_sq_ring_doorbell(sq);
}

/* BURST WRITEs as a batch goes out: the last one signalled, one
 * doorbell for all (per WQE: divided by BURST). */
NOINLINE void
bench_post_write_burst(struct rn_sq *sq, const struct rn_sge *sge,
		       uint64_t raddr, uint32_t rkey)
{
	for (int j = 0; j < BURST; j++)
		rn_sq_post_rdma(sq, RN_WR_WRITE, &sge[j],
				raddr + (uint64_t)sge[j].length * j, rkey, 0,
				j == BURST - 1 ? RN_WR_SIGNALED : 0,
				(uint64_t)j);
	rn_sq_ring_doorbell(sq);
}

/* The CQE of a WRITE polled, decoded and matched, one per call. */
NOINLINE unsigned int
bench_poll_write_cqe(struct rn_cq *cq, struct rn_wc *wc)
{
	return rn_cq_poll(cq, wc, 1);
}

/* One CQE polled, decoded and matched to its QP and work request. */
NOINLINE unsigned int
bench_poll_cqe(struct rn_cq *cq, struct rn_wc *wc)
{
	return rn_cq_poll(cq, wc, 1);
}

/* A burst of BURST CQEs in one call, as the lcore loop polls. */
NOINLINE unsigned int
bench_poll_burst(struct rn_cq *cq, struct rn_wc *wc)
{
	return rn_cq_poll(cq, wc, BURST);
}

NOINLINE void
bench_repost_recv(struct rn_rq *rq, const struct rn_sge *sge)
{
	rn_rq_post(rq, sge, 1, 0);
	rn_rq_ring_doorbell(rq);
}

static unsigned long polls;

/* Progress both devices until cq holds n CQEs. */
static void
await_cqes(struct end **ends, struct rn_cq *cq, uint32_t n)
{
	for (;;) {
		uint32_t index = cq->ci + n - 1;
		uint8_t op_own = rn_cq_cqe(cq, index)->op_own;

		if ((op_own >> 4) != MLX5_CQE_INVALID &&
		    (op_own & MLX5_CQE_OWNER_MASK) == !!(index & cq->cqe_cnt))
			return;
		rn_harness_progress(ends);
	}
}

static void
complete_one(struct end **ends, struct rn_cq *cq)
{
	struct rn_wc wc;

	await_cqes(ends, cq, 1);
	if (bench_poll_cqe(cq, &wc) != 1 || wc.status != 0) {
		fprintf(stderr, "bench: completion failed: status 0x%x\n",
			wc.status);
		exit(1);
	}
	polls++;
}

int
main(void)
{
	static uint8_t abuf[65536], bbuf[65536];
	struct end a, b;
	struct end *ends[3] = { &a, &b, NULL };
	struct rn_mr amr, bmr;
	struct rn_sge inline_sge = { (uintptr_t)abuf, 64, 0 };
	struct rn_sge gather[4];
	struct rn_sge recv;
	struct rn_wr inline_wr = { .sg_list = &inline_sge, .num_sge = 1,
				   .opcode = RN_WR_SEND,
				   .flags = RN_WR_SIGNALED | RN_WR_INLINE };
	struct rn_wr gather_wr = { .sg_list = gather, .num_sge = 4,
				   .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };

	if (rn_harness_open(&a, NULL, 256, NULL) != 0 ||
	    rn_harness_open(&b, NULL, 256, NULL) != 0 ||
	    rn_nic_mr_reg(a.nic, abuf, sizeof(abuf), RN_ACCESS_LOCAL_WRITE,
			  &amr) != 0 ||
	    rn_nic_mr_reg(b.nic, bbuf, sizeof(bbuf),
			  RN_ACCESS_LOCAL_WRITE | RN_ACCESS_REMOTE_WRITE,
			  &bmr) != 0) {
		fprintf(stderr, "bench: cannot open the sim devices\n");
		return 1;
	}
	rn_harness_pair(&a, &b);
	for (int i = 0; i < 4; i++)
		gather[i] = (struct rn_sge){ (uintptr_t)abuf + 1024u * i, 1024,
					     amr.lkey };
	recv = (struct rn_sge){ (uintptr_t)bbuf, sizeof(bbuf), bmr.lkey };

	for (int i = 0; i < ITERATIONS; i++) {
		bench_repost_recv(&b.qp.rq, &recv);
		bench_post_inline_send(&a.qp.sq, abuf);
		complete_one(ends, &b.cq);
		complete_one(ends, &a.cq);
	}
	for (int i = 0; i < ITERATIONS; i++) {
		bench_repost_recv(&b.qp.rq, &recv);
		bench_post_gather_send(&a.qp.sq, &gather_wr);
		complete_one(ends, &b.cq);
		complete_one(ends, &a.cq);
	}
	for (int i = 0; i < ITERATIONS / BURST; i++) {
		struct rn_wc wc[BURST];

		for (int j = 0; j < BURST; j++) {
			rn_rq_post(&b.qp.rq, &recv, 1, 0);
			rn_sq_post(&a.qp.sq, &inline_wr);
		}
		rn_rq_ring_doorbell(&b.qp.rq);
		rn_sq_ring_doorbell(&a.qp.sq);
		await_cqes(ends, &b.cq, BURST);
		if (bench_poll_burst(&b.cq, wc) != BURST) {
			fprintf(stderr, "bench: short burst\n");
			return 1;
		}
		await_cqes(ends, &a.cq, BURST);
		rn_cq_poll(&a.cq, wc, BURST);
	}
	for (int i = 0; i < ITERATIONS; i++) {
		struct rn_wc wc;

		bench_post_write(&a.qp.sq, &gather[0], (uintptr_t)bbuf,
				 bmr.rkey);
		await_cqes(ends, &a.cq, 1);
		if (bench_poll_write_cqe(&a.cq, &wc) != 1 || wc.status != 0 ||
		    wc.opcode != RN_WC_WRITE) {
			fprintf(stderr, "bench: WRITE failed: status 0x%x\n",
				wc.status);
			return 1;
		}
	}
	for (int i = 0; i < ITERATIONS / BURST; i++) {
		struct rn_sge chunks[BURST];
		struct rn_wc wc;

		for (int j = 0; j < BURST; j++)
			chunks[j] = (struct rn_sge){
				(uintptr_t)abuf + 4096u * j, 4096, amr.lkey };
		bench_post_write_burst(&a.qp.sq, chunks, (uintptr_t)bbuf,
				       bmr.rkey);
		await_cqes(ends, &a.cq, 1);
		if (rn_cq_poll(&a.cq, &wc, 1) != 1 || wc.status != 0 ||
		    wc.wr_id != BURST - 1) {
			fprintf(stderr, "bench: WRITE burst failed\n");
			return 1;
		}
	}
	printf("bench_post_inline_send %d\n", ITERATIONS);
	printf("bench_post_write %d\n", ITERATIONS);
	printf("bench_post_write_burst %d\n", ITERATIONS / BURST * BURST);
	printf("bench_poll_write_cqe %d\n", ITERATIONS);
	printf("bench_poll_burst %d\n", ITERATIONS / BURST * BURST);
	printf("bench_post_gather_send %d\n", ITERATIONS);
	printf("bench_poll_cqe %lu\n", polls);
	printf("bench_repost_recv %d\n", 2 * ITERATIONS);
	rn_harness_close(&a);
	rn_harness_close(&b);
	return 0;
}
