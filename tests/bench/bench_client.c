/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lcore's side of client processes, run under callgrind by
 * scripts/bench-client-instructions.sh: two lcores in this process, each
 * with its sim device and the daemon's default [notify] (256 slots of
 * 64 KiB, max_inline 64), one endpoint between them with a native
 * channel, their loops turned by hand as tests/lcore does. Mode `node`
 * sends notifications through the embedded API's rings (a request of one
 * each: send_one(), then received() and repost() at the other end); mode
 * `client` sends the same notifications (name "bulk", msg to make BYTES)
 * from a client process's submit ring to an agent at the other end
 * (client_send_one(), then received() with the one copy into the receive
 * buffer and the repost). One notification per turn of each loop, so
 * nothing is batched that a one-at-a-time sender would not batch. The
 * script reads the lcore's functions by name from callgrind's output.
 * Usage: bench_client node|client [BYTES [COUNT [AGENT_LEN]]]
 * RN_BENCH_MAX_INLINE=N sets [notify] max_inline (64).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_malloc.h>

#include "lcore_pvt.h"
#include "rn_client_region.h"
#include "rn_cq.h"
#include "rn_lcore_client.h"

#define RING_SIZE 256
#define WAIT_TURNS 1000000

struct end {
	struct rn_lcore *lc;
	struct rn_ep_request req;
	struct rte_ring *completions;
	struct rn_client_link link;
};

static struct end A, B;
static struct rte_ring *events;
static int control_wake_fd;
static uint32_t slot_size;

static void
die(const char *what)
{
	fprintf(stderr, "bench_client: %s\n", what);
	exit(1);
}

/* Which turns are counted: see lcore_work(). */
static enum { SETTING_UP, MEASURING, IDLING } phase;

/*
 * What the lcore does in a turn besides its device and its CQ poll: the
 * completions it handles, the embedded API's rings, the clients' rings.
 * The script counts it per side and phase by the callers' names below,
 * and takes the idle turns' cost per turn off the measured turns'.
 */
static __rte_always_inline void
lcore_work(struct rn_lcore *lc, const struct rn_wc *wc, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		rn_lcore_ep_completion(lc, &wc[i]);
	rn_lcore_notify_poll(lc);
	if (lc->n_clients != 0)
		rn_lcore_client_poll(lc);
}

/* One symbol each, never folded into one by gcc's identical code
 * folding (noipa; clang, which has no such attribute, folds none), so
 * that callgrind counts each apart. */
#ifdef __clang__
#define SIDE_WORK_ATTR __attribute__((noinline))
#else
#define SIDE_WORK_ATTR __attribute__((noipa))
#endif
#define SIDE_WORK(fn)                                                  \
	static SIDE_WORK_ATTR void                                     \
	fn(struct rn_lcore *lc, const struct rn_wc *wc, unsigned int n) \
	{                                                              \
		lcore_work(lc, wc, n);                                 \
	}
SIDE_WORK(sender_work)
SIDE_WORK(receiver_work)
SIDE_WORK(sender_idle)
SIDE_WORK(receiver_idle)
SIDE_WORK(setup_work)

static void
turn(struct rn_lcore *lc)
{
	struct rn_wc wc[RN_LCORE_BURST];
	struct rn_lcore_event ev;
	unsigned int n = 0;

	rn_nic_progress(lc->nic);
	for (uint32_t c = 0; c < lc->n_cqs && n < RN_LCORE_BURST; c++)
		n += rn_cq_poll(&lc->cqs[c].cq, wc + n, RN_LCORE_BURST - n);
	if (phase == SETTING_UP)
		setup_work(lc, wc, n);
	else if (phase == MEASURING)
		(lc == A.lc ? sender_work : receiver_work)(lc, wc, n);
	else
		(lc == A.lc ? sender_idle : receiver_idle)(lc, wc, n);
	while (rte_ring_sc_dequeue_elem(events, &ev, sizeof(ev)) == 0)
		;
}

static void
command(struct end *e, uint32_t type)
{
	struct rn_lcore_cmd cmd = { .type = type, .cookie = (uintptr_t)&e->req };

	rn_lcore_ep_command(e->lc, &cmd);
}

