/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint table: endpoints by endpoint index, their name index, peer
 * tags, the snapshot telemetry and applications read, and the endpoint
 * table of the clients' status page. Control thread only, except
 * rn_plane_snapshot(), rn_plane_lookup(), rn_plane_name() and
 * rn_plane_generation(), which any thread may call.
 *
 * An endpoint index is bound to a peer name (configured, a caller we did
 * not configure, or added at run time) with a new tag each time; a
 * client's send names (index, tag), so a send meant for a peer that was
 * removed never reaches the next peer bound to that index.
 */
#include <errno.h>
#include <inttypes.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_per_lcore.h>
#include <rte_seqcount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint_pvt.h"
#include "rn_client_shm.h"

/*
 * The key of name in pl->names: the name zero-padded to the size of an
 * endpoint's name. False when it is too long to be one.
 */
static bool
name_key(const char *name, char key[RN_EP_NAME_SIZE])
{
	size_t len = strnlen(name, RN_EP_NAME_SIZE);

	if (len == RN_EP_NAME_SIZE)
		return false;
	memset(key, 0, RN_EP_NAME_SIZE);
	memcpy(key, name, len);
	return true;
}

/*
 * Application threads look peers up by name on every send: a hash, not a
 * walk over every endpoint. Lock-free readers, one writer (the control
 * thread); twice the endpoints and extendable buckets, so that adding a
 * name never fails for want of room.
 */
int
rn_ep_table_init(struct rn_plane *pl)
{
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters params = {
		.name = name, .entries = 2 * RN_MAX_ENDPOINTS,
		.key_len = RN_EP_NAME_SIZE, .hash_func = rte_hash_crc,
		.socket_id = SOCKET_ID_ANY,
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF |
			      RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};

	/* Unique in the process: one plane per daemon, but tests make more. */
	snprintf(name, sizeof(name), "rn_names_%" PRIxPTR, (uintptr_t)pl);
	pl->names = rte_hash_create(&params);
	return pl->names != NULL ? 0 : -ENOMEM;
}

void
rn_ep_table_fini(struct rn_plane *pl)
{
	rte_hash_free(pl->names);
	pl->names = NULL;
}

/* Index endpoint index ep_index under name. Returns 0 or a negative errno. */
static int
index_name(struct rn_plane *pl, const char *name, uint32_t ep_index)
{
	char key[RN_EP_NAME_SIZE];

	if (!name_key(name, key))
		return -ENAMETOOLONG;
	return rte_hash_add_key_data(pl->names, key, (void *)(uintptr_t)ep_index);
}

/*
 * Take ep's name out of the index. Its key's storage is freed at once:
 * an application thread that is reading it can at worst be told the
 * endpoint index of the name it no longer has, and rn_plane_lookup()
 * checks the name.
 */
void
rn_ep_unname(struct rn_plane *pl, struct rn_endpoint *ep)
{
	char key[RN_EP_NAME_SIZE];
	int32_t pos;

	if (!name_key(ep->name, key))
		return;
	pos = rte_hash_del_key(pl->names, key);
	if (pos >= 0)
		rte_hash_free_key_with_position(pl->names, pos);
}

struct rn_endpoint *
rn_ep_find(struct rn_plane *pl, const char *name)
{
	char key[RN_EP_NAME_SIZE];
	void *ep_index;

	if (!name_key(name, key) ||
	    rte_hash_lookup_data(pl->names, key, &ep_index) < 0)
		return NULL;
	return pl->eps[(uintptr_t)ep_index];
}

/* A new tag: never 0, which marks a free index. After 2^32 - 1 bindings
 * tags come round again; an index meets its old tag only after all of
 * them. */
static uint32_t
next_tag(struct rn_plane *pl)
{
	if (++pl->last_tag == 0)
		pl->last_tag = 1;
	return pl->last_tag;
}

/*
 * Forget everything of ep's binding but its index and its generation:
 * generations of an endpoint index only grow, whoever holds it, so what is
 * left of the last holder's (deliveries, completions) is always older.
 * Connections that still point at it (a caller in its handshake) close.
 */
