/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lcore engine: the native channel's states (enum rn_channel_state),
 * every transition and the failures, and the send window and credits on
 * the send path. Two lcores (A and B), each with a sim device, one
 * endpoint between them; the test turns their loops by hand and stands in
 * for the control thread (commands, events) and the application (requests,
 * deliveries, releases). Nothing in the engine is faked: the rings and the
 * sim NIC are the boundary.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_eal.h>
#include <rte_malloc.h>

#include "lcore_pvt.h"
#include "rn_client_region.h"
#include "rn_lcore_client.h"
#include "rn_notify_engine.h"
#include "rn_cq.h"
#include "rn_sq.h"
#include "rn_test_seed.h"

#define SLOTS 8                  /* receive slots: credits and window */
#define SLOT_SIZE 256
#define WAIT_MS 3000

struct side {
	struct rn_lcore *lc;
	struct rn_ep_request req;
	struct rte_ring *completions;
};

static struct side A, B;
static void clients_down(void);
static struct rte_ring *events;
static int wake_fd;
static struct rn_lcore_event seen[256];
static unsigned int n_seen;

/* The [notify] and [nic] settings of the next lcores (lcore_up()). */
struct deep_cfg {
	uint32_t slots, slot_size, max_inline, cq_size;   /* cq_size 0: its
							    * default */
};
#define DEEP_DEFAULT ((struct deep_cfg){ SLOTS, SLOT_SIZE, 64, 0 })
static struct deep_cfg deep = DEEP_DEFAULT;

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One turn of an lcore's loop, as lcore_loop.c makes it, less commands:
 * the test hands those over itself. */
static void
turn(struct rn_lcore *lc, bool poll_cqs)
{
	rn_nic_progress(lc->nic);
	for (uint32_t c = 0; poll_cqs && c < lc->n_cqs; c++) {
		struct rn_wc wc[RN_LCORE_BURST];
		unsigned int n = rn_cq_poll(&lc->cqs[c].cq, wc, RN_LCORE_BURST);

		for (unsigned int i = 0; i < n; i++)
			rn_lcore_ep_completion(lc, &wc[i]);
	}
	rn_lcore_notify_poll(lc);
	if (lc->n_clients != 0)
		rn_lcore_client_poll(lc);
	if (lc->closing != NULL)
		rn_lcore_ep_reap(lc);
	if (lc->channels_failed != 0)
		rn_lcore_channel_reap(lc);
	for (;;) {
		struct rn_lcore_event ev;

		if (rte_ring_sc_dequeue_elem(events, &ev, sizeof(ev)) != 0)
			break;
		assert_true(n_seen < RTE_DIM(seen));
		seen[n_seen++] = ev;
	}
}

static void
turn_both(void)
{
	turn(A.lc, true);
	turn(B.lc, true);
}

/* Turn both loops until an event of type about req (NULL: any cookie) came,
 * and take it; its arg. Fails after WAIT_MS. */
static int32_t
wait_event(uint16_t type, const struct rn_ep_request *req)
{
	uint64_t until = now_ms() + WAIT_MS;

	for (;;) {
		for (unsigned int i = 0; i < n_seen; i++) {
			if (seen[i].type != type ||
			    (req != NULL && seen[i].cookie != (uintptr_t)req))
				continue;
			int32_t arg = seen[i].arg;

			memmove(&seen[i], &seen[i + 1],
				(n_seen - i - 1) * sizeof(seen[0]));
			n_seen--;
			return arg;
		}
		if (now_ms() > until)
			fail_msg("no event %u within %u ms", type, WAIT_MS);
		turn_both();
	}
}

static bool
has_event(uint16_t type)
{
	for (unsigned int i = 0; i < n_seen; i++)
		if (seen[i].type == type)
			return true;
	return false;
}

static void
command(struct side *s, uint32_t type)
{
	struct rn_lcore_cmd cmd = { .type = type, .cookie = (uintptr_t)&s->req };

	rn_lcore_ep_command(s->lc, &cmd);
}

static struct rn_lcore_ep *
ep_of(const struct side *s)
{
	return s->req.ep;
}

static enum rn_channel_state
state_of(const struct side *s)
{
	return (enum rn_channel_state)ep_of(s)->n.state;
}

#define assert_state(s, want) do { \
	enum rn_channel_state got_ = state_of(s); \
	if (got_ != (want)) \
		fail_msg("%s: channel %s, want %s", (s) == &A ? "A" : "B", \
			 rn_channel_state_name(got_), \
			 rn_channel_state_name(want)); \
} while (0)

/* Turn the loops until s's channel is in state want. */
static void
wait_state(const struct side *s, enum rn_channel_state want)
{
	uint64_t until = now_ms() + WAIT_MS;

	while (state_of(s) != want && now_ms() < until)
		turn_both();
	assert_state(s, want);
}

static void
lcore_up(struct side *s, unsigned int id, bool fallback)
{
	struct rn_config cfg;
	char why[256] = "";
	char name[32];

	rn_config_defaults(&cfg);
	cfg.nic.provider = RN_NIC_SIM;
	snprintf(cfg.control.listen, sizeof(cfg.control.listen), "127.0.0.1");
	cfg.notify.enabled = true;
	cfg.notify.oob_fallback = fallback;
	cfg.notify.slots = deep.slots;
	cfg.notify.slot_size = deep.slot_size;
	cfg.notify.max_inline = deep.max_inline;
	cfg.notify.endpoints_per_lcore = 1;
	if (deep.cq_size != 0)
		cfg.nic.cq_size = deep.cq_size;
	s->lc = rte_zmalloc("test_lcore", sizeof(*s->lc), RTE_CACHE_LINE_SIZE);
	assert_non_null(s->lc);
	if (rn_lcore_init(s->lc, id, &cfg, events, wake_fd, why,
			  sizeof(why)) != 0)
		fail_msg("rn_lcore_init: %s", why);
	snprintf(name, sizeof(name), "test_cmpl_%u", id);
	s->completions = rte_ring_create_elem(name,
		sizeof(struct rn_notify_event), 1024, SOCKET_ID_ANY,
		RING_F_SC_DEQ);
	assert_non_null(s->completions);
	s->lc->notify_completions = s->completions;
	s->req = (struct rn_ep_request){
		.ep_index = 3 + id, .n_data_qps = 1, .notify = true,
		.notify_depth = deep.slots, .notify_slot_size = deep.slot_size,
		.qp_timeout = 14, .qp_retry_cnt = 7,
		.local = { .session_id = 100 + id, .generation = 1 },
		.peer_tag = 0x7a60 + id,
	};
	snprintf(s->req.local.name, sizeof(s->req.local.name), "%s",
		 id == 0 ? "a" : "b");
}

static int
setup(void **state)
{
	(void)state;
	n_seen = 0;
	lcore_up(&A, 0, false);
	lcore_up(&B, 1, false);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	rn_lcore_fini(A.lc);
	rn_lcore_fini(B.lc);
	rte_ring_free(A.completions);
	rte_ring_free(B.completions);
	rte_free(A.lc);
	rte_free(B.lc);
	clients_down();
	return 0;
}

/* Endpoints opened (with a channel if notify) and connected toward each
 * other, as the handshake does. */
static void
open_one(struct side *s, bool notify)
{
	s->req.notify = notify;
	command(s, RN_LCORE_CMD_EP_OPEN);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_OPENED, &s->req), 0);
}

static void
connect_both(void)
{
	A.req.remote = B.req.local;
	B.req.remote = A.req.local;
	command(&A, RN_LCORE_CMD_EP_CONNECT);
	command(&B, RN_LCORE_CMD_EP_CONNECT);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_CONNECTED, &A.req), 0);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_CONNECTED, &B.req), 0);
}

static void
open_pair(bool notify_a, bool notify_b)
{
	open_one(&A, notify_a);
	open_one(&B, notify_b);
	connect_both();
}

/* The add-a-channel protocol on both sides, as channel_add.c drives it, up to
 * CONNECTED: OPEN each, the QP records exchanged, CONNECT each. */
static void
add_channels_connected(void)
{
	command(&A, RN_LCORE_CMD_NOTIFY_OPEN);
	command(&B, RN_LCORE_CMD_NOTIFY_OPEN);
	assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_OPENED, &A.req), 0);
	assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_OPENED, &B.req), 0);
	assert_state(&A, RN_CHANNEL_OPEN);
	assert_state(&B, RN_CHANNEL_OPEN);
	A.req.remote.qps[A.req.remote.n_qps++] =
		B.req.local.qps[B.req.local.n_qps - 1];
	B.req.remote.qps[B.req.remote.n_qps++] =
		A.req.local.qps[A.req.local.n_qps - 1];
	command(&A, RN_LCORE_CMD_NOTIFY_CONNECT);
	command(&B, RN_LCORE_CMD_NOTIFY_CONNECT);
	assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_CONNECTED, &A.req),
			 0);
	assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_CONNECTED, &B.req),
			 0);
	assert_state(&A, RN_CHANNEL_CONNECTED);
	assert_state(&B, RN_CHANNEL_CONNECTED);
}

static void
add_channels(void)
{
	add_channels_connected();
	command(&A, RN_LCORE_CMD_NOTIFY_ENABLE);
	command(&B, RN_LCORE_CMD_NOTIFY_ENABLE);
	assert_state(&A, RN_CHANNEL_NATIVE);
	assert_state(&B, RN_CHANNEL_NATIVE);
}

/* Hand req to s's lcore as rn_notify_submit() does, and let it take it:
 * the answer. */
static int
submit(struct side *s, struct rn_notify_request *req)
{
	struct rn_notify_request *p = req;

	req->ep_index = s->req.ep_index;
	req->result = RN_NOTIFY_PENDING;
	assert_int_equal(rte_ring_mp_enqueue(s->lc->notify_requests, p), 0);
	rn_lcore_notify_poll(s->lc);
	assert_true(req->result != RN_NOTIFY_PENDING);
	return (int)req->result;
}

/* Hand one notification to s's lcore as rn_notify_send() does: the answer
 * (1 sent, or -errno). */
static int
send_note(struct side *s, uint32_t flags, uint64_t cookie, const char *msg)
{
	struct rn_notify_out out = { .name = "t", .name_len = 1, .msg = msg,
				     .msg_len = (uint32_t)strlen(msg),
				     .cookie = cookie };
	struct rn_notify_request req = { .flags = flags, .out = &out,
					 .count = 1 };

	return submit(s, &req);
}

/* Have s's lcore make fault as rn_notify_diag.h does: the answer (1 made,
 * or -errno). */
static int
make_fault(struct side *s, enum rn_notify_fault fault)
{
	struct rn_notify_request req = { .fault = fault };

	return submit(s, &req);
}

/* Turn the loops until s's lcore delivered want notifications in all (into
 * d), each frame checked against msgs. */
static void
receive_notes(struct side *s, struct rn_notify_delivery *d, unsigned int want,
	      char msgs[][16])
{
	uint64_t until = now_ms() + WAIT_MS;
	unsigned int got = 0;

	while (got < want && now_ms() < until) {
		turn_both();
		got += rte_ring_sc_dequeue_burst_elem(s->lc->notify_deliveries,
						      &d[got], sizeof(d[0]),
						      want - got, NULL);
	}
	assert_int_equal(got, want);
	for (unsigned int i = 0; i < want; i++) {
		const struct rn_lcore_ep *ep = d[i].owner;
		struct rn_notify_view v;

		assert_ptr_equal(ep, ep_of(s));
		assert_int_equal(rn_notify_frame_read(
				 rn_lcore_ep_recv_slot(ep, d[i].index),
				 d[i].len, &v), 0);
		assert_int_equal(v.msg_len, strlen(msgs[i]));
		assert_memory_equal(v.msg, msgs[i], v.msg_len);
	}
}

static void
release(struct side *s, struct rn_notify_delivery *d)
{
	assert_int_equal(rte_ring_sp_enqueue_elem(s->lc->notify_releases, d,
						  sizeof(*d)), 0);
}

/* ---- the state table ---- */

static void
test_state_table(void **state)
{
	/* Every allowed transition, and nothing else (from x to). */
	static const bool want[RN_CHANNEL_STATES][RN_CHANNEL_STATES] = {
		[RN_CHANNEL_NONE][RN_CHANNEL_OPEN] = true,
		[RN_CHANNEL_OPEN][RN_CHANNEL_NONE] = true,
		[RN_CHANNEL_OPEN][RN_CHANNEL_CONNECTED] = true,
		[RN_CHANNEL_OPEN][RN_CHANNEL_DRAINING] = true,
		[RN_CHANNEL_CONNECTED][RN_CHANNEL_NATIVE] = true,
		[RN_CHANNEL_CONNECTED][RN_CHANNEL_DRAINING] = true,
		[RN_CHANNEL_NATIVE][RN_CHANNEL_DRAINING] = true,
		[RN_CHANNEL_DRAINING][RN_CHANNEL_NONE] = true,
	};
	static const char *const names[] = { "none", "open", "connected",
					     "native", "draining" };

	(void)state;
	for (unsigned int f = 0; f < RN_CHANNEL_STATES; f++)
		for (unsigned int t = 0; t < RN_CHANNEL_STATES; t++)
			if (rn_channel_can_enter(f, t) != want[f][t])
				fail_msg("%s -> %s: allowed %d, want %d",
					 names[f], names[t],
					 rn_channel_can_enter(f, t), want[f][t]);
	for (unsigned int s = 0; s < RN_CHANNEL_STATES; s++)
		assert_string_equal(rn_channel_state_name(s), names[s]);
	assert_string_equal(rn_channel_state_name(RN_CHANNEL_STATES), "?");
	assert_false(rn_channel_can_enter(RN_CHANNEL_STATES, RN_CHANNEL_NONE));
}

/* ---- with the endpoint: NONE -> OPEN -> CONNECTED -> NATIVE ---- */

static void
test_handshake_channel_goes_native(void **state)
{
	struct rn_notify_delivery d[1];
	char msgs[1][16] = { "hello" };

	(void)state;
	open_one(&A, true);
	assert_state(&A, RN_CHANNEL_OPEN);
	assert_int_equal(A.req.local.n_qps, 2);
	assert_int_equal(A.req.local.qps[1].kind, RN_EP_QP_NOTIFY);
	assert_int_equal(A.req.local.qps[1].credits, SLOTS);
	assert_false(rn_notify_bay_available(&A.lc->notify));
	open_one(&B, true);
	connect_both();
	assert_state(&A, RN_CHANNEL_NATIVE);
	assert_state(&B, RN_CHANNEL_NATIVE);
	assert_ptr_equal(A.lc->by_index[A.req.ep_index], ep_of(&A));
	assert_int_equal(ep_of(&A)->n.max_frame, SLOT_SIZE);
	assert_int_equal(send_note(&A, 0, 0, msgs[0]), 1);
	receive_notes(&B, d, 1, msgs);
	assert_int_equal(B.lc->stats.notify_received, 1);
}

/* OPEN -> NONE: the peer has no notify QP; the bay comes back, said. */
static void
test_peer_without_channel_drops_it(void **state)
{
	(void)state;
	open_pair(true, false);
	assert_state(&A, RN_CHANNEL_NONE);
	assert_state(&B, RN_CHANNEL_NONE);
	assert_null(ep_of(&A)->n.qp);
	assert_int_equal(ep_of(&A)->n_qps, 1);
	assert_int_equal(A.req.local.n_qps, 1);
	assert_int_equal(A.lc->stats.qps, 1);
	assert_true(rn_notify_bay_available(&A.lc->notify));
	assert_int_equal(wait_event(RN_LCORE_EVENT_BAY_FREE, NULL), 0);
	/* Connected all the same, without a native channel. */
	assert_ptr_equal(A.lc->by_index[A.req.ep_index], ep_of(&A));
	assert_int_equal(send_note(&A, 0, 0, "x"), -ENOTSUP);
}

