/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_PLANE_INTERNAL_H
#define RN_PLANE_INTERNAL_H

/*
 * Inside the control plane. Files, one purpose each:
 *   plane.c      the plane: listener, endpoint table, telemetry snapshot
 *   conn.c       control connections: non-blocking connect, frame I/O,
 *                bounded write queue
 *   handshake.c  what each frame means in each phase of a connection
 *   lifecycle.c  endpoint states, the lcore's QP events, failure, backoff
 *   timers.c     deadlines, heartbeats, liveness, reconnection
 *   notify_tcp.c the TCP fallback, and notifications to this node itself
 */

#include <rte_log.h>
#include <rte_seqlock.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rn_lcore_ep.h"
#include "rn_plane.h"
#include "rn_proto.h"

extern int rn_plane_logtype;
#define RN_PLANE_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, rn_plane_logtype, "rnotify.endpoint: " fmt "\n", \
		##__VA_ARGS__)

#define RN_CONN_RX_MAX (RN_PROTO_HEADER_SIZE + RN_PROTO_MAX_PAYLOAD)
#define RN_CONN_TX_MAX (4u << 20)   /* a peer that stops reading: cut off */
/* NOTIFY frames stop queueing here (-EAGAIN: the peer's application is not
 * taking them), well before RN_CONN_TX_MAX would cut the connection off. */
#define RN_CONN_NOTIFY_TX_MAX (1u << 20)
#define RN_MAX_CONNS (2 * RN_MAX_ENDPOINTS)
#define RN_EP_STABLE_MS 10000       /* connected this long: backoff resets */
#define RN_EP_PROBE_EVERY_HEARTBEATS 10
#define RN_EP_SLOW_ANSWER_MS 1000   /* an lcore this slow to open or
				     * connect QPs is worth a log line */

enum rn_conn_phase {
	RN_CONN_TCP_CONNECTING,  /* outbound: connect() in progress */
	RN_CONN_TCP_UP,          /* outbound: connected, QPs not open yet */
	RN_CONN_WAIT_HELLO,      /* inbound: accepted, HELLO not in yet */
	RN_CONN_SERVING,         /* inbound: HELLO in, our QPs on their way */
	RN_CONN_WAIT_ACCEPT,     /* outbound: HELLO sent */
	RN_CONN_CONNECTING_QPS,  /* outbound: ACCEPT in, QPs to RTS */
	RN_CONN_WAIT_READY,      /* inbound: ACCEPT sent */
	RN_CONN_ESTABLISHED,
};

struct rn_endpoint;

/*
 * Channel add: a native channel added to a connected endpoint after its
 * handshake (channel_add.c). One at a time per endpoint.
 */
enum rn_chan_add_state {
	RN_CHAN_ADD_IDLE = 0,         /* none being added */
	RN_CHAN_ADD_OPENING,          /* our lcore makes our notify QP */
	RN_CHAN_ADD_OFFERED,          /* OFFER sent, waiting for the answer */
	RN_CHAN_ADD_CONNECTING,       /* our lcore connects it to the peer's */
	RN_CHAN_ADD_ACCEPTED,         /* ACCEPT sent, waiting for READY */
	RN_CHAN_ADD_N_STATES,
};

struct rn_chan_add {
	enum rn_chan_add_state state;
	bool ours;                    /* we offered (else the peer did) */
	uint16_t offer;               /* ours, or the peer's we answer */
	uint64_t deadline_ms;         /* the peer's answer or READY by then */
};

struct rn_conn {
	struct rn_plane *pl;
	struct rn_endpoint *ep;       /* NULL until a HELLO names the peer */
	int fd;
	bool outbound;
	bool dead;                    /* closed; freed on a tick or an accept */
	enum rn_conn_phase phase;
	char peer[64];                /* "address port", for log lines */
	uint64_t deadline_ms;         /* of the current handshake phase */
	uint64_t last_rx_ms, last_tx_ms;
	uint8_t *rx;
	size_t rx_len;
	uint8_t *tx;
	size_t tx_len, tx_off;
	bool want_out;                /* EPOLLOUT armed */
	bool rx_held;                 /* a NOTIFY waits in rx for room on the
				       * application's ring: not reading */
	struct rn_conn *next;         /* pl->conns or pl->dead */
};

struct rn_endpoint {
	uint32_t slot;
	char name[RN_EP_NAME_SIZE];
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
	struct waiting_cmd *head, *tail;
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
	int listen_fd;
	uint16_t port;
	unsigned int n_eps;
	struct rn_endpoint *eps[RN_MAX_ENDPOINTS];
	unsigned int n_conns;
	struct rn_conn *conns;
	struct rn_conn *dead;
	unsigned int requests_out;    /* rn_ep_request held by lcores */
	struct rn_worker_ctl *worker_ctl; /* per worker */
	bool shutting_down;
	bool listen_paused;           /* out of fds: listening again on a tick */
	struct rte_ring *uses;        /* slots applications want connected */
	struct rte_ring *tcp_in;      /* NOTIFY frames, to the application */
	struct rte_ring *completions; /* fates of sends, to the application */
	uint8_t *notify_frame;        /* one NOTIFY frame being encoded */
	uint64_t tcp_dropped;         /* out of memory for one: lost */
	uint64_t reports_dropped;     /* completions ring full: lost */
	struct rte_hash *names;       /* peer name (zero-padded) -> slot */
	rte_seqlock_t snapshot_lock;
	struct rn_ep_info snapshot[RN_MAX_ENDPOINTS];
	unsigned int n_snapshot;
};

