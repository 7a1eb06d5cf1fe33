/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Client processes' transfers on the lcore that owns the endpoint
 * (docs/transfers.md, "Batches of client processes"). A client writes a
 * batch into one of its batch slots of this lcore (rn_client_shm.h) and
 * enqueues an XFER entry naming it on its submit ring; lcore_client.c
 * hands the entry here. The request is copied once out of the region into
 * lcore memory, and everything in it is checked there, trusting none of
 * it: the slot, the endpoint and its tag, the sizes within the slot, each
 * descriptor (decoded, of the endpoint's peer, of its current
 * incarnation: -ESTALE), each triple (its remote range inside its
 * descriptor, its local range inside a live region of this client on this
 * lcore with the access the kind needs), the notification (an agent of
 * 1..RN_CLIENT_AGENT_MAX bytes; the frames fit the peer's slots and its
 * client's receive buffer). The batch is then an rn_xfer_batch in lcore
 * memory, run by the engine of lcore_transfer.c as the embedded API's
 * are; its notification is an agent frame from the client's agent (taken
 * from its link, never from the request). A refusal is the batch's final
 * status at once: the entry is consumed, never held.
 *
 * At the final status (the engine's done hook) the slot gets bytes_done,
 * notify_status, then status (release), and the client an XFER_DONE entry
 * on its deliver ring when there is room (the slot holds the result in
 * any case), and a wake-up.
 *
 * Per client, this lcore keeps its own table of the client's regions,
 * registered by RN_LCORE_CMD_CLIENT_REG with this lcore's device and
 * known by the client's addresses (iova), each counting the triples of
 * batches not final that use it; CLIENT_DEREG marks one dying (new
 * batches: -EINVAL) and deregisters it once no batch uses it. A triple's
 * region is found in O(1) when it is the previous triple's, else by a
 * binary search of the live regions sorted by address (regions never
 * overlap): a slot of 4 MiB holds 131,072 triples, and a scan of 64
 * regions for each would hold the lcore for milliseconds.
 * CLIENT_REMOVE cancels the client's batches and is answered once they
 * are all final and its regions deregistered here.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rte_malloc.h>

#include "lcore_pvt.h"
#include "rn_client_shm.h"
#include "rn_lcore_client.h"
#include "rn_lcore_xfer.h"
#include "rn_xfer_desc.h"

_Static_assert(RN_CLIENT_DESC_SIZE == RN_XFER_DESC_SIZE, "one descriptor");
_Static_assert(sizeof(RN_CLIENT_XFER_FAILED_NAME) ==
	       sizeof(RN_XFER_FAILED_NAME), "one failure name");
_Static_assert(RN_CLIENT_LOCAL_WRITE == RN_ACCESS_LOCAL_WRITE &&
	       RN_CLIENT_REMOTE_WRITE == RN_ACCESS_REMOTE_WRITE &&
	       RN_CLIENT_REMOTE_READ == RN_ACCESS_REMOTE_READ,
	       "a client's access is the device's");

/* Where a slot's request and what follows it lie. */
#define BODY_OFF (offsetof(struct rn_client_xfer_slot, req) + \
		  sizeof(struct rn_client_xfer_req))
/* A region's slots, as the daemon makes them ([client] xfer_slot_size);
 * XFER_DONE names a slot in 16 bits. */
#define SLOT_SIZE_MIN 4096u
#define SLOT_SIZE_MAX (4u << 20)
#define SLOTS_MAX 65536u

struct cx_region {
	uint64_t iova;            /* the client's address of its first byte */
	uint64_t length;
	uint32_t access;          /* enum rn_access */
	uint32_t users;           /* triples of batches not final */
	bool live;
	bool dying;               /* CLIENT_DEREG came: no new batch */
	struct rn_client_reg_op *dereg;   /* its op, answered at users 0 */
	struct rn_mr mr;
};

struct cx_client;

