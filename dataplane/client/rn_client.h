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
 * polled are lost. Whatever c handed out goes with it: memory of
 * rn_client_alloc() is unmapped, regions, imported descriptors and
 * batches are freed. */
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
	int status;   /* a send: 0 acknowledged; -EPIPE fate unknown (the
		       * channel failed with it in flight); -ENOTCONN the
		       * endpoint failed before it went; -ENOENT the node was
		       * removed. A batch: its final status
		       * (rn_client_batch_status()) */
	uint32_t kind;/* 0: a send; RN_CLIENT_WRITE or RN_CLIENT_READ: a
		       * batch (rn_client_transfer()) */
};

/* Take up to max reports of sends, and of batches that became final.
 * Returns how many, or -ENOTCONN. */
int rn_client_completions(struct rn_client *c,
			  struct rn_client_completion *out, unsigned int max);

enum rn_client_event_type {
	RN_CLIENT_EVENT_PEER_DOWN = 1,  /* the endpoint to node failed */
	RN_CLIENT_EVENT_PEER_UP,        /* connected again, same incarnation */
	RN_CLIENT_EVENT_PEER_RESTARTED, /* connected, a new incarnation of node:
					 * what it held is gone */
	RN_CLIENT_EVENT_PEER_REMOVED,   /* node was removed from the daemon */
	RN_CLIENT_EVENT_REFUSED,        /* the notification of `cookie` was
					 * dropped at node: status -ENOENT, no
					 * agent `agent` attached there;
					 * -ENOBUFS, its client holds [client]
					 * hold_max frames it has not taken
					 * (docs/client.md) */
};

struct rn_client_event {
	uint32_t type;            /* enum rn_client_event_type */
	int32_t status;
	uint64_t cookie;          /* REFUSED: the send's */
	char node[RN_CLIENT_NODE_MAX + 1];
	char agent[RN_CLIENT_AGENT_MAX + 1];   /* REFUSED: the one refused */
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

/*
 * Transfers (docs/transfers.md): RDMA WRITEs and READs between this
 * process's registered memory and a peer node's, posted by the daemon's
 * lcore, each batch with an optional notification to an agent there that
 * the daemon sends once the data is in place.
 *
 * Memory is registered by file descriptor, since the daemon maps it
 * itself: memory of rn_client_alloc(), or memfd / hugetlbfs files / GPU
 * dma-bufs with rn_client_reg_fd(). Plain malloc() memory cannot be
 * shared with the daemon and is refused (-EFAULT). The address a region is
 * known by, here and to peers, is this process's own.
 */

/* Bytes of a region's descriptor (rn_client_export()). */
#define RN_CLIENT_DESC_SIZE 192
/* Pieces (fds) one region is made of, at most. */
#define RN_CLIENT_REG_MAX_PIECES 16
/* Regions one client has registered at once, at most. */
#define RN_CLIENT_MAX_REGIONS 64
/* Peers' regions one batch names, at most. */
#define RN_CLIENT_XFER_MAX_REMOTES 8
/* Bytes of a published region's name, at most. */
#define RN_CLIENT_PUBLISH_NAME_MAX 63

/* Access a region grants (rn_client_reg()). */
#define RN_CLIENT_LOCAL_WRITE 1u   /* READs land in it */
#define RN_CLIENT_REMOTE_WRITE 2u  /* peers WRITE into it (needs
				    * LOCAL_WRITE) */
#define RN_CLIENT_REMOTE_READ 4u   /* peers READ from it */

/* flags of rn_client_reg_fd(). */
#define RN_CLIENT_REG_DMABUF 1u    /* the fds are dma-bufs (GPU memory) */

/* The name of the notification a target agent gets instead of the one a
 * failed batch carried; its msg is that notification's name. */
#define RN_CLIENT_XFER_FAILED_NAME "rnotify.transfer.failed"

struct rn_client_mr;   /* memory of this process, registered */
struct rn_client_remote;   /* a peer's region, imported */
struct rn_client_batch;    /* one submitted batch */

/*
 * length bytes of memory the daemon can map: a memfd (on hugepages when
 * length is a multiple of 2 MiB and the host has free ones, else of whole
 * 4 KiB pages), mapped shared here, zeroed. Returns 0 with the address in
 * *out, or -EINVAL (length 0), -ENOMEM. Free it with rn_client_free() once
 * no region holds it.
 */
