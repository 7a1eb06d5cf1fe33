/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TCP fallback (control/endpoint/notify_tcp.c): the hand-off of a
 * notification from the lcore to the control thread and onto the peer's
 * control connection, with its backpressure; NOTIFY frames from the peer
 * to the application's ring, held (not dropped) while that ring is full;
 * each peer held to its quota of that ring, so that one cannot fill it for
 * the others; and notifications to this node itself. A fake worker answers the
 * plane's commands; the test is the peer on a loopback socket.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rte_eal.h>

#include "notify_tcp_pvt.h"
#include "rn_notify_engine.h"
#include "plane_harness.h"

#define CAPS (RN_CAP_TCP_FALLBACK | RN_CAP_NOTIFY_ENABLED)
#define QUIET_MS 100

static int
setup(void **state)
{
	*state = rn_ph_start("a", 1000, true);
	return 0;
}

/* The endpoint index and generation of the endpoint named name. */
static void
endpoint_of(struct rn_ph_plane *h, const char *name, uint32_t *ep_index,
	    uint32_t *generation)
{
	enum rn_ep_state state;
	uint32_t worker;

	assert_int_equal(rn_plane_lookup(h->pl, name, ep_index, &state, &worker), 0);
	*generation = rn_plane_generation(h->pl, *ep_index);
}

/* Hand req to the control thread as the lcore does; its answer. */
static int64_t
hand_off(struct rn_ph_plane *h, struct rn_notify_request *req)
{
	uint64_t until = rn_now_ms() + H_WAIT_MS;
	int64_t result;

	req->result = RN_NOTIFY_PENDING;
	rn_ph_event(h, RN_LCORE_EVENT_NOTIFY_TCP, 0, (uintptr_t)req);
	while ((result = __atomic_load_n(&req->result, __ATOMIC_ACQUIRE)) ==
	       RN_NOTIFY_PENDING) {
		if (rn_now_ms() > until)
			fail_msg("the control thread did not answer");
		rn_ph_sleep_ms(1);
	}
	return result;
}

/* The next delivery on tcp_in, which must have come over TCP in position
 * pos after seq native ones, with msg; its frame freed. */
static void
expect_delivery(struct rn_ph_plane *h, uint32_t ep_index, uint32_t generation,
		uint32_t pos, uint32_t seq, const char *name, const char *msg)
{
	uint64_t until = rn_now_ms() + H_WAIT_MS;
	struct rn_notify_delivery d;
	struct rn_notify_view v;

	while (rte_ring_sc_dequeue_elem(h->tcp_in, &d, sizeof(d)) != 0) {
		if (rn_now_ms() > until)
			fail_msg("no delivery in position %u", pos);
		rn_ph_sleep_ms(1);
	}
	assert_false(rn_notify_delivery_native(&d));
	assert_int_equal(d.ep_index, ep_index);
	assert_int_equal(d.generation, generation);
	assert_int_equal(d.pos, pos);
	assert_int_equal(d.seq, seq);
	assert_int_equal(rn_notify_frame_read(d.frame, d.len, &v), 0);
	assert_int_equal(v.name_len, strlen(name));
	assert_memory_equal(v.name, name, v.name_len);
	assert_int_equal(v.msg_len, strlen(msg));
	assert_memory_equal(v.msg, msg, v.msg_len);
	rn_plane_tcp_release(h->pl, &d);
}

static void
expect_completion(struct rn_ph_plane *h, uint64_t cookie)
{
	struct rn_notify_event ev;

	assert_int_equal(rte_ring_sc_dequeue_elem(h->completions, &ev,
						  sizeof(ev)), 0);
	assert_int_equal(ev.cookie, cookie);
	assert_int_equal(ev.status, 0);
}

/* A send without a native channel goes as a NOTIFY frame, counted for the
 * native ones after it, its completion reported. */
