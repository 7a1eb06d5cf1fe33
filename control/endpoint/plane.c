/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plane: its listener, its table of endpoints (by peer name) and the
 * snapshot telemetry and applications read. Control thread only, except
 * rn_plane_snapshot(), rn_plane_lookup(), rn_plane_name() and
 * rn_plane_generation(), which any thread may call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_per_lcore.h>
#include <rte_random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "plane.h"

RTE_LOG_REGISTER_SUFFIX(rn_plane_logtype, endpoint, INFO);

uint64_t
rn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *const state_names[] = {
	[RN_EP_IDLE] = "idle", [RN_EP_CONNECTING] = "connecting",
	[RN_EP_CONNECTED] = "connected", [RN_EP_CLOSING] = "closing",
	[RN_EP_CLOSED] = "closed", [RN_EP_FAILED] = "failed",
	[RN_EP_RECONNECTING] = "reconnecting",
};

const char *
rn_ep_state_name(enum rn_ep_state state)
{
	return state_names[state];
}

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
static struct rte_hash *
create_name_index(const struct rn_plane *pl)
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
	return rte_hash_create(&params);
}

/* Index ep under its name. Returns 0 or a negative errno. */
static int
index_name(struct rn_plane *pl, const struct rn_endpoint *ep)
{
	char key[RN_EP_NAME_SIZE];

	if (!name_key(ep->name, key))
		return -ENAMETOOLONG;
	return rte_hash_add_key_data(pl->names, key,
				     (void *)(uintptr_t)ep->slot);
}

/*
 * Take ep's name out of the index. Its key's storage is freed at once:
 * an application thread that is reading it can at worst be told the slot
 * of the name it no longer has, and rn_plane_lookup() checks the name.
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
	void *slot;

	if (!name_key(name, key) || rte_hash_lookup_data(pl->names, key, &slot) < 0)
		return NULL;
	return pl->eps[(uintptr_t)slot];
}

/*
 * A full table takes back the slot of a peer that called us once and is
 * gone (closed, nothing left on its lcore): callers cannot fill the table
 * for good. Events still in flight for the old one name their request,
 * which no longer matches, and are ignored.
 */
static struct rn_endpoint *
reclaim(struct rn_plane *pl, const char *name)
{
	for (unsigned int i = 0; i < pl->n_eps; i++) {
		struct rn_endpoint *ep = pl->eps[i];
		uint32_t slot = ep->slot, generation = ep->generation;

		if (ep->configured || ep->state != RN_EP_CLOSED ||
		    ep->req != NULL || ep->conn != NULL)
			continue;
		unindex_name(pl, ep);
		memset(ep, 0, sizeof(*ep));
		ep->slot = slot;
		/* Generations of a slot only grow, whoever holds it: what is
		 * left of the last holder's (deliveries, completions) is
		 * always older. */
		ep->generation = generation;
		snprintf(ep->name, sizeof(ep->name), "%s", name);
		if (index_name(pl, ep) != 0)
			return NULL;   /* cannot be: a key was just freed */
		ep->lcore = slot % pl->n_workers;
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
	ep->slot = pl->n_eps;
	snprintf(ep->name, sizeof(ep->name), "%s", name);
	if (index_name(pl, ep) != 0) {
		free(ep);
		return NULL;
	}
	/* Spread endpoints over the workers; an endpoint never moves. */
	ep->lcore = ep->slot % pl->n_workers;
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
	pl->snapshot[ep->slot] = *info;
	if (ep->slot >= pl->n_snapshot)
		pl->n_snapshot = ep->slot + 1;
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
 * Whether the published slot is named key: its state and worker when so.
 * The slot may have been given to another name since the index or a guess
 * pointed at it. Both names are zero-padded: the published one from a
 * zeroed endpoint.
 */
static bool
slot_named(struct rn_plane *pl, uint32_t slot, const char key[RN_EP_NAME_SIZE],
	   enum rn_ep_state *state, uint32_t *worker)
{
	const struct rn_ep_info *info = &pl->snapshot[slot];
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
 * guess, checked against the published name like any slot the index
 * gives, so a stale one (another plane, a slot given to another name)
 * costs a lookup in the index, never a wrong answer.
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
rn_plane_lookup(struct rn_plane *pl, const char *name, uint32_t *slot,
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
	    slot_named(pl, *guess, key, state, worker)) {
		*slot = *guess;
		return 0;
	}
	if (rte_hash_lookup_data(pl->names, key, &found) < 0 ||
	    !slot_named(pl, (uint32_t)(uintptr_t)found, key, state, worker))
		return -ENOENT;
	*guess = (uint16_t)(uintptr_t)found;
	*slot = (uint32_t)(uintptr_t)found;
	return 0;
}

uint32_t
rn_plane_generation(struct rn_plane *pl, uint32_t slot)
{
	uint32_t seq, generation;

	do {
		seq = rte_seqlock_read_begin(&pl->snapshot_lock);
		generation = pl->snapshot[slot].generation;
	} while (rte_seqlock_read_retry(&pl->snapshot_lock, seq));
	return generation;
}

void
rn_plane_name(struct rn_plane *pl, uint32_t slot, char *buf)
{
	uint32_t seq;

	do {
		seq = rte_seqlock_read_begin(&pl->snapshot_lock);
		memcpy(buf, pl->snapshot[slot].name, RN_EP_NAME_SIZE);
	} while (rte_seqlock_read_retry(&pl->snapshot_lock, seq));
	buf[RN_EP_NAME_SIZE - 1] = '\0';
}

void
rn_plane_set_notify(struct rn_plane *pl, struct rte_ring *uses,
		    struct rte_ring *tcp_in, struct rte_ring *completions)
{
	pl->uses = uses;
	pl->tcp_in = tcp_in;
	pl->completions = completions;
}

/* Slots applications sent to while they were not connected. */
static void
serve_uses(struct rn_plane *pl)
{
	uint32_t slot;

	while (pl->uses != NULL &&
	       rte_ring_sc_dequeue_elem(pl->uses, &slot, sizeof(slot)) == 0)
		if (slot < pl->n_eps)
			rn_plane_use(pl, pl->eps[slot]->name);
}

static void
on_listen(struct rn_control *ctl, void *arg, uint32_t events)
{
	struct rn_plane *pl = arg;

	(void)ctl;
	(void)events;
	/* Free the connections closed since the last tick before taking new
	 * ones: each holds a whole receive buffer (RN_CONN_RX_MAX, 64 KiB),
	 * and a peer that connects and closes at once would otherwise leave
	 * a tick's worth of them (about 100 per 25 ms tick on loopback) for
	 * one free burst, a malloc high water that stays in RSS. Safe here
	 * as on a tick: a callback of its own, no connection on the stack. */
	rn_conn_reap(pl);
	for (;;) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		int fd = accept4(pl->listen_fd, (struct sockaddr *)&sa, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				/* Level-triggered: it would wake us at once.
				 * Listen again on a tick, when fds are back. */
				RN_PLANE_LOG(WARNING, "accept: %s; not "
					     "accepting for a tick",
					     strerror(errno));
				rn_control_unwatch(pl->ctl, pl->listen_fd);
				pl->listen_paused = true;
			}
			return;
		}
		if (pl->n_conns >= RN_MAX_CONNS || pl->shutting_down) {
			close(fd);
			continue;
		}
		rn_conn_accepted(pl, fd, (struct sockaddr *)&sa, len);
	}
}

