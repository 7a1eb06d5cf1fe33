/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CLIENT_SHM_H
#define RN_CLIENT_SHM_H

/*
 * What rnotifyd and a client process share, mapped in both (docs/client.md
 * has the picture). Two mappings:
 *
 * The status page, one per daemon, read-only in clients: per lcore whether
 * it sleeps (the client writes that lcore's wake eventfd only then), and
 * the endpoint table (name, lcore, tag, state), so that a client addresses
 * a node and learns "still connecting" without asking the daemon. The
 * control thread writes the table, under a seqlock per entry.
 *
 * The region, one per client (a memfd, on hugepages where there are some),
 * written by both. Per lcore i of the daemon:
 *   submit[i]   client -> lcore i, SP/SC rte_ring of struct rn_client_entry:
 *               SEND. The send buffer of the entry at ring position p is
 *               send_buf(i, p & (ring_size - 1)): the client writes it
 *               before it enqueues; the lcore reads the entries in place
 *               and finishes them only after it has copied their buffers
 *               out, so a finished position's buffer is the client's
 *               again. An entry the lcore cannot post yet (no credit)
 *               stays at the head.
 *   deliver[i]  lcore i -> client, SP/SC rte_ring of rn_client_entry:
 *               DELIVERY, COMPLETION, REFUSED. The receive buffer of the
 *               entry at position p is recv_buf(i, p & (ring_size - 1));
 *               the client holds its deliveries until its next poll and
 *               only then finishes them (the same peek API), which gives
 *               the buffers back.
 *   xfer[i]     xfer_slots batch slots of xfer_slot_size bytes, for
 *               batches to lcore i's endpoints (struct rn_client_xfer_slot):
 *               the client owns a free slot, writes the batch into it and
 *               enqueues an XFER entry naming it on submit[i]; the lcore
 *               copies and checks the batch at once, posts it, and at its
 *               final status stores the result in the slot (status last,
 *               release) and enqueues XFER_DONE on deliver[i]. From then
 *               on the slot is the client's again.
 * and once:
 *   events      control thread -> client, SP/SC rte_ring of struct
 *               rn_client_event (rn_client.h): peer down, up, restarted,
 *               removed.
 * The rings are rte_rings the daemon initialised (rte_ring_init()) inside
 * the region; their inline enqueue and dequeue need no EAL, and no pointer
 * is stored in shared memory: everything is an offset from the region's
 * start. The daemon trusts no index or length it reads from a region, the
 * ring headers included: it keeps its end of each ring in its own memory
 * (rn_client_ring_end.h).
 *
 * Wake-ups. The client arms its eventfd (`armed` = 1) before it sleeps or
 * hands rn_client_fd() to an event loop, then looks at its rings once more;
 * whoever enqueues for it (lcore or control thread) then exchanges `armed`
 * to 0 and writes the client's eventfd when it was 1: one write per sleep,
 * not per notification. The other way the same: the lcore raises its
 * `sleeping` word in the status page before it sleeps and looks at the
 * submit rings once more; the client enqueues, then reads `sleeping`, and
 * writes the lcore's wake eventfd when it is set.
 */

#include <rte_ring.h>
#include <stdalign.h>
#include <stdint.h>

#include "rn_client.h"

#define RN_CLIENT_SHM_MAGIC 0x524e4352u    /* "RNCR" */
#define RN_CLIENT_SHM_VERSION 3u
#define RN_CLIENT_STATUS_MAGIC 0x524e5350u /* "RNSP" */
/* Lcores a client can talk to: the daemon refuses to start with more
 * workers than this while [client] is enabled. */
#define RN_CLIENT_MAX_LCORES 16u
/* Endpoints in the status page: the plane's table (RN_MAX_ENDPOINTS). */
#define RN_CLIENT_STATUS_ENDPOINTS 1024u

enum rn_client_entry_type {
	RN_CLIENT_ENTRY_SEND = 1,       /* client -> lcore: buffer holds a
					 * struct rn_client_send_hdr and more */
	RN_CLIENT_ENTRY_DELIVERY,       /* lcore -> client: buffer holds a
					 * struct rn_client_recv_hdr and more */
	RN_CLIENT_ENTRY_COMPLETION,     /* lcore -> client: cookie, status */
	RN_CLIENT_ENTRY_REFUSED,        /* lcore -> client: buffer holds a
					 * struct rn_client_event */
	RN_CLIENT_ENTRY_XFER,           /* client -> lcore: the batch in
					 * xfer slot `slot` (no buffer) */
	RN_CLIENT_ENTRY_XFER_DONE,      /* lcore -> client: the batch in the
					 * slot named by ep_index is final;
					 * cookie its cookie, status its
					 * status (no buffer: a full ring
					 * drops it, the slot holds the
					 * result) */
};

