/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registered memory and descriptors: REG passes the fds of the memory to
 * the daemon (which maps host memory and has every lcore register it),
 * DEREG lets go of it, PUBLISH names a region for peers' daemons, FETCH
 * asks a peer's daemon for a named one. Export and import are local: a
 * descriptor is the 192 bytes of rn_xfer_desc.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "client_pvt.h"

#define ACCESS_ALL (RN_CLIENT_LOCAL_WRITE | RN_CLIENT_REMOTE_WRITE | \
		    RN_CLIENT_REMOTE_READ)

static int
check_access(uint32_t access)
{
	if ((access & ~ACCESS_ALL) != 0 ||
	    ((access & RN_CLIENT_REMOTE_WRITE) != 0 &&
	     (access & RN_CLIENT_LOCAL_WRITE) == 0))
		return -EINVAL;
	return 0;
}

/* Send REG (req, with its fds) and keep the region it answers with. */
static int
reg_send(struct rn_client *c, const struct rn_client_reg_req *req,
	 const int *fds, uint64_t length, struct rn_client_alloc *a,
	 struct rn_client_region **out)
{
	struct rn_client_registered got;
	struct rn_xfer_remote d;
	struct rn_client_mr *m = calloc(1, sizeof(*m));
	int rc;

	if (m == NULL)
		return -ENOMEM;
	rc = rn_client_request_fds(c, RN_CLIENT_MSG_REG, req, sizeof(*req),
				   fds, req->n_pieces,
				   RN_CLIENT_SLOW_REPLY_TIMEOUT_MS, &got,
				   sizeof(got), NULL);
	if (rc == 0 &&
	    (got.region >= RN_CLIENT_MAX_REGIONS ||
	     c->regions[got.region] != NULL ||
	     rn_xfer_desc_decode(got.desc, sizeof(got.desc), &d) != 0))
		rc = -EPROTO;
	if (rc != 0) {
		free(m);
		return rc;
	}
	m->addr = req->addr;
	m->length = length;
	m->id = got.region;
	m->access = req->access;
	m->alloc = a;
	memcpy(m->desc, got.desc, sizeof(m->desc));
	if (a != NULL)
		a->users++;
	c->regions[m->id] = m;
	*out = rn_client_mr_handle(m);
	return 0;
}

int
rn_client_reg(struct rn_client *c, void *addr, size_t length,
	      uint32_t access, struct rn_client_region **out)
{
	struct rn_client_reg_req req = { .addr = (uintptr_t)addr,
					 .access = access, .n_pieces = 1 };
	struct rn_client_alloc *a;
	uint64_t off, end;
	int rc = rn_client_alive(c, false);

	if (rc != 0)
		return rc;
	if (out == NULL || length == 0 || check_access(access) != 0)
		return -EINVAL;
	a = rn_client_alloc_find(c, (uintptr_t)addr, length);
	if (a == NULL)
		return -EFAULT;   /* not memory the daemon can map */
	/* The whole pages that hold the range, all inside the allocation:
	 * the daemon maps and the device registers by pages. */
	off = (uintptr_t)addr - (uintptr_t)a->base;
	end = off + length;
	off -= off % a->unit;
	end = (end + a->unit - 1) / a->unit * a->unit;
	req.addr = (uintptr_t)a->base + off;
	req.piece[0].offset = off;
	req.piece[0].length = end - off;
	return reg_send(c, &req, &a->fd, end - off, a, out);
}

int
rn_client_reg_fd(struct rn_client *c, void *addr,
		 const struct rn_client_piece *pieces, unsigned int n,
		 uint32_t access, uint32_t flags, struct rn_client_region **out)
{
	struct rn_client_reg_req req = { .addr = (uintptr_t)addr,
					 .access = access, .flags = flags,
					 .n_pieces = n };
	int fds[RN_CLIENT_REG_MAX_PIECES];
	uint64_t total = 0;
	int rc = rn_client_alive(c, false);

	if (rc != 0)
		return rc;
	if (out == NULL || pieces == NULL || n == 0 ||
	    n > RN_CLIENT_REG_MAX_PIECES ||
	    (flags & ~RN_CLIENT_REG_DMABUF) != 0 || check_access(access) != 0)
		return -EINVAL;
	for (unsigned int i = 0; i < n; i++) {
		if (pieces[i].length == 0 ||
		    pieces[i].length > UINT64_MAX - total ||
		    pieces[i].offset > UINT64_MAX - pieces[i].length)
			return -EINVAL;
		total += pieces[i].length;
		req.piece[i].offset = pieces[i].offset;
		req.piece[i].length = pieces[i].length;
		fds[i] = pieces[i].fd;
	}
	if (total > UINT64_MAX - req.addr)
		return -EINVAL;
	/* In the daemon's order (control/client). */
	if ((flags & RN_CLIENT_REG_DMABUF) != 0 && n > 1)
		return -EOPNOTSUPP;
	for (unsigned int i = 0; i < n; i++)
		if (fds[i] < 0)
			return -EBADF;
	return reg_send(c, &req, fds, total, NULL, out);
}

static void
mr_free(struct rn_client *c, struct rn_client_mr *m)
{
	if (m->alloc != NULL)
		m->alloc->users--;
	c->regions[m->id] = NULL;
	free(m);
}

