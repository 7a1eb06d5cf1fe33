/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_LCORE_XFER_H
#define RN_LCORE_XFER_H

/*
 * The transfer engine's interface between the application side
 * (dataplane/api/transfer_api.c) and the lcore that owns an endpoint
 * (lcore_transfer.c). Every operation is a struct rn_xfer_op handed over
 * by pointer through the lcore's transfer ring (MP/SC): registrations of
 * memory with the lcore's device, and batches. The lcore answers an op by
 * a release-store of `answer`; a batch's final status comes later, in
 * `status` (docs/transfers.md).
 */

#include <stdbool.h>
#include <stdint.h>

#include "rn_nic.h"
#include "rn_xfer_desc.h"

struct rn_lcore;

#define RN_XFER_PENDING INT64_MIN
#define RN_XFER_RING_SIZE 1024     /* ops queued per lcore at most */
/* Chunks signalled on a data QP: at least one in this many, and the last
 * one posted on it each turn (lcore_transfer.c). */
#define RN_XFER_SIGNAL_EVERY 16
/* READs a data QP has outstanding at most, as requester and responder:
 * what data QPs are connected with (lcore_qp.c), and what the engine
 * keeps within. */
#define RN_XFER_RD_ATOMIC 16
/* The name of the notification that tells a target a batch failed; its
 * msg is the name of the notification it will not get (rn_transfer.h's
 * RN_TRANSFER_FAILED_NAME). */
#define RN_XFER_FAILED_NAME "rnotify.transfer.failed"
/* The chunk size of client processes' batches (lcore_client_xfer.c): the
 * sim's largest message, as the embedded API's default. */
#define RN_XFER_CLIENT_CHUNK (1u << 20)

enum rn_xfer_op_type {
	RN_XFER_OP_REG = 1,       /* register mem with the lcore's device */
	RN_XFER_OP_DEREG,         /* deregister it */
	RN_XFER_OP_BATCH,         /* a batch: struct rn_xfer_batch */
};

struct rn_xfer_op {
	uint32_t type;            /* enum rn_xfer_op_type */
	int64_t answer;           /* RN_XFER_PENDING until the lcore answers:
				   * 0 or -errno (release-stored) */
};

struct rn_xfer_reg {
	struct rn_xfer_op op;
	void *addr;               /* host memory; with dmabuf, the iova */
	uint64_t length;
	uint32_t access;          /* enum rn_access */
	struct rn_mr *mr;         /* REG fills it, DEREG takes it */
	/* REG of device memory (GPU): length bytes at offset of the dma-buf
	 * fd, known by addr as iova (rn_nic_mr_reg_dmabuf()). The fd is
	 * the caller's; the device holds its own reference once
	 * registered. */
	bool dmabuf;
	int fd;
	uint64_t offset;
};

/* One (local, remote, length) triple, resolved by the application side. */
struct rn_xfer_entry {
	uint64_t laddr;
	uint64_t raddr;
	uint64_t length;
	uint32_t lkey;            /* of the endpoint's lcore */
	uint32_t rkey;            /* the lcore fills it at acceptance */
	const struct rn_xfer_remote *remote;
	uint32_t *users;          /* the local region's count of batches */
};

enum rn_xfer_kind {
	RN_XFER_WRITE = 1,
	RN_XFER_READ = 2,
};

/*
 * A batch. The application side fills the first part and hands it over;
 * the lcore owns the middle part from acceptance to the final status; the
 * last part is shared.
 */
struct rn_xfer_batch {
	struct rn_xfer_op op;     /* answer: accepted (0) or refused */
	uint32_t ep_index;
	uint8_t kind;             /* enum rn_xfer_kind */
	uint32_t n_entries;
	struct rn_xfer_entry *entries;
	const uint8_t *note_name; /* the notification after its data, or */
	const uint8_t *note_msg;  /* name_len 0: none */
	uint32_t note_name_len;
	uint32_t note_msg_len;
	uint32_t chunk_size;
	/* A client process's batch (lcore_client_xfer.c; all zero for the
	 * embedded API's): its notification is an agent frame to note_agent
	 * from note_src, whose failure notice's body (RN_XFER_FAILED_NAME,
	 * then the note's name) is note_fail; on_final is called once the final
	 * status is stored; cancel is read at cancel_at. */
	const uint8_t *note_agent;   /* NULL: a node-level notification */
	const uint8_t *note_src;
	const uint8_t *note_fail;
	uint8_t note_agent_len;
	uint8_t note_src_len;
	uint64_t cookie;             /* the agent frame's (the client's) */
	bool no_wait;                /* no credit for the notification at
				      * the end: it is not sent (-EAGAIN) */
	void (*on_final)(struct rn_lcore *lc, struct rn_xfer_batch *b);
	const uint32_t *cancel_at;   /* NULL: &cancel (set at acceptance) */
	/* The lcore's, between acceptance and the final status. */
	struct rn_lcore_ep *ep;
	uint32_t next_entry;      /* the next chunk to post: entry, offset */
	uint64_t next_off;
	uint32_t chunks_out;      /* posted, not known complete */
	uint64_t done;            /* bytes known complete */
	int error;                /* the first error */
	uint8_t notify_due;       /* 1: the notification; 2: the failure one */
	struct rn_xfer_batch *next;   /* the lcore's list */
	/* Shared. */
	uint32_t cancel;          /* the application sets it (relaxed) */
	int32_t notify_status;    /* 0 sent, or why not (set before status) */
	uint64_t bytes_done;      /* final, set before status */
	int64_t status;           /* RN_XFER_PENDING, then 0 or -errno
				   * (release-stored) */
};

/* Set up lc's transfer ring and state (rn_lcore_init()). 0 or -ENOMEM. */
int rn_lcore_xfer_init(struct rn_lcore *lc);
void rn_lcore_xfer_fini(struct rn_lcore *lc);

/* Any thread: hand op to lc and wake it. Returns 0 or -ENOBUFS. */
int rn_lcore_xfer_submit(struct rn_lcore *lc, struct rn_xfer_op *op);

/* The owning lcore: take b, filled as a ring's batch would be (its entries'
 * users counted), into the engine; 0, or the refusal (nothing of b kept).
 * For batches made on the lcore itself (lcore_client_xfer.c). */
int rn_lcore_xfer_accept(struct rn_lcore *lc, struct rn_xfer_batch *b);

/* The owning lcore, once a turn: take ops, post chunks. Returns work. */
unsigned int rn_lcore_xfer_poll(struct rn_lcore *lc);
/* Whether ops wait in lc's ring (the idle check). */
bool rn_lcore_xfer_queued(const struct rn_lcore *lc);

#endif /* RN_LCORE_XFER_H */
