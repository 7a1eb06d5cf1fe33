/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Whether the daemon is still there. It says so itself when it drops a
 * client (region `closed`); when it dies (kill -9 included) only the
 * socket tells: it reads end-of-file. Looking at the socket costs a
 * syscall, so the calls look at most once per RN_CLIENT_ALIVE_CYCLES of
 * the time-stamp counter (about a millisecond): no syscall per
 * notification while busy, and a dead daemon noticed by the first call a
 * millisecond after it died. The counter is read inline (rdtsc), not
 * through clock_gettime(), which costs more than the rest of a send.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "client_pvt.h"

/* 2^21 cycles: 0.5 to 1 ms at the clock rates of today's servers. */
#define RN_CLIENT_ALIVE_CYCLES (1ull << 21)

int
rn_client_set_gone(struct rn_client *c)
{
	uint64_t one = 1;
	ssize_t n;

	if (!c->gone) {
		c->gone = true;
		/* The socket may still be open (the daemon set `closed`):
		 * make the fd readable all the same, for good (never
		 * drained now). */
		n = write(c->efd, &one, sizeof(one));
		(void)n;
		if (c->sock >= 0)
			shutdown(c->sock, SHUT_RDWR);
	}
	return -ENOTCONN;
}

/* The socket's state. The daemon sends nothing unasked: a message here
 * outside a request is dropped (it would keep the fd readable). */
static bool
socket_closed(int sock)
{
	char b;
	ssize_t n = recv(sock, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n > 0) {
		n = recv(sock, &b, 1, MSG_DONTWAIT | MSG_TRUNC);
		return false;
	}
	if (n == 0)
		return true;
	return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

int
rn_client_alive(struct rn_client *c, bool now)
{
	uint64_t t;

	if (__builtin_expect(c->gone, 0))
		return -ENOTCONN;
	if (__builtin_expect(__atomic_load_n(&c->region->closed,
					     __ATOMIC_ACQUIRE) != 0, 0))
		return rn_client_set_gone(c);
	t = rte_rdtsc();
	if (!now && t - c->alive_checked < RN_CLIENT_ALIVE_CYCLES)
		return 0;
	c->alive_checked = t;
	if (socket_closed(c->sock))
		return rn_client_set_gone(c);
	return 0;
}