int rn_client_alloc(struct rn_client *c, size_t length, void **out);
/* Returns 0, -EINVAL (not an address rn_client_alloc() gave), -EBUSY (a
 * region still holds part of it). */
int rn_client_free(struct rn_client *c, void *addr);

/*
 * Register [addr, addr + length), which must lie in one allocation of
 * rn_client_alloc(), with the daemon's device for access (RN_CLIENT_*):
 * the whole pages of the allocation that hold it (4 KiB, or 2 MiB on
 * hugepages), which its descriptor then names. Blocks until every lcore
 * registered it. Returns 0 with *out, or:
 *   -EFAULT   the range is not memory of rn_client_alloc(): plain memory
 *             cannot be shared with the daemon; allocate with
 *             rn_client_alloc(), or pass its fds with rn_client_reg_fd()
 *   -EINVAL   length 0, unknown access bits, REMOTE_WRITE without
 *             LOCAL_WRITE
 *   -EEXIST   it overlaps a region of this client
 *   -ENOSPC   RN_CLIENT_MAX_REGIONS regions, or the device's table is full
 *   -ENOTSUP  the daemon has no transfers ([client] xfer_slots = 0)
 *   -ENOMEM, -ENOTCONN, or the device's error (-EPERM: over the daemon's
 *   RLIMIT_MEMLOCK)
 */
int rn_client_reg(struct rn_client *c, void *addr, size_t length,
		  uint32_t access, struct rn_client_mr **out);

/* One piece of a region: length bytes at offset of fd, mapped in this
 * process at consecutive addresses from the region's addr. */
struct rn_client_piece {
	int fd;
	uint64_t offset;
	uint64_t length;
};

/*
 * Register memory made of pieces[0..n) (at most RN_CLIENT_REG_MAX_PIECES),
 * which this process maps contiguously from addr: memfds (the daemon maps
 * them, and seals each against shrinking: made with MFD_ALLOW_SEALING, or
 * sealed F_SEAL_SHRINK already), or with RN_CLIENT_REG_DMABUF dma-bufs of
 * GPU memory (one piece; the device maps it). The fds stay the caller's.
 * addr and each piece's offset and length are whole pages of its file
 * (else -EINVAL). Errors as rn_client_reg(), and -EBADF (an fd the daemon
 * cannot map or seal: a pipe, a socket, a regular file, a memfd without
 * MFD_ALLOW_SEALING; or not a dma-buf), -EOPNOTSUPP
 * (dma-bufs on a device without them, e.g. the sim; several dma-buf
 * pieces).
 */
int rn_client_reg_fd(struct rn_client *c, void *addr,
		     const struct rn_client_piece *pieces, unsigned int n,
		     uint32_t access, uint32_t flags,
		     struct rn_client_mr **out);

/*
 * Deregister r and free it: new batches naming it fail (-EINVAL); this
 * blocks until the batches that use it are final. Returns 0, -ENOTCONN (r
 * is freed all the same: the daemon let go of it when it went).
 */
int rn_client_dereg(struct rn_client *c, struct rn_client_mr *r);

/* Write r's descriptor (node, incarnation, address, length, keys) into buf
 * for the application to hand to its peer. Returns RN_CLIENT_DESC_SIZE, or
 * -ENOSPC (len too small). */
int rn_client_export(const struct rn_client_mr *r, void *buf,
		     size_t len);

/*
 * Publish r under name on the daemon, so that peers' daemons may ask for
 * its descriptor (rn_client_fetch() there): 1 .. RN_CLIENT_PUBLISH_NAME_MAX
 * bytes of letters, digits and "_-.:/", unique on the node. NULL or ""
 * withdraws it; deregistration withdraws it. Returns 0, -EINVAL, -EEXIST,
 * -ENOTCONN.
 */
int rn_client_publish(struct rn_client *c, struct rn_client_mr *r,
		      const char *name);

/*
 * Ask node's daemon for the descriptor it publishes as name (a region of
 * any of its clients, or of its embedded API), blocking up to timeout_ms.
 * Returns RN_CLIENT_DESC_SIZE with it in buf, or rn_transfer_fetch()'s
 * errors (rn_transfer.h): -ENODATA, -EACCES, -ENOENT, -ETIMEDOUT, ...
 */
