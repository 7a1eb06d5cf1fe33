/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * librnotify against the daemon's side of the contract, in one process:
 * the test answers the attach protocol on a real SOCK_SEQPACKET socket
 * (a thread), builds the region with rn_client_region_init() and the
 * status page with rn_client_status_init() in memfds it passes with
 * SCM_RIGHTS, and plays the lcores at the rings of its own mapping (peek
 * API, positional buffers, rn_client_link_wake()). The library is the
 * real one (librnotify.so), used only through rn_client.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "rn_client.h"
#include "rn_client_msg.h"
#include "rn_client_region.h"
#include "rn_lcore_client.h"
#include "rn_test_seed.h"

#define N_LCORES 2u
#define RING 8u            /* entries per ring: capacity 7 */
#define BUF 256u
#define NODE_B "nodeb"     /* NATIVE on lcore 1 */
#define EP_B 3u
#define TAG_B 77u

/* The daemon side: one listening socket, one client at a time. */
struct fake {
	char path[108];
	int listen_fd;
	int conn;                  /* the attached client's socket */
	pthread_t thread;
	struct rn_client_region *region;
	uint64_t region_size;
	struct rn_client_status_page *page;
	int region_fd, page_fd;
	int efd;                   /* the client's */
	int wake[N_LCORES];        /* the lcores' */
	struct rn_client_link link;
	int32_t attach_status;     /* what ATTACH answers */
	uint16_t reply_version;
	unsigned int resolves;     /* RESOLVE requests seen */
	struct rn_client_peer peer_added;
	char removed[RN_CLIENT_NODE_MAX + 1];
	bool detached;
};

static struct fake F;

static void
reply(int fd, uint16_t type, int32_t status, const void *body, uint32_t len,
      const int *fds, unsigned int n_fds)
{
	uint8_t buf[RN_CLIENT_MSG_MAX];
	struct rn_client_msg_hdr hdr = {
		.type = type | RN_CLIENT_MSG_REPLY, .version = F.reply_version,
		.status = status, .len = len };
	union {
		char b[CMSG_SPACE(sizeof(int) * (3 + N_LCORES))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(hdr) + len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	memcpy(buf, &hdr, sizeof(hdr));
	if (len != 0)
		memcpy(buf + sizeof(hdr), body, len);
	if (n_fds != 0) {
		struct cmsghdr *cm;

		msg.msg_control = ctl.b;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
	}
	if (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0)
		fprintf(stderr, "fake daemon: sendmsg: %s\n", strerror(errno));
}

static void
set_ep(uint32_t i, const char *name, uint32_t tag, uint16_t lcore,
       uint8_t state)
{
	struct rn_client_status_ep *ep = &F.page->ep[i];

	__atomic_store_n(&ep->seq, ep->seq + 1, __ATOMIC_RELEASE);
	ep->tag = tag;
	ep->lcore = lcore;
	ep->state = state;
	snprintf(ep->name, sizeof(ep->name), "%s", name);
	__atomic_store_n(&ep->seq, ep->seq + 1, __ATOMIC_RELEASE);
	if (F.page->n_endpoints < i + 1)
		F.page->n_endpoints = i + 1;
}

static void
serve(int fd)
{
	uint8_t buf[RN_CLIENT_MSG_MAX];
	struct rn_client_msg_hdr hdr;
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		char name[RN_CLIENT_NODE_MAX + 1] = "";

		memcpy(&hdr, buf, sizeof(hdr));
		if (hdr.type != RN_CLIENT_MSG_PEER_ADD)
			memcpy(name, buf + sizeof(hdr),
			       hdr.len < RN_CLIENT_NODE_MAX ? hdr.len :
			       RN_CLIENT_NODE_MAX);
		switch (hdr.type) {
		case RN_CLIENT_MSG_ATTACH: {
			int fds[3 + N_LCORES] = { F.region_fd, F.page_fd, F.efd,
						  F.wake[0], F.wake[1] };
			struct rn_client_attached a = {
				.region_size = F.region_size,
				.n_lcores = N_LCORES, .ring_size = RING,
				.buf_size = BUF, .client_id = 1,
				.node = "nodea" };

			if (F.attach_status != 0)
				reply(fd, hdr.type, F.attach_status, NULL, 0,
				      NULL, 0);
			else
				reply(fd, hdr.type, 0, &a, sizeof(a), fds,
				      3 + N_LCORES);
			break;
		}
		case RN_CLIENT_MSG_RESOLVE: {
			struct rn_client_resolved r = { 0 };

			F.resolves++;
			if (strcmp(name, "idle") == 0) {
				set_ep(5, "idle", 55, 0, RN_CLIENT_EP_CONNECTING);
				r = (struct rn_client_resolved){ 5, 0, 55 };
				reply(fd, hdr.type, 0, &r, sizeof(r), NULL, 0);
			} else {
				reply(fd, hdr.type, -ENOENT, NULL, 0, NULL, 0);
			}
			break;
		}
		case RN_CLIENT_MSG_PEER_ADD:
			memcpy(&F.peer_added, buf + sizeof(hdr),
			       sizeof(F.peer_added));
			reply(fd, hdr.type, 0, NULL, 0, NULL, 0);
			break;
		case RN_CLIENT_MSG_PEER_REMOVE:
			memcpy(F.removed, name, sizeof(F.removed));
			reply(fd, hdr.type, strcmp(name, "nope") == 0 ?
			      -ENOENT : 0, NULL, 0, NULL, 0);
			break;
		case RN_CLIENT_MSG_DETACH:
			F.detached = true;
			reply(fd, hdr.type, 0, NULL, 0, NULL, 0);
			return;
		}
	}
}

static void *
daemon_thread(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(F.listen_fd, NULL, NULL);

		if (fd < 0)
			return NULL;
		F.conn = fd;
		serve(fd);
	}
}