static void
test_send(void **state)
{
	struct rn_ph_plane *h = *state;
	struct rn_notify_out o = { .name = "kv", .name_len = 2, .msg = "hello",
				   .msg_len = 5, .cookie = 77 };
	struct rn_notify_request req = { .flags = RN_NOTIFY_WANT_COMPLETION,
					 .out = &o, .count = 1,
					 .native_before = 5 };

	rn_ph_peer_connect(h, CAPS, false);
	endpoint_of(h, H_PEER_NAME, &req.ep_index, &req.generation);
	assert_int_equal(hand_off(h, &req), 1);
	assert_int_equal(rn_ph_peer_recv(h, H_WAIT_MS), 1);
	assert_int_equal(h->last.type, RN_PROTO_NOTIFY);
	assert_int_equal(h->last.notify.native_before, 5);
	assert_int_equal(h->last.notify.name_len, 2);
	assert_memory_equal(h->last.notify.name, "kv", 2);
	assert_int_equal(h->last.notify.msg_len, 5);
	assert_memory_equal(h->last.notify.msg, "hello", 5);
	assert_int_equal(__atomic_load_n(&h->last_req->tcp_queued,
					 __ATOMIC_ACQUIRE), 1);
	expect_completion(h, 77);
	/* Without the flag: no report. */
	req.flags = 0;
	assert_int_equal(hand_off(h, &req), 1);
	assert_int_equal(rn_ph_peer_recv(h, H_WAIT_MS), 1);
	assert_int_equal(rte_ring_count(h->completions), 0);
	assert_int_equal(h->last_req->tcp_queued, 2);
}

/* A send of another incarnation, or to an endpoint without a connection,
 * is answered -ENOTCONN and sends nothing. */
static void
test_send_not_connected(void **state)
{
	struct rn_ph_plane *h = *state;
	struct rn_notify_out o = { .name = "kv", .name_len = 2, .msg = "x",
				   .msg_len = 1 };
	struct rn_notify_request req = { .out = &o, .count = 1 };
	uint32_t generation;

	rn_ph_peer_connect(h, CAPS, false);
	endpoint_of(h, H_PEER_NAME, &req.ep_index, &generation);
	req.generation = generation + 1;
	assert_int_equal(hand_off(h, &req), -ENOTCONN);
	req.generation = generation - 1;
	assert_int_equal(hand_off(h, &req), -ENOTCONN);
	req.ep_index = RN_MAX_ENDPOINTS - 1;
	assert_int_equal(hand_off(h, &req), -ENOTCONN);
	assert_int_equal(rn_ph_peer_recv(h, QUIET_MS), 0);
	assert_int_equal(h->last_req->tcp_queued, 0);
}

/* A peer that does not read: sends get -EAGAIN once about 1 MiB waits on
 * the connection, which stays up; every frame queued before arrives, in
 * order, and sends go again once the peer has read them. */
static void
test_send_backpressure(void **state)
{
	struct rn_ph_plane *h = *state;
	static char msg[60000];
	struct rn_notify_out o = { .name = "kv", .name_len = 2, .msg = msg,
				   .msg_len = sizeof(msg) };
	struct rn_notify_request req = { .out = &o, .count = 1 };
	unsigned int sent = 0;
	struct rn_ep_info info;
	int64_t rc;

	h->rcvbuf = 4096;
	rn_ph_peer_connect(h, CAPS, false);
	endpoint_of(h, H_PEER_NAME, &req.ep_index, &req.generation);
	while ((rc = hand_off(h, &req)) == 1) {
		req.native_before = ++sent;
		if (sent > 1000)
			fail_msg("no backpressure after %u sends", sent);
	}
	print_message("# -EAGAIN after %u sends of %zu bytes\n", sent,
		      sizeof(msg));
	assert_int_equal(rc, -EAGAIN);
	assert_true(sent >= (1u << 20) / sizeof(msg));
	assert_int_equal(h->last_req->tcp_queued, sent);
	assert_true(rn_ph_info(h, H_PEER_NAME, &info));
	assert_int_equal(info.state, RN_EP_CONNECTED);
	for (unsigned int i = 0; i < sent; i++) {
		assert_int_equal(rn_ph_peer_recv(h, H_WAIT_MS), 1);
		assert_int_equal(h->last.type, RN_PROTO_NOTIFY);
		assert_int_equal(h->last.notify.native_before, i);
	}
	assert_int_equal(hand_off(h, &req), 1);
}

