/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Channel add (control/endpoint/channel_add.c): every move of its state
 * machine, driven over a real control connection by a test peer, with a
 * fake worker lcore answering the plane's commands. Each test names the
 * frames the plane must send and the commands it must give its lcore.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <rte_eal.h>

#include "plane_harness.h"

#define TIMEOUT_MS 200            /* [control] connect_timeout_ms here */
#define QUIET_MS (TIMEOUT_MS / 2) /* nothing may happen within this */
#define CAPS (RN_CAP_TCP_FALLBACK | RN_CAP_NOTIFY_ENABLED)

/* Plane "a" sorts before the peer: its offer goes first when offers
 * cross. Plane "z" sorts after: the peer's does. */
static int
setup_a(void **state)
{
	*state = rn_ph_start("a", TIMEOUT_MS, true);
	return 0;
}

static int
setup_z(void **state)
{
	*state = rn_ph_start("z", TIMEOUT_MS, true);
	return 0;
}

static int
setup_off(void **state)
{
	*state = rn_ph_start("a", TIMEOUT_MS, false);
	return 0;
}

static void
expect_cmds(struct rn_ph_plane *h, uint32_t type, unsigned int n)
{
	if (!rn_ph_wait_cmds(h, type, n)) {
		rn_ph_print(h, H_PEER_NAME);
		fail_msg("expected %u command(s) of type %u, got %u", n, type,
			 rn_ph_cmd_count(h, type));
	}
	rn_ph_sleep_ms(5);   /* no more than n either */
	if (rn_ph_cmd_count(h, type) != n) {
		rn_ph_print(h, H_PEER_NAME);
		fail_msg("expected %u command(s) of type %u, got %u", n, type,
			 rn_ph_cmd_count(h, type));
	}
}

static void
expect_native(struct rn_ph_plane *h, bool native, uint64_t added)
{
	struct rn_ep_info info;

	if (!rn_ph_wait_native(h, H_PEER_NAME, native) ||
	    !rn_ph_info(h, H_PEER_NAME, &info) || info.native_added != added ||
	    info.state != RN_EP_CONNECTED) {
		rn_ph_print(h, H_PEER_NAME);
		fail_msg("expected native %d after %lu added", native,
			 (unsigned long)added);
	}
}

/* The peer sees nothing from the plane for a while. */
static void
expect_silence(struct rn_ph_plane *h)
{
	if (rn_ph_peer_recv(h, QUIET_MS) != 0) {
		rn_ph_print(h, H_PEER_NAME);
		fail_msg("unexpected %s (step %u)",
			 rn_proto_type_name(h->last.type),
			 h->last.notify_qp.step);
	}
}

/* A bay comes back: the plane opens a QP and offers it; the offer's number. */
static uint16_t
plane_offers(struct rn_ph_plane *h, unsigned int nth)
{
	rn_ph_bay_free(h, false);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_OPEN, nth);
	return rn_ph_expect_step(h, RN_NOTIFY_QP_OFFER);
}

/* Idle -> opening -> offered -> connecting -> idle, native. */
static void
test_our_offer_accepted(void **state)
{
	struct rn_ph_plane *h = *state;
	uint16_t offer;

	rn_ph_peer_connect(h, CAPS, false);
	expect_native(h, false, 0);
	offer = plane_offers(h, 1);
	assert_true(h->last.notify_qp.qp.kind == RN_PROTO_QP_NOTIFY);
	assert_int_equal(h->last.notify_qp.qp.qpn, 0x300);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_ACCEPT, 0, offer);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_CONNECT, 1);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_READY), offer);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_ENABLE, 1);
	expect_native(h, true, 1);
	/* The peer's QP went into the endpoint's record for the lcore. */
	assert_int_equal(h->last_req->remote.qps[h->last_req->remote.n_qps - 1].qpn,
			 0x400);
}