static int
memfd_of(size_t size, void **map)
{
	int fd = memfd_create("rn-test", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(*map != MAP_FAILED);
	return fd;
}

static void
fake_start(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(&F, 0, sizeof(F));
	F.reply_version = RN_CLIENT_PROTO_VERSION;
	F.conn = -1;
	F.region_size = rn_client_region_size(N_LCORES, RING, BUF);
	F.region_fd = memfd_of(F.region_size, (void **)&F.region);
	assert_int_equal(rn_client_region_init(F.region, N_LCORES, RING, BUF),
			 0);
	F.page_fd = memfd_of(sizeof(*F.page), (void **)&F.page);
	rn_client_status_init(F.page, N_LCORES);
	F.efd = eventfd(0, EFD_CLOEXEC);
	for (unsigned int i = 0; i < N_LCORES; i++)
		F.wake[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	F.link = (struct rn_client_link){ .region = F.region,
					  .region_size = F.region_size,
					  .efd = F.efd };
	set_ep(EP_B, NODE_B, TAG_B, 1, RN_CLIENT_EP_NATIVE);
	set_ep(1, "conn", 11, 0, RN_CLIENT_EP_CONNECTING);
	set_ep(2, "down", 12, 0, RN_CLIENT_EP_DOWN);
	set_ep(4, "tcponly", 14, 0, RN_CLIENT_EP_NO_NATIVE);
	set_ep(5, "idle", 15, 0, RN_CLIENT_EP_IDLE);
	snprintf(F.path, sizeof(F.path), "/tmp/rn-test-client-%d.sock",
		 (int)getpid());
	memcpy(sa.sun_path, F.path, sizeof(F.path));
	unlink(F.path);
	F.listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(F.listen_fd, (struct sockaddr *)&sa, sizeof(sa)),
			 0);
	assert_int_equal(listen(F.listen_fd, 4), 0);
	assert_int_equal(pthread_create(&F.thread, NULL, daemon_thread, NULL),
			 0);
}

static void
fake_stop(void)
{
	shutdown(F.listen_fd, SHUT_RDWR);
	pthread_join(F.thread, NULL);
	close(F.listen_fd);
	if (F.conn >= 0)
		close(F.conn);
	unlink(F.path);
	munmap(F.region, F.region_size);
	munmap(F.page, sizeof(*F.page));
	close(F.region_fd);
	close(F.page_fd);
	close(F.efd);
	for (unsigned int i = 0; i < N_LCORES; i++)
		close(F.wake[i]);
}

static int
setup(void **state)
{
	struct rn_client *c;

	fake_start();
	assert_int_equal(rn_client_attach(F.path, "agent-A", &c), 0);
	*state = c;
	return 0;
}

static int
teardown(void **state)
{
	rn_client_detach(*state);
	fake_stop();
	return 0;
}

/* ---- the lcore's side ---- */

/* Take the next SEND of lcore's submit ring: its entry and buffer. */
static bool
lcore_take(uint32_t lcore, struct rn_client_entry *e, uint8_t *buf)
{
	struct rte_ring *r = rn_client_submit_ring(F.region, lcore);
	uint32_t pos = r->cons.head;

	if (rte_ring_dequeue_bulk_elem_start(r, e, sizeof(*e), 1, NULL) != 1)
		return false;
	memcpy(buf, rn_client_send_buf(F.region, lcore, pos), BUF);
	rte_ring_dequeue_elem_finish(r, 1);
	return true;
}

/* Put an entry on lcore's deliver ring (buffer first), then wake. */
static int
lcore_put(uint32_t lcore, struct rn_client_entry e, const void *buf,
	  size_t len)
{
	struct rte_ring *r = rn_client_deliver_ring(F.region, lcore);

	if (rte_ring_free_count(r) == 0)
		return -ENOBUFS;
	if (len != 0)
		memcpy(rn_client_recv_buf(F.region, lcore, r->prod.head), buf,
		       len);
	assert_int_equal(rte_ring_enqueue_elem(r, &e, sizeof(e)), 0);
	rn_client_link_wake(&F.link);
	return 0;
}

static int
deliver(uint32_t lcore, const char *node, const char *agent,
	const char *name, const char *msg)
{
	uint8_t buf[BUF];
	struct rn_client_recv_hdr h = { .name_len = (uint32_t)strlen(name),
					.msg_len = (uint32_t)strlen(msg),
					.agent_len = (uint8_t)strlen(agent) };
	uint8_t *p = buf + sizeof(h);

	snprintf(h.node, sizeof(h.node), "%s", node);
	memcpy(buf, &h, sizeof(h));
	memcpy(p, agent, h.agent_len);
	memcpy(p + h.agent_len, name, h.name_len);
	memcpy(p + h.agent_len + h.name_len, msg, h.msg_len);
	return lcore_put(lcore, (struct rn_client_entry){
		.type = RN_CLIENT_ENTRY_DELIVERY },
		buf, sizeof(h) + h.agent_len + h.name_len + h.msg_len);
}

static int
complete(uint32_t lcore, uint64_t cookie, int status)
{
	return lcore_put(lcore, (struct rn_client_entry){
		.type = RN_CLIENT_ENTRY_COMPLETION, .status = status,
		.cookie = cookie }, NULL, 0);
}

static int
refuse(uint32_t lcore, uint64_t cookie, const char *node, const char *agent)
{
	struct rn_client_event ev = { .type = RN_CLIENT_EVENT_REFUSED };

	snprintf(ev.node, sizeof(ev.node), "%s", node);
	snprintf(ev.agent, sizeof(ev.agent), "%s", agent);
	return lcore_put(lcore, (struct rn_client_entry){
		.type = RN_CLIENT_ENTRY_REFUSED, .cookie = cookie },
		&ev, sizeof(ev));
}

static bool
readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

static uint64_t
eventfd_take(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

/* ---- tests ---- */

static void
test_attach_errors(void **state)
{
	char agent[RN_CLIENT_AGENT_MAX + 2];
	struct rn_client *c = NULL;
	int s;

	(void)state;
	memset(agent, 'a', sizeof(agent) - 1);
	agent[sizeof(agent) - 1] = '\0';
	fake_start();
	assert_int_equal(rn_client_attach(F.path, "", &c), -EINVAL);
	assert_int_equal(rn_client_attach(F.path, agent, &c), -EINVAL);
	agent[RN_CLIENT_AGENT_MAX] = '\0';   /* exactly the longest */
	unsetenv(RN_CLIENT_SOCKET_ENV);
	assert_int_equal(rn_client_attach(NULL, "x", &c), -EINVAL);
	assert_int_equal(rn_client_attach("/nonexistent/rn.sock", "x", &c),
			 -ENOENT);
	F.attach_status = -EADDRINUSE;
	assert_int_equal(rn_client_attach(F.path, "x", &c), -EADDRINUSE);
	F.attach_status = -EACCES;
	assert_int_equal(rn_client_attach(F.path, "x", &c), -EACCES);
	F.attach_status = 0;
	F.reply_version = RN_CLIENT_PROTO_VERSION + 1;
	assert_int_equal(rn_client_attach(F.path, "x", &c), -EPROTO);
	F.reply_version = RN_CLIENT_PROTO_VERSION;
	/* The socket from $RNOTIFY_SOCKET, and the longest agent name. */
	setenv(RN_CLIENT_SOCKET_ENV, F.path, 1);
	assert_int_equal(rn_client_attach(NULL, agent, &c), 0);
	assert_string_equal(rn_client_node(c), "nodea");
	rn_client_detach(c);
	unsetenv(RN_CLIENT_SOCKET_ENV);
	fake_stop();
	/* A socket file that nothing listens on any more. */
	s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		memcpy(sa.sun_path, F.path, sizeof(F.path));
		assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)),
				 0);
		close(s);
		assert_int_equal(rn_client_attach(F.path, "x", &c),
				 -ECONNREFUSED);
		unlink(F.path);
	}
}

