/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * librnotify against the daemon's side of the contract, in one process:
 * the test answers the attach protocol on a real SOCK_SEQPACKET socket
 * (a thread), builds the region with rn_client_region_init() and the
 * status page with rn_client_status_init() in memfds it passes with
 * SCM_RIGHTS, and plays the lcores at the rings of its own mapping (peek
 * API, positional buffers, rn_client_link_wake()). For transfers it
 * answers REG (mapping the fds it gets, as the daemon does), DEREG,
 * PUBLISH and FETCH, and plays the lcore at the batch slots: it reads
 * each XFER entry's slot, moves the bytes (both sides are in this
 * process) and writes the result. The library is the real one
 * (librnotify.so), used only through rn_client.h.
 */
#include <alloca.h>
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
#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "rn_client.h"
#include "rn_client_msg.h"
#include "rn_client_region.h"
#include "rn_lcore_client.h"
#include "rn_test_seed.h"
#include "rn_xfer_desc.h"

#define N_LCORES 2u
#define RING 8u            /* entries per ring: capacity 7 */
#define BUF 256u
#define NODE_B "nodeb"     /* NATIVE on lcore 1 */
#define EP_B 3u
#define TAG_B 77u
#define SLOTS 4u           /* batch slots per lcore */
#define SLOT_SIZE 4096u
#define SESSION_A 0xa11ceull   /* the played daemon's incarnation */
/* Where a slot's body starts (rn_client_shm.h: right after the request). */
#define BODY_OFF (offsetof(struct rn_client_xfer_slot, req) + \
		  sizeof(struct rn_client_xfer_req))

/* A region the played daemon registered: its own mapping of the fds. */
struct fake_reg {
	bool live;
	uint64_t addr, length;
	uint32_t access;
	uint8_t *map;              /* the daemon's address of it */
	char name[RN_CLIENT_PUBLISH_NAME_MAX + 1];
};

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
	/* Transfers: what the played daemon was asked and holds. */
	uint32_t xfer_slots;       /* of the region made at fake_start() */
	struct fake_reg regs[RN_CLIENT_MAX_REGIONS];
	struct rn_client_reg_req last_reg;
	unsigned int regs_asked, deregs;
	uint32_t published_region;
	char published[RN_CLIENT_PUBLISH_NAME_MAX + 1];
	struct rn_client_fetch_req fetched;
};

/* Batch slots of the next fake_start(). */
static uint32_t fake_xfer_slots = SLOTS;

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
	if (n_fds != 0)
		rn_client_msg_put_fds(&msg, ctl.b, fds, n_fds);
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

/* A descriptor of node for [addr, addr + length), keys of two lcores. */
static void
make_desc(uint8_t *out, const char *node, uint64_t session, uint64_t addr,
	  uint64_t length)
{
	struct rn_xfer_remote r = { .session_id = session, .addr = addr,
				    .length = length, .n_keys = 2,
				    .keys = { { 0, 0x100 }, { 1, 0x101 } } };

	snprintf(r.node, sizeof(r.node), "%s", node);
	assert_int_equal(rn_xfer_desc_encode(&r, out, RN_XFER_DESC_SIZE),
			 RN_XFER_DESC_SIZE);
}

/* REG as the daemon checks it (docs/client.md): host memory only, whole
 * pages, no overlap; then the pieces mapped side by side. */
static int
fake_reg(const uint8_t *body, uint32_t len, const int *fds,
	 unsigned int n_fds, struct rn_client_registered *out)
{
	struct rn_client_reg_req q;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), total = 0;
	struct fake_reg *r = NULL;
	uint8_t *map;
	uint32_t id;

	F.regs_asked++;
	if (F.xfer_slots == 0)
		return -ENOTSUP;
	if (len != sizeof(q))
		return -EINVAL;
	memcpy(&q, body, sizeof(q));
	F.last_reg = q;
	if (q.n_pieces == 0 || q.n_pieces > RN_CLIENT_REG_MAX_PIECES ||
	    n_fds != q.n_pieces)
		return -EINVAL;
	if (q.flags & RN_CLIENT_REG_DMABUF)
		return -EOPNOTSUPP;   /* as the sim */
	for (unsigned int i = 0; i < n_fds; i++) {
		struct statfs fs;

		if (fstatfs(fds[i], &fs) != 0 ||
		    ((unsigned long)fs.f_type != TMPFS_MAGIC &&
		     (unsigned long)fs.f_type != HUGETLBFS_MAGIC))
			return -EBADF;
		/* As the daemon (client_xfer.c): sealed against shrinking,
		 * or refused. */
		(void)fcntl(fds[i], F_ADD_SEALS, F_SEAL_SHRINK);
		if ((fcntl(fds[i], F_GET_SEALS) & F_SEAL_SHRINK) == 0)
			return -EBADF;
		if (q.piece[i].offset % page || q.piece[i].length % page)
			return -EINVAL;
		total += q.piece[i].length;
	}
	if (q.addr % page)
		return -EINVAL;
	for (id = 0; id < RN_CLIENT_MAX_REGIONS; id++) {
		struct fake_reg *o = &F.regs[id];

		if (o->live && q.addr < o->addr + o->length &&
		    o->addr < q.addr + total)
			return -EEXIST;
		if (!o->live && r == NULL)
			r = o;
	}
	if (r == NULL)
		return -ENOSPC;
	map = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	for (uint64_t i = 0, at = 0; i < n_fds; i++) {
		assert_true(mmap(map + at, q.piece[i].length,
				 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
				 fds[i], (off_t)q.piece[i].offset) != MAP_FAILED);
		at += q.piece[i].length;
	}
	*r = (struct fake_reg){ .live = true, .addr = q.addr, .length = total,
				.access = q.access, .map = map };
	out->region = (uint32_t)(r - F.regs);
	make_desc(out->desc, "nodea", SESSION_A, q.addr, total);
	return 0;
}

static int
fake_dereg(const uint8_t *body, uint32_t len)
{
	uint32_t id;

	F.deregs++;
	if (len != sizeof(id))
		return -EINVAL;
	memcpy(&id, body, sizeof(id));
	if (id >= RN_CLIENT_MAX_REGIONS || !F.regs[id].live)
		return -EINVAL;
	munmap(F.regs[id].map, F.regs[id].length);
	F.regs[id].live = false;
	return 0;
}

static int
fake_publish(const uint8_t *body, uint32_t len)
{
	struct rn_client_publish_req p;

	if (len != sizeof(p))
		return -EINVAL;
	memcpy(&p, body, sizeof(p));
	if (p.region >= RN_CLIENT_MAX_REGIONS || !F.regs[p.region].live ||
	    memchr(p.name, '\0', sizeof(p.name)) == NULL)
		return -EINVAL;
	if (strcmp(p.name, "taken") == 0)
		return -EEXIST;
	F.published_region = p.region;
	memcpy(F.published, p.name, sizeof(p.name));
	return 0;
}

/* FETCH: "nothing" is published nowhere; "liar" answers another node's
 * descriptor; anything else a descriptor of the node asked. */
static int
fake_fetch(const uint8_t *body, uint32_t len, uint8_t *desc)
{
	if (len != sizeof(F.fetched))
		return -EINVAL;
	memcpy(&F.fetched, body, sizeof(F.fetched));
	if (strcmp(F.fetched.name, "nothing") == 0)
		return -ENODATA;
	make_desc(desc, strcmp(F.fetched.name, "liar") == 0 ? "other" :
		  F.fetched.node, 7, 0x10000, 4096);
	return 0;
}

/* One request of the client with its descriptors (closed by the caller). */
static ssize_t
recv_request(int fd, uint8_t *buf, size_t cap, int *fds, unsigned int *n_fds)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * RN_CLIENT_REG_MAX_PIECES)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl.b,
			      .msg_controllen = sizeof(ctl.b) };
	ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);

	*n_fds = 0;
	for (struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
	     cm != NULL; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_RIGHTS) {
			*n_fds = (unsigned int)((cm->cmsg_len - CMSG_LEN(0)) /
						sizeof(int));
			memcpy(fds, CMSG_DATA(cm), *n_fds * sizeof(int));
		}
	return n;
}

