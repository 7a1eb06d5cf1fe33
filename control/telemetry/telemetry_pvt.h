/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_TELEMETRY_PVT_H
#define RN_TELEMETRY_PVT_H

#include <stdint.h>

struct rn_daemon;

/*
 * Register the diagnostic /rnotify/ commands (telemetry_diag.c), beside
 * the status ones. Returns 0 or a negative errno.
 */
int rn_telemetry_diag_register(const struct rn_daemon *d);

/*
 * A number in a command's parameters: text as an unsigned decimal from min
 * to max, digits only (no sign, space, base prefix or trailing text), so
 * that "-1" is refused rather than wrapped. Returns 0 or -EINVAL.
 */
int rn_telemetry_parse_u64(const char *text, uint64_t min, uint64_t max,
			   uint64_t *out);

#endif /* RN_TELEMETRY_PVT_H */