/* ---- added to a connected endpoint, step by step ---- */

static void
test_added_channel_sends_only_once_enabled(void **state)
{
	struct rn_notify_delivery d[1];
	char msgs[1][16] = { "late" };

	(void)state;
	open_pair(false, false);
	assert_state(&A, RN_CHANNEL_NONE);
	add_channels_connected();
	/* CONNECTED: its receives are posted, the peer's credits known, but
	 * it does not send: the peer's QP may not be ready. */
	assert_int_equal(ep_of(&A)->n.sends.allowed, SLOTS);
	assert_int_equal(ep_of(&A)->n.max_frame, 0);
	assert_int_equal(send_note(&A, 0, 0, "early"), -ENOTSUP);
	/* A second CONNECT is refused; a DROP after CONNECT is ignored. */
	command(&A, RN_LCORE_CMD_NOTIFY_CONNECT);
	assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_CONNECTED, &A.req),
			 -EINVAL);
	command(&A, RN_LCORE_CMD_NOTIFY_DROP);
	assert_state(&A, RN_CHANNEL_CONNECTED);
	command(&A, RN_LCORE_CMD_NOTIFY_ENABLE);
	command(&B, RN_LCORE_CMD_NOTIFY_ENABLE);
	assert_state(&A, RN_CHANNEL_NATIVE);
	/* ENABLE again changes nothing. */
	command(&A, RN_LCORE_CMD_NOTIFY_ENABLE);
	assert_state(&A, RN_CHANNEL_NATIVE);
	assert_int_equal(send_note(&A, 0, 0, msgs[0]), 1);
	receive_notes(&B, d, 1, msgs);
}

/* OPEN -> NONE: an offer refused (NOTIFY_DROP); BAY_FREE says after_drop. */
static void
test_refused_offer_drops_the_channel(void **state)
{
	(void)state;
	open_pair(false, false);
	command(&A, RN_LCORE_CMD_NOTIFY_OPEN);
	assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_OPENED, &A.req), 0);
	assert_state(&A, RN_CHANNEL_OPEN);
	assert_int_equal(A.lc->stats.qps, 2);
	/* Not connected: ENABLE does nothing. */
	command(&A, RN_LCORE_CMD_NOTIFY_ENABLE);
	assert_state(&A, RN_CHANNEL_OPEN);
	command(&A, RN_LCORE_CMD_NOTIFY_DROP);
	assert_state(&A, RN_CHANNEL_NONE);
	assert_int_equal(A.lc->stats.qps, 1);
	assert_int_equal(A.req.local.n_qps, 1);
	assert_int_equal(wait_event(RN_LCORE_EVENT_BAY_FREE, NULL), 1);
	/* Offered again: the same steps work. */
	command(&A, RN_LCORE_CMD_NOTIFY_OPEN);
	assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_OPENED, &A.req), 0);
	assert_state(&A, RN_CHANNEL_OPEN);
}

/* A failed open stays NONE: no bay, already open, no endpoint. */
static void
test_open_refusals_stay_none(void **state)
{
	struct rn_ep_request other;

	(void)state;
	open_pair(false, false);
	command(&A, RN_LCORE_CMD_NOTIFY_OPEN);
	assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_OPENED, &A.req), 0);
	command(&A, RN_LCORE_CMD_NOTIFY_OPEN);
	assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_OPENED, &A.req),
			 -EALREADY);
	assert_state(&A, RN_CHANNEL_OPEN);
	/* A second endpoint on A finds its only bay taken. */
	other = A.req;
	other.ep_index = 9;
	other.local.generation = 7;
	other.ep = NULL;
	{
		struct rn_lcore_cmd cmd = { .type = RN_LCORE_CMD_EP_OPEN,
					    .cookie = (uintptr_t)&other };

		rn_lcore_ep_command(A.lc, &cmd);
		assert_int_equal(wait_event(RN_LCORE_EVENT_EP_OPENED, &other),
				 0);
		assert_int_equal(other.ep->n.state, RN_CHANNEL_NONE);
		cmd.type = RN_LCORE_CMD_NOTIFY_OPEN;
		rn_lcore_ep_command(A.lc, &cmd);
		assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_OPENED,
					    &other), -ENOSPC);
		assert_int_equal(other.ep->n.state, RN_CHANNEL_NONE);
		assert_int_equal(other.n_data_qps + 0u, other.local.n_qps);
		cmd.type = RN_LCORE_CMD_EP_CLOSE;
		rn_lcore_ep_command(A.lc, &cmd);
		assert_int_equal(wait_event(RN_LCORE_EVENT_EP_CLOSED, &other),
				 0);
		/* Closed: no endpoint to add one to. */
		cmd.type = RN_LCORE_CMD_NOTIFY_OPEN;
		rn_lcore_ep_command(A.lc, &cmd);
		assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_OPENED,
					    &other), -ENOTCONN);
	}
}

/* OPEN, CONNECTED, NATIVE -> DRAINING when the peer's QP failed
 * (NOTIFY_CLOSE); then DRAINING -> NONE once drained, the bay back. */
static void
peer_closed_from(enum rn_channel_state from)
{
	open_pair(false, false);
	if (from == RN_CHANNEL_OPEN) {
		command(&A, RN_LCORE_CMD_NOTIFY_OPEN);
		assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_OPENED,
					    &A.req), 0);
	} else if (from == RN_CHANNEL_CONNECTED) {
		add_channels_connected();
	} else {
		add_channels();
	}
	assert_state(&A, from);
	assert_true(A.lc->channels_failed == 0);
	command(&A, RN_LCORE_CMD_NOTIFY_CLOSE);
	assert_state(&A, RN_CHANNEL_DRAINING);
	assert_int_equal(A.lc->channels_failed, 1);
	assert_int_equal(ep_of(&A)->n.max_frame, 0);
	assert_int_equal(send_note(&A, 0, 0, "x"), -EPIPE);
	/* Once more: nothing changes. */
	command(&A, RN_LCORE_CMD_NOTIFY_CLOSE);
	assert_int_equal(A.lc->channels_failed, 1);
	wait_state(&A, RN_CHANNEL_NONE);
	assert_int_equal(A.lc->channels_failed, 0);
	assert_null(ep_of(&A)->n.qp);
	assert_true(rn_notify_bay_available(&A.lc->notify));
	assert_int_equal(wait_event(RN_LCORE_EVENT_BAY_FREE, NULL), 0);
	/* The endpoint is fine, only without its channel. */
	assert_false(ep_of(&A)->failed);
	assert_ptr_equal(A.lc->by_index[A.req.ep_index], ep_of(&A));
	assert_int_equal(send_note(&A, 0, 0, "x"), -ENOTSUP);
}

static void
test_peer_closed_when_open(void **state)
{
	(void)state;
	peer_closed_from(RN_CHANNEL_OPEN);
}

static void
test_peer_closed_when_connected(void **state)
{
	(void)state;
	peer_closed_from(RN_CHANNEL_CONNECTED);
}

static void
test_peer_closed_when_native(void **state)
{
	(void)state;
	peer_closed_from(RN_CHANNEL_NATIVE);
}

/* NATIVE -> DRAINING on a local fault: NOTIFY_FAILED to the control
 * thread, data QPs untouched; each side retires; a channel added again
 * starts with fresh credits (the old credit word is no credit). */
static void
test_local_fault_retires_and_a_new_channel_starts_afresh(void **state)
{
	struct rn_notify_delivery d[SLOTS];
	char msgs[SLOTS][16];
	int32_t syndrome;
	uint64_t until;

	(void)state;
	open_pair(true, true);
	assert_state(&A, RN_CHANNEL_NATIVE);
	/* A window's worth, all released: B's credit word tells A SLOTS. */
	for (unsigned int i = 0; i < SLOTS; i++) {
		snprintf(msgs[i], sizeof(msgs[i]), "m%u", i);
		assert_int_equal(send_note(&A, 0, 0, msgs[i]), 1);
	}
	receive_notes(&B, d, SLOTS, msgs);
	for (unsigned int i = 0; i < SLOTS; i++)
		release(&B, &d[i]);
	turn_both();
	turn_both();
	assert_true(B.lc->stats.credit_writes >= 1);

	assert_int_equal(make_fault(&A, RN_NOTIFY_FAULT_LOCAL), 1);
	syndrome = wait_event(RN_LCORE_EVENT_NOTIFY_FAILED, &A.req);
	assert_true(syndrome == MLX5_CQE_SYNDROME_LOCAL_PROT_ERR ||
		    syndrome == MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR ||
		    syndrome == MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR ||
		    syndrome == MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR);
	/* DRAINING, and maybe retired already: its QP drains at once. */
	assert_true(state_of(&A) == RN_CHANNEL_DRAINING ||
		    state_of(&A) == RN_CHANNEL_NONE);
	assert_int_equal(ep_of(&A)->n.max_frame, 0);
	assert_false(ep_of(&A)->failed);
	assert_false(has_event(RN_LCORE_EVENT_EP_FAILED));
	/* The control thread tells B (channel_add.c's CLOSED). */
	command(&B, RN_LCORE_CMD_NOTIFY_CLOSE);
	assert_state(&B, RN_CHANNEL_DRAINING);
	wait_state(&A, RN_CHANNEL_NONE);
	wait_state(&B, RN_CHANNEL_NONE);
	assert_int_equal(ep_of(&A)->natives_posted, SLOTS);
	assert_int_equal(ep_of(&B)->natives_received, SLOTS);
	assert_false(has_event(RN_LCORE_EVENT_EP_FAILED));

	/* A new channel: A may send exactly SLOTS before B reposts, even
	 * once the CQEs freed every window entry. */
	A.req.remote.n_qps = 1;
	B.req.remote.n_qps = 1;
	add_channels();
	for (unsigned int i = 0; i < SLOTS; i++)
		assert_int_equal(send_note(&A, 0, 0, msgs[i]), 1);
	receive_notes(&B, d, SLOTS, msgs);
	until = now_ms() + WAIT_MS;
	while (rn_send_window_used(&ep_of(&A)->n.sends) != 0 &&
	       now_ms() < until)
		turn_both();
	assert_int_equal(rn_send_window_used(&ep_of(&A)->n.sends), 0);
	assert_int_equal(send_note(&A, 0, 0, "one too many"), -EAGAIN);
	assert_int_equal(d[0].pos, SLOTS);   /* counts carried over */
}

/* A stopped channel keeps its bay while the application holds a slot. */
static void
test_held_delivery_delays_retirement(void **state)
{
	struct rn_notify_delivery d[1];
	char msgs[1][16] = { "held" };
	uint64_t until;

	(void)state;
	open_pair(true, true);
	assert_int_equal(send_note(&A, 0, 0, msgs[0]), 1);
	receive_notes(&B, d, 1, msgs);
	command(&B, RN_LCORE_CMD_NOTIFY_CLOSE);
	until = now_ms() + 50;
	while (now_ms() < until)
		turn_both();
	assert_state(&B, RN_CHANNEL_DRAINING);
	assert_int_equal(ep_of(&B)->n.held, 1);
	release(&B, &d[0]);
	wait_state(&B, RN_CHANNEL_NONE);
	/* Released after the stop: counted, not reposted. */
	assert_int_equal(ep_of(&B)->n.held, 0);
}

/* Turn the loops until s's lcore kept want early receives. */
static void
wait_early(const struct side *s, uint64_t want)
{
	uint64_t until = now_ms() + WAIT_MS;

	while (s->lc->stats.notify_early < want && now_ms() < until)
		turn_both();
	if (s->lc->stats.notify_early != want)
		fail_msg("early receives %" PRIu64 ", want %" PRIu64
			 " (received %" PRIu64 ")", s->lc->stats.notify_early,
			 want, s->lc->stats.notify_received);
}

/*
 * An endpoint that defers its deliveries (the control thread's, until the
 * handshake ended on its side too) delivers nothing until EP_DELIVER,
 * then its early receives, in the order they came, and what comes after
 * at once. The callee of a handshake: it must take a send back to the
 * peer before it hands the application anything of the peer's.
 */
static void
test_early_receives_wait_for_deliver(void **state)
{
	struct rn_notify_delivery d[4], back[1];
	char msgs[4][16] = { "one", "two", "three", "four" };
	char answer[1][16] = { "back" };

	(void)state;
	B.req.defer_deliveries = true;
	open_pair(true, true);
	assert_state(&B, RN_CHANNEL_NATIVE);
	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(send_note(&A, 0, 0, msgs[i]), 1);
	wait_early(&B, 3);
	for (unsigned int i = 0; i < 20; i++)
		turn_both();
	assert_int_equal(rte_ring_count(B.lc->notify_deliveries), 0);
	assert_int_equal(B.lc->stats.notify_received, 0);
	assert_int_equal(ep_of(&B)->n.held, 0);
	command(&B, RN_LCORE_CMD_EP_DELIVER);
	receive_notes(&B, d, 3, msgs);
	assert_int_equal(B.lc->stats.notify_received, 3);
	/* Their places in send order are those they arrived in. */
	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(d[i].pos, i);
	assert_int_equal(send_note(&A, 0, 0, msgs[3]), 1);
	receive_notes(&B, &d[3], 1, &msgs[3]);
	assert_int_equal(d[3].pos, 3);
	assert_int_equal(B.lc->stats.notify_early, 3);
	/* A's, which never deferred, kept none. */
	assert_int_equal(send_note(&B, 0, 0, answer[0]), 1);
	receive_notes(&A, back, 1, answer);
	assert_int_equal(A.lc->stats.notify_early, 0);
	release(&A, &back[0]);
	for (unsigned int i = 0; i < 4; i++)
		release(&B, &d[i]);
}

/*
 * A channel that stops before EP_DELIVER (a local fault of its QP) keeps
 * its early receives' slots: it retires only once they were delivered and
 * given back.
 */
static void
test_early_receives_outlive_a_stopped_channel(void **state)
{
	struct rn_notify_delivery d[1];
	char msgs[1][16] = { "kept" };
	uint64_t until;

	(void)state;
	B.req.defer_deliveries = true;
	open_pair(true, true);
	assert_int_equal(send_note(&A, 0, 0, msgs[0]), 1);
	wait_early(&B, 1);
	assert_int_equal(make_fault(&B, RN_NOTIFY_FAULT_LOCAL), 1);
	(void)wait_event(RN_LCORE_EVENT_NOTIFY_FAILED, &B.req);
	/* Drained at once, reaped once a millisecond: it would have gone. */
	until = now_ms() + 50;
	while (now_ms() < until)
		turn_both();
	assert_state(&B, RN_CHANNEL_DRAINING);
	assert_int_equal(rte_ring_count(B.lc->notify_deliveries), 0);
	command(&B, RN_LCORE_CMD_EP_DELIVER);
	receive_notes(&B, d, 1, msgs);
	assert_int_equal(B.lc->stats.notify_early_lost, 0);
	release(&B, &d[0]);
	wait_state(&B, RN_CHANNEL_NONE);
	assert_int_equal(ep_of(&B)->n.held, 0);
}