/* A batch slot's batch, as this lcore runs it. */
struct cx_batch {
	struct rn_xfer_batch b;   /* the engine's; first */
	struct cx_client *cl;
	uint32_t slot;
	bool busy;                /* in the engine */
	bool has_note;
	uint32_t cap_entries;
	uint64_t cap_bytes;
	struct rn_xfer_entry *entries;
	/* The request's bytes after its header, copied once: descriptors,
	 * triples, agent, name, msg; then the failure notice's body. */
	uint8_t *bytes;
	struct rn_xfer_remote remotes[RN_CLIENT_XFER_MAX_REMOTES];
};

/* A client, as this lcore's transfers know it. */
struct cx_client {
	const struct rn_client_link *link;
	struct cx_client *next;
	uint32_t cslot, id;       /* its slot and attachment in lc->clients */
	uint8_t *xfer;            /* its batch slots of this lcore, or NULL */
	uint32_t n_slots;
	uint32_t slot_size;
	uint32_t in_flight;       /* batches in the engine */
	uint32_t n_dying;         /* regions waiting for their users */
	bool removing;            /* CLIENT_REMOVE came, not answered yet */
	uint32_t cancel_all;      /* 1: what its batches' cancel reads once
				   * it is removed */
	struct cx_region *last;   /* found last */
	struct cx_batch **batches;   /* n_slots, each made at first use */
	/* The live regions by address: n_sorted of them, the first bytes
	 * (iova) in by_iova, ascending, their ids at the same place in
	 * by_id. Apart from the regions, so that a search reads 8 lines. */
	uint32_t n_sorted;
	uint64_t by_iova[RN_CLIENT_MAX_REGIONS];
	uint8_t by_id[RN_CLIENT_MAX_REGIONS];
	struct cx_region regions[RN_CLIENT_MAX_REGIONS];
};
_Static_assert(RN_CLIENT_MAX_REGIONS <= UINT8_MAX + 1, "ids in by_id");

struct rn_lcore_cxfer {
	struct cx_client *head;
	struct cx_client *last;   /* found last */
};

/* ---- clients ---- */

/* Where this lcore's batch slots of a client lie in its region. */
struct cx_shape {
	uint8_t *xfer;
	uint32_t n_slots;
	uint32_t slot_size;
};

/* The shape of this lcore's batch slots in link's region, read once and
 * checked against the region's size: false when it has none. */
static bool
shape_read(const struct rn_lcore *lc, const struct rn_client_link *link,
	   struct cx_shape *out)
{
	struct rn_client_region r;
	uint32_t i = lc->client_index;
	uint64_t off, end;

	memcpy(&r, link->region, sizeof(r));
	if (i >= r.n_lcores || i >= RN_CLIENT_MAX_LCORES ||
	    r.xfer_slots == 0 || r.xfer_slots > SLOTS_MAX ||
	    r.xfer_slot_size < SLOT_SIZE_MIN ||
	    r.xfer_slot_size > SLOT_SIZE_MAX || r.xfer_slot_size % 64 != 0)
		return false;
	off = r.xfer_off[i];
	end = off + (uint64_t)r.xfer_slots * r.xfer_slot_size;
	if (off % 64 != 0 || off < sizeof(r) || end < off ||
	    end > link->region_size)
		return false;
	out->xfer = rn_client_region_at(link->region, off);
	out->n_slots = r.xfer_slots;
	out->slot_size = r.xfer_slot_size;
	return true;
}

/* cl's batch slots of this lcore, when its region has them and there is
 * memory for their batches: cl->xfer set, else left NULL. */
static void
read_shape(struct rn_lcore *lc, struct cx_client *cl)
{
	struct cx_shape sh;

	if (!shape_read(lc, cl->link, &sh))
		return;
	cl->batches = rte_zmalloc("rn_cxfer_slots",
				  sh.n_slots * sizeof(cl->batches[0]), 0);
	if (cl->batches == NULL)
		return;
	cl->xfer = sh.xfer;
	cl->n_slots = sh.n_slots;
	cl->slot_size = sh.slot_size;
}

