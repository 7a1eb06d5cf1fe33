/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_ENDPOINT_PVT_H
#define RN_ENDPOINT_PVT_H

/*
 * The endpoint layer of the control plane, over the handshake's frames
 * (handshake_pvt.h) and the transport (conn_pvt.h). Its files, one
 * purpose each, from the top down (each calls only files below it):
 *   plane.c        the plane: create, listener, tick, first use, shutdown
 *   events.c       the lcores' news: QPs opened, connected, probed, failed
 *   timers.c       deadlines, heartbeats, liveness, reconnection
 *                  (timers_pvt.h), with watchdog.c: workers that stall
 *   ep_handshake.c what the handshake's frames mean for an endpoint; the
 *                  transport's news (rn_conn_ops)
 *   channel_add.c  a native channel added to a connected endpoint
 *                  (channel_add_pvt.h)
 *   notify_tcp.c   the TCP fallback, and notifications to this node
 *                  (notify_tcp_pvt.h)
 *   lifecycle.c    endpoint states, QPs per incarnation, failure, backoff,
 *                  what clients are told (the observer's events)
 *   ep_table.c     the endpoint table, its name index, peer tags, and what
 *                  other threads and processes read: the snapshot and the
 *                  clients' status page
 *   commands.c     commands to the worker lcores, never waiting
 *                  (commands_pvt.h)
 *   descriptors.c  descriptor requests: served to authenticated peers,
 *                  and this node's own (descriptors_pvt.h)
 */

#include <rte_seqlock.h>
#include <stdbool.h>
#include <stdint.h>

#include "channel_add_pvt.h"
#include "conn_pvt.h"
#include "descriptors_pvt.h"
#include "handshake_pvt.h"
#include "log_pvt.h"
#include "notify_tcp_pvt.h"
#include "rn_lcore_ep.h"
#include "rn_plane.h"

struct rn_endpoint {
	uint32_t index;
	char name[RN_EP_NAME_SIZE];
	uint32_t tag;                 /* this binding of index to name: new
				       * each time (pl->last_tag); 0: the
				       * index is free */
	bool removed;                 /* rn_plane_peer_remove(): nameless,
				       * free once requests_out is 0 */
	unsigned int requests_out;    /* of its rn_ep_request, held by the
				       * lcore (EP_OPEN to EP_CLOSED) */
	uint64_t up_session;          /* the peer's session when last
				       * connected (0: never): tells a
				       * reconnect from a restart */
	bool configured;              /* a [peer]: we call it, and call again */
	bool self;                    /* this node: QPs looped back, no conn */
	bool eager;
	bool in_use;                  /* eager, or used: keep it connected */
	char address[64];             /* configured address, or caller's */
	uint16_t port;
	enum rn_ep_state state;
	uint32_t generation;
	uint32_t tcp_received;        /* NOTIFY frames of this generation */
	/* Its native channel, and adding one after the handshake
	 * (channel_add.c); all of this incarnation only. */
	bool native;                  /* both sides have a notify QP */
	struct rn_chan_add add;
	bool peer_native_off;         /* the peer refused: notifications off */
	bool peer_declined;           /* refused for want of buffers (it
				       * offers), or did not answer */
	unsigned int lcore;           /* index into pl->workers */
	struct rn_ep_request *req;    /* current incarnation's QPs, or NULL */
	bool qps_open;
	bool serving;                 /* req->remote holds a HELLO to serve */
	uint64_t asked_ms;            /* when the lcore was sent EP_OPEN or
				       * EP_CONNECT: a slow answer is logged */
	struct rn_conn *conn;
	uint64_t peer_session;
	uint32_t peer_generation;
	uint32_t peer_caps;
	uint64_t retry_at_ms;         /* 0: no retry scheduled */
	uint64_t connected_at_ms;
	uint64_t next_probe_ms;
	uint32_t backoff_ms;
	struct rn_ep_info info;       /* counters, and what is published */
};

/* A worker's commands that found its ring full, oldest first. */
struct rn_cmd_backlog {
	struct rn_cmd_waiting *head, *tail;
	uint64_t waited;              /* since the ring was last full */
};

/* Whether a worker's loop still turns (watchdog.c). */
struct rn_worker_watch {
	uint64_t loops;               /* its loop counter, as last seen */
	uint64_t moved_ms;            /* when it last changed */
	bool stuck;                   /* reported as not turning */
};

/* The control thread's own state for one worker. */
struct rn_worker_ctl {
	struct rn_cmd_backlog backlog;
	struct rn_worker_watch watch;
};