static void
test_send_writes_entry_and_buffer(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_entry e;
	struct rn_client_send_hdr h;
	uint8_t buf[BUF];

	assert_int_equal(rn_client_send(c, NODE_B, "agent-B", "nm", 2,
					 "hello", 5, 42,
					 RN_CLIENT_WANT_COMPLETION), 0);
	assert_false(lcore_take(0, &e, buf));   /* lcore 1 owns node b */
	assert_true(lcore_take(1, &e, buf));
	assert_int_equal(e.type, RN_CLIENT_ENTRY_SEND);
	assert_int_equal(e.ep_index, EP_B);
	assert_int_equal(e.cookie, 42);
	memcpy(&h, buf, sizeof(h));
	assert_int_equal(h.ep_tag, TAG_B);
	assert_int_equal(h.flags, RN_CLIENT_WANT_COMPLETION);
	assert_int_equal(h.agent_len, 7);
	assert_int_equal(h.name_len, 2);
	assert_int_equal(h.msg_len, 5);
	assert_memory_equal(buf + sizeof(h), "agent-Bnmhello", 14);
}

static void
test_send_states(void **state)
{
	struct rn_client *c = *state;
	char big[BUF];

	memset(big, 'x', sizeof(big));
	assert_int_equal(rn_client_send(c, "conn", "b", "n", 1, "", 0, 1, 0),
			 -EAGAIN);
	assert_int_equal(rn_client_send(c, "down", "b", "n", 1, "", 0, 1, 0),
			 -ENOTCONN);
	assert_int_equal(rn_client_send(c, "tcponly", "b", "n", 1, "", 0, 1,
					0), -ENOTSUP);
	assert_int_equal(F.resolves, 0);
	/* IDLE: asked of the daemon, which starts connecting it. */
	assert_int_equal(rn_client_send(c, "idle", "b", "n", 1, "", 0, 1, 0),
			 -EAGAIN);
	assert_int_equal(F.resolves, 1);
	assert_int_equal(rn_client_send(c, "idle", "b", "n", 1, "", 0, 1, 0),
			 -EAGAIN);
	assert_int_equal(F.resolves, 1);   /* remembered: CONNECTING now */
	assert_int_equal(rn_client_send(c, "nosuch", "b", "n", 1, "", 0, 1,
					0), -ENOENT);
	assert_int_equal(F.resolves, 2);
	assert_int_equal(rn_client_send(c, NODE_B, "b", "n", 1, big,
					BUF - 24 - 1 - 1 + 1, 1, 0), -EMSGSIZE);
	assert_int_equal(rn_client_send(c, NODE_B, "b", "n", 1, big,
					BUF - 24 - 1 - 1, 1, 0), 0);
	assert_int_equal(rn_client_send(c, NODE_B, "b", "n", 1, "", 0, 1, 2),
			 -EINVAL);
	assert_int_equal(rn_client_send(c, NODE_B, "", "n", 1, "", 0, 1, 0),
			 -EINVAL);
	assert_int_equal(rn_client_send(c, "a-node-name-longer-than-31-bytes",
					"b", "n", 1, "", 0, 1, 0), -EINVAL);
	/* The endpoint comes up: the remembered route sees it. */
	set_ep(1, "conn", 11, 0, RN_CLIENT_EP_NATIVE);
	assert_int_equal(rn_client_send(c, "conn", "b", "n", 1, "", 0, 1, 0),
			 0);
	/* Another peer bound to the index: the old name is looked up
	 * again, and is gone. */
	set_ep(1, "other", 21, 0, RN_CLIENT_EP_NATIVE);
	assert_int_equal(rn_client_send(c, "conn", "b", "n", 1, "", 0, 1, 0),
			 -ENOENT);
}

