/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plane's side of client processes (control/endpoint): peer tags, the
 * endpoint table of the clients' status page, the observer's events, and
 * peers added and removed at run time. A real plane on its own control
 * thread, a fake worker at its rings and the test as the peer on loopback
 * (plane_harness.h); the test thread reads the page as a client process
 * does, each entry under its seq.
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

#include <cmocka.h>
#include <rte_seqcount.h>

#include "plane_harness.h"
#include "rn_client.h"
#include "rn_client_shm.h"
#include "rn_test_seed.h"

#define TIMEOUT_MS 500
#define CAPS (RN_CAP_TCP_FALLBACK | RN_CAP_NOTIFY_ENABLED)
#define MAX_EVENTS 64
#define NODE "node"                /* the plane's own name: index 0 */

struct fixture {
	struct rn_ph_plane *h;
	struct rn_client_status_page *page;
	/* What the observer heard, in order; the control thread writes an
	 * event, then release-stores n_ev. */
	struct {
		uint32_t ep_index;
		int type;
		uint8_t state;             /* the page's, during the call */
		char name[RN_CLIENT_NODE_MAX + 1];
	} ev[MAX_EVENTS];
	unsigned int n_ev;
	bool wrong_thread;             /* called off the control thread */
};

static const char *const event_names[] = {
	[RN_CLIENT_EVENT_PEER_DOWN] = "down", [RN_CLIENT_EVENT_PEER_UP] = "up",
	[RN_CLIENT_EVENT_PEER_RESTARTED] = "restarted",
	[RN_CLIENT_EVENT_PEER_REMOVED] = "removed",
};

static const char *const state_names[] = {
	[RN_CLIENT_EP_FREE] = "free", [RN_CLIENT_EP_IDLE] = "idle",
	[RN_CLIENT_EP_CONNECTING] = "connecting",
	[RN_CLIENT_EP_NATIVE] = "native", [RN_CLIENT_EP_NO_NATIVE] = "no-native",
	[RN_CLIENT_EP_DOWN] = "down",
};

/* On the control thread: the page is read without its seq there, as the
 * writer is this thread. */
static void
observer(void *arg, uint32_t ep_index, int event)
{
	struct fixture *f = arg;
	unsigned int n = f->n_ev;

	if (!pthread_equal(pthread_self(), f->h->thread))
		f->wrong_thread = true;
	if (n == MAX_EVENTS || ep_index >= RN_CLIENT_STATUS_ENDPOINTS)
		return;
	f->ev[n].ep_index = ep_index;
	f->ev[n].type = event;
	f->ev[n].state = f->page->ep[ep_index].state;
	memcpy(f->ev[n].name, f->page->ep[ep_index].name, sizeof(f->ev[n].name));
	__atomic_store_n(&f->n_ev, n + 1, __ATOMIC_RELEASE);
}

static void
set_clients(struct rn_ph_plane *h, void *arg)
{
	struct fixture *f = arg;

	rn_plane_set_clients(h->pl, f->page, observer, f);
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->page = aligned_alloc(64, sizeof(*f->page));
	assert_non_null(f->page);
	memset(f->page, 0, sizeof(*f->page));
	f->h = rn_ph_start(NODE, TIMEOUT_MS, true);
	rn_ph_call(f->h, set_clients, f);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	rn_ph_stop(f->h);   /* the plane writes the page until it is gone */
	free(f->page);
	free(f);
	return 0;
}

/* Plane calls that are control thread only. */
struct peer_call {
	const char *name, *address;
	uint16_t port;
	int rc;
};

static void
do_add(struct rn_ph_plane *h, void *arg)
{
	struct peer_call *c = arg;

	c->rc = rn_plane_peer_add(h->pl, c->name, c->address, c->port);
}

static void
do_remove(struct rn_ph_plane *h, void *arg)
{
	struct peer_call *c = arg;

	c->rc = rn_plane_peer_remove(h->pl, c->name);
}

static int
peer_add(struct fixture *f, const char *name, const char *address,
	 uint16_t port)
{
	struct peer_call c = { .name = name, .address = address, .port = port };

	rn_ph_call(f->h, do_add, &c);
	return c.rc;
}

static int
peer_remove(struct fixture *f, const char *name)
{
	struct peer_call c = { .name = name };

	rn_ph_call(f->h, do_remove, &c);
	return c.rc;
}

