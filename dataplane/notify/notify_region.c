/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <rte_malloc.h>
#include <string.h>

#include "rn_notify_region.h"

int
rn_notify_region_create(struct rn_nic *nic, uint32_t bays, uint32_t slots,
			uint32_t slot_size, struct rn_notify_region *out)
{
	int rc;

	if (bays == 0 || bays > RN_NOTIFY_MAX_BAYS || slots == 0 ||
	    slot_size == 0)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->n_bays = bays;
	out->slots = slots;
	out->slot_size = slot_size;
	out->bay_size = 2ull * slots * slot_size;
	/* rte_malloc: hugepage memory when EAL runs on hugepages. */
	out->base = rte_malloc("rn_notify_region", out->bay_size * bays, 4096);
	if (out->base == NULL)
		return -ENOMEM;
	rc = rn_nic_mr_reg(nic, out->base, out->bay_size * bays,
			   RN_ACCESS_LOCAL_WRITE, &out->mr);
	if (rc != 0) {
		rte_free(out->base);
		out->base = NULL;
	}
	return rc;
}

void
rn_notify_region_destroy(struct rn_nic *nic, struct rn_notify_region *r)
{
	if (r->base == NULL)
		return;
	nic->ops->mr_dereg(nic, &r->mr);
	rte_free(r->base);
	r->base = NULL;
}

int
rn_notify_bay_take(struct rn_notify_region *r)
{
	for (uint32_t b = 0; b < r->n_bays; b++) {
		if (!(r->used & (1ull << b))) {
			r->used |= 1ull << b;
			return (int)b;
		}
	}
	return -ENOSPC;
}

void
rn_notify_bay_put(struct rn_notify_region *r, uint32_t bay)
{
	r->used &= ~(1ull << bay);
}
