/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path against the mlx5 format, byte by byte: WQEs posted into a
 * ring laid out as the device lays it out, checked field by field with the
 * structs of <infiniband/mlx5dv.h>; CQEs written as the device writes them,
 * polled back. No device: the rings are the provider boundary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rn_cq.h"
#include "rn_nic.h"
#include "rn_rq.h"
#include "rn_sq.h"

#define RING_BBS 8
#define QPN 0x123

static uint8_t ring[RING_BBS * 64] __attribute__((aligned(64)));
static uint8_t doorbell[2 * 256] __attribute__((aligned(64)));
static __be32 dbrec[2];
static uint64_t wr_ids[RING_BBS];
static uint32_t wqe_ends[RING_BBS];
static struct rn_sq sq;

static int
setup_sq(void **state)
{
	(void)state;
	memset(ring, 0xee, sizeof(ring));
	memset(doorbell, 0, sizeof(doorbell));
	dbrec[0] = dbrec[1] = 0;
	sq = (struct rn_sq){
		.buf = ring, .byte_mask = sizeof(ring) - 1,
		.wqe_mask = RING_BBS - 1, .limit = RING_BBS,
		.qpn_shifted = QPN << 8,
		.max_inline = 256, .dbrec = &dbrec[MLX5_SND_DBR],
		.bf_reg = doorbell, .bf_size = 256,
		.wr_id = wr_ids, .wqe_end = wqe_ends,
	};
	return 0;
}

static const struct mlx5_wqe_ctrl_seg *
ctrl_at(uint32_t bb)
{
	return (const void *)(ring + (bb % RING_BBS) * 64);
}

static void
check_ctrl(uint32_t bb, uint8_t opcode, uint32_t ds, uint8_t fm_ce_se,
	   __be32 imm)
{
	const struct mlx5_wqe_ctrl_seg *c = ctrl_at(bb);

	assert_int_equal(be32toh(c->opmod_idx_opcode),
			 ((bb & 0xffff) << 8) | opcode);
	assert_int_equal(be32toh(c->qpn_ds), (QPN << 8) | ds);
	assert_int_equal(c->fm_ce_se, fm_ce_se);
	assert_int_equal(c->signature, 0);
	/* Reserved: the ring holds 0xee bytes before each test. */
	assert_int_equal(c->dci_stream_channel_id, 0);
	assert_int_equal(c->imm, imm);
}

static void
check_data_seg(const void *p, uint32_t len, uint32_t lkey, uint64_t addr)
{
	const struct mlx5_wqe_data_seg *d = p;

	assert_int_equal(be32toh(d->byte_count), len);
	assert_int_equal(be32toh(d->lkey), lkey);
	assert_int_equal(be64toh(d->addr), addr);
}

static void
test_send_gather(void **state)
{
	struct rn_sge sge[2] = { { 0x1000, 100, 7 }, { 0x2000, 4096, 8 } };
	struct rn_wr wr = { .wr_id = 42, .sg_list = sge, .num_sge = 2,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };

	(void)state;
	assert_int_equal(rn_sq_post(&sq, &wr), 0);
	check_ctrl(0, MLX5_OPCODE_SEND, 3, MLX5_WQE_CTRL_CQ_UPDATE, 0);
	check_data_seg(ring + 16, 100, 7, 0x1000);
	check_data_seg(ring + 32, 4096, 8, 0x2000);
	assert_int_equal(sq.pi, 1);
	assert_int_equal(wr_ids[0], 42);
	assert_int_equal(wqe_ends[0], 1);
	/* Not visible until the doorbell. */
	assert_int_equal(dbrec[MLX5_SND_DBR], 0);
	rn_sq_ring_doorbell(&sq);
	assert_int_equal(be32toh(dbrec[MLX5_SND_DBR]), 1);
	assert_memory_equal(doorbell, ring, 8);
	assert_int_equal(sq.bf_offset, 256);
}

static void
test_send_imm_inline(void **state)
{
	uint8_t payload[64];
	struct rn_sge sge = { (uintptr_t)payload, sizeof(payload), 0 };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND_IMM, .imm = htobe32(0xabcd),
			    .flags = RN_WR_INLINE | RN_WR_SOLICITED };
	const struct mlx5_wqe_inl_data_seg *inl = (const void *)(ring + 16);

	(void)state;
	for (unsigned int i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	assert_int_equal(rn_sq_post(&sq, &wr), 0);
	/* ctrl + 4-byte header + 64 bytes, padded: 1 + 5 = 6 DS, 2 BBs. */
	check_ctrl(0, MLX5_OPCODE_SEND_IMM, 6, MLX5_WQE_CTRL_SOLICITED,
		   htobe32(0xabcd));
	assert_int_equal(be32toh(inl->byte_count), 64 | MLX5_INLINE_SEG);
	assert_memory_equal(ring + 20, payload, 64);
	assert_int_equal(sq.pi, 2);
}

