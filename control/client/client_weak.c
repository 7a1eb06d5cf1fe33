/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TEMPORARY: defaults for what other #17 branches implement (the lcores'
 * sleeping word, the plane's status page and run-time peers), so that the
 * client server links before they are merged. Each is weak: the real one
 * replaces it. Removed once main has them.
 */
#include <errno.h>

#include "client_pvt.h"

__attribute__((weak)) void
rn_lcore_set_client_sleeping(struct rn_lcore *lc, uint32_t *sleeping)
{
	(void)lc;
	(void)sleeping;
}

__attribute__((weak)) void
rn_plane_set_clients(struct rn_plane *pl, struct rn_client_status_page *page,
		     void (*observer)(void *arg, uint32_t ep_index, int event),
		     void *arg)
{
	(void)pl;
	(void)page;
	(void)observer;
	(void)arg;
}

__attribute__((weak)) int
rn_plane_peer_add(struct rn_plane *pl, const char *name, const char *address,
		  uint16_t port)
{
	(void)pl;
	(void)name;
	(void)address;
	(void)port;
	return -ENOSYS;
}

__attribute__((weak)) int
rn_plane_peer_remove(struct rn_plane *pl, const char *name)
{
	(void)pl;
	(void)name;
	return -ENOSYS;
}