static int
open_listener(struct rn_plane *pl, char *why, size_t why_len)
{
	const struct rn_control_config *cc = &pl->cfg->control;
	struct sockaddr_storage sa = { 0 };
	socklen_t len;
	int one = 1;
	int fd;

	if (strchr(cc->listen, ':') != NULL) {
		struct sockaddr_in6 *s6 = (void *)&sa;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)cc->port);
		inet_pton(AF_INET6, cc->listen, &s6->sin6_addr);
		len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (void *)&sa;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)cc->port);
		inet_pton(AF_INET, cc->listen, &s4->sin_addr);
		len = sizeof(*s4);
	}
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&sa, len) != 0 || listen(fd, 128) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		int rc = -errno;

		snprintf(why, why_len, "[control] listen %s port %u: %s",
			 cc->listen, cc->port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	pl->listen_fd = fd;
	pl->port = ntohs(sa.ss_family == AF_INET6 ?
			 ((struct sockaddr_in6 *)&sa)->sin6_port :
			 ((struct sockaddr_in *)&sa)->sin_port);
	return 0;
}

int
rn_plane_create(const struct rn_config *cfg, struct rn_control *ctl,
		struct rn_lcore **workers, unsigned int n_workers,
		struct rn_plane **out, char *why, size_t why_len)
{
	struct rn_plane *pl = calloc(1, sizeof(*pl));
	struct rn_endpoint *ep;
	int rc;

