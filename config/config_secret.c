/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared secret of [control] secret_file and secret_file_next. A file
 * that another user could read (or write) is refused: whoever reads it can
 * pose as any peer (docs/security.md). A name that starts with ~/ is in
 * the home directory of the user the daemon runs as, so one file name
 * (scripts/setup.sh's ~/.config/rnotify/secret) serves root and users
 * alike. And whether a listener without one is exposed beyond this host.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_secret_pvt.h"

/*
 * name with a leading ~/ made the home directory ($HOME, else the user
 * database's entry of the effective user) into buf. Returns buf, or name
 * itself when it has no ~/, or NULL when there is no home to put there.
 */
static const char *
expand_home(const char *name, char *buf, size_t len)
{
	const char *home = getenv("HOME");
	int n;

	if (strncmp(name, "~/", 2) != 0)
		return name;
	if (home == NULL || home[0] != '/') {
		const struct passwd *pw = getpwuid(geteuid());

		home = pw != NULL ? pw->pw_dir : NULL;
	}
	if (home == NULL || home[0] != '/')
		return NULL;
	n = snprintf(buf, len, "%s%s", home, name + 1);
	return n > 0 && (size_t)n < len ? buf : NULL;
}

/* Read the secret in the file named name into key[0..*len): its bytes,
 * less trailing white space (the newline an editor or `openssl rand -hex`
 * leaves). */
static int
secret_read(const char *key_name, const char *name, uint8_t *key,
	    uint32_t *len, char *why, size_t why_len)
{
	char expanded[PATH_MAX];
	const char *path = expand_home(name, expanded, sizeof(expanded));
	struct stat st;
	size_t used = 0;
	int fd;
	int rc = -EINVAL;

	if (path == NULL) {
		snprintf(why, why_len, "[control] %s '%s': no home directory "
			 "for ~ (HOME)", key_name, name);
		return -ENOENT;
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(why, why_len, "[control] %s '%s': %s", key_name, path,
			 strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, why_len, "[control] %s '%s': not a regular file",
			 key_name, path);
		goto close_fd;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
		snprintf(why, why_len, "[control] %s '%s': mode %04o, owner "
			 "uid %u: it must belong to this user (uid %u) and be "
			 "readable by nobody else (chmod 600)", key_name, path,
			 (unsigned int)(st.st_mode & 07777),
			 (unsigned int)st.st_uid, (unsigned int)geteuid());
		goto close_fd;
	}
	for (;;) {
		ssize_t n = read(fd, key + used, RN_CONFIG_SECRET_MAX - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			snprintf(why, why_len, "[control] %s '%s': %s",
				 key_name, path, strerror(errno));
			goto close_fd;
		}
		used += (size_t)n;
		if (n == 0 || used == RN_CONFIG_SECRET_MAX)
			break;
	}
	if (used == RN_CONFIG_SECRET_MAX) {
		char extra;

		if (read(fd, &extra, 1) == 1) {
			snprintf(why, why_len, "[control] %s '%s': longer than "
				 "%d bytes", key_name, path,
				 RN_CONFIG_SECRET_MAX);
			goto close_fd;
		}
	}
	while (used > 0 && (key[used - 1] == '\n' || key[used - 1] == '\r' ||
			    key[used - 1] == ' ' || key[used - 1] == '\t'))
		used--;
	if (used < RN_CONFIG_SECRET_MIN) {
		snprintf(why, why_len, "[control] %s '%s': %zu bytes; a secret "
			 "has at least %d (scripts/setup.sh makes one)",
			 key_name, path, used, RN_CONFIG_SECRET_MIN);
		goto close_fd;
	}
	*len = (uint32_t)used;
	rc = 0;
close_fd:
	close(fd);
	return rc;
}

int
rn_config_secrets_load(struct rn_control_config *c, char *why, size_t why_len)
{
	int rc;

	c->secret_len[0] = c->secret_len[1] = 0;
	if (c->secret_file[0] == '\0') {
		if (c->secret_file_next[0] == '\0')
			return 0;
		snprintf(why, why_len, "[control] secret_file_next without "
			 "secret_file: set secret_file to the current secret");
		return -EINVAL;
	}
	rc = secret_read("secret_file", c->secret_file, c->secret[0],
			 &c->secret_len[0], why, why_len);
	if (rc == 0 && c->secret_file_next[0] != '\0')
		rc = secret_read("secret_file_next", c->secret_file_next,
				 c->secret[1], &c->secret_len[1], why, why_len);
	return rc;
}

bool
rn_config_listen_unprotected(const struct rn_config *cfg)
{
	const char *address = cfg->control.listen;
	struct in_addr v4;
	struct in6_addr v6;

	if (cfg->control.secret_len[0] != 0)
		return false;
	if (inet_pton(AF_INET, address, &v4) == 1)
		return (ntohl(v4.s_addr) >> 24) != 127;
	return inet_pton(AF_INET6, address, &v6) != 1 ||
	       !(IN6_IS_ADDR_LOOPBACK(&v6) ||
		 (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127));
}
