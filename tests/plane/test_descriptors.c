/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Descriptor requests (control/endpoint/descriptors.c): a peer that proved
 * the shared secret gets the blob the descriptor source gives, byte for
 * byte, or a clear "unknown"; a caller that did not prove it gets nothing
 * (its connection closes, the source is never asked, no blob crosses); a
 * node without a secret answers "unauthenticated". And this node's own
 * requests (rn_plane_desc_fetch()): the answer, the unknown name, no
 * answer, the peer lost, no such peer; the control thread's own,
 * asynchronous ones (rn_plane_desc_fetch_start()), their callback once,
 * and cancelled ones never; and the second source (clients'
 * publications) behind the first. The test is the peer on loopback.
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
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <rte_eal.h>

#include "plane_harness.h"
#include "rn_test_seed.h"

#define CAPS (RN_CAP_TCP_FALLBACK | RN_CAP_NOTIFY_ENABLED)
#define KEY "0123456789abcdef-descriptors-key"
#define NAME "kv/layer.0"

static uint8_t published[RN_PROTO_DESC_BLOB];   /* the blob NAME gives */
static int source_calls;                         /* control thread's */

/* The descriptor source: NAME only. */
static int
source(void *arg, const char *name, void *blob, size_t cap)
{
	(void)arg;
	__atomic_add_fetch(&source_calls, 1, __ATOMIC_RELEASE);
	if (strcmp(name, NAME) != 0)
		return -ENOENT;
	assert_true(cap >= sizeof(published));
	memcpy(blob, published, sizeof(published));
	return (int)sizeof(published);
}

static void
set_source(struct rn_ph_plane *h, void *arg)
{
	(void)arg;
	rn_plane_set_descriptors(h->pl, source, NULL);
}

static struct rn_ph_plane *
start(bool secret)
{
	struct rn_ph_plane *h = secret ?
		rn_ph_start_secret("a", 1000, false, KEY) :
		rn_ph_start("a", 1000, false);
	unsigned int seed = rn_test_seed("plane descriptors", 18);

	srand(seed);
	for (unsigned int i = 0; i < sizeof(published); i++)
		published[i] = (uint8_t)rand();
	__atomic_store_n(&source_calls, 0, __ATOMIC_RELEASE);
	rn_ph_call(h, set_source, NULL);
	return h;
}

static int
setup_secret(void **state)
{
	*state = start(true);
	return 0;
}

static int
setup_open(void **state)
{
	*state = start(false);
	return 0;
}

static void
request(struct rn_ph_plane *h, uint32_t id, const char *name)
{
	uint8_t frame[RN_PROTO_HEADER_SIZE + 128];

	rn_ph_peer_send(h, frame, rn_proto_encode_desc_request(
				frame, sizeof(frame), id, name));
}

/* The next frame is DESC_ANSWER id with status. */
static void
expect_answer(struct rn_ph_plane *h, uint32_t id, uint16_t status)
{
	assert_int_equal(rn_ph_peer_recv(h, H_WAIT_MS), 1);
	assert_int_equal(h->last.type, RN_PROTO_DESC_ANSWER);
	assert_int_equal(h->last.desc_answer.id, id);
	assert_int_equal(h->last.desc_answer.status, status);
}

static void
test_served_to_a_proven_peer(void **state)
{
	struct rn_ph_plane *h = *state;

	rn_ph_peer_connect(h, CAPS, false);
	request(h, 41, NAME);
	expect_answer(h, 41, RN_DESC_OK);
	assert_int_equal(h->last.desc_answer.blob_len, RN_PROTO_DESC_BLOB);
	assert_memory_equal(h->last.desc_answer.blob, published,
			    sizeof(published));
	request(h, 42, "kv/layer.1");
	expect_answer(h, 42, RN_DESC_UNKNOWN);
	assert_int_equal(h->last.desc_answer.blob_len, 0);
	assert_int_equal(__atomic_load_n(&source_calls, __ATOMIC_ACQUIRE), 2);
	/* The endpoint goes on. */
	assert_true(rn_ph_wait_state(h, H_PEER_NAME, RN_EP_CONNECTED));
}

/* No frame but a closed connection within a while: never an answer. */
static void
expect_closed(struct rn_ph_plane *h, const char *when)
{
	int rc;

	while ((rc = rn_ph_peer_recv(h, H_WAIT_MS)) == 1)
		if (h->last.type == RN_PROTO_DESC_ANSWER)
			fail_msg("%s: a DESC_ANSWER came (status %u, %u bytes)",
				 when, h->last.desc_answer.status,
				 h->last.desc_answer.blob_len);
	if (rc != -1)
		fail_msg("%s: the plane kept the connection open", when);
	rn_ph_peer_close(h);
}

