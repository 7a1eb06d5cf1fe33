/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CONTROL_H
#define RN_CONTROL_H

/*
 * The control thread's event loop (epoll, in the style of redis's ae): file
 * descriptors with callbacks, SIGINT/SIGTERM through a signalfd, and a
 * periodic tick. It only ever blocks in epoll_wait, with a timeout.
 */

#include <stdbool.h>
#include <stdint.h>

struct rn_control;

typedef void (*rn_control_fd_cb)(struct rn_control *ctl, void *arg,
				 uint32_t events);
typedef void (*rn_control_tick_cb)(struct rn_control *ctl, void *arg);

/*
 * Block SIGINT and SIGTERM in the calling thread, and so in every thread it
 * creates afterwards (call before rte_eal_init): only the control loop's
 * signalfd receives them. Returns 0 or -errno.
 */
int rn_control_block_signals(void);

/*
 * Create a loop that calls tick every tick_ms. Returns 0, -ENOMEM or -errno
 * of epoll, signalfd or timerfd.
 */
int rn_control_create(uint32_t tick_ms, rn_control_tick_cb tick, void *arg,
		      struct rn_control **out);

/*
 * Call cb(ctl, arg, revents) when fd is ready for events (EPOLLIN...).
 * Returns 0, -ENOMEM or -errno of epoll_ctl.
 */
int rn_control_watch(struct rn_control *ctl, int fd, uint32_t events,
		     rn_control_fd_cb cb, void *arg);

/* Stop watching fd; safe from inside a callback. Returns 0 or -ENOENT. */
int rn_control_unwatch(struct rn_control *ctl, int fd);

/* Run until a signal or rn_control_stop(). Returns the signal, or 0. */
int rn_control_run(struct rn_control *ctl);

/* Make rn_control_run() return after the current iteration. */
void rn_control_stop(struct rn_control *ctl);

void rn_control_destroy(struct rn_control *ctl);

#endif /* RN_CONTROL_H */
