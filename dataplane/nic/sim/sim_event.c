/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sim device's asynchronous events, as a ConnectX raises them: a CQ
 * overrun (the CQ stops without a CQE) and, for tests, either of a port
 * going down and a CQ error (the event alone).
 * Raised on the owning lcore (or a test's thread), taken by the control
 * thread: under a lock, a CQ error told once however often raised (the
 * first one stops the worker anyway) and a count of port events; an
 * eventfd readable while any is untold.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sim_pvt.h"

int
rn_sim_events_open(struct sim_ctx *ctx)
{
	rte_spinlock_init(&ctx->events_lock);
	ctx->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return ctx->event_fd < 0 ? -errno : 0;
}

void
rn_sim_events_close(struct sim_ctx *ctx)
{
	if (ctx->event_fd >= 0)
		close(ctx->event_fd);
}

void
rn_sim_event_raise(struct sim_ctx *ctx, enum sim_event kind)
{
	rte_spinlock_lock(&ctx->events_lock);
	if (kind == SIM_EVENT_CQ_ERR)
		ctx->cq_error_raised = true;
	else
		ctx->port_events++;
	rte_spinlock_unlock(&ctx->events_lock);
	eventfd_write(ctx->event_fd, 1);
}

int
rn_sim_event_fd(struct rn_nic *nic)
{
	return rn_sim_ctx_of(nic)->event_fd;
}

int
rn_sim_event_take(struct rn_nic *nic, char *text, size_t len, bool *fatal)
{
	struct sim_ctx *ctx = rn_sim_ctx_of(nic);
	eventfd_t count;

	rte_spinlock_lock(&ctx->events_lock);
	*fatal = ctx->cq_error_raised && !ctx->cq_error_told;
	if (*fatal) {
		ctx->cq_error_told = true;
	} else if (ctx->port_events != 0) {
		ctx->port_events--;
	} else {
		/* Readable no more, until the next raise writes it again. */
		eventfd_read(ctx->event_fd, &count);
		rte_spinlock_unlock(&ctx->events_lock);
		return 0;
	}
	rte_spinlock_unlock(&ctx->events_lock);
	snprintf(text, len, "%s", *fatal ? "CQ error (overrun)" :
		 "port error, port 1");
	return 1;
}

void
rn_sim_raise_event(struct rn_nic *nic, bool fatal)
{
	rn_sim_event_raise(rn_sim_ctx_of(nic),
			   fatal ? SIM_EVENT_CQ_ERR : SIM_EVENT_PORT_ERR);
}