int rn_client_fetch(struct rn_client *c, const char *node, const char *name,
		    uint32_t timeout_ms, void *buf, size_t len);

/* A peer's region from its descriptor. Returns 0, -EBADMSG, -ENOMEM. */
int rn_client_import(struct rn_client *c, const void *buf, size_t len,
		     struct rn_client_remote **out);
/* The node that exported rem. */
const char *rn_client_remote_node(const struct rn_client_remote *rem);
/* Forget rem: no batch submitted with it may still be in flight. */
void rn_client_forget(struct rn_client *c, struct rn_client_remote *rem);

enum rn_client_xfer_kind {
	RN_CLIENT_WRITE = 1,      /* local -> remote */
	RN_CLIENT_READ = 2,       /* remote -> local */
};

/* One triple: local is a pointer into a region of this client, remote an
 * address in rem (the peer's own address for it). */
struct rn_client_xfer_entry {
	void *local;
	uint64_t remote;
	uint64_t length;
	const struct rn_client_remote *rem;
};

/* The notification a batch carries: to agent on the batch's node, sent by
 * the daemon once the data is there. */
struct rn_client_xfer_notify {
	const char *agent;
	const void *name;
	uint32_t name_len;
	const void *msg;
	uint32_t msg_len;
};

/*
 * Submit entries[0..n) of kind to one node (every rem of the same node),
 * with note (NULL: none). Everything is copied; never blocks. Returns 0
 * with *out, or:
 *   -EINVAL    n 0, a length 0, over RN_CLIENT_XFER_MAX_REMOTES rems, rems
 *              of two nodes, an unknown kind
 *   -E2BIG     the batch does not fit a batch slot (rn_client_xfer_max():
 *              triples, descriptors and the notification)
 *   -EMSGSIZE  the notification does not fit the peer's buffer
 *   -EAGAIN    no free batch slot on that node's lcore, or the endpoint is
 *              still connecting: try again
 *   -ENOENT, -ENOTCONN, -ENOTSUP as rn_client_send()
 * Checks that need the daemon (local ranges in registered regions, remote
 * ranges in their descriptors, a descriptor of an older incarnation of the
 * peer: -ESTALE) come as the batch's final status.
 */
int rn_client_transfer(struct rn_client *c, enum rn_client_xfer_kind kind,
		       const struct rn_client_xfer_entry *entries,
		       unsigned int n, const struct rn_client_xfer_notify *note,
		       uint64_t cookie, struct rn_client_batch **out);

/* Triples one batch holds at most with n_remotes descriptors and a
 * notification of note_bytes (agent + name + msg). */
unsigned int rn_client_xfer_max(const struct rn_client *c,
				unsigned int n_remotes, uint32_t note_bytes);

/*
 * A batch's status, non-blocking: -EINPROGRESS (-ENOTCONN once the daemon
 * is gone: it never becomes final; -EINVAL: b was released), or final: 0
 * (every byte placed, its notification posted after that), or the first
 * error: -EINVAL (a triple outside this client's regions or its rem, or a
 * region being deregistered), -ESTALE (a rem of an older incarnation of
 * the peer), -EACCES, -EFAULT, -ENOTCONN, -EPIPE, -ECANCELED as
 * rn_transfer_status() (rn_transfer.h), or another refusal of the lcore's
 * checks (docs/transfers.md). *bytes_done and *notify_status (either may
 * be NULL) as there.
 */
int rn_client_batch_status(const struct rn_client_batch *b,
			   uint64_t *bytes_done, int *notify_status);

/* Wait for b's final status up to timeout_ms (< 0: for ever; spins then
 * blocks as rn_client_wait()). Returns it, -ETIMEDOUT, or -ENOTCONN. */
int rn_client_batch_wait(struct rn_client *c, struct rn_client_batch *b,
			 int timeout_ms);

/* Cancel, non-blocking: as rn_transfer_cancel(). */
void rn_client_batch_cancel(struct rn_client_batch *b);

/* Free b once final (its slot goes back), or any time once the daemon is
 * gone. Returns 0, -EBUSY (not final), -EINVAL (released already). */
int rn_client_batch_release(struct rn_client *c, struct rn_client_batch *b);

#endif /* RN_CLIENT_H */
