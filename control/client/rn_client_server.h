/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CLIENT_SERVER_H
#define RN_CLIENT_SERVER_H

/*
 * The client server: client processes attach to rnotifyd over a Unix
 * socket ([client] socket; the attach protocol of rn_client_msg.h). It
 * lives on the control thread: it accepts, checks the caller's uid and
 * gids against [client] allow, builds each client's shared region, hands
 * the client to every worker lcore and takes it back when the socket
 * closes (detach, exit or kill -9), and writes the plane's peer events to
 * each client's events ring. docs/client.md describes it.
 *
 * Order in the daemon: rn_client_server_create() before the workers run
 * (it makes the status page), rn_client_server_set_lcore() for each worker
 * between rn_lcore_init() and its launch, rn_client_server_start() once
 * the plane exists; then _event() with every RN_LCORE_EVENT_CLIENT_*
 * (ADDED, REMOVED, REGISTERED, DEREGISTERED) and _tick() on every tick;
 * at shutdown _shutdown() until it returns 0 (or the workers stopped),
 * _close() before EAL stops and _free() after (telemetry threads read it
 * until then).
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rn_client.h"
#include "rn_config.h"
#include "rn_control.h"
#include "rn_lcore.h"
#include "rn_plane.h"

struct rn_client_server;

/* What telemetry shows of a client: a copy, taken under the server's
 * lock. */
struct rn_client_info {
	uint32_t id;
	char agent[RN_CLIENT_AGENT_MAX + 1];
	pid_t pid;
	uid_t uid;
	gid_t gid;
	uint64_t attached_unix_ms;   /* wall clock, ms since the epoch */
	bool closing;                /* detached; lcores not all done yet */
	uint64_t requests;           /* messages after ATTACH */
	uint64_t events;             /* peer events written to its ring */
	uint64_t events_dropped;     /* its events ring was full */
	uint32_t regions;            /* memory regions registered (REG), or
				      * on their way in or out */
};

/* What the whole server counted, for /rnotify/status. */
struct rn_client_totals {
	uint32_t attached;           /* clients now, closing ones included */
	uint64_t attaches;           /* successful ATTACHes since start */
	uint64_t refused;            /* callers not allowed ([client] allow) */
	uint64_t failed;             /* ATTACHes answered with an error */
	bool hugepages;              /* the last region was on hugepages */
};

/*
 * Make the status page for n_workers worker lcores (a memfd, mapped).
 * Nothing listens yet. Returns 0, -EINVAL (too many workers), -ENOMEM or
 * -errno of memfd/mmap, with why set.
 */
int rn_client_server_create(const struct rn_config *cfg,
			    unsigned int n_workers,
			    struct rn_client_server **out, char *why,
			    size_t why_len);

/* Worker index i is lc: give it its word of the status page. Before the
 * worker runs. */
void rn_client_server_set_lcore(struct rn_client_server *s, unsigned int i,
				struct rn_lcore *lc);

/*
 * Listen on socket_path (a stale socket file there is replaced; a live
 * one is not) with cfg's mode and group, watch it on ctl, and hand the
 * status page and the event observer to pl. Returns 0 or -errno with why
 * set.
 */
int rn_client_server_start(struct rn_client_server *s,
			   struct rn_control *ctl, struct rn_plane *pl,
			   const char *socket_path, char *why, size_t why_len);

/* An lcore event for the server (RN_LCORE_EVENT_CLIENT_ADDED, _REMOVED,
 * _REGISTERED, _DEREGISTERED). */
void rn_client_server_event(struct rn_client_server *s,
			    const struct rn_lcore_event *ev);

/* Commands that found an lcore's ring full, callers refused too long ago
 * to wait more. Call on every control tick. */
void rn_client_server_tick(struct rn_client_server *s);

/*
 * Stop listening and detach every client (their sockets close, their
 * regions say closed). Returns how many clients the lcores still hold:
 * call again, with events handled meanwhile, until 0.
 */
unsigned int rn_client_server_shutdown(struct rn_client_server *s);

/* After the workers stopped: free what clients are left, close the
 * status page, remove the socket file. The control loop may be gone. */
void rn_client_server_close(struct rn_client_server *s);

/* Free s; after EAL stopped (telemetry threads read it until then). */
void rn_client_server_free(struct rn_client_server *s);

/* From any thread: up to max clients into out; returns the count. */
unsigned int rn_client_server_snapshot(struct rn_client_server *s,
				       struct rn_client_info *out,
				       unsigned int max);

/* From any thread. */
void rn_client_server_totals(struct rn_client_server *s,
			     struct rn_client_totals *out);

/* The socket's path, "" before start. */
const char *rn_client_server_path(const struct rn_client_server *s);

#endif /* RN_CLIENT_SERVER_H */