static void
test_write_and_write_imm(void **state)
{
	struct rn_sge sge = { 0x3000, 512, 9 };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_WRITE, .raddr = 0x123456789abcull,
			    .rkey = 0x55 };
	const struct mlx5_wqe_raddr_seg *r = (const void *)(ring + 16);

	(void)state;
	assert_int_equal(rn_sq_post(&sq, &wr), 0);
	check_ctrl(0, MLX5_OPCODE_RDMA_WRITE, 3, 0, 0);
	assert_int_equal(be64toh(r->raddr), 0x123456789abcull);
	assert_int_equal(be32toh(r->rkey), 0x55);
	assert_int_equal(r->reserved, 0);
	check_data_seg(ring + 32, 512, 9, 0x3000);

	wr.opcode = RN_WR_WRITE_IMM;
	wr.imm = htobe32(7);
	assert_int_equal(rn_sq_post(&sq, &wr), 0);
	check_ctrl(1, MLX5_OPCODE_RDMA_WRITE_IMM, 3, 0, htobe32(7));
}

static void
test_read(void **state)
{
	struct rn_sge sge = { 0x4000, 65536, 10 };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_READ,
			    .raddr = 0x8000, .rkey = 0x66,
			    .flags = RN_WR_SIGNALED | RN_WR_FENCE };

	(void)state;
	assert_int_equal(rn_sq_post(&sq, &wr), 0);
	check_ctrl(0, MLX5_OPCODE_RDMA_READ, 3,
		   MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_FENCE, 0);
	check_data_seg(ring + 32, 65536, 10, 0x4000);
	/* READ data is never inline. */
	wr.flags |= RN_WR_INLINE;
	assert_int_equal(rn_sq_post(&sq, &wr), -EINVAL);
	assert_int_equal(sq.pi, 1);
}

/* An inline WQE starting two BBs before the end wraps mid-data. */
static void
test_inline_wraps_at_ring_end(void **state)
{
	uint8_t payload[200];
	uint8_t got[200];
	struct rn_sge sge = { (uintptr_t)payload, sizeof(payload), 0 };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_SEND,
			    .flags = RN_WR_INLINE | RN_WR_SIGNALED };
	uint32_t first = 128 - 20;   /* bytes of data before the end */

	(void)state;
	for (unsigned int i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(255 - i);
	sq.pi = sq.ci = 6;
	assert_int_equal(rn_sq_post(&sq, &wr), 0);
	/* 1 + ceil(204 / 16) = 14 DS = 4 BBs: 6, 7, then 0, 1. */
	check_ctrl(6, MLX5_OPCODE_SEND, 14, MLX5_WQE_CTRL_CQ_UPDATE, 0);
	assert_int_equal(sq.pi, 10);
	assert_int_equal(wqe_ends[6], 10);
	memcpy(got, ring + 6 * 64 + 20, first);
	memcpy(got + first, ring, sizeof(got) - first);
	assert_memory_equal(got, payload, sizeof(payload));
}

/* A gather list that starts before the end continues at the start. */
static void
test_data_segments_wrap(void **state)
{
	struct rn_sge sge[6];
	struct rn_wr wr = { .sg_list = sge, .num_sge = 6, .opcode = RN_WR_WRITE,
			    .raddr = 1, .rkey = 2 };

	(void)state;
	for (int i = 0; i < 6; i++)
		sge[i] = (struct rn_sge){ 0x1000u * (i + 1), 10u + i, 20u + i };
	sq.pi = sq.ci = 7;
	assert_int_equal(rn_sq_post(&sq, &wr), 0);
	check_ctrl(7, MLX5_OPCODE_RDMA_WRITE, 8, 0, 0);
	check_data_seg(ring + 7 * 64 + 32, 10, 20, 0x1000);
	check_data_seg(ring + 7 * 64 + 48, 11, 21, 0x2000);
	check_data_seg(ring + 0, 12, 22, 0x3000);
	check_data_seg(ring + 48, 15, 25, 0x6000);
	assert_int_equal(sq.pi, 9);
}

/* On an empty ring from BB start: 150 bytes inline as SEND_IMM 9, wr_id 3. */
static void
fresh_inline_send(void **state, uint32_t start, const uint8_t *payload)
{
	setup_sq(state);
	sq.pi = sq.ci = start;
	assert_int_equal(rn_sq_post_send_inline(&sq, payload, 150,
						RN_WR_SEND_IMM, htobe32(9),
						RN_WR_SIGNALED, 3), 0);
}

/* The lean inline SEND writes exactly what the general path writes. */
static void
test_send_inline_fast_path_matches(void **state)
{
	uint8_t payload[300];
	uint8_t general[sizeof(ring)];
	struct rn_sge sge = { (uintptr_t)payload, 150, 0 };
	struct rn_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND_IMM, .imm = htobe32(9),
			    .flags = RN_WR_INLINE | RN_WR_SIGNALED };

	for (unsigned int i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i ^ 0x5a);
	/* At BB 7 of 8 the WQE (3 BBs) wraps inside the data. */
	for (uint32_t start = 0; start < RING_BBS; start += 7) {
		setup_sq(state);
		sq.pi = sq.ci = start;
		assert_int_equal(rn_sq_post(&sq, &wr), 0);
		memcpy(general, ring, sizeof(ring));
		fresh_inline_send(state, start, payload);
		assert_memory_equal(ring, general, sizeof(ring));
		assert_int_equal(sq.pi, start + 3);
		assert_int_equal(wr_ids[start % RING_BBS], 3);
	}
	assert_int_equal(rn_sq_post_send_inline(&sq, payload, 257, RN_WR_SEND,
						0, 0, 0), -EINVAL);
}