/* The error classes of a notify QP's CQE (rn_lcore_channel_error()). */
static void
test_error_completions(void **state)
{
	struct rn_lcore_ep *ep;
	struct rn_wc wc;
	uint64_t stale;

	(void)state;
	open_pair(true, true);
	ep = ep_of(&A);
	wc = (struct rn_wc){ .qp = ep->n.qp,
			     .wr_id = RN_EP_WR_ID(2, RN_EP_WR_SEND, 0),
			     .status = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR };
	/* Another generation's: counted, nothing else. */
	stale = A.lc->stats.notify_stale;
	assert_false(rn_lcore_channel_error(A.lc, ep, &wc));
	assert_int_equal(A.lc->stats.notify_stale, stale + 1);
	assert_state(&A, RN_CHANNEL_NATIVE);
	/* A flush: nothing. */
	wc.wr_id = RN_EP_WR_ID(1, RN_EP_WR_RECV, 0);
	wc.status = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
	assert_false(rn_lcore_channel_error(A.lc, ep, &wc));
	assert_state(&A, RN_CHANNEL_NATIVE);
	/* The peer's or the path's fault: the endpoint's. */
	wc.status = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	assert_true(rn_lcore_channel_error(A.lc, ep, &wc));
	wc.status = MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;
	assert_true(rn_lcore_channel_error(A.lc, ep, &wc));
	assert_state(&A, RN_CHANNEL_NATIVE);
	/* Ours alone: the channel stops, once. */
	wc.status = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
	assert_false(rn_lcore_channel_error(A.lc, ep, &wc));
	assert_state(&A, RN_CHANNEL_DRAINING);
	assert_int_equal(wait_event(RN_LCORE_EVENT_NOTIFY_FAILED, &A.req),
			 MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	wc.status = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	assert_false(rn_lcore_channel_error(A.lc, ep, &wc));
	assert_int_equal(A.lc->channels_failed, 1);
}

/* ---- the send window and credits ---- */

/* Credits: SLOTS SENDs, then -EAGAIN until the receiver reposted half of
 * them (one credit WRITE), then that many more; released in a random
 * order (seeded, printed), every slot reused with its new frame intact. */
static void
test_credits_bound_the_sender(void **state)
{
	struct rn_notify_delivery d[SLOTS], e[SLOTS / 2];
	char msgs[SLOTS][16], more[SLOTS / 2][16];
	uint64_t writes;

	(void)state;
	srand(rn_test_seed(__func__, 1));
	open_pair(true, true);
	for (unsigned int i = 0; i < SLOTS; i++) {
		snprintf(msgs[i], sizeof(msgs[i]), "n%u", i);
		assert_int_equal(send_note(&A, 0, 0, msgs[i]), 1);
	}
	assert_int_equal(send_note(&A, 0, 0, "no credit"), -EAGAIN);
	receive_notes(&B, d, SLOTS, msgs);
	for (unsigned int i = SLOTS - 1; i > 0; i--) {
		unsigned int j = (unsigned int)rand() % (i + 1);
		struct rn_notify_delivery t = d[i];

		d[i] = d[j];
		d[j] = t;
	}
	/* One short of the threshold: no credit WRITE, A still waits. */
	writes = B.lc->stats.credit_writes;
	for (unsigned int i = 0; i < SLOTS / 2 - 1; i++)
		release(&B, &d[i]);
	for (int i = 0; i < 20; i++)
		turn_both();
	assert_int_equal(B.lc->stats.credit_writes, writes);
	assert_int_equal(send_note(&A, 0, 0, "no credit"), -EAGAIN);
	/* The threshold: one WRITE of the count, SLOTS / 2 more may go. */
	release(&B, &d[SLOTS / 2 - 1]);
	for (int i = 0; i < 20; i++)
		turn_both();
	assert_int_equal(B.lc->stats.credit_writes, writes + 1);
	for (unsigned int i = 0; i < SLOTS / 2; i++) {
		snprintf(more[i], sizeof(more[i]), "again%u", i);
		assert_int_equal(send_note(&A, 0, 0, more[i]), 1);
	}
	assert_int_equal(send_note(&A, 0, 0, "no credit"), -EAGAIN);
	receive_notes(&B, e, SLOTS / 2, more);
	assert_int_equal(A.lc->stats.notify_sent, SLOTS + SLOTS / 2);
}

/* The window: with credits to spare, SENDs still wait for the CQEs that
 * free their entries. */
static void
test_window_entries_wait_for_completions(void **state)
{
	struct rn_notify_delivery d[SLOTS];
	char msgs[SLOTS][16];
	struct rn_lcore_ep *ep;
	uint64_t until;

	(void)state;
	open_pair(true, true);
	ep = ep_of(&A);
	for (unsigned int i = 0; i < SLOTS; i++) {
		snprintf(msgs[i], sizeof(msgs[i]), "w%u", i);
		assert_int_equal(send_note(&A, 0, 0, msgs[i]), 1);
	}
	assert_int_equal(rn_send_window_used(&ep->n.sends), SLOTS);
	/* B takes them all and gives every slot back; A's NIC runs (the
	 * credit WRITE lands) but its CQ is not polled. */
	until = now_ms() + WAIT_MS;
	for (unsigned int got = 0; got < SLOTS && now_ms() < until;) {
		turn(A.lc, false);
		turn(B.lc, true);
		got += rte_ring_sc_dequeue_burst_elem(B.lc->notify_deliveries,
						      &d[got], sizeof(d[0]),
						      SLOTS - got, NULL);
	}
	for (unsigned int i = 0; i < SLOTS; i++)
		release(&B, &d[i]);
	until = now_ms() + WAIT_MS;
	while (__atomic_load_n((uint32_t *)&ep->probe[EP_PROBE_CREDITS],
			       __ATOMIC_ACQUIRE) != SLOTS && now_ms() < until) {
		turn(A.lc, false);
		turn(B.lc, true);
	}
	assert_int_equal(__atomic_load_n(
		(uint32_t *)&ep->probe[EP_PROBE_CREDITS], __ATOMIC_ACQUIRE),
		SLOTS);
	/* Credits for SLOTS more, but every entry is still taken. */
	assert_int_equal(send_note(&A, 0, 0, "no entry"), -EAGAIN);
	assert_int_equal(ep->n.sends.allowed, 2 * SLOTS);
	/* The CQEs (every SLOTS / 2-th SEND signalled) free them. */
	until = now_ms() + WAIT_MS;
	while (rn_send_window_used(&ep->n.sends) != 0 && now_ms() < until)
		turn_both();
	assert_int_equal(rn_send_window_used(&ep->n.sends), 0);
	assert_int_equal(send_note(&A, 0, 0, "entry"), 1);
}

/* A SEND that wants its completion has it reported, with its cookie; one
 * in flight when the QP fails is reported failed. */
static void
test_completion_reports(void **state)
{
	struct rn_notify_event ev;
	uint64_t until;

	(void)state;
	open_pair(true, true);
	assert_int_equal(send_note(&A, RN_NOTIFY_WANT_COMPLETION, 77, "c"), 1);
	until = now_ms() + WAIT_MS;
	while (rte_ring_count(A.completions) == 0 && now_ms() < until)
		turn_both();
	assert_int_equal(rte_ring_sc_dequeue_elem(A.completions, &ev,
						  sizeof(ev)), 0);
	assert_int_equal(ev.cookie, 77);
	assert_int_equal(ev.status, 0);
	/* In flight as the channel fails: -EPIPE, never replayed. */
	assert_int_equal(send_note(&A, RN_NOTIFY_WANT_COMPLETION, 78, "d"), 1);
	rn_lcore_notify_fail_pending(A.lc, ep_of(&A));
	assert_int_equal(rte_ring_sc_dequeue_elem(A.completions, &ev,
						  sizeof(ev)), 0);
	assert_int_equal(ev.cookie, 78);
	assert_int_equal(ev.status, -EPIPE);
	assert_int_equal(rn_send_window_used(&ep_of(&A)->n.sends), 0);
}

/* ---- client processes (lcore_client.c) ---- */

/*
 * A client process as the test plays it: a region laid out by
 * rn_client_region_init() on ordinary memory, its link, and the client's
 * side of the rings (rn_client_shm.h) written here as the library does:
 * a SEND's buffer at its ring position, then the entry; deliveries taken
 * with the peek API and finished after their buffers were read.
 */
#define CLIENT_RING 16
#define MAX_TCLIENTS 6

struct tclient {
	struct rn_client_link link;
	struct rn_client_region *r;
	struct side *on;          /* the lcore it is attached to */
	uint32_t worker;          /* that lcore's rings in the region */
	bool added;
	void *map;                /* client_new_guarded()'s mapping, r in
				   * it; NULL: r is aligned_alloc()'s */
	size_t map_len;
};

static struct tclient tclients[MAX_TCLIENTS];
static unsigned int n_tclients;

/* What a client took from its deliver ring. */
struct taken {
	uint16_t type;
	uint16_t ep_index;
	int32_t status;
	uint64_t cookie;
	char node[RN_CLIENT_NODE_MAX + 1];
	char agent[RN_CLIENT_AGENT_MAX + 1];
	uint8_t agent_len;
	uint32_t name_len, msg_len;
	uint8_t name[SLOT_SIZE], msg[SLOT_SIZE];
	struct rn_client_event ev;
};

/* The buffer size of a region for on: its slots', as the daemon makes
 * it, and at least SLOT_SIZE. */
static uint32_t
client_buf_size(const struct side *on)
{
	return RTE_MAX((uint32_t)SLOT_SIZE, on->lc->notify.slot_size);
}

/* A region with rings for n_lcores lcores, on's being worker, laid out
 * in mem (rn_client_region_size() bytes, 64-byte aligned). */
static struct tclient *
client_new_at(struct side *on, const char *agent, uint32_t ring_size,
	      uint32_t n_lcores, uint32_t worker, void *mem)
{
	uint32_t buf_size = client_buf_size(on);
	uint64_t size = rn_client_region_size(n_lcores, ring_size, buf_size);
	struct tclient *t;

	assert_true(n_tclients < MAX_TCLIENTS);
	assert_true(size != 0);
	t = &tclients[n_tclients++];
	*t = (struct tclient){ .on = on, .worker = worker, .r = mem };
	memset(t->r, 0, size);
	assert_int_equal(rn_client_region_init(t->r, n_lcores, ring_size,
					       buf_size), 0);
	t->link = (struct rn_client_link){
		.region = t->r, .region_size = size, .client_id = n_tclients,
		.efd = eventfd(0, EFD_NONBLOCK),
		.agent_len = (uint8_t)strlen(agent),
	};
	assert_true(t->link.efd >= 0);
	memcpy(t->link.agent, agent, t->link.agent_len);
	return t;
}

/* A region with rings for n_lcores lcores, on's being worker. */
static struct tclient *
client_new_of(struct side *on, const char *agent, uint32_t ring_size,
	      uint32_t n_lcores, uint32_t worker)
{
	uint64_t size = rn_client_region_size(n_lcores, ring_size,
					      client_buf_size(on));
	void *mem;

	assert_true(size != 0);
	mem = aligned_alloc(64, size);
	assert_non_null(mem);
	return client_new_at(on, agent, ring_size, n_lcores, worker, mem);
}

/*
 * client_new()'s region, with nothing mapped around it: GUARD_BYTES of
 * PROT_NONE below and above, so that any access past it faults, and
 * between its end and the upper guard CANARY_BYTES of CANARY, as in the
 * page's slack below its start, so that a write just past it shows.
 */
#define GUARD_BYTES (4u << 20)
#define CANARY_BYTES 4096u
#define CANARY 0xa5

static struct tclient *
client_new_guarded(struct side *on, const char *agent, uint32_t ring_size)
{
	uint64_t size = rn_client_region_size(1, ring_size,
					      client_buf_size(on));
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t inner = RTE_ALIGN_CEIL(size + CANARY_BYTES, page);
	size_t len = 2 * (size_t)GUARD_BYTES + inner;
	uint8_t *map = mmap(NULL, len, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *inside = map + GUARD_BYTES;
	struct tclient *t;

	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(inside, inner, PROT_READ | PROT_WRITE), 0);
	memset(inside, CANARY, inner);
	/* A multiple of 64 below a page boundary: 64-byte aligned. */
	t = client_new_at(on, agent, ring_size, 1, 0,
			  inside + inner - CANARY_BYTES - size);
	t->map = map;
	t->map_len = len;
	return t;
}

/* The first byte of t's upper guard: where its canary ends. */
static uint8_t *
guard_of(const struct tclient *t)
{
	return (uint8_t *)t->map + t->map_len - GUARD_BYTES;
}

/* The first byte around t's guarded region that is not CANARY, or NULL. */
static const uint8_t *
canary_changed(const struct tclient *t)
{
	const uint8_t *inside = (const uint8_t *)t->map + GUARD_BYTES;
	const uint8_t *start = (const uint8_t *)t->r;
	const uint8_t *end = start + t->link.region_size;

	for (const uint8_t *p = inside; p < start; p++)
		if (*p != CANARY)
			return p;
	for (const uint8_t *p = end; p < guard_of(t); p++)
		if (*p != CANARY)
			return p;
	return NULL;
}

static struct tclient *
client_new(struct side *on, const char *agent, uint32_t ring_size)
{
	return client_new_of(on, agent, ring_size, 1, 0);
}

static void
client_command(struct tclient *t, uint32_t type)
{
	struct rn_lcore_cmd cmd = { .type = type, .arg = 0,
				    .cookie = (uintptr_t)&t->link };

	rn_lcore_client_command(t->on->lc, &cmd);
	t->added = type == RN_LCORE_CMD_CLIENT_ADD;
}

/* Attached to on's lcore as agent. */
static struct tclient *
client_up(struct side *on, const char *agent, uint32_t ring_size)
{
	struct tclient *t = client_new(on, agent, ring_size);
	uint32_t before = on->lc->n_clients;

	client_command(t, RN_LCORE_CMD_CLIENT_ADD);
	assert_int_equal(on->lc->n_clients, before + 1);
	return t;
}

/* After rn_lcore_fini(): nothing points into the regions any more. */
static void
clients_down(void)
{
	for (unsigned int i = 0; i < n_tclients; i++) {
		close(tclients[i].link.efd);
		if (tclients[i].map != NULL)
			munmap(tclients[i].map, tclients[i].map_len);
		else
			free(tclients[i].r);
	}
	n_tclients = 0;
}

/* Put an entry of type on t's submit ring, its buffer hdr + body. */
static int
client_put(struct tclient *t, uint16_t type, uint16_t ep_index,
	   const struct rn_client_send_hdr *h, const void *body,
	   uint32_t body_len, uint64_t cookie)
{
	struct rte_ring *r = rn_client_submit_ring(t->r, t->worker);
	struct rn_client_entry e = { .type = type, .ep_index = ep_index,
				     .cookie = cookie };
	uint8_t *buf;

	if (rte_ring_enqueue_bulk_elem_start(r, 1, NULL) == 0)
		return -EAGAIN;
	buf = rn_client_send_buf(t->r, t->worker, r->prod.tail);
	assert_true(sizeof(*h) + body_len <= SLOT_SIZE);
	memcpy(buf, h, sizeof(*h));
	memcpy(buf + sizeof(*h), body, body_len);
	rte_ring_enqueue_elem_finish(r, &e, sizeof(e), 1);
	return 0;
}

/* A SEND of (name, msg) to agent on the node of t's endpoint, as
 * rn_client_send() makes it: 0 or -EAGAIN (ring full). */
static int
client_send(struct tclient *t, const char *agent, const void *name,
	    uint32_t name_len, const void *msg, uint32_t msg_len,
	    uint64_t cookie, uint32_t flags)
{
	uint8_t body[SLOT_SIZE];
	uint32_t alen = (uint32_t)strlen(agent);
	struct rn_client_send_hdr h = {
		.ep_tag = t->on->req.peer_tag, .flags = flags,
		.name_len = name_len, .msg_len = msg_len,
		.agent_len = (uint8_t)alen,
	};

	assert_true(alen + name_len + msg_len <= sizeof(body));
	memcpy(body, agent, alen);
	memcpy(body + alen, name, name_len);
	memcpy(body + alen + name_len, msg, msg_len);
	return client_put(t, RN_CLIENT_ENTRY_SEND,
			  (uint16_t)t->on->req.ep_index, &h, body,
			  alen + name_len + msg_len, cookie);
}

/* Take up to max entries from t's deliver ring, buffers read. */
static unsigned int
client_take(struct tclient *t, struct taken *out, unsigned int max)
{
	struct rte_ring *r = rn_client_deliver_ring(t->r, t->worker);
	struct rn_client_entry e[CLIENT_RING];
	uint32_t pos = r->cons.tail;
	unsigned int n = rte_ring_dequeue_burst_elem_start(
		r, e, sizeof(e[0]), RTE_MIN(max, (unsigned int)CLIENT_RING),
		NULL);

	for (unsigned int i = 0; i < n; i++) {
		const uint8_t *buf = rn_client_recv_buf(t->r, t->worker,
							pos + i);
		struct taken *k = &out[i];

		memset(k, 0, sizeof(*k));
		k->type = e[i].type;
		k->ep_index = e[i].ep_index;
		k->status = e[i].status;
		k->cookie = e[i].cookie;
		if (k->type == RN_CLIENT_ENTRY_DELIVERY) {
			struct rn_client_recv_hdr h;

			memcpy(&h, buf, sizeof(h));
			assert_true(sizeof(h) + h.agent_len + h.name_len +
				    h.msg_len <= SLOT_SIZE);
			memcpy(k->node, h.node, sizeof(k->node));
			k->agent_len = h.agent_len;
			k->name_len = h.name_len;
			k->msg_len = h.msg_len;
			/* Name, msg, then the sender's agent. */
			memcpy(k->name, buf + sizeof(h), h.name_len);
			memcpy(k->msg, buf + sizeof(h) + h.name_len,
			       h.msg_len);
			memcpy(k->agent, buf + sizeof(h) + h.name_len +
			       h.msg_len, h.agent_len);
		} else if (k->type == RN_CLIENT_ENTRY_REFUSED) {
			memcpy(&k->ev, buf, sizeof(k->ev));
		}
	}
	if (n != 0)
		rte_ring_dequeue_elem_finish(r, n);
	return n;
}

/* Turn both loops until t took want entries (into out). */
static void
client_wait(struct tclient *t, struct taken *out, unsigned int want)
{
	uint64_t until = now_ms() + WAIT_MS;
	unsigned int got = 0;

	while (got < want && now_ms() < until) {
		turn_both();
		got += client_take(t, &out[got], want - got);
	}
	if (got != want)
		fail_msg("%.*s took %u entries, want %u", t->link.agent_len,
			 t->link.agent, got, want);
}

/* Turn both loops a while; t must take nothing. */
static void
client_none(struct tclient *t)
{
	struct taken k;

	for (int i = 0; i < 50; i++)
		turn_both();
	if (client_take(t, &k, 1) != 0)
		fail_msg("unexpected entry of type %u status %d", k.type,
			 k.status);
}

static void
assert_delivery(const struct taken *k, const char *node, const char *agent,
		const void *name, uint32_t name_len, const void *msg,
		uint32_t msg_len)
{
	assert_int_equal(k->type, RN_CLIENT_ENTRY_DELIVERY);
	assert_string_equal(k->node, node);
	assert_string_equal(k->agent, agent);
	assert_int_equal(k->name_len, name_len);
	assert_int_equal(k->msg_len, msg_len);
	assert_memory_equal(k->name, name, name_len);
	assert_memory_equal(k->msg, msg, msg_len);
}

static void
assert_completion(const struct taken *k, uint64_t cookie, int status)
{
	if (k->type != RN_CLIENT_ENTRY_COMPLETION || k->cookie != cookie ||
	    k->status != status)
		fail_msg("entry type %u cookie %" PRIu64 " status %d; want a "
			 "completion of %" PRIu64 " with %d", k->type,
			 k->cookie, k->status, cookie, status);
}

/* alpha on A sends to beta on B: byte-exact, with A's node name and
 * alpha's agent; B's slot is reposted at once; node-level notifications
 * on the same channel still reach the embedded API, counted as before. */
static void
test_client_delivery_is_exact(void **state)
{
	static const uint8_t msg[] = { 0, 1, 2, 0xff, 'x', 0, 7 };
	struct rn_notify_delivery d[1];
	char msgs[1][16] = { "node-level" };
	struct tclient *alpha, *beta;
	struct taken k;

	(void)state;
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	beta = client_up(&B, "beta", CLIENT_RING);
	assert_int_equal(client_send(alpha, "beta", "nm", 2, msg, sizeof(msg),
				     1, 0), 0);
	client_wait(beta, &k, 1);
	assert_delivery(&k, "a", "alpha", "nm", 2, msg, sizeof(msg));
	assert_int_equal(k.ep_index, B.req.ep_index);
	assert_int_equal(ep_of(&B)->n.held, 0);
	assert_int_equal(B.lc->stats.client_delivered, 1);
	assert_int_equal(A.lc->stats.client_sent, 1);
	/* Not the embedded API's: neither delivered to it nor counted in
	 * its send order. */
	assert_int_equal(rte_ring_count(B.lc->notify_deliveries), 0);
	assert_int_equal(ep_of(&B)->n.native_received, 0);
	assert_int_equal(ep_of(&A)->n.agent_posted, 1);
	assert_int_equal(B.lc->stats.notify_rejected, 0);
	/* No completion without RN_CLIENT_WANT_COMPLETION. */
	client_none(alpha);
	/* An empty name and msg go too. */
	assert_int_equal(client_send(alpha, "beta", "", 0, "", 0, 2, 0), 0);
	client_wait(beta, &k, 1);
	assert_delivery(&k, "a", "alpha", "", 0, "", 0);
	/* The embedded API on the same channel, unchanged. */
	assert_int_equal(send_note(&A, 0, 0, msgs[0]), 1);
	receive_notes(&B, d, 1, msgs);
	assert_int_equal(d[0].pos, 0);
	assert_int_equal(B.lc->stats.notify_received, 1);
}

/* ---- early receives of an endpoint that ends before EP_DELIVER ---- */

/* How it ends: the handshake fails before READY (closed), or a QP fails
 * first (the control thread closes it once told). */
enum early_end {
	EARLY_END_CLOSE,
	EARLY_END_FAIL,
};

/* A data QP of s's endpoint fails: the peer cannot be reached. */
static void
fail_data_qp(struct side *s)
{
	struct rn_wc wc = { .qp = &ep_of(s)->qps[0],
			    .wr_id = RN_EP_WR_ID(0, RN_EP_WR_PROBE, 0),
			    .status = MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR };

	rn_lcore_ep_completion(s->lc, &wc);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_FAILED, &s->req),
			 MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
}

