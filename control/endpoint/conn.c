/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control connections. Nothing here blocks: connect() is non-blocking with
 * a deadline (timers.c), reads take what the socket has, and writes queue
 * up to RN_CONN_TX_MAX bytes, past which a peer that does not read is cut
 * off rather than allowed to hold memory or the thread. A frame the layer
 * above cannot take yet (a NOTIFY that finds the application's ring full)
 * is held, and the connection not read, until rn_conn_resume() finds it
 * taken: TCP flow control slows the peer. This file calls nothing above
 * it: what happens on a connection goes up through rn_conn_ops.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "conn_pvt.h"
#include "log_pvt.h"
#include "rn_plane.h"

#define READS_PER_EVENT 16   /* then let other connections have a turn */

static void conn_io(struct rn_control *ctl, void *arg, uint32_t events);
static void readable(struct rn_conn *c);

void
rn_conn_enter(struct rn_conn *c, enum rn_conn_phase phase)
{
	c->phase = phase;
	c->deadline_ms = rn_now_ms() + c->pool->timeout_ms;
}

void
rn_conn_fail(struct rn_conn *c, const char *why)
{
	c->pool->ops->failed(c, why);
}

/* Watch for what c waits for: input unless it is held, output when queued. */
static void
rearm(struct rn_conn *c)
{
	rn_control_unwatch(c->pool->ctl, c->fd);
	rn_control_watch(c->pool->ctl, c->fd, (c->rx_held ? 0 : EPOLLIN) |
			 (c->want_out ? EPOLLOUT : 0), conn_io, c);
}

static void
arm_out(struct rn_conn *c, bool on)
{
	if (c->want_out == on)
		return;
	c->want_out = on;
	rearm(c);
}

/* sa's address as an IPv6 one (IPv4 mapped). */
static void
ip_of_sockaddr(const struct sockaddr *sa, struct in6_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET6) {
		*out = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	} else if (sa->sa_family == AF_INET) {
		out->s6_addr[10] = 0xff;
		out->s6_addr[11] = 0xff;
		memcpy(&out->s6_addr[12],
		       &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
		       4);
	}
}

static struct rn_conn *
conn_new(struct rn_conn_pool *pool, int fd, bool outbound, const char *peer,
	 const struct sockaddr *sa)
{
	struct rn_conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (c == NULL || (c->rx = malloc(RN_CONN_RX_MAX)) == NULL) {
		free(c);
		close(fd);
		return NULL;
	}
	c->pool = pool;
	c->fd = fd;
	c->outbound = outbound;
	c->last_rx_ms = c->last_tx_ms = rn_now_ms();
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	ip_of_sockaddr(sa, &c->peer_ip);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->want_out = outbound;   /* connect() completes with EPOLLOUT */
	if (rn_control_watch(pool->ctl, fd, EPOLLIN | (outbound ? EPOLLOUT : 0),
			     conn_io, c) != 0) {
		free(c->rx);
		free(c);
		close(fd);
		return NULL;
	}
	c->next = pool->live;
	pool->live = c;
	pool->n_live++;
	return c;
}

static void
format_peer(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	uint16_t port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;

		inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
		port = ntohs(s->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)sa;

		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		port = ntohs(s->sin6_port);
	}
	snprintf(buf, len, "%s port %u", host, port);
}

/* An inbound connection still in its handshake: no endpoint has it. */
static bool
pending(const struct rn_conn *c)
{
	return !c->outbound && c->ep == NULL && !c->dead;
}

static unsigned int
pending_from(const struct rn_conn_pool *pool, const struct in6_addr *ip)
{
	unsigned int n = 0;

	for (const struct rn_conn *c = pool->live; c != NULL; c = c->next)
		n += pending(c) &&
		     memcmp(&c->peer_ip, ip, sizeof(*ip)) == 0;
	return n;
}