int
rn_client_dereg(struct rn_client *c, struct rn_client_region *r)
{
	struct rn_client_mr *m = rn_client_mr_of(r);
	int rc;

	if (m == NULL)
		return -EINVAL;
	do {
		rc = rn_client_request_fds(c, RN_CLIENT_MSG_DEREG, &m->id,
					   sizeof(m->id), NULL, 0,
					   RN_CLIENT_SLOW_REPLY_TIMEOUT_MS,
					   NULL, 0, NULL);
	} while (rc == -EINTR);
	/* Freed whatever the answer: gone, the daemon let go of it. */
	mr_free(c, m);
	return rc;
}

int
rn_client_export(const struct rn_client_region *r, void *buf, size_t len)
{
	const struct rn_client_mr *m = rn_client_mr_of(r);

	if (m == NULL || buf == NULL)
		return -EINVAL;
	if (len < RN_CLIENT_DESC_SIZE)
		return -ENOSPC;
	memcpy(buf, m->desc, RN_CLIENT_DESC_SIZE);
	return RN_CLIENT_DESC_SIZE;
}

/* A published name: 1..RN_CLIENT_PUBLISH_NAME_MAX bytes of letters,
 * digits and "_-.:/". Its length, or -EINVAL. */
static int
publish_name_len(const char *name)
{
	size_t len;

	if (name == NULL)
		return -EINVAL;
	len = strnlen(name, RN_CLIENT_PUBLISH_NAME_MAX + 1);
	if (len == 0 || len > RN_CLIENT_PUBLISH_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || strchr("_-.:/", ch) != NULL))
			return -EINVAL;
	}
	return (int)len;
}

int
rn_client_publish(struct rn_client *c, struct rn_client_region *r,
		  const char *name)
{
	struct rn_client_mr *m = rn_client_mr_of(r);
	struct rn_client_publish_req req = { .region = 0 };
	int len = 0, rc = rn_client_alive(c, false);

	if (rc != 0)
		return rc;
	if (m == NULL)
		return -EINVAL;
	if (name != NULL && *name != '\0') {
		len = publish_name_len(name);
		if (len < 0)
			return len;
	}
	req.region = m->id;
	if (len != 0)
		memcpy(req.name, name, (size_t)len);   /* else "": withdraw */
	return rn_client_request(c, RN_CLIENT_MSG_PUBLISH, &req, sizeof(req),
				 NULL, 0, NULL);
}

int
rn_client_fetch(struct rn_client *c, const char *node, const char *name,
		uint32_t timeout_ms, void *buf, size_t len)
{
	struct rn_client_fetch_req req = { .timeout_ms = timeout_ms };
	uint8_t desc[RN_CLIENT_DESC_SIZE];
	struct rn_xfer_remote d;
	int node_len = rn_client_node_len(node);
	int name_len = publish_name_len(name);
	int rc = rn_client_alive(c, false);

	if (rc != 0)
		return rc;
	if (node_len < 0 || name_len < 0 || buf == NULL)
		return -EINVAL;
	if (len < RN_CLIENT_DESC_SIZE)
		return -ENOSPC;
	memcpy(req.node, node, (size_t)node_len);
	memcpy(req.name, name, (size_t)name_len);
	/* The daemon answers by timeout_ms at the latest: wait that long,
	 * and the usual time for a reply on top. */
	rc = rn_client_request_fds(c, RN_CLIENT_MSG_FETCH, &req, sizeof(req),
				   NULL, 0,
				   timeout_ms > (uint32_t)(INT_MAX -
					RN_CLIENT_REPLY_TIMEOUT_MS) ? INT_MAX :
				   (int)timeout_ms + RN_CLIENT_REPLY_TIMEOUT_MS,
				   desc, sizeof(desc), NULL);
	if (rc != 0)
		return rc;
	if (rn_xfer_desc_decode(desc, sizeof(desc), &d) != 0 ||
	    strcmp(d.node, req.node) != 0)
		return -EBADMSG;   /* not a descriptor of that node's */
	memcpy(buf, desc, sizeof(desc));
	return RN_CLIENT_DESC_SIZE;
}

int
rn_client_import(struct rn_client *c, const void *buf, size_t len,
		 struct rn_client_remote **out)
{
	struct rn_client_remote *rem;
	struct rn_xfer_remote d;

	if (buf == NULL || out == NULL ||
	    rn_xfer_desc_decode(buf, len, &d) != 0)
		return -EBADMSG;
	rem = calloc(1, sizeof(*rem));
	if (rem == NULL)
		return -ENOMEM;
	rem->r = d;
	memcpy(rem->desc, buf, sizeof(rem->desc));
	rem->next = c->remotes;
	if (c->remotes != NULL)
		c->remotes->prev = rem;
	c->remotes = rem;
	*out = rem;
	return 0;
}

const char *
rn_client_remote_node(const struct rn_client_remote *rem)
{
	return rem->r.node;
}

void
rn_client_forget(struct rn_client *c, struct rn_client_remote *rem)
{
	if (rem == NULL)
		return;
	if (rem->prev != NULL)
		rem->prev->next = rem->next;
	else
		c->remotes = rem->next;
	if (rem->next != NULL)
		rem->next->prev = rem->prev;
	free(rem);
}

void
rn_client_reg_free_all(struct rn_client *c)
{
	for (unsigned int i = 0; i < RN_CLIENT_MAX_REGIONS; i++)
		if (c->regions[i] != NULL)
			mr_free(c, c->regions[i]);
	while (c->remotes != NULL)
		rn_client_forget(c, c->remotes);
}
