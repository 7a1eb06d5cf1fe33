/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Attach and detach: the socket, the ATTACH exchange with its descriptors,
 * the two mappings (the region shared read-write, the status page
 * read-only) and the epoll descriptor that rn_client_fd() gives out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "client_pvt.h"
#include "rn_client_region.h"

/* Descriptors an ATTACH reply carries: region, status page, eventfd, then
 * one per lcore. */
#define ATTACH_FDS_FIXED 3u
#define ATTACH_FDS_MAX (ATTACH_FDS_FIXED + RN_CLIENT_MAX_LCORES)

struct attach_reply {
	int fds[ATTACH_FDS_MAX];
	unsigned int n_fds;
	struct rn_client_attached info;
};

static void
close_fds(int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static int
connect_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, rc;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		rc = -errno;
		close(fd);
		/* A socket file left by a stopped daemon: nothing listens. */
		return rc;
	}
	return fd;
}

/* The descriptors of msg, into r (closing any beyond what fits). */
static void
take_fds(struct msghdr *msg, struct attach_reply *r)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm != NULL;
	     cm = CMSG_NXTHDR(msg, cm)) {
		unsigned int n;
		int *fds;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (unsigned int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		fds = (int *)CMSG_DATA(cm);
		for (unsigned int i = 0; i < n; i++) {
			if (r->n_fds < ATTACH_FDS_MAX)
				r->fds[r->n_fds++] = fds[i];
			else
				close(fds[i]);
		}
	}
}

/* ATTACH as agent on sock; 0 and the reply in r, or -errno. */
static int
exchange_attach(int sock, const char *agent, size_t agent_len,
		struct attach_reply *r)
{
	uint8_t req[sizeof(struct rn_client_msg_hdr) + RN_CLIENT_AGENT_MAX];
	uint8_t rep[RN_CLIENT_MSG_MAX];
	union {
		char buf[CMSG_SPACE(sizeof(int) * ATTACH_FDS_MAX)];
		struct cmsghdr align;
	} ctl;
	struct rn_client_msg_hdr hdr = {
		.type = RN_CLIENT_MSG_ATTACH, .version = RN_CLIENT_PROTO_VERSION,
		.len = (uint32_t)agent_len };
	struct iovec iov = { .iov_base = rep, .iov_len = sizeof(rep) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;

	memcpy(req, &hdr, sizeof(hdr));
	memcpy(req + sizeof(hdr), agent, agent_len);
	if (send(sock, req, sizeof(hdr) + agent_len, MSG_NOSIGNAL) < 0)
		return errno == EPIPE || errno == ECONNRESET ? -ECONNREFUSED :
		       -errno;
	do {
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET ? -ECONNREFUSED : -errno;
	if (n == 0)
		return -ECONNREFUSED;   /* closed before answering */
	take_fds(&msg, r);
	memcpy(&hdr, rep, (size_t)n < sizeof(hdr) ? (size_t)n : sizeof(hdr));
	if ((size_t)n < sizeof(hdr) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    hdr.type != (RN_CLIENT_MSG_ATTACH | RN_CLIENT_MSG_REPLY) ||
	    hdr.version != RN_CLIENT_PROTO_VERSION ||
	    hdr.len != (size_t)n - sizeof(hdr))
		return -EPROTO;
	if (hdr.status != 0)
		return hdr.status < 0 ? hdr.status : -EPROTO;
	if (hdr.len < sizeof(r->info))
		return -EPROTO;
	memcpy(&r->info, rep + sizeof(hdr), sizeof(r->info));
	if (r->info.n_lcores == 0 || r->info.n_lcores > RN_CLIENT_MAX_LCORES ||
	    r->n_fds != ATTACH_FDS_FIXED + r->info.n_lcores ||
	    memchr(r->info.node, '\0', sizeof(r->info.node)) == NULL)
		return -EPROTO;
	return 0;
}

/* Map fd whole (at least min bytes) with prot; its length in *len. */
static void *
map_fd(int fd, uint64_t min, int prot, uint64_t *len)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) != 0 || st.st_size < 0 ||
	    (uint64_t)st.st_size < min)
		return NULL;
	p = mmap(NULL, (size_t)st.st_size, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	*len = (uint64_t)st.st_size;
	return p;
}

/* The region and status page of r, mapped and checked. */
static int
map_shared(struct rn_client *c, const struct attach_reply *r)
{
	const struct rn_client_status_page *page;

	c->region = map_fd(r->fds[0], r->info.region_size,
			   PROT_READ | PROT_WRITE, &c->region_len);
	if (c->region == NULL)
		return -EPROTO;
	/* region_size: what the daemon mapped, the region's size rounded up
	 * to its pages (huge ones, maybe). */
	if (rn_client_region_check(c->region, c->region_len) != 0 ||
	    c->region->size > r->info.region_size ||
	    c->region->n_lcores != r->info.n_lcores ||
	    c->region->ring_size != r->info.ring_size ||
	    c->region->buf_size != r->info.buf_size)
		return -EPROTO;
	page = map_fd(r->fds[1], sizeof(*page), PROT_READ, &c->page_len);
	if (page == NULL)
		return -EPROTO;
	c->page = page;
	if (page->magic != RN_CLIENT_STATUS_MAGIC ||
	    page->version != RN_CLIENT_SHM_VERSION ||
	    page->n_lcores != r->info.n_lcores)
		return -EPROTO;
	return 0;
}

