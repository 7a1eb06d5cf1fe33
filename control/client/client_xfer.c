/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transfers of client processes, on the control thread (docs/client.md,
 * "The attach protocol"; docs/transfers.md): REG maps the memory a client
 * passes by fd and has every worker lcore register it
 * (RN_LCORE_CMD_CLIENT_REG), DEREG undoes that, PUBLISH names a region for
 * peers' descriptor requests, FETCH asks a peer's daemon for one of its
 * descriptors. REG, DEREG and FETCH are answered later, from the lcores'
 * events or the plane's callback; meanwhile the client's next request
 * waits in its socket (client_server.c), so replies keep their order.
 *
 * A region's memory: host memory is a memfd or a hugetlbfs file (fstatfs
 * says which; anything else could change under the device, or not be
 * memory at all), sealed against shrinking (F_SEAL_SHRINK: a memfd made
 * with MFD_ALLOW_SEALING), each piece page-aligned and inside its file,
 * mapped MAP_SHARED at consecutive addresses of one reserved range, so that the
 * lcores see the client's bytes at the same offsets as the client does. A
 * dma-buf is one piece, not mapped: the lcores register the fd. The
 * client's fds are closed once mapped; a dma-buf's is kept until the
 * region is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "client_pvt.h"
#include "rn_proto.h"
#include "rn_xfer_desc.h"

_Static_assert(RN_CLIENT_LOCAL_WRITE == RN_ACCESS_LOCAL_WRITE &&
	       RN_CLIENT_REMOTE_WRITE == RN_ACCESS_REMOTE_WRITE &&
	       RN_CLIENT_REMOTE_READ == RN_ACCESS_REMOTE_READ, "access bits");
_Static_assert(RN_CLIENT_DESC_SIZE == RN_XFER_DESC_SIZE &&
	       RN_CLIENT_DESC_SIZE == RN_PROTO_DESC_BLOB, "one descriptor");
_Static_assert(RN_CLIENT_PUBLISH_NAME_MAX == RN_PROTO_DESC_NAME_MAX,
	       "names as the control protocol carries them");
_Static_assert(RN_CLIENT_MAX_LCORES <= RN_XFER_MAX_KEYS &&
	       RN_CLIENT_MAX_LCORES <= 32, "a key and a bit per worker");

#define ACCESS_ALL (RN_CLIENT_LOCAL_WRITE | RN_CLIENT_REMOTE_WRITE | \
		    RN_CLIENT_REMOTE_READ)

static void
count_regions(struct rn_client_server *s, struct rn_client_conn *c)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < RN_CLIENT_MAX_REGIONS; i++)
		n += c->regions[i] != NULL;
	pthread_mutex_lock(&s->lock);
	c->info.regions = n;
	pthread_mutex_unlock(&s->lock);
}

/* Unmap x, close its dma-buf, free it: no lcore holds it any more. */
static void
xreg_free(struct rn_client_conn *c, struct rn_client_xreg *x)
{
	c->regions[x->op.region] = NULL;
	if (x->map != NULL)
		munmap(x->map, x->map_len);
	if (x->op.dmabuf_fd >= 0)
		close(x->op.dmabuf_fd);
	free(x);
}

/* The reply to c's pending request; then its next request is read. */
static void
finish(struct rn_client_server *s, struct rn_client_conn *c, uint16_t type,
       int status, const void *body, uint32_t len)
{
	c->pending = 0;
	if (rn_client_server_reply(c, type, status, body, len, NULL, 0) != 0)
		rn_client_conn_close(s, c);
	else
		rn_client_conn_resume(s, c);
}

static void
to_workers(struct rn_client_server *s, struct rn_client_xreg *x,
	   uint32_t type, uint32_t workers)
{
	struct rn_lcore_cmd cmd = { .type = type,
				    .cookie = (uintptr_t)&x->op };

	x->lcores_left = 0;
	for (unsigned int i = 0; i < s->n_workers; i++)
		if (workers & (1u << i)) {
			x->lcores_left++;
			rn_client_cmd_send(s, i, cmd);
		}
}