static void
serve(int fd)
{
	uint8_t buf[RN_CLIENT_MSG_MAX];
	struct rn_client_msg_hdr hdr;
	int fds[RN_CLIENT_REG_MAX_PIECES];
	unsigned int n_fds;
	ssize_t n;

	while ((n = recv_request(fd, buf, sizeof(buf), fds, &n_fds)) > 0) {
		char name[RN_CLIENT_NODE_MAX + 1] = "";
		const uint8_t *body = buf + sizeof(hdr);

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
		case RN_CLIENT_MSG_REG: {
			struct rn_client_registered r = { 0 };
			int rc = fake_reg(body, hdr.len, fds, n_fds, &r);

			reply(fd, hdr.type, rc, &r, rc == 0 ? sizeof(r) : 0,
			      NULL, 0);
			break;
		}
		case RN_CLIENT_MSG_DEREG:
			reply(fd, hdr.type, fake_dereg(body, hdr.len), NULL,
			      0, NULL, 0);
			break;
		case RN_CLIENT_MSG_PUBLISH:
			reply(fd, hdr.type, fake_publish(body, hdr.len), NULL,
			      0, NULL, 0);
			break;
		case RN_CLIENT_MSG_FETCH: {
			uint8_t desc[RN_CLIENT_DESC_SIZE];
			int rc = fake_fetch(body, hdr.len, desc);

			reply(fd, hdr.type, rc, desc, rc == 0 ? sizeof(desc) :
			      0, NULL, 0);
			break;
		}
		}
		for (unsigned int i = 0; i < n_fds; i++)
			close(fds[i]);
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

/* The region, with F.xfer_slots batch slots per lcore. */
static void
region_make(void)
{
#ifdef RN_CLIENT_XFER_SLOTS_MAX
	F.region_size = rn_client_region_size_xfer(N_LCORES, RING, BUF,
						   F.xfer_slots, SLOT_SIZE);
	F.region_fd = memfd_of(F.region_size, (void **)&F.region);
	assert_int_equal(rn_client_region_init_xfer(F.region, N_LCORES, RING,
						    BUF, F.xfer_slots,
						    SLOT_SIZE), 0);
#else
	/* Before the layout knew slots: they follow the region, inside the
	 * memfd the client maps. */
	uint64_t base = rn_client_region_size(N_LCORES, RING, BUF);

	F.region_size = base + (uint64_t)N_LCORES * F.xfer_slots * SLOT_SIZE;
	F.region_fd = memfd_of(F.region_size, (void **)&F.region);
	assert_int_equal(rn_client_region_init(F.region, N_LCORES, RING, BUF),
			 0);
	F.region->xfer_slots = F.xfer_slots;
	F.region->xfer_slot_size = F.xfer_slots != 0 ? SLOT_SIZE : 0;
	for (uint32_t i = 0; i < N_LCORES && F.xfer_slots != 0; i++)
		F.region->xfer_off[i] = base +
					(uint64_t)i * F.xfer_slots * SLOT_SIZE;
#endif
}

static void
fake_start(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(&F, 0, sizeof(F));
	F.reply_version = RN_CLIENT_PROTO_VERSION;
	F.conn = -1;
	F.xfer_slots = fake_xfer_slots;
	region_make();
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
	for (unsigned int i = 0; i < RN_CLIENT_MAX_REGIONS; i++)
		if (F.regs[i].live)
			munmap(F.regs[i].map, F.regs[i].length);
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
	fake_xfer_slots = SLOTS;
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
	memcpy(p, name, h.name_len);
	memcpy(p + h.name_len, msg, h.msg_len);
	memcpy(p + h.name_len + h.msg_len, agent, h.agent_len);
	return lcore_put(lcore, (struct rn_client_entry){
		.type = RN_CLIENT_ENTRY_DELIVERY },
		buf, sizeof(h) + h.agent_len + h.name_len + h.msg_len);
}

/* Deliveries on lcore until its deliver ring is full: the state in which
 * an lcore drops XFER_DONE. Returns how many went. */
static unsigned int
deliver_ring_fill(uint32_t lcore)
{
	unsigned int n = 0;

	while (deliver(lcore, NODE_B, "B", "fill", "x") == 0)
		n++;
	return n;
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

/* ---- the lcore's side of batches ---- */

/* A batch as the played lcore read it from its slot. */
struct played {
	struct rn_client_entry e;
	struct rn_client_xfer_req req;
	struct rn_xfer_remote rem[RN_CLIENT_XFER_MAX_REMOTES];
	struct rn_client_xfer_triple t[128];
	char agent[RN_CLIENT_AGENT_MAX + 1];
	uint8_t name[BUF], msg[BUF];
	uint32_t cancel;
};

static struct rn_client_xfer_slot *
slot_of(uint32_t lcore, uint32_t slot)
{
	return rn_client_xfer_slot(F.region, lcore, slot);
}

/* Take the next XFER entry of lcore and read its slot, checking what a
 * daemon would; false when there is none. */
static bool
xfer_take(uint32_t lcore, struct played *p)
{
	struct rte_ring *r = rn_client_submit_ring(F.region, lcore);
	const struct rn_client_xfer_slot *s;
	const uint8_t *at;

	memset(p, 0, sizeof(*p));
	if (rte_ring_dequeue_elem(r, &p->e, sizeof(p->e)) != 0)
		return false;
	assert_int_equal(p->e.type, RN_CLIENT_ENTRY_XFER);
	assert_true(p->e.slot < SLOTS);
	s = slot_of(lcore, p->e.slot);
	assert_true(s->status == RN_CLIENT_XFER_PENDING);
	p->cancel = s->cancel;
	p->req = s->req;
	assert_true(p->req.n_remotes >= 1 &&
		    p->req.n_remotes <= RN_CLIENT_XFER_MAX_REMOTES);
	assert_true(p->req.n_entries >= 1 && p->req.n_entries <= 128);
	assert_true(BODY_OFF + p->req.n_remotes * RN_CLIENT_DESC_SIZE +
		    p->req.n_entries * sizeof(struct rn_client_xfer_triple) +
		    p->req.note_agent_len + p->req.note_name_len +
		    p->req.note_msg_len <= SLOT_SIZE);
	at = (const uint8_t *)s + BODY_OFF;
	for (uint32_t i = 0; i < p->req.n_remotes; i++, at += RN_XFER_DESC_SIZE)
		assert_int_equal(rn_xfer_desc_decode(at, RN_XFER_DESC_SIZE,
						     &p->rem[i]), 0);
	for (uint32_t i = 0; i < p->req.n_entries; i++, at += sizeof(p->t[0])) {
		memcpy(&p->t[i], at, sizeof(p->t[0]));
		assert_true(p->t[i].remote_index < p->req.n_remotes);
	}
	memcpy(p->agent, at, p->req.note_agent_len);
	at += p->req.note_agent_len;
	memcpy(p->name, at, p->req.note_name_len);
	at += p->req.note_name_len;
	memcpy(p->msg, at, p->req.note_msg_len);
	return true;
}

/* Move the batch's bytes (both sides are in this process): the lcore's
 * RDMA, played. Returns the bytes moved. */
static uint64_t
xfer_run(const struct played *p)
{
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < p->req.n_entries; i++) {
		const struct rn_client_xfer_triple *t = &p->t[i];
		void *local = (void *)(uintptr_t)t->local;
		void *remote = (void *)(uintptr_t)t->remote;

		if (p->req.kind == RN_CLIENT_WRITE)
			memcpy(remote, local, t->length);
		else
			memcpy(local, remote, t->length);
		bytes += t->length;
	}
	return bytes;
}

/* XFER_DONE as the lcore writes it: the slot in ep_index, the status.
 * Alone (without the slot's result) it is how an lcore that cannot reach
 * the slot refuses the batch. */
static int
xfer_done_put(uint32_t lcore, uint32_t slot, uint64_t cookie, int status)
{
	return lcore_put(lcore, (struct rn_client_entry){
		.type = RN_CLIENT_ENTRY_XFER_DONE, .ep_index = (uint16_t)slot,
		.status = status, .cookie = cookie }, NULL, 0);
}

/* The final status of the batch in slot of lcore: the result, status
 * last (release), then XFER_DONE when done is set and the deliver ring
 * has room. Returns whether XFER_DONE went. */
static bool
xfer_final(uint32_t lcore, uint32_t slot, uint64_t cookie, int status,
	   uint64_t bytes, int notify_status, bool done)
{
	struct rn_client_xfer_slot *s = slot_of(lcore, slot);

	s->bytes_done = bytes;
	s->notify_status = notify_status;
	__atomic_store_n(&s->status, status, __ATOMIC_RELEASE);
	if (!done) {
		rn_client_link_wake(&F.link);
		return false;
	}
	/* A full ring drops it; the client is woken all the same. */
	if (xfer_done_put(lcore, slot, cookie, status) == 0)
		return true;
	rn_client_link_wake(&F.link);
	return false;
}

/* Memory of a peer on node b, as its descriptor names it: this
 * process's, so that the played lcore can move bytes to and from it. */
static uint8_t peer_mem[2][16384] __attribute__((aligned(4096)));

static struct rn_client_remote *
import_peer(struct rn_client *c, unsigned int i, const char *node)
{
	uint8_t desc[RN_CLIENT_DESC_SIZE];
	struct rn_client_remote *rem;

	make_desc(desc, node, 0xb0b, (uintptr_t)peer_mem[i],
		  sizeof(peer_mem[i]));
	assert_int_equal(rn_client_import(c, desc, sizeof(desc), &rem), 0);
	return rem;
}

/* Allocated and registered memory of the client: len bytes. */
static uint8_t *
local_mem(struct rn_client *c, size_t len, struct rn_client_mr **r)
{
	void *p;

	assert_int_equal(rn_client_alloc(c, len, &p), 0);
	assert_int_equal(rn_client_reg(c, p, len, RN_CLIENT_LOCAL_WRITE, r),
			 0);
	return p;
}

/* Where most transfer tests start: 4 KiB of the client's memory,
 * registered, NODE_B's first region imported, and one entry of length
 * bytes from the start of one to the start of the other. */
struct xfer_fixture {
	struct rn_client_mr *mr;
	uint8_t *loc;
	struct rn_client_remote *rem;
	struct rn_client_xfer_entry e;
};

static void
xfer_fixture_make(struct rn_client *c, uint64_t length,
		  struct xfer_fixture *x)
{
	x->loc = local_mem(c, 4096, &x->mr);
	x->rem = import_peer(c, 0, NODE_B);
	x->e = (struct rn_client_xfer_entry){ x->loc, (uintptr_t)peer_mem[0],
					      length, x->rem };
}

/* The fixture's entry alone as a WRITE, without a notification. */
static int
xfer_write(struct rn_client *c, const struct xfer_fixture *x, uint64_t cookie,
	   struct rn_client_batch **b)
{
	return rn_client_transfer(c, RN_CLIENT_WRITE, &x->e, 1, NULL, cookie,
				  b);
}

/* As xfer_write(), and the batch then taken by lcore 1 (NODE_B's), so
 * that the test can play its final status. */
static void
xfer_write_taken(struct rn_client *c, const struct xfer_fixture *x,
		 uint64_t cookie, struct rn_client_batch **b, struct played *p)
{
	assert_int_equal(xfer_write(c, x, cookie, b), 0);
	assert_true(xfer_take(1, p));
}

static int
comps_take(struct rn_client *c, struct rn_client_completion *out,
	   unsigned int max)
{
	int n = rn_client_completions(c, out, max);

	assert_true(n >= 0);
	return n;
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

/* ---- transfers ---- */

/* Whether the mapping at addr is on 2 MiB pages (smaps says). */
static bool
on_hugepages(const void *addr)
{
	char line[256];
	bool in = false, huge = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;

		/* A mapping's first line; its fields ("Size:") do not
		 * parse so. */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
			continue;
		}
		if (in && strncmp(line, "KernelPageSize:", 15) == 0) {
			huge = strstr(line, " 2048 kB") != NULL;
			break;
		}
	}
	fclose(f);
	return huge;
}