static void
test_send_ring_full_and_burst(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_out out[RING * 2];
	struct rn_client_entry e;
	uint8_t buf[BUF];
	char names[RING * 2][8];

	for (unsigned int i = 0; i < RING * 2; i++) {
		snprintf(names[i], sizeof(names[i]), "n%u", i);
		out[i] = (struct rn_client_out){ .name = names[i],
			.name_len = (uint32_t)strlen(names[i]), .cookie = i };
	}
	/* Capacity RING - 1: a burst is cut there. */
	assert_int_equal(rn_client_send_burst(c, NODE_B, "b", out, RING * 2,
					      0), RING - 1);
	assert_int_equal(rn_client_send_burst(c, NODE_B, "b", out, 1, 0),
			 -EAGAIN);
	assert_int_equal(rn_client_send(c, NODE_B, "b", "n", 1, "", 0, 1, 0),
			 -EAGAIN);
	/* Taken in order, each from its own buffer; room again. */
	for (unsigned int i = 0; i < RING - 1; i++) {
		assert_true(lcore_take(1, &e, buf));
		assert_int_equal(e.cookie, i);
		assert_memory_equal(buf + sizeof(struct rn_client_send_hdr) + 1,
				    names[i], strlen(names[i]));
	}
	assert_int_equal(rn_client_send_burst(c, NODE_B, "b", out + 3, 2, 0),
			 2);
	assert_true(lcore_take(1, &e, buf));
	assert_int_equal(e.cookie, 3);
	assert_true(lcore_take(1, &e, buf));
	assert_int_equal(e.cookie, 4);
	/* A burst stops before the first that does not fit. */
	out[1].msg_len = BUF;
	out[1].msg = buf;
	assert_int_equal(rn_client_send_burst(c, NODE_B, "b", out, 3, 0), 1);
	assert_int_equal(rn_client_send_burst(c, NODE_B, "b", out + 1, 2, 0),
			 -EMSGSIZE);
}

