/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_PLANE_H
#define RN_PLANE_H

/*
 * The control plane: endpoints to peer processes, owned by the control
 * thread. It accepts and makes the TCP control connections, runs the
 * handshake, asks the owning lcore to create, connect, probe and close the
 * endpoint's QPs, watches liveness with heartbeats and reconnects with
 * backoff. docs/protocol.md has the frames, states and timers.
 */

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "rn_config.h"
#include "rn_control.h"
#include "rn_lcore.h"
#include <rte_ring.h>

#define RN_EP_NAME_SIZE 32   /* a peer's name, with its NUL */

enum rn_ep_state {
	RN_EP_IDLE,          /* known, never connected */
	RN_EP_CONNECTING,
	RN_EP_CONNECTED,
	RN_EP_CLOSING,       /* closed on purpose: QPs draining */
	RN_EP_CLOSED,
	RN_EP_FAILED,        /* a fault: QPs retired */
	RN_EP_RECONNECTING,  /* waiting out the backoff, or trying again */
	RN_EP_N_STATES,
};

/* What telemetry sees of an endpoint: a copy, published on every change. */
struct rn_ep_info {
	char name[RN_EP_NAME_SIZE];
	char address[64];         /* configured, or where it called from */
	bool configured;
	enum rn_ep_state state;
	uint32_t tag;             /* its binding to this name (rn_client_shm.h) */
	uint32_t generation;
	uint64_t peer_session;
	uint32_t peer_generation;
	uint32_t peer_caps;
	uint32_t lcore;
	uint32_t worker;          /* index of that lcore among the workers */
	uint64_t transitions[RN_EP_N_STATES];   /* entries into each state */
	uint64_t probes_ok;
	uint64_t probes_bad;
	bool native;              /* a native notification channel now */
	uint64_t native_added;    /* channels added after a handshake */
	uint64_t last_detect_ms;  /* at its last failure while connected:
				   * how long the peer had been silent */
	char last_error[128];
};

struct rn_plane;

/*
 * Listen on [control] listen/port, create an endpoint per [peer] and start
 * the eager ones. workers are the worker lcores endpoints are spread over.
 * Returns 0, or a negative errno with why set (e.g. the port is taken).
 */
int rn_plane_create(const struct rn_config *cfg, struct rn_control *ctl,
		    struct rn_lcore **workers, unsigned int n_workers,
		    struct rn_plane **out, char *why, size_t why_len);

/* An endpoint event from an lcore (RN_LCORE_EVENT_EP_*). */
void rn_plane_event(struct rn_plane *pl, const struct rn_lcore_event *ev);

/*
 * Worker index worker's device stopped its queues (a fatal asynchronous
 * event, what): every endpoint of it with QPs fails, and none opens QPs
 * there again (each fails at once, why in its last_error).
 */
void rn_plane_worker_failed(struct rn_plane *pl, unsigned int worker,
			    const char *what);

/* From any thread: whether worker index worker is out of service. */
bool rn_plane_worker_out(const struct rn_plane *pl, unsigned int worker);

/* Timers: handshakes, heartbeats, liveness, reconnection. Call often. */
void rn_plane_tick(struct rn_plane *pl);

/*
 * First use of peer name: connect it now if it is not. Returns 0 when it
 * is connected, -EINPROGRESS when it is on its way, -ENOENT for a name
 * never configured nor seen, -ENOTCONN when it failed and waits to retry.
 */
int rn_plane_use(struct rn_plane *pl, const char *name);

/*
 * Close every endpoint: CLOSE to each peer, QPs to the lcores for draining.
 * Returns how many QP sets the lcores still hold; call rn_plane_event()
 * with their EP_CLOSED events until it reaches 0.
 */
unsigned int rn_plane_shutdown(struct rn_plane *pl);
unsigned int rn_plane_requests_out(const struct rn_plane *pl);

/*
 * Put commands that found a worker's ring full onto it, as far as there is
 * room. Every tick does; call it where the control loop no longer runs.
 */
void rn_plane_push_commands(struct rn_plane *pl);