static uint32_t
all_workers(const struct rn_client_server *s)
{
	return s->n_workers >= 32 ? UINT32_MAX : (1u << s->n_workers) - 1;
}

/* ---- REG ---- */

/*
 * Whether fd is memory the daemon may register: a dma-buf when dmabuf,
 * else a memfd or a file of tmpfs or hugetlbfs. Its page size into *unit
 * (1 for a dma-buf) and its size into *size; or -EBADF.
 */
static int
piece_file(int fd, bool dmabuf, uint64_t *unit, uint64_t *size)
{
	struct statfs fs;
	struct stat st;

	int seals;

	if (fd < 0 || fstatfs(fd, &fs) != 0 || fstat(fd, &st) != 0)
		return -EBADF;
	*size = (uint64_t)st.st_size;
	if (dmabuf) {
		*unit = 1;
		return (unsigned long)fs.f_type == DMA_BUF_MAGIC ? 0 : -EBADF;
	}
	if (!S_ISREG(st.st_mode))
		return -EBADF;
	if ((unsigned long)fs.f_type == TMPFS_MAGIC)
		*unit = (uint64_t)sysconf(_SC_PAGESIZE);
	else if ((unsigned long)fs.f_type == HUGETLBFS_MAGIC)
		*unit = (uint64_t)fs.f_bsize;
	else
		return -EBADF;
	/* A file the client could shrink under the mapping would fault
	 * the lcore (or the sim) that touches the lost part: only a file
	 * sealed against shrinking, sealed before its size is read (a
	 * memfd made with MFD_ALLOW_SEALING is sealed here). */
	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & F_SEAL_SHRINK) == 0 || fstat(fd, &st) != 0)
		return -EBADF;
	*size = (uint64_t)st.st_size;
	return 0;
}

/* Reserve address space for the pieces, aligned to the largest page,
 * map each piece there, and give back the slack of the alignment: what
 * stays mapped is the pieces, nothing else. 0, or -errno with nothing
 * left mapped. */
static int
map_pieces(struct rn_client_xreg *x, const struct rn_client_reg_req *req,
	   const int *fds, uint64_t align, int prot)
{
	size_t len = x->op.length + align, head;
	uint8_t *base, *start, *at;

	base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		    MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return -ENOMEM;
	start = (uint8_t *)(((uintptr_t)base + align - 1) &
			    ~(uintptr_t)(align - 1));
	at = start;
	for (uint32_t i = 0; i < req->n_pieces; i++) {
		if (mmap(at, req->piece[i].length, prot, MAP_SHARED | MAP_FIXED,
			 fds[i], (off_t)req->piece[i].offset) == MAP_FAILED) {
			int rc = -errno;

			munmap(base, len);
			return rc;
		}
		at += req->piece[i].length;
	}
	head = (size_t)(start - base);
	if (head != 0)
		munmap(base, head);
	if (len - head - x->op.length != 0)
		munmap(at, len - head - x->op.length);
	x->op.addr = start;
	x->map = start;
	x->map_len = x->op.length;
	return 0;
}

/* Whether [addr, addr + len) meets a region of c. */
static bool
overlaps(const struct rn_client_conn *c, uint64_t addr, uint64_t len)
{
	for (uint32_t i = 0; i < RN_CLIENT_MAX_REGIONS; i++) {
		const struct rn_client_xreg *x = c->regions[i];

		if (x != NULL && addr < x->op.iova + x->op.length &&
		    x->op.iova < addr + len)
			return true;
	}
	return false;
}

/* The request's checks, in the order docs/client.md lists the errors;
 * its pieces' total length into *total and largest page into *align. */
