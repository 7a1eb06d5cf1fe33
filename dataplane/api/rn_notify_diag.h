/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_DIAG_H
#define RN_NOTIFY_DIAG_H

/*
 * Fault injection, for tests and diagnostics (the /rnotify/sim_fault
 * telemetry command): faults the software device can show, each made on
 * the lcore that owns the peer's endpoint, as a real one would happen
 * there. Applications have no way to these: rn_notify_send() takes no
 * fault. Each call waits for the lcore's answer, as a send does; from any
 * thread.
 */

#include "rn_notify.h"

/* How long rn_notify_diag_stall() stops the lcore. */
#define RN_NOTIFY_STALL_MS 5000

/*
 * Post a WQE with a bad lkey on the peer's notify QP: a local fault as the
 * hardware would report it. Returns 0, -ENOTSUP off the sim device or
 * without a notify QP, the device's error of the post, or
 * rn_notify_send()'s errors of finding the peer (-ENOENT, -EAGAIN,
 * -ENOTCONN).
 */
int rn_notify_diag_local_fault(struct rn_notify *nf, const char *peer);

/*
 * Send the peer natively a frame one byte longer than its lengths say,
 * which the peer must reject (count, log, repost; never deliver). It takes
 * a credit like any notification. Returns 0, -ENOTSUP off the sim device
 * or without a native channel, or rn_notify_send()'s errors.
 */
int rn_notify_diag_bad_frame(struct rn_notify *nf, const char *peer);

/*
 * The lcore that owns the peer's endpoint answers, then stops (busy,
 * draining none of its rings) for RN_NOTIFY_STALL_MS, as a stuck worker
 * would. Returns 0, -ENOTSUP off the sim device, or rn_notify_send()'s
 * errors of finding the peer.
 */
int rn_notify_diag_stall(struct rn_notify *nf, const char *peer);

/*
 * The CQ the peer's endpoint completes to overruns, as if its lcore had
 * fallen behind (rn_sim_overrun_cq()): no CQE reaches it again, the fatal
 * device event follows. Returns 0, -ENOTSUP off the sim device, or
 * rn_notify_send()'s errors of finding the peer.
 */
int rn_notify_diag_cq_overrun(struct rn_notify *nf, const char *peer);

#endif /* RN_NOTIFY_DIAG_H */