/* Offered -> idle on REFUSE DISABLED: never offered again. */
static void
test_refused_disabled(void **state)
{
	struct rn_ph_plane *h = *state;
	uint16_t offer;

	rn_ph_peer_connect(h, CAPS, false);
	offer = plane_offers(h, 1);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_REFUSE, RN_NOTIFY_QP_DISABLED, offer);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_DROP, 1);
	rn_ph_bay_free(h, false);
	expect_silence(h);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_OPEN, 1);
	expect_native(h, false, 0);
}

/* Offered -> idle on REFUSE NO_ROOM: not after our own drop, but when
 * room came back from elsewhere, with the next offer number. */
static void
test_refused_no_room(void **state)
{
	struct rn_ph_plane *h = *state;
	uint16_t offer;

	rn_ph_peer_connect(h, CAPS, false);
	offer = plane_offers(h, 1);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_REFUSE, RN_NOTIFY_QP_NO_ROOM, offer);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_DROP, 1);
	rn_ph_bay_free(h, true);
	expect_silence(h);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_OPEN, 1);
	assert_int_equal(plane_offers(h, 2), (uint16_t)(offer + 1));
}

/* A REFUSE BUSY of our offer (the peer offers itself): dropped, and a bay
 * back after that drop may offer again. */
static void
test_refused_busy(void **state)
{
	struct rn_ph_plane *h = *state;
	uint16_t offer;

	rn_ph_peer_connect(h, CAPS, false);
	offer = plane_offers(h, 1);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_REFUSE, RN_NOTIFY_QP_BUSY, offer);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_DROP, 1);
	rn_ph_bay_free(h, true);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_OPEN, 2);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_OFFER),
			 (uint16_t)(offer + 1));
}

/* Offered -> idle when the peer does not answer in connect_timeout_ms:
 * not before; the peer counts as declined. */
static void
test_no_answer(void **state)
{
	struct rn_ph_plane *h = *state;
	uint64_t offered_at;

	rn_ph_peer_connect(h, CAPS, false);
	plane_offers(h, 1);
	offered_at = rn_now_ms();
	rn_ph_sleep_ms(QUIET_MS);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_DROP), 0);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_DROP, 1);
	assert_true(rn_now_ms() - offered_at >= TIMEOUT_MS - 10);
	rn_ph_bay_free(h, true);
	expect_silence(h);
	expect_native(h, false, 0);
	assert_int_equal(plane_offers(h, 2), 2);
}

/* An ACCEPT of an offer given up: the peer's QP is connected to one that
 * is gone, so the endpoint fails and its connection closes. */
static void
test_late_accept(void **state)
{
	struct rn_ph_plane *h = *state;
	struct rn_ep_info info;
	uint16_t offer;

	rn_ph_peer_connect(h, CAPS, false);
	offer = plane_offers(h, 1);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_DROP, 1);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_ACCEPT, 0, offer);
	assert_true(rn_ph_wait_state(h, H_PEER_NAME, RN_EP_CLOSED));
	assert_true(rn_ph_info(h, H_PEER_NAME, &info));
	assert_non_null(strstr(info.last_error, "offer given up"));
	assert_int_equal(rn_ph_peer_recv(h, H_WAIT_MS), -1);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_CONNECT), 0);
	expect_cmds(h, RN_LCORE_CMD_EP_CLOSE, 1);
}

/* Idle -> opening -> connecting -> accepted -> idle: the peer offers. A
 * READY of another offer does not count. */
static void
test_peer_offer_accepted(void **state)
{
	struct rn_ph_plane *h = *state;

	rn_ph_peer_connect(h, CAPS, false);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_OFFER, 0, 9);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_OPEN, 1);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_CONNECT, 1);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_ACCEPT), 9);
	assert_int_equal(h->last.notify_qp.qp.qpn, 0x300);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_READY, 0, 8);
	rn_ph_sleep_ms(QUIET_MS);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_ENABLE), 0);
	expect_native(h, false, 0);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_READY, 0, 9);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_ENABLE, 1);
	expect_native(h, true, 1);
}

