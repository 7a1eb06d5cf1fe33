/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_PLANE_LOG_PVT_H
#define RN_PLANE_LOG_PVT_H

/* The control plane's log type (registered in log.c), for every layer. */

#include <rte_log.h>
#include <stdbool.h>
#include <stdint.h>

extern int rn_plane_logtype;
#define RN_PLANE_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, rn_plane_logtype, "rnotify.endpoint: " fmt "\n", \
		##__VA_ARGS__)

/* Lines about refused or failed callers logged per second, at most. */
#define RN_PLANE_REFUSALS_LOGGED_PER_S 10

/*
 * Whether a line about a caller that has no endpoint (refused, or its
 * connection failed) may be logged at now_ms: strangers decide how often
 * that happens, so at most RN_PLANE_REFUSALS_LOGGED_PER_S a second. When
 * it may, *suppressed is how many were not since the last one logged.
 * Control thread only.
 */
bool rn_plane_log_refusal(uint64_t now_ms, uint64_t *suppressed);

#endif /* RN_PLANE_LOG_PVT_H */