/*
 * The peer's NIC acknowledged B's early receives, so its application
 * counts them as arrived: an endpoint that ends before EP_DELIVER
 * delivers them all the same, in the order they came, to the embedded API
 * and to clients alike; an answer is refused (-ENOTCONN) as by any
 * endpoint that failed or is closing. The deliveries hold the endpoint
 * until given back, then it is freed with nothing left of it.
 */
static void
early_receives_reach_the_application(enum early_end end)
{
	static const uint8_t to_beta[] = { 't', 'w', 'o' };
	char msgs[2][16] = { "one", "three" };
	struct rn_notify_delivery d[2];
	struct tclient *alpha, *beta;
	struct taken k;

	B.req.defer_deliveries = true;
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	beta = client_up(&B, "beta", CLIENT_RING);
	/* One at a time, so that they arrive in this order. */
	assert_int_equal(send_note(&A, 0, 0, msgs[0]), 1);
	wait_early(&B, 1);
	assert_int_equal(client_send(alpha, "beta", "nm", 2, to_beta,
				     sizeof(to_beta), 1, 0), 0);
	wait_early(&B, 2);
	assert_int_equal(send_note(&A, 0, 0, msgs[1]), 1);
	wait_early(&B, 3);
	client_none(beta);
	assert_int_equal(rte_ring_count(B.lc->notify_deliveries), 0);

	if (end == EARLY_END_FAIL)
		fail_data_qp(&B);
	else
		command(&B, RN_LCORE_CMD_EP_CLOSE);
	receive_notes(&B, d, 2, msgs);
	for (unsigned int i = 0; i < 2; i++)
		assert_int_equal(d[i].pos, i);
	client_wait(beta, &k, 1);
	assert_delivery(&k, "a", "alpha", "nm", 2, to_beta, sizeof(to_beta));
	assert_int_equal(send_note(&B, 0, 0, "back"), -ENOTCONN);
	if (end == EARLY_END_FAIL)
		command(&B, RN_LCORE_CMD_EP_CLOSE);

	for (unsigned int i = 0; i < 20; i++)
		turn_both();
	assert_false(has_event(RN_LCORE_EVENT_EP_CLOSED));
	assert_non_null(B.req.ep);
	assert_int_equal(ep_of(&B)->n.held, 2);
	release(&B, &d[0]);
	release(&B, &d[1]);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_CLOSED, &B.req), 0);
	assert_null(B.req.ep);
	/* Closed: nothing more to deliver, nothing delivered twice. */
	command(&B, RN_LCORE_CMD_EP_DELIVER);
	client_none(beta);
	assert_int_equal(rte_ring_count(B.lc->notify_deliveries), 0);
	assert_int_equal(B.lc->stats.notify_early, 3);
	assert_int_equal(B.lc->stats.notify_received, 2);
	assert_int_equal(B.lc->stats.client_delivered, 1);
	assert_int_equal(B.lc->stats.notify_early_lost, 0);
	/* Nothing left of it: QPs, CQ room, bay. */
	assert_int_equal(B.lc->stats.endpoints, 0);
	assert_int_equal(B.lc->stats.qps, 0);
	assert_int_equal(B.lc->stats.cq_reserved, 0);
	assert_true(rn_notify_bay_available(&B.lc->notify));
}

static void
test_early_receives_delivered_when_the_endpoint_closes(void **state)
{
	(void)state;
	early_receives_reach_the_application(EARLY_END_CLOSE);
}

static void
test_early_receives_delivered_when_the_endpoint_fails(void **state)
{
	(void)state;
	early_receives_reach_the_application(EARLY_END_FAIL);
}

/* Post frame as one inline SEND of opcode on s's notify QP, past its
 * send path: unsignalled, no window entry, as a peer's lcore might. */
static void
post_raw(struct side *s, const void *frame, uint32_t len,
	 enum rn_wr_opcode opcode)
{
	struct rn_sq *sq = &ep_of(s)->n.qp->sq;

	assert_int_equal(rn_sq_post_send_inline(sq, frame, len, opcode, 0, 0,
						RN_EP_WR_ID(s->req.local.generation,
							    RN_EP_WR_CREDIT,
							    0)), 0);
	rn_sq_ring_doorbell(sq);
}

/* The receiver tells agent frames (plain SENDs) from node-level ones
 * (SEND_IMMs) by the completion's opcode, and a frame that comes by the
 * other opcode is still read as its first word says: an agent frame in a
 * SEND_IMM reaches its client, a node-level frame in a SEND the embedded
 * API, neither rejected. */
static void
test_client_frames_by_either_opcode(void **state)
{
	struct rn_notify_agent_hdr h = { .kind = RN_NOTIFY_KIND_AGENT,
					 .dst_len = 4, .src_len = 5,
					 .name_len = 2, .msg_len = 3 };
	uint8_t frame[64];
	struct rn_notify_delivery d[1];
	char msgs[1][16] = { "plain" };
	struct tclient *beta;
	struct taken k;

	(void)state;
	open_pair(true, true);
	beta = client_up(&B, "beta", CLIENT_RING);
	memcpy(frame, &h, sizeof(h));
	memcpy(frame + sizeof(h), "betanmmsgalpha", 14);
	post_raw(&A, frame, sizeof(h) + 14, RN_WR_SEND_IMM);
	client_wait(beta, &k, 1);
	assert_delivery(&k, "a", "alpha", "nm", 2, "msg", 3);
	rn_notify_frame_write(frame, "t", 1, msgs[0], 5);
	post_raw(&A, frame, (uint32_t)rn_notify_frame_size(1, 5), RN_WR_SEND);
	receive_notes(&B, d, 1, msgs);
	assert_int_equal(B.lc->stats.notify_rejected, 0);
	assert_int_equal(B.lc->stats.client_delivered, 1);
	client_none(beta);
}

/* ---- frames of a hostile peer, fuzzed ---- */

#define FZ_FRAMES 3000
#define FZ_PENDING 64             /* entries beta is owed, at most */

