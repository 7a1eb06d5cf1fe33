/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rn_client_tool: a client process of rnotifyd for the process tests
 * (test_clients.py), built on librnotify only (rn_client.h).
 *
 *   rn_client_tool SOCKET AGENT
 *
 * Attaches as AGENT and prints "attached NODE" (or "attach-error -ERRNO"
 * and exits 1), then reads one command a line from stdin and answers each
 * with lines ending in one "rc N":
 *   send NODE AGENT NAME MSG COOKIE FLAGS   one rn_client_send()
 *   sendwait NODE AGENT NAME MSG COOKIE     the same, again while -EAGAIN
 *                                           (10 s at most)
 *   recv N TIMEOUT_MS        up to N deliveries: "got NODE AGENT NAME MSG"
 *   event TIMEOUT_MS         one event: "event TYPE STATUS COOKIE NODE AGENT"
 *   completion TIMEOUT_MS    one report: "completion COOKIE STATUS"
 *   wait TIMEOUT_MS          rn_client_wait()'s result
 *   fdready TIMEOUT_MS       whether rn_client_fd() polls readable (1/0)
 *   peer-add NAME ADDRESS PORT / peer-remove NAME
 *   stream TARGETS COUNT EXPECT SEED TIMEOUT_S
 *       send COUNT notifications to each of TARGETS (NODE/AGENT,...),
 *       numbered per target, in an order drawn from SEED, while
 *       receiving until EXPECT came; each delivery must name this client
 *       as its destination, come from the node and agent it says, and
 *       carry the next number from that sender. Prints "sent N",
 *       "from NODE/AGENT COUNT" per sender, "refused N", "bad ..." per
 *       fault; rc 0 when all came, in order, without a fault.
 *   flood NODE AGENT         send to NODE/AGENT until killed (prints
 *                            "flooding" after the first 100), taking
 *                            deliveries as it goes and never releasing
 *                            the last ones
 *   drain SECONDS            take every delivery for that long: "rc N"
 *   reattach                 detach, attach again (again while the
 *                            daemon says -EADDRINUSE, 10 s at most)
 *   quit                     detach and exit 0
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rn_client.h"

#define MAX_SENDERS 64
#define MAX_TARGETS 16
#define ID_MAX 400   /* "NODE/AGENT" and room to spare */

static struct rn_client *C;
static char me[ID_MAX];

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
send_retry(const char *node, const char *agent, const char *name,
	   const char *msg, uint64_t cookie, uint32_t flags, uint64_t ms)
{
	uint64_t deadline = now_ms() + ms;
	int rc;

	while ((rc = rn_client_send(C, node, agent, name,
				    (uint32_t)strlen(name), msg,
				    (uint32_t)strlen(msg), cookie, flags)) ==
	       -EAGAIN && now_ms() < deadline)
		rn_client_wait(C, 1);
	return rc;
}

static int
cmd_recv(unsigned int want, int timeout_ms)
{
	struct rn_client_notification got[RN_CLIENT_POLL_MAX];
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	unsigned int n = 0;

	while (n < want) {
		unsigned int max = want - n < RN_CLIENT_POLL_MAX ?
				   want - n : RN_CLIENT_POLL_MAX;
		int k = rn_client_poll(C, got, max);
		uint64_t t;

		if (k < 0)
			return k;
		for (int i = 0; i < k; i++)
			printf("got %s %s %.*s %.*s\n", got[i].node,
			       got[i].agent, (int)got[i].name_len,
			       (const char *)got[i].name, (int)got[i].msg_len,
			       (const char *)got[i].msg);
		n += (unsigned int)k;
		t = now_ms();
		if (n < want && k == 0) {
			if (t >= deadline)
				break;
			k = rn_client_wait(C, (int)(deadline - t));
			if (k < 0)
				return k;
		}
	}
	return (int)n;
}

/* One event (events) or one send report (!events), waiting up to
 * timeout_ms: printed, 1; or 0. */
static int
cmd_one(bool events, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	struct rn_client_completion c;
	struct rn_client_event ev;

	for (;;) {
		int k = events ? rn_client_events(C, &ev, 1) :
				 rn_client_completions(C, &c, 1);
		uint64_t t = now_ms();

		if (k < 0)
			return k;
		if (k == 1 && events)
			printf("event %u %d %llu %s %s\n", ev.type, ev.status,
			       (unsigned long long)ev.cookie,
			       ev.node[0] ? ev.node : "-",
			       ev.agent[0] ? ev.agent : "-");
		else if (k == 1)
			printf("completion %llu %d\n",
			       (unsigned long long)c.cookie, c.status);
		if (k == 1)
			return 1;
		if (t >= deadline)
			return 0;
		k = rn_client_wait(C, (int)(deadline - t));
		if (k < 0)
			return k;
	}
}

/* ---- stream ---- */

struct sender {
	char name[sizeof(me)];
	unsigned long next;
};

struct target {
	char node[RN_CLIENT_NODE_MAX + 1];
	char agent[RN_CLIENT_AGENT_MAX + 1];
	unsigned long sent;
};