static int
reg_check(const struct rn_client_conn *c, const struct rn_client_reg_req *req,
	  const int *fds, unsigned int n_fds, uint64_t *total,
	  uint64_t *align)
{
	bool dmabuf = req->flags & RN_CLIENT_REG_DMABUF;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	int rc;

	if (req->n_pieces == 0 || req->n_pieces > RN_CLIENT_REG_MAX_PIECES ||
	    n_fds != req->n_pieces || (req->access & ~ACCESS_ALL) != 0 ||
	    ((req->access & RN_CLIENT_REMOTE_WRITE) &&
	     !(req->access & RN_CLIENT_LOCAL_WRITE)) ||
	    (req->flags & ~RN_CLIENT_REG_DMABUF) != 0)
		return -EINVAL;
	if (dmabuf && req->n_pieces != 1)
		return -EOPNOTSUPP;
	*total = 0;
	*align = page;
	for (uint32_t i = 0; i < req->n_pieces; i++) {
		uint64_t off = req->piece[i].offset, len = req->piece[i].length;
		uint64_t unit, size;

		rc = piece_file(fds[i], dmabuf, &unit, &size);
		if (rc != 0)
			return rc;
		if (len == 0 || off % unit != 0 || len % unit != 0 ||
		    off > size || len > size - off ||
		    *total + len < *total)
			return -EINVAL;
		*total += len;
		if (unit > *align)
			*align = unit;
	}
	/* The reservation is the pieces plus an alignment's slack: one
	 * that wraps would be small, and the pieces mapped past it. */
	if (req->addr % page != 0 || req->addr + *total <= req->addr ||
	    *total > (uint64_t)SIZE_MAX - *align)
		return -EINVAL;
	if (overlaps(c, req->addr, *total))
		return -EEXIST;
	return 0;
}

static int
reg(struct rn_client_server *s, struct rn_client_conn *c,
    const uint8_t *body, uint32_t len, int *fds, unsigned int n_fds)
{
	struct rn_client_reg_req req;
	struct rn_client_xreg *x;
	uint64_t total, align;
	uint32_t id;
	int rc;

	if (s->cfg->client.xfer_slots == 0)
		return -ENOTSUP;
	/* The pieces not used may be left out of the body. */
	if (len < offsetof(struct rn_client_reg_req, piece) ||
	    len > sizeof(req))
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	memcpy(&req, body, len);
	if (req.n_pieces <= RN_CLIENT_REG_MAX_PIECES &&
	    len < offsetof(struct rn_client_reg_req, piece) +
		  req.n_pieces * sizeof(req.piece[0]))
		return -EINVAL;
	rc = reg_check(c, &req, fds, n_fds, &total, &align);
	if (rc != 0)
		return rc;
	for (id = 0; id < RN_CLIENT_MAX_REGIONS && c->regions[id] != NULL;
	     id++)
		;
	if (id == RN_CLIENT_MAX_REGIONS)
		return -ENOSPC;
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return -ENOMEM;
	x->c = c;
	x->op = (struct rn_client_reg_op){
		.link = &c->link, .region = id, .access = req.access,
		.iova = req.addr, .length = total, .dmabuf_fd = -1,
	};
	if (req.flags & RN_CLIENT_REG_DMABUF) {
		x->op.dmabuf_fd = fds[0];
		x->op.dmabuf_offset = req.piece[0].offset;
		fds[0] = -1;   /* ours now */
	} else {
		int prot = req.access & (RN_CLIENT_LOCAL_WRITE |
					 RN_CLIENT_REMOTE_WRITE) ?
			   PROT_READ | PROT_WRITE : PROT_READ;

		/* Each piece's file is sealed against shrinking
		 * (piece_file()). */
		rc = map_pieces(x, &req, fds, align, prot);
		if (rc != 0) {
			free(x);
			return rc == -ENOMEM || rc == -EACCES ? rc : -EINVAL;
		}
	}
	x->state = RN_XREG_REGISTERING;
	c->regions[id] = x;
	count_regions(s, c);
	to_workers(s, x, RN_LCORE_CMD_CLIENT_REG, all_workers(s));
	c->pending = RN_CLIENT_MSG_REG;
	return 1;
}

