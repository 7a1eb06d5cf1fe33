/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Send order across an endpoint's native and TCP channels
 * (dataplane/api/notify_order.c), driven the way rn_notify_poll() drives
 * it: each arrival is handed over or parked, and after each hand-over the
 * parked ones whose turn came follow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "notify_order_pvt.h"
#include "rn_test_seed.h"

#define MAX_SENT 512

/* What the sender sent, in order: which channel, its stamp, its place. */
struct sent {
	bool native;
	uint32_t seq;     /* the count of the other channel before it */
	uint32_t pos;     /* its place on its own channel */
};

static struct rn_notify_order order;
static uint8_t native_owner;       /* never read: only the index counts */
static uint32_t handed[MAX_SENT];  /* send indexes, in hand-over order */
static unsigned int n_handed;

static int
fresh(void **state)
{
	(void)state;
	while (rn_notify_order_take_any(&order, &(struct rn_notify_delivery){ 0 }))
		;
	order = (struct rn_notify_order){ 0 };
	n_handed = 0;
	return 0;
}

/* A delivery of send index i (kept in len) of endpoint index 3. */
static struct rn_notify_delivery
delivery(const struct sent *s, uint32_t i, uint32_t generation)
{
	return (struct rn_notify_delivery){
		.owner = &native_owner, .len = i,
		.index = s[i].native ? 0 : RN_NOTIFY_VIA_TCP,
		.ep_index = 3, .seq = s[i].seq, .pos = s[i].pos,
		.generation = generation,
	};
}

/* What the poll does once the rings are empty: overdue ones go too. */
static void
hand_over_parked(uint64_t now_ms, bool rings_dry)
{
	struct rn_notify_delivery d;

	while (rn_notify_order_next(&order, now_ms, rings_dry, &d))
		handed[n_handed++] = d.len;
}

static void
arrive(struct rn_notify_delivery d, uint64_t now_ms)
{
	if (!rn_notify_order_admit_taken(&order, &d, now_ms)) {
		assert_int_equal(rn_notify_order_park(&order, &d, now_ms), 0);
		return;
	}
	handed[n_handed++] = d.len;
	hand_over_parked(now_ms, false);
}

/* Stamp sends s[0..n) of the given channels as the sender does. */
static void
stamp(struct sent *s, unsigned int n)
{
	uint32_t natives = 0, tcps = 0;

	for (unsigned int i = 0; i < n; i++) {
		s[i].seq = s[i].native ? tcps : natives;
		s[i].pos = s[i].native ? natives++ : tcps++;
	}
}

/* n sends, each native or TCP at random. */
static void
random_sends(struct sent *s, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		s[i].native = rand() % 3 != 0;
	stamp(s, n);
}

/*
 * Every interleaving of the two channels (each in its own order) is handed
 * over in send order: random sends, random interleavings.
 */
static void
test_any_interleaving_comes_out_in_send_order(void **state)
{
	struct sent s[MAX_SENT];

	srand(rn_test_seed(__func__, 7));
	for (unsigned int round = 0; round < 300; round++) {
		unsigned int n = 1 + (unsigned int)rand() % MAX_SENT;
		uint32_t next_native = 0, next_tcp = 0;

		fresh(state);
		random_sends(s, n);
		/* Each channel's next one, in its own order. */
		for (unsigned int arrived = 0; arrived < n; arrived++) {
			while (next_native < n && !s[next_native].native)
				next_native++;
			while (next_tcp < n && s[next_tcp].native)
				next_tcp++;
			bool native = next_tcp >= n ||
				      (next_native < n && rand() % 2);

			arrive(delivery(s, native ? next_native++ : next_tcp++,
					1), 0);
		}
		assert_int_equal(n_handed, n);
		for (unsigned int i = 0; i < n; i++)
			assert_int_equal(handed[i], i);
		assert_false(rn_notify_order_waiting(&order));
		assert_int_equal(order.overdue, 0);
	}
}

/*
 * The case the poll met most: it drained the native ring before the TCP
 * one. N0 N1 T0 N2 T1 N3 sent; N0 N1 N2 N3 T0 T1 taken.
 */