/* Entry i as a client reads it: a copy no write overlapped. False when
 * writes overlapped every try for H_WAIT_MS (a seq left odd). */
static bool
page_try_read(struct fixture *f, uint32_t i, struct rn_client_status_ep *out)
{
	const struct rn_client_status_ep *e = &f->page->ep[i];
	const rte_seqcount_t *seq = (const rte_seqcount_t *)&e->seq;
	uint64_t until = 0;
	uint32_t sn;

	for (unsigned int tries = 1;; tries++) {
		sn = rte_seqcount_read_begin(seq);
		memcpy(out, e, sizeof(*out));
		if (!rte_seqcount_read_retry(seq, sn))
			break;
		if (tries % 1024 != 0)
			continue;
		if (until == 0)
			until = rn_now_ms() + H_WAIT_MS;
		else if (rn_now_ms() > until)
			return false;
	}
	out->seq = sn;
	return true;
}

static void
page_read(struct fixture *f, uint32_t i, struct rn_client_status_ep *out)
{
	if (!page_try_read(f, i, out))
		fail_msg("entry %u: no read without a write overlapping it "
			 "(seq %u)", i, f->page->ep[i].seq);
}

static uint32_t
page_n(struct fixture *f)
{
	return __atomic_load_n(&f->page->n_endpoints, __ATOMIC_ACQUIRE);
}

/* The index of name in the page, as a client looks it up, or -1. */
static int
page_find(struct fixture *f, const char *name)
{
	uint32_t n = page_n(f);
	struct rn_client_status_ep e;

	for (uint32_t i = 0; i < n; i++) {
		page_read(f, i, &e);
		if (e.tag != 0 && strncmp(e.name, name, sizeof(e.name)) == 0)
			return (int)i;
	}
	return -1;
}

static void
page_print(struct fixture *f)
{
	uint32_t n = page_n(f);
	struct rn_client_status_ep e;

	print_message("# page: %u endpoint(s)\n", n);
	for (uint32_t i = 0; i < n; i++) {
		page_read(f, i, &e);
		print_message("#   %u: '%s' tag %u lcore %u %s seq %u\n", i,
			      e.name, e.tag, e.lcore,
			      e.state < RTE_DIM(state_names) ?
			      state_names[e.state] : "?", e.seq);
	}
}

/* Wait until entry i is in state; its copy in out. Fails the test after
 * H_WAIT_MS, printing the page. */
static void
wait_page(struct fixture *f, uint32_t i, uint8_t state,
	  struct rn_client_status_ep *out)
{
	uint64_t until = rn_now_ms() + H_WAIT_MS;

	for (;;) {
		page_read(f, i, out);
		if (out->state == state)
			break;
		if (rn_now_ms() > until) {
			page_print(f);
			fail_msg("entry %u: %s, not %s", i,
				 state_names[out->state], state_names[state]);
		}
		rn_ph_sleep_ms(1);
	}
	/* Nothing else changes now: the write that showed it is over. */
	assert_int_equal(__atomic_load_n(&f->page->ep[i].seq,
					 __ATOMIC_ACQUIRE) % 2, 0);
}

static unsigned int
wait_events(struct fixture *f, unsigned int n)
{
	uint64_t until = rn_now_ms() + H_WAIT_MS;
	unsigned int have;

	while ((have = __atomic_load_n(&f->n_ev, __ATOMIC_ACQUIRE)) < n &&
	       rn_now_ms() <= until)
		rn_ph_sleep_ms(1);
	return have;
}

static void
print_events(struct fixture *f)
{
	unsigned int n = __atomic_load_n(&f->n_ev, __ATOMIC_ACQUIRE);

	print_message("# %u event(s):", n);
	for (unsigned int i = 0; i < n; i++)
		print_message(" %s(%u, '%s', %s)", event_names[f->ev[i].type],
			      f->ev[i].ep_index, f->ev[i].name,
			      state_names[f->ev[i].state]);
	print_message("\n");
}

static uint32_t
tag_of(struct fixture *f, const char *name)
{
	struct rn_ep_info info;

	if (!rn_ph_info(f->h, name, &info))
		fail_msg("no endpoint %s", name);
	return info.tag;
}

/* The plane's close of the peer's connection: CLOSE (after whatever it
 * had sent before, such as a channel offer), then the end of the stream. */
