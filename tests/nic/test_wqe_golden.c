/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Golden vectors: the send WQEs the data path writes (rn_sq_post(),
 * rn_sq_post_rdma()) are byte-identical to rdma-core's encoding of the
 * same work request, on a large random sample of RC WRITE, WRITE_IMM,
 * READ, SEND and SEND_IMM requests: every flag, 0 to RN_WR_MAX_SGE data
 * segments (empty ones among them), inline data, any start in the ring
 * (WQEs wrap at its end, the 16-bit WQE index wraps too).
 *
 * rdma-core's post path needs a device, so the reference below encodes by
 * its rules (providers/mlx5/qp.c, _mlx5_post_send(), rdma-core v44 as
 * installed; read for the facts, nothing copied) with its own public
 * setters from <infiniband/mlx5dv.h>:
 *   - ctrl: mlx5dv_set_ctrl_seg() with opmod 0, the WQE index (16 bits),
 *     the QPN, signature 0 and ds; bytes 8..11 zeroed first (so the
 *     reserved dci_stream_channel_id is 0); fm_ce_se = FENCE (0x80) if
 *     asked | CQ_UPDATE if signalled | SOLICITED if asked (sq_sig_all 0);
 *     imm = the request's for SEND_IMM and WRITE_IMM, else 0;
 *   - WRITE, WRITE_IMM, READ: a raddr segment {raddr, rkey, reserved 0};
 *   - data: mlx5dv_set_data_seg() per non-empty entry, wrapping to the
 *     ring's start at its end; inline: the entries' bytes after a 4-byte
 *     byte count | MLX5_INLINE_SEG, wrapping too, ds rounded up to 16;
 *   - the producer moves by ceil(ds * 16 / 64) BBs.
 * Known difference, kept out of the sample: an inline request of 0 bytes.
 * rdma-core writes no inline segment for it (ds without one); rn_sq_post()
 * writes an empty one. The data path never posts one (a notification frame
 * has an 8-byte header).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rn_sq.h"
#include "rn_test_seed.h"

#define RING_BBS 16               /* the largest WQE takes 5 */
#define RING_BYTES (RING_BBS * 64)
#define QPN 0xabcde
#define MAX_INLINE 256
#define SAMPLES 200000

static uint8_t ring[RING_BYTES] __attribute__((aligned(64)));
static uint8_t golden[RING_BYTES] __attribute__((aligned(64)));
static uint8_t doorbell[2 * 256] __attribute__((aligned(64)));
static __be32 dbrec[2];
static uint64_t wr_ids[RING_BBS];
static uint32_t wqe_ends[RING_BBS];
static uint8_t inline_src[RN_WR_MAX_SGE * MAX_INLINE];

/* xorshift32: the sample replays from its seed alone. */
static uint32_t rng;

static uint32_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static uint64_t
next64(void)
{
	return (uint64_t)next() << 32 | next();
}

static struct rn_sq
fresh_sq(uint32_t pi)
{
	return (struct rn_sq){
		.buf = ring, .byte_mask = RING_BYTES - 1,
		.wqe_mask = RING_BBS - 1, .limit = RING_BBS,
		.pi = pi, .ci = pi, .qpn_shifted = QPN << 8,
		.max_inline = MAX_INLINE, .dbrec = &dbrec[MLX5_SND_DBR],
		.bf_reg = doorbell, .bf_size = 256,
		.wr_id = wr_ids, .wqe_end = wqe_ends,
	};
}

/* ---- the reference: rdma-core's rules, rdma-core's setters ---- */

static uint8_t *
ref_at(uint32_t off)
{
	return golden + (off % RING_BYTES);
}

static bool
has_raddr(uint8_t opcode)
{
	return opcode == MLX5_OPCODE_RDMA_WRITE ||
	       opcode == MLX5_OPCODE_RDMA_WRITE_IMM ||
	       opcode == MLX5_OPCODE_RDMA_READ;
}

