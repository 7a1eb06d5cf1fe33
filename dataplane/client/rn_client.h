/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CLIENT_H
#define RN_CLIENT_H

/*
 * librnotify: an application process attached to rnotifyd. A client
 * attaches under an agent name over the daemon's Unix socket, receives a
 * shared-memory region with its rings and buffers, and then sends and
 * receives notifications without a syscall while both sides are busy.
 * A notification goes to (node, agent): the daemon called node, and the
 * client attached there as agent. docs/client.md has the contract.
 *
 * One thread at a time per struct rn_client (the calls are not locked);
 * use one client per thread to send from several. Every call that can fail
 * returns 0 or a count, or a negative errno. -ENOTCONN from any call means
 * the daemon is gone (it stopped, or detached this client): detach, and
 * attach again.
 */

#include <stdbool.h>
#include <stdint.h>

/* An agent name: 1 to RN_CLIENT_AGENT_MAX bytes, none of them NUL. */
#define RN_CLIENT_AGENT_MAX 128u
/* A node name (a daemon's [node] name): 1 to RN_CLIENT_NODE_MAX bytes. */
#define RN_CLIENT_NODE_MAX 31u
/* Notifications one rn_client_poll() hands over at most. */
#define RN_CLIENT_POLL_MAX 64u
/* The environment variable that names the daemon's socket when the caller
 * gives none. */
#define RN_CLIENT_SOCKET_ENV "RNOTIFY_SOCKET"

/* flags of a send: the only one. */
#define RN_CLIENT_WANT_COMPLETION 1u   /* report the send's fate */

struct rn_client;

/*
 * Attach to the daemon listening on socket (NULL: $RNOTIFY_SOCKET) as
 * agent. Returns 0 and the client in *out, or:
 *   -EINVAL     agent empty, longer than RN_CLIENT_AGENT_MAX or with a NUL;
 *               socket NULL and $RNOTIFY_SOCKET unset
 *   -ENOENT     no socket at that path
 *   -ECONNREFUSED  nothing listens there (the daemon stopped)
 *   -EACCES     the daemon refused this user or group ([client] allow)
 *   -EADDRINUSE another client is attached as agent
 *   -EUSERS     the daemon has [client] max_clients attached
 *   -EPROTO     the daemon speaks another attach protocol version, or
 *               answered something malformed
 *   -ENOMEM, -EMFILE  out of memory or descriptors
 */
int rn_client_attach(const char *socket, const char *agent,
		     struct rn_client **out);

/* Detach and free c, whatever state the daemon is in. Deliveries not yet
 * polled are lost. */
void rn_client_detach(struct rn_client *c);

/*
 * A descriptor that is readable while deliveries, completions or events
 * wait, and when the daemon is gone; for epoll or asyncio's add_reader.
 * Call rn_client_poll() (or _completions(), _events()) when it is readable;
 * they clear it once all is taken. Owned by c.
 */
int rn_client_fd(const struct rn_client *c);

/* The name of the node (daemon) c is attached to, NUL-terminated. */
const char *rn_client_node(const struct rn_client *c);

/*
 * Send (name, msg) to agent on node. Returns 0 when queued for the
 * daemon's lcore, or:
 *   -EAGAIN     the ring to the lcore is full, or the endpoint to node is
 *               still connecting (the first send to a node starts it):
 *               nothing was sent, try again
 *   -ENOENT     no such node is configured or added
 *   -ENOTCONN   the endpoint to node failed and waits to reconnect; or the
 *               daemon is gone
 *   -EMSGSIZE   agent + name + msg do not fit a buffer (the daemon's
 *               [notify] slot_size, see docs/client.md)
 *   -ENOTSUP    the endpoint to node has no native channel (clients send
 *               natively only)
 *   -EINVAL     agent empty or too long, node too long, or flags other
 *               than RN_CLIENT_WANT_COMPLETION
 * A send that fails after it was queued (the endpoint failed before the
 * lcore posted it, or its native channel failed with it in flight) is
 * reported by rn_client_completions() with its cookie and the error,
 * whether or not it asked for a completion. With RN_CLIENT_WANT_COMPLETION
 * a send that went is reported with 0 once the peer's NIC acknowledged it.
 */