static void
reset(struct rn_plane *pl, struct rn_endpoint *ep)
{
	uint32_t ep_index = ep->index, generation = ep->generation;
	struct rn_conn *c, *next;

	for (c = pl->conns.live; c != NULL; c = next) {
		next = c->next;   /* c may close */
		if (c->ep == ep)
			rn_ep_close_conn(c);
	}
	memset(ep, 0, sizeof(*ep));
	ep->index = ep_index;
	ep->generation = generation;
	/* Spread endpoints over the workers; an endpoint never moves. */
	ep->lcore = ep_index % pl->n_workers;
	ep->backoff_ms = pl->cfg->control.reconnect_min_ms;
}

/*
 * A full table takes back the endpoint index of a peer that called us
 * once and is gone (closed, nothing left on its lcore): callers cannot
 * fill the table for good. Its clients hear that it was removed.
 */
static struct rn_endpoint *
reclaim(struct rn_plane *pl)
{
	for (unsigned int i = 0; i < pl->n_eps; i++) {
		struct rn_endpoint *ep = pl->eps[i];

		if (ep->tag == 0 || ep->configured || ep->removed ||
		    ep->state != RN_EP_CLOSED || ep->req != NULL ||
		    ep->conn != NULL || ep->requests_out != 0)
			continue;
		RN_PLANE_LOG(NOTICE, "endpoint %s: closed and not ours to "
			     "call; its index goes to a new peer", ep->name);
		rn_ep_tell(pl, ep, RN_CLIENT_EVENT_PEER_REMOVED);
		rn_ep_unname(pl, ep);
		return ep;
	}
	return NULL;
}

/* The index for a new binding: the lowest free one, else a new one. */
static int
free_index(struct rn_plane *pl, struct rn_endpoint **out)
{
	struct rn_endpoint *ep;

	for (unsigned int i = 0; i < pl->n_eps; i++) {
		if (pl->eps[i]->tag == 0) {
			*out = pl->eps[i];
			return 0;
		}
	}
	if (pl->n_eps == RN_MAX_ENDPOINTS) {
		*out = reclaim(pl);
		return *out != NULL ? 0 : -ENOSPC;
	}
	ep = calloc(1, sizeof(*ep));
	if (ep == NULL)
		return -ENOMEM;
	ep->index = pl->n_eps;
	pl->eps[pl->n_eps++] = ep;
	*out = ep;
	return 0;
}

int
rn_ep_bind(struct rn_plane *pl, const char *name, struct rn_endpoint **out)
{
	struct rn_endpoint *ep;
	int rc;

	if (strnlen(name, RN_EP_NAME_SIZE) == RN_EP_NAME_SIZE)
		return -ENAMETOOLONG;
	rc = free_index(pl, &ep);
	if (rc != 0)
		return rc;
	reset(pl, ep);
	rc = index_name(pl, name, ep->index);
	if (rc != 0) {
		rn_ep_publish(pl, ep);   /* free it stays */
		return rc;   /* cannot be: twice the room, extendable */
	}
	snprintf(ep->name, sizeof(ep->name), "%s", name);
	ep->tag = next_tag(pl);
	ep->state = RN_EP_IDLE;
	ep->info.transitions[RN_EP_IDLE] = 1;
	rn_ep_publish(pl, ep);
	*out = ep;
	return 0;
}

struct rn_endpoint *
rn_ep_add(struct rn_plane *pl, const char *name)
{
	struct rn_endpoint *ep;

	return rn_ep_bind(pl, name, &ep) == 0 ? ep : NULL;
}

void
rn_ep_release(struct rn_plane *pl, struct rn_endpoint *ep)
{
	reset(pl, ep);
	ep->state = RN_EP_CLOSED;
	rn_ep_publish(pl, ep);
}

/*
 * What a client may do with ep (rn_client_shm.h), from its state alone:
 * a send to IDLE asks to connect, to CONNECTING waits, NATIVE goes,
 * NO_NATIVE cannot go natively, DOWN fails at once until the endpoint is
 * connected again. CLOSED is IDLE for a peer we call (a send calls it
 * again), DOWN for one that calls us.
 */
static uint8_t
client_state(const struct rn_endpoint *ep)
{
	if (ep->tag == 0)
		return RN_CLIENT_EP_FREE;
	if (ep->removed)
		return RN_CLIENT_EP_DOWN;
	switch (ep->state) {
	case RN_EP_IDLE:
		return RN_CLIENT_EP_IDLE;
	case RN_EP_CONNECTING:
		return RN_CLIENT_EP_CONNECTING;
	case RN_EP_CONNECTED:
		return ep->native ? RN_CLIENT_EP_NATIVE : RN_CLIENT_EP_NO_NATIVE;
	case RN_EP_CLOSED:
		return ep->configured ? RN_CLIENT_EP_IDLE : RN_CLIENT_EP_DOWN;
	default:   /* closing, failed, reconnecting */
		return RN_CLIENT_EP_DOWN;
	}
}