static unsigned long
hugepages_free(void)
{
	char line[128];
	unsigned long n = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "HugePages_Free: %lu", &n) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return n;
}

static void
test_alloc_and_free(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_mr *r;
	unsigned long huge = hugepages_free();
	uint8_t *p, *h, *big;
	size_t big_len = (huge + 1) * (2u << 20);

	assert_int_equal(rn_client_alloc(c, 0, (void **)&p), -EINVAL);
	assert_int_equal(rn_client_alloc(c, 1000, (void **)&p), 0);
	for (unsigned int i = 0; i < 1000; i++)
		assert_int_equal(p[i], 0);
	memset(p, 0xab, 1000);
	/* 2 MiB: on hugepages when the host has a free one. */
	assert_int_equal(rn_client_alloc(c, 2u << 20, (void **)&h), 0);
	assert_int_equal(h[0] | h[(2u << 20) - 1], 0);
	h[0] = 1;
	printf("# %lu free hugepages; 2 MiB on hugepages: %d\n", huge,
	       on_hugepages(h));
	if (huge != 0)
		assert_true(on_hugepages(h));
	/* More than the free hugepages: a plain memfd, untouched. */
	assert_int_equal(rn_client_alloc(c, big_len, (void **)&big), 0);
	assert_false(on_hugepages(big));
	assert_int_equal(big[big_len - 1], 0);
	/* Only what alloc gave, by its first byte. */
	assert_int_equal(rn_client_free(c, p + 1), -EINVAL);
	assert_int_equal(rn_client_free(c, peer_mem[0]), -EINVAL);
	/* Held by a region: -EBUSY until it is deregistered. */
	assert_int_equal(rn_client_reg(c, p, 1000, 0, &r), 0);
	assert_int_equal(rn_client_free(c, p), -EBUSY);
	assert_int_equal(rn_client_dereg(c, r), 0);
	assert_int_equal(rn_client_free(c, p), 0);
	assert_int_equal(rn_client_free(c, p), -EINVAL);
	assert_int_equal(rn_client_free(c, big), 0);
	/* h is left to detach. */
}

static void
test_reg_passes_the_memory(void **state)
{
	struct rn_client *c = *state;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct rn_client_mr *r, *r2;
	uint8_t *p, *stack_buf = alloca(page);
	void *heap = malloc(page);
	struct fake_reg *fr;

	assert_int_equal(rn_client_alloc(c, 4 * page, (void **)&p), 0);
	/* Memory the daemon cannot map: plain malloc, the stack, a range
	 * running past its allocation. */
	assert_int_equal(rn_client_reg(c, heap, page, 0, &r), -EFAULT);
	assert_int_equal(rn_client_reg(c, stack_buf, page, 0, &r), -EFAULT);
	assert_int_equal(rn_client_reg(c, p + page, 4 * page, 0, &r), -EFAULT);
	free(heap);
	assert_int_equal(rn_client_reg(c, p, 0, 0, &r), -EINVAL);
	assert_int_equal(rn_client_reg(c, p, page, 8, &r), -EINVAL);
	assert_int_equal(rn_client_reg(c, p, page, RN_CLIENT_REMOTE_WRITE, &r),
			 -EINVAL);
	assert_int_equal(F.regs_asked, 0);   /* none of those asked */
	/* Pages 1..2, asked as a range inside them: whole pages go, at the
	 * right offset of the right fd. */
	assert_int_equal(rn_client_reg(c, p + page + 100, page, RN_CLIENT_LOCAL_WRITE |
				       RN_CLIENT_REMOTE_WRITE, &r), 0);
	assert_int_equal(F.last_reg.addr, (uintptr_t)p + page);
	assert_int_equal(F.last_reg.n_pieces, 1);
	assert_int_equal(F.last_reg.piece[0].offset, page);
	assert_int_equal(F.last_reg.piece[0].length, 2 * page);
	assert_int_equal(F.last_reg.access, RN_CLIENT_LOCAL_WRITE |
			 RN_CLIENT_REMOTE_WRITE);
	fr = &F.regs[0];
	assert_true(fr->live);
	/* rn_client_alloc()'s memfd took the seal the daemon requires
	 * (the fake's REG above refuses one without it: -EBADF). */
	/* The daemon's mapping is the client's memory, both ways. */
	p[page] = 0x5a;
	p[3 * page - 1] = 0xa5;
	assert_int_equal(fr->map[0], 0x5a);
	assert_int_equal(fr->map[2 * page - 1], 0xa5);
	fr->map[1] = 0x77;
	assert_int_equal(p[page + 1], 0x77);
	/* Overlap: the daemon's -EEXIST. */
	assert_int_equal(rn_client_reg(c, p + 2 * page, page, 0, &r2), -EEXIST);
	assert_int_equal(rn_client_reg(c, p + 3 * page, page, 0, &r2), 0);
	assert_int_equal(rn_client_dereg(c, r2), 0);
	assert_int_equal(rn_client_dereg(c, r), 0);
	assert_false(fr->live);
	assert_int_equal(F.deregs, 2);
}

