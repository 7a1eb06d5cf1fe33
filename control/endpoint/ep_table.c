/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint table: endpoints by endpoint index, their name index, and the
 * snapshot telemetry and applications read. Control thread only, except
 * rn_plane_snapshot(), rn_plane_lookup(), rn_plane_name() and
 * rn_plane_generation(), which any thread may call.
 */
#include <errno.h>
#include <inttypes.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_per_lcore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint_pvt.h"

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

/* Index ep under its name. Returns 0 or a negative errno. */
static int
index_name(struct rn_plane *pl, const struct rn_endpoint *ep)
{
	char key[RN_EP_NAME_SIZE];

	if (!name_key(ep->name, key))
		return -ENAMETOOLONG;
	return rte_hash_add_key_data(pl->names, key,
				     (void *)(uintptr_t)ep->index);
}

/*
 * Take ep's name out of the index. Its key's storage is freed at once:
 * an application thread that is reading it can at worst be told the
 * endpoint index of the name it no longer has, and rn_plane_lookup()
 * checks the name.
 */
static void
unindex_name(struct rn_plane *pl, const struct rn_endpoint *ep)
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

/*
 * A full table takes back the endpoint index of a peer that called us
 * once and is gone (closed, nothing left on its lcore): callers cannot
 * fill the table for good. Events still in flight for the old one name
 * their request, which no longer matches, and are ignored.
 */
static struct rn_endpoint *
reclaim(struct rn_plane *pl, const char *name)
{
	for (unsigned int i = 0; i < pl->n_eps; i++) {
		struct rn_endpoint *ep = pl->eps[i];
		uint32_t ep_index = ep->index, generation = ep->generation;

		if (ep->configured || ep->state != RN_EP_CLOSED ||
		    ep->req != NULL || ep->conn != NULL)
			continue;
		unindex_name(pl, ep);
		memset(ep, 0, sizeof(*ep));
		ep->index = ep_index;
		/* Generations of an endpoint index only grow, whoever holds it: what is
		 * left of the last holder's (deliveries, completions) is
		 * always older. */
		ep->generation = generation;
		snprintf(ep->name, sizeof(ep->name), "%s", name);
		if (index_name(pl, ep) != 0)
			return NULL;   /* cannot be: a key was just freed */
		ep->lcore = ep_index % pl->n_workers;
		ep->backoff_ms = pl->cfg->control.reconnect_min_ms;
		ep->info.transitions[RN_EP_IDLE] = 1;
		rn_ep_publish(pl, ep);
		return ep;
	}
	return NULL;
}

struct rn_endpoint *
rn_ep_add(struct rn_plane *pl, const char *name)
{
	struct rn_endpoint *ep;

	if (pl->n_eps == RN_MAX_ENDPOINTS)
		return reclaim(pl, name);
	ep = calloc(1, sizeof(*ep));
	if (ep == NULL)
		return NULL;
	ep->index = pl->n_eps;
	snprintf(ep->name, sizeof(ep->name), "%s", name);
	if (index_name(pl, ep) != 0) {
		free(ep);
		return NULL;
	}
	/* Spread endpoints over the workers; an endpoint never moves. */
	ep->lcore = ep->index % pl->n_workers;
	ep->backoff_ms = pl->cfg->control.reconnect_min_ms;
	ep->state = RN_EP_IDLE;
	ep->info.transitions[RN_EP_IDLE] = 1;
	pl->eps[pl->n_eps++] = ep;
	rn_ep_publish(pl, ep);
	return ep;
}

void
rn_ep_publish(struct rn_plane *pl, struct rn_endpoint *ep)
{
	struct rn_ep_info *info = &ep->info;

	snprintf(info->name, sizeof(info->name), "%s", ep->name);
	snprintf(info->address, sizeof(info->address), "%s", ep->address);
	info->configured = ep->configured;
	info->state = ep->state;
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
}

unsigned int
rn_plane_snapshot(struct rn_plane *pl, struct rn_ep_info *out,
		  unsigned int max)
{
	unsigned int n;
	uint32_t seq;

	do {
		seq = rte_seqlock_read_begin(&pl->snapshot_lock);
		n = RTE_MIN(pl->n_snapshot, max);
		memcpy(out, pl->snapshot, n * sizeof(*out));
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
