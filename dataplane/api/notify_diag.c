/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection (rn_notify_diag.h): a request like a send's, with a
 * diagnostic flag no send may carry, to the lcore that owns the peer's
 * endpoint, which makes the fault (sim device only).
 */
#include "notify_api_pvt.h"
#include "rn_notify_diag.h"

/* One request of out (a fault needs no notification but a bad frame). */
static int
diag(struct rn_notify *nf, const char *peer, const struct rn_notify_out *out,
     uint32_t flags)
{
	struct rn_notify_request req = { .flags = flags, .out = out,
					 .count = 1 };
	int rc = rn_notify_submit(nf, peer, &req);

	return rc > 0 ? 0 : rc;
}

static const struct rn_notify_out no_notification = { .name = "", .msg = "" };

int
rn_notify_diag_local_fault(struct rn_notify *nf, const char *peer)
{
	return diag(nf, peer, &no_notification, RN_NOTIFY_INJECT_LOCAL_FAULT);
}

int
rn_notify_diag_bad_frame(struct rn_notify *nf, const char *peer)
{
	const struct rn_notify_out bad = { .name = "bad", .name_len = 3,
					   .msg = "frame", .msg_len = 5 };

	return diag(nf, peer, &bad, RN_NOTIFY_INJECT_BAD_FRAME);
}

int
rn_notify_diag_stall(struct rn_notify *nf, const char *peer)
{
	return diag(nf, peer, &no_notification, RN_NOTIFY_INJECT_STALL);
}

int
rn_notify_diag_cq_overrun(struct rn_notify *nf, const char *peer)
{
	return diag(nf, peer, &no_notification, RN_NOTIFY_INJECT_CQ_OVERRUN);
}
