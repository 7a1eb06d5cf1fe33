/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TEMPORARY: a default for what the lcore branch of #17 implements (the
 * lcores' sleeping word), so that the client server links before it is
 * merged. Weak: the real one replaces it. Removed once main has it.
 */
#include "client_pvt.h"

__attribute__((weak)) void
rn_lcore_set_client_sleeping(struct rn_lcore *lc, uint32_t *sleeping)
{
	(void)lc;
	(void)sleeping;
}