static void
end_up(struct end *e, unsigned int id)
{
	struct rn_config cfg;
	char why[256] = "";
	char name[32];

	rn_config_defaults(&cfg);
	cfg.nic.provider = RN_NIC_SIM;
	cfg.notify.enabled = true;
	cfg.notify.endpoints_per_lcore = 1;
	if (getenv("RN_BENCH_MAX_INLINE") != NULL)
		cfg.notify.max_inline = (uint32_t)atoi(
			getenv("RN_BENCH_MAX_INLINE"));
	slot_size = cfg.notify.slot_size;
	e->lc = rte_zmalloc("bench_lcore", sizeof(*e->lc), RTE_CACHE_LINE_SIZE);
	if (e->lc == NULL ||
	    rn_lcore_init(e->lc, id, &cfg, events, control_wake_fd,
			  why, sizeof(why)) != 0)
		die(why[0] ? why : "no memory");
	snprintf(name, sizeof(name), "bench_cmpl_%u", id);
	e->completions = rte_ring_create_elem(name,
		sizeof(struct rn_notify_event), 1024, SOCKET_ID_ANY,
		RING_F_SC_DEQ);
	if (e->completions == NULL)
		die("completions ring");
	e->lc->notify_completions = e->completions;
	e->req = (struct rn_ep_request){
		.ep_index = 3 + id, .peer_tag = 0x7a60 + id, .n_data_qps = 1,
		.notify = true, .notify_depth = cfg.notify.slots,
		.notify_slot_size = cfg.notify.slot_size,
		.qp_timeout = 14, .qp_retry_cnt = 7,
		.local = { .session_id = 100 + id, .generation = 1 },
	};
	snprintf(e->req.local.name, sizeof(e->req.local.name), "%s",
		 id == 0 ? "node-a" : "node-b");
	command(e, RN_LCORE_CMD_EP_OPEN);
}

static void
connect_ends(void)
{
	for (int i = 0; i < 100; i++) {
		turn(A.lc);
		turn(B.lc);
	}
	A.req.remote = B.req.local;
	B.req.remote = A.req.local;
	command(&A, RN_LCORE_CMD_EP_CONNECT);
	command(&B, RN_LCORE_CMD_EP_CONNECT);
	for (int i = 0; i < 100; i++) {
		turn(A.lc);
		turn(B.lc);
	}
	if (A.req.ep == NULL || A.req.ep->n.state != RN_CHANNEL_NATIVE ||
	    B.req.ep == NULL || B.req.ep->n.state != RN_CHANNEL_NATIVE)
		die("no native channel");
}

static void
client_up(struct end *e, const char *agent)
{
	uint64_t size = rn_client_region_size(1, RING_SIZE, slot_size);
	struct rn_lcore_cmd cmd = { .type = RN_LCORE_CMD_CLIENT_ADD,
				    .cookie = (uintptr_t)&e->link };
	void *mem = size != 0 ? aligned_alloc(64, size) : NULL;

	if (mem == NULL)
		die("no region");
	memset(mem, 0, size);
	if (rn_client_region_init(mem, 1, RING_SIZE, slot_size) != 0)
		die("region init");
	e->link = (struct rn_client_link){
		.region = mem, .region_size = size, .client_id = 1,
		.efd = eventfd(0, EFD_NONBLOCK),
		.agent_len = (uint8_t)strlen(agent),
	};
	memcpy(e->link.agent, agent, e->link.agent_len);
	rn_lcore_client_command(e->lc, &cmd);
	if (e->lc->n_clients != 1)
		die("client not added");
}

static void
end_down(struct end *e)
{
	rn_lcore_fini(e->lc);
	rte_ring_free(e->completions);
	rte_free(e->lc);
	if (e->link.region != NULL) {
		close(e->link.efd);
		free(e->link.region);
	}
}

/* One notification from A's application to B's, one turn each. */
static void
send_node(const void *msg, uint32_t msg_len, uint32_t i)
{
	struct rn_notify_out out = { .name = "bulk", .name_len = 4,
				     .msg = msg, .msg_len = msg_len,
				     .cookie = i };
	struct rn_notify_request req = { .ep_index = A.req.ep_index,
					 .out = &out, .count = 1,
					 .result = RN_NOTIFY_PENDING };
	struct rn_notify_request *p = &req;
	struct rn_notify_delivery d;
	unsigned int turns = 0;

	for (;;) {
		if (rte_ring_mp_enqueue(A.lc->notify_requests, p) != 0)
			die("request ring full");
		turn(A.lc);
		if (req.result == 1)
			break;
		if (req.result != -EAGAIN || ++turns == WAIT_TURNS)
			die("node-level send failed");
		req.result = RN_NOTIFY_PENDING;
		turn(B.lc);
	}
	for (turns = 0;; turns++) {
		turn(B.lc);
		turn(A.lc);
		if (rte_ring_sc_dequeue_elem(B.lc->notify_deliveries, &d,
					     sizeof(d)) == 0)
			break;
		if (turns == WAIT_TURNS)
			die("node-level notification lost");
	}
	if (rte_ring_sp_enqueue_elem(B.lc->notify_releases, &d,
				     sizeof(d)) != 0)
		die("release ring full");
}

