/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The client server's socket: the listener, each caller's credentials
 * checked against [client] allow, and the requests of the attach protocol
 * (rn_client_msg.h), answered in order, one reply each. Every descriptor
 * here is non-blocking and watched by the control loop; the control
 * thread never waits on a client. A request answered later (REG, DEREG,
 * FETCH: client_xfer.c) stops the reading of the client's socket until
 * its reply is out; meanwhile the socket is watched for its close only.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client_pvt.h"
#include "rn_client_region.h"

RTE_LOG_REGISTER_SUFFIX(rn_client_server_logtype, client, INFO);

/* Descriptors a request may carry: REG's pieces, at most (others are
 * closed). */
#define FDS_IN_MAX RN_CLIENT_REG_MAX_PIECES
/* Supplementary groups of a caller looked at, at most. */
#define PEER_GROUPS_MAX 1024

static uint64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the status page ---- */

int
rn_client_server_create(const struct rn_config *cfg, unsigned int n_workers,
			struct rn_client_server **out, char *why,
			size_t why_len)
{
	struct rn_client_server *s;
	long page = sysconf(_SC_PAGESIZE);
	int rc;

	if (n_workers == 0 || n_workers > RN_CLIENT_MAX_LCORES) {
		snprintf(why, why_len, "clients: %u worker lcores; allowed 1 "
			 "to %u", n_workers, RN_CLIENT_MAX_LCORES);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		snprintf(why, why_len, "clients: out of memory");
		return -ENOMEM;
	}
	s->cfg = cfg;
	s->n_workers = n_workers;
	s->listen_fd = -1;
	s->buf_size = (cfg->notify.slot_size + 63u) & ~63u;
	TAILQ_INIT(&s->conns);
	pthread_mutex_init(&s->lock, NULL);
	s->status_size = (sizeof(*s->status) + (size_t)page - 1) &
			 ~((size_t)page - 1);
	s->status_fd = memfd_create("rnotify-status", MFD_CLOEXEC |
				    MFD_ALLOW_SEALING);
	if (s->status_fd < 0 ||
	    ftruncate(s->status_fd, (off_t)s->status_size) != 0)
		goto fail_errno;
	s->status = mmap(NULL, s->status_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, s->status_fd, 0);
	if (s->status == MAP_FAILED) {
		s->status = NULL;
		goto fail_errno;
	}
	/* Clients map it read-only: with FUTURE_WRITE (Linux 5.1) they
	 * cannot map it writable either; older kernels only lose that. */
	if (fcntl(s->status_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)
		goto fail_errno;
#ifdef F_SEAL_FUTURE_WRITE
	(void)fcntl(s->status_fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE);
#endif
	(void)fcntl(s->status_fd, F_ADD_SEALS, F_SEAL_SEAL);
	rn_client_status_init(s->status, n_workers);
	*out = s;
	return 0;

fail_errno:
	rc = -errno;
	snprintf(why, why_len, "clients: status page: %s", strerror(errno));
	rn_client_server_close(s);
	rn_client_server_free(s);
	return rc;
}

void
rn_client_server_set_lcore(struct rn_client_server *s, unsigned int i,
			   struct rn_lcore *lc)
{
	s->workers[i] = lc;
	rn_lcore_set_client_sleeping(lc, i, &s->status->lcore[i].sleeping);
}

/* ---- the listener ---- */

/*
 * What is at path before we bind: nothing, or a socket nobody listens on
 * (a daemon of our name that died: the single-instance lock says no other
 * one runs in this namespace), which is removed. A live socket (a daemon
 * of the same name in another network namespace sharing the directory)
 * or anything else is left alone, and start-up fails.
 */
static int
clear_stale(const char *path, char *why, size_t why_len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(why, why_len, "clients: '%s' exists and is not a "
			 "socket; remove it or set [client] socket", path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (rc != 0)
		rc = -errno;
	close(fd);
	if (rc == 0 || rc == -EAGAIN) {
		snprintf(why, why_len, "clients: another process listens on "
			 "'%s' (an rnotifyd of the same name in another "
			 "network namespace?); set [client] socket", path);
		return -EADDRINUSE;
	}
	if (unlink(path) != 0 && errno != ENOENT)
		return -errno;
	RN_CLIENT_LOG(NOTICE, "removed the stale socket '%s'", path);
	return 0;
}

static void on_listen(struct rn_control *ctl, void *arg, uint32_t events);

static int
listen_on(struct rn_client_server *s, const char *path, char *why,
	  size_t why_len)
{
	const struct rn_client_config *cc = &s->cfg->client;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *step = "socket";
	struct stat st;
	int rc;

	if (strlen(path) >= sizeof(sa.sun_path) ||
	    strlen(path) >= sizeof(s->path)) {
		snprintf(why, why_len, "clients: socket path '%s' is longer "
			 "than %zu characters; set [client] socket", path,
			 sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	rc = clear_stale(path, why, why_len);
	if (rc != 0) {
		if (rc != -EEXIST && rc != -EADDRINUSE)
			snprintf(why, why_len, "clients: socket '%s': %s",
				 path, strerror(-rc));
		return rc;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
			      SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0)
		goto fail;
	step = "bind";
	if (bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		goto fail;
	strcpy(s->path, path);
	/* Nobody can connect before listen(): set mode and group first.
	 * NOFOLLOW: in a shared directory the name could be a link by
	 * now. */
	step = "stat";
	if (lstat(path, &st) != 0)
		goto fail;
	s->path_dev = st.st_dev;
	s->path_ino = st.st_ino;
	step = "group";
	if (cc->group.set &&
	    fchownat(AT_FDCWD, path, (uid_t)-1, (gid_t)cc->group.gid,
		     AT_SYMLINK_NOFOLLOW) != 0)
		goto fail;
	step = "mode";
	if (fchmodat(AT_FDCWD, path, cc->mode, AT_SYMLINK_NOFOLLOW) != 0)
		goto fail;
	step = "listen";
	if (listen(s->listen_fd, RN_CLIENT_BACKLOG) != 0)
		goto fail;
	rc = rn_control_watch(s->ctl, s->listen_fd, EPOLLIN, on_listen, s);
	if (rc != 0) {
		errno = -rc;
		goto fail;
	}
	return 0;

fail:
	rc = -errno;
	snprintf(why, why_len, "clients: socket '%s': %s: %s%s", path, step,
		 strerror(errno), step[0] == 'g' ? " ([client] group)" : "");
	return rc;
}

int
rn_client_server_start(struct rn_client_server *s, struct rn_control *ctl,
		       struct rn_plane *pl, const char *socket_path,
		       char *why, size_t why_len)
{
	int rc;

	s->ctl = ctl;
	s->plane = pl;
	rc = listen_on(s, socket_path, why, why_len);
	if (rc != 0)
		return rc;
	rn_plane_set_clients(pl, s->status, rn_client_peer_event, s);
	rn_plane_set_client_descriptors(pl, rn_client_xfer_published, s);
	RN_CLIENT_LOG(NOTICE, "clients attach on %s (mode %04o%s%s, at most "
		      "%u)", s->path, s->cfg->client.mode,
		      s->cfg->client.group.set ? ", group " : "",
		      s->cfg->client.group.text, s->cfg->client.max_clients);
	return 0;
}

const char *
rn_client_server_path(const struct rn_client_server *s)
{
	return s->path;
}

/* ---- callers ---- */

/* Whether a line about a refused caller may be logged now; more says how
 * many were not since. */
static bool
refusal_log_allowed(struct rn_client_server *s, char *more, size_t len)
{
	uint64_t now = rn_now_ms();

	more[0] = '\0';
	if (now - s->refusals_start_ms >= 1000) {
		s->refusals_start_ms = now;
		s->refusals_logged = 0;
	}
	if (s->refusals_logged >= RN_CLIENT_REFUSALS_LOGGED_PER_S) {
		s->refusals_unlogged++;
		return false;
	}
	s->refusals_logged++;
	if (s->refusals_unlogged != 0)
		snprintf(more, len, " [and %" PRIu64 " more not logged]",
			 s->refusals_unlogged);
	s->refusals_unlogged = 0;
	return true;
}

static bool
in_groups(uint32_t gid, const gid_t *groups, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* The daemon's own uid, or a user, the primary group or a supplementary
 * group (SO_PEERGROUPS) of the caller in [client] allow. */
static bool
allowed(const struct rn_client_server *s, int fd, const struct ucred *cred)
{
	const struct rn_config_allow *allow = &s->cfg->client.allow;
	gid_t groups[PEER_GROUPS_MAX];
	socklen_t len = sizeof(groups);
	unsigned int n_groups = 0;
	bool any_group = false;

	if (cred->uid == geteuid())
		return true;
	for (uint32_t i = 0; i < allow->count; i++) {
		if (!allow->entry[i].group && allow->entry[i].id == cred->uid)
			return true;
		any_group |= allow->entry[i].group;
	}
	if (!any_group)
		return false;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
		n_groups = len / sizeof(gid_t);
	for (uint32_t i = 0; i < allow->count; i++)
		if (allow->entry[i].group &&
		    (allow->entry[i].id == cred->gid ||
		     in_groups(allow->entry[i].id, groups, n_groups)))
			return true;
	return false;
}

static void on_conn(struct rn_control *ctl, void *arg, uint32_t events);

static void
accept_one(struct rn_client_server *s, int fd)
{
	struct ucred cred = { .pid = 0 };
	socklen_t len = sizeof(cred);
	struct rn_client_conn *c;
	char more[48];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    s->unattached >= RN_CLIENT_UNATTACHED_MAX) {
		if (refusal_log_allowed(s, more, sizeof(more)))
			RN_CLIENT_LOG(NOTICE, "caller pid %d closed: %u callers "
				      "have not attached yet%s", (int)cred.pid,
				      s->unattached, more);
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(fd);
		return;
	}
	c->s = s;
	c->fd = fd;
	c->cred = cred;
	c->accepted_ms = rn_now_ms();
	c->link.efd = -1;
	c->region_fd = -1;
	c->state = RN_CONN_NEW;
	if (!allowed(s, fd, &cred)) {
		c->state = RN_CONN_REFUSED;
		pthread_mutex_lock(&s->lock);
		s->totals.refused++;
		pthread_mutex_unlock(&s->lock);
		if (refusal_log_allowed(s, more, sizeof(more)))
			RN_CLIENT_LOG(NOTICE, "refused caller pid %d uid %u gid "
				      "%u: not allowed by [client] allow%s",
				      (int)cred.pid, (unsigned int)cred.uid,
				      (unsigned int)cred.gid, more);
	}
	if (rn_control_watch(s->ctl, fd, EPOLLIN | EPOLLRDHUP, on_conn,
			     c) != 0) {
		close(fd);
		free(c);
		return;
	}
	s->unattached++;
	pthread_mutex_lock(&s->lock);
	TAILQ_INSERT_TAIL(&s->conns, c, next);
	pthread_mutex_unlock(&s->lock);
}

static void
on_listen(struct rn_control *ctl, void *arg, uint32_t events)
{
	struct rn_client_server *s = arg;
	int fd;

	(void)ctl;
	(void)events;
	while ((fd = accept4(s->listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
		accept_one(s, fd);
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
	    errno != ECONNABORTED)
		RN_CLIENT_LOG(WARNING, "accept on %s: %s", s->path,
			      strerror(errno));
}

/* ---- requests ---- */

static int
send_reply(struct rn_client_conn *c, uint16_t type, int status,
	   const void *body, uint32_t len, const int *fds, unsigned int n_fds)
{
	struct rn_client_msg_hdr hdr = {
		.type = (uint16_t)(type | RN_CLIENT_MSG_REPLY),
		.version = RN_CLIENT_PROTO_VERSION,
		.status = status,
		.len = len,
	};
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)(uintptr_t)body, .iov_len = len },
	};
	union {
		char buf[CMSG_SPACE(sizeof(int) * (3 + RN_CLIENT_MAX_LCORES))];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len != 0 ? 2 : 1 };

	if (n_fds != 0) {
		memset(&ctl, 0, sizeof(ctl));
		rn_client_msg_put_fds(&msg, ctl.buf, fds, n_fds);
	}
	if (sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return -errno;
	return 0;
}

int
rn_client_server_reply(struct rn_client_conn *c, uint16_t type, int status,
		       const void *body, uint32_t len, const int *fds,
		       unsigned int n_fds)
{
	return send_reply(c, type, status, body, len, fds, n_fds);
}

/* A node name in a request body: 1..RN_CLIENT_NODE_MAX bytes, no NUL but
 * for one at the end. Returns 0 with it in out, or -EINVAL. */
static int
body_name(const uint8_t *body, uint32_t len, char *out)
{
	if (len > 0 && body[len - 1] == '\0')
		len--;
	if (len == 0 || len > RN_CLIENT_NODE_MAX ||
	    memchr(body, '\0', len) != NULL)
		return -EINVAL;
	memcpy(out, body, len);
	out[len] = '\0';
	return 0;
}

static int
resolve(struct rn_client_server *s, const char *name,
	struct rn_client_resolved *out)
{
	enum rn_ep_state state;
	uint32_t ep_index, worker;

	if (rn_plane_lookup(s->plane, name, &ep_index, &state, &worker) != 0 ||
	    ep_index >= RN_CLIENT_STATUS_ENDPOINTS)
		return -ENOENT;
	/* Its first use: connecting starts now; the client learns how it
	 * goes from the status page. */
	if (state == RN_EP_IDLE)
		(void)rn_plane_use(s->plane, name);
	out->ep_index = (uint16_t)ep_index;
	out->lcore = (uint16_t)worker;
	/* Written by this thread (the plane), so read without the seqlock. */
	out->tag = s->status->ep[ep_index].tag;
	return 0;
}

static int
peer_add(struct rn_client_server *s, const void *body, uint32_t len)
{
	struct rn_client_peer p;

	if (!s->cfg->client.peers_from_clients)
		return -EACCES;
	if (len != sizeof(p))
		return -EINVAL;
	memcpy(&p, body, sizeof(p));
	if (memchr(p.name, '\0', sizeof(p.name)) == NULL ||
	    memchr(p.address, '\0', sizeof(p.address)) == NULL ||
	    p.name[0] == '\0' || p.port == 0)
		return -EINVAL;
	return rn_plane_peer_add(s->plane, p.name, p.address, p.port);
}

/* Watch c's socket for its close only (a reply is pending), or for its
 * requests too. False when that failed: c is closed. */
static bool
watch_conn(struct rn_client_server *s, struct rn_client_conn *c,
	   bool requests)
{
	rn_control_unwatch(s->ctl, c->fd);
	if (rn_control_watch(s->ctl, c->fd, (requests ? EPOLLIN : 0) |
			     EPOLLRDHUP, on_conn, c) == 0)
		return true;
	RN_CLIENT_LOG(WARNING, "client %u: cannot watch its socket: closed",
		      c->link.client_id);
	close(c->fd);
	c->fd = -1;
	rn_client_conn_close(s, c);
	return false;
}

void
rn_client_conn_resume(struct rn_client_server *s, struct rn_client_conn *c)
{
	c->pending = 0;
	if (c->fd >= 0)
		watch_conn(s, c, true);
}

/* One request of an attached client, with the fds it carried. Returns
 * false when c is closed or waits for a reply: read no more of it now. */
static bool
attached_request(struct rn_client_server *s, struct rn_client_conn *c,
		 const struct rn_client_msg_hdr *hdr, const uint8_t *body,
		 int *fds, unsigned int n_fds)
{
	struct rn_client_resolved resolved = { .ep_index = 0 };
	char name[RN_CLIENT_NODE_MAX + 1];
	uint32_t reply_len = 0;
	int rc;

	pthread_mutex_lock(&s->lock);
	c->info.requests++;
	pthread_mutex_unlock(&s->lock);
	switch (hdr->type) {
	case RN_CLIENT_MSG_RESOLVE:
		rc = body_name(body, hdr->len, name);
		if (rc == 0)
			rc = resolve(s, name, &resolved);
		if (rc == 0)
			reply_len = sizeof(resolved);
		break;
	case RN_CLIENT_MSG_PEER_ADD:
		rc = peer_add(s, body, hdr->len);
		break;
	case RN_CLIENT_MSG_PEER_REMOVE:
		rc = !s->cfg->client.peers_from_clients ? -EACCES :
		     body_name(body, hdr->len, name);
		if (rc == 0)
			rc = rn_plane_peer_remove(s->plane, name);
		break;
	case RN_CLIENT_MSG_DETACH:
		send_reply(c, hdr->type, 0, NULL, 0, NULL, 0);
		rn_client_conn_close(s, c);
		return false;
	case RN_CLIENT_MSG_REG:
	case RN_CLIENT_MSG_DEREG:
	case RN_CLIENT_MSG_PUBLISH:
	case RN_CLIENT_MSG_FETCH:
		rc = rn_client_xfer_request(s, c, hdr->type, body, hdr->len,
					    fds, n_fds);
		if (rc == 1)
			return (void)watch_conn(s, c, false), false;
		if (rc == RN_CLIENT_XFER_REPLIED)
			return c->fd >= 0;
		break;
	default:
		/* ATTACH again, or a type this version does not know. */
		rc = -EPROTO;
		break;
	}
	if (send_reply(c, hdr->type, rc, &resolved, reply_len, NULL, 0) != 0) {
		rn_client_conn_close(s, c);
		return false;
	}
	return true;
}

/* Answer status to a caller that is not attached, and close it. */
static void
refuse(struct rn_client_server *s, struct rn_client_conn *c, uint16_t type,
       int status)
{
	pthread_mutex_lock(&s->lock);
	s->totals.failed += status != -EACCES;
	pthread_mutex_unlock(&s->lock);
	send_reply(c, type, status, NULL, 0, NULL, 0);
	rn_client_conn_close(s, c);
}

/* One message of n bytes, with the fds it carried. Returns false when c
 * is closed or waits for a reply. */
static bool
handle_message(struct rn_client_server *s, struct rn_client_conn *c,
	       const uint8_t *buf, size_t n, bool truncated, int *fds,
	       unsigned int n_fds)
{
	struct rn_client_msg_hdr hdr;

	if (n < sizeof(hdr)) {
		refuse(s, c, 0, -EPROTO);
		return false;
	}
	memcpy(&hdr, buf, sizeof(hdr));
	/* Another version, or a frame that is not what it says: nothing
	 * more can be understood on this socket. */
	if (hdr.version != RN_CLIENT_PROTO_VERSION || truncated ||
	    hdr.len != n - sizeof(hdr) || (hdr.type & RN_CLIENT_MSG_REPLY)) {
		refuse(s, c, hdr.type & ~RN_CLIENT_MSG_REPLY, -EPROTO);
		return false;
	}
	switch (c->state) {
	case RN_CONN_REFUSED:
		refuse(s, c, hdr.type, -EACCES);
		return false;
	case RN_CONN_NEW: {
		int rc = hdr.type != RN_CLIENT_MSG_ATTACH ? -EPROTO :
			 rn_client_server_attach(s, c, (const char *)buf +
						 sizeof(hdr), hdr.len);

		if (rc != 0) {
			refuse(s, c, hdr.type, rc);
			return false;
		}
		return true;
	}
	case RN_CONN_ATTACHED:
		return attached_request(s, c, &hdr, buf + sizeof(hdr), fds,
					n_fds);
	case RN_CONN_ADDING:      /* a request before its ATTACH reply */
		refuse(s, c, hdr.type, -EPROTO);
		return false;
	case RN_CONN_CLOSING:
		break;
	}
	return false;
}

/* The descriptors a caller sent along, in order, into fds (FDS_IN_MAX;
 * the control buffer holds no more). Returns their count. */
static unsigned int
passed_fds(struct msghdr *msg, int *fds)
{
	unsigned int n = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm != NULL;
	     cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0;
		     i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(fd));
			if (n < FDS_IN_MAX)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

/* What a request did not take is not ours to keep. */
static void
close_fds(int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void
on_conn(struct rn_control *ctl, void *arg, uint32_t events)
{
	struct rn_client_conn *c = arg;
	struct rn_client_server *s = c->s;
	/* One more byte than any request: a longer one is seen truncated. */
	uint8_t buf[RN_CLIENT_MSG_MAX + 1];
	union {
		char buf[CMSG_SPACE(sizeof(int) * FDS_IN_MAX)];
		struct cmsghdr align;
	} cbuf;

	(void)ctl;
	/* A reply is pending: only the close is watched. */
	if (c->pending != 0) {
		if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			rn_client_conn_close(s, c);
		return;
	}
	for (;;) {
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		int fds[FDS_IN_MAX];
		unsigned int n_fds;
		bool more;
		struct msghdr msg = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = cbuf.buf,
			.msg_controllen = sizeof(cbuf.buf),
		};
		ssize_t n = recvmsg(c->fd, &msg, MSG_DONTWAIT |
				    MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
		    !(events & (EPOLLHUP | EPOLLERR)))
			return;
		if (n <= 0) {
			/* Closed: detached without a word, exited, killed. */
			rn_client_conn_close(s, c);
			return;
		}
		n_fds = passed_fds(&msg, fds);
		more = handle_message(s, c, buf, (size_t)n,
				      (msg.msg_flags & (MSG_TRUNC |
							MSG_CTRUNC)) != 0,
				      fds, n_fds);
		close_fds(fds, n_fds);
		if (!more)
			return;
	}
}

/* ---- the control loop's calls ---- */

void
rn_client_server_event(struct rn_client_server *s,
		       const struct rn_lcore_event *ev)
{
	struct rn_client_conn *c;

	if (ev->type == RN_LCORE_EVENT_CLIENT_REGISTERED ||
	    ev->type == RN_LCORE_EVENT_CLIENT_DEREGISTERED) {
		rn_client_xfer_event(s, ev);
		return;
	}
	TAILQ_FOREACH(c, &s->conns, next) {
		if ((uintptr_t)&c->link != ev->cookie)
			continue;
		/* A client that closed while ADDING is CLOSING: its
		 * CLIENT_ADDED answers, which come first, count for nothing. */
		if (ev->type == RN_LCORE_EVENT_CLIENT_ADDED) {
			if (c->state == RN_CONN_ADDING)
				rn_client_server_added(s, c, ev->arg);
		} else if (c->state == RN_CONN_CLOSING && c->lcores_left > 0 &&
			   --c->lcores_left == 0) {
			rn_client_conn_free(s, c);
		}
		return;
	}
	RN_CLIENT_LOG(WARNING, "lcore %u: event %u of no client (%#" PRIx64
		      ")", ev->lcore_id, ev->type, ev->cookie);
}

void
rn_client_server_tick(struct rn_client_server *s)
{
	uint64_t now = rn_now_ms();
	struct rn_client_conn *c, *tmp;

	rn_client_cmd_push(s);
	if (s->unattached == 0)
		return;
	/* A caller that says nothing holds a place among the unattached. */
	RN_CONN_FOREACH_SAFE(c, s, tmp)
		if ((c->state == RN_CONN_NEW || c->state == RN_CONN_REFUSED) &&
		    now - c->accepted_ms >= RN_CLIENT_HELLO_MS)
			rn_client_conn_close(s, c);
}

unsigned int
rn_client_server_shutdown(struct rn_client_server *s)
{
	struct rn_client_conn *c, *tmp;
	unsigned int held = 0;

	if (s->listen_fd >= 0) {
		rn_control_unwatch(s->ctl, s->listen_fd);
		close(s->listen_fd);
		s->listen_fd = -1;
		if (s->plane != NULL) {
			rn_plane_set_clients(s->plane, NULL, NULL, NULL);
			rn_plane_set_client_descriptors(s->plane, NULL, NULL);
		}
	}
	RN_CONN_FOREACH_SAFE(c, s, tmp) {
		if (c->state != RN_CONN_CLOSING)
			rn_client_conn_close(s, c);
	}
	rn_client_cmd_push(s);
	TAILQ_FOREACH(c, &s->conns, next)
		held++;
	return held;
}

/* The socket file, when it is still the one we made. */
static void
remove_socket_file(struct rn_client_server *s)
{
	struct stat st;

	if (s->path[0] == '\0')
		return;
	if (lstat(s->path, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    st.st_dev == s->path_dev && st.st_ino == s->path_ino)
		unlink(s->path);
	s->path[0] = '\0';
}

void
rn_client_server_close(struct rn_client_server *s)
{
	struct rn_client_conn *c;

	if (s == NULL)
		return;
	if (s->listen_fd >= 0) {
		if (s->ctl != NULL)
			rn_control_unwatch(s->ctl, s->listen_fd);
		close(s->listen_fd);
		s->listen_fd = -1;
	}
	/* The workers have stopped: nothing touches a region any more. */
	while ((c = TAILQ_FIRST(&s->conns)) != NULL) {
		if (c->fd >= 0) {
			if (s->ctl != NULL)
				rn_control_unwatch(s->ctl, c->fd);
			close(c->fd);
			c->fd = -1;
		}
		rn_client_conn_free(s, c);
	}
	rn_client_cmd_backlog_free(s);
	remove_socket_file(s);
	if (s->status != NULL)
		munmap(s->status, s->status_size);
	s->status = NULL;
	if (s->status_fd >= 0)
		close(s->status_fd);
	s->status_fd = -1;
}

void
rn_client_server_free(struct rn_client_server *s)
{
	if (s == NULL)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s);
}

unsigned int
rn_client_server_snapshot(struct rn_client_server *s,
			  struct rn_client_info *out, unsigned int max)
{
	struct rn_client_conn *c;
	unsigned int n = 0;

	pthread_mutex_lock(&s->lock);
	TAILQ_FOREACH(c, &s->conns, next) {
		if (n == max)
			break;
		if (c->state != RN_CONN_ATTACHED && c->state != RN_CONN_CLOSING)
			continue;
		out[n] = c->info;
		out[n++].closing = c->state == RN_CONN_CLOSING;
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

void
rn_client_server_totals(struct rn_client_server *s,
			struct rn_client_totals *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->totals;
	pthread_mutex_unlock(&s->lock);
}

/* Used by client_attach.c for the info's wall-clock time. */
uint64_t
rn_client_wall_ms(void)
{
	return wall_ms();
}