/*
 * With RN_CONN_MAX_PENDING handshakes in progress, close the oldest of the
 * address that has the most. O(live + pending^2), on each accept.
 */
static void
evict_pending(struct rn_conn_pool *pool)
{
	struct rn_conn *p[RN_CONN_MAX_PENDING], *victim = NULL;
	unsigned int n = 0, most = 0;

	for (struct rn_conn *c = pool->live; c != NULL; c = c->next)
		if (pending(c) && n < RN_CONN_MAX_PENDING)
			p[n++] = c;
	if (n < RN_CONN_MAX_PENDING)
		return;
	for (unsigned int i = 0; i < n; i++) {
		unsigned int from = 0;

		for (unsigned int j = 0; j < n; j++)
			from += memcmp(&p[j]->peer_ip, &p[i]->peer_ip,
				       sizeof(p[i]->peer_ip)) == 0;
		/* New connections go in front: on a tie, the later is older. */
		if (from > most || (from == most &&
				    p[i]->accepted_ms <= victim->accepted_ms)) {
			most = from;
			victim = p[i];
		}
	}
	rn_conn_fail(victim, "handshake cut short: too many in progress, "
		     "most from its address");
}

struct rn_conn *
rn_conn_accepted(struct rn_conn_pool *pool, int fd, const struct sockaddr *sa,
		 socklen_t len)
{
	struct in6_addr ip;
	char peer[64];
	struct rn_conn *c;
	uint64_t suppressed;

	(void)len;
	format_peer(sa, peer, sizeof(peer));
	ip_of_sockaddr(sa, &ip);
	if (pending_from(pool, &ip) >= RN_CONN_MAX_PENDING_PER_ADDRESS) {
		if (rn_plane_log_refusal(rn_now_ms(), &suppressed)) {
			char more[48] = "";

			if (suppressed != 0)
				snprintf(more, sizeof(more), " [and %" PRIu64
					 " more not logged]", suppressed);
			RN_PLANE_LOG(NOTICE, "refused %s: %u handshakes from "
				     "that address in progress already%s",
				     peer, RN_CONN_MAX_PENDING_PER_ADDRESS,
				     more);
		}
		close(fd);
		return NULL;
	}
	evict_pending(pool);
	c = conn_new(pool, fd, false, peer, sa);
	if (c == NULL)
		return NULL;
	c->accepted_ms = rn_now_ms();
	rn_conn_enter(c, RN_CONN_WAIT_HELLO);
	/* A caller sends its first frame with its connect: often it is in
	 * already. Taken now, a HELLO (or a CHALLENGE answered) moves the
	 * connection on before the next accept counts what is pending, so
	 * a burst of callers from one address is not judged a flood. */
	readable(c);
	return c;
}

int
rn_conn_connect(struct rn_conn_pool *pool, const char *address, uint16_t port,
		struct rn_conn **out)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	char service[8], peer[64];
	struct rn_conn *c;
	int fd, rc;

	snprintf(service, sizeof(service), "%u", port);
	/* Numeric only (the configuration guarantees it): never a DNS wait. */
	rc = getaddrinfo(address, service, &hints, &ai);
	if (rc != 0)
		return -EINVAL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		freeaddrinfo(ai);
		return rc;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
		rc = -errno;
		freeaddrinfo(ai);
		close(fd);
		return rc;
	}
	format_peer(ai->ai_addr, peer, sizeof(peer));
	c = conn_new(pool, fd, true, peer, ai->ai_addr);
	freeaddrinfo(ai);
	if (c == NULL)
		return -ENOMEM;
	rn_conn_enter(c, RN_CONN_TCP_CONNECTING);
	*out = c;
	return 0;
}

