/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rnotify-tcp-pingpong: the baseline the client benchmark compares with.
 * Two processes on this host (this one and a child it forks) ping-pong a
 * message of SIZE bytes over TCP on loopback, with TCP_NODELAY and
 * blocking reads and writes: what two processes of a host get from the
 * kernel without rnotify.
 *
 *   rnotify-tcp-pingpong [--size N] [--round-trips N]
 *
 * Prints one line: "tcp SIZE bytes: RTT p50 X us, p99 Y us, avg Z us
 * (N round trips)".
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"

#define WARM_UP 100

/* All of len bytes, or -1 (closed, or an error). */
static int
io_all(int fd, uint8_t *buf, size_t len, bool reading)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = reading ? read(fd, buf + done, len - done) :
				      write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static void
nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The child: echo every message until the parent closes. */
static int
echo(int listen_fd, size_t size)
{
	uint8_t *buf = malloc(size);
	int fd = accept(listen_fd, NULL, NULL);

	if (fd < 0 || buf == NULL)
		return 1;
	nodelay(fd);
	while (io_all(fd, buf, size, true) == 0)
		if (io_all(fd, buf, size, false) != 0)
			return 1;
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "size", required_argument, NULL, 's' },
		{ "round-trips", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sa_len = sizeof(sa);
	unsigned long size = 16, trips = 2000;
	uint64_t *rtt, sum = 0;
	uint8_t *buf;
	int opt, lfd, fd, status;
	pid_t child;

	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 's': size = strtoul(optarg, NULL, 10); break;
		case 't': trips = strtoul(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (size == 0 || size > (1ul << 24) || trips == 0) {
		fprintf(stderr, "usage: rnotify-tcp-pingpong [--size 1..16M] "
			"[--round-trips N]\n");
		return 2;
	}
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(lfd, 1) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sa_len) != 0) {
		perror("rnotify-tcp-pingpong: listen");
		return 1;
	}
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0)
		_exit(echo(lfd, size));
	close(lfd);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("rnotify-tcp-pingpong: connect");
		return 1;
	}
	nodelay(fd);
	buf = malloc(size);
	rtt = calloc(trips, sizeof(*rtt));
	if (buf == NULL || rtt == NULL)
		return 1;
	for (unsigned long i = 0; i < size; i++)
		buf[i] = (uint8_t)(i * 31u);
	for (unsigned long i = 0; i < WARM_UP + trips; i++) {
		uint64_t t0 = rn_bench_now_ns();

		if (io_all(fd, buf, size, false) != 0 ||
		    io_all(fd, buf, size, true) != 0) {
			fprintf(stderr, "rnotify-tcp-pingpong: the echo "
				"stopped\n");
			return 1;
		}
		if (i >= WARM_UP)
			rtt[i - WARM_UP] = rn_bench_now_ns() - t0;
	}
	close(fd);
	waitpid(child, &status, 0);
	for (unsigned long i = 0; i < trips; i++)
		sum += rtt[i];
	qsort(rtt, trips, sizeof(*rtt), rn_bench_compare_u64);
	printf("tcp %lu bytes: RTT p50 %.1f us, p99 %.1f us, avg %.1f us "
	       "(%lu round trips)\n", size, rtt[trips / 2] / 1e3,
	       rtt[trips * 99 / 100] / 1e3, (double)sum / trips / 1e3, trips);
	return 0;
}
