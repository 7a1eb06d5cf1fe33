/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requests after ATTACH (rn_client_msg.h): one message out, one reply in,
 * in order; and the two that add and remove peers. A reply that does not
 * come, or a socket that closes, means the daemon is gone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
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

int
rn_client_request(struct rn_client *c, uint16_t type, const void *body,
		  uint32_t len, void *reply, uint32_t cap, uint32_t *reply_len)
{
	uint8_t buf[RN_CLIENT_MSG_MAX];
	struct rn_client_msg_hdr hdr = {
		.type = type, .version = RN_CLIENT_PROTO_VERSION, .len = len };
	ssize_t n;

	if (c->gone)
		return -ENOTCONN;
	if (len > sizeof(buf) - sizeof(hdr))
		return -EINVAL;
	memcpy(buf, &hdr, sizeof(hdr));
	if (len != 0)
		memcpy(buf + sizeof(hdr), body, len);
	if (send(c->sock, buf, sizeof(hdr) + len, MSG_NOSIGNAL) < 0)
		return errno == EINTR ? -EINTR : rn_client_set_gone(c);
	if (wait_readable(c->sock, RN_CLIENT_REPLY_TIMEOUT_MS) <= 0)
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

/* A node name: 1..RN_CLIENT_NODE_MAX bytes; its length or -EINVAL. */
static int
node_len(const char *name)
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
	int len = node_len(name), rc;

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
	int len = node_len(name), rc;

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