static void
test_stranger_gets_nothing(void **state)
{
	struct rn_ph_plane *h = *state;
	uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_HELLO_MAX];

	/* A request as the first frame, before any proof. */
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(rn_plane_port(h->pl)) };

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	h->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(h->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	request(h, 1, NAME);
	expect_closed(h, "a request as the first frame");
	/* HELLO without a proof, then a request. */
	h->peer_unproven = true;
	rn_ph_peer_hello(h, CAPS, false);   /* HELLO without a proof: */
	request(h, 1, NAME);                /* refused, closed */
	expect_closed(h, "unproven HELLO, then a request");
	/* Proven, HELLO answered, a request in place of READY. */
	h->peer_unproven = false;
	rn_ph_peer_hello(h, CAPS, false);
	assert_int_equal(rn_ph_peer_recv(h, H_WAIT_MS), 1);
	assert_int_equal(h->last.type, RN_PROTO_ACCEPT);
	request(h, 2, NAME);
	expect_closed(h, "a request before READY");
	assert_int_equal(__atomic_load_n(&source_calls, __ATOMIC_ACQUIRE), 0);
	/* And the proven peer, established, is served. */
	rn_ph_sleep_ms(50);
	rn_ph_peer_hello(h, CAPS, false);
	assert_int_equal(rn_ph_peer_recv(h, H_WAIT_MS), 1);
	assert_int_equal(h->last.type, RN_PROTO_ACCEPT);
	rn_ph_peer_send(h, frame, rn_proto_encode_ready(frame, sizeof(frame),
							H_PEER_GENERATION));
	assert_true(rn_ph_wait_state(h, H_PEER_NAME, RN_EP_CONNECTED));
	request(h, 3, NAME);
	expect_answer(h, 3, RN_DESC_OK);
}

static void
test_no_secret_no_descriptor(void **state)
{
	struct rn_ph_plane *h = *state;

	rn_ph_peer_connect(h, CAPS, false);
	request(h, 7, NAME);
	expect_answer(h, 7, RN_DESC_UNAUTHENTICATED);
	assert_int_equal(h->last.desc_answer.blob_len, 0);
	assert_null(h->last.desc_answer.blob);
	assert_int_equal(__atomic_load_n(&source_calls, __ATOMIC_ACQUIRE), 0);
}

struct fetch {
	struct rn_ph_plane *h;
	const char *peer, *name;
	uint32_t timeout_ms;
	uint8_t blob[RN_PROTO_DESC_BLOB];
	int rc;
	pthread_t thread;
};

static void *
fetch_thread(void *arg)
{
	struct fetch *f = arg;

	f->rc = rn_plane_desc_fetch(f->h->pl, f->peer, f->name, f->timeout_ms,
				    f->blob, sizeof(f->blob));
	return NULL;
}

static void
fetch_start(struct fetch *f, struct rn_ph_plane *h, const char *peer,
	    const char *name, uint32_t timeout_ms)
{
	*f = (struct fetch){ .h = h, .peer = peer, .name = name,
			     .timeout_ms = timeout_ms, .rc = 1 };
	assert_int_equal(pthread_create(&f->thread, NULL, fetch_thread, f), 0);
}

static int
fetch_end(struct fetch *f)
{
	pthread_join(f->thread, NULL);
	return f->rc;
}

/* The plane's request for name, as the peer reads it: its id. */
static uint32_t
expect_request(struct rn_ph_plane *h, const char *name)
{
	assert_int_equal(rn_ph_peer_recv(h, H_WAIT_MS), 1);
	assert_int_equal(h->last.type, RN_PROTO_DESC_REQUEST);
	assert_string_equal(h->last.desc_request.name, name);
	return h->last.desc_request.id;
}

