/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control plane's log type, which every layer of it logs to, and the
 * limit on lines that callers without an endpoint can cause.
 */
#include <rte_log.h>

#include "log_pvt.h"

RTE_LOG_REGISTER_SUFFIX(rn_plane_logtype, endpoint, INFO);

/* The current one-second window; only the control thread touches it. */
static struct {
	uint64_t start_ms;
	unsigned int logged;
	uint64_t suppressed;
} refusals;

bool
rn_plane_log_refusal(uint64_t now_ms, uint64_t *suppressed)
{
	if (now_ms - refusals.start_ms >= 1000) {
		refusals.start_ms = now_ms;
		refusals.logged = 0;
	}
	if (refusals.logged >= RN_PLANE_REFUSALS_LOGGED_PER_S) {
		refusals.suppressed++;
		return false;
	}
	refusals.logged++;
	*suppressed = refusals.suppressed;
	refusals.suppressed = 0;
	return true;
}
