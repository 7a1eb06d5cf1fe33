/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef TWO_LCORES_H
#define TWO_LCORES_H

/*
 * Two nodes, A and B, for the transfer tests: each a real lcore running
 * rn_lcore_run() in a thread over its own sim device, one endpoint
 * between them with DATA_QPS data QPs and a native channel. The test
 * plays the control thread: commands, events (one ring for both lcores),
 * the endpoint's opening, connection, probe and closing. A test adds its
 * own fields to struct side by defining SIDE_EXTRA before including this.
 */

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_eal.h>
#include <rte_malloc.h>

#include "lcore_pvt.h"

#define DATA_QPS 4
#define WAIT_MS 60000
#define QP_TIMEOUT 16            /* 4.096 us << 16: 268 ms per try */

#ifndef SIDE_EXTRA
#define SIDE_EXTRA
#endif

struct side {
	const char *name, *peer;
	struct rn_lcore *lc;
	struct rn_ep_request req;
	struct rte_ring *completions;
	pthread_t thread;
	bool running;
	bool ep_up;
	uint64_t session;
	SIDE_EXTRA
};

static struct side A = { .name = "a", .peer = "b", .session = 100 };
static struct side B = { .name = "b", .peer = "a", .session = 200 };
static struct rte_ring *events;
static int wake_fd;
static struct rn_lcore_event seen[256];
static unsigned int n_seen;
static uint32_t generation = 1;
static uint64_t rng;
static uint8_t qp_timeout = QP_TIMEOUT;   /* of the next endpoints */

static inline uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void
nap_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static inline uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* ---- the lcores, as threads ---- */

static inline void *
run_lcore(void *arg)
{
	rn_lcore_run(arg);
	return NULL;
}

static inline void
start(struct side *s)
{
	assert_int_equal(pthread_create(&s->thread, NULL, run_lcore, s->lc), 0);
	s->running = true;
}

static inline void
stop(struct side *s)
{
	struct rn_lcore_cmd cmd = { .type = RN_LCORE_CMD_STOP };

	if (!s->running)
		return;
	assert_int_equal(rn_lcore_cmd_send(s->lc, cmd), 0);
	pthread_join(s->thread, NULL);
	s->running = false;
}

/* Run f on qp, on s's lcore stopped meanwhile (the sim's faults are the
 * owning lcore's to set). */
static inline void
on_lcore(struct side *s, int (*f)(struct rn_qp *), struct rn_qp *qp)
{
	stop(s);
	assert_int_equal(f(qp), 0);
	start(s);
}

static inline void
take_events(void)
{
	struct rn_lcore_event ev;

	while (rte_ring_sc_dequeue_elem(events, &ev, sizeof(ev)) == 0) {
		assert_true(n_seen < RTE_DIM(seen));
		seen[n_seen++] = ev;
	}
}

/* Whether an event of type about cookie came: taken, its arg in *arg
 * (NULL: not wanted). */
static inline bool
got_event(uint16_t type, const void *cookie, int32_t *arg)
{
	take_events();
	for (unsigned int i = 0; i < n_seen; i++) {
		if (seen[i].type != type || seen[i].cookie != (uintptr_t)cookie)
			continue;
		if (arg != NULL)
			*arg = seen[i].arg;
		memmove(&seen[i], &seen[i + 1],
			(n_seen - i - 1) * sizeof(seen[0]));
		n_seen--;
		return true;
	}
	return false;
}

/* Wait for an event of type about cookie and take it: its arg. */
static inline int32_t
wait_event(uint16_t type, const void *cookie)
{
	uint64_t until = now_ms() + WAIT_MS;
	int32_t arg;

	while (!got_event(type, cookie, &arg)) {
		if (now_ms() > until)
			fail_msg("no event %u within %u ms", type, WAIT_MS);
		nap_us(100);
	}
	return arg;
}

/* Whether an event of type about req came (left for wait_event()). */
static inline bool
has_event(uint16_t type, const struct rn_ep_request *req)
{
	take_events();
	for (unsigned int i = 0; i < n_seen; i++)
		if (seen[i].type == type && seen[i].cookie == (uintptr_t)req)
			return true;
	return false;
}

/* A command of type for s's lcore about cookie. */
static inline void
command_to(struct side *s, uint32_t type, const void *cookie)
{
	struct rn_lcore_cmd cmd = { .type = type, .cookie = (uintptr_t)cookie };

	assert_int_equal(rn_lcore_cmd_send(s->lc, cmd), 0);
}

/* An endpoint command of type about s's endpoint. */
static inline void
command(struct side *s, uint32_t type)
{
	command_to(s, type, &s->req);
}

/* ---- the endpoint, as the control plane makes it ---- */