/* Encode wr at producer pi into golden; returns the BBs it took. */
static uint32_t
ref_post(uint32_t pi, const struct rn_wr *wr)
{
	uint32_t off = (pi % RING_BBS) * 64;
	struct mlx5_wqe_ctrl_seg *ctrl = (void *)ref_at(off);
	uint32_t ds = 1, zero = 0;
	uint8_t fm_ce_se = 0;
	__be32 imm = 0;

	memcpy((uint8_t *)ctrl + 8, &zero, sizeof(zero));
	if (wr->flags & RN_WR_FENCE)
		fm_ce_se |= MLX5_WQE_CTRL_FENCE;
	if (wr->flags & RN_WR_SIGNALED)
		fm_ce_se |= MLX5_WQE_CTRL_CQ_UPDATE;
	if (wr->flags & RN_WR_SOLICITED)
		fm_ce_se |= MLX5_WQE_CTRL_SOLICITED;
	if (wr->opcode == MLX5_OPCODE_SEND_IMM ||
	    wr->opcode == MLX5_OPCODE_RDMA_WRITE_IMM)
		imm = wr->imm;
	if (has_raddr(wr->opcode)) {
		struct mlx5_wqe_raddr_seg *r = (void *)ref_at(off + 16);

		r->raddr = htobe64(wr->raddr);
		r->rkey = htobe32(wr->rkey);
		r->reserved = 0;
		ds++;
	}
	if ((wr->flags & RN_WR_INLINE) && wr->num_sge != 0) {
		struct mlx5_wqe_inl_data_seg *inl =
			(void *)ref_at(off + ds * 16);
		uint32_t at = off + ds * 16 + 4, total = 0;

		for (uint32_t i = 0; i < wr->num_sge; i++) {
			const uint8_t *src =
				(const void *)(uintptr_t)wr->sg_list[i].addr;

			for (uint32_t b = 0; b < wr->sg_list[i].length; b++)
				*ref_at(at++) = src[b];
			total += wr->sg_list[i].length;
		}
		inl->byte_count = htobe32(total | MLX5_INLINE_SEG);
		ds += (total + 4 + 15) / 16;
	} else {
		for (uint32_t i = 0; i < wr->num_sge; i++) {
			const struct rn_sge *sge = &wr->sg_list[i];

			if (sge->length == 0)
				continue;
			mlx5dv_set_data_seg((void *)ref_at(off + ds * 16),
					    sge->length, sge->lkey, sge->addr);
			ds++;
		}
	}
	mlx5dv_set_ctrl_seg(ctrl, (uint16_t)pi, wr->opcode, 0, QPN, fm_ce_se,
			    (uint8_t)ds, 0, imm);
	return (ds * 16 + 63) / 64;
}

/* ---- the sample ---- */

static const uint8_t opcodes[] = {
	RN_WR_WRITE, RN_WR_WRITE_IMM, RN_WR_READ, RN_WR_SEND, RN_WR_SEND_IMM,
};

/* A random request; inline for SEND and WRITE one time in four, of 1 to
 * MAX_INLINE bytes in all. */
static void
random_wr(struct rn_wr *wr, struct rn_sge *sge)
{
	uint8_t opcode = opcodes[next() % sizeof(opcodes)];
	bool inl = opcode != RN_WR_READ && next() % 4 == 0;
	uint32_t n = next() % (RN_WR_MAX_SGE + 1);
	uint32_t inline_left = 1 + next() % MAX_INLINE;

	if (inl && n == 0)
		n = 1;
	for (uint32_t i = 0; i < n; i++) {
		if (inl) {
			uint32_t len = i + 1 == n ? inline_left :
				       next() % (inline_left + 1);

			inline_left -= len;
			sge[i] = (struct rn_sge){
				(uintptr_t)(inline_src + i * MAX_INLINE), len,
				next() };
		} else {
			/* A sixth empty (left out), some near 2^32. */
			uint32_t len = next() % 6 == 0 ? 0 :
				       next() % 3 == 0 ? next() :
				       next() % 65537;

			sge[i] = (struct rn_sge){ next64(), len, next() };
		}
	}
	*wr = (struct rn_wr){
		.wr_id = next64(), .sg_list = sge, .num_sge = n,
		.opcode = opcode,
		.flags = (uint8_t)((next() & (RN_WR_SIGNALED | RN_WR_SOLICITED |
					      RN_WR_FENCE)) |
				   (inl ? RN_WR_INLINE : 0)),
		.imm = next(),             /* sent only for the _IMM opcodes */
		.raddr = next64(), .rkey = next(),
	};
}

