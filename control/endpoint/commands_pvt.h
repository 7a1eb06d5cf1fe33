/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_COMMANDS_PVT_H
#define RN_COMMANDS_PVT_H

/* Commands to the worker lcores (commands.c), never waiting on one. */

#include <stdbool.h>
#include <stdint.h>

struct rn_plane;
struct rn_endpoint;
struct rn_ep_request;

/* To ep's worker, in order; never waits (a full ring: they wait here). */
void rn_ep_send_command(struct rn_plane *pl, struct rn_endpoint *ep,
			uint32_t type, struct rn_ep_request *req);
/* Whether commands wait for room on ep's worker's ring. */
bool rn_ep_commands_waiting(const struct rn_plane *pl,
			    const struct rn_endpoint *ep);
void rn_cmd_backlog_free(struct rn_plane *pl);

#endif /* RN_COMMANDS_PVT_H */
