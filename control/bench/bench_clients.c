/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rnotify-bench --clients: the round trip as applications in their own
 * processes see it. This process attaches to two daemons with librnotify
 * (agent bench-A to the first, bench-B to the second) and ping-pongs
 * between its two clients: A sends to (node of B, bench-B), B waits
 * (rn_client_wait: a short spin, then its fd) and echoes to (node of A,
 * bench-A), A waits. Each hop crosses both daemons: A's submit ring, the
 * native channel between the daemons, B's deliver ring.
 *
 *   rnotify-bench --clients SOCKET_A,SOCKET_B [--sizes 16,256,4096]
 *                 [--round-trips N] [--label TEXT]
 *
 * Prints a table row per size: RTT p50, p99 and average in us. Fails when
 * an echo comes back altered, from another agent, or not at all.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clients.h"
#include "bench_time.h"
#include "rn_client.h"

#define MAX_SIZES 8
#define WARM_UP 200
#define REACH_MS 60000   /* the first sends connect the daemons' endpoint */

struct hop {
	struct rn_client *from;
	struct rn_client *to;
	const char *to_node;
	const char *to_agent;
	const char *from_node;
	const char *from_agent;
};

/* Send msg on the hop, again while -EAGAIN (ring full, connecting), for
 * up to ms. */
static int
hop_send(const struct hop *h, const uint8_t *msg, uint32_t len, uint64_t ms)
{
	uint64_t deadline = rn_bench_now_ns() + ms * 1000000ull;
	int rc;

	while ((rc = rn_client_send(h->from, h->to_node, h->to_agent, "ping",
				    4, msg, len, 0, 0)) == -EAGAIN &&
	       rn_bench_now_ns() < deadline)
		rn_client_wait(h->from, 1);
	return rc;
}

/* Wait for the hop's notification at its receiver; it must be len bytes
 * of want, from the hop's sender. */
static int
hop_receive(const struct hop *h, const uint8_t *want, uint32_t len,
	    int timeout_ms)
{
	struct rn_client_notification got;
	int rc;

	/* Wait first, then poll: every poll takes one delivery (what the
	 * instruction count divides by). */
	for (;;) {
		rc = rn_client_wait(h->to, timeout_ms);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return -ETIMEDOUT;
		rc = rn_client_poll(h->to, &got, 1);
		if (rc < 0)
			return rc;
		if (rc == 1)
			break;
	}
	if (got.msg_len != len || memcmp(got.msg, want, len) != 0 ||
	    strcmp(got.agent, h->from_agent) != 0 ||
	    strcmp(got.node, h->from_node) != 0) {
		fprintf(stderr, "rnotify-bench: an echo of %u bytes came back "
			"altered (%u bytes from %s/%s)\n", len, got.msg_len,
			got.node, got.agent);
		return -EPROTO;
	}
	return 0;
}

/* One size: WARM_UP + trips round trips A -> B -> A. */
static int
measure(const struct hop *ab, const struct hop *ba, uint32_t size,
	unsigned int trips, const char *label, const uint8_t *payload)
{
	uint32_t len = size > 4 ? size - 4 : 0;   /* the name is "ping" */
	uint64_t *rtt = calloc(trips, sizeof(*rtt)), sum = 0;
	int rc = 0;

	if (rtt == NULL)
		return -ENOMEM;
	for (unsigned int i = 0; i < WARM_UP + trips && rc == 0; i++) {
		uint64_t t0 = rn_bench_now_ns();

		rc = hop_send(ab, payload, len, 10000);
		if (rc == 0)
			rc = hop_receive(ab, payload, len, 10000);
		if (rc == 0)
			rc = hop_send(ba, payload, len, 10000);
		if (rc == 0)
			rc = hop_receive(ba, payload, len, 10000);
		if (i >= WARM_UP)
			rtt[i - WARM_UP] = rn_bench_now_ns() - t0;
	}
	if (rc == 0) {
		for (unsigned int i = 0; i < trips; i++)
			sum += rtt[i];
		qsort(rtt, trips, sizeof(*rtt), rn_bench_compare_u64);
		printf("| %s | %u | %.1f | %.1f | %.1f |\n", label, size,
		       rtt[trips / 2] / 1e3, rtt[trips * 99 / 100] / 1e3,
		       (double)sum / trips / 1e3);
		fflush(stdout);
	}
	free(rtt);
	return rc;
}

/* Whether h's sender heard that its notification was refused. */
static bool
refused(const struct hop *h)
{
	struct rn_client_event ev[8];
	bool seen = false;
	int n;

	while ((n = rn_client_events(h->from, ev, 8)) > 0)
		for (int i = 0; i < n; i++)
			seen |= ev[i].type == RN_CLIENT_EVENT_REFUSED;
	return seen;
}

/* A hop's first send, again while the endpoint is down until deadline:
 * a daemon that started before its peer listened failed its first call,
 * and calls again after a backoff. */