static void
flush(struct rn_conn *c)
{
	while (c->tx_off < c->tx_len) {
		ssize_t n = send(c->fd, c->tx + c->tx_off, c->tx_len - c->tx_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			c->tx_off += (size_t)n;
			continue;
		}
		if (errno == EAGAIN || errno == EINTR)
			break;
		rn_conn_fail(c, strerror(errno));
		return;
	}
	if (c->tx_off == c->tx_len)
		c->tx_off = c->tx_len = 0;
	if (c->phase != RN_CONN_TCP_CONNECTING)
		arm_out(c, c->tx_len != 0);
}

void
rn_conn_send(struct rn_conn *c, const uint8_t *frame, size_t len)
{
	size_t queued = rn_conn_queued(c);
	uint8_t *p;

	if (c->dead || len == 0)
		return;
	if (queued + len > RN_CONN_TX_MAX) {
		char why[96];

		snprintf(why, sizeof(why), "peer not reading: %zu bytes queued",
			 queued);
		rn_conn_fail(c, why);
		return;
	}
	/* Keep only what is queued: a slow reader must not grow the buffer. */
	if (c->tx_off > 0) {
		memmove(c->tx, c->tx + c->tx_off, queued);
		c->tx_len = queued;
		c->tx_off = 0;
	}
	p = realloc(c->tx, c->tx_len + len);
	if (p == NULL) {
		rn_conn_fail(c, "out of memory for the write queue");
		return;
	}
	c->tx = p;
	memcpy(c->tx + c->tx_len, frame, len);
	c->tx_len += len;
	c->last_tx_ms = rn_now_ms();
	if (c->phase != RN_CONN_TCP_CONNECTING)
		flush(c);
}

void
rn_conn_send_refuse(struct rn_conn *c, uint16_t code, const char *text)
{
	uint8_t frame[RN_PROTO_HEADER_SIZE + 3 + RN_PROTO_REASON_MAX];

	rn_conn_send(c, frame, rn_proto_encode_refuse(frame, sizeof(frame), code,
						   text));
	if (!c->dead)
		flush(c);
}

/* connect() finished, one way or the other. */
static void
connected(struct rn_conn *c)
{
	int err = 0;
	socklen_t len = sizeof(err);
	char why[96];

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		err = errno;
	if (err != 0) {
		snprintf(why, sizeof(why), "connect to %s: %s", c->peer,
			 strerror(err));   /* the peer is in the text */
		rn_conn_fail(c, why);
		return;
	}
	rn_conn_enter(c, RN_CONN_TCP_UP);
	c->last_rx_ms = rn_now_ms();
	flush(c);
	if (!c->dead)
		c->pool->ops->connected(c);
}

/*
 * Hand every whole frame in the receive buffer up. True when it stopped
 * at one the layer above could not take yet (c->rx_held).
 */
static bool
consume(struct rn_conn *c)
{
	size_t off = 0;
	bool held = false;

	while (!c->dead) {
		struct rn_proto_frame f;
		char why[160];
		size_t used = 0;
		int rc = rn_proto_decode(c->rx + off, c->rx_len - off, &f, &used,
					 why, sizeof(why));

		if (rc == 0)
			break;
		if (rc < 0) {
			char line[256];

			if (rc == -EPROTONOSUPPORT)
				rn_conn_send_refuse(c, RN_REFUSE_VERSION, why);
			snprintf(line, sizeof(line), "bad frame: %s", why);
			rn_conn_fail(c, line);
			return false;
		}
		if (c->pool->ops->frame(c, &f) == -EAGAIN) {
			/* Keep it, and stop reading: TCP's flow control then
			 * slows the peer, and nothing is lost. */
			if (!c->rx_held) {
				c->rx_held = true;
				rearm(c);
			}
			held = true;
			break;
		}
		off += used;
		c->last_rx_ms = rn_now_ms();
	}
	if (!c->dead) {
		memmove(c->rx, c->rx + off, c->rx_len - off);
		c->rx_len -= off;
	}
	return held;
}