/* One notification from A's client to B's agent, one turn each. */
static void
send_client(const void *msg, uint32_t msg_len, uint32_t i)
{
	const struct rn_client_region *ra = A.link.region;
	const struct rn_client_region *rb = B.link.region;
	struct rte_ring *submit = rn_client_submit_ring(ra, 0);
	struct rte_ring *deliver = rn_client_deliver_ring(rb, 0);
	struct rn_client_send_hdr h = { .ep_tag = A.req.peer_tag,
					.name_len = 4, .msg_len = msg_len,
					.agent_len = B.link.agent_len };
	struct rn_client_entry e = { .type = RN_CLIENT_ENTRY_SEND,
				     .ep_index = (uint16_t)A.req.ep_index,
				     .cookie = i };
	uint8_t *buf;
	unsigned int turns;

	if (rte_ring_enqueue_bulk_elem_start(submit, 1, NULL) == 0)
		die("submit ring full");
	buf = rn_client_send_buf(ra, 0, submit->prod.tail);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), B.link.agent, h.agent_len);
	memcpy(buf + sizeof(h) + h.agent_len, "bulk", 4);
	memcpy(buf + sizeof(h) + h.agent_len + 4, msg, msg_len);
	rte_ring_enqueue_elem_finish(submit, &e, sizeof(e), 1);
	for (turns = 0; !rte_ring_empty(submit); turns++) {
		turn(A.lc);
		if (turns == WAIT_TURNS)
			die("client send stuck");
		if (!rte_ring_empty(submit))
			turn(B.lc);
	}
	for (turns = 0;; turns++) {
		struct rn_client_entry got;

		turn(B.lc);
		turn(A.lc);
		if (rte_ring_dequeue_bulk_elem_start(deliver, &got, sizeof(got),
						     1, NULL) == 1) {
			if (got.type != RN_CLIENT_ENTRY_DELIVERY)
				die("not a delivery");
			rte_ring_dequeue_elem_finish(deliver, 1);
			break;
		}
		if (turns == WAIT_TURNS)
			die("client notification lost");
	}
}

int
main(int argc, char **argv)
{
	char prefix[64];
	char *eal[] = { argv[0], "-l", "0", "--no-huge", "--no-shconf",
			"-m", "512", "--no-pci", "--no-telemetry",
			"--log-level=lib.eal:error", "--log-level=rnotify*:error",
			prefix, NULL };
	bool client = argc > 1 && strcmp(argv[1], "client") == 0;
	uint32_t bytes = argc > 2 ? (uint32_t)atoi(argv[2]) : 64;
	uint32_t count = argc > 3 ? (uint32_t)atoi(argv[3]) : 5000;
	uint32_t agent_len = argc > 4 ? (uint32_t)atoi(argv[4]) : 36;
	char agent_a[RN_CLIENT_AGENT_MAX + 1], agent_b[RN_CLIENT_AGENT_MAX + 1];
	static uint8_t msg[1024];

	if (argc < 2 || (!client && strcmp(argv[1], "node") != 0) ||
	    bytes < 4 || bytes - 4 > sizeof(msg) || agent_len == 0 ||
	    agent_len > RN_CLIENT_AGENT_MAX)
		die("usage: bench_client node|client [BYTES [COUNT "
		    "[AGENT_LEN]]]");
	snprintf(prefix, sizeof(prefix), "--file-prefix=rn_bench_client_%d",
		 getpid());
	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0)
		die("EAL did not start");
	events = rte_ring_create_elem("bench_events",
				      sizeof(struct rn_lcore_event), 4096,
				      SOCKET_ID_ANY, RING_F_SC_DEQ);
	control_wake_fd = eventfd(0, EFD_NONBLOCK);
	if (events == NULL || control_wake_fd < 0)
		die("events ring");
	end_up(&A, 0);
	end_up(&B, 1);
	connect_ends();
	/* Agents as NIXL names them: 36-byte UUIDs (or AGENT_LEN bytes). */
	memset(agent_a, 'a', agent_len);
	memset(agent_b, 'b', agent_len);
	agent_a[agent_len] = agent_b[agent_len] = '\0';
	memcpy(agent_a, "9b2e4c1a-", RTE_MIN(agent_len, 9u));
	memcpy(agent_b, "5f03d7e2-", RTE_MIN(agent_len, 9u));
	if (client) {
		client_up(&A, agent_a);
		client_up(&B, agent_b);
	}
	phase = MEASURING;
	for (uint32_t i = 0; i < count; i++) {
		if (client)
			send_client(msg, bytes - 4, i);
		else
			send_node(msg, bytes - 4, i);
	}
	/* As many turns with nothing to do, for what a turn costs anyway. */
	phase = IDLING;
	for (uint32_t i = 0; i < count; i++) {
		turn(A.lc);
		turn(B.lc);
	}
	printf("%s %u notifications of %u bytes\n", argv[1], count, bytes);
	/* Everything given back, for the sanitizers' leak check. */
	end_down(&A);
	end_down(&B);
	rte_ring_free(events);
	close(control_wake_fd);
	rte_eal_cleanup();
	return 0;
}