/* At every length up to max_inline, from a buffer and in place: the same
 * WQE, units and BBs as the general path (an empty one included). */
static void
test_send_inline_every_length_matches(void **state)
{
	uint8_t payload[256];
	uint8_t general[sizeof(ring)];
	struct rn_sge sge = { (uintptr_t)payload, 0, 0 };
	struct rn_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_INLINE };
	struct rn_sq_place at = { 0 };

	for (unsigned int i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 3 + 1);
	for (uint32_t len = 0; len <= sizeof(payload); len++) {
		sge.length = len;
		setup_sq(state);
		assert_int_equal(rn_sq_post(&sq, &wr), 0);
		memcpy(general, ring, sizeof(ring));
		assert_int_equal(sq.pi, rn_sq_send_inline_bbs(len));

		setup_sq(state);
		assert_int_equal(rn_sq_post_send_inline(&sq, payload, len,
							RN_WR_SEND, 0, 0, 3),
				 0);
		assert_memory_equal(ring, general, sizeof(ring));
		assert_int_equal(sq.pi, rn_sq_send_inline_bbs(len));

		setup_sq(state);
		assert_true(rn_sq_send_inline_place(&sq, len, &at));
		memcpy(at.data, payload, len);
		rn_sq_post_send_inline_placed(&sq, &at, len, RN_WR_SEND, 0, 0,
					      3);
		assert_memory_equal(ring, general, sizeof(ring));
		assert_int_equal(sq.pi, rn_sq_send_inline_bbs(len));
		assert_int_equal(wqe_ends[0], sq.pi);
	}
}

/* One buffer by a data segment: what the general path writes. */
static void
test_send_sge_matches(void **state)
{
	uint8_t general[sizeof(ring)];
	struct rn_sge sge = { 0x123456789a, 4000, 0x77 };
	struct rn_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND_IMM, .imm = htobe32(11) };

	for (uint8_t flags = 0; flags <= RN_WR_SIGNALED; flags++) {
		for (uint32_t start = 0; start < RING_BBS; start += 7) {
			setup_sq(state);
			sq.pi = sq.ci = start;
			wr.flags = flags;
			assert_int_equal(rn_sq_post(&sq, &wr), 0);
			memcpy(general, ring, sizeof(ring));
			setup_sq(state);
			sq.pi = sq.ci = start;
			assert_int_equal(rn_sq_post_send_sge(&sq, &sge,
							     RN_WR_SEND_IMM,
							     htobe32(11), flags,
							     5), 0);
			assert_memory_equal(ring, general, sizeof(ring));
			assert_int_equal(sq.pi, start + 1);
			assert_int_equal(wqe_ends[start % RING_BBS], start + 1);
			assert_int_equal(wr_ids[start % RING_BBS], 5);
		}
	}
	sq.pi = sq.ci + RING_BBS;
	assert_int_equal(rn_sq_post_send_sge(&sq, &sge, RN_WR_SEND, 0, 0, 0),
			 -EAGAIN);
}

/* A credit word WRITTEN inline: what the general path writes. */
static void
test_write_word_matches(void **state)
{
	uint8_t general[sizeof(ring)];
	uint32_t word = 0xa1b2c3d4;
	struct rn_sge sge = { (uintptr_t)&word, sizeof(word), 0 };
	struct rn_wr wr = { .wr_id = 6, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_WRITE, .raddr = 0x1122334455667788,
			    .rkey = 0x99 };

	for (uint8_t flags = 0; flags <= RN_WR_SIGNALED; flags++) {
		for (uint32_t start = 0; start < RING_BBS; start += 3) {
			setup_sq(state);
			sq.pi = sq.ci = start;
			wr.flags = RN_WR_INLINE | flags;
			assert_int_equal(rn_sq_post(&sq, &wr), 0);
			memcpy(general, ring, sizeof(ring));
			setup_sq(state);
			sq.pi = sq.ci = start;
			assert_int_equal(rn_sq_post_write_word(&sq, word,
							       wr.raddr, 0x99,
							       flags, 6), 0);
			assert_memory_equal(ring, general, sizeof(ring));
			assert_int_equal(sq.pi, start + 1);
			assert_int_equal(wr_ids[start % RING_BBS], 6);
		}
	}
	sq.pi = sq.ci + RING_BBS;
	assert_int_equal(rn_sq_post_write_word(&sq, word, 0, 0, 0, 0), -EAGAIN);
}

/*
 * Written in place, the same WQE again; where the data would wrap at the
 * ring's end, or the post cannot be, nothing is posted or written.
 */
