/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The application side of transfers: regions registered with every
 * worker's device (each lcore registers with its own, on its own turn),
 * descriptors exported and imported, and batches resolved (each triple's
 * local region and key, its remote region) and handed to the lcore that
 * owns the peer's endpoint, which answers at once whether it took the
 * batch and later sets its final status (rn_lcore_xfer.h). Regions and
 * imported descriptors are lists under one lock: a batch's triples are
 * looked up in O(regions) each, cold next to the wire.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <rte_pause.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rn_lcore.h"
#include "rn_lcore_xfer.h"
#include "rn_plane.h"
#include "rn_proto.h"
#include "rn_transfer.h"

_Static_assert(RN_TRANSFER_MAX_WORKERS <= RN_XFER_MAX_KEYS, "keys");
_Static_assert(RN_TRANSFER_DESC_SIZE == RN_PROTO_DESC_BLOB &&
	       RN_TRANSFER_DESC_SIZE == RN_XFER_DESC_SIZE &&
	       RN_TRANSFER_NAME_MAX == RN_PROTO_DESC_NAME_MAX,
	       "descriptors travel whole, names as published");
_Static_assert(sizeof(RN_TRANSFER_FAILED_NAME) ==
	       sizeof(RN_XFER_FAILED_NAME), "one failure name");
_Static_assert(RN_TRANSFER_LOCAL_WRITE == RN_ACCESS_LOCAL_WRITE &&
	       RN_TRANSFER_REMOTE_WRITE == RN_ACCESS_REMOTE_WRITE &&
	       RN_TRANSFER_REMOTE_READ == RN_ACCESS_REMOTE_READ, "access");

struct rn_transfer_region {
	struct rn_transfer_region *next;
	uintptr_t addr;
	size_t length;
	uint32_t access;
	bool dmabuf;             /* device memory: fd, offset (while REG) */
	int fd;
	uint64_t offset;
	uint32_t users;          /* triples of batches not final */
	bool dying;              /* being deregistered: no new batch */
	char name[RN_TRANSFER_NAME_MAX + 1]; /* published as; "": not */
	struct rn_mr mr[RN_TRANSFER_MAX_WORKERS];
};

struct rn_transfer_remote {
	struct rn_xfer_remote r;
};

struct rn_transfer_batch {
	struct rn_xfer_batch b;  /* first: the lcore's view */
	struct rn_xfer_entry *entries;
	uint8_t *note;           /* name, then msg */
};

struct rn_transfer {
	struct rn_transfer_host host;
	struct rn_lcore *workers[RN_TRANSFER_MAX_WORKERS];
	unsigned int n_workers;
	uint32_t chunk_size;
	pthread_mutex_t lock;
	struct rn_transfer_region *regions;
};

static int
plane_lookup(void *ctx, const char *peer, uint32_t *ep_index,
	     uint32_t *worker)
{
	enum rn_ep_state state;

	if (rn_plane_lookup(ctx, peer, ep_index, &state, worker) != 0)
		return -ENOENT;
	if (state == RN_EP_CONNECTED)
		return 0;
	rn_plane_use(ctx, peer);   /* first use connects it */
	return state == RN_EP_IDLE || state == RN_EP_CONNECTING ? -EAGAIN :
								   -ENOTCONN;
}

static int
plane_fetch(void *ctx, const char *peer, const char *name,
	    uint32_t timeout_ms, void *buf, size_t len)
{
	return rn_plane_desc_fetch(ctx, peer, name, timeout_ms, buf, len);
}

void
rn_transfer_host_plane(struct rn_plane *plane, const char *name,
		       struct rn_transfer_host *out)
{
	*out = (struct rn_transfer_host){ .ctx = plane,
					  .session_id = rn_plane_session(plane),
					  .lookup = plane_lookup,
					  .fetch = plane_fetch };
	snprintf(out->name, sizeof(out->name), "%s", name);
}

