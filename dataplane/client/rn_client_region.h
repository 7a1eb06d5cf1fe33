/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CLIENT_REGION_H
#define RN_CLIENT_REGION_H

/*
 * Laying out a client's region (rn_client_shm.h): the daemon computes its
 * size and initialises it; the library checks what it mapped before it
 * trusts an offset.
 */

#include <stdint.h>

#include "rn_client_shm.h"

/* Bytes of a region of n_lcores rings of ring_size entries each way and a
 * buffer of buf_size bytes per entry; 0 when the shape is not allowed
 * (ring_size not a power of two of 2..65536, n_lcores 0 or over
 * RN_CLIENT_MAX_LCORES, buf_size not a multiple of 64). */
uint64_t rn_client_region_size(uint32_t n_lcores, uint32_t ring_size,
			       uint32_t buf_size);

/* Transfer batch slots per lcore at most, and the bounds of a slot's
 * size ([client] xfer_slots, xfer_slot_size). */
#define RN_CLIENT_XFER_SLOTS_MAX 1024u
#define RN_CLIENT_XFER_SLOT_SIZE_MIN 4096u
#define RN_CLIENT_XFER_SLOT_SIZE_MAX (4u << 20)

/* The same with xfer_slots batch slots of xfer_slot_size bytes per lcore
 * (xfer_slots 0: none, and xfer_slot_size is not looked at; else
 * xfer_slot_size a multiple of 64 within the bounds above). The two-size
 * calls are these with no slots. */
uint64_t rn_client_region_size_xfer(uint32_t n_lcores, uint32_t ring_size,
				    uint32_t buf_size, uint32_t xfer_slots,
				    uint32_t xfer_slot_size);

/* Lay the region out in mem (zeroed, rn_client_region_size() bytes):
 * header, empty rings. Returns 0 or -EINVAL. Needs librte_ring. */
int rn_client_region_init(void *mem, uint32_t n_lcores, uint32_t ring_size,
			  uint32_t buf_size);
/* The same with batch slots, each with status 0 (free). */
int rn_client_region_init_xfer(void *mem, uint32_t n_lcores,
			       uint32_t ring_size, uint32_t buf_size,
			       uint32_t xfer_slots, uint32_t xfer_slot_size);

/* Whether the size bytes mapped at r hold a region of this version whose
 * every ring and buffer lies inside them: 0 or -EPROTO. Pure: no DPDK
 * symbol, for the client library. */
int rn_client_region_check(const struct rn_client_region *r, uint64_t size);

/* The status page, zeroed, for n_lcores lcores. */
void rn_client_status_init(struct rn_client_status_page *page,
			   uint32_t n_lcores);

#endif /* RN_CLIENT_REGION_H */