static int
memfd_filled(size_t len, uint8_t v)
{
	int fd = memfd_create("piece", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	uint8_t *m;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	memset(m, v, len);
	munmap(m, len);
	return fd;
}

static void
test_reg_fd_pieces(void **state)
{
	struct rn_client *c = *state;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int a = memfd_filled(2 * page, 1), b = memfd_filled(3 * page, 2);
	struct rn_client_piece pc[RN_CLIENT_REG_MAX_PIECES + 1] = {
		{ a, page, page }, { b, 0, 3 * page } };
	uint8_t *va = mmap(NULL, 4 * page, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct rn_client_mr *r;
	uint8_t desc[RN_CLIENT_DESC_SIZE];
	struct rn_xfer_remote d;
	int pfd[2];

	assert_true(va != MAP_FAILED);
	/* The application maps its pieces side by side, as PyTorch's
	 * expandable segments do. */
	assert_true(mmap(va, page, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, a, (off_t)page) != MAP_FAILED);
	assert_true(mmap(va + page, 3 * page, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, b, 0) != MAP_FAILED);
	assert_int_equal(rn_client_reg_fd(c, va, pc, 2, RN_CLIENT_REMOTE_READ,
					  0, &r), 0);
	assert_int_equal(F.last_reg.n_pieces, 2);
	assert_int_equal(F.last_reg.addr, (uintptr_t)va);
	assert_int_equal(F.last_reg.piece[0].offset, page);
	assert_int_equal(F.last_reg.piece[1].length, 3 * page);
	/* The daemon mapped the same memory, in the same order. */
	assert_int_equal(F.regs[0].map[0], 1);
	assert_int_equal(F.regs[0].map[page], 2);
	va[4 * page - 1] = 9;
	assert_int_equal(F.regs[0].map[4 * page - 1], 9);
	assert_int_equal(rn_client_export(r, desc, sizeof(desc)),
			 RN_CLIENT_DESC_SIZE);
	assert_int_equal(rn_xfer_desc_decode(desc, sizeof(desc), &d), 0);
	assert_int_equal(d.addr, (uintptr_t)va);
	assert_int_equal(d.length, 4 * page);
	assert_int_equal(rn_client_dereg(c, r), 0);
	/* The library's checks. */
	assert_int_equal(rn_client_reg_fd(c, va, pc, 0, 0, 0, &r), -EINVAL);
	assert_int_equal(rn_client_reg_fd(c, va, pc,
					  RN_CLIENT_REG_MAX_PIECES + 1, 0, 0,
					  &r), -EINVAL);
	assert_int_equal(rn_client_reg_fd(c, va, pc, 2, 0, 2, &r), -EINVAL);
	assert_int_equal(rn_client_reg_fd(c, va, pc, 2, 16, 0, &r), -EINVAL);
	pc[1].length = 0;
	assert_int_equal(rn_client_reg_fd(c, va, pc, 2, 0, 0, &r), -EINVAL);
	pc[1] = (struct rn_client_piece){ -1, 0, page };
	assert_int_equal(rn_client_reg_fd(c, va, pc, 2, 0, 0, &r), -EBADF);
	assert_int_equal(rn_client_reg_fd(c, va, pc, 2, 0,
					  RN_CLIENT_REG_DMABUF, &r),
			 -EOPNOTSUPP);
	/* The daemon's: a pipe is no memory; no dma-buf on the sim. */
	assert_int_equal(pipe(pfd), 0);
	pc[1] = (struct rn_client_piece){ pfd[0], 0, page };
	assert_int_equal(rn_client_reg_fd(c, va, pc, 2, 0, 0, &r), -EBADF);
	assert_int_equal(rn_client_reg_fd(c, va, pc, 1, 0,
					  RN_CLIENT_REG_DMABUF, &r),
			 -EOPNOTSUPP);
	/* A memfd the daemon cannot seal against shrinking. */
	pc[1] = (struct rn_client_piece){ memfd_create("x", MFD_CLOEXEC), 0,
					  page };
	assert_int_equal(ftruncate(pc[1].fd, (off_t)page), 0);
	assert_int_equal(rn_client_reg_fd(c, va, pc, 2, 0, 0, &r), -EBADF);
	close(pc[1].fd);
	/* Still attached after all of those. */
	assert_int_equal(rn_client_reg_fd(c, va, pc, 1, 0, 0, &r), 0);
	assert_int_equal(rn_client_dereg(c, r), 0);
	close(pfd[0]);
	close(pfd[1]);
	munmap(va, 4 * page);
	close(a);
	close(b);
}

static void
test_no_transfers(void **state)
{
	struct rn_client *c;
	struct rn_client_mr *r;
	struct rn_client_batch *bt;
	struct rn_client_remote *rem;
	void *p;

	(void)state;
	fake_xfer_slots = 0;
	fake_start();
	assert_int_equal(rn_client_attach(F.path, "a", &c), 0);
	assert_int_equal(rn_client_alloc(c, 4096, &p), 0);
	assert_int_equal(rn_client_reg(c, p, 4096, 0, &r), -ENOTSUP);
	rem = import_peer(c, 0, NODE_B);
	assert_int_equal(rn_client_transfer(c, RN_CLIENT_WRITE,
		&(struct rn_client_xfer_entry){ p, (uintptr_t)peer_mem[0], 8,
						rem }, 1, NULL, 1, &bt),
		-ENOTSUP);
	assert_int_equal(rn_client_xfer_max(c, 1, 0), 0);
	rn_client_detach(c);
	fake_stop();
	fake_xfer_slots = SLOTS;
}

static void
test_export_publish_fetch(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_mr *r;
	struct rn_client_remote *rem;
	uint8_t desc[RN_CLIENT_DESC_SIZE + 8];
	struct rn_xfer_remote d;
	void *p;

	assert_int_equal(rn_client_alloc(c, 8192, &p), 0);
	assert_int_equal(rn_client_reg(c, p, 8192, RN_CLIENT_REMOTE_READ, &r),
			 0);
	assert_int_equal(rn_client_export(r, desc, RN_CLIENT_DESC_SIZE - 1),
			 -ENOSPC);
	assert_int_equal(rn_client_export(r, desc, sizeof(desc)),
			 RN_CLIENT_DESC_SIZE);
	assert_int_equal(rn_xfer_desc_decode(desc, sizeof(desc), &d), 0);
	assert_string_equal(d.node, "nodea");
	assert_int_equal(d.session_id, SESSION_A);
	assert_int_equal(d.addr, (uintptr_t)p);
	assert_int_equal(d.length, 8192);
	/* Import: a peer's view of it. */
	assert_int_equal(rn_client_import(c, desc, RN_CLIENT_DESC_SIZE, &rem),
			 0);
	assert_string_equal(rn_client_remote_node(rem), "nodea");
	rn_client_forget(c, rem);
	/* Publish: names the daemon checks too. */
	assert_int_equal(rn_client_publish(c, r, "kv/layer.0:k-v_1"), 0);
	assert_string_equal(F.published, "kv/layer.0:k-v_1");
	assert_int_equal(F.published_region, 0);
	assert_int_equal(rn_client_publish(c, r, "taken"), -EEXIST);
	assert_int_equal(rn_client_publish(c, r, "sp ace"), -EINVAL);
	assert_int_equal(rn_client_publish(c, r, "0123456789012345678901234567890123456789012345678901234567890123"),
			 -EINVAL);   /* 64 bytes */
	assert_int_equal(rn_client_publish(c, r, NULL), 0);
	assert_string_equal(F.published, "");
	/* Fetch. */
	memset(desc, 0, sizeof(desc));
	assert_int_equal(rn_client_fetch(c, NODE_B, "kv", 500, desc,
					 sizeof(desc)), RN_CLIENT_DESC_SIZE);
	assert_string_equal(F.fetched.node, NODE_B);
	assert_string_equal(F.fetched.name, "kv");
	assert_int_equal(F.fetched.timeout_ms, 500);
	assert_int_equal(rn_client_import(c, desc, RN_CLIENT_DESC_SIZE, &rem),
			 0);
	assert_string_equal(rn_client_remote_node(rem), NODE_B);
	rn_client_forget(c, rem);
	assert_int_equal(rn_client_fetch(c, NODE_B, "nothing", 500, desc,
					 sizeof(desc)), -ENODATA);
	/* Another node's keys under b's name: refused. */
	assert_int_equal(rn_client_fetch(c, NODE_B, "liar", 500, desc,
					 sizeof(desc)), -EBADMSG);
	assert_int_equal(rn_client_fetch(c, NODE_B, "kv", 500, desc,
					 RN_CLIENT_DESC_SIZE - 1), -ENOSPC);
	assert_int_equal(rn_client_fetch(c, "", "kv", 500, desc,
					 sizeof(desc)), -EINVAL);
	assert_int_equal(rn_client_fetch(c, NODE_B, "a b", 500, desc,
					 sizeof(desc)), -EINVAL);
	assert_int_equal(rn_client_dereg(c, r), 0);
}

static void
test_import_errors(void **state)
{
	struct rn_client *c = *state;
	uint8_t good[RN_CLIENT_DESC_SIZE], bad[RN_CLIENT_DESC_SIZE];
	struct rn_client_remote *rem = NULL;
	const size_t node_off = 8, n_keys_off = 6, len_off = 8 + 32 + 16;

	make_desc(good, NODE_B, 1, 0x1000, 4096);
	assert_int_equal(rn_client_import(c, good, sizeof(good) - 1, &rem),
			 -EBADMSG);
	assert_int_equal(rn_client_import(c, NULL, sizeof(good), &rem),
			 -EBADMSG);
	memcpy(bad, good, sizeof(bad));
	bad[0] ^= 1;                             /* magic */
	assert_int_equal(rn_client_import(c, bad, sizeof(bad), &rem), -EBADMSG);
	memcpy(bad, good, sizeof(bad));
	bad[4] = 2;                              /* version */
	assert_int_equal(rn_client_import(c, bad, sizeof(bad), &rem), -EBADMSG);
	memcpy(bad, good, sizeof(bad));
	bad[n_keys_off] = 0;                     /* no key */
	assert_int_equal(rn_client_import(c, bad, sizeof(bad), &rem), -EBADMSG);
	memcpy(bad, good, sizeof(bad));
	bad[n_keys_off] = RN_XFER_MAX_KEYS + 1;  /* too many */
	assert_int_equal(rn_client_import(c, bad, sizeof(bad), &rem), -EBADMSG);
	memcpy(bad, good, sizeof(bad));
	memset(bad + node_off, 'x', 32);         /* node without its NUL */
	assert_int_equal(rn_client_import(c, bad, sizeof(bad), &rem), -EBADMSG);
	memcpy(bad, good, sizeof(bad));
	memset(bad + len_off, 0xff, 8);          /* a range that wraps */
	assert_int_equal(rn_client_import(c, bad, sizeof(bad), &rem), -EBADMSG);
	assert_null(rem);
	assert_int_equal(rn_client_import(c, good, sizeof(good), &rem), 0);
	rn_client_forget(c, rem);
}

/* The request in the slot, field by field: header, descriptors once each,
 * triples with their descriptor's index, the notification; the XFER entry
 * names the slot; then the played lcore runs it and the bytes land. */
static void
test_transfer_writes_the_slot(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_mr *r;
	uint8_t *loc = local_mem(c, 8192, &r);
	struct rn_client_remote *r0 = import_peer(c, 0, NODE_B);
	struct rn_client_remote *r1 = import_peer(c, 1, NODE_B);
	/* The same region imported twice: one descriptor in the slot. */
	struct rn_client_remote *r0b = import_peer(c, 0, NODE_B);
	struct rn_client_xfer_entry e[4] = {
		{ loc, (uintptr_t)peer_mem[0], 100, r0 },
		{ loc + 100, (uintptr_t)peer_mem[1] + 8, 200, r1 },
		{ loc + 300, (uintptr_t)peer_mem[0] + 4096, 4096, r0b },
		{ loc + 5000, (uintptr_t)peer_mem[1] + 9000, 1, r1 } };
	struct rn_client_xfer_notify note = { .agent = "agent-B",
		.name = "done", .name_len = 4, .msg = "layer 3", .msg_len = 7 };
	struct rn_client_completion comp[4];
	struct rn_client_batch *b;
	struct played p;
	uint64_t bytes;
	int ns;

	for (unsigned int i = 0; i < 8192; i++)
		loc[i] = (uint8_t)(i * 7 + 1);
	memset(peer_mem, 0, sizeof(peer_mem));
	F.page->lcore[1].sleeping = 1;
	assert_int_equal(rn_client_transfer(c, RN_CLIENT_WRITE, e, 4, &note,
					    0xc0ffee, &b), 0);
	assert_int_equal(eventfd_take(F.wake[1]), 1);   /* woken */
	assert_int_equal(rn_client_batch_status(b, NULL, NULL), -EINPROGRESS);
	assert_false(xfer_take(0, &p));   /* lcore 1 owns node b */
	assert_true(xfer_take(1, &p));
	assert_int_equal(p.e.ep_index, EP_B);
	assert_int_equal(p.e.cookie, 0xc0ffee);
	assert_int_equal(p.req.ep_tag, TAG_B);
	assert_int_equal(p.req.kind, RN_CLIENT_WRITE);
	assert_int_equal(p.req.n_remotes, 2);
	assert_int_equal(p.req.n_entries, 4);
	assert_int_equal(p.cancel, 0);
	assert_int_equal(p.rem[0].addr, (uintptr_t)peer_mem[0]);
	assert_int_equal(p.rem[1].addr, (uintptr_t)peer_mem[1]);
	for (unsigned int i = 0; i < 4; i++) {
		assert_int_equal(p.t[i].local, (uintptr_t)e[i].local);
		assert_int_equal(p.t[i].remote, e[i].remote);
		assert_int_equal(p.t[i].length, e[i].length);
	}
	assert_int_equal(p.t[0].remote_index, 0);
	assert_int_equal(p.t[1].remote_index, 1);
	assert_int_equal(p.t[2].remote_index, 0);
	assert_int_equal(p.t[3].remote_index, 1);
	assert_string_equal(p.agent, "agent-B");
	assert_int_equal(p.req.note_name_len, 4);
	assert_memory_equal(p.name, "done", 4);
	assert_int_equal(p.req.note_msg_len, 7);
	assert_memory_equal(p.msg, "layer 3", 7);
	/* The lcore's RDMA, played: the bytes land. */
	bytes = xfer_run(&p);
	assert_int_equal(bytes, 100 + 200 + 4096 + 1);
	assert_memory_equal(peer_mem[0], loc, 100);
	assert_memory_equal(peer_mem[1] + 8, loc + 100, 200);
	assert_memory_equal(peer_mem[0] + 4096, loc + 300, 4096);
	assert_int_equal(peer_mem[1][9000], loc[5000]);
	assert_int_equal(peer_mem[0][100], 0);
	assert_int_equal(rn_client_batch_release(c, b), -EBUSY);
	assert_true(xfer_final(1, p.e.slot, p.e.cookie, 0, bytes, 0, true));
	assert_int_equal(rn_client_batch_status(b, &bytes, &ns), 0);
	assert_int_equal(bytes, 4397);
	assert_int_equal(ns, 0);
	assert_int_equal(comps_take(c, comp, 4), 1);
	assert_int_equal(comp[0].cookie, 0xc0ffee);
	assert_int_equal(comp[0].status, 0);
	assert_int_equal(comp[0].kind, RN_CLIENT_WRITE);
	assert_int_equal(comps_take(c, comp, 4), 0);   /* once */
	assert_int_equal(rn_client_batch_release(c, b), 0);
	rn_client_forget(c, r0);
	rn_client_forget(c, r1);
	rn_client_forget(c, r0b);
	assert_int_equal(rn_client_dereg(c, r), 0);
}

static void
test_transfer_read_lands(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_mr *r;
	uint8_t *loc = local_mem(c, 4096, &r);
	struct rn_client_remote *rem = import_peer(c, 0, NODE_B);
	struct rn_client_completion comp[2];
	struct rn_client_batch *b;
	struct played p;
	int ns = 1;

	for (unsigned int i = 0; i < 4096; i++)
		peer_mem[0][i] = (uint8_t)(i ^ 0x5c);
	assert_int_equal(rn_client_transfer(c, RN_CLIENT_READ,
		&(struct rn_client_xfer_entry){ loc, (uintptr_t)peer_mem[0],
						4096, rem }, 1, NULL, 9, &b),
		0);
	assert_true(xfer_take(1, &p));
	assert_int_equal(p.req.kind, RN_CLIENT_READ);
	assert_int_equal(p.req.note_agent_len, 0);
	assert_int_equal(p.req.note_name_len + p.req.note_msg_len, 0);
	xfer_final(1, p.e.slot, p.e.cookie, 0, xfer_run(&p), -ENOTCONN, true);
	assert_int_equal(rn_client_batch_wait(c, b, 1000), 0);
	assert_int_equal(rn_client_batch_status(b, NULL, &ns), 0);
	assert_int_equal(ns, -ENOTCONN);
	assert_memory_equal(loc, peer_mem[0], 4096);
	assert_int_equal(comps_take(c, comp, 2), 1);
	assert_int_equal(comp[0].kind, RN_CLIENT_READ);
	assert_int_equal(comp[0].cookie, 9);
	assert_int_equal(rn_client_batch_release(c, b), 0);
	assert_int_equal(rn_client_dereg(c, r), 0);
}

static void
test_transfer_errors(void **state)
{
	struct rn_client *c = *state;
	struct rn_client_mr *r;
	uint8_t *loc = local_mem(c, 4096, &r);
	struct rn_client_remote *rb = import_peer(c, 0, NODE_B);
	struct rn_client_remote *rc_ = import_peer(c, 1, "nodec");
	struct rn_client_remote *rem[RN_CLIENT_XFER_MAX_REMOTES + 1];
	struct rn_client_xfer_entry e[128];
	struct rn_client_xfer_notify note = { .agent = "b", .name = "n",
					      .name_len = 1 };
	char agent[RN_CLIENT_AGENT_MAX + 2];
	uint8_t big[BUF];
	struct rn_client_batch *b;
	unsigned int max;

	for (unsigned int i = 0; i < 128; i++)
		e[i] = (struct rn_client_xfer_entry){ loc + i, (uintptr_t)
			peer_mem[0] + i, 1, rb };
#define XF(kind, n, nt) rn_client_transfer(c, kind, e, n, nt, 1, &b)
	assert_int_equal(XF(RN_CLIENT_WRITE, 0, NULL), -EINVAL);
	assert_int_equal(XF(3, 1, NULL), -EINVAL);
	assert_int_equal(rn_client_transfer(c, RN_CLIENT_WRITE, e, 1, NULL, 1,
					    NULL), -EINVAL);
	e[1].length = 0;
	assert_int_equal(XF(RN_CLIENT_WRITE, 2, NULL), -EINVAL);
	e[1].length = 1;
	e[1].rem = NULL;
	assert_int_equal(XF(RN_CLIENT_WRITE, 2, NULL), -EINVAL);
	e[1].rem = rc_;   /* two nodes */
	assert_int_equal(XF(RN_CLIENT_WRITE, 2, NULL), -EINVAL);
	e[1].rem = rb;
	e[1].remote = UINT64_MAX;   /* wraps */
	assert_int_equal(XF(RN_CLIENT_WRITE, 2, NULL), -EINVAL);
	e[1].remote = (uintptr_t)peer_mem[0] + 1;
	/* Nine regions of one node: one too many. */
	for (unsigned int i = 0; i <= RN_CLIENT_XFER_MAX_REMOTES; i++) {
		uint8_t d[RN_CLIENT_DESC_SIZE];

		make_desc(d, NODE_B, 1, 0x10000 * (i + 1), 4096);
		assert_int_equal(rn_client_import(c, d, sizeof(d), &rem[i]), 0);
		e[i].rem = rem[i];
	}
	assert_int_equal(XF(RN_CLIENT_WRITE, RN_CLIENT_XFER_MAX_REMOTES + 1,
			    NULL), -EINVAL);
	for (unsigned int i = 0; i <= RN_CLIENT_XFER_MAX_REMOTES; i++) {
		e[i].rem = rb;
		rn_client_forget(c, rem[i]);
	}
	/* Notifications: the agent's bounds, and the buffer's. */
	memset(agent, 'a', sizeof(agent) - 1);
	agent[sizeof(agent) - 1] = '\0';
	note.agent = agent;
	assert_int_equal(XF(RN_CLIENT_WRITE, 1, &note), -EINVAL);
	note.agent = "";
	assert_int_equal(XF(RN_CLIENT_WRITE, 1, &note), -EINVAL);
	note.agent = "b";
	note.name = NULL;
	assert_int_equal(XF(RN_CLIENT_WRITE, 1, &note), -EINVAL);
	memset(big, 'm', sizeof(big));
	note.name = big;
	note.name_len = BUF - (uint32_t)sizeof(struct rn_client_send_hdr);
	assert_int_equal(XF(RN_CLIENT_WRITE, 1, &note), -EMSGSIZE);
	note.name_len--;   /* agent 1 + name: exactly a buffer */
	max = rn_client_xfer_max(c, 1, 1 + note.name_len);
	assert_int_equal(max, (SLOT_SIZE - BODY_OFF - RN_CLIENT_DESC_SIZE -
			       1 - note.name_len) / 32);
	assert_int_equal(XF(RN_CLIENT_WRITE, max + 1, &note), -E2BIG);
	assert_int_equal(XF(RN_CLIENT_WRITE, max, &note), 0);
	assert_int_equal(rn_client_xfer_max(c, 1, 0),
			 (SLOT_SIZE - BODY_OFF - RN_CLIENT_DESC_SIZE) / 32);
	assert_int_equal(rn_client_xfer_max(c, 8, 0),
			 (SLOT_SIZE - BODY_OFF - 8 * RN_CLIENT_DESC_SIZE) / 32);
	assert_int_equal(rn_client_xfer_max(c, 0, 0), 0);
	assert_int_equal(rn_client_xfer_max(c, 9, 0), 0);
	assert_int_equal(rn_client_xfer_max(c, 1, SLOT_SIZE), 0);
	/* The endpoint's state, as for a send. */
	{
		static const struct { const char *node; int rc; } st[] = {
			{ "conn", -EAGAIN }, { "down", -ENOTCONN },
			{ "tcponly", -ENOTSUP }, { "nosuch", -ENOENT } };

		for (unsigned int i = 0; i < 4; i++) {
			struct rn_client_remote *x = import_peer(c, 0,
								 st[i].node);

			e[0].rem = x;
			assert_int_equal(XF(RN_CLIENT_WRITE, 1, NULL),
					 st[i].rc);
			rn_client_forget(c, x);
		}
	}
#undef XF
	/* Nothing of those reached lcore 0; only the one that went to 1. */
	{
		struct played p;

		assert_false(xfer_take(0, &p));
		assert_true(xfer_take(1, &p));
		assert_int_equal(p.req.n_entries, max);
		assert_false(xfer_take(1, &p));
	}
	rn_client_forget(c, rb);
	rn_client_forget(c, rc_);
}

/* All of an lcore's slots in flight: -EAGAIN, the other lcore's slots
 * still free; release only once final; a slot freed is used again. */
static void
test_slots_run_out_and_come_back(void **state)
{
	struct rn_client *c = *state;
	struct xfer_fixture x;
	struct rn_client_batch *b[SLOTS + 1];
	struct rn_client_completion comp[SLOTS + 1];
	struct played p[SLOTS];
	bool used[SLOTS] = { false };

	xfer_fixture_make(c, 64, &x);
	for (unsigned int i = 0; i < SLOTS; i++)
		assert_int_equal(xfer_write(c, &x, i, &b[i]), 0);
	assert_int_equal(xfer_write(c, &x, 99, &b[SLOTS]), -EAGAIN);
	for (unsigned int i = 0; i < SLOTS; i++) {
		assert_true(xfer_take(1, &p[i]));
		assert_false(used[p[i].e.slot]);   /* each its own slot */
		used[p[i].e.slot] = true;
	}
	/* Still no slot while they are in flight; nor after a release that
	 * is refused. */
	assert_int_equal(rn_client_batch_release(c, b[2]), -EBUSY);
	assert_int_equal(xfer_write(c, &x, 99, &b[SLOTS]), -EAGAIN);
	xfer_final(1, p[2].e.slot, 2, -EACCES, 0, 0, true);
	assert_int_equal(rn_client_batch_status(b[2], NULL, NULL), -EACCES);
	assert_int_equal(rn_client_batch_release(c, b[2]), 0);
	assert_int_equal(rn_client_batch_release(c, b[2]), -EINVAL);
	xfer_write_taken(c, &x, 99, &b[SLOTS], &p[2]);
	assert_int_equal(p[2].e.cookie, 99);
	assert_int_equal(p[2].cancel, 0);
	b[2] = b[SLOTS];
	/* The first batch's report, once: released before it was taken. */
	assert_int_equal(comps_take(c, comp, SLOTS + 1), 1);
	assert_int_equal(comp[0].cookie, 2);
	assert_int_equal(comp[0].status, -EACCES);
	for (unsigned int i = 0; i < SLOTS; i++)
		xfer_final(1, p[i].e.slot, p[i].e.cookie, 0, 64, 0, true);
	assert_int_equal(comps_take(c, comp, SLOTS + 1), SLOTS);
	for (unsigned int i = 0; i < SLOTS; i++)
		assert_int_equal(rn_client_batch_release(c, b[i]), 0);
	rn_client_forget(c, x.rem);
}

static void
test_cancel_sets_the_word(void **state)
{
	struct rn_client *c = *state;
	struct xfer_fixture x;
	struct rn_client_batch *b;
	struct played p;
	uint64_t bytes = 1;

	xfer_fixture_make(c, 64, &x);
	assert_int_equal(rn_client_transfer(c, RN_CLIENT_READ, &x.e, 1, NULL, 5,
					    &b), 0);
	assert_true(xfer_take(1, &p));
	assert_int_equal(slot_of(1, p.e.slot)->cancel, 0);
	rn_client_batch_cancel(b);
	assert_int_equal(slot_of(1, p.e.slot)->cancel, 1);
	assert_int_equal(rn_client_batch_status(b, NULL, NULL), -EINPROGRESS);
	xfer_final(1, p.e.slot, 5, -ECANCELED, 0, 0, true);
	assert_int_equal(rn_client_batch_status(b, &bytes, NULL), -ECANCELED);
	assert_int_equal(bytes, 0);
	/* Cancelling a final batch changes nothing. */
	rn_client_batch_cancel(b);
	assert_int_equal(rn_client_batch_status(b, NULL, NULL), -ECANCELED);
	assert_int_equal(rn_client_batch_release(c, b), 0);
	rn_client_forget(c, x.rem);
}

/* A full deliver ring drops XFER_DONE: the final status is reported all
 * the same (the slots are looked at), and the fd says so. */
static void
test_done_dropped_still_reported(void **state)
{
	struct rn_client *c = *state;
	struct xfer_fixture x;
	struct rn_client_notification got[RN_CLIENT_POLL_MAX];
	struct rn_client_completion comp[4];
	struct rn_client_batch *b;
	struct played p;

	xfer_fixture_make(c, 64, &x);
	xfer_write_taken(c, &x, 0xd0, &b, &p);
	assert_int_equal(comps_take(c, comp, 4), 0);
	assert_false(readable(rn_client_fd(c), 0));
	assert_int_equal(deliver_ring_fill(1), RING - 1);
	assert_false(xfer_final(1, p.e.slot, 0xd0, -EPIPE, 32, 0, true));
	assert_true(readable(rn_client_fd(c), 0));
	assert_int_equal(comps_take(c, comp, 4), 1);
	assert_int_equal(comp[0].cookie, 0xd0);
	assert_int_equal(comp[0].status, -EPIPE);
	assert_int_equal(comp[0].kind, RN_CLIENT_WRITE);
	assert_int_equal(rn_client_poll(c, got, RN_CLIENT_POLL_MAX),
			 (int)RING - 1);
	assert_int_equal(rn_client_poll(c, got, RN_CLIENT_POLL_MAX), 0);
	assert_int_equal(comps_take(c, comp, 4), 0);
	assert_false(readable(rn_client_fd(c), 0));
	/* Without XFER_DONE and without any entry: still seen. */
	assert_int_equal(rn_client_batch_release(c, b), 0);
	xfer_write_taken(c, &x, 0xd1, &b, &p);
	xfer_final(1, p.e.slot, 0xd1, 0, 64, 0, false);
	assert_true(readable(rn_client_fd(c), 0));
	assert_int_equal(rn_client_wait(c, 0), 1);
	assert_int_equal(comps_take(c, comp, 4), 1);
	assert_int_equal(comp[0].cookie, 0xd1);
	assert_int_equal(rn_client_batch_release(c, b), 0);
	rn_client_forget(c, x.rem);
}

/* A slot reused while its last XFER_DONE is still in the ring: that
 * entry reports nothing of the new batch, each batch is reported once. */
static void
test_stale_done_after_reuse(void **state)
{
	struct rn_client *c = *state;
	struct xfer_fixture x;
	struct rn_client_completion comp[4];
	struct rn_client_batch *b1, *b2;
	struct played p1, p2;

	xfer_fixture_make(c, 64, &x);
	xfer_write_taken(c, &x, 7, &b1, &p1);
	assert_true(xfer_final(1, p1.e.slot, 7, 0, 64, 0, true));
	/* Seen by status, released, the slot taken again: the XFER_DONE
	 * is still in the ring, not taken. */
	assert_int_equal(rn_client_batch_status(b1, NULL, NULL), 0);
	assert_int_equal(rn_client_batch_release(c, b1), 0);
	xfer_write_taken(c, &x, 7, &b2, &p2);
	assert_int_equal(p2.e.slot, p1.e.slot);
	assert_int_equal(comps_take(c, comp, 4), 1);   /* the first only */
	assert_int_equal(comp[0].status, 0);
	assert_int_equal(comps_take(c, comp, 4), 0);
	assert_int_equal(rn_client_batch_status(b2, NULL, NULL), -EINPROGRESS);
	xfer_final(1, p2.e.slot, 7, -EACCES, 0, 0, true);
	assert_int_equal(comps_take(c, comp, 4), 1);
	assert_int_equal(comp[0].status, -EACCES);
	assert_int_equal(comps_take(c, comp, 4), 0);
	assert_int_equal(rn_client_batch_release(c, b2), 0);
	rn_client_forget(c, x.rem);
}

/* An lcore that cannot reach the slot refuses with XFER_DONE alone: that
 * status is the batch's, once no older XFER_DONE of the slot is due. */
static void
test_done_without_slot_result(void **state)
{
	struct rn_client *c = *state;
	struct xfer_fixture x;
	struct rn_client_completion comp[4];
	struct rn_client_batch *b;
	struct played p;
	uint64_t bytes = 1;

	xfer_fixture_make(c, 64, &x);
	xfer_write_taken(c, &x, 0xe1, &b, &p);
	assert_int_equal(xfer_done_put(1, p.e.slot, 0xe1, -ENOMEM), 0);
	assert_true(slot_of(1, p.e.slot)->status == RN_CLIENT_XFER_PENDING);
	assert_int_equal(comps_take(c, comp, 4), 1);
	assert_int_equal(comp[0].cookie, 0xe1);
	assert_int_equal(comp[0].status, -ENOMEM);
	assert_int_equal(rn_client_batch_status(b, &bytes, NULL), -ENOMEM);
	assert_int_equal(bytes, 0);
	assert_int_equal(rn_client_batch_release(c, b), 0);
	/* The slot again, and its XFER_DONE dropped by a full ring: one
	 * stays due for good, so on this slot an entry alone is never taken
	 * as final (it could be an older batch's): the slot says. */
	xfer_write_taken(c, &x, 0xe2, &b, &p);
	deliver_ring_fill(1);
	assert_false(xfer_final(1, p.e.slot, 0xe2, 0, 64, 0, true));
	assert_int_equal(comps_take(c, comp, 4), 1);
	assert_int_equal(comp[0].status, 0);
	assert_int_equal(rn_client_batch_release(c, b), 0);
	{
		struct rn_client_notification got[RN_CLIENT_POLL_MAX];

		assert_int_equal(rn_client_poll(c, got, RN_CLIENT_POLL_MAX),
				 (int)RING - 1);
		/* Their buffers back. */
		assert_int_equal(rn_client_poll(c, got, RN_CLIENT_POLL_MAX),
				 0);
	}
	xfer_write_taken(c, &x, 0xe3, &b, &p);
	assert_int_equal(xfer_done_put(1, p.e.slot, 0xe3, -ENOMEM), 0);
	assert_int_equal(comps_take(c, comp, 4), 0);
	assert_int_equal(rn_client_batch_status(b, NULL, NULL), -EINPROGRESS);
	xfer_final(1, p.e.slot, 0xe3, -EACCES, 0, 0, false);
	assert_int_equal(comps_take(c, comp, 4), 1);
	assert_int_equal(comp[0].status, -EACCES);
	assert_int_equal(rn_client_batch_release(c, b), 0);
	rn_client_forget(c, x.rem);
}

/* Random interleavings of submissions, the lcore's takes and final
 * statuses (XFER_DONE sent, dropped by a full ring, or not sent),
 * deliveries, polls, releases and completions: every batch is reported
 * once, with its status, and only after it was final; releases are
 * -EBUSY exactly while a batch is not final; every slot comes back. */
static void
test_batches_random_mix(void **state)
{
	struct rn_client *c = *state;
	unsigned int seed = rn_test_seed("batches_random_mix", 18);
	struct xfer_fixture x;
	enum { N = 4000 };
	static int final_of[N];           /* 1: not final yet */
	static bool reported[N];
	struct { struct rn_client_batch *b; uint64_t cookie; } held[SLOTS];
	struct played taken[SLOTS];
	unsigned int n_held = 0, n_taken = 0;
	uint64_t next = 0, n_reports = 0, drops = 0;
	struct rn_client_completion comp[8];
	struct rn_client_notification got[RN_CLIENT_POLL_MAX];

	xfer_fixture_make(c, 8, &x);
	srandom(seed);
	memset(reported, 0, sizeof(reported));
	for (unsigned int round = 0; round < 20000 && next < N; round++) {
		int what = (int)(random() % 8), n;

		if (what == 0 && n_held < SLOTS) {
			int rc = xfer_write(c, &x, next, &held[n_held].b);

			if (rc == -EAGAIN)
				continue;   /* the submit ring is full */
			assert_int_equal(rc, 0);
			held[n_held++].cookie = next;
			final_of[next++] = 1;
		} else if (what == 1 && n_taken < SLOTS) {
			if (xfer_take(1, &taken[n_taken]))
				n_taken++;
		} else if (what == 2 && n_taken != 0) {
			unsigned int k = (unsigned int)random() % n_taken;
			int st = random() % 3 == 0 ? -EPIPE : 0;
			bool done = random() % 4 != 0;

			final_of[taken[k].e.cookie] = st;
			if (done && !xfer_final(1, taken[k].e.slot,
						taken[k].e.cookie, st, 8, 0,
						true))
				drops++;
			else if (!done)
				xfer_final(1, taken[k].e.slot,
					   taken[k].e.cookie, st, 8, 0, false);
			taken[k] = taken[--n_taken];
		} else if (what == 3) {
			n = comps_take(c, comp, 1 + (unsigned int)random() % 8);
			for (int i = 0; i < n; i++) {
				uint64_t k = comp[i].cookie;

				assert_true(k < next);
				assert_false(reported[k]);
				assert_int_not_equal(final_of[k], 1);
				assert_int_equal(comp[i].status, final_of[k]);
				assert_int_equal(comp[i].kind, RN_CLIENT_WRITE);
				reported[k] = true;
				n_reports++;
			}
		} else if (what == 4 && n_held != 0) {
			unsigned int k = (unsigned int)random() % n_held;
			int rc = rn_client_batch_release(c, held[k].b);

			assert_int_equal(rc, final_of[held[k].cookie] == 1 ?
					 -EBUSY : 0);
			if (rc == 0)
				held[k] = held[--n_held];
		} else if (what == 5) {
			n = rn_client_poll(c, got, RN_CLIENT_POLL_MAX);
			assert_true(n >= 0);
		} else if (what == 6) {
			deliver(1, "nodeb", "B", "fill", "x");
		} else if (what == 7 && n_held != 0) {
			unsigned int k = (unsigned int)random() % n_held;
			int st = rn_client_batch_status(held[k].b, NULL, NULL);

			assert_int_equal(st, final_of[held[k].cookie] == 1 ?
					 -EINPROGRESS : final_of[held[k].cookie]);
		}
	}
	/* The rest: every batch taken and final, every report taken. */
	while (n_taken != 0 || xfer_take(1, &taken[0])) {
		if (n_taken == 0)
			n_taken = 1;
		final_of[taken[n_taken - 1].e.cookie] = 0;
		xfer_final(1, taken[n_taken - 1].e.slot,
			   taken[n_taken - 1].e.cookie, 0, 8, 0, false);
		n_taken--;
	}
	for (unsigned int i = 0; i < n_held; i++)
		assert_int_equal(rn_client_batch_release(c, held[i].b), 0);
	for (int i = 0; i < 100 && n_reports < next; i++) {
		int n = comps_take(c, comp, 8);

		for (int j = 0; j < n; j++) {
			assert_false(reported[comp[j].cookie]);
			assert_int_equal(comp[j].status,
					 final_of[comp[j].cookie]);
			reported[comp[j].cookie] = true;
			n_reports++;
		}
		rn_client_poll(c, got, RN_CLIENT_POLL_MAX);
	}
	assert_int_equal(n_reports, next);
	/* Every slot free again. */
	for (unsigned int i = 0; i < SLOTS; i++) {
		assert_int_equal(xfer_write(c, &x, i, &held[i].b), 0);
		while (rn_client_poll(c, got, RN_CLIENT_POLL_MAX) > 0)
			;
		assert_true(xfer_take(1, &taken[0]));
	}
	printf("# batches_random_mix: %llu batches, %llu XFER_DONE dropped\n",
	       (unsigned long long)next, (unsigned long long)drops);
	rn_client_forget(c, x.rem);
}

struct later {
	uint32_t slot;
	uint64_t cookie;
	int status;
	bool done;
};

static void *
final_later(void *arg)
{
	const struct later *l = arg;

	usleep(50000);
	xfer_final(1, l->slot, l->cookie, l->status, 0, 0, l->done);
	return NULL;
}

static void
test_batch_wait(void **state)
{
	struct rn_client *c = *state;
	struct xfer_fixture x;
	struct rn_client_notification got[4];
	struct rn_client_batch *b;
	struct later l = { .cookie = 3, .status = -ENOTCONN, .done = true };
	struct played p;
	pthread_t t;

	xfer_fixture_make(c, 64, &x);
	xfer_write_taken(c, &x, 3, &b, &p);
	assert_int_equal(rn_client_batch_wait(c, b, 0), -ETIMEDOUT);
	assert_int_equal(rn_client_batch_wait(c, b, 20), -ETIMEDOUT);
	/* Blocks, woken by the final status. */
	l.slot = p.e.slot;
	assert_int_equal(pthread_create(&t, NULL, final_later, &l), 0);
	assert_int_equal(rn_client_batch_wait(c, b, 5000), -ENOTCONN);
	pthread_join(t, NULL);
	assert_int_equal(rn_client_batch_release(c, b), 0);
	/* A delivery not taken does not end the wait, and the fd stays
	 * readable for it afterwards. */
	assert_int_equal(deliver(0, "nodeb", "B", "k", "v"), 0);
	xfer_write_taken(c, &x, 4, &b, &p);
	assert_int_equal(rn_client_batch_wait(c, b, 30), -ETIMEDOUT);
	l = (struct later){ .slot = p.e.slot, .cookie = 4, .status = 0,
			    .done = false };
	assert_int_equal(pthread_create(&t, NULL, final_later, &l), 0);
	assert_int_equal(rn_client_batch_wait(c, b, -1), 0);
	pthread_join(t, NULL);
	assert_true(readable(rn_client_fd(c), 0));
	assert_int_equal(rn_client_poll(c, got, 4), 1);
	assert_int_equal(rn_client_batch_release(c, b), 0);
	rn_client_forget(c, x.rem);
}

/* Every sched_yield() of the process, the library's included (this
 * definition comes first in the lookup), counted; then the real one. */
static unsigned long yields;

int
sched_yield(void)
{
	__atomic_fetch_add(&yields, 1, __ATOMIC_RELAXED);
	return (int)syscall(SYS_sched_yield);
}

/* As setup(), with a spin of 100 ms: longer than the waits below. */
static int
setup_long_spin(void **state)
{
	int rc;

	setenv("RNOTIFY_SPIN_US", "100000", 1);
	rc = setup(state);
	unsetenv("RNOTIFY_SPIN_US");
	return rc;
}

/*
 * The spin of every wait gives the CPU away between its looks: on two
 * cores a spin that kept it would starve the daemon it waits for. Both
 * rn_client_wait() and rn_client_batch_wait(), timing out inside their
 * spin, have called sched_yield(); a batch made final during the spin
 * ends it with its status.
 */
static void
test_waits_yield_while_they_spin(void **state)
{
	struct rn_client *c = *state;
	struct xfer_fixture x;
	struct rn_client_batch *b;
	struct later l = { .cookie = 5, .status = 0, .done = true };
	struct played p;
	unsigned long before;
	pthread_t t;

	xfer_fixture_make(c, 64, &x);
	before = __atomic_load_n(&yields, __ATOMIC_RELAXED);
	assert_int_equal(rn_client_wait(c, 20), 0);
	if (__atomic_load_n(&yields, __ATOMIC_RELAXED) == before)
		fail_msg("rn_client_wait() spun 20 ms without a yield");
	xfer_write_taken(c, &x, 5, &b, &p);
	before = __atomic_load_n(&yields, __ATOMIC_RELAXED);
	assert_int_equal(rn_client_batch_wait(c, b, 20), -ETIMEDOUT);
	if (__atomic_load_n(&yields, __ATOMIC_RELAXED) == before)
		fail_msg("rn_client_batch_wait() spun 20 ms without a yield");
	l.slot = p.e.slot;
	assert_int_equal(pthread_create(&t, NULL, final_later, &l), 0);
	assert_int_equal(rn_client_batch_wait(c, b, 5000), 0);
	pthread_join(t, NULL);
	assert_int_equal(rn_client_batch_release(c, b), 0);
	rn_client_forget(c, x.rem);
}

/* The submit ring full of sends: -EAGAIN, and no slot is lost. */
static void
test_submit_ring_full(void **state)
{
	struct rn_client *c = *state;
	struct xfer_fixture x;
	struct rn_client_batch *b[SLOTS];
	struct rn_client_entry se;
	uint8_t buf[BUF];

	xfer_fixture_make(c, 64, &x);
	for (unsigned int i = 0; i < RING - 1; i++)
		assert_int_equal(rn_client_send(c, NODE_B, "b", "n", 1, "", 0,
						i, 0), 0);
	assert_int_equal(xfer_write(c, &x, 1, &b[0]), -EAGAIN);
	while (lcore_take(1, &se, buf))
		;
	for (unsigned int i = 0; i < SLOTS; i++)
		assert_int_equal(xfer_write(c, &x, i, &b[i]), 0);
	rn_client_forget(c, x.rem);
}

static void
test_daemon_gone_with_batches(void **state)
{
	struct rn_client *c = *state;
	struct xfer_fixture x;
	struct rn_client_batch *b, *b2;
	uint8_t desc[RN_CLIENT_DESC_SIZE];
	void *p;

	xfer_fixture_make(c, 64, &x);
	assert_int_equal(xfer_write(c, &x, 1, &b), 0);
	shutdown(F.conn, SHUT_RDWR);
	assert_int_equal(rn_client_batch_wait(c, b, 1000), -ENOTCONN);
	assert_int_equal(rn_client_batch_status(b, NULL, NULL), -ENOTCONN);
	assert_int_equal(xfer_write(c, &x, 2, &b2), -ENOTCONN);
	assert_int_equal(rn_client_batch_release(c, b), 0);
	assert_int_equal(rn_client_reg(c, x.loc, 4096, 0, &x.mr), -ENOTCONN);
	assert_int_equal(rn_client_fetch(c, NODE_B, "kv", 10, desc,
					 sizeof(desc)), -ENOTCONN);
	assert_int_equal(rn_client_publish(c, x.mr, "kv"), -ENOTCONN);
	/* Freed all the same; memory and descriptors stay usable. */
	assert_int_equal(rn_client_dereg(c, x.mr), -ENOTCONN);
	assert_int_equal(rn_client_free(c, x.loc), 0);
	assert_int_equal(rn_client_alloc(c, 4096, &p), 0);
	assert_string_equal(rn_client_remote_node(x.rem), NODE_B);
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
		cmocka_unit_test(test_no_transfers),
		T(test_alloc_and_free),
		T(test_reg_passes_the_memory),
		T(test_reg_fd_pieces),
		T(test_export_publish_fetch),
		T(test_import_errors),
		T(test_transfer_writes_the_slot),
		T(test_transfer_read_lands),
		T(test_transfer_errors),
		T(test_slots_run_out_and_come_back),
		T(test_cancel_sets_the_word),
		T(test_done_dropped_still_reported),
		T(test_stale_done_after_reuse),
		T(test_done_without_slot_result),
		T(test_batches_random_mix),
		T(test_batch_wait),
		cmocka_unit_test_setup_teardown(
			test_waits_yield_while_they_spin, setup_long_spin,
			teardown),
		T(test_submit_ring_full),
		T(test_daemon_gone_with_batches),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