/* Every lcore answered CLIENT_REG. */
static void
registered(struct rn_client_server *s, struct rn_client_xreg *x)
{
	struct rn_client_conn *c = x->c;
	struct rn_client_registered out = { .region = x->op.region };
	struct rn_xfer_remote d = {
		.session_id = rn_plane_session(s->plane),
		.addr = x->op.iova, .length = x->op.length,
		.n_keys = s->n_workers,
	};

	if (x->status != 0) {
		if (x->took != 0 && c->state != RN_CONN_CLOSING) {
			x->state = RN_XREG_UNDOING;
			to_workers(s, x, RN_LCORE_CMD_CLIENT_DEREG, x->took);
			return;
		}
		/* Closing: the lcores' CLIENT_REMOVE deregisters it. */
		if (c->state == RN_CONN_CLOSING)
			return;
		RN_CLIENT_LOG(NOTICE, "client %u: region not registered: %s",
			      c->link.client_id, strerror(-x->status));
		finish(s, c, RN_CLIENT_MSG_REG, x->status, NULL, 0);
		xreg_free(c, x);
		count_regions(s, c);
		return;
	}
	x->state = RN_XREG_LIVE;
	snprintf(d.node, sizeof(d.node), "%s", s->cfg->dataplane.name);
	for (unsigned int i = 0; i < s->n_workers; i++)
		d.keys[i] = (struct rn_xfer_key){
			.lcore = s->workers[i]->lcore_id,
			.rkey = x->op.rkey[i] };
	if (rn_xfer_desc_encode(&d, x->desc, sizeof(x->desc)) !=
	    RN_CLIENT_DESC_SIZE)
		memset(x->desc, 0, sizeof(x->desc));
	memcpy(out.desc, x->desc, sizeof(out.desc));
	if (c->state != RN_CONN_CLOSING)
		finish(s, c, RN_CLIENT_MSG_REG, 0, &out, sizeof(out));
}

/* Every lcore asked answered CLIENT_DEREG. */
static void
deregistered(struct rn_client_server *s, struct rn_client_xreg *x)
{
	struct rn_client_conn *c = x->c;
	int status = x->state == RN_XREG_UNDOING ? x->status : 0;
	uint16_t type = x->state == RN_XREG_UNDOING ? RN_CLIENT_MSG_REG :
						      RN_CLIENT_MSG_DEREG;

	if (c->state == RN_CONN_CLOSING)
		return;   /* freed with c, once the lcores let go of it */
	if (status != 0)
		RN_CLIENT_LOG(NOTICE, "client %u: region not registered: %s",
			      c->link.client_id, strerror(-status));
	xreg_free(c, x);
	count_regions(s, c);
	finish(s, c, type, status, NULL, 0);
}

static struct rn_client_xreg *
find_op(struct rn_client_server *s, uint64_t cookie)
{
	struct rn_client_conn *c;

	TAILQ_FOREACH(c, &s->conns, next)
		for (uint32_t i = 0; i < RN_CLIENT_MAX_REGIONS; i++)
			if (c->regions[i] != NULL &&
			    (uintptr_t)&c->regions[i]->op == cookie)
				return c->regions[i];
	return NULL;
}

void
rn_client_xfer_event(struct rn_client_server *s,
		     const struct rn_lcore_event *ev)
{
	struct rn_client_xreg *x = find_op(s, ev->cookie);
	unsigned int w;

	if (x == NULL || x->lcores_left == 0) {
		RN_CLIENT_LOG(WARNING, "lcore %u: event %u of no region",
			      ev->lcore_id, ev->type);
		return;
	}
	for (w = 0; w < s->n_workers; w++)
		if (s->workers[w]->lcore_id == ev->lcore_id)
			break;
	x->lcores_left--;
	if (ev->type == RN_LCORE_EVENT_CLIENT_REGISTERED &&
	    x->state == RN_XREG_REGISTERING) {
		if (ev->arg == 0 && w < s->n_workers)
			x->took |= 1u << w;
		else if (x->status == 0)
			x->status = ev->arg != 0 ? ev->arg : -EIO;
		if (x->lcores_left == 0)
			registered(s, x);
		return;
	}
	if (ev->type == RN_LCORE_EVENT_CLIENT_DEREGISTERED &&
	    (x->state == RN_XREG_UNDOING ||
	     x->state == RN_XREG_DEREGISTERING)) {
		if (x->lcores_left == 0)
			deregistered(s, x);
		return;
	}
	RN_CLIENT_LOG(WARNING, "lcore %u: event %u of region %u of client %u "
		      "in state %d", ev->lcore_id, ev->type, x->op.region,
		      x->c->link.client_id, (int)x->state);
}