static void
test_fetch(void **state)
{
	struct rn_ph_plane *h = *state;
	uint8_t frame[RN_PROTO_HEADER_SIZE + 256];
	struct fetch f;
	uint32_t id;

	rn_ph_peer_connect(h, CAPS, false);
	/* Answered: the blob, byte for byte; an answer to another id first
	 * is not taken for it. */
	fetch_start(&f, h, H_PEER_NAME, NAME, H_WAIT_MS);
	id = expect_request(h, NAME);
	rn_ph_peer_send(h, frame, rn_proto_encode_desc_answer(
				frame, sizeof(frame), id + 100, RN_DESC_UNKNOWN,
				NULL, 0));
	rn_ph_peer_send(h, frame, rn_proto_encode_desc_answer(
				frame, sizeof(frame), id, RN_DESC_OK, published,
				sizeof(published)));
	assert_int_equal(fetch_end(&f), RN_PROTO_DESC_BLOB);
	assert_memory_equal(f.blob, published, sizeof(published));
	/* Unknown there; not served there. */
	fetch_start(&f, h, H_PEER_NAME, "nothing", H_WAIT_MS);
	id = expect_request(h, "nothing");
	rn_ph_peer_send(h, frame, rn_proto_encode_desc_answer(
				frame, sizeof(frame), id, RN_DESC_UNKNOWN,
				NULL, 0));
	assert_int_equal(fetch_end(&f), -ENODATA);
	fetch_start(&f, h, H_PEER_NAME, NAME, H_WAIT_MS);
	id = expect_request(h, NAME);
	rn_ph_peer_send(h, frame, rn_proto_encode_desc_answer(
				frame, sizeof(frame), id,
				RN_DESC_UNAUTHENTICATED, NULL, 0));
	assert_int_equal(fetch_end(&f), -EACCES);
	/* No answer. */
	fetch_start(&f, h, H_PEER_NAME, NAME, 100);
	expect_request(h, NAME);
	assert_int_equal(fetch_end(&f), -ETIMEDOUT);
	/* Checked before anything is sent. */
	assert_int_equal(rn_plane_desc_fetch(h->pl, H_PEER_NAME, "a b", 100,
					     f.blob, sizeof(f.blob)), -EINVAL);
	assert_int_equal(rn_plane_desc_fetch(h->pl, H_PEER_NAME, NAME, 100,
					     f.blob, 10), -ENOSPC);
	assert_int_equal(rn_plane_desc_fetch(h->pl, "nobody", NAME, 1000,
					     f.blob, sizeof(f.blob)), -ENOENT);
	/* The peer lost with a request out. */
	fetch_start(&f, h, H_PEER_NAME, NAME, H_WAIT_MS);
	expect_request(h, NAME);
	rn_ph_peer_close(h);
	assert_int_equal(fetch_end(&f), -ENOTCONN);
}

/* ---- the client source ---- */

#define CLIENT_NAME "client/kv.0"
static uint8_t client_blob[RN_PROTO_DESC_BLOB];

static int
client_source(void *arg, const char *name, void *blob, size_t cap)
{
	(void)arg;
	if (strcmp(name, CLIENT_NAME) != 0 && strcmp(name, NAME) != 0)
		return -ENOENT;
	assert_true(cap >= sizeof(client_blob));
	memcpy(blob, client_blob, sizeof(client_blob));
	return (int)sizeof(client_blob);
}

struct served {
	const char *name;
	int rc;
	uint8_t blob[RN_PROTO_DESC_BLOB];
};

static void
set_client_source(struct rn_ph_plane *h, void *arg)
{
	(void)arg;
	rn_plane_set_client_descriptors(h->pl, client_source, NULL);
}

static void
served(struct rn_ph_plane *h, void *arg)
{
	struct served *sv = arg;

	sv->rc = rn_plane_desc_served(h->pl, sv->name, sv->blob,
				      sizeof(sv->blob));
}

static void
test_client_source(void **state)
{
	struct rn_ph_plane *h = *state;
	struct served sv = { .name = CLIENT_NAME };

	for (unsigned int i = 0; i < sizeof(client_blob); i++)
		client_blob[i] = (uint8_t)~published[i];
	rn_ph_call(h, set_client_source, NULL);
	/* The first source wins a name both have; the second answers its
	 * own; neither: unknown. */
	rn_ph_call(h, served, &sv);
	assert_int_equal(sv.rc, RN_PROTO_DESC_BLOB);
	assert_memory_equal(sv.blob, client_blob, sizeof(client_blob));
	sv.name = NAME;
	rn_ph_call(h, served, &sv);
	assert_int_equal(sv.rc, RN_PROTO_DESC_BLOB);
	assert_memory_equal(sv.blob, published, sizeof(published));
	sv.name = "nothing";
	rn_ph_call(h, served, &sv);
	assert_int_equal(sv.rc, -ENOENT);
	rn_ph_peer_connect(h, CAPS, false);
	request(h, 7, CLIENT_NAME);
	expect_answer(h, 7, RN_DESC_OK);
	assert_memory_equal(h->last.desc_answer.blob, client_blob,
			    sizeof(client_blob));
	request(h, 8, NAME);
	expect_answer(h, 8, RN_DESC_OK);
	assert_memory_equal(h->last.desc_answer.blob, published,
			    sizeof(published));
	request(h, 9, "nothing");
	expect_answer(h, 9, RN_DESC_UNKNOWN);
}

/* ---- asynchronous fetches ---- */

struct async {
	const char *peer, *name;
	uint32_t timeout_ms;
	int start_rc;
	struct rn_desc_fetch *r;
	int calls;                /* callbacks, read with acquire */
	int rc;
	uint8_t blob[RN_PROTO_DESC_BLOB];
};