static void
test_native_ones_wait_for_the_tcp_one_before_them(void **state)
{
	struct sent s[] = {
		{ .native = true }, { .native = true }, { .native = false },
		{ .native = true }, { .native = false }, { .native = true },
	};
	const uint32_t taken[] = { 0, 1, 3, 5, 2, 4 };

	fresh(state);
	stamp(s, 6);
	for (unsigned int i = 0; i < 6; i++)
		arrive(delivery(s, taken[i], 1), 0);
	assert_int_equal(n_handed, 6);
	for (unsigned int i = 0; i < 6; i++)
		assert_int_equal(handed[i], i);
	assert_int_equal(order.parked, 2);   /* N2 and N3 */
}

/*
 * A TCP one that waits for a native one that never comes (its SEND failed
 * with the QP) goes once nothing more is there to take and its endpoint
 * made no progress for RN_NOTIFY_ORDER_WAIT_MS, counted; the next one does
 * not wait for it again.
 */
static void
test_a_lost_native_one_holds_the_next_for_a_while_only(void **state)
{
	struct sent s[] = {
		{ .native = true }, { .native = false }, { .native = false },
		{ .native = true },
	};

	fresh(state);
	stamp(s, 4);
	/* Native 0 is lost. */
	arrive(delivery(s, 1, 1), 100);
	arrive(delivery(s, 2, 1), 100);
	assert_int_equal(n_handed, 0);
	hand_over_parked(100 + RN_NOTIFY_ORDER_WAIT_MS - 1, true);
	assert_int_equal(n_handed, 0);
	/* Not while the rings may still hold what it waits for. */
	hand_over_parked(100 + RN_NOTIFY_ORDER_WAIT_MS, false);
	assert_int_equal(n_handed, 0);
	hand_over_parked(100 + RN_NOTIFY_ORDER_WAIT_MS, true);
	assert_int_equal(n_handed, 2);
	assert_int_equal(handed[0], 1);
	assert_int_equal(handed[1], 2);
	assert_int_equal(order.overdue, 1);   /* the second one had its turn */
	arrive(delivery(s, 3, 1), 100 + RN_NOTIFY_ORDER_WAIT_MS);
	assert_int_equal(n_handed, 3);
	assert_false(rn_notify_order_waiting(&order));
}

/*
 * Under steady load the rings are never found empty: a delivery waiting
 * for a lost one still goes, after RN_NOTIFY_ORDER_WAIT_MAX_MS.
 */
static void
test_a_lost_one_goes_even_while_the_rings_are_busy(void **state)
{
	struct sent s[] = { { .native = true }, { .native = false } };

	fresh(state);
	stamp(s, 2);
	arrive(delivery(s, 1, 1), 0);            /* native 0 is lost */
	hand_over_parked(RN_NOTIFY_ORDER_WAIT_MAX_MS - 1, false);
	assert_int_equal(n_handed, 0);
	hand_over_parked(RN_NOTIFY_ORDER_WAIT_MAX_MS, false);
	assert_int_equal(n_handed, 1);
	assert_int_equal(order.overdue, 1);
}

/*
 * One that was only late (a stalled worker, say) and comes after the one
 * that waited for it went: counted once, so the order holds for what
 * follows. T0 N0 T1 N1 sent; N0 waits for T0 in vain and goes; T0 comes
 * late; N1 must still wait for T1.
 */
static void
test_a_late_one_is_not_counted_twice(void **state)
{
	struct sent s[] = {
		{ .native = false }, { .native = true }, { .native = false },
		{ .native = true },
	};

	fresh(state);
	stamp(s, 4);
	arrive(delivery(s, 1, 1), 0);
	hand_over_parked(RN_NOTIFY_ORDER_WAIT_MS, true);
	assert_int_equal(n_handed, 1);
	arrive(delivery(s, 0, 1), RN_NOTIFY_ORDER_WAIT_MS);   /* late */
	arrive(delivery(s, 3, 1), RN_NOTIFY_ORDER_WAIT_MS);   /* waits for T1 */
	assert_int_equal(n_handed, 2);
	assert_true(rn_notify_order_waiting(&order));
	arrive(delivery(s, 2, 1), RN_NOTIFY_ORDER_WAIT_MS);
	assert_int_equal(n_handed, 4);
	assert_int_equal(handed[2], 2);
	assert_int_equal(handed[3], 3);
	assert_int_equal(order.overdue, 1);
}

