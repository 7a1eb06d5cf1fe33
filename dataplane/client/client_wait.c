/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waiting, and the fd that lets an event loop wait. The rule (the wake-up
 * protocol of rn_client_shm.h, client side): `armed` is 1, or the eventfd
 * is readable (a producer took `armed` and wrote it), at all times but
 * inside rn_client_arm(). The calls drain the eventfd and arm again only
 * when they find nothing at all to take, so the fd stays readable while
 * anything waits.
 *
 * The spin before the block (rn_client_spin(), for every wait of the
 * library: rn_client_wait(), rn_client_batch_wait()) yields the CPU
 * between its looks (sched_yield()), as an idle lcore's polls do: where
 * there are fewer cores than busy threads (two daemons and their clients
 * on two cores) the thread that will answer may need this CPU, and a spin
 * that kept it would make that thread wait for a time slice; where a core
 * is spare the yield returns at once and the spin stays a spin. Spinning
 * at all saves the wake-up of a blocked thread, the dearest step of a hop
 * on a VM (an idle vCPU woken by an IPI: tens of microseconds).
 */
#include <errno.h>
#include <sched.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "client_pvt.h"

uint64_t
rn_client_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void
rn_client_drain(struct rn_client *c)
{
	uint64_t count;

	if (read(c->efd, &count, sizeof(count)) != sizeof(count))
		return;   /* nothing there (yet) */
	c->owed = count >= c->owed ? 0 : c->owed - (uint32_t)count;
}

void
rn_client_keep_readable(struct rn_client *c)
{
	uint64_t one = 1;

	if (c->owed != 0 ||
	    __atomic_load_n(&c->region->armed, __ATOMIC_ACQUIRE) == 0)
		return;   /* written already, or a producer is writing it */
	if (write(c->efd, &one, sizeof(one)) == sizeof(one))
		c->owed++;
}

bool
rn_client_arm(struct rn_client *c)
{
	/* A producer took `armed` since we last stored it: its one write
	 * comes, if it is not there already. */
	if (__atomic_load_n(&c->region->armed, __ATOMIC_ACQUIRE) == 0)
		c->owed++;
	/* Drain what is owed; a write not there yet stays owed, and is
	 * drained by the next arm. */
	if (c->owed != 0)
		rn_client_drain(c);
	/* Pairs with rn_client_link_wake(): our store of armed before our
	 * last look, its enqueue before its load of armed. */
	__atomic_store_n(&c->region->armed, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!rn_client_pending(c))
		return false;
	/* It came while we armed: no producer wrote for it. */
	rn_client_keep_readable(c);
	return true;
}

bool
rn_client_spin(uint64_t spin_end, uint64_t deadline)
{
	uint64_t t = rn_client_now_ns();

	if (t >= spin_end || t >= deadline)
		return false;
	sched_yield();
	return true;
}

/* Something to take, or the daemon gone (-ENOTCONN): 1 / -ENOTCONN / 0. */
static int
ready(struct rn_client *c)
{
	int rc = rn_client_alive(c, false);

	if (rc != 0)
		return rc;
	return rn_client_pending(c) ? 1 : 0;
}

int
rn_client_block(struct rn_client *c, uint64_t deadline, int *woken)
{
	struct epoll_event ev[2];
	uint64_t t = rn_client_now_ns();
	int ms, n, rc;

	*woken = 0;
	if (deadline == UINT64_MAX)
		ms = -1;
	else if (t >= deadline)
		return 0;
	else
		ms = (deadline - t) / 1000000 >= INT32_MAX ? INT32_MAX :
		     (int)((deadline - t + 999999) / 1000000);
	n = epoll_wait(c->epfd, ev, 2, ms);
	if (n < 0)
		return errno == EINTR ? -EINTR : -errno;
	*woken = n;
	/* The socket readable: the daemon closed it (it sends nothing
	 * unasked). Looked at only then: a syscall. */
	for (int i = 0; i < n; i++)
		if (ev[i].data.fd == c->sock &&
		    (rc = rn_client_alive(c, true)) != 0)
			return rc;
	return 0;
}

int
rn_client_wait(struct rn_client *c, int timeout_ms)
{
	uint64_t start = rn_client_now_ns();
	uint64_t spin_end = start + c->spin_us * 1000ull;
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX :
			    start + (uint64_t)timeout_ms * 1000000ull;
	int rc;

	while ((rc = ready(c)) == 0 && rn_client_spin(spin_end, deadline))
		;
	if (rc != 0)
		return rc;
	for (;;) {
		int woken;

		if (rn_client_arm(c))
			return 1;
		if (rn_client_now_ns() >= deadline)
			return 0;
		rc = rn_client_block(c, deadline, &woken);
		if (rc != 0)
			return rc;
		if (rn_client_pending(c))
			return 1;
		/* Woken for nothing (a late write we drained around, or one
		 * we did not expect): drain, arm again, wait for the rest of
		 * the time. */
		if (woken > 0)
			rn_client_drain(c);
	}
}
