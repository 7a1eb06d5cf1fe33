/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "rn_control.h"

#define MAX_EVENTS 32
#define WAIT_MAX_MS 1000  /* never block longer, whatever is watched */

struct watch {
	int fd;
	bool removed;            /* unwatched during dispatch: freed after */
	rn_control_fd_cb cb;
	void *arg;
	struct watch *next;
};

struct rn_control {
	int epoll_fd;
	int signal_fd;
	int timer_fd;
	bool stopping;
	int signal;
	rn_control_tick_cb tick;
	void *tick_arg;
	struct watch *watches;   /* O(N) lookups: a few dozen fds at most */
};

static sigset_t
stop_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	return set;
}

int
rn_control_block_signals(void)
{
	sigset_t set = stop_signals();

	return -pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static void
on_signal(struct rn_control *ctl, void *arg, uint32_t events)
{
	struct signalfd_siginfo info;

	(void)arg;
	(void)events;
	if (read(ctl->signal_fd, &info, sizeof(info)) == sizeof(info)) {
		ctl->signal = (int)info.ssi_signo;
		ctl->stopping = true;
	}
}

static void
on_timer(struct rn_control *ctl, void *arg, uint32_t events)
{
	uint64_t expirations;

	(void)arg;
	(void)events;
	if (read(ctl->timer_fd, &expirations, sizeof(expirations)) > 0 &&
	    ctl->tick != NULL)
		ctl->tick(ctl, ctl->tick_arg);
}

int
rn_control_create(uint32_t tick_ms, rn_control_tick_cb tick, void *arg,
		  struct rn_control **out)
{
	struct itimerspec period = {
		.it_interval = { tick_ms / 1000, (long)(tick_ms % 1000) * 1000000 },
		.it_value = { tick_ms / 1000, (long)(tick_ms % 1000) * 1000000 },
	};
	sigset_t set = stop_signals();
	struct rn_control *ctl = calloc(1, sizeof(*ctl));
	int rc;

	if (ctl == NULL)
		return -ENOMEM;
	ctl->tick = tick;
	ctl->tick_arg = arg;
	ctl->signal_fd = ctl->timer_fd = -1;
	ctl->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (ctl->epoll_fd < 0)
		goto fail_errno;
	ctl->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (ctl->signal_fd < 0)
		goto fail_errno;
	ctl->timer_fd = timerfd_create(CLOCK_MONOTONIC,
				       TFD_NONBLOCK | TFD_CLOEXEC);
	if (ctl->timer_fd < 0 ||
	    timerfd_settime(ctl->timer_fd, 0, &period, NULL) != 0)
		goto fail_errno;
	rc = rn_control_watch(ctl, ctl->signal_fd, EPOLLIN, on_signal, NULL);
	if (rc == 0)
		rc = rn_control_watch(ctl, ctl->timer_fd, EPOLLIN, on_timer,
				      NULL);
	if (rc != 0)
		goto fail;
	*out = ctl;
	return 0;

fail_errno:
	rc = -errno;
fail:
	rn_control_destroy(ctl);
	return rc;
}

int
rn_control_watch(struct rn_control *ctl, int fd, uint32_t events,
		 rn_control_fd_cb cb, void *arg)
{
	struct watch *w = calloc(1, sizeof(*w));
	struct epoll_event ev = { .events = events };

	if (w == NULL)
		return -ENOMEM;
	*w = (struct watch){ .fd = fd, .cb = cb, .arg = arg,
			     .next = ctl->watches };
	ev.data.ptr = w;
	if (epoll_ctl(ctl->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		int rc = -errno;

		free(w);
		return rc;
	}
	ctl->watches = w;
	return 0;
}

int
rn_control_unwatch(struct rn_control *ctl, int fd)
{
	for (struct watch *w = ctl->watches; w != NULL; w = w->next) {
		if (w->fd == fd && !w->removed) {
			epoll_ctl(ctl->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
			w->removed = true;
			return 0;
		}
	}
	return -ENOENT;
}

/* Free the watches unwatched during the last dispatch. */
static void
reap_watches(struct rn_control *ctl)
{
	struct watch **link = &ctl->watches;

	while (*link != NULL) {
		struct watch *w = *link;

		if (w->removed) {
			*link = w->next;
			free(w);
		} else {
			link = &w->next;
		}
	}
}

int
rn_control_run(struct rn_control *ctl)
{
	struct epoll_event events[MAX_EVENTS];

	while (!ctl->stopping) {
		int n = epoll_wait(ctl->epoll_fd, events, MAX_EVENTS,
				   WAIT_MAX_MS);

		for (int i = 0; i < n; i++) {
			struct watch *w = events[i].data.ptr;

			if (!w->removed)
				w->cb(ctl, w->arg, events[i].events);
		}
		reap_watches(ctl);
	}
	return ctl->signal;
}

void
rn_control_stop(struct rn_control *ctl)
{
	ctl->stopping = true;
}

void
rn_control_destroy(struct rn_control *ctl)
{
	while (ctl->watches != NULL) {
		struct watch *w = ctl->watches;

		ctl->watches = w->next;
		free(w);
	}
	if (ctl->timer_fd >= 0)
		close(ctl->timer_fd);
	if (ctl->signal_fd >= 0)
		close(ctl->signal_fd);
	if (ctl->epoll_fd >= 0)
		close(ctl->epoll_fd);
	free(ctl);
}