static unsigned int
parse_targets(char *list, struct target *t)
{
	unsigned int n = 0;
	char *save = NULL;

	for (char *s = strtok_r(list, ",", &save); s != NULL && n < MAX_TARGETS;
	     s = strtok_r(NULL, ",", &save)) {
		char *slash = strchr(s, '/');

		if (slash == NULL)
			continue;
		*slash = '\0';
		snprintf(t[n].node, sizeof(t[n].node), "%s", s);
		snprintf(t[n].agent, sizeof(t[n].agent), "%s", slash + 1);
		t[n].sent = 0;
		n++;
	}
	return n;
}

/* One delivery of a stream: "S=FROM D=TO N=SEQ". */
static int
check_delivery(const struct rn_client_notification *g, struct sender *s,
	       unsigned int *n_senders)
{
	char msg[1024], from[ID_MAX], to[ID_MAX], said[ID_MAX];
	unsigned long seq;
	unsigned int i;

	snprintf(msg, sizeof(msg), "%.*s", (int)g->msg_len,
		 (const char *)g->msg);
	snprintf(from, sizeof(from), "%.31s/%.128s", g->node, g->agent);
	if (sscanf(msg, "S=%399s D=%399s N=%lu", said, to, &seq) != 3) {
		printf("bad malformed from %s: %s\n", from, msg);
		return -1;
	}
	if (strcmp(to, me) != 0 || strcmp(said, from) != 0) {
		printf("bad misdelivered: %s came to %s from %s\n", msg, me,
		       from);
		return -1;
	}
	for (i = 0; i < *n_senders && strcmp(s[i].name, from) != 0; i++)
		;
	if (i == *n_senders) {
		if (i == MAX_SENDERS)
			return -1;
		memcpy(s[i].name, from, sizeof(s[i].name));
		s[i].next = 0;
		(*n_senders)++;
	}
	if (seq != s[i].next) {
		printf("bad order from %s: %lu, expected %lu\n", from, seq,
		       s[i].next);
		s[i].next = seq + 1;
		return -1;
	}
	s[i].next++;
	return 0;
}

static int
cmd_stream(char *targets, unsigned long count, unsigned long expect,
	   unsigned int seed, unsigned int timeout_s)
{
	static struct sender senders[MAX_SENDERS];
	struct target t[MAX_TARGETS];
	struct rn_client_notification got[RN_CLIENT_POLL_MAX];
	struct rn_client_event ev[16];
	unsigned int n_t = parse_targets(targets, t), n_senders = 0;
	uint64_t deadline = now_ms() + timeout_s * 1000ull;
	unsigned long sent = 0, received = 0, refused = 0, faults = 0;
	int pick = -1, rc = 0;

	if (n_t == 0 && count != 0)
		return -EINVAL;
	srandom(seed);
	count *= n_t;   /* COUNT to each */
	while ((sent < count || received < expect) && now_ms() < deadline) {
		bool busy = false;
		int k;

		if (sent < count) {
			char msg[1024];

			while (pick < 0 || t[pick].sent == count / n_t)
				pick = (int)((unsigned long)random() % n_t);
			snprintf(msg, sizeof(msg), "S=%s D=%s/%s N=%lu", me,
				 t[pick].node, t[pick].agent, t[pick].sent);
			rc = rn_client_send(C, t[pick].node, t[pick].agent,
					    "s", 1, msg, (uint32_t)strlen(msg),
					    sent, 0);
			if (rc == 0) {
				t[pick].sent++;
				sent++;
				pick = -1;
				busy = true;
			} else if (rc != -EAGAIN) {
				printf("bad send to %s/%s: %d\n", t[pick].node,
				       t[pick].agent, rc);
				return rc;
			}
		}
		k = rn_client_poll(C, got, RN_CLIENT_POLL_MAX);
		if (k < 0)
			return k;
		for (int i = 0; i < k; i++)
			faults += check_delivery(&got[i], senders,
						 &n_senders) != 0;
		received += (unsigned long)k;
		busy |= k > 0;
		k = rn_client_events(C, ev, 16);
		if (k < 0)
			return k;
		for (int i = 0; i < k; i++)
			refused += ev[i].type == RN_CLIENT_EVENT_REFUSED;
		/* Nothing moved: block until something comes (or the ring
		 * to the lcore has room again: a short wait). */
		if (!busy)
			rn_client_wait(C, sent < count ? 1 : 100);
	}
	printf("sent %lu\n", sent);
	for (unsigned int i = 0; i < n_senders; i++)
		printf("from %s %lu\n", senders[i].name, senders[i].next);
	printf("refused %lu\n", refused);
	if (sent < count || received < expect)
		printf("bad timeout: sent %lu of %lu, received %lu of %lu\n",
		       sent, count, received, expect);
	return faults == 0 && sent == count && received >= expect ? 0 : -1;
}

