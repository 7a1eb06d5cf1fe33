/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_CREDIT_H
#define RN_NOTIFY_CREDIT_H

/*
 * Credits: backpressure without RNR. A sender may have at most `depth`
 * SENDs for which the receiver has not reposted a receive slot, so a SEND
 * never meets an empty receive queue and a slow receiver turns into -EAGAIN
 * at the sender, never into an RNR error or a lost notification.
 *
 * Both sides count cumulatively, modulo 2^32: the receiver counts the slots
 * it reposted, the sender how many SENDs that allows in all (`depth` plus
 * that count); the sender's send window (rn_notify_window.h) holds its SENDs
 * to it. The receiver's count reaches the sender in an RDMA WRITE of a
 * credit word (which consumes no receive slot, so it needs no credit
 * itself) once `threshold` reposts are due. The count only grows: a late
 * or repeated update is harmless, the sender keeps the newest in
 * wrap-around order.
 */

#include <stdbool.h>
#include <stdint.h>

/*
 * Sender side, owning lcore only: application threads hand their sends to
 * the lcore that owns the endpoint, so nothing here is shared.
 */
struct rn_credit_tx {
	uint32_t depth;       /* receive slots the peer posted at the start */
	uint32_t returned;    /* the peer's reposted count, as last heard */
};

static inline void
rn_credit_tx_init(struct rn_credit_tx *c, uint32_t depth)
{
	c->depth = depth;
	c->returned = 0;
}

/* SENDs the peer has room for in all: its first slots and those it
 * reposted since (modulo 2^32). */
static inline uint32_t
rn_credit_allowed(const struct rn_credit_tx *c)
{
	return c->depth + c->returned;
}

/* The peer says it has reposted `reposted` slots in all. */
static inline void
rn_credit_returned(struct rn_credit_tx *c, uint32_t reposted)
{
	/* Only forward, in wrap-around order; within a window of 2^31. */
	if ((int32_t)(reposted - c->returned) > 0)
		c->returned = reposted;
}

/* Receiver side, owning lcore only. */
struct rn_credit_rx {
	uint32_t reposted;    /* receive slots reposted so far */
	uint32_t advertised;  /* the count the peer last got from us */
	uint32_t threshold;   /* unadvertised slots that call for an update */
};

static inline void
rn_credit_rx_init(struct rn_credit_rx *c, uint32_t depth)
{
	c->reposted = 0;
	c->advertised = 0;
	/* Half the window: the sender never waits on a full round trip. */
	c->threshold = depth / 2 > 0 ? depth / 2 : 1;
}

/* A slot was reposted. */
static inline void
rn_credit_repost(struct rn_credit_rx *c)
{
	c->reposted++;
}

/* What to tell the peer: the count of slots reposted so far. */
static inline uint32_t
rn_credit_count(const struct rn_credit_rx *c)
{
	return c->reposted;
}

/*
 * The peer was told count (a credit WRITE carrying it was posted). Only
 * then: a post that failed told nothing, and the update stays due.
 */
static inline void
rn_credit_told(struct rn_credit_rx *c, uint32_t count)
{
	c->advertised = count;
}

/* Enough unadvertised slots to send the peer an update. */
static inline bool
rn_credit_update_due(const struct rn_credit_rx *c)
{
	return c->reposted - c->advertised >= c->threshold;
}

#endif /* RN_NOTIFY_CREDIT_H */