/*
 * What a parked one waits for may come slowly (a backlog): each one its
 * endpoint hands over starts its wait again.
 */
static void
test_progress_restarts_the_wait(void **state)
{
	struct sent s[] = {
		{ .native = true }, { .native = true }, { .native = true },
		{ .native = false },
	};

	fresh(state);
	stamp(s, 4);
	arrive(delivery(s, 3, 1), 0);            /* waits for three natives */
	arrive(delivery(s, 0, 1), 900);
	hand_over_parked(1500, true);
	assert_int_equal(n_handed, 1);           /* 900 + the wait: not yet */
	arrive(delivery(s, 1, 1), 1800);
	hand_over_parked(2799, true);
	assert_int_equal(n_handed, 2);
	hand_over_parked(2800, true);            /* native 2 never came */
	assert_int_equal(n_handed, 3);
	assert_int_equal(handed[2], 3);
	assert_int_equal(order.overdue, 1);
}

/*
 * Counts are per incarnation: a newer one starts from zero, and what is
 * left of an older one (parked, or still arriving) goes at once; so it does
 * when the control plane says the endpoint moved on before anything of the
 * new incarnation came.
 */
static void
test_another_incarnation_is_not_held_by_the_last(void **state)
{
	struct sent s[] = {
		{ .native = false, .seq = 5 }, { .native = true }, { .native = true },
	};

	fresh(state);
	arrive(delivery(s, 0, 7), 0);            /* waits for 5 natives */
	assert_true(rn_notify_order_waiting(&order));
	arrive(delivery(s, 1, 8), 0);            /* the next incarnation */
	assert_int_equal(n_handed, 2);           /* it, then the old one */
	assert_int_equal(handed[0], 1);
	assert_int_equal(handed[1], 0);
	arrive(delivery(s, 2, 7), 0);            /* late, of the old one */
	assert_int_equal(n_handed, 3);
	assert_int_equal(order.overdue, 0);

	fresh(state);
	arrive(delivery(s, 0, 7), 0);
	rn_notify_order_generation(&order, 3, 7);   /* the same: it waits on */
	hand_over_parked(0, false);
	assert_int_equal(n_handed, 0);
	rn_notify_order_generation(&order, 3, 8);
	hand_over_parked(0, false);
	assert_int_equal(n_handed, 1);
	assert_int_equal(order.overdue, 0);
}

/* Endpoints are ordered apart: one waiting holds no other back. */
static void
test_one_endpoint_waiting_holds_no_other(void **state)
{
	struct sent s[] = { { .native = false, .seq = 1 }, { .native = true } };
	struct rn_notify_delivery other = delivery(s, 1, 1);

	fresh(state);
	arrive(delivery(s, 0, 1), 0);
	other.ep_index = 4;
	arrive(other, 0);
	assert_int_equal(n_handed, 1);
	assert_int_equal(handed[0], 1);
	assert_true(rn_notify_order_waiting(&order));
	assert_int_equal(order.parked_tcp, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_any_interleaving_comes_out_in_send_order),
		cmocka_unit_test(test_native_ones_wait_for_the_tcp_one_before_them),
		cmocka_unit_test(test_a_lost_native_one_holds_the_next_for_a_while_only),
		cmocka_unit_test(test_a_lost_one_goes_even_while_the_rings_are_busy),
		cmocka_unit_test(test_a_late_one_is_not_counted_twice),
		cmocka_unit_test(test_progress_restarts_the_wait),
		cmocka_unit_test(test_another_incarnation_is_not_held_by_the_last),
		cmocka_unit_test(test_one_endpoint_waiting_holds_no_other),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