static void
dump_mismatch(const struct rn_wr *wr, uint32_t pi, uint32_t sample)
{
	print_message("# sample %u: opcode 0x%x flags 0x%x num_sge %u pi %u\n",
		      sample, wr->opcode, wr->flags, wr->num_sge, pi);
	for (uint32_t i = 0; i < RING_BYTES; i++)
		if (ring[i] != golden[i])
			print_message("# byte %u (BB %u +%u): ours 0x%02x, "
				      "rdma-core 0x%02x\n", i, i / 64, i % 64,
				      ring[i], golden[i]);
}

/* One sample through rn_sq_post() and the reference, from a random start
 * in a ring of random bytes. */
static void
check_one(uint32_t sample, uint64_t *lean_checked)
{
	struct rn_sge sge[RN_WR_MAX_SGE];
	struct rn_wr wr;
	uint32_t pi = next() & 0xffff;   /* 16-bit index wraps, ring wraps */
	struct rn_sq sq = fresh_sq(pi);
	uint32_t nbb;

	for (uint32_t i = 0; i < RING_BYTES; i += 4) {
		uint32_t x = next();

		memcpy(ring + i, &x, 4);
	}
	memcpy(golden, ring, RING_BYTES);
	random_wr(&wr, sge);
	nbb = ref_post(pi, &wr);
	assert_int_equal(rn_sq_post(&sq, &wr), 0);
	if (memcmp(ring, golden, RING_BYTES) != 0) {
		dump_mismatch(&wr, pi, sample);
		fail_msg("sample %u differs from rdma-core's encoding", sample);
	}
	assert_int_equal(sq.pi, pi + nbb);
	assert_int_equal(wr_ids[pi % RING_BBS], wr.wr_id);
	assert_int_equal(wqe_ends[pi % RING_BBS], pi + nbb);
	assert_ptr_equal(sq.last_ctrl, ring + (pi % RING_BBS) * 64);

	/* The lean one-sided path: the same bytes for its case. */
	if (has_raddr(wr.opcode) && !(wr.flags & RN_WR_INLINE) &&
	    wr.num_sge == 1 && sge[0].length != 0) {
		memcpy(ring, golden, RING_BYTES);
		/* Scribble over the WQE's 3 units: the lean path must
		 * write them all. */
		memset(ring + (pi % RING_BBS) * 64, 0xa5, 48);
		sq = fresh_sq(pi);
		assert_int_equal(rn_sq_post_rdma(&sq, wr.opcode, &sge[0],
						 wr.raddr, wr.rkey, wr.imm,
						 wr.flags, wr.wr_id), 0);
		if (memcmp(ring, golden, RING_BYTES) != 0) {
			dump_mismatch(&wr, pi, sample);
			fail_msg("sample %u: rn_sq_post_rdma() differs",
				 sample);
		}
		assert_int_equal(sq.pi, pi + 1);
		assert_int_equal(wqe_ends[pi % RING_BBS], pi + 1);
		(*lean_checked)++;
	}
}

static void
test_random_wqes_match_rdma_core(void **state)
{
	uint64_t lean = 0;

	(void)state;
	rng = rn_test_seed("test_random_wqes_match_rdma_core", 18) | 1;
	for (uint32_t i = 0; i < sizeof(inline_src); i++)
		inline_src[i] = (uint8_t)next();
	for (uint32_t s = 0; s < SAMPLES; s++)
		check_one(s, &lean);
	print_message("# %u samples, %lu through rn_sq_post_rdma() too\n",
		      SAMPLES, (unsigned long)lean);
	assert_true(lean > SAMPLES / 100);
}

/* The transfer engine's WQEs, one of each, spelt out: what the sample
 * checks at random, in a form a reader can check against the spec. */