	if (pl == NULL)
		return -ENOMEM;
	pl->cfg = cfg;
	pl->ctl = ctl;
	pl->workers = workers;
	pl->n_workers = n_workers;
	pl->listen_fd = -1;
	rte_seqlock_init(&pl->snapshot_lock);
	pl->worker_ctl = calloc(n_workers, sizeof(*pl->worker_ctl));
	if (pl->worker_ctl != NULL)
		pl->names = create_name_index(pl);
	if (pl->names == NULL) {
		if (pl->worker_ctl == NULL)
			snprintf(why, why_len, "out of memory");
		else
			snprintf(why, why_len, "endpoint name index: %s",
				 rte_strerror(rte_errno));
		rn_plane_free(pl);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < n_workers; i++)
		pl->worker_ctl[i].watch.moved_ms = rn_now_ms();
	/* New at every start: how peers tell a restart from a reconnect. */
	do
		pl->session_id = rte_rand();
	while (pl->session_id == 0);
	rc = open_listener(pl, why, why_len);
	if (rc == 0)
		rc = rn_control_watch(ctl, pl->listen_fd, EPOLLIN, on_listen, pl);
	if (rc != 0) {
		if (why[0] == '\0')
			snprintf(why, why_len, "listener: %s", strerror(-rc));
		rn_plane_close(pl);
		rn_plane_free(pl);
		return rc;
	}
	for (uint32_t i = 0; i < cfg->n_peers; i++) {
		const struct rn_peer_config *peer = &cfg->peers[i];

		ep = rn_ep_add(pl, peer->name);
		if (ep == NULL) {
			snprintf(why, why_len, "peer %s: out of memory",
				 peer->name);
			rn_plane_close(pl);
			rn_plane_free(pl);
			return -ENOMEM;
		}
		ep->configured = true;
		ep->eager = peer->connect == RN_PEER_EAGER;
		ep->in_use = ep->eager;
		snprintf(ep->address, sizeof(ep->address), "%s", peer->address);
		ep->port = (uint16_t)peer->port;
		rn_ep_publish(pl, ep);
		if (ep->eager)
			rn_ep_connect(pl, ep);
	}
	/* Notifications to this node's own name: connected at first use. */
	ep = rn_ep_add(pl, cfg->dataplane.name);
	if (ep == NULL) {
		rn_plane_close(pl);
		rn_plane_free(pl);
		return -ENOMEM;
	}
	ep->configured = true;
	ep->self = true;
	snprintf(ep->address, sizeof(ep->address), "loopback");
	rn_ep_publish(pl, ep);
	RN_PLANE_LOG(NOTICE, "control plane on %s port %u, session %016lx, "
		     "%u peer(s) configured", cfg->control.listen, pl->port,
		     (unsigned long)pl->session_id, cfg->n_peers);
	*out = pl;
	return 0;
}

int
rn_plane_use(struct rn_plane *pl, const char *name)
{
	struct rn_endpoint *ep = rn_ep_find(pl, name);

	if (ep == NULL)
		return -ENOENT;
	ep->in_use = true;
	switch (ep->state) {
	case RN_EP_CONNECTED:
		return 0;
	case RN_EP_IDLE:
	case RN_EP_CLOSED:
		if (!ep->configured)
			return -ENOTCONN;   /* it calls us; we cannot call it */
		rn_ep_connect(pl, ep);
		return -EINPROGRESS;
	case RN_EP_FAILED:
	case RN_EP_RECONNECTING:
		return ep->conn != NULL ? -EINPROGRESS : -ENOTCONN;
	default:
		return -EINPROGRESS;
	}
}

void
rn_plane_tick(struct rn_plane *pl)
{
	serve_uses(pl);
	rn_timers_run(pl, rn_now_ms());
	rn_conn_reap(pl);
	if (pl->listen_paused && !pl->shutting_down &&
	    rn_control_watch(pl->ctl, pl->listen_fd, EPOLLIN, on_listen, pl) == 0)
		pl->listen_paused = false;
}

unsigned int
rn_plane_shutdown(struct rn_plane *pl)
{
	uint8_t frame[RN_PROTO_HEADER_SIZE + 2];
	size_t n = rn_proto_encode_close(frame, sizeof(frame), 0);

	pl->shutting_down = true;
	for (unsigned int i = 0; i < pl->n_eps; i++) {
		struct rn_endpoint *ep = pl->eps[i];

		if (ep->conn != NULL) {
			struct rn_conn *c = ep->conn;

			/* Best effort: the peer need not wait to find us dead.
			 * The send itself may fail and close c. */
			rn_conn_send(c, frame, n);
			if (!c->dead)
				rn_conn_close(c);
		}
		rn_ep_retire_qps(pl, ep);
		if (ep->state != RN_EP_CLOSED && ep->state != RN_EP_IDLE) {
			rn_ep_set_state(pl, ep, RN_EP_CLOSING, "shutting down");
			rn_ep_set_state(pl, ep, RN_EP_CLOSED, "shut down");
		}
	}
	rn_conn_reap(pl);
	return pl->requests_out;
}

unsigned int
rn_plane_requests_out(const struct rn_plane *pl)
{
	return pl->requests_out;
}

void
rn_plane_close(struct rn_plane *pl)
{
	while (pl->conns != NULL)
		rn_conn_close(pl->conns);
	rn_conn_reap(pl);
	if (pl->listen_fd >= 0) {
		rn_control_unwatch(pl->ctl, pl->listen_fd);
		close(pl->listen_fd);
		pl->listen_fd = -1;
	}
	/* EAL memory, freed before EAL stops: nothing sends any more. */
	rte_hash_free(pl->names);
	pl->names = NULL;
}

void
rn_plane_free(struct rn_plane *pl)
{
	for (unsigned int i = 0; i < pl->n_eps; i++)
		free(pl->eps[i]);
	rn_cmd_backlog_free(pl);
	free(pl->notify_frame);
	free(pl);
}

uint16_t
rn_plane_port(const struct rn_plane *pl)
{
	return pl->port;
}

uint64_t
rn_plane_session(const struct rn_plane *pl)
{
	return pl->session_id;
}
