/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_SLOTS_H
#define RN_NOTIFY_SLOTS_H

/*
 * The send slots of one notify QP, taken and freed in order. Owning lcore
 * only. A SEND holds its slot (its frame, unless that went inline, and the
 * cookie of a completion to report) until the NIC has completed it.
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

#define RN_SEND_SIGNAL_EVERY 16   /* at most; a power of two */

struct rn_send_slots {
	uint32_t n;              /* slots */
	uint32_t head;           /* the slot the next SEND takes */
	uint32_t used;           /* taken, not freed: the oldest is head - used */
	uint32_t signal_mask;    /* every - 1: slot k signals when k & mask == mask */
	uint64_t *cookie;        /* per slot, where want is set */
	uint8_t *want;           /* per slot: report its completion */
};

/* n slots over the caller's arrays of n cookies and n flags, zeroed. */
static inline void
rn_send_slots_init(struct rn_send_slots *s, uint32_t n, uint64_t *cookie,
		   uint8_t *want)
{
	uint32_t every = RN_SEND_SIGNAL_EVERY;

	while (every > 1 && every > n / 2)
		every /= 2;
	*s = (struct rn_send_slots){
		.n = n, .cookie = cookie, .want = want, .signal_mask = every - 1,
	};
}

static inline bool
rn_send_slots_full(const struct rn_send_slots *s)
{
	return s->used == s->n;
}

/* The slot the next SEND takes (when not full). */
static inline uint32_t
rn_send_slots_next(const struct rn_send_slots *s)
{
	return s->head;
}

/* Whether the next SEND must ask for a CQE. */
static inline bool
rn_send_slots_signal(const struct rn_send_slots *s, bool want)
{
	return want || (s->head & s->signal_mask) == s->signal_mask;
}

/* The next SEND was posted, signalled as rn_send_slots_signal() said. */
static inline void
rn_send_slots_push(struct rn_send_slots *s, uint64_t cookie, bool want)
{
	if (want) {
		s->cookie[s->head] = cookie;
		s->want[s->head] = 1;
	}
	s->head = s->head + 1 == s->n ? 0 : s->head + 1;
	s->used++;
}

static inline uint32_t
rn_send_slots_oldest(const struct rn_send_slots *s)
{
	return s->head >= s->used ? s->head - s->used : s->head + s->n - s->used;
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
	uint32_t oldest = rn_send_slots_oldest(s);
	uint32_t done = (slot >= oldest ? slot - oldest : slot + s->n - oldest) + 1;

	if (done > s->used)
		return false;
	s->used -= done;
	return rn_send_slots_take_report(s, slot, cookie);
}

/*
 * The QP failed: free the oldest slot in use (only while used != 0).
 * Returns true when its SEND asked for its completion to be reported, with
 * its cookie in *cookie: it failed.
 */
static inline bool
rn_send_slots_fail_oldest(struct rn_send_slots *s, uint64_t *cookie)
{
	uint32_t slot = rn_send_slots_oldest(s);

	s->used--;
	return rn_send_slots_take_report(s, slot, cookie);
}

#endif /* RN_NOTIFY_SLOTS_H */