/*
 * ep's entry of the clients' status page, when it changed. The entry's seq
 * is an rte_seqcount_t (the layout fits: one uint32_t): write_begin makes
 * it odd and its release fence orders it before the entry's stores;
 * write_end's release store makes it even again after them, and pairs
 * with a reader's rte_seqcount_read_begin() (acquire); the reader's
 * rte_seqcount_read_retry() (acquire fence, then seq again) finds any
 * write that overlapped its copy. One writer: the control thread.
 * n_endpoints (the highest index bound + 1) is stored with release after
 * the entry, so a reader that loads it with acquire sees the entries below
 * it written.
 */
static void
page_write(struct rn_plane *pl, const struct rn_endpoint *ep,
	   const char *name)
{
	struct rn_client_status_page *page = pl->page;
	struct rn_client_status_ep *e = &page->ep[ep->index];
	rte_seqcount_t *seq = (rte_seqcount_t *)&e->seq;
	uint8_t state = client_state(ep);

	RTE_BUILD_BUG_ON(sizeof(rte_seqcount_t) != sizeof(e->seq));
	RTE_BUILD_BUG_ON(RN_CLIENT_STATUS_ENDPOINTS != RN_MAX_ENDPOINTS);
	RTE_BUILD_BUG_ON(RN_CLIENT_NODE_MAX + 1 != RN_EP_NAME_SIZE);
	/* Written only when what clients see changed: a seq that moves
	 * means a change. */
	if (e->tag != ep->tag || e->state != state || e->lcore != ep->lcore ||
	    strncmp(e->name, name, sizeof(e->name)) != 0) {
		rte_seqcount_write_begin(seq);
		e->tag = ep->tag;
		e->lcore = (uint16_t)ep->lcore;
		e->state = state;
		memset(e->name, 0, sizeof(e->name));
		memcpy(e->name, name, strnlen(name, sizeof(e->name) - 1));
		rte_seqcount_write_end(seq);
	}
	if (ep->tag != 0 && ep->index >= pl->page_n)
		pl->page_n = ep->index + 1;
	while (pl->page_n > 0 && page->ep[pl->page_n - 1].tag == 0)
		pl->page_n--;
	__atomic_store_n(&page->n_endpoints, pl->page_n, __ATOMIC_RELEASE);
}

void
rn_plane_set_clients(struct rn_plane *pl, struct rn_client_status_page *page,
		     void (*observer)(void *arg, uint32_t ep_index, int event),
		     void *arg)
{
	pl->page = page;
	pl->page_n = 0;
	pl->observer = observer;
	pl->observer_arg = arg;
	for (unsigned int i = 0; page != NULL && i < pl->n_eps; i++)
		rn_ep_publish(pl, pl->eps[i]);
}

void
rn_ep_publish(struct rn_plane *pl, struct rn_endpoint *ep)
{
	struct rn_ep_info *info = &ep->info;
	/* A removed peer's name is gone at once; its index only once the
	 * lcore gave its QPs back. */
	const char *name = ep->removed ? "" : ep->name;

	snprintf(info->name, sizeof(info->name), "%s", name);
	snprintf(info->address, sizeof(info->address), "%s", ep->address);
	info->configured = ep->configured;
	info->state = ep->state;
	info->tag = ep->tag;
	info->generation = ep->generation;
	info->peer_session = ep->peer_session;
	info->peer_generation = ep->peer_generation;
	info->peer_caps = ep->peer_caps;
	info->native = ep->native;
	info->lcore = pl->workers[ep->lcore]->lcore_id;
	info->worker = ep->lcore;
	rte_seqlock_write_lock(&pl->snapshot_lock);
	pl->snapshot[ep->index] = *info;
	if (ep->index >= pl->n_snapshot)
		pl->n_snapshot = ep->index + 1;
	rte_seqlock_write_unlock(&pl->snapshot_lock);
	if (pl->page != NULL)
		page_write(pl, ep, name);
}