struct rn_plane {
	const struct rn_config *cfg;
	struct rn_control *ctl;
	struct rn_lcore **workers;
	unsigned int n_workers;
	/* A fatal device event stopped the worker's queues: its endpoints
	 * fail, stay failed, and open no QPs until rnotifyd restarts
	 * (worker_out, read by other threads too); why is their last_error. */
	bool worker_out[RTE_MAX_LCORE];
	char worker_failed[RTE_MAX_LCORE][128];
	uint64_t session_id;
	struct rn_hs_auth auth;       /* what we prove with: cfg's secrets */
	int listen_fd;
	uint16_t port;
	unsigned int n_eps;
	struct rn_endpoint *eps[RN_MAX_ENDPOINTS];
	struct rn_conn_pool conns;    /* every control connection */
	unsigned int requests_out;    /* rn_ep_request held by lcores */
	struct rn_worker_ctl *worker_ctl; /* per worker */
	bool shutting_down;
	bool listen_paused;           /* out of fds: listening again on a tick */
	struct rte_ring *uses;        /* endpoint indexes to connect */
	struct rte_ring *tcp_in;      /* NOTIFY frames, to the application */
	struct rn_notify_tcp_quota tcp_quota; /* what tcp_in's peers hold */
	struct rte_ring *completions; /* fates of sends, to the application */
	uint8_t *notify_frame;        /* one NOTIFY frame being encoded */
	uint64_t tcp_dropped;         /* out of memory for one: lost */
	uint64_t reports_dropped;     /* completions ring full: lost */
	struct rte_hash *names;       /* peer name (zero-padded) -> endpoint index */
	rte_seqlock_t snapshot_lock;
	struct rn_ep_info snapshot[RN_MAX_ENDPOINTS];
	unsigned int n_snapshot;
	uint32_t last_tag;            /* the last peer tag given */
	/* Clients (rn_plane_set_clients()): their status page's endpoint
	 * table, kept by rn_ep_publish(); page_n is its n_endpoints. */
	struct rn_client_status_page *page;
	uint32_t page_n;
	void (*observer)(void *arg, uint32_t ep_index, int event);
	void *observer_arg;
	struct rn_desc_state desc;    /* descriptor requests */
};

/* The plane a connection belongs to. */
static inline struct rn_plane *
rn_plane_of(const struct rn_conn *c)
{
	return container_of(c->pool, struct rn_plane, conns);
}

/* Whether ep's worker was taken out of service (rn_plane_worker_failed). */
static inline bool
rn_ep_worker_out(const struct rn_plane *pl, const struct rn_endpoint *ep)
{
	return pl->worker_out[ep->lcore];   /* written by this thread */
}

/* Close c, and detach it from its endpoint if it is that one's. */
static inline void
rn_ep_close_conn(struct rn_conn *c)
{
	if (c->ep != NULL && c->ep->conn == c)
		c->ep->conn = NULL;
	rn_conn_close(c);
}

/* The side's notify QP record, or NULL. */
static inline struct rn_ep_qp_info *
rn_ep_side_notify_qp(const struct rn_ep_side *side)
{
	for (uint32_t i = 0; i < side->n_qps; i++)
		if (side->qps[i].kind == RN_EP_QP_NOTIFY)
			return (struct rn_ep_qp_info *)&side->qps[i];
	return NULL;
}

/* ep_table.c */
struct rn_endpoint *rn_ep_find(struct rn_plane *pl, const char *name);
/*
 * Bind name to an endpoint index, with a new tag: the lowest free index,
 * else a new one, else one reclaimed from a peer that called us once and
 * is gone. Returns 0, -ENOSPC (table full), -ENAMETOOLONG or -ENOMEM.
 */
int rn_ep_bind(struct rn_plane *pl, const char *name, struct rn_endpoint **out);
/* The same; NULL on any error. */
struct rn_endpoint *rn_ep_add(struct rn_plane *pl, const char *name);
/* Take ep's name out of the name index: no lookup or caller finds it. */
void rn_ep_unname(struct rn_plane *pl, struct rn_endpoint *ep);
/* ep's index is free: no name, tag 0, FREE in the clients' page. Only
 * once the lcore holds none of its requests. */
void rn_ep_release(struct rn_plane *pl, struct rn_endpoint *ep);
/* Copy what telemetry sees of ep to the snapshot, and what clients see
 * of it to their status page (every change of either goes through here). */
void rn_ep_publish(struct rn_plane *pl, struct rn_endpoint *ep);
/* The name index: created with the plane, freed before EAL stops. */
int rn_ep_table_init(struct rn_plane *pl);
void rn_ep_table_fini(struct rn_plane *pl);

/* lifecycle.c */
/* Log, count and publish a transition. */
void rn_ep_set_state(struct rn_plane *pl, struct rn_endpoint *ep,
		     enum rn_ep_state state, const char *why);
/* Tell the clients' observer event (enum rn_client_event_type) of ep. */
void rn_ep_tell(struct rn_plane *pl, struct rn_endpoint *ep, int event);
/* Close ep on purpose (shutdown, removal): CLOSE to the peer, its
 * connection closed, QPs retired, no retry; closed it stays. */
void rn_ep_close(struct rn_plane *pl, struct rn_endpoint *ep, const char *why);
/* Start our own call to a configured peer (or loop back to this node). */
void rn_ep_connect(struct rn_plane *pl, struct rn_endpoint *ep);
/* New QPs for a new incarnation; a notify QP too if notify (and [notify]
 * enabled): a caller that has no native channel is not given one. */
void rn_ep_open_qps(struct rn_plane *pl, struct rn_endpoint *ep, bool notify);
void rn_ep_retire_qps(struct rn_plane *pl, struct rn_endpoint *ep);
void rn_ep_connect_qps(struct rn_plane *pl, struct rn_endpoint *ep);
/* A fault: close the connection, retire the QPs, schedule a retry. */
void rn_ep_fail(struct rn_plane *pl, struct rn_endpoint *ep, const char *why);
/* Connection and QPs both ready: the endpoint is up. */
void rn_ep_established(struct rn_plane *pl, struct rn_endpoint *ep);
/* The peer closed on purpose. */
void rn_ep_closed_by_peer(struct rn_plane *pl, struct rn_endpoint *ep);

/* ep_handshake.c */
/* What the transport tells the endpoints (for rn_conn_pool.ops). */
extern const struct rn_conn_ops rn_ep_conn_ops;
/* Send HELLO or ACCEPT (type) on c with its endpoint's side of its
 * incarnation. */
void rn_ep_send_hello(struct rn_plane *pl, struct rn_conn *c, uint8_t type);

#endif /* RN_ENDPOINT_PVT_H */