static void
test_send_inline_in_place(void **state)
{
	uint8_t payload[300];
	uint8_t copied[sizeof(ring)];
	struct rn_sq_place at;
	uint8_t *data;

	for (unsigned int i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i ^ 0xa5);
	for (uint32_t start = 0; start < RING_BBS - 2; start += 5) {
		fresh_inline_send(state, start, payload);
		memcpy(copied, ring, sizeof(ring));
		setup_sq(state);
		sq.pi = sq.ci = start;
		assert_true(rn_sq_send_inline_place(&sq, 150, &at));
		data = at.data;
		assert_ptr_equal(data, ring + start * 64 + 20);
		assert_int_equal(sq.pi, start);   /* not posted yet */
		memcpy(data, payload, 150);
		rn_sq_post_send_inline_placed(&sq, &at, 150, RN_WR_SEND_IMM,
					      htobe32(9), RN_WR_SIGNALED, 3);
		assert_memory_equal(ring, copied, sizeof(ring));
		assert_int_equal(sq.pi, start + 3);
		assert_int_equal(wqe_ends[start], start + 3);
		assert_int_equal(wr_ids[start], 3);
		assert_ptr_equal(sq.last_ctrl, ctrl_at(start));
	}
	/* 150 bytes from BB 6 end past the ring (20 + 150 > 128). */
	setup_sq(state);
	sq.pi = sq.ci = 6;
	assert_false(rn_sq_send_inline_place(&sq, 150, &at));
	/* 108 bytes there just fit: 20 + 108 = 128. */
	assert_true(rn_sq_send_inline_place(&sq, 108, &at));
	assert_ptr_equal(at.data, ring + 6 * 64 + 20);
	/* At BB 1: no room (7 BBs in use, 2 needed). */
	setup_sq(state);
	sq.pi = 9;
	sq.ci = 2;
	assert_false(rn_sq_send_inline_place(&sq, 64, &at));
	assert_int_equal(sq.pi, 9);
	assert_null(sq.last_ctrl);
	for (unsigned int i = 0; i < sizeof(ring); i++)
		assert_int_equal(ring[i], 0xee);
}

static void
test_wqe_counter_wraps_16_bits(void **state)
{
	struct rn_sge sge = { 0x1000, 8, 1 };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_SEND };

	(void)state;
	sq.pi = sq.ci = 0xfffe;
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(rn_sq_post(&sq, &wr), 0);
		check_ctrl(0xfffe + i, MLX5_OPCODE_SEND, 2, 0, 0);
	}
	assert_int_equal(be32toh(ctrl_at(0x10000)->opmod_idx_opcode) >> 8, 0);
	rn_sq_ring_doorbell(&sq);
	assert_int_equal(be32toh(dbrec[MLX5_SND_DBR]), 0x0001);
	/* The doorbell carries the last WQE's first 8 bytes. */
	assert_memory_equal(doorbell, ctrl_at(0x10000), 8);
}

static void
test_ring_full_and_bad_requests(void **state)
{
	uint8_t big[300] = { 0 };
	struct rn_sge sge = { 0x1000, 8, 1 };
	struct rn_sge inl = { (uintptr_t)big, sizeof(big), 0 };
	struct rn_sge many[RN_WR_MAX_SGE + 1];
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_SEND };

	(void)state;
	for (int i = 0; i < RING_BBS; i++)
		assert_int_equal(rn_sq_post(&sq, &wr), 0);
	assert_int_equal(rn_sq_room(&sq), 0);
	assert_int_equal(rn_sq_post(&sq, &wr), -EAGAIN);
	/* One completion of WQE 3 frees BBs 0..3. */
	sq.ci = wqe_ends[3];
	assert_int_equal(rn_sq_room(&sq), 4);
	assert_int_equal(rn_sq_post(&sq, &wr), 0);

	wr.sg_list = &inl;
	wr.flags = RN_WR_INLINE;
	assert_int_equal(rn_sq_post(&sq, &wr), -EINVAL);   /* > max_inline */
	wr.sg_list = many;
	wr.num_sge = RN_WR_MAX_SGE + 1;
	wr.flags = 0;
	assert_int_equal(rn_sq_post(&sq, &wr), -EINVAL);
	/* Lengths whose 32-bit sum wraps to a small number are refused. */
	many[0] = (struct rn_sge){ (uintptr_t)big, 0xfffffff0u, 0 };
	many[1] = (struct rn_sge){ (uintptr_t)big, 0x20, 0 };
	wr.num_sge = 2;
	wr.flags = RN_WR_INLINE;
	assert_int_equal(rn_sq_post(&sq, &wr), -EINVAL);
}

/*
 * A ring larger than the CQEs reserved for it (mlx5 sizes WQEs for binds
 * we never post): no more BBs in use than the limit, by any post, and the
 * forced signal comes past half the limit, not half the ring.
 */
static void
test_limit_below_the_ring(void **state)
{
	struct rn_sge sge = { 0x1000, 8, 1 };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_SEND };
	uint8_t frame[8] = { 0 };
	struct rn_sq_place at;

	(void)state;
	sq.limit = 4;
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(rn_sq_post(&sq, &wr), 0);
	assert_int_equal(ctrl_at(2)->fm_ce_se, MLX5_WQE_CTRL_CQ_UPDATE);
	assert_int_equal(rn_sq_room(&sq), 0);
	assert_int_equal(rn_sq_post(&sq, &wr), -EAGAIN);
	assert_int_equal(rn_sq_post_send_inline(&sq, frame, 8, RN_WR_SEND, 0,
						 0, 0), -EAGAIN);
	assert_false(rn_sq_send_inline_place(&sq, 8, &at));
	assert_int_equal(rn_sq_post_send_sge(&sq, &sge, RN_WR_SEND, 0, 0, 0),
			 -EAGAIN);
	assert_int_equal(rn_sq_post_write_word(&sq, 1, 0x2000, 2, 0, 0),
			 -EAGAIN);
	assert_int_equal(sq.pi, 4);
}