static void
peer_notify(struct rn_ph_plane *h, uint32_t native_before, const char *msg)
{
	uint8_t frame[256];

	rn_ph_peer_send(h, frame, rn_proto_encode_notify(frame, sizeof(frame),
			native_before, "kv", 2, msg, (uint32_t)strlen(msg)));
}

/* NOTIFY frames from the peer go to the application's ring in order, each
 * with its place; when the ring is full the rest wait unread on the
 * connection (not dropped, the endpoint not failed) until it has room. */
static void
test_receive_held_while_full(void **state)
{
	struct rn_ph_plane *h = *state;
	const char *msgs[] = { "m0", "m1", "m2", "m3", "m4", "m5", "m6" };
	uint32_t ep_index, generation;
	struct rn_ep_info info;

	rn_ph_peer_connect(h, CAPS, false);
	endpoint_of(h, H_PEER_NAME, &ep_index, &generation);
	for (unsigned int i = 0; i < RTE_DIM(msgs); i++)
		peer_notify(h, 10 + i, msgs[i]);
	rn_ph_sleep_ms(QUIET_MS);
	assert_int_equal(rte_ring_count(h->tcp_in), H_TCP_IN_ROOM);
	assert_true(rn_ph_info(h, H_PEER_NAME, &info));
	assert_int_equal(info.state, RN_EP_CONNECTED);
	for (unsigned int i = 0; i < RTE_DIM(msgs); i++)
		expect_delivery(h, ep_index, generation, i, 10 + i, "kv", msgs[i]);
	rn_ph_sleep_ms(QUIET_MS);
	assert_int_equal(rte_ring_count(h->tcp_in), 0);
	assert_true(rn_ph_info(h, H_PEER_NAME, &info));
	assert_int_equal(info.state, RN_EP_CONNECTED);
}

/* The same with frames as large as a notification gets: one fills most
 * of the connection's receive buffer. */
static void
test_receive_large_held(void **state)
{
	struct rn_ph_plane *h = *state;
	static uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_MAX_PAYLOAD];
	static char msg[RN_NOTIFY_MAX_PAYLOAD - 2 + 1];
	uint32_t ep_index, generation;
	struct rn_notify_delivery d;
	unsigned int got = 0;
	uint64_t until;

	memset(msg, 'x', sizeof(msg) - 1);
	rn_ph_peer_connect(h, CAPS, false);
	endpoint_of(h, H_PEER_NAME, &ep_index, &generation);
	for (unsigned int i = 0; i < 12; i++) {
		msg[0] = (char)('a' + i);
		rn_ph_peer_send(h, frame, rn_proto_encode_notify(frame,
				sizeof(frame), i, "kv", 2, msg,
				(uint32_t)strlen(msg)));
	}
	until = rn_now_ms() + H_WAIT_MS;
	while (got < 12) {
		struct rn_notify_view v = { 0 };

		if (rn_now_ms() > until) {
			rn_ph_print(h, H_PEER_NAME);
			fail_msg("%u of 12 large notifications delivered", got);
		}
		if (rte_ring_sc_dequeue_elem(h->tcp_in, &d, sizeof(d)) != 0) {
			rn_ph_sleep_ms(1);
			continue;
		}
		assert_int_equal(d.pos, got);
		assert_int_equal(rn_notify_frame_read(d.frame, d.len, &v), 0);
		assert_int_equal(v.msg_len, strlen(msg));
		assert_int_equal(v.msg[0], 'a' + got);
		rn_plane_tcp_release(h->pl, &d);
		got++;
		rn_ph_sleep_ms(20);   /* a slow application: the ring fills */
	}
}

/* To this node itself: connected at first use, without a connection;
 * a send goes straight to the application's ring, and a full ring is
 * backpressure. */