/* ---- DEREG, PUBLISH ---- */

static struct rn_client_xreg *
live_region(struct rn_client_conn *c, uint32_t id)
{
	if (id >= RN_CLIENT_MAX_REGIONS || c->regions[id] == NULL ||
	    c->regions[id]->state != RN_XREG_LIVE)
		return NULL;
	return c->regions[id];
}

static int
dereg(struct rn_client_server *s, struct rn_client_conn *c,
      const uint8_t *body, uint32_t len)
{
	struct rn_client_xreg *x;
	uint32_t id;

	if (len != sizeof(id))
		return -EINVAL;
	memcpy(&id, body, sizeof(id));
	x = live_region(c, id);
	if (x == NULL)
		return -EINVAL;
	x->name[0] = '\0';   /* withdrawn from now on */
	x->state = RN_XREG_DEREGISTERING;
	to_workers(s, x, RN_LCORE_CMD_CLIENT_DEREG, all_workers(s));
	c->pending = RN_CLIENT_MSG_DEREG;
	return 1;
}

/* The live region of any attached client published as name. */
static struct rn_client_xreg *
published(struct rn_client_server *s, const char *name)
{
	struct rn_client_conn *c;

	if (name[0] == '\0')
		return NULL;
	TAILQ_FOREACH(c, &s->conns, next) {
		if (c->state != RN_CONN_ATTACHED)
			continue;
		for (uint32_t i = 0; i < RN_CLIENT_MAX_REGIONS; i++)
			if (c->regions[i] != NULL &&
			    c->regions[i]->state == RN_XREG_LIVE &&
			    strcmp(c->regions[i]->name, name) == 0)
				return c->regions[i];
	}
	return NULL;
}

int
rn_client_xfer_published(void *arg, const char *name, void *blob,
			 size_t cap)
{
	const struct rn_client_xreg *x = published(arg, name);

	if (x == NULL)
		return -ENOENT;
	if (cap < RN_CLIENT_DESC_SIZE)
		return -ENOSPC;
	memcpy(blob, x->desc, RN_CLIENT_DESC_SIZE);
	return RN_CLIENT_DESC_SIZE;
}

static int
publish(struct rn_client_server *s, struct rn_client_conn *c,
	const uint8_t *body, uint32_t len)
{
	struct rn_client_publish_req p;
	uint8_t blob[RN_CLIENT_DESC_SIZE];
	struct rn_client_xreg *x;
	size_t n;

	if (len != sizeof(p))
		return -EINVAL;
	memcpy(&p, body, sizeof(p));
	n = strnlen(p.name, sizeof(p.name));
	x = live_region(c, p.region);
	if (n == sizeof(p.name) || x == NULL)
		return -EINVAL;
	if (n == 0) {
		x->name[0] = '\0';
		return 0;
	}
	if (!rn_proto_desc_name_valid(p.name, n))
		return -EINVAL;
	if (strcmp(x->name, p.name) == 0)
		return 0;
	/* Unique on the node: among clients, and the embedded API's. */
	if (published(s, p.name) != NULL ||
	    rn_plane_desc_served(s->plane, p.name, blob, sizeof(blob)) ==
		    RN_PROTO_DESC_BLOB)
		return -EEXIST;
	memcpy(x->name, p.name, n + 1);
	return 0;
}

/* ---- FETCH ---- */

