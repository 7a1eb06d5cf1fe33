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
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "rn_client.h"
#include "rn_client_msg.h"
#include "rn_client_shm.h"
#include "rn_xfer_desc.h"

/* Node names remembered, direct-mapped by a hash of the name. */
#define RN_CLIENT_ROUTES 64u
/* How long a spin may go on in rn_client_wait() when RNOTIFY_SPIN_US does
 * not say: 50 us. */
#define RN_CLIENT_SPIN_US_DEFAULT 50u
#define RN_CLIENT_SPIN_ENV "RNOTIFY_SPIN_US"
/* A request's reply must come within this long, or the daemon counts as
 * gone (its control thread answers at once). */
#define RN_CLIENT_REPLY_TIMEOUT_MS 10000
/* REG and DEREG wait for every lcore, which pins memory (seconds for many
 * GiB) or waits for the batches that use the region: this long. */
#define RN_CLIENT_SLOW_REPLY_TIMEOUT_MS 120000

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

/*
 * Memory of rn_client_alloc(): a memfd mapped shared here, which REG passes
 * to the daemon. users counts the regions inside it (rn_client_free() is
 * -EBUSY while there are some).
 */
struct rn_client_alloc {
	struct rn_client_alloc *next;
	uint8_t *base;            /* aligned to unit */
	uint64_t len;             /* mapped bytes: what was asked for, rounded
				   * up to unit */
	uint64_t unit;            /* its page size: 4 KiB, or 2 MiB */
	int fd;
	uint32_t users;
};

/* A registered region: the handle rn_client_reg() gives (rn_client.h). */
struct rn_client_mr {
	uint64_t addr;            /* this process's address of its first byte */
	uint64_t length;
	uint32_t id;              /* the daemon's, 0 .. RN_CLIENT_MAX_REGIONS-1 */
	uint32_t access;
	struct rn_client_alloc *alloc;   /* NULL: rn_client_reg_fd() memory */
	uint8_t desc[RN_CLIENT_DESC_SIZE];
};

/* A peer's region: its descriptor as it came (batches carry it so) and
 * decoded. */
struct rn_client_remote {
	struct rn_client_remote *prev, *next;   /* c->remotes */
	struct rn_xfer_remote r;
	uint8_t desc[RN_CLIENT_DESC_SIZE];
};

/*
 * A batch, one per slot of every lcore (c->batches, allocated at attach):
 * FREE in its lcore's free list; IN_FLIGHT from submission until the
 * library saw its final status and queued its completion report (it is in
 * c->inflight meanwhile); FINAL after that, until released. A batch
 * released before its report was queued (the completion queue was full)
 * is ORPHAN: still in c->inflight, freed when its report is queued. So
 * every batch is reported once, and a slot is written again only after
 * its last batch was reported.
 */
enum rn_client_batch_state {
	RN_CLIENT_BATCH_FREE = 0,
	RN_CLIENT_BATCH_IN_FLIGHT,
	RN_CLIENT_BATCH_FINAL,
	RN_CLIENT_BATCH_ORPHAN,
};

struct rn_client_batch {
	struct rn_client *c;
	struct rn_client_xfer_slot *slot;   /* in c's mapping of the region */
	uint64_t cookie;
	uint32_t lcore;
	uint32_t index;           /* the slot's, in its lcore's */
	uint32_t inflight_pos;    /* in c->inflight, while there */
	/* XFER_DONE entries of this slot not taken yet: one per submission,
	 * less those taken; a dropped one is never taken. */
	uint32_t dones_due;
	int32_t refusal;          /* the final status when refused */
	bool refused;             /* final by an XFER_DONE alone: the lcore
				   * refused the batch without writing the
				   * slot (it could not reach it) */
	uint8_t state;            /* enum rn_client_batch_state */
	uint8_t kind;             /* enum rn_client_xfer_kind */
};

/* Where a batch's request goes on, right after struct rn_client_xfer_req
 * (rn_client_shm.h: "After it, packed"): the descriptors, the triples
 * (not 8-byte aligned: written with memcpy), the notification's bytes.
 * The lcore reads them from the same offset. */
#define RN_CLIENT_XFER_BODY_OFF (offsetof(struct rn_client_xfer_slot, req) + \
				 sizeof(struct rn_client_xfer_req))

static inline uint8_t *
rn_client_xfer_body(struct rn_client_xfer_slot *slot)
{
	return (uint8_t *)slot + RN_CLIENT_XFER_BODY_OFF;
}

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

	/* Transfers (client_xfer.c): xfer_slots batches per lcore. */
	uint32_t xfer_slots;      /* 0: the daemon has no transfers */
	uint32_t xfer_slot_size;
	uint32_t n_inflight;
	struct rn_client_batch *batches;     /* [lcore * xfer_slots + slot] */
	struct rn_client_batch **inflight;   /* n_inflight of them */
	uint32_t *free_slots;     /* per lcore a stack of xfer_slots */
	uint32_t n_free[RN_CLIENT_MAX_LCORES];

	/* Cold. */
	struct rn_client_alloc *allocs;      /* client_mem.c */
	struct rn_client_mr *regions[RN_CLIENT_MAX_REGIONS];   /* by id */
	struct rn_client_remote *remotes;    /* imported, not forgotten */
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