/* The fuzz test's own generator (xorshift), apart from rand(). */
static uint32_t
fz_next(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static uint32_t
fz_pick(uint32_t *s, uint32_t n)
{
	return n == 0 ? 0 : fz_next(s) % n;
}

/* An agent's length: mostly one in range, else one at or past an edge. */
static uint8_t
fz_agent_len(uint32_t *s)
{
	static const uint8_t edges[] = { 0, 1, 2, 15, 16, 17, 63, 64, 65,
					 127, 128, 129, 200, 255 };

	if (fz_pick(s, 6) == 0)
		return edges[fz_pick(s, RTE_DIM(edges))];
	return (uint8_t)(1 + fz_pick(s, RN_NOTIFY_AGENT_MAX));
}

static void
fz_put32(uint8_t *f, uint32_t len, uint32_t off, uint32_t v)
{
	v = rte_cpu_to_le_32(v);
	if (off + 4 <= len)
		memcpy(f + off, &v, 4);
}

static uint32_t
fz_get32(const uint8_t *f, uint32_t len, uint32_t off)
{
	uint32_t v = 0;

	if (off + 4 <= len)
		memcpy(&v, f + off, 4);
	return rte_le_to_cpu_32(v);
}

/* Change what the frame of *len bytes at f says at one of its edges. */
static void
fz_mutate(uint32_t *s, uint8_t *f, uint32_t *len, uint32_t room)
{
	static const uint32_t kinds[] = {
		RN_NOTIFY_KIND_MIN, RN_NOTIFY_KIND_AGENT,
		RN_NOTIFY_KIND_REFUSAL, RN_NOTIFY_KIND_REFUSAL + 1,
		RN_NOTIFY_KIND_AGENT - 1, UINT32_MAX, 0 };
	uint32_t n = *len, a, b, x;

	switch (fz_pick(s, 11)) {
	case 0:     /* a bit of the header */
		if (n != 0)
			f[fz_pick(s, RTE_MIN(n, 24u))] ^=
				(uint8_t)(1u << fz_pick(s, 8));
		break;
	case 1:
		if (n > 4)
			f[4] = fz_agent_len(s);
		break;
	case 2:
		if (n > 5)
			f[5] = fz_agent_len(s);
		break;
	case 3:     /* an agent frame's name_len, or a node-level msg_len */
		fz_put32(f, n, 8, fz_get32(f, n, 8) + (fz_pick(s, 2) ? 1 : -1));
		break;
	case 4:
		fz_put32(f, n, 12, fz_get32(f, n, 12) +
			 (fz_pick(s, 2) ? 1 : -1));
		break;
	case 5:     /* two lengths whose 32-bit sum is the true one */
		a = fz_get32(f, n, 8);
		b = fz_get32(f, n, 12);
		x = UINT32_MAX - fz_pick(s, 64);
		fz_put32(f, n, 8, a + x + 1);
		fz_put32(f, n, 12, b - x - 1);
		break;
	case 6:     /* the zero word */
		if (n > 7)
			f[6 + fz_pick(s, 2)] = (uint8_t)(1 + fz_pick(s, 255));
		break;
	case 7:
		fz_put32(f, n, 0, kinds[fz_pick(s, RTE_DIM(kinds))]);
		break;
	case 8:     /* a few bytes more or fewer than the lengths say */
		x = 1 + fz_pick(s, 3);
		*len = fz_pick(s, 2) ? RTE_MIN(n + x, room) : n - RTE_MIN(n, x);
		break;
	case 9:     /* cut inside the header */
		*len = RTE_MIN(n, fz_pick(s, 25));
		break;
	default:    /* a node-level frame's name_len, near the length */
		fz_put32(f, n, 0, n - 8 + fz_pick(s, 5) - 2);
		break;
	}
}

/*
 * A frame of at most room bytes into f, as a hostile peer might send it:
 * mostly a well-formed agent frame (to beta, which is attached, or to an
 * agent that is not), a refusal or a node-level frame, each often changed
 * at an edge; or bytes. Returns its length.
 */
static uint32_t
fz_frame(uint32_t *s, uint8_t *f, uint32_t room)
{
	uint32_t what = fz_pick(s, 16), len;

	for (uint32_t i = 0; i < room; i++)
		f[i] = (uint8_t)fz_next(s);
	if (what >= 15)
		return fz_pick(s, room + 1);
	if (what >= 12) {
		uint32_t nl = fz_pick(s, room - 7);
		uint32_t ml = fz_pick(s, room - 7 - nl);

		fz_put32(f, room, 0, nl);
		fz_put32(f, room, 4 + nl, ml);
		len = 8 + nl + ml;
	} else {
		bool refusal = what >= 10;
		uint8_t dl = 4, sl = (uint8_t)(1 + fz_pick(s, 128));
		uint32_t nl = 0, ml = 0, body;
		struct rn_notify_agent_hdr h;

		switch (fz_pick(s, 8)) {
		case 0:
			dl = (uint8_t)(1 + fz_pick(s, 40));
			break;
		case 1:
			memcpy(f + sizeof(h), "betax", dl = 5);
			break;
		case 2:
			memcpy(f + sizeof(h), "bet", dl = 3);
			break;
		case 3:
			memcpy(f + sizeof(h), "betA", 4);
			break;
		default:
			memcpy(f + sizeof(h), "beta", 4);
			break;
		}
		if (sizeof(h) + dl + sl > room)
			sl = (uint8_t)(room - sizeof(h) - dl);
		body = room - (uint32_t)sizeof(h) - dl - sl;
		if (!refusal) {
			/* Often right at the edge of beta's buffer. */
			uint32_t edge = SLOT_SIZE -
				(uint32_t)sizeof(struct rn_client_recv_hdr) -
				sl + fz_pick(s, 3) - 1;

			nl = fz_pick(s, body + 1);
			if (fz_pick(s, 3) == 0 && edge <= body)
				nl = fz_pick(s, edge + 1), ml = edge - nl;
			else
				ml = fz_pick(s, body - nl + 1);
		}
		h = (struct rn_notify_agent_hdr){
			.kind = rte_cpu_to_le_32(refusal ?
						 RN_NOTIFY_KIND_REFUSAL :
						 RN_NOTIFY_KIND_AGENT),
			.dst_len = dl, .src_len = sl,
			.name_len = rte_cpu_to_le_32(nl),
			.msg_len = rte_cpu_to_le_32(ml),
			.cookie = fz_next(s) | (uint64_t)fz_next(s) << 32 };
		memcpy(f, &h, sizeof(h));
		len = (uint32_t)rn_notify_agent_frame_size(dl, sl, nl, ml);
	}
	for (uint32_t m = fz_pick(s, 2) ? 1 + fz_pick(s, 3) : 0; m != 0; m--)
		fz_mutate(s, f, &len, room);
	return len;
}

/* Post the frame of len bytes on s's notify QP as a peer's lcore might,
 * past its send path: inline, or by a data segment from s's send buffer. */
static int
fz_post(struct side *s, const uint8_t *f, uint32_t len, uint8_t opcode,
	bool inl)
{
	struct rn_lcore_ep *ep = ep_of(s);
	struct rn_sq *sq = &ep->n.qp->sq;
	uint64_t wr_id = RN_EP_WR_ID(s->req.local.generation, RN_EP_WR_CREDIT,
				     0);
	uint8_t *buf;
	struct rn_sge sge;
	int rc;

	if ((inl && len <= sq->max_inline) || len == 0) {
		rc = rn_sq_post_send_inline(sq, f, len, opcode, 0, 0, wr_id);
	} else {
		buf = rn_notify_send_buf(&s->lc->notify, (uint32_t)ep->bay, 0);
		memcpy(buf, f, len);
		sge = (struct rn_sge){ (uintptr_t)buf, len,
				       s->lc->notify.mr.lkey };
		rc = rn_sq_post_send_sge(sq, &sge, opcode, 0, 0, wr_id);
	}
	if (rc == 0)
		rn_sq_ring_doorbell(sq);
	return rc;
}

/* What beta is owed: a delivery or a refusal of the frame. */
struct fz_owed {
	uint32_t len;
	uint8_t f[SLOT_SIZE];
};

/* Take what beta was owed, in order, byte for byte. */
static void
fz_drain(unsigned int seed, uint32_t frame, struct tclient *beta,
	 struct fz_owed *owed, uint32_t *head, uint32_t tail)
{
	uint64_t until = now_ms() + WAIT_MS;
	struct taken k;

	while (*head != tail) {
		const struct fz_owed *o = &owed[*head % FZ_PENDING];
		struct rn_notify_agent_view v = { 0 };

		if (now_ms() > until)
			fail_msg("seed %u, frame %u: beta still owed %u entries",
				 seed, frame, tail - *head);
		turn_both();
		if (client_take(beta, &k, 1) == 0)
			continue;
		assert_int_equal(rn_notify_agent_frame_read(o->f, o->len, &v),
				 0);
		assert_int_equal(k.ep_index, B.req.ep_index);
		if (v.kind == RN_NOTIFY_KIND_AGENT) {
			if (k.type != RN_CLIENT_ENTRY_DELIVERY)
				fail_msg("seed %u: entry of type %u for a "
					 "frame to beta", seed, k.type);
			assert_string_equal(k.node, "a");
			assert_int_equal(k.agent_len, v.src_len);
			assert_memory_equal(k.agent, v.src, v.src_len);
			assert_int_equal(k.name_len, v.name_len);
			assert_int_equal(k.msg_len, v.msg_len);
			assert_memory_equal(k.name, v.name, v.name_len);
			assert_memory_equal(k.msg, v.name + v.name_len,
					    v.msg_len);
		} else {
			if (k.type != RN_CLIENT_ENTRY_REFUSED)
				fail_msg("seed %u: entry of type %u for a "
					 "refusal to beta", seed, k.type);
			assert_int_equal(k.cookie, v.cookie);
			assert_int_equal(k.ev.type, RN_CLIENT_EVENT_REFUSED);
			assert_int_equal(k.ev.cookie, v.cookie);
			assert_string_equal(k.ev.node, "a");
			assert_memory_equal(k.ev.agent, v.src, v.src_len);
		}
		(*head)++;
	}
}

/*
 * Random and mutated frames from A's lcore, by either opcode, inline or
 * not (seeded, printed): B's lcore takes each exactly as the readers of
 * rn_notify_frame.h say, whichever of its paths reads it. An agent frame
 * to beta that fits its buffer reaches it byte for byte, in order, held
 * while its deliver ring is full; one that does not fit, and anything
 * neither reader takes, is rejected (and still delivered to the poll, in
 * send order); a node-level frame reaches the embedded API; an agent
 * frame to an agent not here is refused, a refusal for one dropped.
 * Through all of it the channel stays up and serves.
 */
static void
test_client_frames_fuzzed(void **state)
{
	unsigned int seed = rn_test_seed(__func__, 5);
	uint32_t rs = seed * 2654435761u + 1;
	static struct fz_owed owed[FZ_PENDING];
	uint64_t delivered = 0, refused = 0, rejected = 0, received = 0;
	uint32_t head = 0, tail = 0;
	struct tclient *alpha, *beta;
	struct rn_notify_delivery d;
	uint8_t f[SLOT_SIZE];
	struct taken k;

	(void)state;
	open_pair(true, true);
	beta = client_up(&B, "beta", CLIENT_RING);
	for (uint32_t i = 0; i < FZ_FRAMES; i++) {
		const struct rn_qp *rq_qp = ep_of(&B)->n.qp;
		uint32_t len = fz_frame(&rs, f, SLOT_SIZE);
		uint8_t opcode = fz_pick(&rs, 2) ? RN_WR_SEND : RN_WR_SEND_IMM;
		bool inl = fz_pick(&rs, 2) != 0;
		uint32_t tail_before = rq_qp->rq.tail;
		struct rn_notify_agent_view v = { 0 };
		struct rn_notify_view nv;
		bool node = rn_notify_frame_read(f, len, &nv) == 0;
		bool agent = rn_notify_agent_frame_read(f, len, &v) == 0;
		bool to_beta = agent && v.dst_len == 4 &&
			       memcmp(v.dst, "beta", 4) == 0;
		uint64_t until = now_ms() + WAIT_MS;
		unsigned int n;
		int rc;

		assert_false(node && agent);
		while ((rc = fz_post(&A, f, len, opcode, inl)) == -EAGAIN &&
		       now_ms() < until)
			turn_both();
		assert_int_equal(rc, 0);
		while (rq_qp->rq.tail == tail_before) {
			if (now_ms() > until)
				fail_msg("seed %u, frame %u: not received",
					 seed, i);
			turn_both();
		}
		if (to_beta && (v.kind == RN_NOTIFY_KIND_REFUSAL ||
				sizeof(struct rn_client_recv_hdr) +
				(uint64_t)v.src_len + v.name_len +
				v.msg_len <= SLOT_SIZE)) {
			assert_true(tail - head < FZ_PENDING);
			owed[tail % FZ_PENDING].len = len;
			memcpy(owed[tail % FZ_PENDING].f, f, len);
			tail++;
			delivered += v.kind == RN_NOTIFY_KIND_AGENT;
		} else if (to_beta || (!agent && !node)) {
			rejected++;
		} else if (agent && v.kind == RN_NOTIFY_KIND_AGENT) {
			refused++;
		}
		received += node;
		/* What the embedded API is handed: a node-level frame, or a
		 * malformed one (for its place in send order). */
		n = rte_ring_sc_dequeue_burst_elem(B.lc->notify_deliveries, &d,
						   sizeof(d), 1, NULL);
		if (n != (node || (!agent && !node)))
			fail_msg("seed %u, frame %u (%u bytes, opcode %u): %u "
				 "deliveries to the embedded API", seed, i, len,
				 opcode, n);
		if (n != 0) {
			assert_int_equal(d.len, len);
			assert_int_equal(rn_notify_frame_read(
				rn_lcore_ep_recv_slot(ep_of(&B), d.index),
				d.len, &nv) == 0, node);
			release(&B, &d);
		}
		if (B.lc->stats.notify_rejected != rejected ||
		    B.lc->stats.client_refused != refused ||
		    B.lc->stats.notify_received != received)
			fail_msg("seed %u, frame %u (%u bytes, opcode %u): "
				 "rejected %" PRIu64 "/%" PRIu64 ", refused %"
				 PRIu64 "/%" PRIu64 ", received %" PRIu64 "/%"
				 PRIu64, seed, i, len, opcode,
				 B.lc->stats.notify_rejected, rejected,
				 B.lc->stats.client_refused, refused,
				 B.lc->stats.notify_received, received);
		/* beta reads its ring now and then: meanwhile frames for it
		 * are held, their slots with them. */
		if (ep_of(&B)->n.held >= SLOTS / 2 || fz_pick(&rs, 8) == 0)
			fz_drain(seed, i, beta, owed, &head, tail);
	}
	fz_drain(seed, FZ_FRAMES, beta, owed, &head, tail);
	client_none(beta);
	assert_int_equal(B.lc->stats.client_delivered, delivered);
	assert_int_equal(ep_of(&B)->n.held, 0);
	assert_int_equal(B.lc->stats.notify_stale, 0);
	printf("# %u frames: %" PRIu64 " delivered to beta, %" PRIu64
	       " refused, %" PRIu64 " rejected, %" PRIu64 " node-level\n",
	       FZ_FRAMES, delivered, refused, rejected, received);
	/* The channel still serves both APIs. */
	assert_state(&A, RN_CHANNEL_NATIVE);
	assert_state(&B, RN_CHANNEL_NATIVE);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	assert_int_equal(client_send(alpha, "beta", "nm", 2, "ok", 2, 1, 0), 0);
	client_wait(beta, &k, 1);
	assert_delivery(&k, "a", "alpha", "nm", 2, "ok", 2);
}

/* The deterministic content of notification i of a run seeded seed. */
static uint32_t
mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	return x ^ (x >> 16);
}

static void
order_note(unsigned int seed, uint32_t i, uint8_t *name, uint32_t *name_len,
	   uint8_t *msg, uint32_t *msg_len)
{
	/* What fits: 48 + "alpha" + name + msg within SLOT_SIZE. */
	uint32_t room = SLOT_SIZE - 48 - 5;
	uint32_t r = mix(seed ^ mix(i));

	*name_len = r % 17;
	*msg_len = 4 + (r >> 8) % (room - 16 - 4 + 1);
	memcpy(msg, &i, 4);
	for (uint32_t b = 0; b < *name_len; b++)
		name[b] = (uint8_t)mix(r + b);
	for (uint32_t b = 4; b < *msg_len; b++)
		msg[b] = (uint8_t)mix(r ^ (b << 20));
}

/* 1000 notifications of seeded random sizes (seed printed): each arrives
 * once, in the order sent, byte for byte; the credits (SLOTS) throttle
 * the sender, whose entries wait at its ring's head meanwhile. */
static void
test_client_order_per_sender(void **state)
{
	enum { N = 1000 };
	unsigned int seed = rn_test_seed(__func__, 17);
	struct tclient *alpha, *beta;
	uint32_t sent = 0, got = 0;
	uint64_t until;

	(void)state;
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	beta = client_up(&B, "beta", CLIENT_RING);
	until = now_ms() + 10 * WAIT_MS;
	while (got < N && now_ms() < until) {
		struct taken k[CLIENT_RING];
		unsigned int n;

		while (sent < N) {
			uint8_t name[SLOT_SIZE], msg[SLOT_SIZE];
			uint32_t nl, ml;

			order_note(seed, sent, name, &nl, msg, &ml);
			if (client_send(alpha, "beta", name, nl, msg, ml, sent,
					0) != 0)
				break;
			sent++;
		}
		turn_both();
		n = client_take(beta, k, CLIENT_RING);
		for (unsigned int j = 0; j < n; j++, got++) {
			uint8_t name[SLOT_SIZE], msg[SLOT_SIZE];
			uint32_t nl, ml, seq;

			order_note(seed, got, name, &nl, msg, &ml);
			memcpy(&seq, k[j].msg, 4);
			if (seq != got)
				fail_msg("seed %u: notification %u came as %u",
					 seed, seq, got);
			assert_delivery(&k[j], "a", "alpha", name, nl, msg, ml);
		}
	}
	assert_int_equal(got, N);
	assert_int_equal(B.lc->stats.client_delivered, N);
	assert_int_equal(A.lc->stats.client_sent, N);
	client_none(beta);
	client_none(alpha);     /* no report: none was asked for */
}

/* The source agent is the link's: what a client writes in its buffer
 * cannot name another (eve's buffer looks like alpha's frame). */