static inline void
ep_request(struct side *s, unsigned int id)
{
	s->req = (struct rn_ep_request){
		.ep_index = 3 + id, .n_data_qps = DATA_QPS, .notify = true,
		.notify_depth = SLOTS, .notify_slot_size = SLOT_SIZE,
		.qp_timeout = qp_timeout, .qp_retry_cnt = 7,
		.peer_tag = 77 + id,
		.local = { .session_id = s->session, .generation = generation },
	};
	snprintf(s->req.local.name, sizeof(s->req.local.name), "%s", s->name);
}

/* Open, connect and probe the endpoint at both ends. */
static inline void
ep_up(void)
{
	ep_request(&A, 0);
	ep_request(&B, 1);
	command(&A, RN_LCORE_CMD_EP_OPEN);
	command(&B, RN_LCORE_CMD_EP_OPEN);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_OPENED, &A.req), 0);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_OPENED, &B.req), 0);
	A.req.remote = B.req.local;
	B.req.remote = A.req.local;
	command(&A, RN_LCORE_CMD_EP_CONNECT);
	command(&B, RN_LCORE_CMD_EP_CONNECT);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_CONNECTED, &A.req), 0);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_CONNECTED, &B.req), 0);
	command(&A, RN_LCORE_CMD_EP_PROBE);
	command(&B, RN_LCORE_CMD_EP_PROBE);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_PROBED, &A.req), 0);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_PROBED, &B.req), 0);
	A.ep_up = B.ep_up = true;
}

/* Close both ends, as the plane does after a failure; the next
 * incarnation gets the next generation. */
static inline void
ep_down(void)
{
	A.ep_up = B.ep_up = false;
	command(&A, RN_LCORE_CMD_EP_CLOSE);
	command(&B, RN_LCORE_CMD_EP_CLOSE);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_CLOSED, &A.req), 0);
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_CLOSED, &B.req), 0);
	n_seen = 0;   /* EP_FAILED and the like, of the old incarnation */
	generation++;
}

/* s's lcore id (its device and completions ring), not running yet. */
static inline void
lcore_up(struct side *s, unsigned int id)
{
	struct rn_config cfg;
	char why[256] = "";
	char name[32];

	rn_config_defaults(&cfg);
	cfg.nic.provider = RN_NIC_SIM;
	snprintf(cfg.control.listen, sizeof(cfg.control.listen), "127.0.0.1");
	cfg.notify.enabled = true;
	cfg.notify.oob_fallback = false;
	cfg.notify.slots = SLOTS;
	cfg.notify.slot_size = SLOT_SIZE;
	cfg.notify.max_inline = 64;
	cfg.notify.endpoints_per_lcore = 1;
	cfg.dataplane.idle = RN_IDLE_ADAPTIVE;
	s->lc = rte_zmalloc("test_lcore", sizeof(*s->lc), RTE_CACHE_LINE_SIZE);
	assert_non_null(s->lc);
	if (rn_lcore_init(s->lc, id, &cfg, events, wake_fd, why,
			  sizeof(why)) != 0)
		fail_msg("rn_lcore_init: %s", why);
	snprintf(name, sizeof(name), "test_xcmpl_%u", id);
	s->completions = rte_ring_create_elem(name,
		sizeof(struct rn_notify_event), 1024, SOCKET_ID_ANY,
		RING_F_SC_DEQ);
	assert_non_null(s->completions);
	s->lc->notify_completions = s->completions;
}

/* After stop(s): what lcore_up() made. */
static inline void
lcore_down(struct side *s)
{
	rn_lcore_fini(s->lc);
	rte_ring_free(s->completions);
	rte_free(s->lc);
}

/* EAL and the event ring, for a test program named name: 0, 77 (EAL
 * did not start: SKIP, said), or 1. */
static inline int
two_lcores_init(char *argv0, const char *name)
{
	char prefix[64];
	char *eal[] = { argv0, "-l", "0", "--no-huge", "--no-shconf",
			"-m", "256", "--no-pci", "--no-telemetry",
			"--log-level=lib.eal:error", prefix, NULL };

	/* One test alone, by name (a glob): RNOTIFY_TEST_FILTER. */
	if (getenv("RNOTIFY_TEST_FILTER") != NULL)
		cmocka_set_test_filter(getenv("RNOTIFY_TEST_FILTER"));
	snprintf(prefix, sizeof(prefix), "--file-prefix=rn_test_%s_%d", name,
		 getpid());
	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0) {
		printf("1..0 # SKIP EAL did not start\n");
		return 77;
	}
	events = rte_ring_create_elem("test_events",
				      sizeof(struct rn_lcore_event), 1024,
				      SOCKET_ID_ANY, RING_F_SC_DEQ);
	wake_fd = eventfd(0, EFD_NONBLOCK);
	return events != NULL && wake_fd >= 0 ? 0 : 1;
}

#endif /* TWO_LCORES_H */