/* Accepted, and no READY in connect_timeout_ms: the endpoint fails. */
static void
test_no_ready(void **state)
{
	struct rn_ph_plane *h = *state;
	struct rn_ep_info info;

	rn_ph_peer_connect(h, CAPS, false);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_OFFER, 0, 4);
	rn_ph_expect_step(h, RN_NOTIFY_QP_ACCEPT);
	rn_ph_sleep_ms(QUIET_MS);
	assert_true(rn_ph_info(h, H_PEER_NAME, &info));
	assert_int_equal(info.state, RN_EP_CONNECTED);
	assert_true(rn_ph_wait_state(h, H_PEER_NAME, RN_EP_CLOSED));
	assert_true(rn_ph_info(h, H_PEER_NAME, &info));
	assert_non_null(strstr(info.last_error, "no READY"));
}

/* Our lcore has no bay for the peer's offer: REFUSE NO_ROOM, back idle. */
static void
test_peer_offer_no_room(void **state)
{
	struct rn_ph_plane *h = *state;

	h->notify_open_rc = -ENOSPC;
	rn_ph_peer_connect(h, CAPS, false);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_OFFER, 0, 3);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_REFUSE), 3);
	assert_int_equal(h->last.notify_qp.reason, RN_NOTIFY_QP_NO_ROOM);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_CONNECT), 0);
	/* Idle again: the next offer is taken. */
	h->notify_open_rc = 0;
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_OFFER, 0, 4);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_ACCEPT), 4);
}

/* Offers cross and ours goes first: the peer's is refused BUSY, ours goes
 * on when the peer accepts it. */
static void
test_crossing_ours_first(void **state)
{
	struct rn_ph_plane *h = *state;
	uint16_t offer;

	rn_ph_peer_connect(h, CAPS, false);
	offer = plane_offers(h, 1);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_OFFER, 0, 5);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_REFUSE), 5);
	assert_int_equal(h->last.notify_qp.reason, RN_NOTIFY_QP_BUSY);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_ACCEPT, 0, offer);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_READY), offer);
	expect_native(h, true, 1);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_OPEN), 1);
}

/* Offers cross and the peer's goes first: our open QP answers it (offered
 * -> connecting -> accepted), and the peer's BUSY for ours is ignored. */
static void
test_crossing_peers_first(void **state)
{
	struct rn_ph_plane *h = *state;
	uint16_t offer;

	rn_ph_peer_connect(h, CAPS, false);
	offer = plane_offers(h, 1);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_OFFER, 0, 5);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_ACCEPT), 5);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_REFUSE, RN_NOTIFY_QP_BUSY, offer);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_READY, 0, 5);
	expect_native(h, true, 1);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_OPEN), 1);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_DROP), 0);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_ENABLE, 1);
}

/* The peer's offer crosses ours while our QP is still opening: once open,
 * it answers the peer's offer and ours is never sent. */
static void
test_crossing_while_opening(void **state)
{
	struct rn_ph_plane *h = *state;

	rn_ph_peer_connect(h, CAPS, false);
	rn_ph_hold(h, RN_LCORE_CMD_NOTIFY_OPEN, true);
	rn_ph_bay_free(h, false);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_OPEN, 1);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_OFFER, 0, 6);
	expect_silence(h);
	rn_ph_hold(h, RN_LCORE_CMD_NOTIFY_OPEN, false);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_ACCEPT), 6);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_READY, 0, 6);
	expect_native(h, true, 1);
}

/* Adding one while one is being added: BUSY. Native already: BUSY. */
static void
test_busy_when_native(void **state)
{
	struct rn_ph_plane *h = *state;

	rn_ph_peer_connect(h, CAPS, false);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_OFFER, 0, 1);
	rn_ph_expect_step(h, RN_NOTIFY_QP_ACCEPT);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_OFFER, 0, 2);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_REFUSE), 2);
	assert_int_equal(h->last.notify_qp.reason, RN_NOTIFY_QP_BUSY);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_READY, 0, 1);
	expect_native(h, true, 1);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_OFFER, 0, 3);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_REFUSE), 3);
	assert_int_equal(h->last.notify_qp.reason, RN_NOTIFY_QP_BUSY);
}

