/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_REGION_H
#define RN_NOTIFY_REGION_H

/*
 * An lcore's notification buffers: one allocation (hugepage memory when
 * EAL has it, else ordinary memory), registered once, carved into bays.
 *
 * A bay is the buffers of one native channel: `slots` receive slots (the
 * notify QP's receive buffers, [notify] slots) then as many send buffers
 * (one per entry of its send window, rn_notify_window.h), each `slot_size`
 * bytes. An endpoint with a native channel holds one bay; with every bay
 * taken a new endpoint gets no native channel and notifications to it use
 * the TCP fallback (or fail, if that is off). Owning lcore only.
 */

#include <stdbool.h>
#include <stdint.h>

#include "rn_nic.h"

#define RN_NOTIFY_MAX_BAYS 64

struct rn_notify_region {
	uint8_t *base;
	uint64_t bay_size;        /* 2 * slots * slot_size */
	uint32_t n_bays;
	uint32_t slots;           /* receive slots per bay: [notify] slots */
	uint32_t slot_size;       /* bytes per slot and per send buffer */
	uint64_t used;            /* bit b: bay b is taken */
	struct rn_mr mr;
};

/*
 * Allocate and register bays bays. Returns 0, -EINVAL (bays out of
 * 1..RN_NOTIFY_MAX_BAYS), -ENOMEM, or the registration's error.
 */
int rn_notify_region_create(struct rn_nic *nic, uint32_t bays, uint32_t slots,
			    uint32_t slot_size, struct rn_notify_region *out);
void rn_notify_region_destroy(struct rn_nic *nic, struct rn_notify_region *r);

/* Take a free bay: its index, or -ENOSPC. */
int rn_notify_bay_take(struct rn_notify_region *r);
/* Whether rn_notify_bay_take() would find a free bay. */
static inline bool
rn_notify_bay_available(const struct rn_notify_region *r)
{
	return (uint32_t)__builtin_popcountll(r->used) < r->n_bays;
}
/* Put a taken bay back: free for the next rn_notify_bay_take(). */
void rn_notify_bay_put(struct rn_notify_region *r, uint32_t bay);

/* Receive slot `slot` of bay. */
static inline uint8_t *
rn_notify_recv_slot(const struct rn_notify_region *r, uint32_t bay,
		    uint32_t slot)
{
	return r->base + bay * r->bay_size + (uint64_t)slot * r->slot_size;
}

/* The send buffer of window entry `entry` of bay. */
static inline uint8_t *
rn_notify_send_buf(const struct rn_notify_region *r, uint32_t bay,
		   uint32_t entry)
{
	return rn_notify_recv_slot(r, bay, r->slots + entry);
}

#endif /* RN_NOTIFY_REGION_H */