static void
test_client_cannot_forge_its_agent(void **state)
{
	struct tclient *eve, *beta;
	struct taken k;
	uint8_t forged[64];
	struct rn_notify_agent_hdr h = { .kind = RN_NOTIFY_KIND_AGENT,
					 .dst_len = 4, .src_len = 5 };

	(void)state;
	open_pair(true, true);
	client_up(&A, "alpha", CLIENT_RING);
	eve = client_up(&A, "eve", CLIENT_RING);
	beta = client_up(&B, "beta", CLIENT_RING);
	memcpy(forged, &h, sizeof(h));
	memcpy(forged + sizeof(h), "betaalpha", 9);
	assert_int_equal(client_send(eve, "beta", forged, sizeof(h) + 9,
				     "hi", 2, 5, 0), 0);
	client_wait(beta, &k, 1);
	assert_delivery(&k, "a", "eve", forged, sizeof(h) + 9, "hi", 2);
}

/* A SEND the lcore cannot take is reported with its cookie, whether or
 * not it asked: another peer's tag, an index out of range or of no
 * endpoint here, a channel that is not native; the next goes. */
static void
test_client_send_errors_are_reported(void **state)
{
	struct rn_client_send_hdr h = { .name_len = 1, .msg_len = 1,
					.agent_len = 4 };
	struct tclient *alpha, *beta;
	struct taken k[4];

	(void)state;
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	beta = client_up(&B, "beta", CLIENT_RING);
	h.ep_tag = A.req.peer_tag + 1;
	assert_int_equal(client_put(alpha, RN_CLIENT_ENTRY_SEND,
				    (uint16_t)A.req.ep_index, &h, "betanm", 6,
				    11), 0);
	h.ep_tag = A.req.peer_tag;
	assert_int_equal(client_put(alpha, RN_CLIENT_ENTRY_SEND,
				    RN_MAX_ENDPOINTS, &h, "betanm", 6, 12), 0);
	assert_int_equal(client_put(alpha, RN_CLIENT_ENTRY_SEND,
				    (uint16_t)A.req.ep_index + 1, &h, "betanm",
				    6, 13), 0);
	assert_int_equal(client_send(alpha, "beta", "n", 1, "ok", 2, 14, 0), 0);
	client_wait(alpha, k, 3);
	assert_completion(&k[0], 11, -ENOENT);
	assert_completion(&k[1], 12, -ENOENT);
	assert_completion(&k[2], 13, -ENOTCONN);
	client_wait(beta, k, 1);
	assert_delivery(&k[0], "a", "alpha", "n", 1, "ok", 2);
	assert_int_equal(A.lc->stats.client_sent, 1);
	/* Without a native channel: -ENOTSUP. The one before, delivered
	 * but unsignalled (its window entry still held), has its fate
	 * unknown to A as the channel stops: -EPIPE, though not asked. */
	command(&A, RN_LCORE_CMD_NOTIFY_CLOSE);
	assert_state(&A, RN_CHANNEL_DRAINING);
	assert_int_equal(client_send(alpha, "beta", "n", 1, "x", 1, 15, 0), 0);
	client_wait(alpha, k, 2);
	assert_completion(&k[0], 14, -EPIPE);
	assert_completion(&k[1], 15, -ENOTSUP);
}

/* Lengths beyond the buffer, bad agent lengths, unknown flags or entry
 * types, a frame over the peer's slot: an error completion each, nothing
 * posted, nothing read past the buffer; the lcore carries on. */
static void
test_client_malformed_buffers(void **state)
{
	static const struct {
		uint16_t type;
		uint32_t name_len, msg_len, flags;
		uint8_t agent_len;
		int rc;
	} bad[] = {
		{ RN_CLIENT_ENTRY_SEND, SLOT_SIZE, 1, 0, 4, -EINVAL },
		{ RN_CLIENT_ENTRY_SEND, 1, UINT32_MAX, 0, 4, -EINVAL },
		{ RN_CLIENT_ENTRY_SEND, UINT32_MAX, UINT32_MAX, 0, 4, -EINVAL },
		{ RN_CLIENT_ENTRY_SEND, 1, SLOT_SIZE - 24 - 4, 0, 4, -EINVAL },
		{ RN_CLIENT_ENTRY_SEND, 1, 1, 0, 0, -EINVAL },
		{ RN_CLIENT_ENTRY_SEND, 1, 1, 0, 200, -EINVAL },
		{ RN_CLIENT_ENTRY_SEND, 1, 1, 2, 4, -EINVAL },
		{ RN_CLIENT_ENTRY_DELIVERY, 1, 1, 0, 4, -EINVAL },
		{ 0, 1, 1, 0, 4, -EINVAL },
		/* Fits the buffer, not the receiver's: 48 + 5 + 1 + 203. */
		{ RN_CLIENT_ENTRY_SEND, 1, 203, 0, 4, -EMSGSIZE },
	};
	struct tclient *alpha, *beta;
	uint8_t body[SLOT_SIZE];
	struct taken k[RTE_DIM(bad)];

	(void)state;
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	beta = client_up(&B, "beta", CLIENT_RING);
	memset(body, 'b', sizeof(body));
	for (unsigned int i = 0; i < RTE_DIM(bad); i++) {
		struct rn_client_send_hdr h = {
			.ep_tag = A.req.peer_tag, .flags = bad[i].flags,
			.name_len = bad[i].name_len, .msg_len = bad[i].msg_len,
			.agent_len = bad[i].agent_len,
		};

		assert_int_equal(client_put(alpha, bad[i].type,
					    (uint16_t)A.req.ep_index, &h, body,
					    SLOT_SIZE - sizeof(h), 100 + i), 0);
	}
	client_wait(alpha, k, RTE_DIM(bad));
	for (unsigned int i = 0; i < RTE_DIM(bad); i++)
		assert_completion(&k[i], 100 + i, bad[i].rc);
	assert_int_equal(A.lc->stats.client_sent, 0);
	assert_int_equal(rn_send_window_used(&ep_of(&A)->n.sends), 0);
	/* The largest that fits the receiver goes. */
	assert_int_equal(client_send(alpha, "beta", "n", 1, body, 202, 1, 0),
			 0);
	client_wait(beta, k, 1);
	assert_delivery(&k[0], "a", "alpha", "n", 1, body, 202);
}

/* RN_CLIENT_WANT_COMPLETION: 0 once the peer's NIC acknowledged it; one
 * in flight when the channel fails: -EPIPE, asked for or not. */
static void
test_client_completions(void **state)
{
	struct tclient *alpha, *beta;
	struct taken k[2];

	(void)state;
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	beta = client_up(&B, "beta", CLIENT_RING);
	assert_int_equal(client_send(alpha, "beta", "n", 1, "m", 1, 41,
				     RN_CLIENT_WANT_COMPLETION), 0);
	client_wait(alpha, k, 1);
	assert_completion(&k[0], 41, 0);
	client_wait(beta, k, 1);
	/* Two in flight, one asking: both fail with the channel. */
	assert_int_equal(client_send(alpha, "beta", "n", 1, "m", 1, 42, 0), 0);
	assert_int_equal(client_send(alpha, "beta", "n", 1, "m", 1, 43,
				     RN_CLIENT_WANT_COMPLETION), 0);
	rn_lcore_client_poll(A.lc);
	assert_int_equal(rn_send_window_used(&ep_of(&A)->n.sends), 2);
	rn_lcore_notify_fail_pending(A.lc, ep_of(&A));
	assert_int_equal(client_take(alpha, k, 2), 2);
	assert_completion(&k[0], 42, -EPIPE);
	assert_completion(&k[1], 43, -EPIPE);
	/* Their window entries reused by node-level SENDs that want their
	 * completions: those go to the embedded API, nothing more to the
	 * client. */
	for (unsigned int i = 0; i < 2 * SLOTS;) {
		struct rn_notify_delivery d;
		struct rn_notify_event ev;

		if (send_note(&A, RN_NOTIFY_WANT_COMPLETION, i, "x") == 1)
			i++;
		turn_both();
		while (rte_ring_sc_dequeue_elem(B.lc->notify_deliveries, &d,
						sizeof(d)) == 0)
			release(&B, &d);
		while (rte_ring_sc_dequeue_elem(A.completions, &ev,
						sizeof(ev)) == 0)
			assert_int_equal(ev.status, 0);
		client_take(beta, k, 2);
	}
	client_none(alpha);
}

/* To an agent not attached at B: dropped there, its slot reposted, and
 * refused: alpha gets a REFUSED entry (node, the absent agent, cookie). */
static void
test_client_refusal_reaches_the_sender(void **state)
{
	struct tclient *alpha, *beta;
	struct taken k;

	(void)state;
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	beta = client_up(&B, "beta", CLIENT_RING);
	assert_int_equal(client_send(alpha, "nobody-here", "n", 1, "m", 1,
				     0xfeed, 0), 0);
	client_wait(alpha, &k, 1);
	assert_int_equal(k.type, RN_CLIENT_ENTRY_REFUSED);
	assert_int_equal(k.cookie, 0xfeed);
	assert_int_equal(k.ev.type, RN_CLIENT_EVENT_REFUSED);
	assert_int_equal(k.ev.cookie, 0xfeed);
	assert_string_equal(k.ev.node, "b");
	assert_string_equal(k.ev.agent, "nobody-here");
	assert_int_equal(k.ev.status, -ENOENT);
	assert_int_equal(B.lc->stats.client_refused, 1);
	assert_int_equal(B.lc->stats.refusals_dropped, 0);
	assert_int_equal(ep_of(&B)->n.held, 0);
	client_none(beta);
	/* Nobody attached at B at all: refused the same way. */
	client_command(beta, RN_LCORE_CMD_CLIENT_REMOVE);
	assert_ptr_equal(wait_event(RN_LCORE_EVENT_CLIENT_REMOVED, NULL), 0);
	assert_int_equal(B.lc->n_clients, 0);
	assert_int_equal(client_send(alpha, "beta", "n", 1, "m", 1, 7, 0), 0);
	client_wait(alpha, &k, 1);
	assert_int_equal(k.type, RN_CLIENT_ENTRY_REFUSED);
	assert_string_equal(k.ev.agent, "beta");
	assert_int_equal(k.ev.cookie, 7);
}

/* beta's deliver ring full: the frame waits in its slot (not reposted),
 * the sender's credits stop the rest; nothing is lost, all come in order
 * once beta drains. */
static void
test_client_deliver_ring_full_holds(void **state)
{
	enum { N = 3 * SLOTS, RING = 4 };     /* RING - 1 entries fit */
	struct tclient *alpha, *beta;
	struct taken k[N];
	unsigned int sent = 0, got = 0;
	uint64_t until;

	(void)state;
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	beta = client_up(&B, "beta", RING);
	for (; sent < CLIENT_RING - 1; sent++)
		assert_int_equal(client_send(alpha, "beta", "n", 1, &sent, 4,
					     sent, 0), 0);
	for (int i = 0; i < 100; i++)
		turn_both();
	/* RING - 1 delivered; the next SLOTS - (RING - 1) held in their
	 * slots (no credit comes back for them); the rest wait at alpha. */
	assert_int_equal(B.lc->stats.client_delivered, RING - 1);
	assert_int_equal(ep_of(&B)->n.held, SLOTS - (RING - 1));
	assert_int_equal(A.lc->stats.client_sent, SLOTS);
	assert_int_equal(rte_ring_count(rn_client_submit_ring(alpha->r, 0)),
			 CLIENT_RING - 1 - SLOTS);
	until = now_ms() + WAIT_MS;
	while (got < N && now_ms() < until) {
		for (; sent < N && client_send(alpha, "beta", "n", 1, &sent, 4,
					       sent, 0) == 0; sent++)
			;
		turn_both();
		got += client_take(beta, &k[got], N - got);
	}
	assert_int_equal(got, N);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t seq;

		memcpy(&seq, k[i].msg, 4);
		assert_int_equal(seq, i);
	}
	assert_true(B.lc->stats.client_held >= SLOTS - (RING - 1));
	assert_int_equal(ep_of(&B)->n.held, 0);
	assert_false(rn_lcore_client_pending(B.lc));
}

/* from (on node) sends SLOTS notifications to to: each arrives, in order,
 * a whole window's worth, so none of the pair's slots may be kept
 * elsewhere. */
static void
assert_served(struct tclient *from, const char *node, struct tclient *to)
{
	char agent[RN_CLIENT_AGENT_MAX + 1];
	struct taken k[SLOTS];

	snprintf(agent, sizeof(agent), "%.*s", to->link.agent_len,
		 to->link.agent);
	for (uint32_t i = 0; i < SLOTS; i++)
		assert_int_equal(client_send(from, agent, "s", 1, &i, 4, i, 0),
				 0);
	client_wait(to, k, SLOTS);
	for (uint32_t i = 0; i < SLOTS; i++) {
		char from_agent[RN_CLIENT_AGENT_MAX + 1];

		snprintf(from_agent, sizeof(from_agent), "%.*s",
			 from->link.agent_len, from->link.agent);
		assert_delivery(&k[i], node, from_agent, "s", 1, &i, 4);
	}
}

/* beta's deliver ring full and hold_max frames held for it: what comes
 * for beta next is refused back to its sender as busy (-ENOBUFS), its
 * slot reposted, so that delta, another agent of the same node pair, is
 * still served; once beta takes its ring, it is served again. Without
 * the bound beta's frames would take every slot of the pair (SLOTS) and
 * delta would get nothing. */
static void
test_client_busy_is_refused_past_hold_max(void **state)
{
	enum { RING = 4, HOLD = 2 };         /* RING - 1 entries fit */
	struct tclient *alpha, *gamma, *beta, *delta;
	struct taken k[2 * SLOTS];
	unsigned int busy = 0, n;
	uint32_t i;

	(void)state;
	open_pair(true, true);
	B.lc->client_hold_max = HOLD;
	alpha = client_up(&A, "alpha", CLIENT_RING);
	gamma = client_up(&A, "gamma", CLIENT_RING);
	beta = client_up(&B, "beta", RING);
	delta = client_up(&B, "delta", CLIENT_RING);
	for (i = 0; i < 2 * SLOTS;)
		if (client_send(alpha, "beta", "n", 1, &i, 4, i, 0) == 0)
			i++;
		else
			turn_both();
	for (int t = 0; t < 200; t++)
		turn_both();
	/* RING - 1 delivered, HOLD held; every other one refused busy. */
	assert_int_equal(B.lc->stats.client_delivered, RING - 1);
	assert_int_equal(ep_of(&B)->n.held, HOLD);
	assert_int_equal(B.lc->stats.client_busy, 2 * SLOTS - (RING - 1) - HOLD);
	n = client_take(alpha, k, 2 * SLOTS);
	for (unsigned int j = 0; j < n; j++) {
		if (k[j].type != RN_CLIENT_ENTRY_REFUSED)
			continue;
		assert_int_equal(k[j].ev.status, -ENOBUFS);
		assert_string_equal(k[j].ev.agent, "beta");
		assert_true(k[j].cookie >= RING - 1 + HOLD);
		busy++;
	}
	assert_int_equal(busy, 2 * SLOTS - (RING - 1) - HOLD);
	/* The pair's other agents are served meanwhile. */
	assert_served(gamma, "a", delta);
	/* beta takes its ring: the held ones come, in order, and beta is
	 * served again. */
	client_wait(beta, k, RING - 1 + HOLD);
	for (i = 0; i < RING - 1 + HOLD; i++)
		assert_delivery(&k[i], "a", "alpha", "n", 1, &i, 4);
	assert_int_equal(ep_of(&B)->n.held, 0);
	assert_int_equal(client_send(alpha, "beta", "n", 1, "again", 5, 99, 0),
			 0);
	client_wait(beta, k, 1);
	assert_delivery(&k[0], "a", "alpha", "n", 1, "again", 5);
	assert_int_equal(B.lc->stats.client_refused, 0);
}

