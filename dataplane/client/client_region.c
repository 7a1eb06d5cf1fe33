/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The layout of a client's region: the header, then per lcore its submit
 * and deliver rings, then per lcore its send and receive buffers, then the
 * events ring, then per lcore its transfer batch slots, each on a 64-byte
 * boundary. Computed the same way by the
 * daemon that builds it and checked by the library that maps it.
 */
#include <errno.h>
#include <string.h>

#include "rn_client_region.h"

#define RN_CLIENT_EVENTS_SIZE 256u   /* control events a client may miss */

static uint64_t
align64(uint64_t n)
{
	return (n + 63) & ~(uint64_t)63;
}

/* What rte_ring_get_memsize_elem() gives, without linking it: the ring
 * header, then count elements, rounded to a cache line. */
static uint64_t
ring_bytes(uint32_t count, uint32_t esize)
{
	return align64(sizeof(struct rte_ring) + (uint64_t)count * esize);
}

static bool
shape_ok(uint32_t n_lcores, uint32_t ring_size, uint32_t buf_size,
	 uint32_t xfer_slots, uint32_t xfer_slot_size)
{
	return n_lcores >= 1 && n_lcores <= RN_CLIENT_MAX_LCORES &&
	       ring_size >= 2 && ring_size <= 65536 &&
	       (ring_size & (ring_size - 1)) == 0 &&
	       buf_size >= 64 && buf_size % 64 == 0 &&
	       xfer_slots <= RN_CLIENT_XFER_SLOTS_MAX &&
	       (xfer_slots == 0 ||
		(xfer_slot_size >= RN_CLIENT_XFER_SLOT_SIZE_MIN &&
		 xfer_slot_size <= RN_CLIENT_XFER_SLOT_SIZE_MAX &&
		 xfer_slot_size % 64 == 0));
}

/* Fill r's offsets for the shape; returns the region's size. */
static uint64_t
lay_out(struct rn_client_region *r, uint32_t n_lcores, uint32_t ring_size,
	uint32_t buf_size, uint32_t xfer_slots, uint32_t xfer_slot_size)
{
	uint64_t at = align64(sizeof(*r));
	uint64_t entries = ring_bytes(ring_size,
				      sizeof(struct rn_client_entry));

	for (uint32_t i = 0; i < n_lcores; i++) {
		r->submit_off[i] = at;
		at += entries;
		r->deliver_off[i] = at;
		at += entries;
	}
	for (uint32_t i = 0; i < n_lcores; i++) {
		r->send_bufs_off[i] = at;
		at += (uint64_t)ring_size * buf_size;
		r->recv_bufs_off[i] = at;
		at += (uint64_t)ring_size * buf_size;
	}
	r->events_off = at;
	at += ring_bytes(RN_CLIENT_EVENTS_SIZE,
			 sizeof(struct rn_client_event));
	/* No slots: every xfer_off stays 0, and so does xfer_slot_size. */
	for (uint32_t i = 0; i < n_lcores && xfer_slots != 0; i++) {
		r->xfer_off[i] = at;
		at += (uint64_t)xfer_slots * xfer_slot_size;
	}
	r->n_lcores = n_lcores;
	r->ring_size = ring_size;
	r->buf_size = buf_size;
	r->xfer_slots = xfer_slots;
	r->xfer_slot_size = xfer_slots != 0 ? xfer_slot_size : 0;
	r->size = at;
	return at;
}

uint64_t
rn_client_region_size(uint32_t n_lcores, uint32_t ring_size,
		      uint32_t buf_size)
{
	return rn_client_region_size_xfer(n_lcores, ring_size, buf_size, 0, 0);
}

uint64_t
rn_client_region_size_xfer(uint32_t n_lcores, uint32_t ring_size,
			   uint32_t buf_size, uint32_t xfer_slots,
			   uint32_t xfer_slot_size)
{
	struct rn_client_region r;

	if (!shape_ok(n_lcores, ring_size, buf_size, xfer_slots,
		      xfer_slot_size))
		return 0;
	memset(&r, 0, sizeof(r));
	return lay_out(&r, n_lcores, ring_size, buf_size, xfer_slots,
		       xfer_slot_size);
}

int
rn_client_region_init(void *mem, uint32_t n_lcores, uint32_t ring_size,
		      uint32_t buf_size)
{
	return rn_client_region_init_xfer(mem, n_lcores, ring_size, buf_size,
					  0, 0);
}

int
rn_client_region_init_xfer(void *mem, uint32_t n_lcores, uint32_t ring_size,
			   uint32_t buf_size, uint32_t xfer_slots,
			   uint32_t xfer_slot_size)
{
	struct rn_client_region *r = mem;
	const unsigned int flags = RING_F_SP_ENQ | RING_F_SC_DEQ;

	if (!shape_ok(n_lcores, ring_size, buf_size, xfer_slots,
		      xfer_slot_size))
		return -EINVAL;
	lay_out(r, n_lcores, ring_size, buf_size, xfer_slots, xfer_slot_size);
	/* Every slot starts free: status 0, a final status the client owns
	 * (the memory is zeroed already; said here, not assumed). */
	for (uint32_t i = 0; i < n_lcores; i++)
		for (uint32_t k = 0; k < xfer_slots; k++)
			rn_client_xfer_slot(r, i, k)->status = 0;
	for (uint32_t i = 0; i < n_lcores; i++) {
		if (rte_ring_init(rn_client_submit_ring(r, i), "rn_client_submit",
				  ring_size, flags) != 0 ||
		    rte_ring_init(rn_client_deliver_ring(r, i),
				  "rn_client_deliver", ring_size, flags) != 0)
			return -EINVAL;
	}
	if (rte_ring_init(rn_client_events_ring(r), "rn_client_events",
			  RN_CLIENT_EVENTS_SIZE, flags) != 0)
		return -EINVAL;
	r->magic = RN_CLIENT_SHM_MAGIC;
	r->version = RN_CLIENT_SHM_VERSION;
	return 0;
}

int
rn_client_region_check(const struct rn_client_region *r, uint64_t size)
{
	struct rn_client_region want;

	if (size < sizeof(*r) || r->magic != RN_CLIENT_SHM_MAGIC ||
	    r->version != RN_CLIENT_SHM_VERSION ||
	    !shape_ok(r->n_lcores, r->ring_size, r->buf_size, r->xfer_slots,
		      r->xfer_slot_size))
		return -EPROTO;
	memset(&want, 0, sizeof(want));
	if (lay_out(&want, r->n_lcores, r->ring_size, r->buf_size,
		    r->xfer_slots, r->xfer_slot_size) != r->size ||
	    r->size > size ||
	    memcmp(want.submit_off, r->submit_off, sizeof(r->submit_off)) ||
	    memcmp(want.deliver_off, r->deliver_off,
		   sizeof(r->deliver_off)) ||
	    memcmp(want.send_bufs_off, r->send_bufs_off,
		   sizeof(r->send_bufs_off)) ||
	    memcmp(want.recv_bufs_off, r->recv_bufs_off,
		   sizeof(r->recv_bufs_off)) ||
	    want.events_off != r->events_off ||
	    want.xfer_slot_size != r->xfer_slot_size ||
	    memcmp(want.xfer_off, r->xfer_off, sizeof(r->xfer_off)))
		return -EPROTO;
	return 0;
}

void
rn_client_status_init(struct rn_client_status_page *page, uint32_t n_lcores)
{
	memset(page, 0, sizeof(*page));
	page->magic = RN_CLIENT_STATUS_MAGIC;
	page->version = RN_CLIENT_SHM_VERSION;
	page->n_lcores = n_lcores;
}