static void
expect_closed(struct rn_ph_plane *h)
{
	bool closed = false;
	int rc;

	while ((rc = rn_ph_peer_recv(h, H_WAIT_MS)) == 1)
		closed |= h->last.type == RN_PROTO_CLOSE;
	assert_int_equal(rc, -1);
	assert_true(closed);
	rn_ph_peer_close(h);
}

/*
 * Every binding of an index to a name gets a tag of its own, and the QPs
 * opened for it carry it to the lcore; a reconnection is the same binding.
 */
static void
test_tags_reach_requests(void **state)
{
	struct fixture *f = *state;
	struct rn_ph_plane *h = f->h;
	uint32_t tags[5];
	struct rn_client_status_ep e;
	struct rn_ep_info info;
	int index;

	tags[0] = tag_of(f, NODE);
	assert_int_equal(peer_add(f, "a", "127.0.0.2", 7001), 0);
	assert_int_equal(peer_add(f, "b", "127.0.0.3", 7001), 0);
	tags[1] = tag_of(f, "a");
	tags[2] = tag_of(f, "b");
	rn_ph_peer_connect(h, CAPS, true);   /* a caller we did not configure */
	tags[3] = tag_of(f, H_PEER_NAME);
	assert_int_equal(__atomic_load_n(&h->last_peer_tag, __ATOMIC_ACQUIRE),
			 tags[3]);
	index = page_find(f, H_PEER_NAME);
	assert_int_equal(index, 3);
	/* It calls again: new QPs, the same binding and tag. */
	rn_ph_peer_close(h);
	assert_true(rn_ph_wait_state(h, H_PEER_NAME, RN_EP_CLOSED));
	rn_ph_peer_connect(h, CAPS, true);
	assert_int_equal(tag_of(f, H_PEER_NAME), tags[3]);
	assert_int_equal(__atomic_load_n(&h->last_peer_tag, __ATOMIC_ACQUIRE),
			 tags[3]);
	/* Removed, it calls again: unknown, a new binding of the freed
	 * index, with a new tag. */
	assert_int_equal(peer_remove(f, H_PEER_NAME), 0);
	expect_closed(h);
	assert_int_equal(peer_remove(f, H_PEER_NAME), -ENOENT);
	wait_page(f, (uint32_t)index, RN_CLIENT_EP_FREE, &e);
	rn_ph_peer_connect(h, CAPS, true);
	assert_true(rn_ph_info(h, H_PEER_NAME, &info));
	assert_false(info.configured);
	tags[4] = info.tag;
	assert_int_equal(page_find(f, H_PEER_NAME), index);
	assert_int_equal(__atomic_load_n(&h->last_peer_tag, __ATOMIC_ACQUIRE),
			 tags[4]);
	for (unsigned int i = 0; i < RTE_DIM(tags); i++) {
		print_message("# tag %u: %u\n", i, tags[i]);
		assert_int_not_equal(tags[i], 0);
		for (unsigned int j = 0; j < i; j++)
			assert_int_not_equal(tags[i], tags[j]);
	}
}

/* A client thread reading the whole page all along: every copy it gets is
 * one the plane wrote whole. */
struct reader {
	struct fixture *f;
	bool stop;
	unsigned long reads;
	char bad[160];
};

static void *
read_all_along(void *arg)
{
	struct reader *r = arg;
	struct rn_client_status_ep e;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE) &&
	       r->bad[0] == '\0') {
		uint32_t n = page_n(r->f);

		for (uint32_t i = 0; i < n && r->bad[0] == '\0'; i++) {
			if (!page_try_read(r->f, i, &e))
				snprintf(r->bad, sizeof(r->bad), "entry %u: "
					 "seq stays odd", i);
			else if ((e.tag == 0) != (e.state == RN_CLIENT_EP_FREE) ||
			    (e.name[0] != '\0' && e.tag == 0) ||
			    e.state > RN_CLIENT_EP_DOWN || e.seq % 2 != 0)
				snprintf(r->bad, sizeof(r->bad), "entry %u: "
					 "tag %u state %u name '%.31s' seq %u",
					 i, e.tag, e.state, e.name, e.seq);
		}
		r->reads++;
	}
	return NULL;
}

/*
 * The page follows the endpoint: idle, connecting, native, down, no
 * native, and after removal nameless until the lcore gave its QPs back,
 * then free; each change one write under the entry's seq.
 */