/* The other way round: alpha floods a busy beta and takes none of its
 * own entries, so the busy refusals pile up for alpha on A. Past A's
 * hold_max they are dropped (refusals_dropped), not kept: A's slots stay
 * free for the pair's traffic from B, and delta on B still reaches
 * epsilon on A. Kept, they would take every slot of A (SLOTS) and stop
 * every agent of B sending to A. */
static void
test_refusals_for_a_client_that_does_not_poll_are_bounded(void **state)
{
	enum { RING = 4, HOLD = 2, N = 4 * SLOTS };
	struct tclient *alpha, *epsilon, *beta, *delta;
	uint64_t until = now_ms() + WAIT_MS;
	uint32_t i;

	(void)state;
	open_pair(true, true);
	A.lc->client_hold_max = HOLD;
	B.lc->client_hold_max = HOLD;
	alpha = client_up(&A, "alpha", RING);
	epsilon = client_up(&A, "epsilon", CLIENT_RING);
	beta = client_up(&B, "beta", RING);
	delta = client_up(&B, "delta", CLIENT_RING);
	(void)beta;
	for (i = 0; i < N && now_ms() < until;)
		if (client_send(alpha, "beta", "n", 1, &i, 4, i, 0) == 0)
			i++;
		else
			turn_both();
	assert_int_equal(i, N);
	for (int t = 0; t < 200; t++)
		turn_both();
	/* alpha's ring full (RING - 1 refusals), HOLD more kept, the rest
	 * dropped at A. */
	assert_int_equal(ep_of(&A)->n.held, HOLD);
	assert_int_equal(A.lc->stats.refusals_dropped,
			 B.lc->stats.client_busy - (RING - 1) - HOLD);
	assert_true(A.lc->stats.refusals_dropped > 0);
	/* B's agents still reach A. */
	assert_served(delta, "b", epsilon);
}

/* CLIENT_REMOVE while frames are held for the client and SENDs wait in
 * its submit ring: CLIENT_REMOVED at once, the held slots back, the
 * SENDs never go; later traffic for the agent is refused. */
static void
test_client_remove_with_work_pending(void **state)
{
	enum { RING = 2 };
	struct tclient *alpha, *beta, *gamma;
	struct taken k[CLIENT_RING];
	uint32_t i;
	uint64_t sent;

	(void)state;
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	gamma = client_up(&A, "gamma", CLIENT_RING);
	beta = client_up(&B, "beta", RING);
	for (i = 0; i < CLIENT_RING - 1; i++)
		assert_int_equal(client_send(alpha, "beta", "n", 1, &i, 4, i,
					     0), 0);
	for (int t = 0; t < 100; t++)
		turn_both();
	assert_true(ep_of(&B)->n.held > 0);
	/* Held frames keep nobody awake: the client may not poll soon. */
	assert_false(rn_lcore_client_pending(B.lc));
	client_command(beta, RN_LCORE_CMD_CLIENT_REMOVE);
	assert_ptr_equal(wait_event(RN_LCORE_EVENT_CLIENT_REMOVED, NULL), 0);
	assert_int_equal(ep_of(&B)->n.held, 0);
	assert_int_equal(B.lc->n_clients, 0);
	/* alpha goes too, its SENDs still waiting at its ring's head. */
	sent = A.lc->stats.client_sent;
	assert_true(rte_ring_count(rn_client_submit_ring(alpha->r, 0)) > 0);
	client_command(alpha, RN_LCORE_CMD_CLIENT_REMOVE);
	assert_ptr_equal(wait_event(RN_LCORE_EVENT_CLIENT_REMOVED, NULL), 0);
	assert_int_equal(A.lc->n_clients, 1);
	for (int t = 0; t < 100; t++)
		turn_both();
	assert_int_equal(A.lc->stats.client_sent, sent);
	/* beta is gone at B: gamma is refused. */
	assert_int_equal(client_send(gamma, "beta", "n", 1, "m", 1, 9, 0), 0);
	client_wait(gamma, k, 1);
	assert_int_equal(k[0].type, RN_CLIENT_ENTRY_REFUSED);
	assert_string_equal(k[0].ev.agent, "beta");
	/* A REMOVE of a client never added is answered all the same. */
	client_command(beta, RN_LCORE_CMD_CLIENT_REMOVE);
	assert_ptr_equal(wait_event(RN_LCORE_EVENT_CLIENT_REMOVED, NULL), 0);
	(void)alpha;
}

/* The agent table: many agents, each found, sharing first and last bytes
 * too; a second client of an attached agent is not added, nor one whose
 * buffers are smaller than a slot. */
static void
test_client_agent_table(void **state)
{
	struct tclient *alpha, *dup, *small, *ts[2];
	struct taken k;

	(void)state;
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	/* Same length, same first and last eight bytes. */
	ts[0] = client_up(&B, "0123456789-a-abcdefgh", CLIENT_RING);
	ts[1] = client_up(&B, "0123456789-b-abcdefgh", CLIENT_RING);
	dup = client_new(&B, "0123456789-b-abcdefgh", CLIENT_RING);
	client_command(dup, RN_LCORE_CMD_CLIENT_ADD);
	assert_int_equal(B.lc->n_clients, 2);
	/* Buffers smaller than a receive slot, which the daemon never
	 * makes: not added (a SEND's checks rely on it). */
	small = client_new(&B, "small", CLIENT_RING);
	assert_int_equal(rn_client_region_init(small->r, 1, CLIENT_RING,
					       SLOT_SIZE - 64), 0);
	client_command(small, RN_LCORE_CMD_CLIENT_ADD);
	assert_int_equal(B.lc->n_clients, 2);
	for (unsigned int i = 0; i < 2; i++) {
		char agent[32];

		snprintf(agent, sizeof(agent), "0123456789-%c-abcdefgh",
			 'a' + i);
		assert_int_equal(client_send(alpha, agent, "n", 1, &i, 4, i,
					     0), 0);
		client_wait(ts[i], &k, 1);
		assert_int_equal(k.type, RN_CLIENT_ENTRY_DELIVERY);
		assert_memory_equal(k.msg, &i, 4);
	}
	/* A prefix of one is no agent here. */
	assert_int_equal(client_send(alpha, "0123456789-a-abcdefg", "n", 1,
				     "m", 1, 3, 0), 0);
	client_wait(alpha, &k, 1);
	assert_int_equal(k.type, RN_CLIENT_ENTRY_REFUSED);
}

/* The position of ring r's element at addr for a ring whose mask is all
 * ones: (addr - its first element) / 16. */
static uint32_t
ring_pos_at(const struct rte_ring *r, const void *addr)
{
	uintptr_t first = (uintptr_t)&r[1];
	uint64_t pos;

	assert_true((uintptr_t)addr > first);
	assert_int_equal(((uintptr_t)addr - first) %
			 sizeof(struct rn_client_entry), 0);
	pos = ((uintptr_t)addr - first) / sizeof(struct rn_client_entry);
	assert_true(pos < UINT32_MAX - RN_LCORE_BURST);
	return (uint32_t)pos;
}

/* What a hostile client writes over ring r's header: a shape of all ones,
 * so that no position wraps in the ring, and positions that put n
 * entries (0: none, and all the room there is) at position pos. */
static void
ring_header_overwrite(struct rte_ring *r, uint32_t pos, uint32_t n)
{
	r->size = UINT32_MAX;
	r->mask = UINT32_MAX;
	r->capacity = UINT32_MAX;
	r->prod.head = pos + n;
	r->prod.tail = pos + n;
	r->cons.head = pos;
	r->cons.tail = pos;
}

/*
 * A client that overwrites its rings' headers hurts nobody but itself
 * (docs/security.md). The victim's submit ring, FROM_VICTIM SENDs in it,
 * and its deliver ring say they are 4 Gi entries long and that their
 * next entries lie at the upper guard's first byte, just past the
 * victim's region and the canary after it (client_new_guarded()). An
 * lcore that indexed the rings with what their headers say would read
 * the SENDs and write its next entry there and fault; headers that point
 * farther, up to 64 GiB past the region, would have it read or write
 * whatever is mapped there. B's lcore must index them with its own shape
 * and positions: while sender on A sends to the victim and to the
 * bystander, interleaved, B stays up, the bystander gets each of its
 * notifications, in order, byte for byte, and not a byte around the
 * victim's region changes. What the victim gets is not asserted: its
 * rings are garbage now.
 */
static void
test_client_ring_headers_overwritten(void **state)
{
	enum { N = 2 * SLOTS, TO_VICTIM = 3, FROM_VICTIM = 3, HOLD = 2 };
	struct tclient *sender, *victim, *bystander;
	struct rte_ring *submit, *deliver;
	uint32_t to_bystander = 0, to_victim = 0, got = 0;
	struct taken k[N], drop[CLIENT_RING];
	const uint8_t *changed;
	uint64_t until;

	(void)state;
	open_pair(true, true);
	/* The victim's frames held, at most HOLD: the pair's other SLOTS -
	 * HOLD slots are the bystander's. */
	B.lc->client_hold_max = HOLD;
	sender = client_up(&A, "sender", CLIENT_RING);
	bystander = client_up(&B, "bystander", CLIENT_RING);
	victim = client_new_guarded(&B, "victim", CLIENT_RING);
	client_command(victim, RN_LCORE_CMD_CLIENT_ADD);
	assert_int_equal(B.lc->n_clients, 2);
	/* Served in its guarded mapping while its headers are sane. */
	assert_int_equal(client_send(sender, "victim", "v", 1, "sane", 4, 0,
				     0), 0);
	client_wait(victim, k, 1);
	assert_delivery(&k[0], "a", "sender", "v", 1, "sane", 4);
	/* Its SENDs wait in its submit ring; then both headers lie. From
	 * here on the test touches neither of the victim's rings: its own
	 * rte_ring calls would fault as the lcore's do. */
	for (uint32_t i = 0; i < FROM_VICTIM; i++)
		assert_int_equal(client_send(victim, "sender", "v", 1, &i, 4, i,
					     RN_CLIENT_WANT_COMPLETION), 0);
	submit = rn_client_submit_ring(victim->r, victim->worker);
	deliver = rn_client_deliver_ring(victim->r, victim->worker);
	ring_header_overwrite(submit, ring_pos_at(submit, guard_of(victim)),
			      FROM_VICTIM);
	ring_header_overwrite(deliver, ring_pos_at(deliver, guard_of(victim)),
			      0);
	printf("# victim region %p + %" PRIu64 ", guard at %p: submit "
	       "positions %u..%u, deliver position %u, mask size capacity "
	       "%#x\n", (void *)victim->r, victim->link.region_size,
	       (void *)guard_of(victim), submit->cons.tail, submit->prod.tail,
	       deliver->prod.head, UINT32_MAX);
	until = now_ms() + 2 * WAIT_MS;
	while (got < N && now_ms() < until) {
		/* One in five to the victim, the first of them at once. */
		while (to_bystander < N) {
			bool for_victim = to_victim < TO_VICTIM &&
					  (to_bystander + to_victim) % 5 == 0;
			uint32_t cookie = to_bystander + to_victim;
			int rc = for_victim ?
				client_send(sender, "victim", "v", 1, &cookie,
					    4, cookie, 0) :
				client_send(sender, "bystander", "b", 1,
					    &to_bystander, 4, cookie, 0);

			if (rc != 0)
				break;
			if (for_victim)
				to_victim++;
			else
				to_bystander++;
		}
		turn_both();
		/* The sender's refusals and the victim's SENDs, if any come:
		 * taken, so that none waits in A's slots. */
		(void)client_take(sender, drop, CLIENT_RING);
		got += client_take(bystander, &k[got], N - got);
	}
	if (got != N)
		fail_msg("bystander took %u of %u (%u to the victim sent); B "
			 "delivered %" PRIu64 ", held %u, busy %" PRIu64, got,
			 N, to_victim, B.lc->stats.client_delivered,
			 ep_of(&B)->n.held, B.lc->stats.client_busy);
	assert_int_equal(to_victim, TO_VICTIM);
	for (uint32_t i = 0; i < N; i++)
		assert_delivery(&k[i], "a", "sender", "b", 1, &i, 4);
	/* More turns: the victim's held frames and SENDs tried again. */
	for (int t = 0; t < 100; t++) {
		turn_both();
		(void)client_take(sender, drop, CLIENT_RING);
	}
	client_none(bystander);
	changed = canary_changed(victim);
	if (changed != NULL)
		fail_msg("the byte at victim region + %td is %#x, not %#x",
			 changed - (const uint8_t *)victim->r, *changed,
			 CANARY);
	/* And B still serves its other client. */
	assert_served(sender, "a", bystander);
}

/*
 * A client that writes its send buffer while the lcore reads it, at every
 * instruction of the lcore: rn_lcore_client_poll() single-stepped (x86's
 * trap flag), msg_len of the buffer given the next of RACED_MSG_VALUES
 * values the lcore accepts after each step, so that two reads of it a
 * few instructions apart see two values. Its frame must still say the
 * lengths it was sized by: the peer rejects none and counts none in the
 * embedded API's send order (gcc once read msg_len twice in send_fast(),
 * and the frame's header took the second read).
 */
#define RACED_MSG_VALUES 48u

static struct {
	uint32_t *msg_len;
	uint32_t msg_min;
	volatile uint32_t steps;  /* written in the SIGTRAP handler */
	volatile uint32_t stop;
} raced;

#if defined(__x86_64__)
#define EFLAGS_TF 0x100

static void
step_from_here(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	(void)sig;
	(void)si;
	uc->uc_mcontext.gregs[REG_EFL] |= EFLAGS_TF;
}

static void
step_write_msg_len(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	(void)sig;
	(void)si;
	if (raced.stop) {
		uc->uc_mcontext.gregs[REG_EFL] &= ~EFLAGS_TF;
		return;
	}
	__atomic_store_n(raced.msg_len, raced.msg_min +
			 raced.steps++ % RACED_MSG_VALUES, __ATOMIC_RELAXED);
}

/* rn_lcore_client_poll(lc), msg_len rewritten after each instruction,
 * from msg_min on. */
static bool
client_poll_stepped(struct rn_lcore *lc, uint32_t *msg_len, uint32_t msg_min)
{
	struct sigaction start = { .sa_sigaction = step_from_here,
				   .sa_flags = SA_SIGINFO };
	struct sigaction trap = { .sa_sigaction = step_write_msg_len,
				  .sa_flags = SA_SIGINFO };

	raced.msg_len = msg_len;
	raced.msg_min = msg_min;
	raced.steps = 0;
	raced.stop = 0;
	assert_int_equal(sigaction(SIGUSR1, &start, NULL), 0);
	assert_int_equal(sigaction(SIGTRAP, &trap, NULL), 0);
	raise(SIGUSR1);
	rn_lcore_client_poll(lc);
	raced.stop = 1;
	signal(SIGTRAP, SIG_DFL);
	signal(SIGUSR1, SIG_DFL);
	return true;
}
#else
static bool
client_poll_stepped(struct rn_lcore *lc, uint32_t *msg_len, uint32_t msg_min)
{
	(void)lc;
	(void)msg_len;
	(void)msg_min;
	return false;
}
#endif