/* link's record; made when create (NULL: out of memory, or none). */
static struct cx_client *
client_of(struct rn_lcore *lc, const struct rn_client_link *link,
	  bool create)
{
	struct rn_lcore_cxfer *cx = lc->cxfer;
	struct cx_client *cl;

	if (cx == NULL) {
		if (!create)
			return NULL;
		cx = rte_zmalloc("rn_cxfer", sizeof(*cx), 0);
		if (cx == NULL)
			return NULL;
		lc->cxfer = cx;
	}
	if (cx->last != NULL && cx->last->link == link)
		return cx->last;
	for (cl = cx->head; cl != NULL; cl = cl->next)
		if (cl->link == link)
			break;
	if (cl == NULL && create) {
		cl = rte_zmalloc("rn_cxfer_client", sizeof(*cl), 0);
		if (cl == NULL)
			return NULL;
		cl->link = link;
		cl->cslot = UINT32_MAX;
		cl->cancel_all = 1;
		read_shape(lc, cl);
		cl->next = cx->head;
		cx->head = cl;
	}
	if (cl != NULL)
		cx->last = cl;
	return cl;
}

/* Whether r holds [addr, addr + len), len not 0. */
static inline bool
region_holds(const struct cx_region *r, uint64_t addr, uint64_t len)
{
	return addr >= r->iova && len <= r->length &&
	       addr - r->iova <= r->length - len;
}

/* Where iova goes in cl's sorted regions: how many start at or below it.
 * O(log n). */