/* Empty gather entries are left out: to the NIC, 0 bytes means 2 GiB. */
static void
test_empty_entries_left_out(void **state)
{
	struct rn_sge sge[3] = { { 0x1000, 0, 1 }, { 0x2000, 8, 2 },
				 { 0x3000, 0, 3 } };
	struct rn_wr wr = { .sg_list = sge, .num_sge = 3, .opcode = RN_WR_SEND };

	(void)state;
	assert_int_equal(rn_sq_post(&sq, &wr), 0);
	check_ctrl(0, MLX5_OPCODE_SEND, 2, 0, 0);
	check_data_seg(ring + 16, 8, 2, 0x2000);
}

/* Unsignalled WQEs never fill the ring: one is signalled past half. */
static void
test_forced_signal(void **state)
{
	struct rn_sge sge = { 0x1000, 8, 1 };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_SEND };

	(void)state;
	for (uint32_t i = 0; i < RING_BBS / 2; i++) {
		assert_int_equal(rn_sq_post(&sq, &wr), 0);
		assert_int_equal(ctrl_at(i)->fm_ce_se, 0);
	}
	assert_int_equal(rn_sq_post(&sq, &wr), 0);
	assert_int_equal(ctrl_at(4)->fm_ce_se, MLX5_WQE_CTRL_CQ_UPDATE);
	assert_int_equal(sq.unsignaled_bbs, 0);
}

/*
 * Paced WQEs are signalled only when they ask, and stay out of the count
 * that forces a signal; a signalled one restarts it.
 */
static void
test_paced_not_counted(void **state)
{
	struct rn_sge sge = { 0x1000, 8, 1 };
	struct rn_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RN_WR_SEND };

	(void)state;
	for (uint32_t i = 0; i < 3; i++)   /* counted: 3 of the 4 allowed */
		assert_int_equal(rn_sq_post(&sq, &wr), 0);
	assert_int_equal(sq.unsignaled_bbs, 3);
	wr.flags = RN_WR_PACED;
	for (uint32_t i = 3; i < RING_BBS - 1; i++) {
		assert_int_equal(rn_sq_post(&sq, &wr), 0);
		assert_int_equal(ctrl_at(i)->fm_ce_se, 0);
	}
	assert_int_equal(sq.unsignaled_bbs, 3);
	wr.flags = RN_WR_PACED | RN_WR_SIGNALED;
	assert_int_equal(rn_sq_post(&sq, &wr), 0);
	assert_int_equal(ctrl_at(RING_BBS - 1)->fm_ce_se,
			 MLX5_WQE_CTRL_CQ_UPDATE);
	assert_int_equal(sq.unsignaled_bbs, 0);
}

/*
 * The notify QP's mix, at random: inline SENDs as large as
 * rn_sq_paced_max_bbs() allows, paced by send slots (one in every k
 * signalled; a slot freed only by a CQE at or after it), those that would
 * wrap at the ring's end or find no room for their size sent from their
 * slot (1 BB, counted), and counted 1-BB credit WRITEs. The NIC completes
 * WQEs in order and writes CQEs for the signalled ones only. Whenever a
 * WQE finds no room, a signalled one is still in flight (and the slots
 * too wait for one): nothing jams. For several rings, slots and k.
 */
struct paced_wqe {
	uint32_t bb;
	bool signalled;
	uint32_t send;   /* SENDs posted before it and it, 0 for a WRITE */
};

static bool
any_signalled(const struct paced_wqe *q, uint32_t n_q, bool sends_only)
{
	for (uint32_t i = 0; i < n_q; i++)
		if (q[i].signalled && (!sends_only || q[i].send != 0))
			return true;
	return false;
}

/* One WQE at random, or the NIC completing the oldest; returns whether a
 * post found no room. */
static bool
paced_step(struct paced_wqe *q, uint32_t *n_q, uint32_t *posted,
	   uint32_t *freed, uint32_t slots, uint32_t k, uint32_t frame)
{
	static const struct rn_sge slot = { 0x3000, 8, 5 };
	int r = rand() % 100;
	uint32_t pi = sq.pi;
	int rc = 0;

	if (r < 45 && *posted - *freed < slots) {
		uint8_t flags = *posted % k == k - 1 ? RN_WR_SIGNALED : 0;
		struct rn_sq_place at;

		if (frame != 0 && rn_sq_send_inline_place(&sq, frame, &at))
			rn_sq_post_send_inline_placed(&sq, &at, frame,
				RN_WR_SEND_IMM, 0, flags | RN_WR_PACED, 0);
		else
			rc = rn_sq_post_send_sge(&sq, &slot, RN_WR_SEND_IMM, 0,
						 flags, 0);
		if (rc == 0)
			q[(*n_q)++] = (struct paced_wqe){
				pi, ctrl_at(pi)->fm_ce_se != 0, ++*posted };
	} else if (r < 60) {
		rc = rn_sq_post_write_word(&sq, 1, 0x4000, 9, 0, 0);
		if (rc == 0)
			q[(*n_q)++] = (struct paced_wqe){
				pi, ctrl_at(pi)->fm_ce_se != 0, 0 };
	} else if (*n_q > 0) {   /* the NIC completes the oldest */
		if (q[0].signalled) {
			sq.ci = wqe_ends[q[0].bb % RING_BBS];
			if (q[0].send != 0)
				*freed = q[0].send;
		}
		memmove(q, q + 1, --*n_q * sizeof(q[0]));
	}
	assert_true(rc == 0 || rc == -EAGAIN);
	return rc == -EAGAIN;
}

