/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection (rn_notify_diag.h): a diagnostic request, of no
 * notification and one enum rn_notify_fault, to the lcore that owns the
 * peer's endpoint, which makes the fault (sim device only). It goes the
 * way a send does (rn_notify_submit()), and the lcore tells the two apart
 * by their count alone.
 */
#include "notify_api_pvt.h"
#include "rn_notify_diag.h"

/* One request of fault; out is the frame of a bad one. */
static int
diag(struct rn_notify *nf, const char *peer, enum rn_notify_fault fault,
     const struct rn_notify_out *out)
{
	struct rn_notify_request req = { .fault = fault, .out = out };
	int rc = rn_notify_submit(nf, peer, &req);

	return rc > 0 ? 0 : rc;
}

int
rn_notify_diag_local_fault(struct rn_notify *nf, const char *peer)
{
	return diag(nf, peer, RN_NOTIFY_FAULT_LOCAL, NULL);
}

int
rn_notify_diag_bad_frame(struct rn_notify *nf, const char *peer)
{
	const struct rn_notify_out bad = { .name = "bad", .name_len = 3,
					   .msg = "frame", .msg_len = 5 };

	return diag(nf, peer, RN_NOTIFY_FAULT_BAD_FRAME, &bad);
}

int
rn_notify_diag_stall(struct rn_notify *nf, const char *peer)
{
	return diag(nf, peer, RN_NOTIFY_FAULT_STALL, NULL);
}

int
rn_notify_diag_cq_overrun(struct rn_notify *nf, const char *peer)
{
	return diag(nf, peer, RN_NOTIFY_FAULT_CQ_OVERRUN, NULL);
}
