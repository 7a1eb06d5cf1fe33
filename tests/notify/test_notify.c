/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Notification engine pieces: the frame codec (every malformed shape is
 * refused, binary payloads pass), credit accounting (never more SENDs
 * in flight than the receiver has slots, across 32-bit wrap-around, with
 * stale, reordered and repeated updates) and
 * the send window under selective signalling (a CQE frees every earlier
 * slot, a slot is reused only after the NIC is done with it, every wanted
 * completion is reported once, 0 or -EPIPE, and the slots never jam).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rn_notify_credit.h"
#include "rn_notify_frame.h"
#include "rn_notify_window.h"
#include "rn_test_seed.h"

static void
test_frame_round_trip_binary(void **state)
{
	static const uint8_t name[] = { 'a', 0, 'b', 0xff };
	static const uint8_t msg[] = { 0, 0, 0 };
	uint8_t buf[64];
	struct rn_notify_view v;

	(void)state;
	assert_int_equal(rn_notify_frame_size(4, 3), 15);
	rn_notify_frame_write(buf, name, 4, msg, 3);
	assert_int_equal(rn_notify_frame_read(buf, 15, &v), 0);
	assert_int_equal(v.name_len, 4);
	assert_memory_equal(v.name, name, 4);
	assert_int_equal(v.msg_len, 3);
	assert_memory_equal(v.msg, msg, 3);
	/* Empty name and msg: 8 bytes of lengths. */
	rn_notify_frame_write(buf, "", 0, "", 0);
	assert_int_equal(rn_notify_frame_read(buf, 8, &v), 0);
	assert_int_equal(v.name_len + v.msg_len, 0);
}

static void
test_frame_full_size(void **state)
{
	uint8_t *buf = malloc(65536);
	uint8_t *msg = malloc(65528);
	struct rn_notify_view v;

	(void)state;
	memset(msg, 0x5a, 65528);
	rn_notify_frame_write(buf, "", 0, msg, 65528);
	assert_int_equal(rn_notify_frame_read(buf, 65536, &v), 0);
	assert_int_equal(v.msg_len, 65528);
	assert_memory_equal(v.msg, msg, 65528);
	free(buf);
	free(msg);
}

/* Lengths that do not add up to what arrived, in every way. */
static void
test_frame_refuses_what_does_not_add_up(void **state)
{
	uint8_t buf[32];
	struct rn_notify_view v;

	(void)state;
	rn_notify_frame_write(buf, "ab", 2, "cde", 3);   /* 13 bytes */
	assert_int_equal(rn_notify_frame_read(buf, 13, &v), 0);
	assert_int_equal(rn_notify_frame_read(buf, 12, &v), -EBADMSG);
	assert_int_equal(rn_notify_frame_read(buf, 14, &v), -EBADMSG);
	assert_int_equal(rn_notify_frame_read(buf, 7, &v), -EBADMSG);
	assert_int_equal(rn_notify_frame_read(buf, 0, &v), -EBADMSG);
	buf[0] = 6;             /* name runs into msg_len */
	assert_int_equal(rn_notify_frame_read(buf, 13, &v), -EBADMSG);
	buf[0] = 0xff;          /* name past the end */
	buf[3] = 0xff;
	assert_int_equal(rn_notify_frame_read(buf, 13, &v), -EBADMSG);
	rn_notify_frame_write(buf, "ab", 2, "cde", 3);
	buf[9] = 1;             /* msg_len 259 */
	assert_int_equal(rn_notify_frame_read(buf, 13, &v), -EBADMSG);
	memset(buf + 6, 0xff, 4);   /* msg_len 2^32-1: no wrap to 13 */
	assert_int_equal(rn_notify_frame_read(buf, 13, &v), -EBADMSG);
}

/* The immediate's bytes on the wire: little endian (protocol version 3). */
/* An agent frame round trip: the bytes as rn_notify_frame.h draws them,
 * and the node-level reader refuses it (which is how the receiver tells
 * the kinds apart). */