static void
test_paced_sends_never_jam(void **state)
{
	static const struct { uint32_t limit, slots, k; } cases[] = {
		{ 8, 4, 2 }, { 8, 8, 4 }, { 8, 2, 1 }, { 8, 1, 1 },
		{ 4, 2, 1 }, { 2, 1, 1 }, { 4, 4, 2 },
	};

	for (unsigned int c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct paced_wqe q[RING_BBS];
		uint32_t n_q = 0, posted = 0, freed = 0, no_room = 0;
		uint32_t frame;

		setup_sq(state);
		sq.limit = cases[c].limit;
		frame = rn_sq_send_inline_max(rn_sq_paced_max_bbs(&sq,
								  cases[c].k));
		srand(11 + c);
		for (uint32_t round = 0; round < 50000; round++) {
			bool ahead = any_signalled(q, n_q, false);

			if (paced_step(q, &n_q, &posted, &freed,
				       cases[c].slots, cases[c].k, frame)) {
				no_room++;
				assert_true(ahead);
			}
			if (posted - freed == cases[c].slots)
				assert_true(any_signalled(q, n_q, true));
		}
		assert_true(no_room > 100);   /* the ring was full often */
	}
}

static void
test_recv_wqe(void **state)
{
	uint8_t rbuf[4 * 64] __attribute__((aligned(64)));
	uint64_t rids[4];
	__be32 rdb[2] = { 0, 0 };
	struct rn_rq rq = { .buf = rbuf, .wqe_mask = 3, .stride_shift = 6,
			    .max_sge = 4, .dbrec = &rdb[MLX5_RCV_DBR],
			    .wr_id = rids };
	struct rn_sge sge[2] = { { 0x1000, 64, 3 }, { 0x2000, 128, 4 } };
	const struct mlx5_wqe_data_seg *seg = (const void *)rbuf;

	(void)state;
	assert_int_equal(rn_rq_post(&rq, sge, 2, 77), 0);
	check_data_seg(&seg[0], 64, 3, 0x1000);
	check_data_seg(&seg[1], 128, 4, 0x2000);
	check_data_seg(&seg[2], 0, MLX5_INVALID_LKEY, 0);
	assert_int_equal(rids[0], 77);
	assert_int_equal(rdb[MLX5_RCV_DBR], 0);
	rn_rq_ring_doorbell(&rq);
	assert_int_equal(be32toh(rdb[MLX5_RCV_DBR]), 1);
	for (int i = 1; i < 4; i++)
		assert_int_equal(rn_rq_post(&rq, sge, 1, (uint64_t)i), 0);
	assert_int_equal(rn_rq_post(&rq, sge, 1, 9), -EAGAIN);
	assert_int_equal(rn_rq_post(&rq, sge, 5, 9), -EINVAL);
}

/* One buffer, the lean way: what rn_rq_post() writes, for 1 and 4 SGEs. */
static void
test_recv_sge_matches(void **state)
{
	uint8_t general[4 * 64] __attribute__((aligned(64)));
	uint8_t lean[4 * 64] __attribute__((aligned(64)));
	uint64_t rids[4];
	__be32 rdb[2] = { 0, 0 };
	struct rn_sge sge = { 0x1000, 4096, 3 };

	(void)state;
	for (uint32_t max_sge = 1; max_sge <= 4; max_sge *= 4) {
		struct rn_rq a = { .buf = general, .wqe_mask = 3,
				   .stride_shift = max_sge == 1 ? 4 : 6,
				   .max_sge = max_sge,
				   .dbrec = &rdb[MLX5_RCV_DBR], .wr_id = rids };
		struct rn_rq b = a;

		b.buf = lean;
		memset(general, 0xee, sizeof(general));
		memset(lean, 0xee, sizeof(lean));
		for (uint64_t i = 0; i < 4; i++) {
			assert_int_equal(rn_rq_post(&a, &sge, 1, i), 0);
			assert_int_equal(rn_rq_post_sge(&b, &sge, i), 0);
			assert_int_equal(rids[i], i);
		}
		assert_memory_equal(general, lean, sizeof(lean));
		assert_int_equal(b.head, 4);
		assert_int_equal(rn_rq_post_sge(&b, &sge, 9), -EAGAIN);
		b.tail = 1;
		assert_int_equal(rn_rq_post_sge(&b, &sge, 9), 0);
		assert_int_equal(rids[0], 9);
	}
}

/* ---- CQ polling ---- */

#define CQES 4
static uint8_t cq_ring[CQES * 64] __attribute__((aligned(64)));
static __be32 cq_dbrec[2];
static struct rn_cq cq;
static struct rn_qp qp;
static struct rn_qp_table *table;   /* 4 buckets */
static uint32_t device_pi;  /* what the "device" has written */

static int
setup_cq(void **state)
{
	setup_sq(state);
	memset(cq_ring, 0, sizeof(cq_ring));
	for (int i = 0; i < CQES; i++)
		((struct mlx5_cqe64 *)(cq_ring + i * 64))->op_own =
			MLX5_CQE_INVALID << 4;
	cq_dbrec[0] = 0;
	device_pi = 0;
	rn_qp_table_free(table);
	if (rn_qp_table_create(2, &table) != 0)
		return -1;
	memset(&qp, 0, sizeof(qp));
	qp.qpn = QPN;
	qp.sq = sq;
	qp.table = table;
	rn_qp_table_add(table, &qp);
	cq = (struct rn_cq){ .buf = cq_ring, .cqe_cnt = CQES, .cqe_shift = 6,
			     .dbrec = &cq_dbrec[0], .qps = table };
	return 0;
}