/* With [notify] enabled = false every offer is refused DISABLED. */
static void
test_disabled_refuses(void **state)
{
	struct rn_ph_plane *h = *state;

	rn_ph_peer_connect(h, CAPS, false);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_OFFER, 0, 1);
	assert_int_equal(rn_ph_expect_step(h, RN_NOTIFY_QP_REFUSE), 1);
	assert_int_equal(h->last.notify_qp.reason, RN_NOTIFY_QP_DISABLED);
	rn_ph_bay_free(h, false);
	expect_silence(h);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_OPEN), 0);
}

/* Steps of another incarnation of the peer are ignored. */
static void
test_other_generation_ignored(void **state)
{
	struct rn_ph_plane *h = *state;

	rn_ph_peer_connect(h, CAPS, false);
	rn_ph_peer_send_step_of(h, H_PEER_GENERATION + 1, RN_NOTIFY_QP_OFFER, 0, 1);
	expect_silence(h);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_OPEN), 0);
}

/* Native, then the peer's notify QP fails (CLOSED): ours closes, the
 * endpoint stays connected, and a bay back adds a new channel. */
static void
test_closed_by_peer(void **state)
{
	struct rn_ph_plane *h = *state;
	uint16_t offer;

	rn_ph_peer_connect(h, CAPS, false);
	offer = plane_offers(h, 1);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_ACCEPT, 0, offer);
	rn_ph_expect_step(h, RN_NOTIFY_QP_READY);
	expect_native(h, true, 1);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_CLOSED, 0, 0);
	expect_cmds(h, RN_LCORE_CMD_NOTIFY_CLOSE, 1);
	expect_native(h, false, 1);
	offer = plane_offers(h, 2);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_ACCEPT, 0, offer);
	rn_ph_expect_step(h, RN_NOTIFY_QP_READY);
	expect_native(h, true, 2);
}

/* Native, then our notify QP fails: the peer is told CLOSED. A CLOSED
 * without a native channel changes nothing. */
static void
test_closed_locally(void **state)
{
	struct rn_ph_plane *h = *state;
	uint16_t offer;

	rn_ph_peer_connect(h, CAPS, false);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_CLOSED, 0, 0);
	offer = plane_offers(h, 1);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_CLOSE), 0);
	rn_ph_peer_send_step(h, RN_NOTIFY_QP_ACCEPT, 0, offer);
	rn_ph_expect_step(h, RN_NOTIFY_QP_READY);
	expect_native(h, true, 1);
	rn_ph_event(h, RN_LCORE_EVENT_NOTIFY_FAILED, 0x81,
		(uintptr_t)h->last_req);
	rn_ph_expect_step(h, RN_NOTIFY_QP_CLOSED);
	expect_native(h, false, 1);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_CLOSE), 0);
}

/* A handshake that gave both sides a notify QP is native at once. */
static void
test_native_at_handshake(void **state)
{
	struct rn_ph_plane *h = *state;

	rn_ph_peer_connect(h, CAPS, true);
	expect_native(h, true, 0);
	rn_ph_bay_free(h, false);
	expect_silence(h);
	assert_int_equal(rn_ph_cmd_count(h, RN_LCORE_CMD_NOTIFY_OPEN), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_our_offer_accepted, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_refused_disabled, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_refused_no_room, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_refused_busy, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_no_answer, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_late_accept, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_peer_offer_accepted, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_no_ready, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_peer_offer_no_room, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_crossing_ours_first, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_crossing_peers_first, setup_z, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_crossing_while_opening, setup_z, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_busy_when_native, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_disabled_refuses, setup_off, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_other_generation_ignored, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_closed_by_peer, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_closed_locally, setup_a, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_native_at_handshake, setup_a, rn_ph_teardown),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	rte_eal_cleanup();
	return failed;
}