/* Close every connection, the listener and the name index (EAL memory:
 * before EAL stops); the control loop still runs. */
void rn_plane_close(struct rn_plane *pl);
/* Free the plane; after EAL is stopped, since telemetry threads read it. */
void rn_plane_free(struct rn_plane *pl);

uint16_t rn_plane_port(const struct rn_plane *pl);
uint64_t rn_plane_session(const struct rn_plane *pl);

/*
 * Copy up to max endpoint infos, from any thread: the endpoints bound to a
 * name, in endpoint index order (a free index, or a removed peer's that
 * waits for its QPs, has no name and is left out). Returns the count.
 */
unsigned int rn_plane_snapshot(struct rn_plane *pl, struct rn_ep_info *out,
			       unsigned int max);

/*
 * From any thread: the endpoint named name, its endpoint index, state and
 * worker index. Returns 0 or -ENOENT.
 */
int rn_plane_lookup(struct rn_plane *pl, const char *name, uint32_t *ep_index,
		    enum rn_ep_state *state, uint32_t *worker);

/* From any thread: the generation of the endpoint in ep_index. */
uint32_t rn_plane_generation(struct rn_plane *pl, uint32_t ep_index);

/* From any thread: the peer name of ep_index into buf (32 bytes). */
void rn_plane_name(struct rn_plane *pl, uint32_t ep_index, char *buf);

/* From the polling thread: free d (came over TCP), its quota given back. */
void rn_plane_tcp_release(struct rn_plane *pl,
			  const struct rn_notify_delivery *d);

/*
 * The notification engine's rings the plane serves: uses (endpoint indexes
 * to connect on demand), tcp_in (notifications that came over TCP, to the
 * application) and completions (the fate of sends it carried).
 */
void rn_plane_set_notify(struct rn_plane *pl, struct rte_ring *uses,
			 struct rte_ring *tcp_in, struct rte_ring *completions);

/*
 * Peers at run time (a client's PEER_ADD / PEER_REMOVE), control thread
 * only. add checks name, address and port as a [peer NAME] section is
 * checked (rn_config_peer_check()), and binds the name to an endpoint
 * index with a new tag; the peer is called at first use. Returns 0, or:
 *   -EEXIST  a peer (or this node) of that name exists, or a configured
 *            peer at that address and port
 *   -EINVAL  name, address or port malformed (port 0)
 *   -ENOSPC  the table holds RN_MAX_ENDPOINTS endpoints
 *   -ENOMEM
 * remove: 0, or -ENOENT when no peer has that name (this node's own is no
 * peer). The observer hears PEER_REMOVED at once, while the endpoint is
 * still named; the name leaves the name index, so a caller of that name
 * is unknown from then on ([control] accept_unknown). The endpoint closes
 * as at shutdown; its index is free (FREE in the status page, its tag
 * retired) once the lcore gave its QPs back (EP_CLOSED).
 */
int rn_plane_peer_add(struct rn_plane *pl, const char *name,
		      const char *address, uint16_t port);
int rn_plane_peer_remove(struct rn_plane *pl, const char *name);

/*
 * Clients (control/client): the plane keeps page's endpoint table
 * (rn_client_shm.h: name, worker, tag, state; each entry under its seq, an
 * rte_seqcount_t; n_endpoints the highest index bound + 1) current from
 * the control thread, at every change, and writes it whole at once. It
 * calls observer(arg, ep_index, event) on the control thread (enum
 * rn_client_event_type), after the page shows the change:
 *   PEER_UP         connected: the first time, or again to the same
 *                   incarnation of the peer (same session id)
 *   PEER_RESTARTED  connected to a new incarnation (another session id)
 *   PEER_DOWN       a connected endpoint is no longer (failed, or the
 *                   peer closed it); not at this node's own shutdown
 *   PEER_REMOVED    rn_plane_peer_remove(), or an unknown peer's closed
 *                   endpoint whose index a new peer takes (table full);
 *                   the page and rn_plane_name() still name it during the
 *                   call
 * The magic, version, n_lcores and lcore[] words are the caller's. page
 * NULL (and observer NULL) to stop.
 */