/* Write a CQE as the device does, owner bit from its producer index. */
static void
device_write(uint8_t opcode, uint32_t qpn, uint16_t wqe_counter,
	     uint32_t byte_cnt, uint8_t syndrome)
{
	struct mlx5_cqe64 *cqe = (void *)(cq_ring + (device_pi % CQES) * 64);

	memset(cqe, 0, 63);
	cqe->byte_cnt = htobe32(byte_cnt);
	cqe->sop_drop_qpn = htobe32(qpn);
	cqe->wqe_counter = htobe16(wqe_counter);
	((struct mlx5_err_cqe *)cqe)->syndrome = syndrome;
	cqe->op_own = (uint8_t)(opcode << 4 | ((device_pi & CQES) ? 1 : 0));
	device_pi++;
}

static void
test_cq_owner_bit_many_laps(void **state)
{
	struct rn_wc wc[2];

	(void)state;
	qp.sq.wqe_end[0] = 1;
	for (uint32_t lap = 0; lap < 50 * CQES; lap++) {
		qp.sq.wr_id[0] = lap;
		assert_int_equal(rn_cq_poll(&cq, wc, 2), 0);
		device_write(MLX5_CQE_REQ, (MLX5_OPCODE_SEND << 24) | QPN, 0, 0, 0);
		assert_int_equal(rn_cq_poll(&cq, wc, 2), 1);
		assert_int_equal(wc[0].wr_id, lap);
		assert_int_equal(wc[0].status, 0);
		assert_int_equal(wc[0].opcode, RN_WC_SEND);
		assert_ptr_equal(wc[0].qp, &qp);
		assert_int_equal(be32toh(cq_dbrec[0]), lap + 1);
	}
}