/* One element of submit[] and deliver[]: 16 bytes, two 8-byte moves. */
struct rn_client_entry {
	uint16_t type;            /* enum rn_client_entry_type */
	uint16_t ep_index;        /* SEND, XFER: the endpoint (status page
				   * index); XFER_DONE: the batch slot
				   * (status has the union) */
	union {
		int32_t status;   /* COMPLETION, XFER_DONE: 0 or -errno */
		uint32_t slot;    /* XFER: the batch slot (of this lcore) */
	};
	uint64_t cookie;          /* SEND, COMPLETION, REFUSED, XFER,
				   * XFER_DONE */
};
_Static_assert(sizeof(struct rn_client_entry) == 16, "ring element size");

/* A send buffer: this header, then agent, name and msg, packed. */
struct rn_client_send_hdr {
	uint32_t ep_tag;          /* the endpoint's tag when the client looked
				   * it up: the lcore refuses the send
				   * (-ENOENT) when it changed */
	uint32_t flags;           /* RN_CLIENT_WANT_COMPLETION */
	uint32_t name_len;
	uint32_t msg_len;
	uint8_t agent_len;        /* the destination agent, 1..AGENT_MAX */
	uint8_t pad[7];
};
_Static_assert(sizeof(struct rn_client_send_hdr) == 24, "packed header");

/* A receive buffer: this header, then name, msg and agent (the
 * sender's), packed, as they lie in the agent frame (one copy). The lcore
 * writes the sender's node name from its endpoint. */
struct rn_client_recv_hdr {
	char node[RN_CLIENT_NODE_MAX + 1];
	uint32_t name_len;
	uint32_t msg_len;
	uint8_t agent_len;
	uint8_t pad[7];
};
_Static_assert(sizeof(struct rn_client_recv_hdr) == 48, "packed header");

/* The region's first bytes. Offsets are from the region's start. */
struct rn_client_region {
	uint32_t magic;           /* RN_CLIENT_SHM_MAGIC */
	uint32_t version;         /* RN_CLIENT_SHM_VERSION */
	uint64_t size;            /* of the whole region */
	uint32_t n_lcores;        /* submit[] and deliver[] rings, each */
	uint32_t ring_size;       /* entries per ring, a power of two */
	uint32_t buf_size;        /* bytes per send and receive buffer */
	uint32_t pad0;
	uint64_t submit_off[RN_CLIENT_MAX_LCORES];
	uint64_t deliver_off[RN_CLIENT_MAX_LCORES];
	uint64_t send_bufs_off[RN_CLIENT_MAX_LCORES];  /* ring_size each */
	uint64_t recv_bufs_off[RN_CLIENT_MAX_LCORES];  /* ring_size each */
	uint64_t events_off;
	uint32_t xfer_slots;      /* batch slots per lcore; 0: no transfers */
	uint32_t xfer_slot_size;  /* bytes per slot, a multiple of 64 */
	uint64_t xfer_off[RN_CLIENT_MAX_LCORES];   /* xfer_slots slots each */
	/* Written by both, on a line of their own. */
	alignas(64) uint32_t armed;  /* the client waits to be woken */
	alignas(64) uint32_t closed; /* the daemon dropped this client */
};

/* The result part of a batch slot: the lcore's, from the XFER entry to
 * the store of status. */
#define RN_CLIENT_XFER_PENDING INT64_MIN

/*
 * A batch request, at the start of its slot. After it, packed and in this
 * order: n_remotes descriptors (RN_CLIENT_DESC_SIZE bytes each, as
 * rn_client_export() writes them), n_entries struct rn_client_xfer_triple,
 * then the notification's agent, name and msg bytes. The lcore reads all
 * of it once, at the XFER entry, and trusts none of it.
 */
struct rn_client_xfer_req {
	uint32_t ep_tag;          /* as rn_client_send_hdr's */
	uint8_t kind;             /* enum rn_client_xfer_kind */
	uint8_t n_remotes;        /* 1 .. RN_CLIENT_XFER_MAX_REMOTES */
	uint8_t note_agent_len;   /* 0: no notification */
	uint8_t pad0;
	uint32_t n_entries;       /* >= 1 */
	uint32_t note_name_len;
	uint32_t note_msg_len;
	uint32_t pad1;
};