static void
test_page_follows_states(void **state)
{
	struct fixture *f = *state;
	struct rn_ph_plane *h = f->h;
	struct reader r = { .f = f };
	struct rn_client_status_ep e;
	uint32_t seq, tag, closes;
	pthread_t reader;
	int i;

	assert_int_equal(pthread_create(&reader, NULL, read_all_along, &r), 0);
	/* What set_clients wrote: this node itself. */
	assert_int_equal(page_n(f), 1);
	wait_page(f, 0, RN_CLIENT_EP_IDLE, &e);
	assert_string_equal(e.name, NODE);
	assert_int_equal(e.tag, tag_of(f, NODE));
	assert_int_equal(e.lcore, 0);

	rn_ph_hold(h, RN_LCORE_CMD_EP_OPEN, true);
	rn_ph_peer_hello(h, CAPS, true);
	assert_true(rn_ph_wait_cmds(h, RN_LCORE_CMD_EP_OPEN, 1));
	i = page_find(f, H_PEER_NAME);
	assert_int_equal(i, 1);
	assert_int_equal(page_n(f), 2);
	wait_page(f, 1, RN_CLIENT_EP_CONNECTING, &e);
	tag = e.tag;
	assert_int_equal(tag, tag_of(f, H_PEER_NAME));
	seq = e.seq;
	rn_ph_hold(h, RN_LCORE_CMD_EP_OPEN, false);
	rn_ph_peer_finish(h);
	wait_page(f, 1, RN_CLIENT_EP_NATIVE, &e);
	assert_true(e.seq > seq);
	seq = e.seq;

	rn_ph_peer_close(h);   /* the peer dies */
	wait_page(f, 1, RN_CLIENT_EP_DOWN, &e);
	assert_true(e.seq > seq);
	seq = e.seq;
	rn_ph_peer_connect(h, CAPS, false);   /* back, with no notify QP */
	wait_page(f, 1, RN_CLIENT_EP_NO_NATIVE, &e);
	assert_true(e.seq > seq);
	assert_int_equal(e.tag, tag);
	assert_string_equal(e.name, H_PEER_NAME);
	seq = e.seq;

	/* Removed while the lcore still holds its QPs: no name (no client
	 * finds it), the same tag, down; then free. */
	rn_ph_hold(h, RN_LCORE_CMD_EP_CLOSE, true);
	closes = rn_ph_cmd_count(h, RN_LCORE_CMD_EP_CLOSE);
	assert_int_equal(peer_remove(f, H_PEER_NAME), 0);
	expect_closed(h);
	assert_true(rn_ph_wait_cmds(h, RN_LCORE_CMD_EP_CLOSE, closes + 1));
	wait_page(f, 1, RN_CLIENT_EP_DOWN, &e);
	assert_true(e.seq > seq);
	assert_int_equal(e.tag, tag);
	assert_string_equal(e.name, "");
	assert_int_equal(page_find(f, H_PEER_NAME), -1);
	assert_int_equal(page_n(f), 2);
	rn_ph_sleep_ms(TIMEOUT_MS / 5);   /* no EP_CLOSED: not freed */
	page_read(f, 1, &e);
	assert_int_equal(e.state, RN_CLIENT_EP_DOWN);
	rn_ph_hold(h, RN_LCORE_CMD_EP_CLOSE, false);
	wait_page(f, 1, RN_CLIENT_EP_FREE, &e);
	assert_int_equal(e.tag, 0);
	assert_int_equal(page_n(f), 1);

	__atomic_store_n(&r.stop, true, __ATOMIC_RELEASE);
	pthread_join(reader, NULL);
	print_message("# reader: %lu passes over the page\n", r.reads);
	if (r.bad[0] != '\0')
		fail_msg("a client read a torn entry: %s", r.bad);
	assert_true(r.reads > 0);
}

static void
expect_event(struct fixture *f, unsigned int k, int type, uint32_t ep_index,
	     uint8_t state)
{
	if (wait_events(f, k + 1) < k + 1 || f->ev[k].type != type ||
	    f->ev[k].ep_index != ep_index || f->ev[k].state != state) {
		print_events(f);
		fail_msg("event %u: expected %s of %u with the page %s", k,
			 event_names[type], ep_index, state_names[state]);
	}
}