static void
test_send_wakes_sleeping_lcore(void **state)
{
	struct rn_client *c = *state;

	assert_int_equal(rn_client_send(c, NODE_B, "b", "n", 1, "", 0, 1, 0),
			 0);
	assert_int_equal(eventfd_take(F.wake[1]), 0);   /* awake: no write */
	F.page->lcore[1].sleeping = 1;
	assert_int_equal(rn_client_send(c, NODE_B, "b", "n", 1, "", 0, 1, 0),
			 0);
	assert_int_equal(eventfd_take(F.wake[1]), 1);
	assert_int_equal(eventfd_take(F.wake[0]), 0);   /* only its lcore */
}

static void
test_poll_holds_buffers_until_next_poll(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_notification got[RN_CLIENT_POLL_MAX];
	struct rte_ring *r1 = rn_client_deliver_ring(F.region, 1);

	assert_int_equal(deliver(1, "nodeb", "agent-B", "k1", "v1"), 0);
	assert_int_equal(deliver(1, "nodeb", "agent-B", "k2", "value2"), 0);
	assert_int_equal(deliver(1, "nodec", "agent-C", "k3", ""), 0);
	assert_int_equal(rn_client_poll(c, got, 2), 2);
	/* The first two of lcore 1, in order, whole. */
	assert_string_equal(got[0].node, "nodeb");
	assert_string_equal(got[0].agent, "agent-B");
	assert_int_equal(got[0].name_len, 2);
	assert_memory_equal(got[0].name, "k1", 2);
	assert_memory_equal(got[0].msg, "v1", 2);
	assert_int_equal(got[1].msg_len, 6);
	assert_memory_equal(got[1].msg, "value2", 6);
	/* Their buffers are still the application's. */
	assert_int_equal(rte_ring_free_count(r1), RING - 1 - 3);
	assert_int_equal(rn_client_poll(c, got, RN_CLIENT_POLL_MAX), 1);
	assert_string_equal(got[0].agent, "agent-C");
	assert_string_equal(got[0].node, "nodec");
	assert_int_equal(got[0].msg_len, 0);
	assert_int_equal(rte_ring_free_count(r1), RING - 1 - 1);
	assert_int_equal(rn_client_poll(c, got, RN_CLIENT_POLL_MAX), 0);
	assert_int_equal(rte_ring_free_count(r1), RING - 1);
}