static void
readable(struct rn_conn *c)
{
	for (int i = 0; i < READS_PER_EVENT && !c->dead && !c->rx_held; i++) {
		ssize_t n = recv(c->fd, c->rx + c->rx_len, RN_CONN_RX_MAX - c->rx_len,
				 MSG_DONTWAIT);

		if (n > 0) {
			c->rx_len += (size_t)n;
			consume(c);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		rn_conn_fail(c, n == 0 ? "peer closed the connection" :
				      strerror(errno));
		return;
	}
}

static void
conn_io(struct rn_control *ctl, void *arg, uint32_t events)
{
	struct rn_conn *c = arg;

	(void)ctl;
	if (c->dead)
		return;
	if (c->phase == RN_CONN_TCP_CONNECTING) {
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			connected(c);
		return;
	}
	if (c->rx_held && (events & (EPOLLERR | EPOLLHUP))) {
		/* Whatever it sent is still unread behind the held frame. */
		rn_conn_fail(c, "connection lost while its notifications waited "
			  "for the application");
		return;
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		readable(c);
	if (!c->dead && (events & EPOLLOUT))
		flush(c);
}

size_t
rn_conn_queued(const struct rn_conn *c)
{
	return c->tx_len - c->tx_off;
}

void
rn_conn_resume(struct rn_conn *c)
{
	if (c->dead || !c->rx_held || consume(c) || c->dead)
		return;   /* not held, or held again */
	c->rx_held = false;
	/* Nothing was read while held: the peer's silence proves nothing. */
	c->last_rx_ms = rn_now_ms();
	rearm(c);
	readable(c);
}

void
rn_conn_read_pending(struct rn_conn *c)
{
	if (!c->dead && !c->rx_held && c->phase != RN_CONN_TCP_CONNECTING)
		readable(c);
}

void
rn_conn_close(struct rn_conn *c)
{
	struct rn_conn **link;

	if (c->dead)
		return;
	c->dead = true;
	rn_control_unwatch(c->pool->ctl, c->fd);
	close(c->fd);
	c->ep = NULL;
	for (link = &c->pool->live; *link != NULL; link = &(*link)->next) {
		if (*link == c) {
			*link = c->next;
			break;
		}
	}
	c->pool->n_live--;
	c->next = c->pool->dead;
	c->pool->dead = c;
}

void
rn_conn_reap(struct rn_conn_pool *pool)
{
	while (pool->dead != NULL) {
		struct rn_conn *c = pool->dead;

		pool->dead = c->next;
		free(c->rx);
		free(c->tx);
		free(c);
	}
}

/*
 * The IP address in the first len characters of text, as an IPv6 address
 * (an IPv4 one mapped, ::ffff:a.b.c.d, as a dual-stack listener sees it).
 */
static bool
ip_of(const char *text, size_t len, struct in6_addr *out)
{
	char buf[INET6_ADDRSTRLEN];
	struct in_addr v4;

	if (len >= sizeof(buf))
		return false;
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, out) == 1)
		return true;
	if (inet_pton(AF_INET, buf, &v4) != 1)
		return false;
	memset(out, 0, sizeof(*out));
	out->s6_addr[10] = 0xff;
	out->s6_addr[11] = 0xff;
	memcpy(&out->s6_addr[12], &v4, sizeof(v4));
	return true;
}

/* c->peer is "ADDRESS port N". */
bool
rn_conn_from_address(const struct rn_conn *c, const char *address)
{
	const char *end = strstr(c->peer, " port ");
	struct in6_addr from, configured;

	return end != NULL && ip_of(c->peer, (size_t)(end - c->peer), &from) &&
	       ip_of(address, strlen(address), &configured) &&
	       memcmp(&from, &configured, sizeof(from)) == 0;
}

int
rn_conn_peer_ipv4(const struct rn_conn *c, uint8_t out[4])
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (memcmp(c->peer_ip.s6_addr, mapped, sizeof(mapped)) != 0)
		return -EAFNOSUPPORT;
	memcpy(out, &c->peer_ip.s6_addr[12], 4);
	return 0;
}