/*
 * Up (the first connect too), down, up again (same session), down,
 * restarted (a new session id), removed: in that order, each once, on the
 * control thread, each after the page shows it.
 */
static void
test_events_in_order(void **state)
{
	struct fixture *f = *state;
	struct rn_ph_plane *h = f->h;
	struct rn_client_status_ep e;
	const uint32_t ep = 1;

	rn_ph_peer_connect(h, CAPS, true);
	expect_event(f, 0, RN_CLIENT_EVENT_PEER_UP, ep, RN_CLIENT_EP_NATIVE);
	rn_ph_peer_close(h);
	expect_event(f, 1, RN_CLIENT_EVENT_PEER_DOWN, ep, RN_CLIENT_EP_DOWN);
	rn_ph_peer_connect(h, CAPS, true);
	expect_event(f, 2, RN_CLIENT_EVENT_PEER_UP, ep, RN_CLIENT_EP_NATIVE);
	rn_ph_peer_close(h);
	expect_event(f, 3, RN_CLIENT_EVENT_PEER_DOWN, ep, RN_CLIENT_EP_DOWN);
	h->peer_session = H_PEER_SESSION + 1;   /* the peer restarted */
	rn_ph_peer_connect(h, CAPS, false);
	expect_event(f, 4, RN_CLIENT_EVENT_PEER_RESTARTED, ep,
		     RN_CLIENT_EP_NO_NATIVE);
	/* The same incarnation again: up, not restarted. */
	rn_ph_peer_close(h);
	expect_event(f, 5, RN_CLIENT_EVENT_PEER_DOWN, ep, RN_CLIENT_EP_DOWN);
	rn_ph_peer_connect(h, CAPS, true);
	expect_event(f, 6, RN_CLIENT_EVENT_PEER_UP, ep, RN_CLIENT_EP_NATIVE);
	/* Removed while connected: removed, and no down. */
	assert_int_equal(peer_remove(f, H_PEER_NAME), 0);
	expect_event(f, 7, RN_CLIENT_EVENT_PEER_REMOVED, ep,
		     RN_CLIENT_EP_NATIVE);
	assert_string_equal(f->ev[7].name, H_PEER_NAME);   /* still named */
	expect_closed(h);
	wait_page(f, ep, RN_CLIENT_EP_FREE, &e);
	rn_ph_sleep_ms(TIMEOUT_MS / 5);
	if (__atomic_load_n(&f->n_ev, __ATOMIC_ACQUIRE) != 8) {
		print_events(f);
		fail_msg("events after the removal");
	}
	assert_false(f->wrong_thread);
}

/* Run-time peers are checked as [peer NAME] sections are; a failed add
 * leaves no trace. */
