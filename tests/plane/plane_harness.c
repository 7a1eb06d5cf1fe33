/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <rte_eal.h>
#include <rte_ring.h>

#include "plane_harness.h"
#include "rn_notify_engine.h"
#include "rn_control.h"

#define TICK_MS 2

static bool eal_up;
static unsigned int ring_serial;

void
rn_ph_sleep_ms(uint32_t ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void
eal_once(void)
{
	char prefix[64];
	char *argv[] = { "test_plane", "--no-huge", "--no-pci", "--no-shconf",
			 "--no-telemetry", "-l", "0", "-m", "64", prefix,
			 "--log-level=lib.*:error", NULL };

	if (eal_up)
		return;
	/* Unique: tests of other worktrees may run at the same time. */
	snprintf(prefix, sizeof(prefix), "--file-prefix=rn-test-plane-%d",
		 (int)getpid());
	assert_true(rte_eal_init(RTE_DIM(argv) - 1, argv) >= 0);
	eal_up = true;
}

/* From the control thread: no cmocka assertion may fail here. */
static void
answer(struct rn_ph_plane *h, uint16_t type, int32_t arg, uint64_t cookie)
{
	struct rn_lcore_event ev = { .type = type, .lcore_id = 5, .arg = arg,
				     .cookie = cookie };

	if (rte_ring_mp_enqueue_elem(h->events, &ev, sizeof(ev)) != 0)
		fprintf(stderr, "fake worker: event ring full\n");
}

/* The real lcore gives the endpoint's QPs numbers; so does this one. */
static void
open_qps(struct rn_ep_request *req)
{
	struct rn_ep_side *me = &req->local;

	me->n_qps = 0;
	for (uint32_t i = 0; i < req->n_data_qps; i++)
		me->qps[me->n_qps++] = (struct rn_ep_qp_info){
			.kind = RN_EP_QP_DATA, .qpn = 0x100 + i, .psn = 1 };
	if (req->notify)
		me->qps[me->n_qps++] = (struct rn_ep_qp_info){
			.kind = RN_EP_QP_NOTIFY, .qpn = 0x200, .psn = 1,
			.recv_depth = 16, .slot_size = 4096, .credits = 16 };
	me->addr.mtu = 3;
	me->probe_addr = 0x1000;
	me->probe_rkey = 1;
}

/* The worker's answer to cmd, as rn_lcore_run() would give it. */
static void
execute(struct rn_ph_plane *h, const struct rn_lcore_cmd *cmd)
{
	struct rn_ep_request *req = (void *)(uintptr_t)cmd->cookie;

	switch (cmd->type) {
	case RN_LCORE_CMD_EP_OPEN:
		open_qps(req);
		h->last_req = req;
		__atomic_store_n(&h->last_peer_tag, req->peer_tag,
				 __ATOMIC_RELEASE);
		answer(h, RN_LCORE_EVENT_EP_OPENED, 0, cmd->cookie);
		break;
	case RN_LCORE_CMD_EP_CONNECT:
		answer(h, RN_LCORE_EVENT_EP_CONNECTED, 0, cmd->cookie);
		break;
	case RN_LCORE_CMD_EP_PROBE:
		answer(h, RN_LCORE_EVENT_EP_PROBED, 0, cmd->cookie);
		break;
	case RN_LCORE_CMD_EP_CLOSE:
		answer(h, RN_LCORE_EVENT_EP_CLOSED, 0, cmd->cookie);
		break;
	case RN_LCORE_CMD_NOTIFY_OPEN:
		if (h->notify_open_rc == 0 && req->local.n_qps < RN_EP_MAX_QPS)
			req->local.qps[req->local.n_qps++] =
				(struct rn_ep_qp_info){
					.kind = RN_EP_QP_NOTIFY, .qpn = 0x300,
					.psn = 1, .recv_depth = 16,
					.slot_size = 4096, .credits = 16 };
		answer(h, RN_LCORE_EVENT_NOTIFY_OPENED, h->notify_open_rc,
		       cmd->cookie);
		break;
	case RN_LCORE_CMD_NOTIFY_CONNECT:
		answer(h, RN_LCORE_EVENT_NOTIFY_CONNECTED, 0, cmd->cookie);
		break;
	default:
		break;   /* ENABLE, DROP, CLOSE: no answer */
	}
}

/* The fake worker's loop turn, then the control thread's own. */
static void
tick(struct rn_control *ctl, void *arg)
{
	struct rn_ph_plane *h = arg;
	struct rn_lcore_cmd cmd;
	struct rn_lcore_event ev;
	void (*call)(struct rn_ph_plane *h, void *arg);
	unsigned int kept = 0;

	for (unsigned int i = 0; i < h->n_held; i++) {
		if (__atomic_load_n(&h->hold[h->held[i].type], __ATOMIC_ACQUIRE))
			h->held[kept++] = h->held[i];
		else
			execute(h, &h->held[i]);
	}
	h->n_held = kept;
	while (rte_ring_sc_dequeue_elem(h->lc.cmd_ring, &cmd, sizeof(cmd)) == 0) {
		unsigned int n = h->n_cmds;

		if (n < H_MAX_CMDS) {
			h->cmds[n] = cmd.type;
			__atomic_store_n(&h->n_cmds, n + 1, __ATOMIC_RELEASE);
		}
		if (cmd.type < RTE_DIM(h->hold) &&
		    __atomic_load_n(&h->hold[cmd.type], __ATOMIC_ACQUIRE) &&
		    h->n_held < RTE_DIM(h->held))
			h->held[h->n_held++] = cmd;
		else
			execute(h, &cmd);
	}
	__atomic_fetch_add(&h->lc.stats.loops, 1, __ATOMIC_RELAXED);
	while (rte_ring_sc_dequeue_elem(h->events, &ev, sizeof(ev)) == 0)
		rn_plane_event(h->pl, &ev);
	call = __atomic_load_n(&h->call, __ATOMIC_ACQUIRE);
	if (call != NULL) {
		call(h, h->call_arg);
		__atomic_store_n(&h->call, NULL, __ATOMIC_RELEASE);
	}
	rn_plane_tick(h->pl);
	if (!__atomic_load_n(&h->stopping, __ATOMIC_ACQUIRE))
		return;
	/* Stopping: shut the plane down, answer its closes, then leave. */
	if (!h->shut) {
		rn_plane_shutdown(h->pl);
		h->shut = true;
	}
	if (rn_plane_requests_out(h->pl) == 0) {
		rn_plane_close(h->pl);
		rn_control_stop(ctl);
	}
}

static void *
control_thread(void *arg)
{
	struct rn_ph_plane *h = arg;

	rn_control_run(h->ctl);
	return NULL;
}

struct rn_ph_plane *
rn_ph_start(const char *name, uint32_t timeout_ms, bool notify)
{
	return rn_ph_start_secret(name, timeout_ms, notify, NULL);
}

struct rn_ph_plane *
rn_ph_start_secret(const char *name, uint32_t timeout_ms, bool notify,
		   const char *key)
{
	struct rn_ph_plane *h = calloc(1, sizeof(*h));
	char ring[RTE_RING_NAMESIZE], why[160] = "";

	assert_non_null(h);
	eal_once();
	rn_config_defaults(&h->cfg);
	snprintf(h->cfg.dataplane.name, sizeof(h->cfg.dataplane.name), "%s", name);
	snprintf(h->cfg.control.listen, sizeof(h->cfg.control.listen),
		 "127.0.0.1");
	h->cfg.control.port = 0;
	h->cfg.control.connect_timeout_ms = timeout_ms;
	h->cfg.control.heartbeat_ms = 60000;
	h->cfg.control.dead_after_ms = 120000;
	h->cfg.notify.enabled = notify;
	h->cfg.nic.data_qps = 1;
	if (key != NULL) {
		h->cfg.control.secret_len[0] = (uint32_t)strlen(key);
		memcpy(h->cfg.control.secret[0], key, strlen(key));
		h->cfg.control.accept_unknown = true;
	}
	snprintf(ring, sizeof(ring), "rn_ph_cmd_%u", ring_serial);
	h->lc.cmd_ring = rte_ring_create_elem(ring, sizeof(struct rn_lcore_cmd),
					      RN_LCORE_RING_SIZE, SOCKET_ID_ANY,
					      RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(ring, sizeof(ring), "rn_ph_ev_%u", ring_serial);
	h->events = rte_ring_create_elem(ring, sizeof(struct rn_lcore_event),
					 RN_LCORE_RING_SIZE, SOCKET_ID_ANY,
					 RING_F_SC_DEQ);
	snprintf(ring, sizeof(ring), "rn_ph_uses_%u", ring_serial);
	h->uses = rte_ring_create_elem(ring, sizeof(uint32_t), 64, SOCKET_ID_ANY,
				       RING_F_SC_DEQ);
	snprintf(ring, sizeof(ring), "rn_ph_in_%u", ring_serial);
	h->tcp_in = rte_ring_create_elem(ring, sizeof(struct rn_notify_delivery),
					 H_TCP_IN_ROOM + 1, SOCKET_ID_ANY,
					 RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(ring, sizeof(ring), "rn_ph_done_%u", ring_serial++);
	h->completions = rte_ring_create_elem(ring, sizeof(struct rn_notify_event),
					      64, SOCKET_ID_ANY, RING_F_SC_DEQ);
	assert_non_null(h->uses);
	assert_non_null(h->tcp_in);
	assert_non_null(h->completions);
	assert_non_null(h->lc.cmd_ring);
	assert_non_null(h->events);
	h->lc.lcore_id = 5;
	h->lc.idle = RN_IDLE_BUSY;
	h->workers[0] = &h->lc;
	h->fd = -1;
	assert_int_equal(rn_control_create(TICK_MS, tick, h, &h->ctl), 0);
	if (rn_plane_create(&h->cfg, h->ctl, h->workers, 1, &h->pl, why,
			    sizeof(why)) != 0)
		fail_msg("rn_plane_create: %s", why);
	rn_plane_set_notify(h->pl, h->uses, h->tcp_in, h->completions);
	assert_int_equal(pthread_create(&h->thread, NULL, control_thread, h), 0);
	return h;
}

void
rn_ph_stop(struct rn_ph_plane *h)
{
	struct rn_notify_delivery d;

	if (h->fd >= 0)
		close(h->fd);
	/* Any answer still held goes now: the plane waits for its closes. */
	for (unsigned int i = 0; i < RTE_DIM(h->hold); i++)
		__atomic_store_n(&h->hold[i], false, __ATOMIC_RELEASE);
	__atomic_store_n(&h->stopping, true, __ATOMIC_RELEASE);
	pthread_join(h->thread, NULL);
	rn_plane_free(h->pl);
	rn_control_destroy(h->ctl);
	rte_ring_free(h->lc.cmd_ring);
	rte_ring_free(h->events);
	rte_ring_free(h->uses);
	while (rte_ring_sc_dequeue_elem(h->tcp_in, &d, sizeof(d)) == 0)
		free(d.frame);
	rte_ring_free(h->tcp_in);
	rte_ring_free(h->completions);
	free(h);
}

int
rn_ph_teardown(void **state)
{
	rn_ph_stop(*state);
	return 0;
}

void
rn_ph_event(struct rn_ph_plane *h, uint16_t type, int32_t arg, uint64_t cookie)
{
	struct rn_lcore_event ev = { .type = type, .lcore_id = 5, .arg = arg,
				     .cookie = cookie };

	assert_int_equal(rte_ring_mp_enqueue_elem(h->events, &ev, sizeof(ev)),
			 0);
}

void
rn_ph_bay_free(struct rn_ph_plane *h, bool after_drop)
{
	rn_ph_event(h, RN_LCORE_EVENT_BAY_FREE, after_drop ? 1 : 0, 0);
}

void
rn_ph_hold(struct rn_ph_plane *h, uint32_t type, bool on)
{
	__atomic_store_n(&h->hold[type], on, __ATOMIC_RELEASE);
}

unsigned int
rn_ph_cmd_count(struct rn_ph_plane *h, uint32_t type)
{
	unsigned int n = __atomic_load_n(&h->n_cmds, __ATOMIC_ACQUIRE), count = 0;

	for (unsigned int i = 0; i < n; i++)
		count += h->cmds[i] == type;
	return count;
}

bool
rn_ph_wait_cmds(struct rn_ph_plane *h, uint32_t type, unsigned int n)
{
	uint64_t until = rn_now_ms() + H_WAIT_MS;

	while (rn_ph_cmd_count(h, type) < n) {
		if (rn_now_ms() > until)
			return false;
		rn_ph_sleep_ms(1);
	}
	return true;
}

bool
rn_ph_info(struct rn_ph_plane *h, const char *name, struct rn_ep_info *out)
{
	static struct rn_ep_info all[RN_MAX_ENDPOINTS];
	unsigned int n = rn_plane_snapshot(h->pl, all, RN_MAX_ENDPOINTS);

	for (unsigned int i = 0; i < n; i++) {
		if (strcmp(all[i].name, name) == 0) {
			*out = all[i];
			return true;
		}
	}
	return false;
}

bool
rn_ph_wait_state(struct rn_ph_plane *h, const char *name,
		 enum rn_ep_state state)
{
	uint64_t until = rn_now_ms() + H_WAIT_MS;
	struct rn_ep_info info;

	while (!rn_ph_info(h, name, &info) || info.state != state) {
		if (rn_now_ms() > until)
			return false;
		rn_ph_sleep_ms(1);
	}
	return true;
}

bool
rn_ph_wait_native(struct rn_ph_plane *h, const char *name, bool native)
{
	uint64_t until = rn_now_ms() + H_WAIT_MS;
	struct rn_ep_info info;

	while (!rn_ph_info(h, name, &info) || info.native != native) {
		if (rn_now_ms() > until)
			return false;
		rn_ph_sleep_ms(1);
	}
	return true;
}

void
rn_ph_print(struct rn_ph_plane *h, const char *name)
{
	struct rn_ep_info i;
	unsigned int n = __atomic_load_n(&h->n_cmds, __ATOMIC_ACQUIRE);

	if (!rn_ph_info(h, name, &i)) {
		print_message("# no endpoint %s\n", name);
		return;
	}
	print_message("# endpoint %s: %s, generation %u, native %d, added %lu, "
		      "last error '%s'; commands:", i.name,
		      rn_ep_state_name(i.state), i.generation, i.native,
		      (unsigned long)i.native_added, i.last_error);
	for (unsigned int k = 0; k < n; k++)
		print_message(" %u", h->cmds[k]);
	print_message("\n");
}

void
rn_ph_peer_send(struct rn_ph_plane *h, const uint8_t *frame, size_t len)
{
	assert_true(len > 0);
	assert_int_equal(send(h->fd, frame, len, MSG_NOSIGNAL), (ssize_t)len);
}

void
rn_ph_peer_send_step(struct rn_ph_plane *h, uint8_t step, uint8_t reason,
		 uint16_t offer)
{
	rn_ph_peer_send_step_of(h, H_PEER_GENERATION, step, reason, offer);
}

void
rn_ph_peer_send_step_of(struct rn_ph_plane *h, uint32_t generation, uint8_t step,
		    uint8_t reason, uint16_t offer)
{
	uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_NOTIFY_QP_FIXED +
		      RN_PROTO_QP_SIZE];
	struct rn_proto_qp qp = { .kind = RN_PROTO_QP_NOTIFY, .qpn = 0x400,
				  .psn = 1, .recv_depth = 16, .slot_size = 4096,
				  .credits = 16 };
	bool with_qp = step == RN_NOTIFY_QP_OFFER || step == RN_NOTIFY_QP_ACCEPT;

	rn_ph_peer_send(h, frame, rn_proto_encode_notify_qp(frame, sizeof(frame),
			generation, step, reason, offer,
			with_qp ? &qp : NULL));
}

int
rn_ph_peer_recv(struct rn_ph_plane *h, uint32_t wait_ms)
{
	uint64_t until = rn_now_ms() + wait_ms;

	for (;;) {
		char why[160];
		size_t used = 0;
		int rc = rn_proto_decode(h->rx, h->rx_len, &h->last, &used, why,
					 sizeof(why));
		struct pollfd p = { .fd = h->fd, .events = POLLIN };
		uint64_t now;
		ssize_t n;

		if (rc < 0)
			fail_msg("the plane sent a bad frame: %s", why);
		if (rc == 1) {
			/* The frame's pointers (NOTIFY) stay valid in a copy. */
			memcpy(h->last_buf, h->rx, used);
			rn_proto_decode(h->last_buf, used, &h->last, &used, why,
					sizeof(why));
			memmove(h->rx, h->rx + used, h->rx_len - used);
			h->rx_len -= used;
			if (h->last.type == RN_PROTO_HEARTBEAT)
				continue;
			return 1;
		}
		now = rn_now_ms();
		if (now >= until)
			return 0;
		if (poll(&p, 1, (int)(until - now)) <= 0)
			return 0;
		n = recv(h->fd, h->rx + h->rx_len, sizeof(h->rx) - h->rx_len, 0);
		if (n <= 0)
			return -1;
		h->rx_len += (size_t)n;
	}
}

uint16_t
rn_ph_expect_step(struct rn_ph_plane *h, uint8_t step)
{
	int rc = rn_ph_peer_recv(h, H_WAIT_MS);

	if (rc != 1)
		fail_msg("expected NOTIFY_QP step %u, got %s", step,
			 rc == 0 ? "nothing" : "the connection closed");
	if (h->last.type != RN_PROTO_NOTIFY_QP || h->last.notify_qp.step != step)
		fail_msg("expected NOTIFY_QP step %u, got %s step %u", step,
			 rn_proto_type_name(h->last.type),
			 h->last.type == RN_PROTO_NOTIFY_QP ?
			 h->last.notify_qp.step : 0);
	return h->last.notify_qp.offer;
}

void
rn_ph_call(struct rn_ph_plane *h, void (*fn)(struct rn_ph_plane *h, void *arg),
	   void *arg)
{
	uint64_t until = rn_now_ms() + H_WAIT_MS;

	h->call_arg = arg;
	__atomic_store_n(&h->call, fn, __ATOMIC_RELEASE);
	while (__atomic_load_n(&h->call, __ATOMIC_ACQUIRE) != NULL) {
		if (rn_now_ms() > until)
			fail_msg("the control thread did not make a call");
		rn_ph_sleep_ms(1);
	}
}

void
rn_ph_peer_close(struct rn_ph_plane *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	h->rx_len = 0;
}

void
rn_ph_peer_connect(struct rn_ph_plane *h, uint32_t caps, bool native)
{
	rn_ph_peer_hello(h, caps, native);
	rn_ph_peer_finish(h);
}

/* The caller's side of the challenge exchange, with the plane's own
 * secret: CHALLENGE, the plane's ANSWER (its proof checked), PROOF. */
static void
peer_authenticate(struct rn_ph_plane *h, uint64_t session)
{
	struct rn_proto_auth a = { .name = H_PEER_NAME, .session_id = session };
	uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_AUTH_MAX];
	uint8_t mine[RN_PROTO_NONCE_SIZE], mac[RN_PROTO_MAC_SIZE];
	struct rn_proto_transcript t;

	assert_int_equal(rn_proto_nonce(mine), 0);
	memcpy(a.nonce, mine, sizeof(mine));
	rn_ph_peer_send(h, frame, rn_proto_encode_auth(frame, sizeof(frame),
						       RN_PROTO_CHALLENGE, &a));
	assert_int_equal(rn_ph_peer_recv(h, H_WAIT_MS), 1);
	assert_int_equal(h->last.type, RN_PROTO_ANSWER);
	t = (struct rn_proto_transcript){
		.caller = H_PEER_NAME, .callee = h->cfg.dataplane.name,
		.caller_session = session,
		.callee_session = h->last.auth.session_id,
		.caller_nonce = mine, .callee_nonce = h->last.auth.nonce };
	assert_int_equal(rn_proto_proof(h->cfg.control.secret[0],
					h->cfg.control.secret_len[0],
					RN_PROTO_ROLE_CALLEE, &t, mac), 0);
	assert_true(rn_proto_proof_equal(mac, h->last.auth.proof));
	assert_int_equal(rn_proto_proof(h->cfg.control.secret[0],
					h->cfg.control.secret_len[0],
					RN_PROTO_ROLE_CALLER, &t, a.proof), 0);
	rn_ph_peer_send(h, frame, rn_proto_encode_auth(frame, sizeof(frame),
						       RN_PROTO_PROOF, &a));
}

void
rn_ph_peer_hello(struct rn_ph_plane *h, uint32_t caps, bool native)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(rn_plane_port(h->pl)) };
	struct rn_proto_hello hello = {
		.name = H_PEER_NAME, .caps = caps,
		.session_id = h->peer_session != 0 ? h->peer_session :
			      H_PEER_SESSION,
		.generation = H_PEER_GENERATION, .mtu = 3, .n_qps = 1,
		.probe_addr = 0x2000, .probe_rkey = 2,
		.qps = { { .kind = RN_PROTO_QP_DATA, .qpn = 0x500, .psn = 1 } },
	};
	uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_HELLO_MAX];

	if (native) {
		hello.caps |= RN_CAP_NATIVE_NOTIFY;
		hello.qps[hello.n_qps++] = (struct rn_proto_qp){
			.kind = RN_PROTO_QP_NOTIFY, .qpn = 0x501, .psn = 1,
			.recv_depth = 16, .slot_size = 4096, .credits = 16 };
	}
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	h->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(h->fd >= 0);
	if (h->rcvbuf != 0)
		assert_int_equal(setsockopt(h->fd, SOL_SOCKET, SO_RCVBUF,
					    &h->rcvbuf, sizeof(h->rcvbuf)), 0);
	assert_int_equal(connect(h->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (h->cfg.control.secret_len[0] != 0 && !h->peer_unproven)
		peer_authenticate(h, hello.session_id);
	rn_ph_peer_send(h, frame, rn_proto_encode_hello(frame, sizeof(frame),
						    RN_PROTO_HELLO, &hello));
}

void
rn_ph_peer_finish(struct rn_ph_plane *h)
{
	uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_HELLO_MAX];

	assert_int_equal(rn_ph_peer_recv(h, H_WAIT_MS), 1);
	assert_int_equal(h->last.type, RN_PROTO_ACCEPT);
	rn_ph_peer_send(h, frame, rn_proto_encode_ready(frame, sizeof(frame),
						    H_PEER_GENERATION));
	if (!rn_ph_wait_state(h, H_PEER_NAME, RN_EP_CONNECTED)) {
		rn_ph_print(h, H_PEER_NAME);
		fail_msg("the plane did not connect the peer");
	}
}