int
rn_transfer_create(const struct rn_transfer_host *host,
		   struct rn_lcore **workers, unsigned int n_workers,
		   uint32_t chunk_size, struct rn_transfer **out)
{
	struct rn_transfer *t;

	if (chunk_size == 0)
		chunk_size = RN_TRANSFER_CHUNK_DEFAULT;
	if (n_workers == 0 || n_workers > RN_TRANSFER_MAX_WORKERS ||
	    chunk_size < 4096 || chunk_size > RN_TRANSFER_CHUNK_MAX ||
	    host->lookup == NULL)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	t->host = *host;
	memcpy(t->workers, workers, n_workers * sizeof(workers[0]));
	t->n_workers = n_workers;
	t->chunk_size = chunk_size;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

void
rn_transfer_free(struct rn_transfer *t)
{
	if (t == NULL)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Sleep a little between looks at an answer: lcores answer within a
 * turn, batches within their transfer time. */
static void
nap(void)
{
	struct timespec ts = { 0, 20000 };

	nanosleep(&ts, NULL);
}

/* Hand op to lc and wait for its answer. */
static int
op_run(struct rn_lcore *lc, struct rn_xfer_op *op)
{
	int64_t a;
	int rc = rn_lcore_xfer_submit(lc, op);

	if (rc != 0)
		return rc;
	while ((a = __atomic_load_n(&op->answer, __ATOMIC_ACQUIRE)) ==
	       RN_XFER_PENDING)
		rte_pause();
	return (int)a;
}

static int
reg_on(struct rn_lcore *lc, uint32_t type, struct rn_transfer_region *r,
       struct rn_mr *mr)
{
	struct rn_xfer_reg op = { .op.type = type, .addr = (void *)r->addr,
				  .length = r->length, .access = r->access,
				  .mr = mr, .dmabuf = r->dmabuf, .fd = r->fd,
				  .offset = r->offset };

	return op_run(lc, &op.op);
}

/* A region of host memory (dmabuf false) or of a dma-buf, registered
 * with every worker's device. */
static int
reg(struct rn_transfer *t, void *addr, size_t length, uint32_t access,
    bool dmabuf, int fd, uint64_t offset, struct rn_transfer_region **out)
{
	struct rn_transfer_region *r;
	uintptr_t a = (uintptr_t)addr;
	unsigned int done = 0;
	int rc = 0;

	if (length == 0 || (access & ~(uint32_t)RN_ACCESS_ALL) != 0 ||
	    ((access & RN_ACCESS_REMOTE_WRITE) &&
	     !(access & RN_ACCESS_LOCAL_WRITE)) || a + length < a ||
	    offset + length < offset)
		return -EINVAL;
	if (dmabuf && fd < 0)
		return -EBADF;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	*r = (struct rn_transfer_region){ .addr = a, .length = length,
					  .access = access, .dmabuf = dmabuf,
					  .fd = fd, .offset = offset };
	pthread_mutex_lock(&t->lock);
	for (const struct rn_transfer_region *o = t->regions; o != NULL;
	     o = o->next)
		if (a < o->addr + o->length && o->addr < a + length)
			rc = -EEXIST;
	for (; rc == 0 && done < t->n_workers; done++)
		rc = reg_on(t->workers[done], RN_XFER_OP_REG, r, &r->mr[done]);
	if (rc != 0) {
		/* The one that failed registered nothing. */
		while (done-- > 1)
			reg_on(t->workers[done - 1], RN_XFER_OP_DEREG, r,
			       &r->mr[done - 1]);
		pthread_mutex_unlock(&t->lock);
		free(r);
		return rc;
	}
	r->fd = -1;   /* the devices hold the dma-buf now, not the fd */
	r->next = t->regions;
	t->regions = r;
	pthread_mutex_unlock(&t->lock);
	*out = r;
	return 0;
}

int
rn_transfer_reg(struct rn_transfer *t, void *addr, size_t length,
		uint32_t access, struct rn_transfer_region **out)
{
	return reg(t, addr, length, access, false, -1, 0, out);
}

int
rn_transfer_reg_dmabuf(struct rn_transfer *t, int fd, uint64_t offset,
		       size_t length, void *addr, uint32_t access,
		       struct rn_transfer_region **out)
{
	return reg(t, addr, length, access, true, fd, offset, out);
}

static int
dereg(struct rn_transfer *t, struct rn_transfer_region *r, bool wait)
{
	struct rn_transfer_region **link;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	r->dying = true;
	pthread_mutex_unlock(&t->lock);
	/* Pairs with the lcore's release as a batch goes final: its WQEs
	 * are all complete. */
	while (__atomic_load_n(&r->users, __ATOMIC_ACQUIRE) != 0) {
		if (!wait)
			return -EBUSY;
		nap();
	}
	pthread_mutex_lock(&t->lock);
	for (link = &t->regions; *link != NULL; link = &(*link)->next) {
		if (*link == r) {
			*link = r->next;
			break;
		}
	}
	for (unsigned int w = 0; w < t->n_workers; w++) {
		int one = reg_on(t->workers[w], RN_XFER_OP_DEREG, r, &r->mr[w]);

		if (rc == 0)
			rc = one;
	}
	pthread_mutex_unlock(&t->lock);
	free(r);
	return rc;
}

int
rn_transfer_dereg(struct rn_transfer *t, struct rn_transfer_region *r)
{
	return dereg(t, r, true);
}

int
rn_transfer_dereg_try(struct rn_transfer *t, struct rn_transfer_region *r)
{
	return dereg(t, r, false);
}

int
rn_transfer_export(struct rn_transfer *t, const struct rn_transfer_region *r,
		   void *buf, size_t len)
{
	struct rn_xfer_remote d = { .session_id = t->host.session_id,
				    .addr = r->addr, .length = r->length,
				    .n_keys = t->n_workers };

	snprintf(d.node, sizeof(d.node), "%s", t->host.name);
	for (unsigned int w = 0; w < t->n_workers; w++)
		d.keys[w] = (struct rn_xfer_key){
			.lcore = t->workers[w]->lcore_id,
			.rkey = r->mr[w].rkey };
	return rn_xfer_desc_encode(&d, buf, len);
}

int
rn_transfer_import(struct rn_transfer *t, const void *buf, size_t len,
		   struct rn_transfer_remote **out)
{
	struct rn_transfer_remote *rem;
	struct rn_xfer_remote d;

	(void)t;
	if (rn_xfer_desc_decode(buf, len, &d) != 0)
		return -EBADMSG;
	rem = calloc(1, sizeof(*rem));
	if (rem == NULL)
		return -ENOMEM;
	rem->r = d;
	*out = rem;
	return 0;
}

/* Names as the control protocol carries them. */
static bool
name_valid(const char *name)
{
	return rn_proto_desc_name_valid(name, strnlen(name,
						      RN_TRANSFER_NAME_MAX + 1));
}

int
rn_transfer_publish(struct rn_transfer *t, struct rn_transfer_region *r,
		    const char *name)
{
	int rc = 0;

	if (name != NULL && name[0] != '\0' && !name_valid(name))
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	if (r->dying)
		rc = -EINVAL;
	for (const struct rn_transfer_region *o = t->regions;
	     rc == 0 && name != NULL && o != NULL; o = o->next)
		if (o != r && strcmp(o->name, name) == 0)
			rc = -EEXIST;
	if (rc == 0)
		snprintf(r->name, sizeof(r->name), "%s",
			 name != NULL ? name : "");
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int
rn_transfer_published(struct rn_transfer *t, const char *name, void *buf,
		      size_t len)
{
	int rc = -ENOENT;

	if (name[0] == '\0')
		return -ENOENT;
	pthread_mutex_lock(&t->lock);
	for (const struct rn_transfer_region *r = t->regions; r != NULL;
	     r = r->next)
		if (!r->dying && strcmp(r->name, name) == 0) {
			rc = rn_transfer_export(t, r, buf, len);
			break;
		}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int
rn_transfer_fetch(struct rn_transfer *t, const char *peer, const char *name,
		  uint32_t timeout_ms, void *buf, size_t len)
{
	struct rn_xfer_remote d;
	int rc;

	if (t->host.fetch == NULL)
		return -ENOTSUP;
	if (!name_valid(name))
		return -EINVAL;
	if (len < RN_TRANSFER_DESC_SIZE)
		return -ENOSPC;
	rc = t->host.fetch(t->host.ctx, peer, name, timeout_ms, buf, len);
	if (rc < 0)
		return rc;
	/* The peer's own region, in a form we read: a peer cannot hand us
	 * another node's keys under its name. */
	if (rc != RN_TRANSFER_DESC_SIZE || rn_xfer_desc_decode(buf, len, &d) != 0 ||
	    strncmp(d.node, peer, sizeof(d.node)) != 0)
		return -EBADMSG;
	return rc;
}

void
rn_transfer_forget(struct rn_transfer *t, struct rn_transfer_remote *rem)
{
	(void)t;
	free(rem);
}

/* The live region that holds [addr, addr + len) with access; locked. */
static struct rn_transfer_region *
region_of(struct rn_transfer *t, uintptr_t addr, uint64_t len,
	  uint32_t access)
{
	for (struct rn_transfer_region *r = t->regions; r != NULL; r = r->next)
		if (addr >= r->addr && len <= r->length &&
		    addr - r->addr <= r->length - len)
			return !r->dying && (r->access & access) == access ?
			       r : NULL;
	return NULL;
}

static void
batch_free(struct rn_transfer_batch *tb)
{
	free(tb->entries);
	free(tb->note);
	free(tb);
}

/* Each entry's region and key; counted as a user of it. Locked. */
static int
resolve(struct rn_transfer *t, struct rn_transfer_batch *tb,
	const struct rn_transfer_entry *in, unsigned int n, uint32_t worker,
	uint32_t access)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct rn_xfer_remote *rem = &in[i].rem->r;
		struct rn_transfer_region *r;

		if (in[i].length == 0 || in[i].remote < rem->addr ||
		    in[i].length > rem->length ||
		    in[i].remote - rem->addr > rem->length - in[i].length ||
		    strncmp(rem->node, in[0].rem->r.node, sizeof(rem->node)))
			return -EINVAL;
		r = region_of(t, (uintptr_t)in[i].local, in[i].length, access);
		if (r == NULL)
			return -EINVAL;
		tb->entries[i] = (struct rn_xfer_entry){
			.laddr = (uintptr_t)in[i].local, .raddr = in[i].remote,
			.length = in[i].length, .lkey = r->mr[worker].lkey,
			.remote = rem, .users = &r->users };
	}
	for (unsigned int i = 0; i < n; i++)
		__atomic_fetch_add(tb->entries[i].users, 1, __ATOMIC_RELAXED);
	return 0;
}

int
rn_transfer_submit(struct rn_transfer *t, enum rn_transfer_kind kind,
		   const struct rn_transfer_entry *entries, unsigned int n,
		   const void *name, uint32_t name_len, const void *msg,
		   uint32_t msg_len, struct rn_transfer_batch **out)
{
	struct rn_transfer_batch *tb;
	uint32_t ep_index, worker;
	int rc;

	if (n == 0 || n > RN_TRANSFER_MAX_ENTRIES ||
	    (kind != RN_TRANSFER_WRITE && kind != RN_TRANSFER_READ))
		return -EINVAL;
	for (unsigned int i = 0; i < n; i++)
		if (entries[i].rem == NULL)
			return -EINVAL;
	rc = t->host.lookup(t->host.ctx, entries[0].rem->r.node, &ep_index,
			    &worker);
	if (rc != 0)
		return rc;
	if (worker >= t->n_workers)
		return -ENOENT;
	tb = calloc(1, sizeof(*tb));
	if (tb == NULL)
		return -ENOMEM;
	tb->entries = calloc(n, sizeof(tb->entries[0]));
	tb->note = malloc((size_t)name_len + msg_len + 1);
	if (tb->entries == NULL || tb->note == NULL) {
		batch_free(tb);
		return -ENOMEM;
	}
	if (name_len != 0)
		memcpy(tb->note, name, name_len);
	if (msg_len != 0)
		memcpy(tb->note + name_len, msg, msg_len);
	tb->b = (struct rn_xfer_batch){
		.op.type = RN_XFER_OP_BATCH, .ep_index = ep_index,
		.kind = kind == RN_TRANSFER_READ ? RN_XFER_READ : RN_XFER_WRITE,
		.n_entries = n, .entries = tb->entries,
		.note_name = tb->note, .note_name_len = name_len,
		.note_msg = tb->note + name_len, .note_msg_len = msg_len,
		.chunk_size = t->chunk_size, .status = RN_XFER_PENDING };
	pthread_mutex_lock(&t->lock);
	rc = resolve(t, tb, entries, n, worker,
		     kind == RN_TRANSFER_READ ? RN_ACCESS_LOCAL_WRITE : 0);
	pthread_mutex_unlock(&t->lock);
	if (rc == 0) {
		rc = op_run(t->workers[worker], &tb->b.op);
		if (rc != 0)
			for (unsigned int i = 0; i < n; i++)
				__atomic_fetch_sub(tb->entries[i].users, 1,
						   __ATOMIC_RELEASE);
	}
	if (rc != 0) {
		batch_free(tb);
		return rc;
	}
	*out = tb;
	return 0;
}

int
rn_transfer_status(const struct rn_transfer_batch *tb, uint64_t *bytes_done,
		   int *notify_status)
{
	int64_t s = __atomic_load_n(&tb->b.status, __ATOMIC_ACQUIRE);

	if (s == RN_XFER_PENDING)
		return -EINPROGRESS;
	if (bytes_done != NULL)
		*bytes_done = tb->b.bytes_done;
	if (notify_status != NULL)
		*notify_status = tb->b.notify_status;
	return (int)s;
}

int
rn_transfer_wait(const struct rn_transfer_batch *tb, uint32_t timeout_ms)
{
	struct timespec start, now;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while ((rc = rn_transfer_status(tb, NULL, NULL)) == -EINPROGRESS) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 +
		    (now.tv_nsec - start.tv_nsec) / 1000000 >=
		    (int64_t)timeout_ms)
			return -ETIMEDOUT;
		nap();
	}
	return rc;
}

void
rn_transfer_cancel(struct rn_transfer_batch *tb)
{
	__atomic_store_n(&tb->b.cancel, 1, __ATOMIC_RELAXED);
	/* The lcore looks at it as it next posts, or as chunks complete;
	 * wake it in case it sleeps with nothing in flight. */
	if (tb->b.ep != NULL)
		rn_lcore_wake(rn_lcore_ep_lcore(tb->b.ep));
}

int
rn_transfer_release(struct rn_transfer *t, struct rn_transfer_batch *tb)
{
	(void)t;
	if (rn_transfer_status(tb, NULL, NULL) == -EINPROGRESS)
		return -EBUSY;
	batch_free(tb);
	return 0;
}