struct rn_client_status_page;
void rn_plane_set_clients(struct rn_plane *pl,
			  struct rn_client_status_page *page,
			  void (*observer)(void *arg, uint32_t ep_index,
					   int event),
			  void *arg);

/*
 * Descriptors (docs/protocol.md, "Descriptor requests"). A source writes
 * the descriptor published as name into blob (cap bytes) and returns its
 * length, RN_PROTO_DESC_BLOB (192), or -ENOENT when nothing is published
 * so (any other error: the peer hears "unavailable"). The plane calls it
 * on the control thread, for peers that proved the shared secret only.
 * Set it before the control loop runs, or on the control thread.
 */
typedef int (*rn_plane_desc_source)(void *arg, const char *name, void *blob,
				    size_t cap);
void rn_plane_set_descriptors(struct rn_plane *pl, rn_plane_desc_source source,
			      void *arg);
/*
 * From any thread but the control thread: ask peer for the descriptor it
 * publishes as name, connecting it first if needed, and wait up to
 * timeout_ms. Returns RN_PROTO_DESC_BLOB with blob written, or:
 *   -EINVAL     a name not 1..63 bytes of letters, digits and "_-.:/", or
 *               a peer name not 1..31 bytes
 *   -ENOSPC     cap is under RN_PROTO_DESC_BLOB
 *   -ENOENT     no such peer
 *   -ENODATA    the peer publishes nothing under that name
 *   -EACCES     the peer serves descriptors to authenticated peers only,
 *               and has no secret
 *   -EOPNOTSUPP the peer serves no descriptors
 *   -ENOTCONN   the endpoint failed (waits to reconnect), or was lost
 *               before the answer came
 *   -ETIMEDOUT  no answer by then
 *   -ESHUTDOWN  the plane closed
 *   -ENOMEM
 */
int rn_plane_desc_fetch(struct rn_plane *pl, const char *peer, const char *name,
			uint32_t timeout_ms, void *blob, size_t cap);

/*
 * A second source, consulted when the first (rn_plane_set_descriptors())
 * has nothing under the name: the client server's publications, so that
 * peers reach client processes' regions as they reach the embedded
 * API's. Same rules; set it on the control thread.
 */
void rn_plane_set_client_descriptors(struct rn_plane *pl,
				     rn_plane_desc_source source, void *arg);
/* Control thread: what a peer asking for name would be answered, from
 * either source: RN_PROTO_DESC_BLOB with blob written, -ENOENT, or the
 * source's error. For uniqueness checks of names on the node. */
int rn_plane_desc_served(struct rn_plane *pl, const char *name, void *blob,
			 size_t cap);

/*
 * Control thread: rn_plane_desc_fetch() without waiting. The request is
 * sent as soon as the endpoint is established (connecting it first if
 * it is idle); done(arg, rc, blob) is called once, on the control thread
 * and from the plane's tick or an answer's frame, never from here: rc is
 * RN_PROTO_DESC_BLOB with blob (192 bytes, valid during the call) or one
 * of rn_plane_desc_fetch()'s errors, by timeout_ms at the latest (plus a
 * tick). Returns 0 with *out, the handle for _cancel(), or -EINVAL,
 * -ENOENT (no such peer), -ENOMEM, -ESHUTDOWN: then done is never called.
 */
struct rn_desc_fetch;
typedef void (*rn_plane_desc_done)(void *arg, int rc, const void *blob);
int rn_plane_desc_fetch_start(struct rn_plane *pl, const char *peer,
			      const char *name, uint32_t timeout_ms,
			      rn_plane_desc_done done, void *arg,
			      struct rn_desc_fetch **out);
/* Control thread: forget r, started and not done yet; done is not called
 * any more. */
void rn_plane_desc_fetch_cancel(struct rn_plane *pl, struct rn_desc_fetch *r);

const char *rn_ep_state_name(enum rn_ep_state state);

/* CLOCK_MONOTONIC in milliseconds: the control plane's clock. */
static inline uint64_t
rn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#endif /* RN_PLANE_H */
