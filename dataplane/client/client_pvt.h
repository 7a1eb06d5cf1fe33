/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef CLIENT_PVT_H
#define CLIENT_PVT_H

/*
 * librnotify's inside: struct rn_client and the calls its files share.
 * Nothing here is exported (librnotify.map lists what is). The hot part
 * (send, poll) touches only the region, the status page and the client's
 * own queues; the socket is for attach, RESOLVE, peers, and for learning
 * that the daemon is gone.
 */

#include <stdbool.h>
#include <stdint.h>

#include "rn_client.h"
#include "rn_client_msg.h"
#include "rn_client_shm.h"

/* Node names remembered, direct-mapped by a hash of the name. */
#define RN_CLIENT_ROUTES 64u
/* How long a spin may go on in rn_client_wait() when RNOTIFY_SPIN_US does
 * not say: 50 us. */
#define RN_CLIENT_SPIN_US_DEFAULT 50u
#define RN_CLIENT_SPIN_ENV "RNOTIFY_SPIN_US"
/* A request's reply must come within this long, or the daemon counts as
 * gone (its control thread answers at once). */
#define RN_CLIENT_REPLY_TIMEOUT_MS 10000

/* A node as the status page had it when we last looked it up. */
struct rn_client_route {
	char name[RN_CLIENT_NODE_MAX + 1];   /* "": the slot is empty */
	uint8_t name_len;
	uint16_t ep_index;
	uint16_t lcore;
	uint32_t tag;
};

/*
 * A FIFO of fixed capacity (a power of two) in the library's memory: the
 * completions and events taken from the rings before the application asks
 * for them, and per lcore the positions of deliveries held in the window.
 */
struct rn_client_fifo {
	uint32_t head;            /* next to take */
	uint32_t tail;            /* next to put */
	uint32_t mask;            /* capacity - 1 */
};

static inline uint32_t
rn_client_fifo_count(const struct rn_client_fifo *f)
{
	return f->tail - f->head;
}

static inline uint32_t
rn_client_fifo_free(const struct rn_client_fifo *f)
{
	return f->mask + 1 - (f->tail - f->head);
}

/*
 * A deliver ring, as this client consumes it. The window is the entries
 * started (rte_ring_dequeue_*_start) but not finished: from `tail` (the
 * ring's consumer tail) for `win` entries. Every COMPLETION and REFUSED
 * in it was copied out already; every DELIVERY in it has its position in
 * `held`: the first `handed` of those went out with the last
 * rn_client_poll() (their buffers are the application's until the next
 * one), the rest wait for a poll. The prefix of the window before the
 * first held delivery can be finished at any time; the handed ones only at
 * the next poll.
 */
struct rn_client_deliver {
	uint32_t tail;            /* position of the window's first entry */
	uint32_t win;             /* entries started, not finished */
	uint32_t handed;          /* of held: handed out by the last poll */
	struct rn_client_fifo held;
	uint32_t *held_pos;       /* ring_size positions */
};

struct rn_client {
	/* Hot: read on every send and poll. */
	struct rn_client_region *region;
	const struct rn_client_status_page *page;
	uint32_t n_lcores;
	uint32_t ring_size;
	uint32_t buf_size;
	bool gone;                /* the daemon is gone: -ENOTCONN for ever */
	uint32_t owed;            /* writes to our eventfd not read yet:
				   * one per take of `armed` by a producer,
				   * one per write of our own */
	uint64_t alive_checked;   /* TSC of the last socket check */
	const struct rn_client_route *last;   /* of the last send */
	struct rn_client_deliver deliver[RN_CLIENT_MAX_LCORES];
	struct rn_client_fifo comp_q;
	struct rn_client_completion *comps;
	struct rn_client_fifo event_q;
	struct rn_client_event *events;
	struct rn_client_route routes[RN_CLIENT_ROUTES];
	int wake_fd[RN_CLIENT_MAX_LCORES];   /* lcore i's, client -> lcore */

	/* Cold. */
	int sock;                 /* SOCK_SEQPACKET to the daemon */
	int efd;                  /* ours, daemon -> client */
	int epfd;                 /* rn_client_fd(): efd and sock */
	uint64_t region_len;      /* mapped bytes of the region */
	uint64_t page_len;        /* mapped bytes of the status page */
	uint32_t spin_us;
	uint32_t client_id;
	char node[RN_CLIENT_NODE_MAX + 1];
};

/* client_gone.c */

/* -ENOTCONN when the daemon is gone (the socket closed, or the region says
 * closed), else 0. Looks at the socket (one recv() syscall) at most about
 * once a millisecond; `now` forces a look. */
int rn_client_alive(struct rn_client *c, bool now);
/* Mark c's daemon gone: every call returns -ENOTCONN from now on, and
 * rn_client_fd() stays readable. Returns -ENOTCONN. */
int rn_client_set_gone(struct rn_client *c);

/* client_msg.c */

/* Send request type with body (len bytes) and take its reply: its status
 * (0 or -errno), its body in reply (up to cap bytes, *reply_len set when
 * not NULL). -ENOTCONN when the daemon is gone (then c is gone too),
 * -EPROTO when the reply is malformed. No descriptors. */
int rn_client_request(struct rn_client *c, uint16_t type, const void *body,
		      uint32_t len, void *reply, uint32_t cap,
		      uint32_t *reply_len);

/* client_route.c */

/* The route to node when its endpoint takes native sends now: 0 and
 * *out; else -EINVAL (node empty or too long), -EAGAIN (connecting; a
 * RESOLVE started it when idle), -ENOTCONN, -ENOTSUP, -ENOENT as
 * rn_client_send() says. */
int rn_client_route(struct rn_client *c, const char *node,
		    const struct rn_client_route **out);
/* Forget node's route (after PEER_REMOVE). */
void rn_client_route_forget(struct rn_client *c, const char *node,
			    uint32_t len);

/* client_poll.c */

/* Move what the rings hold into c's queues (completions, events) and
 * windows (deliveries), as far as the queues have room; finish what can
 * be finished. Returns whether anything new was taken. */
bool rn_client_collect(struct rn_client *c);
/* Whether anything waits for the application, in c's queues or in the
 * rings (no syscall). */
bool rn_client_pending(const struct rn_client *c);

/* client_wait.c */

/* Arm for sleeping when nothing waits: drain the eventfd (when a producer
 * or we wrote it), armed = 1, full fence, then look once more. Returns
 * whether something came meanwhile (the caller takes it). */
bool rn_client_arm(struct rn_client *c);
/* Something waits that this call did not take: make sure rn_client_fd()
 * is readable (writes the eventfd ourselves when no one did). */
void rn_client_keep_readable(struct rn_client *c);

#endif /* CLIENT_PVT_H */