/* client_mem.c */

/* The allocation holding [addr, addr + len), or NULL. */
struct rn_client_alloc *rn_client_alloc_find(struct rn_client *c,
					     uint64_t addr, uint64_t len);
/* Unmap and close every allocation (detach). */
void rn_client_alloc_free_all(struct rn_client *c);

/* client_reg.c */

/* Free every region and imported descriptor, asking the daemon nothing
 * (detach: it lets go of them when the client goes). */
void rn_client_reg_free_all(struct rn_client *c);

/* client_msg.c */

/* Send request type with body (len bytes) and take its reply: its status
 * (0 or -errno), its body in reply (up to cap bytes, *reply_len set when
 * not NULL). -ENOTCONN when the daemon is gone (then c is gone too),
 * -EPROTO when the reply is malformed. No descriptors. */
int rn_client_request(struct rn_client *c, uint16_t type, const void *body,
		      uint32_t len, void *reply, uint32_t cap,
		      uint32_t *reply_len);
/* The same with n_fds descriptors (SCM_RIGHTS, at most
 * RN_CLIENT_REG_MAX_PIECES), waiting timeout_ms for the reply. -EBADF
 * when the kernel refuses a descriptor (c stays attached). */
int rn_client_request_fds(struct rn_client *c, uint16_t type,
			  const void *body, uint32_t len, const int *fds,
			  unsigned int n_fds, int timeout_ms, void *reply,
			  uint32_t cap, uint32_t *reply_len);
/* A node name: 1..RN_CLIENT_NODE_MAX bytes; its length or -EINVAL. */
int rn_client_node_len(const char *name);

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

/* client_xfer.c */

/* The batch slots of the region c mapped: checked (inside the mapping)
 * and their batches allocated. 0, -EPROTO or -ENOMEM. */
int rn_client_xfer_init(struct rn_client *c);
void rn_client_xfer_fini(struct rn_client *c);
/* Queue the completion report of every batch in flight whose final status
 * the slot holds, as far as the completion queue has room (a full deliver
 * ring drops XFER_DONE: the slots are the truth). Returns whether one was
 * queued. */
bool rn_client_xfer_collect(struct rn_client *c);
/* Whether a batch in flight is final and not reported yet. */
bool rn_client_xfer_pending(const struct rn_client *c);
/* An XFER_DONE entry of lcore was taken: then as
 * rn_client_xfer_collect(). */
void rn_client_xfer_done(struct rn_client *c, uint32_t lcore,
			 const struct rn_client_entry *e);

/* Wake lcore if it may sleep, after an enqueue on its submit ring. Pairs
 * with the lcore's store of `sleeping` before its last look at the submit
 * rings: the full fence orders our enqueue (the ring's tail store) before
 * our load of `sleeping`, so either it sees the entry or we see it
 * asleep. */
static inline void
rn_client_wake_lcore(const struct rn_client *c, uint32_t lcore)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->page->lcore[lcore].sleeping,
			    __ATOMIC_RELAXED) != 0) {
		uint64_t one = 1;
		ssize_t n = write(c->wake_fd[lcore], &one, sizeof(one));

		(void)n;
	}
}

/* client_wait.c */

/* CLOCK_MONOTONIC in nanoseconds: the waits' clock. */
uint64_t rn_client_now_ns(void);
/* One step of a wait's spin: false once spin_end or deadline (both
 * rn_client_now_ns()) is reached; else gives the CPU away (sched_yield())
 * and returns true, for the caller to look again. Every wait spins so. */
bool rn_client_spin(uint64_t spin_end, uint64_t deadline);
/* Read the eventfd's count: the writes it adds up are no longer owed. */
void rn_client_drain(struct rn_client *c);
/* Block on rn_client_fd() until the deadline (UINT64_MAX: for ever; one
 * passed: at once), with *woken the descriptors that became readable.
 * Returns 0, rn_client_alive()'s error when the daemon closed the socket,
 * -EINTR, or epoll_wait()'s -errno. */
int rn_client_block(struct rn_client *c, uint64_t deadline, int *woken);

/* Arm for sleeping when nothing waits: drain the eventfd (when a producer
 * or we wrote it), armed = 1, full fence, then look once more. Returns
 * whether something came meanwhile (the caller takes it). */
bool rn_client_arm(struct rn_client *c);
/* Something waits that this call did not take: make sure rn_client_fd()
 * is readable (writes the eventfd ourselves when no one did). */
void rn_client_keep_readable(struct rn_client *c);

#endif /* CLIENT_PVT_H */