struct rn_client_xfer_triple {
	uint64_t local;           /* the client's address */
	uint64_t remote;          /* the peer's address, in remote_index's */
	uint64_t length;
	uint32_t remote_index;    /* into the slot's descriptors */
	uint32_t pad;
};
_Static_assert(sizeof(struct rn_client_xfer_triple) == 32, "packed");

struct rn_client_xfer_slot {
	/* The result, written by the lcore: status last (release). */
	alignas(64) int64_t status;   /* RN_CLIENT_XFER_PENDING, 0, -errno */
	uint64_t bytes_done;
	int32_t notify_status;
	/* The client sets it (relaxed) to cancel; the lcore reads it. */
	uint32_t cancel;
	alignas(64) struct rn_client_xfer_req req;
};
_Static_assert(sizeof(struct rn_client_xfer_slot) == 128, "two lines");

struct rn_client_status_ep {
	uint32_t seq;             /* odd while the control thread writes:
				   * an rte_seqcount_t, read with
				   * rte_seqcount_read_begin()/_retry() */
	uint32_t tag;             /* new for every peer bound to this index;
				   * 0: the entry is free */
	uint16_t lcore;           /* the worker (submit ring) that owns it */
	uint8_t state;            /* enum rn_client_ep_state */
	uint8_t pad;
	char name[RN_CLIENT_NODE_MAX + 1];
};

enum rn_client_ep_state {
	RN_CLIENT_EP_FREE = 0,
	RN_CLIENT_EP_IDLE,        /* never used: a send asks to connect */
	RN_CLIENT_EP_CONNECTING,  /* -EAGAIN */
	RN_CLIENT_EP_NATIVE,      /* sends go */
	RN_CLIENT_EP_NO_NATIVE,   /* connected without a native channel:
				   * -ENOTSUP (clients send natively only) */
	RN_CLIENT_EP_DOWN,        /* failed, waits to reconnect: -ENOTCONN */
};

struct rn_client_status_page {
	uint32_t magic;           /* RN_CLIENT_STATUS_MAGIC */
	uint32_t version;         /* RN_CLIENT_SHM_VERSION */
	uint32_t n_lcores;
	uint32_t n_endpoints;     /* entries in use at most */
	struct {
		alignas(64) uint32_t sleeping;  /* the lcore may be asleep */
	} lcore[RN_CLIENT_MAX_LCORES];
	struct rn_client_status_ep ep[RN_CLIENT_STATUS_ENDPOINTS];
};

static inline void *
rn_client_region_at(const struct rn_client_region *r, uint64_t off)
{
	return (uint8_t *)(uintptr_t)r + off;
}

static inline struct rte_ring *
rn_client_submit_ring(const struct rn_client_region *r, uint32_t lcore)
{
	return rn_client_region_at(r, r->submit_off[lcore]);
}

static inline struct rte_ring *
rn_client_deliver_ring(const struct rn_client_region *r, uint32_t lcore)
{
	return rn_client_region_at(r, r->deliver_off[lcore]);
}

static inline struct rte_ring *
rn_client_events_ring(const struct rn_client_region *r)
{
	return rn_client_region_at(r, r->events_off);
}

static inline uint8_t *
rn_client_send_buf(const struct rn_client_region *r, uint32_t lcore,
		   uint32_t pos)
{
	return (uint8_t *)rn_client_region_at(r, r->send_bufs_off[lcore]) +
	       (uint64_t)(pos & (r->ring_size - 1)) * r->buf_size;
}

static inline uint8_t *
rn_client_recv_buf(const struct rn_client_region *r, uint32_t lcore,
		   uint32_t pos)
{
	return (uint8_t *)rn_client_region_at(r, r->recv_bufs_off[lcore]) +
	       (uint64_t)(pos & (r->ring_size - 1)) * r->buf_size;
}

static inline struct rn_client_xfer_slot *
rn_client_xfer_slot(const struct rn_client_region *r, uint32_t lcore,
		    uint32_t slot)
{
	return (struct rn_client_xfer_slot *)
		((uint8_t *)rn_client_region_at(r, r->xfer_off[lcore]) +
		 (uint64_t)slot * r->xfer_slot_size);
}

#endif /* RN_CLIENT_SHM_H */