static void
test_rdma_wqe_fields(void **state)
{
	struct rn_sge sge = { 0x7f0011223344ull, 4096, 0x1234 };
	struct rn_sq sq = fresh_sq(0xfffe);
	const struct mlx5_wqe_ctrl_seg *c;
	const struct mlx5_wqe_raddr_seg *r;
	const struct mlx5_wqe_data_seg *d;

	(void)state;
	memset(ring, 0xee, sizeof(ring));
	assert_int_equal(rn_sq_post_rdma(&sq, RN_WR_WRITE_IMM, &sge,
					 0x10000000ull, 0xbeef, htobe32(77),
					 RN_WR_SIGNALED, 9), 0);
	assert_int_equal(rn_sq_post_rdma(&sq, RN_WR_READ, &sge, 0x20000000ull,
					 0xcafe, htobe32(78), RN_WR_FENCE, 10),
			 0);
	c = (const void *)(ring + 14 * 64);
	r = (const void *)(c + 1);
	d = (const void *)(r + 1);
	assert_int_equal(be32toh(c->opmod_idx_opcode),
			 0xfffe << 8 | MLX5_OPCODE_RDMA_WRITE_IMM);
	assert_int_equal(be32toh(c->qpn_ds), QPN << 8 | 3);
	assert_int_equal(c->fm_ce_se, MLX5_WQE_CTRL_CQ_UPDATE);
	assert_int_equal(c->signature, 0);
	assert_int_equal(c->dci_stream_channel_id, 0);
	assert_int_equal(be32toh(c->imm), 77);
	assert_int_equal(be64toh(r->raddr), 0x10000000ull);
	assert_int_equal(be32toh(r->rkey), 0xbeef);
	assert_int_equal(r->reserved, 0);
	assert_int_equal(be32toh(d->byte_count), 4096);
	assert_int_equal(be32toh(d->lkey), 0x1234);
	assert_int_equal(be64toh(d->addr), 0x7f0011223344ull);
	/* The READ: index 0xffff, fenced, no immediate although given. */
	c = (const void *)(ring + 15 * 64);
	assert_int_equal(be32toh(c->opmod_idx_opcode),
			 0xffff << 8 | MLX5_OPCODE_RDMA_READ);
	assert_int_equal(c->fm_ce_se, MLX5_WQE_CTRL_FENCE);
	assert_int_equal(c->imm, 0);
	assert_int_equal(sq.pi, 0x10000);
	/* Full ring: refused, nothing written. */
	sq.ci = sq.pi - RING_BBS;
	assert_int_equal(rn_sq_post_rdma(&sq, RN_WR_WRITE, &sge, 1, 2, 0, 0, 0),
			 -EAGAIN);
	assert_int_equal(sq.pi, 0x10000);
}

/* Selective signalling on the one-sided path: only requested WQEs ask
 * for a CQE, until more than half of the limit is unsignalled. */
static void
test_rdma_selective_signalling(void **state)
{
	struct rn_sge sge = { 0x1000, 64, 1 };
	struct rn_sq sq = fresh_sq(0);

	(void)state;
	for (uint32_t i = 0; i < RING_BBS / 2; i++) {
		uint8_t flags = i == 3 ? RN_WR_SIGNALED : 0;

		assert_int_equal(rn_sq_post_rdma(&sq, RN_WR_WRITE, &sge, 0x2000,
						 2, 0, flags, i), 0);
		assert_int_equal(((const struct mlx5_wqe_ctrl_seg *)
				  (ring + i * 64))->fm_ce_se,
				 i == 3 ? MLX5_WQE_CTRL_CQ_UPDATE : 0);
	}
	/* 4 unsignalled since WQE 3: the 9th BB over half forces one. */
	for (uint32_t i = RING_BBS / 2; i < RING_BBS / 2 + 5; i++)
		assert_int_equal(rn_sq_post_rdma(&sq, RN_WR_READ, &sge, 0x2000,
						 2, 0, 0, i), 0);
	assert_int_equal(((const struct mlx5_wqe_ctrl_seg *)
			  (ring + 12 * 64))->fm_ce_se, MLX5_WQE_CTRL_CQ_UPDATE);
	assert_int_equal(((const struct mlx5_wqe_ctrl_seg *)
			  (ring + 11 * 64))->fm_ce_se, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_wqes_match_rdma_core),
		cmocka_unit_test(test_rdma_wqe_fields),
		cmocka_unit_test(test_rdma_selective_signalling),
	};

	return cmocka_run_group_tests_name("wqe_golden", tests, NULL, NULL);
}