static void
test_cq_one_cqe_retires_earlier_wqes(void **state)
{
	struct rn_wc wc;

	(void)state;
	/* Three WQEs; only the third (at BB 5, 2 BBs long) was signalled. */
	qp.sq.pi = 7;
	qp.sq.wqe_end[5] = 7;
	qp.sq.wr_id[5] = 99;
	device_write(MLX5_CQE_REQ, (MLX5_OPCODE_RDMA_READ << 24) | QPN, 5, 4096,
		     0);
	assert_int_equal(rn_cq_poll(&cq, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 99);
	assert_int_equal(wc.opcode, RN_WC_READ);
	assert_int_equal(wc.byte_len, 4096);
	assert_int_equal(qp.sq.ci, 7);
}

static void
test_cq_stale_qpn_is_counted_not_delivered(void **state)
{
	struct rn_wc wc[4];

	(void)state;
	qp.sq.wqe_end[0] = 1;
	device_write(MLX5_CQE_REQ, QPN + 4, 0, 0, 0);   /* same bucket */
	device_write(MLX5_CQE_RESP_SEND, 0x999, 0, 10, 0);
	device_write(MLX5_CQE_REQ, QPN, 0, 0, 0);
	assert_int_equal(rn_cq_poll(&cq, wc, 4), 1);
	assert_int_equal(wc[0].qp->qpn, QPN);
	assert_int_equal(cq.stale, 2);
	assert_int_equal(be32toh(cq_dbrec[0]), 3);
}

static void
test_cq_error_and_recv_decode(void **state)
{
	uint64_t rids[4] = { 11, 12, 13, 14 };
	struct rn_wc wc[3];

	(void)state;
	qp.rq = (struct rn_rq){ .wqe_mask = 3, .wr_id = rids, .head = 3 };
	qp.sq.wqe_end[2] = 3;
	qp.sq.wr_id[2] = 55;
	device_write(MLX5_CQE_RESP_SEND_IMM, QPN, 0, 33, 0);
	device_write(MLX5_CQE_RESP_ERR, QPN, 1, 0,
		     MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	device_write(MLX5_CQE_REQ_ERR, (MLX5_OPCODE_RDMA_WRITE << 24) | QPN, 2, 0,
		     MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	assert_int_equal(rn_cq_poll(&cq, wc, 3), 3);
	assert_int_equal(wc[0].opcode, RN_WC_RECV_IMM);
	assert_int_equal(wc[0].byte_len, 33);
	assert_int_equal(wc[0].wr_id, 11);
	assert_int_equal(wc[1].status, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	assert_int_equal(wc[1].wr_id, 12);
	assert_int_equal(wc[2].status, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	assert_int_equal(wc[2].opcode, RN_WC_WRITE);
	assert_int_equal(wc[2].wr_id, 55);
	assert_int_equal(qp.rq.tail, 2);
	assert_int_equal(qp.sq.ci, 3);
}

/* Syndromes as libmlx5 reports them in verbs terms. */
static void
test_wc_status_as_verbs(void **state)
{
	static const struct {
		uint8_t syndrome;
		enum ibv_wc_status ibv;
	} map[] = {
		{ 0, IBV_WC_SUCCESS },
		{ MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, IBV_WC_LOC_LEN_ERR },
		{ MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR },
		{ MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, IBV_WC_LOC_PROT_ERR },
		{ MLX5_CQE_SYNDROME_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR },
		{ MLX5_CQE_SYNDROME_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR },
		{ MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR },
		{ MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
		  IBV_WC_REM_INV_REQ_ERR },
		{ MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR },
		{ MLX5_CQE_SYNDROME_REMOTE_OP_ERR, IBV_WC_REM_OP_ERR },
		{ MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
		  IBV_WC_RETRY_EXC_ERR },
		{ MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR,
		  IBV_WC_RNR_RETRY_EXC_ERR },
		{ MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR, IBV_WC_REM_ABORT_ERR },
		{ 0x77, IBV_WC_GENERAL_ERR },
	};

	(void)state;
	for (unsigned int i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		assert_int_equal(rn_wc_status_ibv(map[i].syndrome), map[i].ibv);
}

/* 128-byte CQEs: the mlx5_cqe64 is the second half of each entry. */
static void
test_cq_128_byte_entries(void **state)
{
	static uint8_t big_ring[CQES * 128] __attribute__((aligned(128)));
	struct rn_wc wc;

	(void)state;
	memset(big_ring, 0, sizeof(big_ring));
	for (int i = 0; i < CQES; i++)
		big_ring[i * 128 + 127] = MLX5_CQE_INVALID << 4;
	cq.buf = big_ring + 64;
	cq.cqe_shift = 7;
	qp.sq.wqe_end[0] = 1;
	qp.sq.wr_id[0] = 8;
	for (uint32_t i = 0; i < 3 * CQES; i++) {
		struct mlx5_cqe64 *cqe = (void *)(big_ring + (i % CQES) * 128 + 64);

		assert_int_equal(rn_cq_poll(&cq, &wc, 1), 0);
		memset(cqe, 0, 63);
		cqe->sop_drop_qpn = htobe32(QPN);
		cqe->op_own = (uint8_t)(MLX5_CQE_REQ << 4 | ((i & CQES) ? 1 : 0));
		assert_int_equal(rn_cq_poll(&cq, &wc, 1), 1);
		assert_int_equal(wc.wr_id, 8);
	}
	/* The first halves were never read as CQEs. */
	for (int i = 0; i < CQES; i++)
		assert_int_equal(big_ring[i * 128 + 63], 0);
}

/* The consumer index record is 24 bits; the counter behind it is not. */
static void
test_cq_index_wraps_24_bits(void **state)
{
	struct rn_wc wc[4];

	(void)state;
	cq.ci = device_pi = 0xfffffe;
	qp.sq.wqe_end[0] = 1;
	for (int i = 0; i < 4; i++)
		device_write(MLX5_CQE_REQ, QPN, 0, 0, 0);
	assert_int_equal(rn_cq_poll(&cq, wc, 4), 4);
	assert_int_equal(cq.ci, 0x1000002);
	assert_int_equal(be32toh(cq_dbrec[0]), 0x000002);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_send_gather, setup_sq),
		cmocka_unit_test_setup(test_send_imm_inline, setup_sq),
		cmocka_unit_test_setup(test_write_and_write_imm, setup_sq),
		cmocka_unit_test_setup(test_read, setup_sq),
		cmocka_unit_test_setup(test_inline_wraps_at_ring_end, setup_sq),
		cmocka_unit_test_setup(test_data_segments_wrap, setup_sq),
		cmocka_unit_test_setup(test_send_inline_fast_path_matches,
				       setup_sq),
		cmocka_unit_test_setup(test_send_inline_every_length_matches,
				       setup_sq),
		cmocka_unit_test_setup(test_send_inline_in_place, setup_sq),
		cmocka_unit_test_setup(test_send_sge_matches, setup_sq),
		cmocka_unit_test_setup(test_write_word_matches, setup_sq),
		cmocka_unit_test_setup(test_wqe_counter_wraps_16_bits, setup_sq),
		cmocka_unit_test_setup(test_ring_full_and_bad_requests, setup_sq),
		cmocka_unit_test_setup(test_limit_below_the_ring, setup_sq),
		cmocka_unit_test_setup(test_forced_signal, setup_sq),
		cmocka_unit_test_setup(test_paced_not_counted, setup_sq),
		cmocka_unit_test_setup(test_paced_sends_never_jam, setup_sq),
		cmocka_unit_test_setup(test_empty_entries_left_out, setup_sq),
		cmocka_unit_test_setup(test_cq_128_byte_entries, setup_cq),
		cmocka_unit_test_setup(test_cq_index_wraps_24_bits, setup_cq),
		cmocka_unit_test(test_recv_wqe),
		cmocka_unit_test(test_recv_sge_matches),
		cmocka_unit_test_setup(test_cq_owner_bit_many_laps, setup_cq),
		cmocka_unit_test_setup(test_cq_one_cqe_retires_earlier_wqes,
				       setup_cq),
		cmocka_unit_test_setup(test_cq_stale_qpn_is_counted_not_delivered,
				       setup_cq),
		cmocka_unit_test_setup(test_cq_error_and_recv_decode, setup_cq),
		cmocka_unit_test(test_wc_status_as_verbs),
	};

	int failed = cmocka_run_group_tests_name("datapath", tests, NULL, NULL);

	rn_qp_table_free(table);
	return failed;
}
