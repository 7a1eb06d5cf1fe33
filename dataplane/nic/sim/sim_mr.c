/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory registrations of a device context (its one protection domain):
 * register, deregister, and the check every engine makes of a key, its
 * access rights and bounds before it touches memory.
 */
#include <errno.h>

#include "sim_pvt.h"

/* Keys: the entry's index + 1 in the high 24 bits, a generation byte below,
 * so a stale key of a deregistered region never matches the entry's next
 * user. */
int
rn_sim_mr_reg(struct rn_nic *nic, void *addr, size_t length, uint64_t iova,
	      uint32_t access, struct rn_mr *mr)
{
	struct sim_ctx *ctx = rn_sim_ctx_of(nic);

	/* As ibv_reg_mr: remote write needs local write. An iova range
	 * must not wrap, as the checks subtract from its end. */
	if ((access & RN_ACCESS_REMOTE_WRITE) &&
	    !(access & RN_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (iova + length < iova)
		return -EINVAL;
	for (uint32_t i = 0; i < SIM_MAX_MRS; i++) {
		struct sim_mr *m = &ctx->mrs[i];

		if (m->key != 0)
			continue;
		ctx->mr_generation++;
		*m = (struct sim_mr){
			.iova = iova,
			.local = addr,
			.length = length,
			.access = access,
			.key = (i + 1) << 8 | (ctx->mr_generation & 0xff),
		};
		*mr = (struct rn_mr){ .addr = (void *)(uintptr_t)iova,
				      .length = length,
				      .lkey = m->key, .rkey = m->key, .priv = m };
		return 0;
	}
	return -ENOSPC;
}

int
rn_sim_mr_reg_dmabuf(struct rn_nic *nic, uint64_t offset, size_t length,
		     uint64_t iova, int fd, uint32_t access, struct rn_mr *mr)
{
	(void)nic, (void)offset, (void)length, (void)iova, (void)fd;
	(void)access, (void)mr;
	return -EOPNOTSUPP;   /* no device memory behind a software NIC */
}

int
rn_sim_mr_dereg(struct rn_nic *nic, struct rn_mr *mr)
{
	struct sim_mr *m = mr->priv;

	if (m == NULL || m->key != mr->lkey)
		return -EINVAL;
	/* Payloads the wires still send from it are copied first. */
	rn_sim_wire_unlend(rn_sim_ctx_of(nic), m->local, m->length);
	m->key = 0;
	mr->priv = NULL;
	return 0;
}

const struct sim_mr *
rn_sim_mr_check(struct sim_ctx *ctx, uint32_t key, uint64_t iova, uint64_t len,
		uint32_t access)
{
	uint32_t index = (key >> 8) - 1;
	const struct sim_mr *m;

	if (index >= SIM_MAX_MRS)
		return NULL;
	m = &ctx->mrs[index];
	if (m->key != key || (m->access & access) != access ||
	    iova < m->iova || len > m->length || iova - m->iova > m->length - len)
		return NULL;
	return m;
}
