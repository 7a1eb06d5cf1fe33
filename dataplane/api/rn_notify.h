/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_H
#define RN_NOTIFY_H

/*
 * Notifications: (name, msg) byte strings to a peer process, natively as
 * one RDMA SEND on the endpoint's notify QP, or over the control
 * connection (TCP) when the peer has no native channel or the message is
 * too large for a slot and the fallback is allowed. docs/notifications.md
 * has the contract and the design.
 *
 * The calls below are for application threads (any number may send; one at
 * a time may poll). A send is handed to the lcore that owns the endpoint
 * and answered by it: success means the SEND was posted (local
 * submission), not that the peer has it; ask for a completion to learn
 * that.
 */

#include <stdbool.h>
#include <stdint.h>

/* name + msg of one notification at most: a frame (8 bytes of lengths,
 * RN_NOTIFY_OVERHEAD) fills a 64 KiB slot, the largest [notify] slot_size. */
#define RN_NOTIFY_MAX_PAYLOAD 65528u
/* Notifications one rn_notify_poll() hands over at most. */
#define RN_NOTIFY_POLL_MAX 64
/* Completion reports the process holds until rn_notify_completions() takes
 * them; also the notifications that came over TCP it holds undelivered. */
#define RN_NOTIFY_RING_SIZE 4096

/* flags of a send: the only one. */
#define RN_NOTIFY_WANT_COMPLETION 1u   /* report the send's fate */

struct rn_notify;

/*
 * Send (name, msg) to the peer called peer. Returns 0 when submitted, or:
 *   -EAGAIN     no credit or send-window entry now, or 1 MiB already
 *               queued over TCP (backpressure), or the endpoint is still
 *               connecting; nothing was sent
 *   -EMSGSIZE   larger than a slot and the TCP fallback is off
 *   -ENOTSUP    the peer has no native channel and the fallback is off
 *   -ENOTCONN   the endpoint failed and waits to reconnect
 *   -EPIPE      the native channel failed (a QP fault): never replayed
 *   -ENOENT     no such peer
 *   -E2BIG      name + msg over RN_NOTIFY_MAX_PAYLOAD bytes
 *   -EINVAL     flags other than RN_NOTIFY_WANT_COMPLETION
 *   -ENOMEM     over TCP: no memory for the frame
 * With RN_NOTIFY_WANT_COMPLETION, rn_notify_completions() later reports
 * cookie with 0 (the peer's NIC acknowledged it; over TCP: the frame was
 * queued on the control connection) or -EPIPE (not acknowledged: the QP
 * failed with it in flight, so the peer may or may not have it; it is
 * never replayed).
 */
int rn_notify_send(struct rn_notify *nf, const char *peer, const void *name,
		   uint32_t name_len, const void *msg, uint32_t msg_len,
		   uint64_t cookie, uint32_t flags);

/* One notification of a burst. */
struct rn_notify_out {
	const void *name;
	const void *msg;
	uint32_t name_len;
	uint32_t msg_len;
	uint64_t cookie;          /* reported with RN_NOTIFY_WANT_COMPLETION */
};

/*
 * Send out[0..n) to peer, in that order, in one hand-over to its lcore,
 * which posts them with one doorbell. Returns how many were submitted, the
 * first ones of out, or when none was, the negative errno rn_notify_send()
 * gives for out[0] (the same list). It stops before the first one that
 * cannot go now (no credit or send-window entry, one over E2BIG), and
 * before any that goes over TCP but the first: send the rest again, as
 * after a short write(2). flags apply to each. n = 0 sends nothing and
 * returns 0.
 */
int rn_notify_send_burst(struct rn_notify *nf, const char *peer,
			 const struct rn_notify_out *out, unsigned int n,
			 uint32_t flags);

struct rn_notification {
	char peer[32];
	const uint8_t *name;      /* valid until the next rn_notify_poll() */
	uint32_t name_len;
	const uint8_t *msg;
	uint32_t msg_len;
	bool native;              /* arrived by RDMA (else over TCP) */
};

/*
 * Take up to max (at most RN_NOTIFY_POLL_MAX) delivered notifications,
 * oldest first per sender. Their buffers go back (and become credits for
 * the sender) at the next call; max = 0 only gives them back. One thread
 * at a time. Returns how many were filled; it cannot fail.
 */
unsigned int rn_notify_poll(struct rn_notify *nf, struct rn_notification *out,
			    unsigned int max);

struct rn_notify_completion {
	uint64_t cookie;
	int status;               /* 0 acknowledged, -EPIPE fate unknown */
};

/*
 * Take up to max reports of sends that asked for one. One thread at a
 * time. The ring holds RN_NOTIFY_RING_SIZE: drain it, or the newest
 * reports are dropped (counted). Returns how many were filled; it cannot
 * fail.
 */
unsigned int rn_notify_completions(struct rn_notify *nf,
				   struct rn_notify_completion *out,
				   unsigned int max);

/*
 * For the process that runs the engine (rnotifyd, or an application built
 * into it), not for application threads.
 */
struct rn_plane;
struct rn_lcore;

/*
 * The engine over plane's endpoints and the n_workers lcores that own
 * them (each lcore applies [notify] oob_fallback). Returns 0 or -ENOMEM.
 */
int rn_notify_create(struct rn_plane *plane, struct rn_lcore **workers,
		     unsigned int n_workers, struct rn_notify **out);
void rn_notify_free(struct rn_notify *nf);

/*
 * At shutdown, once no application polls: give back every slot the last
 * poll handed out and drop what was delivered but never polled, so that the
 * endpoints can close. Returns how many were dropped.
 */
unsigned int rn_notify_discard(struct rn_notify *nf);

/*
 * Deliveries that waited for their turn in send order across an endpoint's
 * two channels, and those of them that went without it after the wait
 * (notify_order_pvt.h). From any thread.
 */
void rn_notify_order_counts(const struct rn_notify *nf, uint64_t *parked,
			    uint64_t *overdue);

#endif /* RN_NOTIFY_H */
