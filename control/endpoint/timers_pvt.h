/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_TIMERS_PVT_H
#define RN_TIMERS_PVT_H

/* Everything with a deadline (timers.c), and the workers' watchdog. */

#include <stdint.h>

struct rn_plane;

/* Every tick of the control loop, at now. */
void rn_timers_run(struct rn_plane *pl, uint64_t now);
/* Log a worker whose loop stops turning, and when it turns again. */
void rn_watchdog_run(struct rn_plane *pl, uint64_t now);

#endif /* RN_TIMERS_PVT_H */