static int
reach_send(const struct hop *h, const uint8_t *payload, uint64_t deadline)
{
	const struct timespec backoff = { .tv_nsec = 10 * 1000000 };
	int rc;

	while ((rc = hop_send(h, payload, 8, REACH_MS)) == -ENOTCONN &&
	       rn_bench_now_ns() < deadline)
		nanosleep(&backoff, NULL);
	return rc;
}

/*
 * The first notification of a hop: the endpoint connects on first use.
 * A refusal (the receiving agent not attached yet, when the two sides are
 * started apart) sends it again.
 */
static int
reach_hop(const struct hop *h, const uint8_t *payload)
{
	uint64_t deadline = rn_bench_now_ns() + REACH_MS * 1000000ull;
	int rc = reach_send(h, payload, deadline);

	while (rc == 0) {
		rc = hop_receive(h, payload, 8, 100);
		if (rc != -ETIMEDOUT || rn_bench_now_ns() > deadline)
			break;
		rc = refused(h) ? reach_send(h, payload, deadline) : 0;
	}
	return rc;
}

/* The first notification each way. */
static int
reach(const struct hop *ab, const struct hop *ba, const uint8_t *payload)
{
	int rc = reach_hop(ab, payload);

	return rc == 0 ? reach_hop(ba, payload) : rc;
}

static int
parse_sizes(const char *text, uint32_t *sizes, unsigned int *n)
{
	char *copy = strdup(text), *save = NULL;

	if (copy == NULL)
		return -ENOMEM;
	*n = 0;
	for (char *s = strtok_r(copy, ",", &save); s != NULL;
	     s = strtok_r(NULL, ",", &save)) {
		long v = strtol(s, NULL, 10);

		if (*n == MAX_SIZES || v < 8 || v > (1 << 20)) {
			free(copy);
			return -EINVAL;
		}
		sizes[(*n)++] = (uint32_t)v;
	}
	free(copy);
	return *n > 0 ? 0 : -EINVAL;
}

int
rn_bench_clients(int argc, char **argv)
{
	static const struct option options[] = {
		{ "clients", required_argument, NULL, 'c' },
		{ "sizes", required_argument, NULL, 's' },
		{ "round-trips", required_argument, NULL, 't' },
		{ "label", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t sizes[MAX_SIZES] = { 16, 256, 4096 };
	unsigned int n_sizes = 3, trips = 2000;
	const char *label = "client";
	char *sockets = NULL, *sock_b;
	struct rn_client *a = NULL, *b = NULL;
	struct hop ab, ba;
	uint8_t *payload;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'c': sockets = optarg; break;
		case 't': trips = (unsigned int)atoi(optarg); break;
		case 'l': label = optarg; break;
		case 's':
			if (parse_sizes(optarg, sizes, &n_sizes) == 0)
				break;
			/* fall through */
		default:
			fprintf(stderr, "usage: rnotify-bench --clients "
				"SOCKET_A,SOCKET_B [--sizes LIST] "
				"[--round-trips N] [--label TEXT]\n");
			return 2;
		}
	}
	sock_b = sockets != NULL ? strchr(sockets, ',') : NULL;
	if (sock_b == NULL || trips == 0) {
		fprintf(stderr, "rnotify-bench: --clients SOCKET_A,SOCKET_B\n");
		return 2;
	}
	*sock_b++ = '\0';
	rc = rn_client_attach(sockets, "bench-A", &a);
	if (rc == 0)
		rc = rn_client_attach(sock_b, "bench-B", &b);
	if (rc != 0) {
		fprintf(stderr, "rnotify-bench: attach: %s\n", strerror(-rc));
		rn_client_detach(a);
		return 1;
	}
	ab = (struct hop){ a, b, rn_client_node(b), "bench-B",
			   rn_client_node(a), "bench-A" };
	ba = (struct hop){ b, a, rn_client_node(a), "bench-A",
			   rn_client_node(b), "bench-B" };
	payload = malloc(1 << 20);
	if (payload == NULL)
		return 1;
	/* Binary, zeros included: nothing may treat it as a string. */
	for (uint32_t i = 0; i < (1u << 20); i++)
		payload[i] = (uint8_t)(i * 31u);
	rc = reach(&ab, &ba, payload);
	printf("| mode | bytes | RTT p50 (us) | RTT p99 (us) | RTT avg (us) |\n"
	       "| --- | ---: | ---: | ---: | ---: |\n");
	for (unsigned int i = 0; i < n_sizes && rc == 0; i++)
		rc = measure(&ab, &ba, sizes[i], trips, label, payload);
	if (rc != 0)
		fprintf(stderr, "rnotify-bench: %s\n", strerror(-rc));
	free(payload);
	rn_client_detach(a);
	rn_client_detach(b);
	return rc == 0 ? 0 : 1;
}
