/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_TELEMETRY_PVT_H
#define RN_TELEMETRY_PVT_H

struct rn_daemon;

/*
 * Register the diagnostic /rnotify/ commands (telemetry_diag.c), beside
 * the status ones. Returns 0 or a negative errno.
 */
int rn_telemetry_diag_register(const struct rn_daemon *d);

#endif /* RN_TELEMETRY_PVT_H */
