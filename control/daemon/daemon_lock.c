/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One rnotifyd per name, user and network namespace: a lock file in a
 * run-time directory that only this user can write, NAME.NETNS.lock with
 * NETNS the inode number of the namespace (as /proc/PID/ns/net shows it),
 * since daemons in different network namespaces may share a name. Another user cannot take the name away (an
 * abstract unix socket, which anyone on the host can bind, could be), and
 * the kernel drops the lock when the process ends, however it ends.
 *
 * The directory: /run/rnotify for root, else $XDG_RUNTIME_DIR/rnotify, else
 * /tmp/rnotify-UID; created with mode 0700, and refused unless it is a
 * directory owned by this user that no one else may enter. EAL's own
 * run-time directory is per user the same way, so names of different users
 * never meet there either.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_pvt.h"

#define ROOT_DIR "/run/rnotify"
#define DIR_MODE 0700
#define FILE_MODE 0600
/* Each try lost a race with a daemon of that name that was stopping. */
#define LOCK_TRIES 8

void
rn_daemon_runtime_dir(char *dir, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (geteuid() == 0)
		snprintf(dir, len, ROOT_DIR);
	else if (xdg != NULL && xdg[0] == '/')
		snprintf(dir, len, "%s/rnotify", xdg);
	else
		snprintf(dir, len, "/tmp/rnotify-%u", (unsigned int)geteuid());
}

/* This process's network namespace, or 0 where /proc does not say. */
static unsigned long
netns_id(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) == 0 ? (unsigned long)st.st_ino :
						      0;
}

/* The directory, opened without following a link, and checked to be ours. */
static int
open_dir(const char *dir, char *why, size_t len)
{
	struct stat st = { .st_mode = 0 };
	int fd;

	if (mkdir(dir, DIR_MODE) != 0 && errno != EEXIST) {
		int rc = -errno;

		snprintf(why, len, "cannot create run-time directory '%s': %s",
			 dir, strerror(-rc));
		return rc;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* Not ours to enter: say whose it is. */
	if (fd < 0 && errno == EACCES && lstat(dir, &st) == 0)
		goto not_ours;
	if (fd < 0) {
		int rc = -errno;

		snprintf(why, len, "run-time directory '%s': %s%s", dir,
			 strerror(errno), errno == ENOTDIR || errno == ELOOP ?
			 "; allowed a directory, not a link" : "");
		return rc;
	}
	if (fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
	    (st.st_mode & 077) == 0)
		return fd;
	close(fd);
not_ours:
	snprintf(why, len, "run-time directory '%s' is owned by uid %u with "
		 "mode %04o; allowed a directory of this user's (uid %u) with "
		 "mode %04o", dir, (unsigned int)st.st_uid,
		 (unsigned int)(st.st_mode & 07777), (unsigned int)geteuid(),
		 DIR_MODE);
	return -EPERM;
}

static void
lock_file_name(const char *name, char *file, size_t len)
{
	snprintf(file, len, "%s.%lu.lock", name, netns_id());
}

/*
 * Open and lock the file. A daemon that stops removes its file while it
 * holds the lock, so a lock taken on a file no longer at that name is
 * stale: then try again on the file that is there now.
 */
static int
lock_file(int dir_fd, const char *file)
{
	for (int tries = 0; tries < LOCK_TRIES; tries++) {
		struct stat st, now;
		int fd = openat(dir_fd, file, O_RDWR | O_CREAT | O_NOFOLLOW |
				O_CLOEXEC, FILE_MODE);
		int rc;

		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid()) {
			close(fd);
			return -EPERM;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			rc = -errno;
			close(fd);
			return rc;
		}
		if (fstatat(dir_fd, file, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
		    now.st_dev == st.st_dev && now.st_ino == st.st_ino)
			return fd;
		close(fd);
	}
	return -EAGAIN;
}

int
rn_daemon_lock_name(const char *name, char *why, size_t len)
{
	char dir[256], file[64], pid[32];
	int dir_fd, fd, rc;

	rn_daemon_runtime_dir(dir, sizeof(dir));
	dir_fd = open_dir(dir, why, len);
	if (dir_fd < 0)
		return dir_fd;
	lock_file_name(name, file, sizeof(file));
	fd = lock_file(dir_fd, file);
	close(dir_fd);
	if (fd == -EWOULDBLOCK) {
		snprintf(why, len, "another rnotifyd named '%s' is running; "
			 "give this one another [dataplane] name", name);
		return fd;
	}
	if (fd < 0) {
		snprintf(why, len, "lock file '%s/%s': %s%s", dir, file,
			 strerror(-fd), fd == -EPERM ? "; allowed a regular "
			 "file of this user's" : "");
		return fd;
	}
	/* For the operator: which process holds the name. Not used here;
	 * the lock, not the content, is the claim. */
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	errno = 0;
	if (ftruncate(fd, 0) != 0 ||
	    pwrite(fd, pid, strlen(pid), 0) != (ssize_t)strlen(pid)) {
		rc = errno != 0 ? -errno : -EIO;
		snprintf(why, len, "lock file '%s/%s': %s", dir, file,
			 strerror(-rc));
		close(fd);
		return rc;
	}
	return fd;
}

void
rn_daemon_unlock_name(const char *name, int fd)
{
	char dir[256], file[64], path[sizeof(dir) + sizeof(file)];

	if (fd < 0)
		return;
	rn_daemon_runtime_dir(dir, sizeof(dir));
	lock_file_name(name, file, sizeof(file));
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	unlink(path);   /* still locked: see lock_file() */
	close(fd);
}