static void
test_reports_and_refusals_beside_deliveries(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_notification got[RN_CLIENT_POLL_MAX];
	struct rn_client_completion comp[8];
	struct rn_client_event ev[8];
	struct rn_client_event down = { .type = RN_CLIENT_EVENT_PEER_DOWN,
					.status = -ETIMEDOUT };

	assert_int_equal(complete(1, 7, 0), 0);
	assert_int_equal(deliver(1, "nodeb", "B", "a", "1"), 0);
	assert_int_equal(refuse(1, 8, "nodeb", "ghost"), 0);
	assert_int_equal(complete(1, 9, -EPIPE), 0);
	assert_int_equal(deliver(1, "nodeb", "B", "b", "2"), 0);
	snprintf(down.node, sizeof(down.node), "nodeb");
	assert_int_equal(rte_ring_enqueue_elem(rn_client_events_ring(F.region),
					       &down, sizeof(down)), 0);
	/* completions() takes those before the first delivery only. */
	assert_int_equal(rn_client_completions(c, comp, 8), 1);
	assert_int_equal(comp[0].cookie, 7);
	assert_int_equal(rn_client_poll(c, got, 8), 2);
	assert_memory_equal(got[0].name, "a", 1);
	assert_memory_equal(got[1].name, "b", 1);
	assert_int_equal(rn_client_completions(c, comp, 8), 1);
	assert_int_equal(comp[0].cookie, 9);
	assert_int_equal(comp[0].status, -EPIPE);
	/* Refusals (deliver ring) and control events (events ring) come
	 * from two rings: no order between them. */
	assert_int_equal(rn_client_events(c, ev, 8), 2);
	if (ev[0].type != RN_CLIENT_EVENT_REFUSED) {
		struct rn_client_event t = ev[0];

		ev[0] = ev[1];
		ev[1] = t;
	}
	assert_int_equal(ev[0].type, RN_CLIENT_EVENT_REFUSED);
	assert_int_equal(ev[0].cookie, 8);
	assert_string_equal(ev[0].agent, "ghost");
	assert_string_equal(ev[0].node, "nodeb");
	assert_int_equal(ev[1].type, RN_CLIENT_EVENT_PEER_DOWN);
	assert_int_equal(ev[1].status, -ETIMEDOUT);
	assert_string_equal(ev[1].node, "nodeb");
	assert_int_equal(rn_client_events(c, ev, 8), 0);
	assert_int_equal(rn_client_completions(c, comp, 8), 0);
	/* The deliveries' buffers go back at the next poll. */
	assert_int_equal(rn_client_poll(c, got, 8), 0);
	assert_int_equal(rte_ring_free_count(rn_client_deliver_ring(F.region,
								    1)),
			 RING - 1);
}

/* Random mixes of entries on both lcores, taken by random calls: every
 * delivery once, in order per lcore, every report once; the rings empty
 * at the end. */
static void
test_random_mix(void **state)
{
	struct rn_client *c = *state;
	unsigned int seed = rn_test_seed("random_mix", 17);
	uint64_t next_put[N_LCORES] = { 0 }, next_got[N_LCORES] = { 0 };
	uint64_t comps_put = 0, comps_got = 0;
	struct rn_client_notification got[RN_CLIENT_POLL_MAX];
	struct rn_client_completion comp[RN_CLIENT_POLL_MAX];

	srandom(seed);
	for (unsigned int round = 0; round < 3000; round++) {
		uint32_t lc = (uint32_t)random() % N_LCORES;
		int what = (int)(random() % 4);
		int n;

		if (what == 0) {
			char name[32];

			snprintf(name, sizeof(name), "%u:%llu", lc,
				 (unsigned long long)next_put[lc]);
			if (deliver(lc, "nodeb", "B", name, "m") == 0)
				next_put[lc]++;
		} else if (what == 1) {
			if (complete(lc, comps_put, 0) == 0)
				comps_put++;
		} else if (what == 2) {
			n = rn_client_poll(c, got, 1 + (unsigned int)random() %
					   RN_CLIENT_POLL_MAX);
			assert_true(n >= 0);
			for (int i = 0; i < n; i++) {
				unsigned int l;
				unsigned long long k;
				char name[32];

				snprintf(name, sizeof(name), "%.*s",
					 (int)got[i].name_len,
					 (const char *)got[i].name);
				assert_int_equal(sscanf(name, "%u:%llu", &l,
							&k), 2);
				assert_int_equal(k, next_got[l]);
				next_got[l]++;
			}
		} else {
			n = rn_client_completions(c, comp, RN_CLIENT_POLL_MAX);
			assert_true(n >= 0);
			comps_got += (uint64_t)n;
		}
	}
	for (int i = 0; i < 100; i++) {
		int n = rn_client_poll(c, got, RN_CLIENT_POLL_MAX);

		for (int j = 0; j < n; j++) {
			unsigned int l;
			unsigned long long k;

			assert_int_equal(sscanf((const char *)got[j].name,
						"%u:%llu", &l, &k), 2);
			assert_int_equal(k, next_got[l]);
			next_got[l]++;
		}
		comps_got += (uint64_t)rn_client_completions(c, comp,
							     RN_CLIENT_POLL_MAX);
	}
	for (uint32_t l = 0; l < N_LCORES; l++) {
		assert_int_equal(next_got[l], next_put[l]);
		assert_int_equal(rte_ring_free_count(
			rn_client_deliver_ring(F.region, l)), RING - 1);
	}
	assert_int_equal(comps_got, comps_put);
	printf("# random_mix: %llu + %llu deliveries, %llu reports\n",
	       (unsigned long long)next_put[0],
	       (unsigned long long)next_put[1],
	       (unsigned long long)comps_put);
}