int rn_client_send(struct rn_client *c, const char *node, const char *agent,
		   const void *name, uint32_t name_len, const void *msg,
		   uint32_t msg_len, uint64_t cookie, uint32_t flags);

struct rn_client_out {
	const void *name;
	const void *msg;
	uint32_t name_len;
	uint32_t msg_len;
	uint64_t cookie;
};

/*
 * Send out[0..n) to agent on node, in order. Returns how many were
 * queued (the first ones of out), or when none was, the negative errno
 * rn_client_send() gives for out[0]. Send the rest again, as after a
 * short write(2).
 */
int rn_client_send_burst(struct rn_client *c, const char *node,
			 const char *agent, const struct rn_client_out *out,
			 unsigned int n, uint32_t flags);

struct rn_client_notification {
	char node[RN_CLIENT_NODE_MAX + 1];   /* the sender's node */
	char agent[RN_CLIENT_AGENT_MAX + 1]; /* the sender's agent */
	const uint8_t *name;      /* valid until the next rn_client_poll() */
	uint32_t name_len;
	const uint8_t *msg;
	uint32_t msg_len;
};

/*
 * Take up to max (at most RN_CLIENT_POLL_MAX) notifications delivered to
 * this agent, in send order per sending agent. The previous call's buffers
 * go back to the daemon. Returns how many were filled, or -ENOTCONN.
 */
int rn_client_poll(struct rn_client *c, struct rn_client_notification *out,
		   unsigned int max);

struct rn_client_completion {
	uint64_t cookie;
	int status;   /* 0 acknowledged; -EPIPE fate unknown (the channel
		       * failed with it in flight); -ENOTCONN the endpoint
		       * failed before it went; -ENOENT the node was removed */
};

/* Take up to max reports of sends. Returns how many, or -ENOTCONN. */
int rn_client_completions(struct rn_client *c,
			  struct rn_client_completion *out, unsigned int max);

enum rn_client_event_type {
	RN_CLIENT_EVENT_PEER_DOWN = 1,  /* the endpoint to node failed */
	RN_CLIENT_EVENT_PEER_UP,        /* connected again, same incarnation */
	RN_CLIENT_EVENT_PEER_RESTARTED, /* connected, a new incarnation of node:
					 * what it held is gone */
	RN_CLIENT_EVENT_PEER_REMOVED,   /* node was removed from the daemon */
	RN_CLIENT_EVENT_REFUSED,        /* node has no agent `agent` attached:
					 * the notification of `cookie` was
					 * dropped there (docs/client.md) */
};

struct rn_client_event {
	uint32_t type;            /* enum rn_client_event_type */
	int32_t status;
	uint64_t cookie;          /* REFUSED: the send's */
	char node[RN_CLIENT_NODE_MAX + 1];
	char agent[RN_CLIENT_AGENT_MAX + 1];   /* REFUSED: the one absent */
};

/* Take up to max events. Returns how many, or -ENOTCONN. */
int rn_client_events(struct rn_client *c, struct rn_client_event *out,
		     unsigned int max);

/*
 * Wait until a delivery, completion or event is there to take, or the
 * daemon is gone: spin for the client's spin time (RNOTIFY_SPIN_US, default
 * 50 us), then block on rn_client_fd(). timeout_ms < 0 waits for ever.
 * Returns 1 when something waits, 0 on timeout, or -ENOTCONN, -EINTR.
 */
int rn_client_wait(struct rn_client *c, int timeout_ms);

/*
 * Add a peer node to the daemon at run time, as a [peer.NAME] section
 * would: the daemon connects to address:port on first use. Returns 0, or:
 *   -EEXIST  a peer of that name exists
 *   -EINVAL  name or address malformed, port 0
 *   -ENOSPC  the daemon has RN_MAX_ENDPOINTS peers
 *   -EACCES  [client] peers_from_clients is off
 *   -ENOTCONN
 */
int rn_client_peer_add(struct rn_client *c, const char *name,
		       const char *address, uint16_t port);

/* Remove a peer node: its endpoint closes; -ENOENT when there is none. */
int rn_client_peer_remove(struct rn_client *c, const char *name);

#endif /* RN_CLIENT_H */