static void
test_send_to_self(void **state)
{
	struct rn_ph_plane *h = *state;
	struct rn_notify_out o = { .name = "kv", .name_len = 2, .msg = "me",
				   .msg_len = 2, .cookie = 9 };
	struct rn_notify_request req = { .flags = RN_NOTIFY_WANT_COMPLETION,
					 .out = &o, .count = 1,
					 .native_before = 3 };
	uint32_t ep_index;

	endpoint_of(h, "a", &ep_index, &req.generation);
	req.ep_index = ep_index;
	assert_int_equal(hand_off(h, &req), -ENOTCONN);
	assert_int_equal(rte_ring_mp_enqueue_elem(h->uses, &ep_index, sizeof(ep_index)),
			 0);
	assert_true(rn_ph_wait_state(h, "a", RN_EP_CONNECTED));
	endpoint_of(h, "a", &ep_index, &req.generation);
	for (unsigned int i = 0; i < H_TCP_IN_ROOM; i++)
		assert_int_equal(hand_off(h, &req), 1);
	assert_int_equal(hand_off(h, &req), -EAGAIN);
	assert_int_equal(rte_ring_count(h->completions), H_TCP_IN_ROOM);
	for (unsigned int i = 0; i < H_TCP_IN_ROOM; i++) {
		expect_delivery(h, ep_index, req.generation, i, 3, "kv", "me");
		expect_completion(h, 9);
	}
	assert_int_equal(h->last_req->tcp_queued, H_TCP_IN_ROOM);
}

/* The plane's tcp_in becomes a ring of the daemon's size, so that a
 * peer's quota, not the ring, is what fills. */
static void
use_full_size_ring(struct rn_ph_plane *h)
{
	struct rte_ring *ring = rte_ring_create_elem("rn_ph_in_full",
		sizeof(struct rn_notify_delivery), RN_NOTIFY_RING_SIZE,
		SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);

	assert_non_null(ring);
	rn_plane_set_notify(h->pl, h->uses, ring, h->completions);
	rte_ring_free(h->tcp_in);
	h->tcp_in = ring;
}

/* Wait until tcp_in holds n, then check it holds no more a while later. */
static void
expect_ring_settles_at(struct rn_ph_plane *h, unsigned int n)
{
	uint64_t until = rn_now_ms() + H_WAIT_MS;

	while (rte_ring_count(h->tcp_in) < n && rn_now_ms() < until)
		rn_ph_sleep_ms(1);
	rn_ph_sleep_ms(QUIET_MS);
	assert_int_equal(rte_ring_count(h->tcp_in), n);
}

/*
 * Take every delivery until want[i] came from each ep_index[i] (two
 * senders), each in its place, frames freed and quotas given back. The
 * first sender's messages are "p<pos>", maybe padded with dots.
 */
static void
drain_in_order(struct rn_ph_plane *h, const uint32_t ep_index[2],
	       const unsigned int want[2])
{
	uint64_t until = rn_now_ms() + H_WAIT_MS;
	unsigned int got[2] = { 0, 0 };
	struct rn_notify_delivery d;

	while (got[0] < want[0] || got[1] < want[1]) {
		struct rn_notify_view v = { 0 };
		char expect[16];
		unsigned int s;

		if (rte_ring_sc_dequeue_elem(h->tcp_in, &d, sizeof(d)) != 0) {
			if (rn_now_ms() > until)
				fail_msg("%u and %u of %u and %u delivered",
					 got[0], got[1], want[0], want[1]);
			rn_ph_sleep_ms(1);
			continue;
		}
		s = d.ep_index == ep_index[0] ? 0 : 1;
		assert_int_equal(d.ep_index, ep_index[s]);
		assert_int_equal(d.pos, got[s]);
		assert_int_equal(rn_notify_frame_read(d.frame, d.len, &v), 0);
		if (s == 0) {
			/* "p<pos>", then nothing or padding of dots. */
			size_t len = (size_t)snprintf(expect, sizeof(expect),
						      "p%u", got[0]);

			assert_true(v.msg_len >= len);
			assert_memory_equal(v.msg, expect, len);
			assert_true(v.msg_len == len || v.msg[len] == '.');
		}
		rn_plane_tcp_release(h->pl, &d);
		got[s]++;
		until = rn_now_ms() + H_WAIT_MS;
	}
	assert_int_equal(rte_ring_count(h->tcp_in), 0);
}