unsigned int
rn_plane_snapshot(struct rn_plane *pl, struct rn_ep_info *out,
		  unsigned int max)
{
	unsigned int n;
	uint32_t seq;

	/* Free indexes (no name) are left out. */
	do {
		seq = rte_seqlock_read_begin(&pl->snapshot_lock);
		n = 0;
		for (unsigned int i = 0; i < pl->n_snapshot && n < max; i++)
			if (pl->snapshot[i].name[0] != '\0')
				out[n++] = pl->snapshot[i];
	} while (rte_seqlock_read_retry(&pl->snapshot_lock, seq));
	return n;
}

/*
 * Whether the endpoint published at ep_index is named key: its state and
 * worker when so. The endpoint index may have been given to another name
 * since the name index or a guess pointed at it. Both names are
 * zero-padded: the published one from a zeroed endpoint.
 */
static bool
index_named(struct rn_plane *pl, uint32_t ep_index,
	    const char key[RN_EP_NAME_SIZE], enum rn_ep_state *state,
	    uint32_t *worker)
{
	const struct rn_ep_info *info = &pl->snapshot[ep_index];
	uint32_t seq;
	bool named;

	do {
		seq = rte_seqlock_read_begin(&pl->snapshot_lock);
		named = memcmp(info->name, key, RN_EP_NAME_SIZE) == 0;
		*state = info->state;
		*worker = info->worker;
	} while (rte_seqlock_read_retry(&pl->snapshot_lock, seq));
	return named;
}

/*
 * Where each application thread last found a few names, by a cheap mix of
 * the key: a thread that sends to the same peers again skips the index's
 * hash (most of a lookup's cost: docs/performance.md). A guess is only a
 * guess, checked against the published name like any endpoint index the
 * name index gives, so a stale one (another plane, an endpoint index given
 * to another name) costs a lookup in the name index, never a wrong
 * answer.
 */
#define LOOKUP_GUESS_BITS 6
static RTE_DEFINE_PER_LCORE(uint16_t, lookup_guess[1u << LOOKUP_GUESS_BITS]);

static uint16_t *
guess_of(const char key[RN_EP_NAME_SIZE])
{
	uint64_t w[4];

	RTE_BUILD_BUG_ON(sizeof(w) != RN_EP_NAME_SIZE);
	memcpy(w, key, sizeof(w));
	return &RTE_PER_LCORE(lookup_guess)[((w[0] ^ w[1] ^ w[2] ^ w[3]) *
					     0x9e3779b97f4a7c15ull) >>
					    (64 - LOOKUP_GUESS_BITS)];
}

int
rn_plane_lookup(struct rn_plane *pl, const char *name, uint32_t *ep_index,
		enum rn_ep_state *state, uint32_t *worker)
{
	char key[RN_EP_NAME_SIZE];
	uint16_t *guess;
	void *found;

	RTE_BUILD_BUG_ON(RN_MAX_ENDPOINTS > UINT16_MAX + 1);
	if (!name_key(name, key))
		return -ENOENT;
	guess = guess_of(key);
	if (*guess < RN_MAX_ENDPOINTS &&
	    index_named(pl, *guess, key, state, worker)) {
		*ep_index = *guess;
		return 0;
	}
	if (rte_hash_lookup_data(pl->names, key, &found) < 0 ||
	    !index_named(pl, (uint32_t)(uintptr_t)found, key, state, worker))
		return -ENOENT;
	*guess = (uint16_t)(uintptr_t)found;
	*ep_index = (uint32_t)(uintptr_t)found;
	return 0;
}

uint32_t
rn_plane_generation(struct rn_plane *pl, uint32_t ep_index)
{
	uint32_t seq, generation;

	do {
		seq = rte_seqlock_read_begin(&pl->snapshot_lock);
		generation = pl->snapshot[ep_index].generation;
	} while (rte_seqlock_read_retry(&pl->snapshot_lock, seq));
	return generation;
}

void
rn_plane_name(struct rn_plane *pl, uint32_t ep_index, char *buf)
{
	uint32_t seq;

	do {
		seq = rte_seqlock_read_begin(&pl->snapshot_lock);
		memcpy(buf, pl->snapshot[ep_index].name, RN_EP_NAME_SIZE);
	} while (rte_seqlock_read_retry(&pl->snapshot_lock, seq));
	buf[RN_EP_NAME_SIZE - 1] = '\0';
}