static void
test_agent_frame_round_trip(void **state)
{
	static const uint8_t want[] = {
		0x01, 0xff, 0xff, 0xff, 4, 5, 0, 0,     /* kind, dst, src, 0 */
		2, 0, 0, 0, 3, 0, 0, 0,                 /* name_len, msg_len */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* cookie */
		'b', 'e', 't', 'a', 'n', 'm', 0, 0xff, 'z',
		'a', 'l', 'p', 'h', 'a',
	};
	struct rn_notify_agent_view a;
	struct rn_notify_view v;
	uint8_t buf[64];

	(void)state;
	assert_int_equal(rn_notify_agent_frame_size(4, 5, 2, 3), sizeof(want));
	rn_notify_agent_frame_write(buf, RN_NOTIFY_KIND_AGENT, 0,
				    0x0102030405060708ull, "beta", 4, "alpha",
				    5, 2, 3, "nm\0\xffz");
	assert_memory_equal(buf, want, sizeof(want));
	/* The same bytes from what a client's send buffer holds in a row. */
	memset(buf, 0xee, sizeof(buf));
	rn_notify_agent_frame_put(buf,
				  rn_notify_agent_word(RN_NOTIFY_KIND_AGENT, 4,
						       5, 0),
				  rn_notify_agent_lens(2, 3),
				  0x0102030405060708ull, "betanm\0\xffz", 9,
				  "alpha", 5);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(rn_notify_frame_read(buf, sizeof(want), &v), -EBADMSG);
	assert_int_equal(rn_notify_agent_frame_read(buf, sizeof(want), &a), 0);
	assert_int_equal(a.kind, RN_NOTIFY_KIND_AGENT);
	assert_int_equal(a.cookie, 0x0102030405060708ull);
	assert_ptr_equal(a.dst, buf + 24);
	assert_int_equal(a.dst_len, 4);
	assert_ptr_equal(a.name, buf + 28);
	assert_ptr_equal(a.src, buf + 33);
	assert_int_equal(a.src_len, 5);
	assert_int_equal(a.name_len, 2);
	assert_int_equal(a.msg_len, 3);
	assert_int_equal(a.reason, 0);
	/* A refusal: agents only, and why (little endian). */
	rn_notify_agent_frame_write(buf, RN_NOTIFY_KIND_REFUSAL,
				    RN_NOTIFY_REFUSED_BUSY, 9, "alpha", 5,
				    "nobody", 6, 0, 0, NULL);
	assert_memory_equal(buf + 6, "\x01\x00", 2);
	assert_int_equal(rn_notify_agent_frame_read(buf, 35, &a), 0);
	assert_int_equal(a.kind, RN_NOTIFY_KIND_REFUSAL);
	assert_int_equal(a.reason, RN_NOTIFY_REFUSED_BUSY);
	assert_memory_equal(a.dst, "alpha", 5);
	assert_memory_equal(a.src, "nobody", 6);
	assert_int_equal(rn_notify_frame_read(buf, 35, &v), -EBADMSG);
}

/* Every shape that does not add up, or is of no known kind, is refused;
 * every length short of the frame too, so nothing is read past len. */