static void
test_fd_readable_while_something_waits(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_notification got[4];
	struct rn_client_completion comp[4];
	int fd = rn_client_fd(c);

	assert_false(readable(fd, 0));
	assert_int_equal(deliver(0, "nodeb", "B", "a", "1"), 0);
	assert_true(readable(fd, 0));
	/* Taken: readable until a call finds nothing left. */
	assert_int_equal(rn_client_poll(c, got, 4), 1);
	assert_int_equal(rn_client_poll(c, got, 4), 0);
	assert_false(readable(fd, 0));
	/* A report behind nothing: readable until completions() takes it,
	 * though poll() does not. */
	assert_int_equal(complete(1, 5, 0), 0);
	assert_true(readable(fd, 0));
	assert_int_equal(rn_client_poll(c, got, 4), 0);
	assert_true(readable(fd, 0));
	assert_int_equal(rn_client_completions(c, comp, 4), 1);
	assert_int_equal(rn_client_completions(c, comp, 4), 0);
	assert_false(readable(fd, 0));
	/* One write per sleep: a second entry finds it disarmed. */
	assert_int_equal(deliver(0, "nodeb", "B", "a", "1"), 0);
	assert_int_equal(deliver(0, "nodeb", "B", "b", "2"), 0);
	assert_int_equal(F.region->armed, 0);
	assert_int_equal(rn_client_poll(c, got, 4), 2);
	assert_int_equal(rn_client_poll(c, got, 4), 0);
	assert_int_equal(F.region->armed, 1);
}

/* A producer that took `armed` but wrote the eventfd only after the
 * client drained it: the write is drained by the next call that finds
 * nothing, and the fd does not stay readable for nothing. */
static void
test_late_wake_write_is_drained(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_notification got[4];
	uint64_t one = 1;
	int fd = rn_client_fd(c);

	assert_int_equal(rn_client_poll(c, got, 4), 0);   /* armed */
	assert_int_equal(__atomic_exchange_n(&F.region->armed, 0,
					     __ATOMIC_SEQ_CST), 1);
	/* The client looks before the producer's write lands. */
	assert_int_equal(rn_client_poll(c, got, 4), 0);
	assert_false(readable(fd, 0));
	assert_int_equal(write(F.efd, &one, sizeof(one)), sizeof(one));
	assert_true(readable(fd, 0));
	assert_int_equal(rn_client_poll(c, got, 4), 0);
	assert_false(readable(fd, 0));
	assert_int_equal(rn_client_wait(c, 0), 0);
	assert_false(readable(fd, 0));
	/* And a write nobody announced ends a wait without a busy loop. */
	assert_int_equal(write(F.efd, &one, sizeof(one)), sizeof(one));
	assert_int_equal(rn_client_wait(c, 50), 0);
	assert_int_equal(rn_client_poll(c, got, 4), 0);
	assert_false(readable(fd, 0));
}

static void *
deliver_later(void *arg)
{
	(void)arg;
	usleep(50000);
	deliver(1, "nodeb", "B", "late", "x");
	return NULL;
}

