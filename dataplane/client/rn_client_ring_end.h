/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CLIENT_RING_END_H
#define RN_CLIENT_RING_END_H

/*
 * The daemon's end of one of a client's rings (rn_client_shm.h): the only
 * consumer of a submit ring, the only producer of a deliver or events
 * ring. The ring's mask and this end's position live here, in the
 * daemon's memory; of the ring header in the region only the other end's
 * tail is read. A client that overwrites its headers then garbles its own
 * entries and nothing else: every element the daemon reads or writes lies
 * inside the ring it made, which rte_ring's own enqueue and dequeue,
 * reading size and mask from the header each time, do not promise.
 *
 * The client's side stays rte_ring's SP/SC enqueue and dequeue: the
 * elements follow the header, as rte_ring lays them out, and this end
 * publishes its head and tail as rte_ring does (the tail with release,
 * after the elements). The rings are made without RING_F_EXACT_SZ, so
 * they take mask entries at most.
 */

#include <rte_ring.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rn_client_ring_end {
	struct rte_ring *r;       /* its header, in the region */
	uint8_t *elems;           /* element 0, right after the header */
	uint32_t mask;            /* its size - 1, as the daemon made it */
	uint32_t pos;             /* this end's head, and tail */
	uint32_t room;            /* a producer's: entries known free, so
				   * that the consumer's tail, a line the
				   * client writes, is read only when they
				   * run out */
};

/* The daemon's end of r, a ring of mask + 1 elements it made. */
static inline void
rn_client_ring_end_init(struct rn_client_ring_end *e, struct rte_ring *r,
			uint32_t mask, bool producer)
{
	e->r = r;
	e->elems = (uint8_t *)(r + 1);
	e->mask = mask;
	e->pos = __atomic_load_n(producer ? &r->prod.tail : &r->cons.tail,
				 __ATOMIC_RELAXED);
	e->room = 0;
}

/* ---- the consumer's end (submit) ---- */

/* Entries the producer made visible, from this end's position on. A
 * count over mask says the header was overwritten: none. */
static inline uint32_t
rn_client_ring_end_count(const struct rn_client_ring_end *e)
{
	uint32_t n = __atomic_load_n(&e->r->prod.tail, __ATOMIC_ACQUIRE) -
		     e->pos;

	return n <= e->mask ? n : 0;
}

/* The element i places past this end's position (of esize bytes). */
static inline void *
rn_client_ring_end_at(const struct rn_client_ring_end *e, uint32_t i,
		      uint32_t esize)
{
	return e->elems + (size_t)((e->pos + i) & e->mask) * esize;
}

/* The first n entries are done with: theirs are the producer's again. */
static inline void
rn_client_ring_end_take(struct rn_client_ring_end *e, uint32_t n)
{
	struct rte_ring *r = e->r;
	uint32_t pos = e->pos + n;

	/* From locals: a store into the region may alias e, to the
	 * compiler. */
	e->pos = pos;
	__atomic_store_n(&r->cons.head, pos, __ATOMIC_RELAXED);
	__atomic_store_n(&r->cons.tail, pos, __ATOMIC_RELEASE);
}

/* ---- the producer's end (deliver, events) ---- */

/* Whether one more entry fits. A consumer tail the position is not within
 * mask of says the header was overwritten: it does not. */
static inline bool
rn_client_ring_end_room(struct rn_client_ring_end *e)
{
	uint32_t used;

	if (e->room != 0)
		return true;
	used = e->pos - __atomic_load_n(&e->r->cons.tail, __ATOMIC_ACQUIRE);
	e->room = used < e->mask ? e->mask - used : 0;
	return e->room != 0;
}

/* Publish the element written at rn_client_ring_end_at(e, 0, ...), after
 * rn_client_ring_end_room() said it fits. */
static inline void
rn_client_ring_end_put(struct rn_client_ring_end *e)
{
	struct rte_ring *r = e->r;
	uint32_t pos = e->pos + 1;

	e->pos = pos;
	e->room--;
	__atomic_store_n(&r->prod.head, pos, __ATOMIC_RELAXED);
	__atomic_store_n(&r->prod.tail, pos, __ATOMIC_RELEASE);
}

#endif /* RN_CLIENT_RING_END_H */
