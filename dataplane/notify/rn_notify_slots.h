/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_SLOTS_H
#define RN_NOTIFY_SLOTS_H

/*
 * The send slots of one notify QP, taken and freed in order, and the send
 * window they make with the credits. Owning lcore only. A SEND holds its
 * slot (its frame, unless that went inline, and the cookie of a completion
 * to report) until the NIC has completed it, and a credit of the peer's
 * (rn_notify_credit.h). Three free-running counts say it all: SENDs
 * posted, slots freed, SENDs the credits allow; the next SEND may go while
 * posted has not reached the lower of freed + slots and allowed, which is
 * worked out again only when one of those two moves, so that the send path
 * compares once. The slots are a power of two: the next one is posted &
 * mask.
 *
 * Selective signalling: the SEND in every `every`-th slot (slot k with
 * k mod every == every - 1), and each SEND that wants its completion
 * reported, asks for a CQE. An RC send queue completes in order, so the
 * CQE of the SEND in slot k says that it and every SEND before it
 * completed: it frees slot k and every earlier slot at once, and the slots
 * between signalled SENDs need no CQE of their own. Whoever wanted a
 * completion was signalled, so only slot k can have one to report.
 *
 * every is a power of two, at most half the slots (or 1), so slot every - 1
 * exists: whenever every slot is taken, one of them waits for a CQE, and
 * the slots never jam. Deciding by position keeps no counter on the send
 * path. (The SQ ring has its own rule for the rest of what it carries: see
 * rn_sq_fm_ce_se().)
 *
 * When the QP fails, every slot in use fails with it, signalled or not:
 * the error CQE names one WQE, the flushes after it may name others, and
 * none says anything about the unsignalled SENDs around them.
 *
 * Only a SEND that wants its completion leaves its cookie and flag in its
 * slot, which its report clears: each is signalled, so each has its own
 * CQE (or fails with the QP), and a slot reused without them finds its
 * flag clear. The common SEND writes neither.
 */

#include <stdbool.h>
#include <stdint.h>

/* At most; a power of two. rn_sq_fm_ce_se() argues that paced inline
 * SENDs cannot jam the ring at this rate, and tests/nic/test_sim.c that the
 * notify QP's ring takes the largest of them (lcore_notify.c clamps
 * max_inline by it). */
#define RN_SEND_SIGNAL_EVERY 32

struct rn_send_slots {
	uint32_t mask;           /* slots - 1: a power of two */
	uint32_t posted;         /* SENDs posted so far; the next takes
				  * slot posted & mask */
	uint32_t freed;          /* slots freed so far, in order */
	uint32_t allowed;        /* SENDs the credits allow so far */
	uint32_t until;          /* posted may grow up to this: the lower of
				  * freed + slots and allowed */
	uint32_t signal_mask;    /* every - 1: slot k signals when
				  * k & signal_mask == signal_mask */
	uint64_t *cookie;        /* per slot, where want is set */
	uint8_t *want;           /* per slot: report its completion */
};

/* n slots (a power of two) over the caller's arrays of n cookies and n
 * flags, zeroed; no credits yet. */
static inline void
rn_send_slots_init(struct rn_send_slots *s, uint32_t n, uint64_t *cookie,
		   uint8_t *want)
{
	uint32_t every = RN_SEND_SIGNAL_EVERY;

	while (every > 1 && every > n / 2)
		every /= 2;
	*s = (struct rn_send_slots){
		.mask = n - 1, .cookie = cookie, .want = want,
		.signal_mask = every - 1,
	};
}

/* until, after freed or allowed moved. */
static inline void
rn_send_slots_bound(struct rn_send_slots *s)
{
	uint32_t slots_left = s->freed + s->mask + 1 - s->posted;
	uint32_t credits_left = s->allowed - s->posted;

	s->until = s->posted + (slots_left < credits_left ? slots_left :
							    credits_left);
}

/* The credits now allow allowed SENDs in all (it never goes back). */
static inline void
rn_send_slots_allow(struct rn_send_slots *s, uint32_t allowed)
{
	s->allowed = allowed;
	rn_send_slots_bound(s);
}

/* Slots taken, not freed. */
static inline uint32_t
rn_send_slots_used(const struct rn_send_slots *s)
{
	return s->posted - s->freed;
}

/* SENDs that have a free slot and a credit each now. */
static inline uint32_t
rn_send_slots_room(const struct rn_send_slots *s)
{
	return s->until - s->posted;
}

/* Whether the next SEND has a free slot and a credit. */
static inline bool
rn_send_slots_open(const struct rn_send_slots *s)
{
	return s->posted != s->until;
}

/* The slot the next SEND takes (when open). */
static inline uint32_t
rn_send_slots_next(const struct rn_send_slots *s)
{
	return s->posted & s->mask;
}

/* Whether the next SEND must ask for a CQE. */
static inline bool
rn_send_slots_signal(const struct rn_send_slots *s, bool want)
{
	return want || (s->posted & s->signal_mask) == s->signal_mask;
}

/* The next SEND was posted, signalled as rn_send_slots_signal() said. */
static inline void
rn_send_slots_push(struct rn_send_slots *s, uint64_t cookie, bool want)
{
	if (want) {
		s->cookie[s->posted & s->mask] = cookie;
		s->want[s->posted & s->mask] = 1;
	}
	s->posted++;
}

static inline uint32_t
rn_send_slots_oldest(const struct rn_send_slots *s)
{
	return s->freed & s->mask;
}

/* The report slot holds, if any, taken out of it. */
static inline bool
rn_send_slots_take_report(struct rn_send_slots *s, uint32_t slot,
			  uint64_t *cookie)
{
	if (s->want[slot] == 0)
		return false;
	s->want[slot] = 0;
	*cookie = s->cookie[slot];
	return true;
}

/*
 * The SEND in slot completed (a CQE with status 0): free it and every
 * earlier slot. Returns true when it asked for its completion to be
 * reported, with its cookie in *cookie. A slot not in use (its SEND
 * already failed with the QP) frees nothing.
 */
static inline bool
rn_send_slots_complete(struct rn_send_slots *s, uint32_t slot,
		       uint64_t *cookie)
{
	uint32_t done = ((slot - s->freed) & s->mask) + 1;

	if (done > rn_send_slots_used(s))
		return false;
	s->freed += done;
	rn_send_slots_bound(s);
	return rn_send_slots_take_report(s, slot, cookie);
}

/*
 * The QP failed: free the oldest slot in use (only while some are).
 * Returns true when its SEND asked for its completion to be reported, with
 * its cookie in *cookie: it failed.
 */
static inline bool
rn_send_slots_fail_oldest(struct rn_send_slots *s, uint64_t *cookie)
{
	uint32_t slot = rn_send_slots_oldest(s);

	s->freed++;
	rn_send_slots_bound(s);
	return rn_send_slots_take_report(s, slot, cookie);
}

#endif /* RN_NOTIFY_SLOTS_H */