static inline uint32_t
sorted_rank(const struct cx_client *cl, uint64_t iova)
{
	uint32_t lo = 0, hi = cl->n_sorted;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (cl->by_iova[mid] <= iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The region of cl holding [addr, addr + len) with access, live, not
 * dying. O(1) when it is the last one found (consecutive triples mostly
 * are in one region), else O(log n): only the last region starting at or
 * below addr can hold it, since regions do not overlap.
 */
static struct cx_region *
region_of(struct cx_client *cl, uint64_t addr, uint64_t len, uint32_t access)
{
	struct cx_region *r = cl->last;

	if (r == NULL || !region_holds(r, addr, len)) {
		uint32_t k = sorted_rank(cl, addr);

		if (k == 0)
			return NULL;
		r = &cl->regions[cl->by_id[k - 1]];
		if (!region_holds(r, addr, len))
			return NULL;
		cl->last = r;
	}
	return !r->dying && (r->access & access) == access ? r : NULL;
}

/* Region id of cl, live now, into the sorted ones. */
static void
sorted_insert(struct cx_client *cl, uint32_t id)
{
	uint32_t k = sorted_rank(cl, cl->regions[id].iova);
	uint32_t n = cl->n_sorted - k;

	memmove(&cl->by_iova[k + 1], &cl->by_iova[k], n * sizeof(uint64_t));
	memmove(&cl->by_id[k + 1], &cl->by_id[k], n);
	cl->by_iova[k] = cl->regions[id].iova;
	cl->by_id[k] = (uint8_t)id;
	cl->n_sorted++;
}

/* Region id of cl, live still, out of the sorted ones. */
static void
sorted_remove(struct cx_client *cl, uint32_t id)
{
	uint32_t k = sorted_rank(cl, cl->regions[id].iova) - 1;
	uint32_t n = cl->n_sorted - k - 1;

	memmove(&cl->by_iova[k], &cl->by_iova[k + 1], n * sizeof(uint64_t));
	memmove(&cl->by_id[k], &cl->by_id[k + 1], n);
	cl->n_sorted--;
}

/* ---- regions ---- */

/* Must arrive: the daemon answers its client after every lcore. */
static void
answer_reg(struct rn_lcore *lc, uint16_t type, int rc,
	   struct rn_client_reg_op *op)
{
	rn_lcore_post_wait(lc, type, rc, op);
}

static int
region_reg(struct rn_lcore *lc, struct rn_client_reg_op *op)
{
	struct cx_client *cl = client_of(lc, op->link, true);
	struct cx_region *r;
	int rc;

	if (cl == NULL)
		return -ENOMEM;
	if (cl->removing)
		return -ESHUTDOWN;
	if (op->region >= RN_CLIENT_MAX_REGIONS || op->length == 0 ||
	    op->iova + op->length < op->iova ||
	    (op->access & ~(uint32_t)RN_ACCESS_ALL) != 0 ||
	    lc->client_index >= RN_CLIENT_MAX_LCORES)
		return -EINVAL;
	r = &cl->regions[op->region];
	if (r->live)
		return -EEXIST;
	for (uint32_t i = 0; i < RN_CLIENT_MAX_REGIONS; i++) {
		const struct cx_region *o = &cl->regions[i];

		if (o->live && op->iova < o->iova + o->length &&
		    o->iova < op->iova + op->length)
			return -EEXIST;
	}
	memset(r, 0, sizeof(*r));
	rc = op->addr != NULL ?
	     rn_nic_mr_reg_iova(lc->nic, op->addr, op->length, op->iova,
				op->access, &r->mr) :
	     rn_nic_mr_reg_dmabuf(lc->nic, op->dmabuf_offset, op->length,
				  op->iova, op->dmabuf_fd, op->access, &r->mr);
	if (rc != 0)
		return rc;
	r->iova = op->iova;
	r->length = op->length;
	r->access = op->access;
	r->live = true;
	sorted_insert(cl, op->region);
	op->rkey[lc->client_index] = r->mr.rkey;
	return 0;
}

/* r is used by no batch any more: deregistered, its DEREG answered
 * unless its client is being removed (CLIENT_REMOVED answers it). */
static void
region_drop(struct rn_lcore *lc, struct cx_client *cl, struct cx_region *r)
{
	int rc = rn_nic_mr_dereg(lc->nic, &r->mr);
	struct rn_client_reg_op *op = r->dereg;

	if (r->dying)
		cl->n_dying--;
	if (cl->last == r)
		cl->last = NULL;
	sorted_remove(cl, (uint32_t)(r - cl->regions));
	memset(r, 0, sizeof(*r));
	if (op != NULL && !cl->removing)
		answer_reg(lc, RN_LCORE_EVENT_CLIENT_DEREGISTERED, rc, op);
}

/* Regions of cl marked dying that no batch uses now. */
static void
regions_reap(struct rn_lcore *lc, struct cx_client *cl)
{
	for (uint32_t i = 0; cl->n_dying != 0 && i < RN_CLIENT_MAX_REGIONS;
	     i++) {
		struct cx_region *r = &cl->regions[i];

		if (r->live && r->dying && r->users == 0)
			region_drop(lc, cl, r);
	}
}

static void
region_dereg(struct rn_lcore *lc, struct rn_client_reg_op *op)
{
	struct cx_client *cl = client_of(lc, op->link, false);
	struct cx_region *r;

	if (cl == NULL || op->region >= RN_CLIENT_MAX_REGIONS ||
	    !cl->regions[op->region].live ||
	    cl->regions[op->region].dying) {
		answer_reg(lc, RN_LCORE_EVENT_CLIENT_DEREGISTERED, -ENOENT, op);
		return;
	}
	r = &cl->regions[op->region];
	r->dying = true;
	r->dereg = op;
	cl->n_dying++;
	if (r->users == 0)
		region_drop(lc, cl, r);
}

void
rn_lcore_client_reg_command(struct rn_lcore *lc,
			    const struct rn_lcore_cmd *cmd)
{
	struct rn_client_reg_op *op = (void *)(uintptr_t)cmd->cookie;

	if (cmd->type == RN_LCORE_CMD_CLIENT_REG)
		answer_reg(lc, RN_LCORE_EVENT_CLIENT_REGISTERED,
			   region_reg(lc, op), op);
	else
		region_dereg(lc, op);
}

/* ---- batches ---- */

static struct rn_client_xfer_slot *
slot_at(const struct cx_client *cl, uint32_t slot)
{
	return (struct rn_client_xfer_slot *)(cl->xfer +
					      (uint64_t)slot * cl->slot_size);
}

/* A batch's result into its slot s: status last (release), the slot the
 * client's again from then on. */
static void
slot_result(struct rn_client_xfer_slot *s, int status, uint64_t bytes,
	    int notify_status)
{
	s->bytes_done = bytes;
	s->notify_status = notify_status;
	__atomic_store_n(&s->status, status, __ATOMIC_RELEASE);
}

/* The final status of the batch in slot of cl, for its client: the slot's
 * result (status last), and XFER_DONE. */
static void
report(struct rn_lcore *lc, struct cx_client *cl, uint32_t slot,
       uint64_t cookie, int status, uint64_t bytes, int notify_status)
{
	struct rn_client_entry e = { .type = RN_CLIENT_ENTRY_XFER_DONE,
				     .ep_index = (uint16_t)slot,
				     .status = status, .cookie = cookie };

	if (slot < cl->n_slots)
		slot_result(slot_at(cl, slot), status, bytes, notify_status);
	/* Without room for XFER_DONE the client still learns it from the
	 * slot, but only if woken: it may sleep in rn_client_batch_wait(). */
	if (!cl->removing &&
	    !rn_lcore_client_xfer_done(lc, cl->cslot, cl->id, &e) &&
	    slot < cl->n_slots)
		rn_client_link_wake(cl->link);
}

/* Nothing of cl in use here any more: its regions deregistered, its
 * memory freed; CLIENT_REMOVED to be sent by the caller. */
static void
client_free(struct rn_lcore *lc, struct cx_client *cl)
{
	struct rn_lcore_cxfer *cx = lc->cxfer;
	struct cx_client **link = &cx->head;

	for (uint32_t i = 0; i < RN_CLIENT_MAX_REGIONS; i++)
		if (cl->regions[i].live)
			region_drop(lc, cl, &cl->regions[i]);
	for (uint32_t i = 0; cl->batches != NULL && i < cl->n_slots; i++) {
		struct cx_batch *cb = cl->batches[i];

		if (cb == NULL)
			continue;
		rte_free(cb->entries);
		rte_free(cb->bytes);
		rte_free(cb);
	}
	rte_free(cl->batches);
	while (*link != cl)
		link = &(*link)->next;
	*link = cl->next;
	if (cx->last == cl)
		cx->last = NULL;
	rte_free(cl);
}

/* The engine's hook at a batch's final status. */
static void
batch_done(struct rn_lcore *lc, struct rn_xfer_batch *b)
{
	struct cx_batch *cb = (struct cx_batch *)b;
	struct cx_client *cl = cb->cl;

	report(lc, cl, cb->slot, b->cookie, (int)b->status, b->bytes_done,
	       cb->has_note ? b->notify_status : 0);
	cb->busy = false;
	cl->in_flight--;
	if (unlikely(cl->n_dying != 0))
		regions_reap(lc, cl);
	if (unlikely(cl->removing) && cl->in_flight == 0) {
		const struct rn_client_link *link = cl->link;

		/* Must arrive: the control thread frees link after it. */
		client_free(lc, cl);
		rn_lcore_post_wait(lc, RN_LCORE_EVENT_CLIENT_REMOVED, 0, link);
	}
}

/* cl's batch of slot, with room for n entries and bytes bytes. */
static struct cx_batch *
batch_of(struct cx_client *cl, uint32_t slot, uint32_t n, uint64_t bytes)
{
	struct cx_batch *cb = cl->batches[slot];

	if (cb == NULL) {
		cb = rte_zmalloc("rn_cxfer_batch", sizeof(*cb), 0);
		if (cb == NULL)
			return NULL;
		cb->cl = cl;
		cb->slot = slot;
		cl->batches[slot] = cb;
	}
	if (n > cb->cap_entries) {
		rte_free(cb->entries);
		cb->cap_entries = 0;
		cb->entries = rte_malloc("rn_cxfer_entries",
					 (size_t)n * sizeof(cb->entries[0]), 0);
		if (cb->entries == NULL)
			return NULL;
		cb->cap_entries = n;
	}
	if (bytes > cb->cap_bytes) {
		rte_free(cb->bytes);
		cb->cap_bytes = 0;
		cb->bytes = rte_malloc("rn_cxfer_bytes", bytes, 0);
		if (cb->bytes == NULL)
			return NULL;
		cb->cap_bytes = bytes;
	}
	return cb;
}

/* The endpoint e names, for cl's batches: as lcore_client.c's sends. */
static int
endpoint_of(struct rn_lcore *lc, const struct rn_client_entry *e,
	    uint32_t tag, struct rn_lcore_ep **out)
{
	struct rn_lcore_ep *ep;

	if (e->ep_index >= RN_MAX_ENDPOINTS)
		return -ENOENT;
	ep = lc->by_index[e->ep_index];
	if (ep == NULL)
		return -ENOTCONN;      /* failed, closing, or not this lcore's */
	if (ep->req->peer_tag != tag)
		return -ENOENT;        /* another peer has that index now */
	if (ep->n.state != RN_CHANNEL_NATIVE)
		return -ENOTSUP;
	*out = ep;
	return 0;
}

/* Decode cb's descriptors (n of them, at p) and check them against ep. */
static int
remotes_read(struct cx_batch *cb, const uint8_t *p, uint32_t n,
	     const struct rn_lcore_ep *ep)
{
	for (uint32_t i = 0; i < n; i++) {
		struct rn_xfer_remote *rem = &cb->remotes[i];

		if (rn_xfer_desc_decode(p + (size_t)i * RN_XFER_DESC_SIZE,
					RN_XFER_DESC_SIZE, rem) != 0)
			return -EBADMSG;
		if (strncmp(rem->node, ep->req->remote.name,
			    sizeof(rem->node)) != 0)
			return -EINVAL;
		/* Keys of another life of the peer name nothing, or another
		 * region: refused before any range is looked at. */
		if (rem->session_id != ep->req->remote.session_id)
			return -ESTALE;
	}
	return 0;
}

/* cb's triples (q's, at p) into its entries: ranges checked. */
static int
entries_read(struct cx_client *cl, struct cx_batch *cb,
	     const struct rn_client_xfer_req *q, const uint8_t *p)
{
	uint32_t access = q->kind == RN_CLIENT_READ ? RN_ACCESS_LOCAL_WRITE : 0;

	for (uint32_t i = 0; i < q->n_entries; i++) {
		struct rn_client_xfer_triple t;
		const struct rn_xfer_remote *rem;
		struct cx_region *r;

		memcpy(&t, p + (size_t)i * sizeof(t), sizeof(t));
		if (t.remote_index >= q->n_remotes || t.length == 0)
			return -EINVAL;
		rem = &cb->remotes[t.remote_index];
		if (t.remote < rem->addr || t.length > rem->length ||
		    t.remote - rem->addr > rem->length - t.length)
			return -EINVAL;
		r = region_of(cl, t.local, t.length, access);
		if (r == NULL)
			return -EINVAL;
		cb->entries[i] = (struct rn_xfer_entry){
			.laddr = t.local, .raddr = t.remote,
			.length = t.length, .lkey = r->mr.lkey,
			.remote = rem, .users = &r->users };
	}
	return 0;
}

/*
 * The batch of e's slot, copied and checked into cb (*out), its regions'
 * users counted; or the refusal.
 */
static int
batch_build(struct rn_lcore *lc, struct cx_client *cl,
	    const struct rn_client_entry *e, struct cx_batch **out,
	    bool *has_note)
{
	struct rn_client_xfer_slot *s = slot_at(cl, e->slot);
	const uint32_t fail_len = sizeof(RN_XFER_FAILED_NAME) - 1;
	struct rn_client_xfer_req q;
	struct rn_lcore_ep *ep = NULL;
	uint64_t descs, triples, note, body;
	struct cx_batch *cb;
	const uint8_t *agent;
	int rc;

	/* Once, into locals: the client may write it meanwhile. The barrier
	 * keeps the compiler from reading a field of s->req again in place
	 * of q's (as it did in lcore_client.c's send path). */
	memcpy(&q, &s->req, sizeof(q));
	rte_compiler_barrier();
	*has_note = q.note_agent_len != 0;
	rc = endpoint_of(lc, e, q.ep_tag, &ep);
	if (rc != 0)
		return rc;
	if ((q.kind != RN_CLIENT_WRITE && q.kind != RN_CLIENT_READ) ||
	    q.n_remotes == 0 || q.n_remotes > RN_CLIENT_XFER_MAX_REMOTES ||
	    q.n_entries == 0 || q.note_agent_len > RN_CLIENT_AGENT_MAX ||
	    (q.note_agent_len == 0 &&
	     (q.note_name_len != 0 || q.note_msg_len != 0)))
		return -EINVAL;
	descs = (uint64_t)q.n_remotes * RN_XFER_DESC_SIZE;
	triples = (uint64_t)q.n_entries * sizeof(struct rn_client_xfer_triple);
	note = (uint64_t)q.note_agent_len + q.note_name_len + q.note_msg_len;
	body = descs + triples + note;
	if (BODY_OFF + body > cl->slot_size)
		return -EINVAL;
	cb = batch_of(cl, e->slot, q.n_entries,
		      body + (q.note_agent_len != 0 ? fail_len + q.note_name_len :
						      0));
	if (cb == NULL)
		return -ENOMEM;
	/* The one copy out of shared memory: all below reads cb's. */
	memcpy(cb->bytes, (const uint8_t *)s + BODY_OFF, body);
	rc = remotes_read(cb, cb->bytes, q.n_remotes, ep);
	if (rc == 0)
		rc = entries_read(cl, cb, &q, cb->bytes + descs);
	if (rc != 0)
		return rc;
	agent = cb->bytes + descs + triples;
	cb->has_note = q.note_agent_len != 0;
	cb->b = (struct rn_xfer_batch){
		.op.type = RN_XFER_OP_BATCH, .ep_index = e->ep_index,
		.kind = q.kind == RN_CLIENT_READ ? RN_XFER_READ : RN_XFER_WRITE,
		.n_entries = q.n_entries, .entries = cb->entries,
		.chunk_size = RN_XFER_CLIENT_CHUNK,
		.cookie = e->cookie, .on_final = batch_done,
		.cancel_at = &s->cancel, .status = RN_XFER_PENDING,
	};
	if (cb->has_note) {
		uint8_t *fail = cb->bytes + body;

		cb->b.note_agent = agent;
		cb->b.note_agent_len = q.note_agent_len;
		cb->b.note_src = (const uint8_t *)cl->link->agent;
		cb->b.note_src_len = cl->link->agent_len;
		cb->b.note_name = agent + q.note_agent_len;
		cb->b.note_name_len = q.note_name_len;
		cb->b.note_msg = cb->b.note_name + q.note_name_len;
		cb->b.note_msg_len = q.note_msg_len;
		/* The failure notice's body: its name, then the note's. */
		memcpy(fail, RN_XFER_FAILED_NAME, fail_len);
		memcpy(fail + fail_len, cb->b.note_name, q.note_name_len);
		cb->b.note_fail = fail;
	}
	for (uint32_t i = 0; i < q.n_entries; i++)
		(*cb->entries[i].users)++;
	*out = cb;
	return 0;
}

/*
 * The batch of e refused before this lcore has a record or a slot table
 * of link's client to report it by (no memory), or before it is looked
 * at (a slot out of range, or one whose batch runs still): XFER_DONE.
 * When the slot is one of link's on this lcore and no batch runs in it
 * (slot_free), the slot gets the result first and, if XFER_DONE finds the
 * deliver ring full, the client a wake-up, as report() does: a client
 * that waits for the batch learns of it either way. A slot out of range,
 * or busy, has no result to write: XFER_DONE alone says so (the library
 * never submits either).
 */
static void
refuse_early(struct rn_lcore *lc, const struct rn_client_link *link,
	     uint32_t cslot, uint32_t id, const struct rn_client_entry *e,
	     int status, bool slot_free)
{
	struct rn_client_entry done = { .type = RN_CLIENT_ENTRY_XFER_DONE,
					.ep_index = (uint16_t)e->slot,
					.status = status, .cookie = e->cookie };
	struct cx_shape sh;
	bool wrote = false;

	if (slot_free && shape_read(lc, link, &sh) && e->slot < sh.n_slots) {
		struct rn_client_xfer_slot *s = (struct rn_client_xfer_slot *)
			(sh.xfer + (uint64_t)e->slot * sh.slot_size);
		uint8_t note = __atomic_load_n(&s->req.note_agent_len,
					       __ATOMIC_RELAXED);

		/* Its notification was not sent, for this reason. */
		slot_result(s, status, 0, note != 0 ? status : 0);
		wrote = true;
	}
	if (!rn_lcore_client_xfer_done(lc, cslot, id, &done) && wrote)
		rn_client_link_wake(link);
}

void
rn_lcore_client_xfer(struct rn_lcore *lc, const struct rn_client_link *link,
		     uint32_t cslot, uint32_t id, const struct rn_client_entry *e)
{
	struct cx_client *cl = client_of(lc, link, true);
	struct cx_batch *cb = NULL;
	bool has_note = false;
	int rc;

	/* No record: no batch of the client runs here. */
	if (unlikely(cl == NULL)) {
		refuse_early(lc, link, cslot, id, e, -ENOMEM, true);
		return;
	}
	cl->cslot = cslot;
	cl->id = id;
	if (unlikely(cl->xfer == NULL)) {
		struct cx_shape sh;

		/* Again: the memory for its slot table may be there now.
		 * Without the table no batch of the client runs here. */
		read_shape(lc, cl);
		if (cl->xfer == NULL) {
			refuse_early(lc, link, cslot, id, e,
				     shape_read(lc, link, &sh) ? -ENOMEM :
				     -ENOTSUP, true);
			return;
		}
	}
	if (unlikely(e->slot >= cl->n_slots ||
		     (cl->batches[e->slot] != NULL &&
		      cl->batches[e->slot]->busy))) {
		refuse_early(lc, link, cslot, id, e,
			     e->slot >= cl->n_slots ? -EINVAL : -EBUSY, false);
		return;
	}
	rc = batch_build(lc, cl, e, &cb, &has_note);
	if (rc == 0) {
		rc = rn_lcore_xfer_accept(lc, &cb->b);
		if (rc != 0)
			for (uint32_t i = 0; i < cb->b.n_entries; i++)
				(*cb->entries[i].users)--;
	}
	if (unlikely(rc != 0)) {
		/* Refused: final at once; a notification it carried was not
		 * sent, for this reason. */
		report(lc, cl, e->slot, e->cookie, rc, 0, has_note ? rc : 0);
		if (cl->n_dying != 0)
			regions_reap(lc, cl);
		return;
	}
	cb->busy = true;
	cl->in_flight++;
}

bool
rn_lcore_client_xfer_remove(struct rn_lcore *lc,
			    const struct rn_client_link *link)
{
	struct cx_client *cl = client_of(lc, link, false);

	if (cl == NULL)
		return true;
	cl->removing = true;
	if (cl->in_flight == 0) {
		client_free(lc, cl);
		return true;
	}
	/* Cancelled, and what is left of them does not wait for credits. */
	for (uint32_t i = 0; i < cl->n_slots; i++) {
		struct cx_batch *cb = cl->batches[i];

		if (cb != NULL && cb->busy) {
			cb->b.cancel_at = &cl->cancel_all;
			cb->b.no_wait = true;
		}
	}
	return false;
}

void
rn_lcore_client_xfer_fini(struct rn_lcore *lc)
{
	struct rn_lcore_cxfer *cx = lc->cxfer;

	if (cx == NULL)
		return;
	/* The endpoints are gone: every batch is final. */
	while (cx->head != NULL) {
		cx->head->removing = true;
		client_free(lc, cx->head);
	}
	rte_free(cx);
	lc->cxfer = NULL;
}