static void
test_add_errors(void **state)
{
	struct fixture *f = *state;
	static const struct {
		const char *name, *address;
		uint16_t port;
		int rc;
	} cases[] = {
		{ "a", "127.0.0.2", 7001, 0 },
		{ "a", "127.0.0.9", 7002, -EEXIST },        /* that name */
		{ NODE, "127.0.0.9", 7002, -EEXIST },       /* this node's */
		{ H_PEER_NAME, "127.0.0.9", 7002, -EEXIST },/* a caller's */
		{ "b", "0:0::127.0.0.2", 7001, 0 },         /* v6 is not v4 */
		{ "c", "127.0.0.2", 7001, -EEXIST },        /* a's address */
		{ "d", "::127.0.0.2", 7001, -EEXIST },       /* b's, written
							      * another way */
		{ "e", "127.0.0.2", 7002, 0 },              /* another port */
		{ "f", "300.0.0.1", 7001, -EINVAL },
		{ "f", "localhost", 7001, -EINVAL },
		{ "f", "", 7001, -EINVAL },
		{ "f", "127.0.0.5", 0, -EINVAL },
		{ "", "127.0.0.5", 7001, -EINVAL },
		{ "f g", "127.0.0.5", 7001, -EINVAL },
		{ "f.g", "127.0.0.5", 7001, -EINVAL },
		{ "abcdefghijklmnopqrstuvwxyz012345", "127.0.0.5", 7001,
		  -EINVAL },                                /* 32 bytes */
		{ "abcdefghijklmnopqrstuvwxyz01234", "127.0.0.5", 7001, 0 },
	};
	unsigned int added = 0;

	rn_ph_peer_connect(f->h, CAPS, true);
	for (unsigned int i = 0; i < RTE_DIM(cases); i++) {
		int rc = peer_add(f, cases[i].name, cases[i].address,
				  cases[i].port);

		if (rc != cases[i].rc)
			fail_msg("add '%s' %s port %u: %d, expected %d",
				 cases[i].name, cases[i].address,
				 cases[i].port, rc, cases[i].rc);
		added += rc == 0;
	}
	/* This node, the caller, and the adds that worked; nothing else. */
	assert_int_equal(page_n(f), 2 + added);
	for (unsigned int i = 0; i < RTE_DIM(cases); i++) {
		struct rn_ep_info info;
		bool there = rn_ph_info(f->h, cases[i].name, &info);

		if (cases[i].rc == 0) {
			assert_true(there);
			assert_true(info.configured);
			assert_int_equal(info.state, RN_EP_IDLE);
			assert_int_equal(page_find(f, cases[i].name),
					 (int)(2 + (i == 0 ? 0 : i == 4 ? 1 :
						    i == 7 ? 2 : 3)));
		} else if (strcmp(cases[i].name, "f") == 0) {
			assert_false(there);
		}
	}
	assert_int_equal(peer_remove(f, "nobody"), -ENOENT);
	assert_int_equal(peer_remove(f, NODE), -ENOENT);   /* no peer */
	assert_int_equal(peer_remove(f, "a"), 0);
	assert_int_equal(peer_remove(f, "a"), -ENOENT);
	assert_int_equal(__atomic_load_n(&f->n_ev, __ATOMIC_ACQUIRE), 2);
	assert_int_equal(f->ev[1].type, RN_CLIENT_EVENT_PEER_REMOVED);
	assert_int_equal(f->ev[1].ep_index, 2);
}

struct fill {
	unsigned int added;
	int rc;
};

/* Add peers until the table says no, in one control-thread turn. */
static void
do_fill(struct rn_ph_plane *h, void *arg)
{
	struct fill *fl = arg;
	char name[16];

	for (;;) {
		snprintf(name, sizeof(name), "p%u", fl->added);
		fl->rc = rn_plane_peer_add(h->pl, name, "127.0.0.1",
					   (uint16_t)(1000 + fl->added));
		if (fl->rc != 0)
			return;
		fl->added++;
	}
}

/*
 * A full table: the index of a caller that is gone goes to a new peer
 * (its clients hear it removed), then -ENOSPC; a removal frees an index
 * for the next add, with a new tag.
 */
static void
test_table_full(void **state)
{
	struct fixture *f = *state;
	unsigned int seed = rn_test_seed("test_table_full", 17);
	struct fill fl = { 0 };
	struct rn_client_status_ep e;
	char name[16];
	uint32_t victim, tag, max_tag = 0;

	srand(seed);
	rn_ph_peer_connect(f->h, CAPS, true);   /* index 1 */
	rn_ph_peer_close(f->h);
	assert_true(rn_ph_wait_state(f->h, H_PEER_NAME, RN_EP_CLOSED));
	rn_ph_call(f->h, do_fill, &fl);
	print_message("# %u peers added, then %d\n", fl.added, fl.rc);
	assert_int_equal(fl.rc, -ENOSPC);
	/* Every index but this node's, the caller's taken back too. */
	assert_int_equal(fl.added, RN_MAX_ENDPOINTS - 1);
	assert_int_equal(page_n(f), RN_MAX_ENDPOINTS);
	assert_int_equal(page_find(f, H_PEER_NAME), -1);
	assert_int_equal(page_find(f, "p1022"), 1);
	assert_int_equal(wait_events(f, 3), 3);   /* up, down, removed */
	assert_int_equal(f->ev[2].type, RN_CLIENT_EVENT_PEER_REMOVED);
	assert_int_equal(f->ev[2].ep_index, 1);
	assert_string_equal(f->ev[2].name, H_PEER_NAME);

	for (uint32_t i = 0; i < RN_MAX_ENDPOINTS; i++) {
		page_read(f, i, &e);
		max_tag = RTE_MAX(max_tag, e.tag);
	}
	victim = 2 + (uint32_t)rand() % (RN_MAX_ENDPOINTS - 2);   /* p0.. */
	snprintf(name, sizeof(name), "p%u", victim - 2);
	print_message("# removing %s (index %u)\n", name, victim);
	assert_int_equal(page_find(f, name), (int)victim);
	assert_int_equal(peer_remove(f, name), 0);
	/* Never connected: no QPs to wait for. */
	wait_page(f, victim, RN_CLIENT_EP_FREE, &e);
	assert_int_equal(peer_add(f, "again", "127.0.0.1", 999), 0);
	page_read(f, victim, &e);
	assert_string_equal(e.name, "again");
	tag = e.tag;
	assert_true(tag > max_tag);
	assert_int_equal(peer_add(f, "more", "127.0.0.1", 998), -ENOSPC);
}

