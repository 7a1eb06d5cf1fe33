/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_WINDOW_H
#define RN_NOTIFY_WINDOW_H

/*
 * The send window of one notify QP: its entries, taken and freed in order,
 * bounded by the entries free and by the peer's credits. Owning lcore only.
 * A SEND holds its window entry (the send buffer of that index in the
 * endpoint's bay, unless its frame went inline, and the cookie of a
 * completion to report) until the NIC has completed it, and a credit of
 * the peer's (rn_notify_credit.h). Three free-running counts say it all:
 * SENDs posted, entries freed, SENDs the credits allow; the next SEND may
 * go while posted has not reached the lower of freed + entries and
 * allowed, which is worked out again only when one of those two moves, so
 * that the send path compares once. The entries are a power of two (as
 * many as the peer's receive slots): the next one is posted & mask.
 *
 * Selective signalling: the SEND in every `every`-th entry (entry k with
 * k mod every == every - 1), and each SEND that wants its completion
 * reported, asks for a CQE. An RC send queue completes in order, so the
 * CQE of the SEND in entry k says that it and every SEND before it
 * completed: it frees entry k and every earlier entry at once, and the
 * entries between signalled SENDs need no CQE of their own. Whoever wanted
 * a completion was signalled, so only entry k can have one to report.
 *
 * every is a power of two, at most half the entries (or 1), so entry
 * every - 1 exists: whenever every entry is taken, one of them waits for a
 * CQE, and the window never jams. Deciding by position keeps no counter on
 * the send path. (The SQ ring has its own rule for the rest of what it
 * carries: see rn_sq_fm_ce_se().)
 *
 * When the QP fails, every entry in use fails with it, signalled or not:
 * the error CQE names one WQE, the flushes after it may name others, and
 * none says anything about the unsignalled SENDs around them.
 *
 * Only a SEND that wants its completion leaves its cookie and flag in its
 * entry, which its report clears: each is signalled, so each has its own
 * CQE (or fails with the QP), and an entry reused without them finds its
 * flag clear. The common SEND writes neither.
 */

#include <stdbool.h>
#include <stdint.h>

/* At most; a power of two. rn_sq_fm_ce_se() argues that paced inline
 * SENDs cannot jam the ring at this rate, and tests/nic/test_sim.c that the
 * notify QP's ring takes the largest of them (lcore_notify.c clamps
 * max_inline by it). */
#define RN_SEND_SIGNAL_EVERY 32

/* Whom a SEND's report goes to, in its entry's want; 0: none. */
#define RN_SEND_REPORT_APP 1      /* the embedded API's completions */
#define RN_SEND_REPORT_CLIENT 2   /* a client process (lcore_client.c) */

struct rn_send_window {
	uint32_t mask;           /* entries - 1: a power of two */
	uint32_t posted;         /* SENDs posted so far; the next takes
				  * entry posted & mask */
	uint32_t freed;          /* entries freed so far, in order */
	uint32_t allowed;        /* SENDs the credits allow so far */
	uint32_t until;          /* posted may grow up to this: the lower of
				  * freed + entries and allowed */
	uint32_t signal_mask;    /* every - 1: entry k signals when
				  * k & signal_mask == signal_mask */
	uint64_t *cookie;        /* per entry, where want is set */
	uint8_t *want;           /* per entry: report its completion to
				  * RN_SEND_REPORT_APP or _CLIENT */
};

/* n entries (a power of two) over the caller's arrays of n cookies and n
 * flags, zeroed; no credits yet. */
static inline void
rn_send_window_init(struct rn_send_window *w, uint32_t n, uint64_t *cookie,
		    uint8_t *want)
{
	uint32_t every = RN_SEND_SIGNAL_EVERY;

	while (every > 1 && every > n / 2)
		every /= 2;
	*w = (struct rn_send_window){
		.mask = n - 1, .cookie = cookie, .want = want,
		.signal_mask = every - 1,
	};
}

/* until, after freed or allowed moved. */
static inline void
rn_send_window_bound(struct rn_send_window *w)
{
	uint32_t entries_left = w->freed + w->mask + 1 - w->posted;
	uint32_t credits_left = w->allowed - w->posted;

	w->until = w->posted + (entries_left < credits_left ? entries_left :
							      credits_left);
}

/* The credits now allow allowed SENDs in all (it never goes back). */
static inline void
rn_send_window_allow(struct rn_send_window *w, uint32_t allowed)
{
	w->allowed = allowed;
	rn_send_window_bound(w);
}

/* Entries taken, not freed. */
static inline uint32_t
rn_send_window_used(const struct rn_send_window *w)
{
	return w->posted - w->freed;
}

/* SENDs that have a free entry and a credit each now. */
static inline uint32_t
rn_send_window_room(const struct rn_send_window *w)
{
	return w->until - w->posted;
}

/* Whether the next SEND has a free entry and a credit. */
static inline bool
rn_send_window_open(const struct rn_send_window *w)
{
	return w->posted != w->until;
}

/* The entry the next SEND takes (when open). */
static inline uint32_t
rn_send_window_next(const struct rn_send_window *w)
{
	return w->posted & w->mask;
}

/* Whether the next SEND must ask for a CQE. */
static inline bool
rn_send_window_signal(const struct rn_send_window *w, bool want)
{
	return want || (w->posted & w->signal_mask) == w->signal_mask;
}

/* The next SEND was posted, signalled as rn_send_window_signal() said;
 * want: whom its report goes to (RN_SEND_REPORT_*), 0 for none. */
static inline void
rn_send_window_push(struct rn_send_window *w, uint64_t cookie, uint8_t want)
{
	if (want) {
		w->cookie[w->posted & w->mask] = cookie;
		w->want[w->posted & w->mask] = want;
	}
	w->posted++;
}

static inline uint32_t
rn_send_window_oldest(const struct rn_send_window *w)
{
	return w->freed & w->mask;
}

/* The report entry holds, if any, taken out of it: whom it goes to
 * (RN_SEND_REPORT_*), or 0. */
static inline uint8_t
rn_send_window_take_report(struct rn_send_window *w, uint32_t entry,
			   uint64_t *cookie)
{
	uint8_t want = w->want[entry];

	if (want == 0)
		return 0;
	w->want[entry] = 0;
	*cookie = w->cookie[entry];
	return want;
}

/*
 * The SEND in entry completed (a CQE with status 0): free it and every
 * earlier entry. Returns whom its report goes to (RN_SEND_REPORT_*) when
 * it asked for one, with its cookie in *cookie, else 0. An entry not in
 * use (its SEND already failed with the QP) frees nothing.
 */
static inline uint8_t
rn_send_window_complete(struct rn_send_window *w, uint32_t entry,
			uint64_t *cookie)
{
	uint32_t done = ((entry - w->freed) & w->mask) + 1;

	if (done > rn_send_window_used(w))
		return 0;
	w->freed += done;
	rn_send_window_bound(w);
	return rn_send_window_take_report(w, entry, cookie);
}

/*
 * The QP failed: free the oldest entry in use (only while some are).
 * Returns whom its report goes to (RN_SEND_REPORT_*) when its SEND asked
 * for one, with its cookie in *cookie: it failed; else 0.
 */
static inline uint8_t
rn_send_window_fail_oldest(struct rn_send_window *w, uint64_t *cookie)
{
	uint32_t entry = rn_send_window_oldest(w);

	w->freed++;
	rn_send_window_bound(w);
	return rn_send_window_take_report(w, entry, cookie);
}

#endif /* RN_NOTIFY_WINDOW_H */