/* Whether ep's worker was taken out of service (rn_plane_worker_failed). */
static inline bool
plane_worker_failed(const struct rn_plane *pl, const struct rn_endpoint *ep)
{
	return pl->worker_out[ep->lcore];   /* written by this thread */
}

struct rn_lcore_event;
/* A bay is free on that lcore; after_drop: it is the one of an offer that
 * a peer refused or did not answer. */
const char *rn_chan_add_state_name(enum rn_chan_add_state state);
void rn_chan_add_bay_free(struct rn_plane *pl, uint16_t lcore_id, bool after_drop);
void rn_chan_add_event(struct rn_plane *pl, struct rn_endpoint *ep,
		   const struct rn_lcore_event *ev);
void rn_chan_add_frame(struct rn_plane *pl, struct rn_endpoint *ep,
		   const struct rn_proto_frame *f);
/* Whether the handshake gave the endpoint a native channel. */
bool rn_chan_add_native_at_handshake(const struct rn_endpoint *ep);
/* A step the peer did not answer in connect_timeout_ms. */
void rn_chan_add_check(struct rn_plane *pl, struct rn_endpoint *ep, uint64_t now);

/* handshake.c: a QP record of the protocol, and the lcore's view of it
 * (the kinds are numbered alike). */
struct rn_ep_qp_info rn_handshake_qp_info(const struct rn_proto_qp *q);
struct rn_proto_qp rn_handshake_qp_record(const struct rn_ep_qp_info *q);

/* plane.c */
struct rn_endpoint *rn_ep_find(struct rn_plane *pl, const char *name);
struct rn_endpoint *rn_ep_add(struct rn_plane *pl, const char *name);
void rn_ep_publish(struct rn_plane *pl, struct rn_endpoint *ep);

/* conn.c */
int rn_conn_connect(struct rn_plane *pl, struct rn_endpoint *ep,
		 struct rn_conn **out);
struct rn_conn *rn_conn_accepted(struct rn_plane *pl, int fd,
			      const struct sockaddr *sa, socklen_t len);
/* Queue a frame; a queue over RN_CONN_TX_MAX fails the connection. */
void rn_conn_send(struct rn_conn *c, const uint8_t *frame, size_t len);
void rn_conn_send_refuse(struct rn_conn *c, uint16_t code, const char *text);
/* Move c to phase, with connect_timeout_ms to get through it. */
void rn_conn_enter(struct rn_conn *c, enum rn_conn_phase phase);
/* The connection failed: its endpoint (if it is its own) fails with it;
 * a connection without one is closed with a log line naming the peer. */
void rn_conn_fail(struct rn_conn *c, const char *why);
/* Close and detach; the memory goes at the next tick. */
void rn_conn_close(struct rn_conn *c);
void rn_conn_reap(struct rn_plane *pl);
/* Bytes queued to send on c. */
size_t rn_conn_queued(const struct rn_conn *c);
/* Read again what a full application ring held back, if it has room. */
void rn_conn_resume(struct rn_conn *c);

/* notify_tcp.c: the TCP fallback */
void rn_notify_tcp_send(struct rn_plane *pl, void *request);
void rn_notify_tcp_receive(struct rn_plane *pl, struct rn_endpoint *ep,
			const struct rn_proto_frame *f);
/* No room for one more delivery: hold NOTIFY frames back, not drop them. */
bool rn_notify_tcp_ring_full(const struct rn_plane *pl);

/* handshake.c */
void rn_handshake_frame(struct rn_conn *c, const struct rn_proto_frame *f);
void rn_handshake_send_hello(struct rn_conn *c, uint8_t type);

/* lifecycle.c */
/* Log, count and publish a transition. */
void rn_ep_set_state(struct rn_plane *pl, struct rn_endpoint *ep,
		  enum rn_ep_state state, const char *why);
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

/* commands.c */
/* To ep's worker, in order; never waits (a full ring: they wait here). */
void rn_ep_send_command(struct rn_plane *pl, struct rn_endpoint *ep,
		     uint32_t type, struct rn_ep_request *req);
/* Whether commands wait for room on ep's worker's ring. */
bool rn_ep_commands_waiting(const struct rn_plane *pl,
			 const struct rn_endpoint *ep);
void rn_cmd_backlog_free(struct rn_plane *pl);

/* timers.c */
void rn_timers_run(struct rn_plane *pl, uint64_t now);

/* watchdog.c: log a worker whose loop stops turning, and when it turns
 * again. Every tick. */
void rn_watchdog_run(struct rn_plane *pl, uint64_t now);

#endif /* RN_PLANE_INTERNAL_H */