/*
 * Removing a connected peer closes it as shutdown does; its index is free
 * only after EP_CLOSED, and the next add that takes it has a new tag.
 */
static void
test_remove_connected(void **state)
{
	struct fixture *f = *state;
	struct rn_ph_plane *h = f->h;
	struct rn_client_status_ep e;
	struct rn_ep_info info;
	uint32_t tag, closes, seq;

	assert_int_equal(peer_add(f, H_PEER_NAME, "127.0.0.1", 9), 0);
	rn_ph_peer_connect(h, CAPS, true);   /* it calls us */
	assert_true(rn_ph_info(h, H_PEER_NAME, &info));
	assert_true(info.configured);
	tag = info.tag;
	assert_int_equal(page_find(f, H_PEER_NAME), 1);

	rn_ph_hold(h, RN_LCORE_CMD_EP_CLOSE, true);
	closes = rn_ph_cmd_count(h, RN_LCORE_CMD_EP_CLOSE);
	assert_int_equal(peer_remove(f, H_PEER_NAME), 0);
	expect_closed(h);
	assert_true(rn_ph_wait_cmds(h, RN_LCORE_CMD_EP_CLOSE, closes + 1));
	assert_false(rn_ph_info(h, H_PEER_NAME, &info));
	assert_int_equal(rn_plane_requests_out(h->pl), 1);
	/* Its index is not free yet: the next add takes another. */
	assert_int_equal(peer_add(f, "other", "127.0.0.1", 10), 0);
	assert_int_equal(page_find(f, "other"), 2);
	page_read(f, 1, &e);
	assert_int_equal(e.state, RN_CLIENT_EP_DOWN);
	assert_int_equal(e.tag, tag);

	rn_ph_hold(h, RN_LCORE_CMD_EP_CLOSE, false);
	wait_page(f, 1, RN_CLIENT_EP_FREE, &e);
	assert_int_equal(page_n(f), 3);
	assert_int_equal(peer_remove(f, "other"), 0);
	wait_page(f, 2, RN_CLIENT_EP_FREE, &e);
	assert_int_equal(page_n(f), 1);

	/* Back, at the lowest free index, with a new tag. */
	assert_int_equal(peer_add(f, H_PEER_NAME, "127.0.0.1", 9), 0);
	assert_int_equal(page_find(f, H_PEER_NAME), 1);
	assert_true(rn_ph_info(h, H_PEER_NAME, &info));
	assert_true(info.tag > tag);
	rn_ph_peer_connect(h, CAPS, true);
	assert_int_equal(__atomic_load_n(&h->last_peer_tag, __ATOMIC_ACQUIRE),
			 info.tag);
	assert_int_equal(page_n(f), 2);

	/* The page handed over again: no entry a client sees is rewritten,
	 * and n_endpoints still follows the table when one below the
	 * highest changes. */
	assert_int_equal(peer_add(f, "other", "127.0.0.1", 10), 0);
	assert_int_equal(page_n(f), 3);
	seq = f->page->ep[1].seq;
	rn_ph_call(h, set_clients, f);
	assert_int_equal(page_n(f), 3);
	assert_int_equal(f->page->ep[1].seq, seq);
	rn_ph_peer_close(h);   /* a peer we call that closed: idle */
	wait_page(f, 1, RN_CLIENT_EP_IDLE, &e);
	assert_true(e.seq > seq);
	assert_int_equal(page_n(f), 3);
	assert_int_equal(peer_remove(f, "other"), 0);
	wait_page(f, 2, RN_CLIENT_EP_FREE, &e);
	assert_int_equal(page_n(f), 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tags_reach_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_page_follows_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_add_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_connected, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
