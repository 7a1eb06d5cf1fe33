/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Notification engine pieces: the frame codec (every malformed shape is
 * refused, binary payloads pass) and credit accounting (never more SENDs
 * in flight than the receiver has slots, with any number of sending
 * threads, across 32-bit wrap-around, with stale and repeated updates).
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rn_notify_credit.h"
#include "rn_notify_frame.h"

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

static void
test_credits_window(void **state)
{
	struct rn_credit_tx tx;
	struct rn_credit_rx rx;

	(void)state;
	rn_credit_tx_init(&tx, 4);
	rn_credit_rx_init(&rx, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(rn_credit_take(&tx), 0);
	assert_int_equal(rn_credit_take(&tx), -EAGAIN);
	assert_int_equal(rn_credit_available(&tx), 0);
	/* The receiver reposts one slot: not yet worth an update. */
	rn_credit_repost(&rx);
	assert_false(rn_credit_update_due(&rx));
	rn_credit_repost(&rx);
	assert_true(rn_credit_update_due(&rx));   /* half the window */
	rn_credit_returned(&tx, rn_credit_advertise(&rx));
	assert_false(rn_credit_update_due(&rx));
	assert_int_equal(rn_credit_available(&tx), 2);
	/* A stale (smaller) or repeated count changes nothing. */
	rn_credit_returned(&tx, 1);
	rn_credit_returned(&tx, 2);
	assert_int_equal(rn_credit_available(&tx), 2);
	assert_int_equal(rn_credit_take(&tx), 0);
	assert_int_equal(rn_credit_take(&tx), 0);
	assert_int_equal(rn_credit_take(&tx), -EAGAIN);
}

static void
test_credits_wrap_around(void **state)
{
	struct rn_credit_tx tx;

	(void)state;
	rn_credit_tx_init(&tx, 8);
	tx.reserved = tx.returned = UINT32_MAX - 3;
	for (int i = 0; i < 8; i++)
		assert_int_equal(rn_credit_take(&tx), 0);
	assert_int_equal(tx.reserved, 4);   /* wrapped */
	assert_int_equal(rn_credit_take(&tx), -EAGAIN);
	rn_credit_returned(&tx, 2);          /* 6 slots back, across the wrap */
	assert_int_equal(rn_credit_available(&tx), 6);
	rn_credit_returned(&tx, UINT32_MAX); /* older than 2: ignored */
	assert_int_equal(rn_credit_available(&tx), 6);
}

/* Many senders, one receiver: never more in flight than the window. */
#define SENDERS 4
#define SENDS_EACH 10000
#define WINDOW 16

static struct rn_credit_tx shared_tx;
static uint32_t in_flight;      /* taken, not yet "received" */
static uint32_t worst;          /* the most ever in flight */

static void *
sender(void *arg)
{
	(void)arg;
	for (int sent = 0; sent < SENDS_EACH;) {
		if (rn_credit_take(&shared_tx) != 0) {
			sched_yield();   /* 5 spinning threads share 2 cores */
			continue;
		}
		uint32_t now = __atomic_add_fetch(&in_flight, 1, __ATOMIC_ACQ_REL);
		uint32_t seen = __atomic_load_n(&worst, __ATOMIC_RELAXED);

		while (now > seen &&
		       !__atomic_compare_exchange_n(&worst, &seen, now, true,
						    __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED))
			;
		sent++;
	}
	return NULL;
}

static void
test_credits_many_senders(void **state)
{
	pthread_t threads[SENDERS];
	struct rn_credit_rx rx;
	uint32_t received = 0;

	(void)state;
	rn_credit_tx_init(&shared_tx, WINDOW);
	rn_credit_rx_init(&rx, WINDOW);
	for (int i = 0; i < SENDERS; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, sender, NULL), 0);
	/* The receiver: takes what arrived, reposts, returns credits. */
	while (received < SENDERS * SENDS_EACH) {
		if (__atomic_load_n(&in_flight, __ATOMIC_ACQUIRE) == 0) {
			sched_yield();
			continue;
		}
		__atomic_sub_fetch(&in_flight, 1, __ATOMIC_ACQ_REL);
		received++;
		rn_credit_repost(&rx);
		if (rn_credit_update_due(&rx) || received % 3 == 0)
			rn_credit_returned(&shared_tx, rn_credit_advertise(&rx));
	}
	for (int i = 0; i < SENDERS; i++)
		pthread_join(threads[i], NULL);
	assert_true(worst <= WINDOW);
	assert_int_equal(shared_tx.reserved, (uint32_t)(SENDERS * SENDS_EACH));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_round_trip_binary),
		cmocka_unit_test(test_frame_full_size),
		cmocka_unit_test(test_frame_refuses_what_does_not_add_up),
		cmocka_unit_test(test_credits_window),
		cmocka_unit_test(test_credits_wrap_around),
		cmocka_unit_test(test_credits_many_senders),
	};

	return cmocka_run_group_tests_name("notify", tests, NULL, NULL);
}