static void
fetched(void *arg, int rc, const void *blob)
{
	struct rn_client_conn *c = arg;
	struct rn_xfer_remote d;

	c->fetch = NULL;
	/* The answer must be a descriptor of the node asked: a peer cannot
	 * hand out another node's keys under its own name. */
	if (rc == RN_PROTO_DESC_BLOB &&
	    (rn_xfer_desc_decode(blob, RN_CLIENT_DESC_SIZE, &d) != 0 ||
	     strcmp(d.node, c->fetch_node) != 0))
		rc = -EBADMSG;
	if (c->state != RN_CONN_ATTACHED)
		return;
	if (rc == RN_PROTO_DESC_BLOB)
		finish(c->s, c, RN_CLIENT_MSG_FETCH, 0, blob,
		       RN_CLIENT_DESC_SIZE);
	else
		finish(c->s, c, RN_CLIENT_MSG_FETCH, rc, NULL, 0);
}

/* This node's own publication: the endpoint to self carries no
 * descriptor requests, and none is needed. */
static int
fetch_own(struct rn_client_server *s, struct rn_client_conn *c,
	  const char *name)
{
	uint8_t blob[RN_CLIENT_DESC_SIZE];
	int rc = rn_plane_desc_served(s->plane, name, blob, sizeof(blob));

	if (rc != RN_PROTO_DESC_BLOB)
		return rc == -ENOENT ? -ENODATA : rc;
	if (rn_client_server_reply(c, RN_CLIENT_MSG_FETCH, 0, blob,
				   sizeof(blob), NULL, 0) != 0)
		rn_client_conn_close(s, c);
	return RN_CLIENT_XFER_REPLIED;
}

static int
fetch(struct rn_client_server *s, struct rn_client_conn *c,
      const uint8_t *body, uint32_t len)
{
	struct rn_client_fetch_req f;
	int rc;

	if (len != sizeof(f))
		return -EINVAL;
	memcpy(&f, body, sizeof(f));
	if (memchr(f.node, '\0', sizeof(f.node)) == NULL ||
	    memchr(f.name, '\0', sizeof(f.name)) == NULL)
		return -EINVAL;
	if (strcmp(f.node, s->cfg->dataplane.name) == 0)
		return fetch_own(s, c, f.name);
	rc = rn_plane_desc_fetch_start(s->plane, f.node, f.name, f.timeout_ms,
				       fetched, c, &c->fetch);
	if (rc != 0)
		return rc;
	memcpy(c->fetch_node, f.node, sizeof(c->fetch_node));
	c->pending = RN_CLIENT_MSG_FETCH;
	return 1;
}

/* ---- the server's calls ---- */

int
rn_client_xfer_request(struct rn_client_server *s, struct rn_client_conn *c,
		       uint16_t type, const uint8_t *body, uint32_t len,
		       int *fds, unsigned int n_fds)
{
	switch (type) {
	case RN_CLIENT_MSG_REG:
		return reg(s, c, body, len, fds, n_fds);
	case RN_CLIENT_MSG_DEREG:
		return dereg(s, c, body, len);
	case RN_CLIENT_MSG_PUBLISH:
		return publish(s, c, body, len);
	case RN_CLIENT_MSG_FETCH:
		return fetch(s, c, body, len);
	default:
		return -EPROTO;
	}
}

void
rn_client_xfer_closing(struct rn_client_server *s, struct rn_client_conn *c)
{
	for (uint32_t i = 0; i < RN_CLIENT_MAX_REGIONS; i++)
		if (c->regions[i] != NULL)
			c->regions[i]->name[0] = '\0';
	if (c->fetch != NULL) {
		rn_plane_desc_fetch_cancel(s->plane, c->fetch);
		c->fetch = NULL;
	}
}

void
rn_client_xfer_free(struct rn_client_conn *c)
{
	for (uint32_t i = 0; i < RN_CLIENT_MAX_REGIONS; i++)
		if (c->regions[i] != NULL)
			xreg_free(c, c->regions[i]);
}
