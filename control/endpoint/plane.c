/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plane: created with its listener and configured peers, ticked by
 * the control loop, asked to connect a peer at first use, peers added and
 * removed at run time, shut down. Control thread only.
 */
#include <arpa/inet.h>
#include <assert.h>
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

#include "commands_pvt.h"
#include "endpoint_pvt.h"
#include "rn_client.h"
#include "timers_pvt.h"

/* Connections at most: an inbound and an outbound one per endpoint. */
#define RN_MAX_CONNS (2 * RN_MAX_ENDPOINTS)

void
rn_plane_set_notify(struct rn_plane *pl, struct rte_ring *uses,
		    struct rte_ring *tcp_in, struct rte_ring *completions)
{
	pl->uses = uses;
	pl->tcp_in = tcp_in;
	pl->completions = completions;
}

/* Endpoint indexes applications sent to while they were not connected. */
static void
serve_uses(struct rn_plane *pl)
{
	uint32_t ep_index;

	while (pl->uses != NULL &&
	       rte_ring_sc_dequeue_elem(pl->uses, &ep_index, sizeof(ep_index)) == 0)
		if (ep_index < pl->n_eps)
			rn_plane_use(pl, pl->eps[ep_index]->name);
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
	rn_conn_reap(&pl->conns);
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
		if (pl->conns.n_live >= RN_MAX_CONNS || pl->shutting_down) {
			close(fd);
			continue;
		}
		rn_conn_accepted(&pl->conns, fd, (struct sockaddr *)&sa, len);
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
	pl->conns = (struct rn_conn_pool){
		.ctl = ctl, .timeout_ms = cfg->control.connect_timeout_ms,
		.ops = &rn_ep_conn_ops };
	rte_seqlock_init(&pl->snapshot_lock);
	pl->worker_ctl = calloc(n_workers, sizeof(*pl->worker_ctl));
	if (pl->worker_ctl == NULL || rn_desc_init(pl) != 0 ||
	    rn_ep_table_init(pl) != 0) {
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
	static_assert(RN_CONFIG_SECRET_MAX <= RN_PROTO_SECRET_MAX,
		      "every secret the config loads can key a proof");
	pl->auth = (struct rn_hs_auth){
		.name = cfg->dataplane.name, .session_id = pl->session_id,
		.key = { cfg->control.secret[0], cfg->control.secret[1] },
		.key_len = { cfg->control.secret_len[0],
			     cfg->control.secret_len[1] },
	};
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
	if (rn_config_listen_unprotected(cfg))
		RN_PLANE_LOG(WARNING, "control plane on %s with no secret: any "
			     "process that reaches it can pose as a peer; set "
			     "[control] secret_file (docs/security.md)",
			     cfg->control.listen);
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
	rn_desc_tick(pl);
	rn_conn_reap(&pl->conns);
	if (pl->listen_paused && !pl->shutting_down &&
	    rn_control_watch(pl->ctl, pl->listen_fd, EPOLLIN, on_listen, pl) == 0)
		pl->listen_paused = false;
}

unsigned int
rn_plane_shutdown(struct rn_plane *pl)
{
	pl->shutting_down = true;
	for (unsigned int i = 0; i < pl->n_eps; i++)
		rn_ep_close(pl, pl->eps[i], "shutting down");
	rn_conn_reap(&pl->conns);
	return pl->requests_out;
}

int
rn_plane_peer_add(struct rn_plane *pl, const char *name, const char *address,
		  uint16_t port)
{
	struct rn_endpoint *ep;
	char why[RN_CONFIG_ERROR_MAX];
	int rc;

	rc = rn_config_peer_check(name, address, port, why, sizeof(why));
	if (rc != 0) {
		RN_PLANE_LOG(NOTICE, "peer not added: %s", why);
		return rc;
	}
	if (rn_ep_find(pl, name) != NULL)
		return -EEXIST;   /* this node's own name too */
	for (unsigned int i = 0; i < pl->n_eps; i++) {
		ep = pl->eps[i];
		/* As two [peer] sections may not: one daemon, two names. */
		if (ep->configured && !ep->self && ep->port == port &&
		    rn_config_same_address(ep->address, address)) {
			RN_PLANE_LOG(NOTICE, "peer %s not added: %s port %u is "
				     "already peer %s", name, address, port,
				     ep->name);
			return -EEXIST;
		}
	}
	rc = rn_ep_bind(pl, name, &ep);
	if (rc != 0)
		return rc == -ENAMETOOLONG ? -EINVAL : rc;
	ep->configured = true;
	snprintf(ep->address, sizeof(ep->address), "%s", address);
	ep->port = port;
	rn_ep_publish(pl, ep);
	RN_PLANE_LOG(NOTICE, "endpoint %s: peer added at %s port %u (index %u, "
		     "tag %u); connected at first use", name, address, port,
		     ep->index, ep->tag);
	return 0;
}

int
rn_plane_peer_remove(struct rn_plane *pl, const char *name)
{
	struct rn_endpoint *ep = rn_ep_find(pl, name);

	if (ep == NULL || ep->self)
		return -ENOENT;
	RN_PLANE_LOG(NOTICE, "endpoint %s: peer removed (index %u, tag %u)",
		     ep->name, ep->index, ep->tag);
	rn_ep_tell(pl, ep, RN_CLIENT_EVENT_PEER_REMOVED);   /* still named */
	/* Gone for callers and lookups at once: one that calls again is
	 * unknown ([control] accept_unknown decides). */
	rn_ep_unname(pl, ep);
	ep->removed = true;
	ep->configured = false;
	ep->eager = false;
	ep->in_use = false;
	rn_ep_close(pl, ep, "removed");
	rn_ep_publish(pl, ep);
	/* Its index only once the lcore gave every QP of it back
	 * (rn_plane_event(), EP_CLOSED). */
	if (ep->requests_out == 0)
		rn_ep_release(pl, ep);
	return 0;
}

unsigned int
rn_plane_requests_out(const struct rn_plane *pl)
{
	return pl->requests_out;
}

void
rn_plane_close(struct rn_plane *pl)
{
	while (pl->conns.live != NULL)
		rn_ep_close_conn(pl->conns.live);
	rn_conn_reap(&pl->conns);
	rn_desc_fini(pl);
	if (pl->listen_fd >= 0) {
		rn_control_unwatch(pl->ctl, pl->listen_fd);
		close(pl->listen_fd);
		pl->listen_fd = -1;
	}
	/* EAL memory, freed before EAL stops: nothing sends any more. */
	rn_ep_table_fini(pl);
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
