/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_DAEMON_PVT_H
#define RN_DAEMON_PVT_H

/* The parts of bring-up that stand apart from daemon.c's start-up order. */

#include <stddef.h>
#include <stdio.h>

/*
 * Open the log stream: stderr with each line prefixed by its UTC time
 * (daemon_log.c says the format). NULL when it cannot be made.
 */
FILE *rn_daemon_log_open(void);

/*
 * Claim name for this process: take the lock on NAME.NETNS.lock in the
 * daemon's run-time directory (daemon_lock.c says which). Returns the lock file's
 * descriptor, held until rn_daemon_unlock_name() or the process ends, or -errno with why set: another
 * rnotifyd of that name runs (-EWOULDBLOCK), or the directory is not this
 * user's own.
 */
int rn_daemon_lock_name(const char *name, char *why, size_t len);

/*
 * The daemon's run-time directory, where its lock file lies and, by
 * default, its client socket: /run/rnotify for root, else
 * $XDG_RUNTIME_DIR/rnotify, else /tmp/rnotify-UID.
 */
void rn_daemon_runtime_dir(char *dir, size_t len);

/* Give the name up: remove the lock file, then close fd, which unlocks. */
void rn_daemon_unlock_name(const char *name, int fd);

#endif /* RN_DAEMON_PVT_H */
