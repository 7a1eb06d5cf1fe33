/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requests after ATTACH (rn_client_msg.h): one message out (REG with its
 * descriptors), one reply in, in order; and the two that add and remove
 * peers. A reply that does not
 * come, or a socket that closes, means the daemon is gone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "client_pvt.h"

static int
wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	do {
		n = poll(&p, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	return n;
}

/* Send one request message with its descriptors. 0, -EINTR, -EBADF (a
 * descriptor the kernel refused), or -ENOTCONN (c is gone then). */
static int
send_request(struct rn_client *c, const uint8_t *buf, size_t len,
	     const int *fds, unsigned int n_fds)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * RN_CLIENT_REG_MAX_PIECES)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)(uintptr_t)buf,
			     .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (n_fds != 0) {
		memset(&ctl, 0, sizeof(ctl));
		rn_client_msg_put_fds(&msg, ctl.b, fds, n_fds);
	}
	if (sendmsg(c->sock, &msg, MSG_NOSIGNAL) >= 0)
		return 0;
	if (errno == EINTR)
		return -EINTR;
	/* Nothing was sent: the descriptor is the caller's fault, not the
	 * daemon's. */
	if (errno == EBADF && n_fds != 0)
		return -EBADF;
	return rn_client_set_gone(c);
}

int
rn_client_request_fds(struct rn_client *c, uint16_t type, const void *body,
		      uint32_t len, const int *fds, unsigned int n_fds,
		      int timeout_ms, void *reply, uint32_t cap,
		      uint32_t *reply_len)
{
	uint8_t buf[RN_CLIENT_MSG_MAX];
	struct rn_client_msg_hdr hdr = {
		.type = type, .version = RN_CLIENT_PROTO_VERSION, .len = len };
	ssize_t n;
	int rc;

	if (c->gone)
		return -ENOTCONN;
	if (len > sizeof(buf) - sizeof(hdr) ||
	    n_fds > RN_CLIENT_REG_MAX_PIECES)
		return -EINVAL;
	memcpy(buf, &hdr, sizeof(hdr));
	if (len != 0)
		memcpy(buf + sizeof(hdr), body, len);
	rc = send_request(c, buf, sizeof(hdr) + len, fds, n_fds);
	if (rc != 0)
		return rc;
	if (wait_readable(c->sock, timeout_ms) <= 0)
		return rn_client_set_gone(c);
	do {
		n = recv(c->sock, buf, sizeof(buf), MSG_TRUNC);
	} while (n < 0 && errno == EINTR);
	if (n <= 0)
		return rn_client_set_gone(c);
	memcpy(&hdr, buf, (size_t)n < sizeof(hdr) ? (size_t)n : sizeof(hdr));
	if ((size_t)n < sizeof(hdr) || (size_t)n > sizeof(buf) ||
	    hdr.type != (type | RN_CLIENT_MSG_REPLY) ||
	    hdr.version != RN_CLIENT_PROTO_VERSION ||
	    hdr.len != (size_t)n - sizeof(hdr) || hdr.status > 0)
		return -EPROTO;
	if (hdr.status == 0 && reply != NULL) {
		if (hdr.len < cap)
			return -EPROTO;
		memcpy(reply, buf + sizeof(hdr), cap);
	}
	if (reply_len != NULL)
		*reply_len = hdr.len;
	return hdr.status;
}

int
rn_client_request(struct rn_client *c, uint16_t type, const void *body,
		  uint32_t len, void *reply, uint32_t cap, uint32_t *reply_len)
{
	return rn_client_request_fds(c, type, body, len, NULL, 0,
				     RN_CLIENT_REPLY_TIMEOUT_MS, reply, cap,
				     reply_len);
}

int
rn_client_node_len(const char *name)
{
	size_t len;

	if (name == NULL)
		return -EINVAL;
	len = strnlen(name, RN_CLIENT_NODE_MAX + 1);
	return len == 0 || len > RN_CLIENT_NODE_MAX ? -EINVAL : (int)len;
}

int
rn_client_peer_add(struct rn_client *c, const char *name,
		   const char *address, uint16_t port)
{
	struct rn_client_peer p = { .port = port };
	uint8_t addr[16];
	int len = rn_client_node_len(name), rc;

	rc = rn_client_alive(c, false);
	if (rc != 0)
		return rc;
	if (len < 0 || address == NULL || port == 0 ||
	    strnlen(address, sizeof(p.address)) >= sizeof(p.address) ||
	    (inet_pton(AF_INET, address, addr) != 1 &&
	     inet_pton(AF_INET6, address, addr) != 1))
		return -EINVAL;
	memcpy(p.name, name, (size_t)len);
	memcpy(p.address, address, strlen(address));
	rc = rn_client_request(c, RN_CLIENT_MSG_PEER_ADD, &p, sizeof(p), NULL,
			       0, NULL);
	if (rc == 0)
		rn_client_route_forget(c, name, (uint32_t)len);
	return rc;
}

int
rn_client_peer_remove(struct rn_client *c, const char *name)
{
	int len = rn_client_node_len(name), rc;

	rc = rn_client_alive(c, false);
	if (rc != 0)
		return rc;
	if (len < 0)
		return -EINVAL;
	rc = rn_client_request(c, RN_CLIENT_MSG_PEER_REMOVE, name,
			       (uint32_t)len, NULL, 0, NULL);
	if (rc == 0 || rc == -ENOENT)
		rn_client_route_forget(c, name, (uint32_t)len);
	return rc;
}