/* This node's own endpoint, connected; its index and generation. */
static void
connect_self(struct rn_ph_plane *h, uint32_t *ep_index, uint32_t *generation)
{
	endpoint_of(h, "a", ep_index, generation);
	assert_int_equal(rte_ring_mp_enqueue_elem(h->uses, ep_index,
						  sizeof(*ep_index)), 0);
	assert_true(rn_ph_wait_state(h, "a", RN_EP_CONNECTED));
	endpoint_of(h, "a", ep_index, generation);
}

/*
 * A peer that floods NOTIFY frames holds no more than its quota of the
 * queue (RN_NOTIFY_TCP_PEER_ENTRIES): the rest wait unread on its
 * connection, which stays up. Another sender (this node itself) still
 * delivers at once, and once the application takes them every frame of
 * the flood arrives, none lost, in order.
 */
static void
test_receive_peer_quota(void **state)
{
	struct rn_ph_plane *h = *state;
	const unsigned int flood = RN_NOTIFY_TCP_PEER_ENTRIES + 100;
	struct rn_notify_out o = { .name = "kv", .name_len = 2, .msg = "me",
				   .msg_len = 2 };
	struct rn_notify_request req = { .out = &o, .count = 1 };
	uint32_t ep_index[2], generation;
	struct rn_ep_info info;

	use_full_size_ring(h);
	connect_self(h, &ep_index[1], &req.generation);
	req.ep_index = ep_index[1];
	rn_ph_peer_connect(h, CAPS, false);
	endpoint_of(h, H_PEER_NAME, &ep_index[0], &generation);
	for (unsigned int i = 0; i < flood; i++) {
		char msg[16];

		snprintf(msg, sizeof(msg), "p%u", i);
		peer_notify(h, i, msg);
	}
	expect_ring_settles_at(h, RN_NOTIFY_TCP_PEER_ENTRIES);
	assert_int_equal(hand_off(h, &req), 1);
	assert_int_equal(rte_ring_count(h->tcp_in),
			 RN_NOTIFY_TCP_PEER_ENTRIES + 1);
	assert_true(rn_ph_info(h, H_PEER_NAME, &info));
	assert_int_equal(info.state, RN_EP_CONNECTED);
	drain_in_order(h, ep_index, (const unsigned int[2]){ flood, 1 });
}

/* The same by bytes: frames of about 60 KB stop at
 * RN_NOTIFY_TCP_PEER_BYTES, far fewer than the quota of entries. */
static void
test_receive_peer_byte_quota(void **state)
{
	struct rn_ph_plane *h = *state;
	static uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_MAX_PAYLOAD];
	static char msg[60000];
	const unsigned int fit = RN_NOTIFY_TCP_PEER_BYTES /
				 rn_notify_frame_size(2, sizeof(msg));
	struct rn_notify_out o = { .name = "kv", .name_len = 2, .msg = "me",
				   .msg_len = 2 };
	struct rn_notify_request req = { .out = &o, .count = 1 };
	uint32_t ep_index[2], generation;

	use_full_size_ring(h);
	connect_self(h, &ep_index[1], &req.generation);
	req.ep_index = ep_index[1];
	rn_ph_peer_connect(h, CAPS, false);
	endpoint_of(h, H_PEER_NAME, &ep_index[0], &generation);
	for (unsigned int i = 0; i < fit + 2; i++) {
		memset(msg, '.', sizeof(msg));
		msg[snprintf(msg, sizeof(msg), "p%u", i)] = '.';
		rn_ph_peer_send(h, frame, rn_proto_encode_notify(frame,
				sizeof(frame), i, "kv", 2, msg, sizeof(msg)));
	}
	expect_ring_settles_at(h, fit);
	assert_int_equal(hand_off(h, &req), 1);
	drain_in_order(h, ep_index, (const unsigned int[2]){ fit + 2, 1 });
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_send, setup, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_send_not_connected, setup,
						rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_send_backpressure, setup,
						rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_receive_held_while_full,
						setup, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_receive_large_held, setup,
						rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_send_to_self, setup,
						rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_receive_peer_quota, setup,
						rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_receive_peer_byte_quota,
						setup, rn_ph_teardown),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	rte_eal_cleanup();
	return failed;
}