static void
test_wait_blocks_then_wakes(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_notification got[4];
	pthread_t t;

	assert_int_equal(rn_client_wait(c, 0), 0);
	assert_int_equal(rn_client_wait(c, 20), 0);
	assert_int_equal(pthread_create(&t, NULL, deliver_later, NULL), 0);
	assert_int_equal(rn_client_wait(c, 5000), 1);
	pthread_join(t, NULL);
	assert_int_equal(rn_client_poll(c, got, 4), 1);
	assert_memory_equal(got[0].name, "late", 4);
	assert_int_equal(rn_client_wait(c, 0), 0);
	/* Something there already: at once, without blocking. */
	assert_int_equal(complete(0, 1, 0), 0);
	assert_int_equal(rn_client_wait(c, -1), 1);
}

static void
test_daemon_gone(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_notification got[4];
	struct rn_client_completion comp[4];
	struct rn_client_event ev[4];

	assert_false(readable(rn_client_fd(c), 0));
	/* The daemon dies: its end of the socket closes. */
	shutdown(F.conn, SHUT_RDWR);
	assert_true(readable(rn_client_fd(c), 1000));
	assert_int_equal(rn_client_wait(c, 1000), -ENOTCONN);
	assert_int_equal(rn_client_send(c, NODE_B, "b", "n", 1, "", 0, 1, 0),
			 -ENOTCONN);
	assert_int_equal(rn_client_poll(c, got, 4), -ENOTCONN);
	assert_int_equal(rn_client_completions(c, comp, 4), -ENOTCONN);
	assert_int_equal(rn_client_events(c, ev, 4), -ENOTCONN);
	assert_int_equal(rn_client_peer_add(c, "x", "127.0.0.1", 1),
			 -ENOTCONN);
	assert_int_equal(rn_client_peer_remove(c, "x"), -ENOTCONN);
	assert_true(readable(rn_client_fd(c), 0));
}

static void
test_daemon_gone_noticed_by_next_call(void **state)
{
	struct rn_client *c = *state;

	shutdown(F.conn, SHUT_RDWR);
	/* No wait first: a send a clock tick later sees it. */
	usleep(10000);
	assert_int_equal(rn_client_send(c, NODE_B, "b", "n", 1, "", 0, 1, 0),
			 -ENOTCONN);
}

static void
test_region_closed(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_notification got[4];

	__atomic_store_n(&F.region->closed, 1, __ATOMIC_RELEASE);
	assert_int_equal(rn_client_poll(c, got, 4), -ENOTCONN);
	assert_true(readable(rn_client_fd(c), 0));
	assert_int_equal(rn_client_wait(c, -1), -ENOTCONN);
}

static void
test_peers(void **state)
{
	struct rn_client *c = *state;

	assert_int_equal(rn_client_peer_add(c, "nodex", "10.0.0.9", 18515), 0);
	assert_string_equal(F.peer_added.name, "nodex");
	assert_string_equal(F.peer_added.address, "10.0.0.9");
	assert_int_equal(F.peer_added.port, 18515);
	assert_int_equal(rn_client_peer_add(c, "nodey", "fe80::1", 1), 0);
	assert_int_equal(rn_client_peer_add(c, "nodex", "not-an-ip", 1),
			 -EINVAL);
	assert_int_equal(rn_client_peer_add(c, "nodex", "10.0.0.9", 0),
			 -EINVAL);
	assert_int_equal(rn_client_peer_add(c, "", "10.0.0.9", 1), -EINVAL);
	assert_int_equal(rn_client_peer_remove(c, "nodex"), 0);
	assert_string_equal(F.removed, "nodex");
	assert_int_equal(rn_client_peer_remove(c, "nope"), -ENOENT);
}

static void
test_detach_says_so(void **state)
{
	struct rn_client *c;

	(void)state;
	fake_start();
	assert_int_equal(rn_client_attach(F.path, "a", &c), 0);
	rn_client_detach(c);
	assert_true(F.detached);
	fake_stop();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attach_errors),
		cmocka_unit_test(test_detach_says_so),
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_send_writes_entry_and_buffer),
		T(test_send_states),
		T(test_send_ring_full_and_burst),
		T(test_send_wakes_sleeping_lcore),
		T(test_poll_holds_buffers_until_next_poll),
		T(test_reports_and_refusals_beside_deliveries),
		T(test_random_mix),
		T(test_fd_readable_while_something_waits),
		T(test_wait_blocks_then_wakes),
		T(test_late_wake_write_is_drained),
		T(test_daemon_gone),
		T(test_daemon_gone_noticed_by_next_call),
		T(test_region_closed),
		T(test_peers),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