static void
test_client_send_lengths_raced(void **state)
{
	/* A name of 1: msg_len from min on goes inline at max_inline 64
	 * (send_fast()), or from a send buffer (send_entry()). */
	static const uint32_t msg_min[] = { 4, 64 };
	struct tclient *alpha, *beta;
	struct rte_ring *submit;
	struct taken k;

	(void)state;
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	beta = client_up(&B, "beta", CLIENT_RING);
	submit = rn_client_submit_ring(alpha->r, alpha->worker);
	for (uint32_t i = 0; i < RTE_DIM(msg_min); i++) {
		struct rn_client_send_hdr *h = (void *)rn_client_send_buf(
			alpha->r, alpha->worker, submit->prod.tail);

		assert_int_equal(client_send(alpha, "beta", "n", 1, "msg", 4,
					     i, 0), 0);
		if (!client_poll_stepped(A.lc, &h->msg_len, msg_min[i]))
			skip();
		printf("# msg_len from %u: %u steps\n", msg_min[i],
		       raced.steps);
		assert_true(raced.steps > 0);
		assert_int_equal(A.lc->stats.client_sent, i + 1);
		client_wait(beta, &k, 1);
		if (k.type != RN_CLIENT_ENTRY_DELIVERY || k.name_len != 1 ||
		    k.msg_len < msg_min[i] ||
		    k.msg_len >= msg_min[i] + RACED_MSG_VALUES)
			fail_msg("entry type %u, lengths %u + %u", k.type,
				 k.name_len, k.msg_len);
		/* Not a malformed frame, rejected and counted in the
		 * embedded API's send order. */
		assert_int_equal(B.lc->stats.notify_rejected, 0);
		assert_int_equal(ep_of(&B)->n.native_received, 0);
		assert_int_equal(rte_ring_count(B.lc->notify_deliveries), 0);
	}
}

/* A client as the library waits on a sleeping lcore: it sees the status
 * page word raised, enqueues, then writes the lcore's wake eventfd. */
struct waker {
	uint32_t *word;
	struct tclient *t;
	int rc;
};

static void *
wake_when_asleep(void *arg)
{
	struct waker *w = arg;
	uint64_t until = now_ms() + WAIT_MS;

	while (__atomic_load_n(w->word, __ATOMIC_ACQUIRE) == 0) {
		if (now_ms() > until) {
			w->rc = -ETIMEDOUT;
			return NULL;
		}
	}
	w->rc = client_send(w->t, "alpha", "n", 1, "late", 4, 2, 0);
	if (w->rc == 0 &&
	    __atomic_load_n(w->word, __ATOMIC_SEQ_CST) != 0)
		eventfd_write(w->t->on->lc->wake_fd, 1);
	return NULL;
}

/* An lcore that is worker 1 uses the rings of index 1 of every region;
 * it raises its status page word while it sleeps and lowers it after;
 * its idle check looks at its clients' submit rings, and a client's
 * wake-up ends its sleep. */
static void
test_client_worker_index_and_sleeping_word(void **state)
{
	uint32_t word = 0;
	struct tclient *alpha, *beta;
	struct waker w = { .word = &word };
	struct taken k;
	pthread_t th;

	(void)state;
	open_pair(true, true);
	rn_lcore_set_client_sleeping(B.lc, 1, &word);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	beta = client_new_of(&B, "beta", CLIENT_RING, 2, 1);
	client_command(beta, RN_LCORE_CMD_CLIENT_ADD);
	assert_int_equal(B.lc->n_clients, 1);
	assert_int_equal(client_send(alpha, "beta", "n", 1, "m", 1, 1, 0), 0);
	client_wait(beta, &k, 1);
	assert_delivery(&k, "a", "alpha", "n", 1, "m", 1);
	assert_int_equal(rte_ring_count(rn_client_deliver_ring(beta->r, 0)),
			 0);
	/* Work in a client's submit ring: no sleep at all. */
	assert_int_equal(client_send(beta, "alpha", "n", 1, "x", 1, 1, 0), 0);
	assert_true(rn_lcore_sleep(B.lc));
	assert_int_equal(word, 0);
	client_wait(alpha, &k, 1);
	/* Asleep for as long as it takes: the client wakes it. */
	B.lc->idle_sleep_us = 10 * 1000 * 1000;
	w.t = beta;
	assert_int_equal(pthread_create(&th, NULL, wake_when_asleep, &w), 0);
	assert_true(rn_lcore_sleep(B.lc));
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.rc, 0);
	assert_int_equal(word, 0);
	client_wait(alpha, &k, 1);
	assert_delivery(&k, "b", "beta", "n", 1, "late", 4);
}

/* An lcore that slept a second in a row with nothing to do sleeps 10 ms
 * at a time instead of idle_sleep_us; work, a wake-up by a descriptor, or
 * anything that runs on a timer (a parked open, frames held for a client)
 * makes its sleeps short again, as does a NIC whose descriptors cannot
 * end a sleep. */
static void
test_quiet_lcore_sleeps_longer(void **state)
{
	struct rn_lcore *lc = B.lc;
	const struct rn_nic_ops *ops = lc->nic->ops;
	struct rn_nic_ops no_fds = *ops;
	struct rn_lcore_ep dummy_ep;
	struct tclient *alpha;

	(void)state;
	memset(&dummy_ep, 0, sizeof(dummy_ep));
	lc->idle_sleep_us = 1000;
	assert_int_equal(rn_lcore_sleep_us(lc), 1000);
	for (int i = 0; i < 5; i++)
		assert_false(rn_lcore_sleep(lc));
	assert_int_equal(lc->quiet_us, 5000);
	assert_int_equal(rn_lcore_sleep_us(lc), 1000);
	lc->quiet_us = 999000;   /* as after 994 more: spares the second */
	assert_false(rn_lcore_sleep(lc));
	assert_int_equal(rn_lcore_sleep_us(lc), 10000);
	assert_false(rn_lcore_sleep(lc));
	assert_int_equal(lc->quiet_us, 1010000);
	/* A turn that did work. */
	rn_lcore_count(&lc->stats.busy_loops, 1);
	assert_int_equal(rn_lcore_sleep_us(lc), 1000);
	assert_int_equal(lc->quiet_us, 0);
	/* A wake-up by the eventfd. */
	lc->quiet_us = 2000000;
	assert_int_equal(rn_lcore_sleep_us(lc), 10000);
	eventfd_write(lc->wake_fd, 1);
	assert_true(rn_lcore_sleep(lc));
	assert_int_equal(lc->quiet_us, 0);
	/* Timed work, or a NIC that cannot wake it. */
	lc->quiet_us = 2000000;
	lc->n_parked = 1;
	assert_int_equal(rn_lcore_sleep_us(lc), 1000);
	lc->n_parked = 0;
	/* A failing endpoint's grace runs on the clock too. */
	lc->failing = &dummy_ep;
	assert_int_equal(rn_lcore_sleep_us(lc), 1000);
	lc->failing = NULL;
	no_fds.wait_fds = NULL;
	lc->nic->ops = &no_fds;
	assert_int_equal(rn_lcore_sleep_us(lc), 1000);
	lc->nic->ops = ops;
	assert_int_equal(rn_lcore_sleep_us(lc), 10000);
	/* A longer idle_sleep_us is kept. */
	lc->idle_sleep_us = 50000;
	assert_int_equal(rn_lcore_sleep_us(lc), 50000);
	lc->idle_sleep_us = 1000;
	/* Frames held for a client whose deliver ring is full. */
	open_pair(true, true);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	(void)client_up(&B, "beta", 2);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(client_send(alpha, "beta", "n", 1, &i, 4, i,
					     0), 0);
	for (int i = 0; i < 100; i++)
		turn_both();
	assert_true(ep_of(&B)->n.held > 0);
	lc->quiet_busy_loops = lc->stats.busy_loops;
	lc->quiet_us = 2000000;
	assert_int_equal(rn_lcore_sleep_us(lc), 1000);
}

/* ---- the notify QP at the edges of its settings ---- */

/* Both lcores with [notify] slots = 4096, slot_size = 512, max_inline =
 * 400 and a [nic] cq_size that holds such an endpoint: settings within
 * their bounds, which made a notify QP before its inline size took agent
 * frames too. */
static int
setup_deep(void **state)
{
	int rc;

	deep = (struct deep_cfg){ .slots = 4096, .slot_size = 512,
				  .max_inline = 400, .cq_size = 131072 };
	rc = setup(state);
	deep = DEEP_DEFAULT;
	return rc;
}

/*
 * The deepest window with a large max_inline: the notify QP's ring, one
 * WQE of the largest inline SEND per slot, must stay within what a
 * device's 16-bit WQE counter allows (32768 BBs: the sim refuses more, as
 * mlx5 does past its max_qp_wr), or the endpoint has no native channel at
 * all. Agent frames' room inline is worth less than the channel: the
 * channel goes native and carries both kinds of frame.
 */
static void
test_deepest_window_keeps_its_channel(void **state)
{
	static const uint8_t msg[300] = { 1, 2, 3 };
	struct rn_notify_delivery d[1];
	char msgs[1][16] = { "deep" };
	struct tclient *alpha, *beta;
	struct taken k;

	(void)state;
	open_pair(true, true);
	assert_state(&A, RN_CHANNEL_NATIVE);
	assert_state(&B, RN_CHANNEL_NATIVE);
	assert_int_equal(A.lc->stats.no_cq_room, 0);
	assert_int_equal(send_note(&A, 0, 0, msgs[0]), 1);
	receive_notes(&B, d, 1, msgs);
	release(&B, &d[0]);
	alpha = client_up(&A, "alpha", CLIENT_RING);
	beta = client_up(&B, "beta", CLIENT_RING);
	assert_int_equal(client_send(alpha, "beta", "nm", 2, msg, 150, 1, 0),
			 0);
	client_wait(beta, &k, 1);
	assert_delivery(&k, "a", "alpha", "nm", 2, msg, 150);
}

/* Both lcores with [notify] max_inline = 0: only empty node-level frames
 * inline, and agent frames with agents of up to 128 bytes together. */
static int
setup_inline_0(void **state)
{
	int rc;

	deep = (struct deep_cfg){ .slots = SLOTS, .slot_size = SLOT_SIZE,
				  .max_inline = 0 };
	rc = setup(state);
	deep = DEEP_DEFAULT;
	return rc;
}

/* An agent of len bytes, all c: a C string in out. */
static const char *
agent_of(char *out, char c, uint32_t len)
{
	memset(out, c, len);
	out[len] = '\0';
	return out;
}

/*
 * With max_inline 0 the notify QP's inline room is an agent frame's
 * header and 128 bytes of agents: frames of agents of 127, 128 and 129
 * bytes together (and empty name and msg) go inline, inline to the last
 * byte, and from a send buffer; with a name or msg, from a buffer. Each
 * arrives byte for byte; refusals at the same edge come back.
 */
static void
test_agent_frames_at_the_inline_edge(void **state)
{
	char s[RN_CLIENT_AGENT_MAX + 1], d[RN_CLIENT_AGENT_MAX + 1];
	struct tclient *alpha, *to[3];
	struct taken k;

	(void)state;
	open_pair(true, true);
	assert_int_equal(ep_of(&A)->n.agent_inline,
			 sizeof(struct rn_notify_agent_hdr) +
			 2 * RN_LCORE_AGENT_INLINE);
	alpha = client_up(&A, agent_of(s, 'a', 64), CLIENT_RING);
	for (uint32_t i = 0; i < 3; i++)
		to[i] = client_up(&B, agent_of(d, (char)('x' + i), 63 + i),
				  CLIENT_RING);
	for (uint32_t i = 0; i < 3; i++) {
		agent_of(d, (char)('x' + i), 63 + i);
		assert_int_equal(client_send(alpha, d, "", 0, "", 0, i, 0), 0);
		client_wait(to[i], &k, 1);
		assert_delivery(&k, "a", s, "", 0, "", 0);
		assert_int_equal(client_send(alpha, d, "n", 1, "m", 1, i, 0),
				 0);
		client_wait(to[i], &k, 1);
		assert_delivery(&k, "a", s, "n", 1, "m", 1);
	}
	/* Refusals of 152 and 153 bytes: inline, then from a buffer. */
	for (uint32_t len = 64; len <= 65; len++) {
		agent_of(d, 'q', len);
		assert_int_equal(client_send(alpha, d, "", 0, "", 0, len, 0),
				 0);
		client_wait(alpha, &k, 1);
		assert_int_equal(k.type, RN_CLIENT_ENTRY_REFUSED);
		assert_int_equal(k.ev.cookie, len);
		assert_string_equal(k.ev.agent, d);
	}
	assert_int_equal(B.lc->stats.refusals_dropped, 0);
	assert_int_equal(B.lc->stats.notify_rejected, 0);
	assert_int_equal(A.lc->stats.notify_rejected, 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(int argc, char **argv)
{
	char prefix[64];
	char *eal[] = { argv[0], "-l", "0", "--no-huge", "--no-shconf",
			"-m", "256", "--no-pci", "--no-telemetry",
			"--log-level=lib.eal:error", prefix, NULL };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_table),
		T(test_handshake_channel_goes_native),
		T(test_peer_without_channel_drops_it),
		T(test_added_channel_sends_only_once_enabled),
		T(test_refused_offer_drops_the_channel),
		T(test_open_refusals_stay_none),
		T(test_peer_closed_when_open),
		T(test_peer_closed_when_connected),
		T(test_peer_closed_when_native),
		T(test_local_fault_retires_and_a_new_channel_starts_afresh),
		T(test_held_delivery_delays_retirement),
		T(test_early_receives_wait_for_deliver),
		T(test_early_receives_outlive_a_stopped_channel),
		T(test_error_completions),
		T(test_credits_bound_the_sender),
		T(test_window_entries_wait_for_completions),
		T(test_completion_reports),
		T(test_client_delivery_is_exact),
		T(test_early_receives_delivered_when_the_endpoint_closes),
		T(test_early_receives_delivered_when_the_endpoint_fails),
		T(test_client_frames_by_either_opcode),
		T(test_client_frames_fuzzed),
		T(test_client_order_per_sender),
		T(test_client_cannot_forge_its_agent),
		T(test_client_send_errors_are_reported),
		T(test_client_malformed_buffers),
		T(test_client_completions),
		T(test_client_refusal_reaches_the_sender),
		T(test_client_deliver_ring_full_holds),
		T(test_client_busy_is_refused_past_hold_max),
		T(test_refusals_for_a_client_that_does_not_poll_are_bounded),
		T(test_client_remove_with_work_pending),
		T(test_client_agent_table),
		T(test_client_ring_headers_overwritten),
		T(test_client_send_lengths_raced),
		T(test_client_worker_index_and_sleeping_word),
		T(test_quiet_lcore_sleeps_longer),
		cmocka_unit_test_setup_teardown(
			test_deepest_window_keeps_its_channel, setup_deep,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_agent_frames_at_the_inline_edge, setup_inline_0,
			teardown),
	};

	(void)argc;
	/* One test alone, by name (a glob): RNOTIFY_TEST_FILTER. */
	if (getenv("RNOTIFY_TEST_FILTER") != NULL)
		cmocka_set_test_filter(getenv("RNOTIFY_TEST_FILTER"));
	snprintf(prefix, sizeof(prefix), "--file-prefix=rn_test_lcore_%d",
		 getpid());
	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0) {
		printf("1..0 # SKIP EAL did not start\n");
		return 77;
	}
	events = rte_ring_create_elem("test_events",
				      sizeof(struct rn_lcore_event), 1024,
				      SOCKET_ID_ANY, RING_F_SC_DEQ);
	wake_fd = eventfd(0, EFD_NONBLOCK);
	if (events == NULL || wake_fd < 0)
		return 1;
	return cmocka_run_group_tests_name("lcore", tests, NULL, NULL);
}