static void
test_agent_frame_refuses_what_does_not_add_up(void **state)
{
	static const struct {
		const char *what;
		size_t offset;
		uint8_t value;
	} bad[] = {
		{ "unknown kind", 0, 0x03 },
		{ "node-level first word", 3, 0x00 },
		{ "dst_len 0", 4, 0 },
		{ "dst_len over the maximum", 4, RN_NOTIFY_AGENT_MAX + 1 },
		{ "src_len 0", 5, 0 },
		{ "src_len over the maximum", 5, 255 },
		{ "an agent frame with a reason", 6, 1 },
		{ "name_len one more", 8, 3 },
		{ "msg_len one less", 12, 2 },
		{ "msg_len past 4 GiB", 15, 0x80 },
	};
	struct rn_notify_agent_view a;
	uint8_t good[64], buf[64];
	uint32_t len = (uint32_t)rn_notify_agent_frame_size(4, 5, 2, 3);

	(void)state;
	rn_notify_agent_frame_write(good, RN_NOTIFY_KIND_AGENT, 0, 1, "beta",
				    4, "alpha", 5, 2, 3, "nmmsg");
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(buf, good, sizeof(buf));
		buf[bad[i].offset] = bad[i].value;
		if (rn_notify_agent_frame_read(buf, len, &a) != -EBADMSG)
			fail_msg("%s: accepted", bad[i].what);
	}
	for (uint32_t n = 0; n < len; n++)
		assert_int_equal(rn_notify_agent_frame_read(good, n, &a),
				 -EBADMSG);
	assert_int_equal(rn_notify_agent_frame_read(good, len + 1, &a),
			 -EBADMSG);
	/* A refusal with a name or msg is none, nor one of a reason unknown. */
	rn_notify_agent_frame_write(buf, RN_NOTIFY_KIND_REFUSAL, 0, 1, "beta",
				    4, "alpha", 5, 2, 3, "nmmsg");
	assert_int_equal(rn_notify_agent_frame_read(buf, len, &a), -EBADMSG);
	len = (uint32_t)rn_notify_agent_frame_size(4, 5, 0, 0);
	rn_notify_agent_frame_write(buf, RN_NOTIFY_KIND_REFUSAL,
				    RN_NOTIFY_REFUSED_BUSY + 1, 1, "beta", 4,
				    "alpha", 5, 0, 0, NULL);
	assert_int_equal(rn_notify_agent_frame_read(buf, len, &a), -EBADMSG);
	/* The largest agents are allowed. */
	memset(buf, 'x', sizeof(buf));
	{
		uint8_t big[24 + 2 * RN_NOTIFY_AGENT_MAX];
		uint8_t agent[RN_NOTIFY_AGENT_MAX];

		memset(agent, 'a', sizeof(agent));
		rn_notify_agent_frame_write(big, RN_NOTIFY_KIND_REFUSAL, 0, 1,
					    agent, RN_NOTIFY_AGENT_MAX, agent,
					    RN_NOTIFY_AGENT_MAX, 0, 0, NULL);
		assert_int_equal(rn_notify_agent_frame_read(big, sizeof(big),
							    &a), 0);
	}
}

static void
test_imm_little_endian(void **state)
{
	__be32 imm = rn_notify_imm(0x01020304);
	uint8_t bytes[4];

	(void)state;
	memcpy(bytes, &imm, sizeof(bytes));
	assert_memory_equal(bytes, "\x04\x03\x02\x01", 4);
	assert_int_equal(rn_notify_imm_count(imm), 0x01020304);
}

/*
 * Every length through each way of copying (up to 64 inline, a call
 * beyond), at every alignment: exactly len bytes, nothing around. The
 * source is exactly len bytes on the heap, so that the sanitized build
 * catches a read past its end.
 */
static void
test_frame_copy_every_length(void **state)
{
	uint8_t dst[96], want[96];

	(void)state;
	for (uint32_t len = 0; len <= 72; len++) {
		for (uint32_t at = 0; at < 8; at++) {
			uint8_t *src = malloc(len > 0 ? len : 1);

			assert_non_null(src);
			for (uint32_t i = 0; i < len; i++)
				src[i] = (uint8_t)(i * 7 + at + 1);
			memset(dst, 0xcc, sizeof(dst));
			memset(want, 0xcc, sizeof(want));
			memcpy(want + 8 + at, src, len);
			rn_notify_copy(dst + 8 + at, src, len);
			assert_memory_equal(dst, want, sizeof(dst));
			free(src);
		}
	}
}

/* Take a credit for one more SEND, the way the send window does. */
static int
take(const struct rn_credit_tx *tx, uint32_t *sent)
{
	if (rn_credit_allowed(tx) == *sent)
		return -EAGAIN;
	++*sent;
	return 0;
}