static void
async_done(void *arg, int rc, const void *blob)
{
	struct async *a = arg;

	a->rc = rc;
	if (rc == RN_PROTO_DESC_BLOB)
		memcpy(a->blob, blob, sizeof(a->blob));
	__atomic_add_fetch(&a->calls, 1, __ATOMIC_RELEASE);
}

static void
async_start(struct rn_ph_plane *h, void *arg)
{
	struct async *a = arg;

	a->start_rc = rn_plane_desc_fetch_start(h->pl, a->peer, a->name,
						a->timeout_ms, async_done, a,
						&a->r);
}

static void
async_cancel(struct rn_ph_plane *h, void *arg)
{
	struct async *a = arg;

	rn_plane_desc_fetch_cancel(h->pl, a->r);
}

/* Until a's callback came (true), or H_WAIT_MS passed. */
static bool
async_wait(struct async *a)
{
	for (int i = 0; i < H_WAIT_MS; i++) {
		if (__atomic_load_n(&a->calls, __ATOMIC_ACQUIRE) != 0)
			return true;
		usleep(1000);
	}
	return false;
}

static void
test_fetch_async(void **state)
{
	struct rn_ph_plane *h = *state;
	uint8_t frame[RN_PROTO_HEADER_SIZE + 256];
	struct async a = { .peer = H_PEER_NAME, .name = NAME,
			   .timeout_ms = H_WAIT_MS };
	uint64_t t0;
	uint32_t id;

	rn_ph_peer_connect(h, CAPS, false);
	/* Answered: the callback has the blob, once. */
	rn_ph_call(h, async_start, &a);
	assert_int_equal(a.start_rc, 0);
	id = expect_request(h, NAME);
	rn_ph_peer_send(h, frame, rn_proto_encode_desc_answer(
				frame, sizeof(frame), id, RN_DESC_OK, published,
				sizeof(published)));
	assert_true(async_wait(&a));
	assert_int_equal(a.rc, RN_PROTO_DESC_BLOB);
	assert_memory_equal(a.blob, published, sizeof(published));
	usleep(100 * 1000);
	assert_int_equal(__atomic_load_n(&a.calls, __ATOMIC_ACQUIRE), 1);
	/* No answer: -ETIMEDOUT by its timeout (and a tick). */
	a = (struct async){ .peer = H_PEER_NAME, .name = NAME,
			    .timeout_ms = 150 };
	t0 = rn_now_ms();
	rn_ph_call(h, async_start, &a);
	assert_int_equal(a.start_rc, 0);
	expect_request(h, NAME);
	assert_true(async_wait(&a));
	assert_int_equal(a.rc, -ETIMEDOUT);
	assert_true(rn_now_ms() - t0 >= 150);
	/* Cancelled: its answer comes and nobody is called. */
	a = (struct async){ .peer = H_PEER_NAME, .name = NAME,
			    .timeout_ms = H_WAIT_MS };
	rn_ph_call(h, async_start, &a);
	assert_int_equal(a.start_rc, 0);
	id = expect_request(h, NAME);
	rn_ph_call(h, async_cancel, &a);
	rn_ph_peer_send(h, frame, rn_proto_encode_desc_answer(
				frame, sizeof(frame), id, RN_DESC_OK, published,
				sizeof(published)));
	usleep(200 * 1000);
	assert_int_equal(__atomic_load_n(&a.calls, __ATOMIC_ACQUIRE), 0);
	/* Refused at the start, without a callback. */
	a = (struct async){ .peer = "nobody", .name = NAME, .timeout_ms = 100 };
	rn_ph_call(h, async_start, &a);
	assert_int_equal(a.start_rc, -ENOENT);
	a = (struct async){ .peer = H_PEER_NAME, .name = "a b",
			    .timeout_ms = 100 };
	rn_ph_call(h, async_start, &a);
	assert_int_equal(a.start_rc, -EINVAL);
	/* The peer lost with a request out: -ENOTCONN. */
	a = (struct async){ .peer = H_PEER_NAME, .name = NAME,
			    .timeout_ms = H_WAIT_MS };
	rn_ph_call(h, async_start, &a);
	assert_int_equal(a.start_rc, 0);
	expect_request(h, NAME);
	rn_ph_peer_close(h);
	assert_true(async_wait(&a));
	assert_int_equal(a.rc, -ENOTCONN);
	assert_int_equal(__atomic_load_n(&a.calls, __ATOMIC_ACQUIRE), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_served_to_a_proven_peer,
						setup_secret, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_stranger_gets_nothing,
						setup_secret, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_no_secret_no_descriptor,
						setup_open, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_fetch, setup_secret,
						rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_client_source,
						setup_secret, rn_ph_teardown),
		cmocka_unit_test_setup_teardown(test_fetch_async, setup_secret,
						rn_ph_teardown),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	rte_eal_cleanup();
	return failed;
}