static int
alloc_queues(struct rn_client *c)
{
	/* Room for every entry of every deliver ring, and more: a full
	 * window of completions never waits for queue space. */
	uint32_t cap = 256;

	while (cap < c->ring_size * c->n_lcores)
		cap <<= 1;
	c->comps = calloc(cap, sizeof(*c->comps));
	c->events = calloc(cap, sizeof(*c->events));
	if (c->comps == NULL || c->events == NULL)
		return -ENOMEM;
	c->comp_q.mask = cap - 1;
	c->event_q.mask = cap - 1;
	for (uint32_t i = 0; i < c->n_lcores; i++) {
		struct rn_client_deliver *d = &c->deliver[i];

		d->held_pos = calloc(c->ring_size, sizeof(*d->held_pos));
		if (d->held_pos == NULL)
			return -ENOMEM;
		d->held.mask = c->ring_size - 1;
		d->tail = __atomic_load_n(&rn_client_deliver_ring(c->region,
								 i)->cons.tail,
					  __ATOMIC_RELAXED);
	}
	return 0;
}

static int
make_epoll(struct rn_client *c)
{
	struct epoll_event ev = { .events = EPOLLIN };

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0)
		return -errno;
	ev.data.fd = c->efd;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->efd, &ev) != 0)
		return -errno;
	ev.events = EPOLLIN | EPOLLRDHUP;
	ev.data.fd = c->sock;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->sock, &ev) != 0)
		return -errno;
	return 0;
}

static uint32_t
spin_us(void)
{
	const char *s = getenv(RN_CLIENT_SPIN_ENV);
	char *end;
	unsigned long v;

	if (s == NULL || *s == '\0')
		return RN_CLIENT_SPIN_US_DEFAULT;
	v = strtoul(s, &end, 10);
	return *end == '\0' && v <= 1000000 ? (uint32_t)v :
	       RN_CLIENT_SPIN_US_DEFAULT;
}

static struct rn_client *
client_new(void)
{
	struct rn_client *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->sock = c->efd = c->epfd = -1;
	for (unsigned int i = 0; i < RN_CLIENT_MAX_LCORES; i++)
		c->wake_fd[i] = -1;
	return c;
}

/* Take the descriptors and shape of r into c; r's fds are c's then. */
static int
adopt(struct rn_client *c, struct attach_reply *r)
{
	int rc;

	c->n_lcores = r->info.n_lcores;
	c->ring_size = r->info.ring_size;
	c->buf_size = r->info.buf_size;
	c->client_id = r->info.client_id;
	memcpy(c->node, r->info.node, sizeof(c->node));
	c->efd = r->fds[2];
	r->fds[2] = -1;
	/* Drained with read() that must not block: the flag is on the open
	 * file, shared with the daemon, whose writes it does not change. */
	if (fcntl(c->efd, F_SETFL, fcntl(c->efd, F_GETFL) | O_NONBLOCK) != 0)
		return -errno;
	for (uint32_t i = 0; i < c->n_lcores; i++) {
		c->wake_fd[i] = r->fds[ATTACH_FDS_FIXED + i];
		r->fds[ATTACH_FDS_FIXED + i] = -1;
	}
	rc = map_shared(c, r);
	if (rc == 0)
		rc = alloc_queues(c);
	if (rc == 0)
		rc = rn_client_xfer_init(c);
	if (rc == 0)
		rc = make_epoll(c);
	return rc;
}

int
rn_client_attach(const char *socket_path, const char *agent,
		 struct rn_client **out)
{
	struct attach_reply r = { .n_fds = 0 };
	struct rn_client *c;
	size_t agent_len;
	int rc;

	if (socket_path == NULL)
		socket_path = getenv(RN_CLIENT_SOCKET_ENV);
	if (agent == NULL || out == NULL || socket_path == NULL ||
	    *socket_path == '\0')
		return -EINVAL;
	agent_len = strnlen(agent, RN_CLIENT_AGENT_MAX + 1);
	if (agent_len == 0 || agent_len > RN_CLIENT_AGENT_MAX)
		return -EINVAL;
	c = client_new();
	if (c == NULL)
		return -ENOMEM;
	c->spin_us = spin_us();
	rc = connect_socket(socket_path);
	if (rc < 0)
		goto free_client;
	c->sock = rc;
	rc = exchange_attach(c->sock, agent, agent_len, &r);
	if (rc == 0)
		rc = adopt(c, &r);
	close_fds(r.fds, r.n_fds);   /* the memfds: the mappings hold them */
	if (rc != 0)
		goto free_client;
	/* Armed from the start: the first entry for us makes the fd
	 * readable. */
	__atomic_store_n(&c->region->armed, 1, __ATOMIC_SEQ_CST);
	*out = c;
	return 0;

free_client:
	rn_client_detach(c);
	return rc;
}

void
rn_client_detach(struct rn_client *c)
{
	if (c == NULL)
		return;
	if (c->sock >= 0 && !c->gone && c->region != NULL)
		rn_client_request(c, RN_CLIENT_MSG_DETACH, NULL, 0, NULL, 0,
				  NULL);
	/* What the client registered goes with it: the daemon deregisters
	 * it when the socket closes. */
	rn_client_reg_free_all(c);
	rn_client_alloc_free_all(c);
	rn_client_xfer_fini(c);
	if (c->region != NULL)
		munmap(c->region, c->region_len);
	if (c->page != NULL)
		munmap((void *)(uintptr_t)c->page, c->page_len);
	for (unsigned int i = 0; i < RN_CLIENT_MAX_LCORES; i++) {
		if (c->wake_fd[i] >= 0)
			close(c->wake_fd[i]);
		free(c->deliver[i].held_pos);
	}
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->efd >= 0)
		close(c->efd);
	if (c->sock >= 0)
		close(c->sock);
	free(c->comps);
	free(c->events);
	free(c);
}

int
rn_client_fd(const struct rn_client *c)
{
	return c->epfd;
}

const char *
rn_client_node(const struct rn_client *c)
{
	return c->node;
}