static void
test_credits_window(void **state)
{
	struct rn_credit_tx tx;
	struct rn_credit_rx rx;
	uint32_t sent = 0;

	(void)state;
	rn_credit_tx_init(&tx, 4);
	rn_credit_rx_init(&rx, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(take(&tx, &sent), 0);
	assert_int_equal(take(&tx, &sent), -EAGAIN);
	/* The receiver reposts one slot: not yet worth an update. */
	rn_credit_repost(&rx);
	assert_false(rn_credit_update_due(&rx));
	rn_credit_repost(&rx);
	assert_true(rn_credit_update_due(&rx));   /* half the window */
	/* A post that failed told the peer nothing: still due. */
	assert_int_equal(rn_credit_count(&rx), 2);
	assert_true(rn_credit_update_due(&rx));
	rn_credit_told(&rx, rn_credit_count(&rx));
	rn_credit_returned(&tx, rn_credit_count(&rx));
	assert_false(rn_credit_update_due(&rx));
	assert_int_equal(rn_credit_allowed(&tx) - sent, 2);
	/* A stale (smaller) or repeated count changes nothing. */
	rn_credit_returned(&tx, 1);
	rn_credit_returned(&tx, 2);
	assert_int_equal(rn_credit_allowed(&tx) - sent, 2);
	assert_int_equal(take(&tx, &sent), 0);
	assert_int_equal(take(&tx, &sent), 0);
	assert_int_equal(take(&tx, &sent), -EAGAIN);
}

static void
test_credits_wrap_around(void **state)
{
	struct rn_credit_tx tx;
	uint32_t sent = UINT32_MAX - 3;

	(void)state;
	rn_credit_tx_init(&tx, 8);
	tx.returned = UINT32_MAX - 3;
	for (int i = 0; i < 8; i++)
		assert_int_equal(take(&tx, &sent), 0);
	assert_int_equal(sent, 4);           /* wrapped */
	assert_int_equal(take(&tx, &sent), -EAGAIN);
	rn_credit_returned(&tx, 2);          /* 6 slots back, across the wrap */
	assert_int_equal(rn_credit_allowed(&tx) - sent, 6);
	rn_credit_returned(&tx, UINT32_MAX); /* older than 2: ignored */
	assert_int_equal(rn_credit_allowed(&tx) - sent, 6);
}

/*
 * A sender and a receiver at random, across the 32-bit wrap: counts
 * travel late, out of order and repeated (credit WRITEs overtake one
 * another's reads). The sender goes through its send window as the lcore
 * does (rn_credit_returned(), then rn_send_window_allow()), with slots
 * enough and each freed at once, so that only the credits hold it. Never
 * more SENDs in flight than the receiver has slots.
 */
#define WINDOW 16
#define SENDS 100000

static void
test_credits_random_traffic(void **state)
{
	static uint64_t cookie[64];
	static uint8_t want[64];
	struct rn_send_window s;
	struct rn_credit_tx tx;
	struct rn_credit_rx rx;
	uint32_t in_flight = 0;      /* taken, slot not reposted yet */
	uint32_t start = UINT32_MAX - 1000, transit[8];
	unsigned int n_transit = 0;

	(void)state;
	srand(rn_test_seed(__func__, 7));
	rn_send_window_init(&s, 64, cookie, want);
	rn_credit_tx_init(&tx, WINDOW);
	rn_credit_rx_init(&rx, WINDOW);
	tx.returned = rx.reposted = rx.advertised = start;
	s.posted = s.freed = start;
	rn_send_window_allow(&s, rn_credit_allowed(&tx));
	for (unsigned long step = 0; s.posted != start + SENDS; step++) {
		assert_true(step < 100ul * SENDS);   /* else it jammed */
		switch (rand() % 4) {
		case 0:
			if (rn_send_window_open(&s)) {
				uint32_t slot = rn_send_window_next(&s);
				uint64_t none;

				rn_send_window_push(&s, 0, false);
				assert_false(rn_send_window_complete(&s, slot,
								    &none));
				assert_true(++in_flight <= WINDOW);
			}
			break;
		case 1:   /* one arrived and its slot was reposted */
			if (in_flight > 0) {
				in_flight--;
				rn_credit_repost(&rx);
			}
			break;
		case 2:
			if (n_transit < 8 && (rn_credit_update_due(&rx) ||
					      rand() % 3 == 0)) {
				transit[n_transit] = rn_credit_count(&rx);
				rn_credit_told(&rx, transit[n_transit++]);
			}
			break;
		default:  /* one count arrives, maybe to arrive again */
			if (n_transit > 0) {
				unsigned int i = (unsigned int)rand() % n_transit;

				rn_credit_returned(&tx, transit[i]);
				rn_send_window_allow(&s, rn_credit_allowed(&tx));
				if (rand() % 2)
					transit[i] = transit[--n_transit];
			}
		}
		assert_true(s.posted - tx.returned <= WINDOW);
	}
}

/* ---- the send window ---- */

#define MAX_SLOTS 256

static uint64_t cookies[MAX_SLOTS];
static uint8_t wants[MAX_SLOTS];

/* n slots over the arrays above, zeroed as the lcore's are, with
 * credits for far more SENDs than any test posts. */
static void
init_window(struct rn_send_window *s, uint32_t n)
{
	memset(wants, 0, sizeof(wants));
	rn_send_window_init(s, n, cookies, wants);
	rn_send_window_allow(s, 1u << 30);
}

static bool
window_full(const struct rn_send_window *s)
{
	return rn_send_window_used(s) == s->mask + 1;
}

/* Post one SEND the way the lcore does; returns whether it was signalled. */
static bool
push(struct rn_send_window *s, uint64_t cookie, bool want)
{
	bool signal = rn_send_window_signal(s, want);

	assert_true(rn_send_window_open(s));
	rn_send_window_push(s, cookie, want);
	return signal;
}

/* The SEND in every `every`-th slot is signalled, and each one that wants
 * a report; every is a power of two up to 32 and at most half the slots. */
static void
test_send_window_signal_every(void **state)
{
	static const struct { uint32_t n, every; } cases[] = {
		{ 1, 1 }, { 2, 1 }, { 4, 2 }, { 8, 4 }, { 16, 8 }, { 32, 16 },
		{ 64, 32 }, { 256, 32 },
	};
	struct rn_send_window s;

	(void)state;
	for (unsigned int c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		init_window(&s, cases[c].n);
		assert_int_equal(s.signal_mask + 1, cases[c].every);
	}
	init_window(&s, 256);
	for (uint32_t i = 1; i <= 80; i++) {
		bool signalled = push(&s, i, i == 20);
		uint64_t cookie;

		/* Slots 31 and 63 (SENDs 32 and 64), and 19 (wanted). */
		assert_int_equal(signalled, i == 32 || i == 20 || i == 64);
		if (signalled)
			(void)rn_send_window_complete(&s, (i - 1) % 256, &cookie);
	}
}

/* A CQE frees its slot and every earlier one, across the wrap of 4. */
static void
test_send_window_complete_frees_earlier(void **state)
{
	struct rn_send_window s;
	uint64_t cookie = 0;

	(void)state;
	init_window(&s, 4);
	for (uint64_t i = 0; i < 4; i++)
		push(&s, 100 + i, i == 2);
	assert_true(window_full(&s));
	assert_false(rn_send_window_open(&s));
	/* Slot 2 wanted its report; 0 and 1 go with it, unreported. */
	assert_true(rn_send_window_complete(&s, 2, &cookie));
	assert_int_equal(cookie, 102);
	assert_int_equal(rn_send_window_used(&s), 1);
	assert_int_equal(rn_send_window_oldest(&s), 3);
	for (uint64_t i = 4; i < 7; i++)
		push(&s, 100 + i, false);
	assert_false(rn_send_window_open(&s));
	assert_int_equal(rn_send_window_next(&s), 3);
	/* Slot 1 (SEND 5) frees 3, 0 and 1: SENDs 3..5. */
	assert_false(rn_send_window_complete(&s, 1, &cookie));
	assert_int_equal(rn_send_window_used(&s), 1);
	assert_int_equal(rn_send_window_oldest(&s), 2);
	/* Slots no longer in use free nothing: a CQE already covered. */
	assert_false(rn_send_window_complete(&s, 0, &cookie));
	assert_false(rn_send_window_complete(&s, 3, &cookie));
	assert_int_equal(rn_send_window_used(&s), 1);
	assert_false(rn_send_window_complete(&s, 2, &cookie));
	assert_int_equal(rn_send_window_used(&s), 0);
	assert_false(rn_send_window_complete(&s, 2, &cookie));
	assert_int_equal(rn_send_window_used(&s), 0);
	assert_true(rn_send_window_open(&s));
}

/*
 * The window is the lower of the free slots and the credits, whichever
 * moves, across the 32-bit wrap of the counts.
 */
static void
test_send_window_window_of_credits_and_slots(void **state)
{
	struct rn_send_window s;
	uint64_t cookie;
	uint32_t start = UINT32_MAX - 5;

	(void)state;
	memset(wants, 0, sizeof(wants));
	rn_send_window_init(&s, 8, cookies, wants);
	s.posted = s.freed = start;      /* as after 2^32 - 6 SENDs */
	rn_send_window_allow(&s, start);
	assert_false(rn_send_window_open(&s));   /* no credit yet */
	rn_send_window_allow(&s, start + 3);
	for (int i = 0; i < 3; i++)
		push(&s, 0, false);
	assert_false(rn_send_window_open(&s));   /* credits spent, 5 slots free */
	rn_send_window_allow(&s, start + 20);
	for (int i = 0; i < 5; i++)
		push(&s, 0, false);                 /* across the wrap */
	assert_int_equal(s.posted, start + 8);
	assert_false(rn_send_window_open(&s));   /* slots spent, credits left */
	/* The oldest two complete: two more, then the slots stop it again. */
	assert_false(rn_send_window_complete(&s, (start + 1) & 7, &cookie));
	push(&s, 0, false);
	push(&s, 0, false);
	assert_false(rn_send_window_open(&s));
	/* All complete: eight more fill the slots; with those failed, the
	 * credits stop it two later, at 20 SENDs. */
	assert_false(rn_send_window_complete(&s, (start + 9) & 7, &cookie));
	assert_int_equal(rn_send_window_used(&s), 0);
	for (int i = 0; i < 8; i++)
		push(&s, 0, false);
	assert_false(rn_send_window_open(&s));
	while (rn_send_window_used(&s) != 0)
		(void)rn_send_window_fail_oldest(&s, &cookie);
	push(&s, 0, false);
	push(&s, 0, false);
	assert_false(rn_send_window_open(&s));   /* 20 credits, 20 SENDs */
	assert_int_equal(rn_send_window_used(&s), 2);
}

/* A failed QP fails every slot in use, oldest first, signalled or not. */
static void
test_send_window_fail_all(void **state)
{
	struct rn_send_window s;
	uint64_t cookie, failed[8];
	unsigned int n_failed = 0;

	(void)state;
	init_window(&s, 8);
	for (uint64_t i = 0; i < 7; i++)
		push(&s, 200 + i, i % 3 == 1);     /* 201 and 204 want one */
	assert_true(rn_send_window_complete(&s, 1, &cookie));   /* 200, 201 */
	assert_int_equal(cookie, 201);
	while (rn_send_window_used(&s) != 0)
		if (rn_send_window_fail_oldest(&s, &cookie))
			failed[n_failed++] = cookie;
	assert_int_equal(n_failed, 1);
	assert_int_equal(failed[0], 204);
	/* The flushes that follow find nothing left to free or report. */
	for (uint32_t slot = 0; slot < 8; slot++)
		assert_false(rn_send_window_complete(&s, slot, &cookie));
	assert_int_equal(rn_send_window_used(&s), 0);
}

/*
 * The slots against a model of an RC send queue, at random: SENDs are
 * posted while slots are free, the NIC completes them in order and writes
 * a CQE only for the signalled ones, and now and then the QP fails: an
 * error CQE for the oldest WQE not completed, then a flush CQE for every
 * WQE after it, signalled or not. Checked: a slot is taken again only after
 * the NIC is done with the SEND that had it; each wanted completion is
 * reported exactly once, 0 when the NIC completed it and -EPIPE when not;
 * with every slot taken, one of them is signalled (nothing jams).
 */
#define MODEL_ROUNDS 20000

struct model_send {
	uint32_t slot;
	bool signalled, want;
	uint64_t cookie;
};

struct model {
	struct rn_send_window s;
	struct model_send q[MAX_SLOTS];   /* posted, not completed by the NIC */
	uint32_t n_q;
	bool nic_done[MAX_SLOTS];         /* per slot: the NIC finished it */
	int reported[MODEL_ROUNDS];       /* per cookie: 0, -EPIPE or 1 (none) */
	bool want[MODEL_ROUNDS];
	bool nic_ok[MODEL_ROUNDS];        /* the NIC completed it successfully */
};

static void
model_report(struct model *m, uint64_t cookie, int status)
{
	assert_true(m->want[cookie]);
	assert_int_equal(m->reported[cookie], 1);   /* once */
	m->reported[cookie] = status;
}

/* The NIC completes the oldest k SENDs; CQEs for the signalled ones. */
static void
model_complete(struct model *m, uint32_t k)
{
	uint64_t cookie;

	for (uint32_t i = 0; i < k; i++) {
		struct model_send *w = &m->q[i];

		m->nic_done[w->slot] = true;
		m->nic_ok[w->cookie] = true;
		if (w->signalled &&
		    rn_send_window_complete(&m->s, w->slot, &cookie)) {
			assert_int_equal(cookie, w->cookie);
			model_report(m, cookie, 0);
		}
	}
	memmove(m->q, m->q + k, (m->n_q - k) * sizeof(m->q[0]));
	m->n_q -= k;
}

/*
 * The QP fails: the error CQE, then a flush CQE for each WQE after it. On
 * each, what lcore_notify.c does on any send-side error: fail every slot.
 */
static void
model_fail(struct model *m)
{
	uint64_t cookie;

	for (uint32_t i = 0; i < m->n_q; i++) {
		m->nic_done[m->q[i].slot] = true;
		while (rn_send_window_used(&m->s) != 0)
			if (rn_send_window_fail_oldest(&m->s, &cookie))
				model_report(m, cookie, -EPIPE);
	}
	m->n_q = 0;
}

static void
run_model(uint32_t n, unsigned int seed)
{
	struct model *m = calloc(1, sizeof(*m));
	uint64_t next = 0;

	assert_non_null(m);
	srand(seed);
	init_window(&m->s, n);
	for (uint32_t i = 0; i < MAX_SLOTS; i++)
		m->nic_done[i] = true;
	for (uint64_t c = 0; c < MODEL_ROUNDS; c++)
		m->reported[c] = 1;
	while (next < MODEL_ROUNDS) {
		int r = rand() % 100;

		if (window_full(&m->s)) {
			bool any = false;

			for (uint32_t i = 0; i < m->n_q; i++)
				any |= m->q[i].signalled;
			assert_true(any);   /* else no CQE would ever come */
		}
		if (r < 60 && rn_send_window_open(&m->s)) {
			struct model_send w = {
				.slot = rn_send_window_next(&m->s),
				.want = rand() % 7 == 0, .cookie = next++,
			};

			assert_true(m->nic_done[w.slot]);
			m->nic_done[w.slot] = false;
			m->want[w.cookie] = w.want;
			w.signalled = push(&m->s, w.cookie, w.want);
			m->q[m->n_q++] = w;
		} else if (r < 99) {
			if (m->n_q > 0)
				model_complete(m, 1 + (uint32_t)rand() % m->n_q);
		} else {
			model_fail(m);
		}
	}
	model_complete(m, m->n_q);
	for (uint64_t c = 0; c < MODEL_ROUNDS; c++) {
		if (!m->want[c])
			assert_int_equal(m->reported[c], 1);
		else if (m->nic_ok[c])
			assert_int_equal(m->reported[c], 0);
		else
			assert_int_equal(m->reported[c], -EPIPE);
	}
	free(m);
}

static void
test_send_window_model(void **state)
{
	static const uint32_t sizes[] = { 1, 2, 4, 8, 16, 32, 64 };
	unsigned int seed = rn_test_seed(__func__, 1000);

	(void)state;
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		run_model(sizes[i], seed + i);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_round_trip_binary),
		cmocka_unit_test(test_frame_full_size),
		cmocka_unit_test(test_frame_refuses_what_does_not_add_up),
		cmocka_unit_test(test_frame_copy_every_length),
		cmocka_unit_test(test_agent_frame_round_trip),
		cmocka_unit_test(test_agent_frame_refuses_what_does_not_add_up),
		cmocka_unit_test(test_imm_little_endian),
		cmocka_unit_test(test_credits_window),
		cmocka_unit_test(test_credits_wrap_around),
		cmocka_unit_test(test_credits_random_traffic),
		cmocka_unit_test(test_send_window_signal_every),
		cmocka_unit_test(test_send_window_complete_frees_earlier),
		cmocka_unit_test(test_send_window_window_of_credits_and_slots),
		cmocka_unit_test(test_send_window_fail_all),
		cmocka_unit_test(test_send_window_model),
	};

	return cmocka_run_group_tests_name("notify", tests, NULL, NULL);
}