static int
cmd_flood(const char *node, const char *agent)
{
	struct rn_client_notification got[RN_CLIENT_POLL_MAX];
	char msg[1024];
	unsigned long n = 0;

	for (;;) {
		int rc;

		snprintf(msg, sizeof(msg), "S=%s D=%.31s/%.128s N=%lu", me,
			 node, agent, n);
		rc = rn_client_send(C, node, agent, "f", 1, msg,
				    (uint32_t)strlen(msg), n, 0);
		if (rc == 0 && ++n == 100) {
			printf("flooding\n");
			fflush(stdout);
		} else if (rc == -EAGAIN) {
			rn_client_wait(C, 1);
		} else if (rc != 0) {
			return rc;
		}
		/* Taken, not given back: the last poll's buffers stay held
		 * when the kill comes. */
		rn_client_poll(C, got, RN_CLIENT_POLL_MAX);
	}
}

static int
cmd_drain(unsigned int seconds)
{
	struct rn_client_notification got[RN_CLIENT_POLL_MAX];
	uint64_t deadline = now_ms() + seconds * 1000ull;
	long n = 0;

	while (now_ms() < deadline) {
		int k = rn_client_poll(C, got, RN_CLIENT_POLL_MAX);

		if (k < 0)
			return k;
		n += k;
		if (k == 0)
			rn_client_wait(C, 10);
	}
	return (int)n;
}

static const char *socket_path, *agent_name;

static int
cmd_reattach(void)
{
	uint64_t deadline = now_ms() + 10000;
	int rc;

	rn_client_detach(C);
	C = NULL;
	while ((rc = rn_client_attach(socket_path, agent_name, &C)) ==
	       -EADDRINUSE || rc == -ECONNREFUSED || rc == -ENOENT) {
		if (now_ms() >= deadline)
			break;
		usleep(10000);
	}
	if (rc != 0)
		exit(3);   /* nothing to answer with */
	return 0;
}

static int
fdready(int timeout_ms)
{
	struct pollfd p = { .fd = rn_client_fd(C), .events = POLLIN };

	return poll(&p, 1, timeout_ms);
}

static int
run(char *line)
{
	char a[8][256] = { { 0 } };
	int n = sscanf(line, "%255s %255s %255s %255s %255s %255s %255s %255s",
		       a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);

	if (n <= 0)
		return -EINVAL;
	if (strcmp(a[0], "send") == 0 && n == 7)
		return rn_client_send(C, a[1], a[2], a[3],
				      (uint32_t)strlen(a[3]), a[4],
				      (uint32_t)strlen(a[4]),
				      strtoull(a[5], NULL, 0),
				      (uint32_t)strtoul(a[6], NULL, 0));
	if (strcmp(a[0], "sendwait") == 0 && n == 6)
		return send_retry(a[1], a[2], a[3], a[4],
				  strtoull(a[5], NULL, 0), 0, 10000);
	if (strcmp(a[0], "recv") == 0 && n == 3)
		return cmd_recv((unsigned int)atoi(a[1]), atoi(a[2]));
	if (strcmp(a[0], "event") == 0 && n == 2)
		return cmd_one(true, atoi(a[1]));
	if (strcmp(a[0], "completion") == 0 && n == 2)
		return cmd_one(false, atoi(a[1]));
	if (strcmp(a[0], "wait") == 0 && n == 2)
		return rn_client_wait(C, atoi(a[1]));
	if (strcmp(a[0], "fdready") == 0 && n == 2)
		return fdready(atoi(a[1]));
	if (strcmp(a[0], "peer-add") == 0 && n == 4)
		return rn_client_peer_add(C, a[1], a[2],
					  (uint16_t)atoi(a[3]));
	if (strcmp(a[0], "peer-remove") == 0 && n == 2)
		return rn_client_peer_remove(C, a[1]);
	if (strcmp(a[0], "stream") == 0 && n == 6)
		return cmd_stream(a[1], strtoul(a[2], NULL, 0),
				  strtoul(a[3], NULL, 0),
				  (unsigned int)strtoul(a[4], NULL, 0),
				  (unsigned int)atoi(a[5]));
	if (strcmp(a[0], "drain") == 0 && n == 2)
		return cmd_drain((unsigned int)atoi(a[1]));
	if (strcmp(a[0], "reattach") == 0 && n == 1)
		return cmd_reattach();
	if (strcmp(a[0], "flood") == 0 && n == 3)
		return cmd_flood(a[1], a[2]);
	return -EINVAL;
}

int
main(int argc, char **argv)
{
	char line[2048];
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: rn_client_tool SOCKET AGENT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	socket_path = argv[1];
	agent_name = argv[2];
	rc = rn_client_attach(argv[1], argv[2], &C);
	if (rc != 0) {
		printf("attach-error %d\n", rc);
		return 1;
	}
	snprintf(me, sizeof(me), "%.31s/%.128s", rn_client_node(C), argv[2]);
	printf("attached %s\n", rn_client_node(C));
	while (fgets(line, sizeof(line), stdin) != NULL) {
		if (strncmp(line, "quit", 4) == 0)
			break;
		printf("rc %d\n", run(line));
	}
	rn_client_detach(C);
	return 0;
}
