/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rnotify-bench: notifications between two rnotify processes, measured from
 * an application thread inside each (the daemon's own process, EAL, lcores
 * and control plane; the app talks to it through rn_notify.h).
 *
 *   rnotify-bench -c FILE --peer NAME --respond [--stall-ms N]
 *   rnotify-bench -c FILE --peer NAME [--sizes 16,256,4096,65528]
 *                 [--messages N] [--round-trips N] [--label TEXT]
 *                 [--completions K] [--burst B]
 *
 * The initiator prints, per size (name + msg bytes): one-way message rate
 * (N notifications sent back to back, until the responder confirms it got
 * them all) and ping-pong round-trip latency p50 and p99 (the responder
 * echoes each). Wall-clock figures: compare them in one run, on one machine.
 * With --completions K, every K-th of the N asks for its completion, and
 * the run fails unless each of those, and no other, is reported once with
 * status 0. With --burst B, the N go in bursts of up to B
 * (rn_notify_send_burst()), cut where asking for a completion changes.
 * --stall-ms makes the responder a slow application: it stops polling for
 * N ms at the first notification of each one-way run, so the sender meets
 * backpressure; the run must still lose nothing.
 *
 *   rnotify-bench -c FILE --peer NAME --respond --transfer
 *   rnotify-bench -c FILE --peer NAME --transfer [--min-block BYTES]
 *                 [--max-block BYTES] [--iterations N] [--csv FILE]
 *
 * With --transfer (both sides), transfers (rn_transfer.h) in the
 * nixlbench style: blocks of --min-block (4 KiB) doubling to --max-block
 * (64 MiB),
 * READ and WRITE, each without and with a notification, one batch of one
 * block at a time; 100 warm-up rounds and N (1000) measured, fewer for
 * blocks over 1 MiB (N MiB worth, at least 20). Latency is submission to
 * final status at the initiator (with a notification: to the notification
 * posted after the data); bandwidth is the block over the average. The
 * responder registers a buffer of --max-block and hands its descriptor
 * over as a notification. Content is checked after the READ and the WRITE
 * sweeps (initiate_transfer()). With --gpu[=N] (both sides), the buffers
 * are in GPU N's memory, registered by dma-buf (bench_gpu.c: libcuda.so.1
 * loaded at run time); a host that cannot says so in one line at start.
 * --gpu-check[=N] alone says whether it can.
 *
 *   rnotify-bench --clients SOCKET_A,SOCKET_B ...
 * measures from client processes of two running daemons instead
 * (bench_clients.c).
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_clients.h"
#include "bench_gpu.h"
#include "bench_time.h"
#include "rn_daemon.h"
#include "rn_notify.h"
#include "rn_transfer.h"

#define MAX_SIZES 8
#define MAX_BURST 256
#define WARM_UP 100
#define QUIT_COOKIE UINT64_MAX   /* not a bulk message's */
/* --transfer's buffers start so: the initiator's, the responder's; the
 * initiator WRITEs WRITE_BYTE. */
#define INITIATOR_BYTE 0x5a
#define RESPONDER_BYTE 0xa5
#define WRITE_BYTE 0x3c

struct bench {
	const char *peer;
	bool respond;
	unsigned int n_sizes;
	uint32_t sizes[MAX_SIZES];
	unsigned int messages;
	unsigned int round_trips;
	const char *label;
	unsigned int completions;   /* ask for every K-th one's; 0: none */
	unsigned int burst;         /* bulk notifications per send call */
	unsigned int stall_ms;
	bool transfer;
	uint64_t min_block;         /* the sweep's first block */
	uint64_t max_block;
	unsigned int iterations;
	const char *csv;
	int gpu;                    /* --gpu: its ordinal; -1: host memory */
	struct rn_bench_gpu *g;
	uint8_t *payload;
	uint8_t *reported;          /* per bulk message: its completions */
	unsigned int n_reported;
	int result;
};

static struct rn_daemon daemon_state;

/*
 * Send out[0..n) in order, retrying the rest while the peer has no credit
 * (or is connecting).
 */
static int
send_burst_all(struct rn_daemon *d, struct bench *b,
	       const struct rn_notify_out *out, unsigned int n, uint32_t flags)
{
	unsigned int done = 0;

	while (done < n) {
		int rc = rn_notify_send_burst(d->notify, b->peer, out + done,
					      n - done, flags);

		if (rc > 0) {
			done += (unsigned int)rc;
			continue;
		}
		if (rc == 0)
			return -EPROTO;   /* none sent, and no reason */
		if (rc != -EAGAIN)
			return rc;
		if (rn_daemon_stopping(d))
			return -ECANCELED;
		usleep(20);   /* see wait_for() */
	}
	return 0;
}

/* One notification, as send_burst_all() sends them. */
static int
send_all(struct rn_daemon *d, struct bench *b, const char *name,
	 const void *msg, uint32_t msg_len, uint64_t cookie, uint32_t flags)
{
	struct rn_notify_out one = { .name = name, .msg = msg,
				     .name_len = (uint32_t)strlen(name),
				     .msg_len = msg_len, .cookie = cookie };

	return send_burst_all(d, b, &one, 1, flags);
}

/*
 * Wait for a notification named name; returns its msg length, or -1.
 * *native says whether it came on the native channel (or over TCP).
 */
static int64_t
wait_for(struct rn_daemon *d, const char *name, char *msg_out, size_t cap,
	 bool *native)
{
	struct rn_notification got[RN_NOTIFY_POLL_MAX];

	while (!rn_daemon_stopping(d)) {
		unsigned int n = rn_notify_poll(d->notify, got, RN_NOTIFY_POLL_MAX);

		for (unsigned int i = 0; i < n; i++) {
			if (got[i].name_len != strlen(name) ||
			    memcmp(got[i].name, name, got[i].name_len) != 0)
				continue;
			if (msg_out != NULL) {
				size_t len = RTE_MIN((size_t)got[i].msg_len, cap - 1);

				memcpy(msg_out, got[i].msg, len);
				msg_out[len] = '\0';
			}
			*native = got[i].native;
			return got[i].msg_len;
		}
		/* Sleep, not spin: this thread shares the main lcore's CPU
		 * with the control thread, which the answer may need. */
		if (n == 0)
			usleep(20);
	}
	return -1;
}

static uint32_t
completion_flag(const struct bench *b, unsigned int i)
{
	return b->completions != 0 && i % b->completions == 0 ?
	       RN_NOTIFY_WANT_COMPLETION : 0;
}

/*
 * Take the completion reports there are, as an application does while it
 * sends: the ring holds RN_NOTIFY_RING_SIZE of them and drops the newest
 * beyond. Each must be of a bulk message that asked for it, status 0,
 * and its first.
 */
static int
take_completions(struct rn_daemon *d, struct bench *b)
{
	struct rn_notify_completion c[64];
	unsigned int n;

	while ((n = rn_notify_completions(d->notify, c, 64)) > 0) {
		for (unsigned int i = 0; i < n; i++) {
			if (c[i].status != 0 || c[i].cookie >= b->messages ||
			    completion_flag(b, (unsigned int)c[i].cookie) == 0 ||
			    b->reported[c[i].cookie]++ != 0) {
				fprintf(stderr, "rnotify-bench: completion of "
					"%llu: status %d, unexpected\n",
					(unsigned long long)c[i].cookie,
					c[i].status);
				return -EPROTO;
			}
		}
		b->n_reported += n;
	}
	return 0;
}

/* The one-way run's N "bulk" notifications of msg_len bytes each. */
static int
send_bulk(struct rn_daemon *d, struct bench *b, uint32_t msg_len)
{
	struct rn_notify_out out[MAX_BURST];
	int rc = 0;

	for (unsigned int i = 0; i < b->messages && rc == 0;) {
		uint32_t flags = completion_flag(b, i);
		unsigned int n = 0;

		while (n < b->burst && i + n < b->messages &&
		       completion_flag(b, i + n) == flags) {
			out[n] = (struct rn_notify_out){
				.name = "bulk", .name_len = 4,
				.msg = b->payload, .msg_len = msg_len,
				.cookie = i + n };
			n++;
		}
		rc = send_burst_all(d, b, out, n, flags);
		i += n;
		if (rc == 0 && b->completions != 0)
			rc = take_completions(d, b);
	}
	return rc;
}

/*
 * Every bulk message that asked for its completion gets it, once, with
 * status 0; no other does. Waits up to 60 s (valgrind is slow).
 */
static int
check_completions(struct rn_daemon *d, struct bench *b)
{
	unsigned int want = (b->messages + b->completions - 1) / b->completions;
	uint64_t deadline = rn_bench_now_ns() + 60ull * 1000000000ull;
	int rc = 0;

	while (rc == 0 && b->n_reported < want && rn_bench_now_ns() < deadline) {
		rc = take_completions(d, b);
		usleep(1000);
	}
	if (rc == 0 && b->n_reported != want) {
		fprintf(stderr, "rnotify-bench: %u of %u completions reported\n",
			b->n_reported, want);
		rc = -EPROTO;
	}
	return rc;
}

/* Sizes count name + msg; the name here is 4 bytes. */
static int
measure(struct rn_daemon *d, struct bench *b, uint32_t size)
{
	uint32_t msg_len = size > 4 ? size - 4 : 0;
	uint64_t *rtt = calloc(b->round_trips, sizeof(*rtt));
	char reply[64] = "";
	uint64_t t0, elapsed;
	unsigned int native_pongs = 0;
	bool native = false;
	int rc = 0;

	b->reported = calloc(b->messages, 1);
	b->n_reported = 0;
	if (rtt == NULL || b->reported == NULL) {
		free(rtt);
		free(b->reported);
		b->reported = NULL;
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < WARM_UP + b->round_trips && rc == 0; i++) {
		t0 = rn_bench_now_ns();
		rc = send_all(d, b, "ping", b->payload, msg_len, 0, 0);
		if (rc == 0 && wait_for(d, "pong", NULL, 0, &native) != msg_len)
			rc = -EPROTO;   /* the echo must come back whole */
		native_pongs += native;
		if (i >= WARM_UP)
			rtt[i - WARM_UP] = rn_bench_now_ns() - t0;
	}
	t0 = rn_bench_now_ns();
	if (rc == 0)
		rc = send_bulk(d, b, msg_len);
	if (rc == 0)
		rc = send_all(d, b, "done", "", 0, 0, 0);
	if (rc == 0 && wait_for(d, "seen", reply, sizeof(reply), &native) < 0)
		rc = -ECANCELED;
	elapsed = rn_bench_now_ns() - t0;
	if (rc == 0 && b->completions != 0)
		rc = check_completions(d, b);
	if (rc == 0) {
		qsort(rtt, b->round_trips, sizeof(*rtt), rn_bench_compare_u64);
		/* Which channel the echoes took: says what was measured. */
		printf("| %s | %u | %.0f | %.1f | %.1f | %s | %s |\n", b->label,
		       size, b->messages / (elapsed / 1e9),
		       rtt[b->round_trips / 2] / 1e3,
		       rtt[b->round_trips * 99 / 100] / 1e3, reply,
		       native_pongs == WARM_UP + b->round_trips ? "native" :
		       native_pongs == 0 ? "tcp" : "mixed");
		fflush(stdout);
		if (strtoul(reply, NULL, 10) != b->messages)
			rc = -EPROTO;   /* lost or corrupted: shown, then failed */
	}
	free(rtt);
	free(b->reported);
	b->reported = NULL;
	return rc;
}

/*
 * The peer may still be starting (under valgrind, for many seconds), and a
 * handshake that stalls is retried after [control] connect_timeout_ms:
 * retry a first notification for 60 s.
 */
static int
reach_peer(struct rn_daemon *d, struct bench *b)
{
	uint64_t deadline = rn_bench_now_ns() + 60ull * 1000000000ull;
	int rc;

	do {
		rc = send_all(d, b, "hi", "", 0, 0, 0);
		if (rc != -ENOTCONN)
			return rc;
		usleep(10000);
	} while (rn_bench_now_ns() < deadline);
	return rc;
}

/*
 * The responder's "quit", acknowledged by its NIC (or queued on the
 * control connection) before this process closes the endpoint: a SEND
 * still in flight at the close would be flushed, and the responder left
 * waiting for it.
 */
static int
send_quit(struct rn_daemon *d, struct bench *b)
{
	uint64_t deadline = rn_bench_now_ns() + 60ull * 1000000000ull;
	struct rn_notify_completion c;
	int rc = send_all(d, b, "quit", "", 0, QUIT_COOKIE,
			  RN_NOTIFY_WANT_COMPLETION);

	while (rc == 0 && rn_bench_now_ns() < deadline) {
		if (rn_notify_completions(d->notify, &c, 1) == 1 &&
		    c.cookie == QUIT_COOKIE)
			return c.status;
		usleep(1000);
	}
	return rc != 0 ? rc : -ETIMEDOUT;
}

static void
initiate(struct rn_daemon *d, struct bench *b)
{
	int rc = reach_peer(d, b);

	printf("| mode | bytes | msgs/s | RTT p50 (us) | RTT p99 (us) | received "
	       "| via |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
	for (unsigned int i = 0; i < b->n_sizes && rc == 0; i++)
		rc = measure(d, b, b->sizes[i]);
	if (rc == 0)
		rc = send_quit(d, b);
	if (rc != 0)
		fprintf(stderr, "rnotify-bench: %s\n", strerror(-rc));
	b->result = rc == 0 ? 0 : 1;
}

/*
 * The responder's answer to what the initiator sent. The initiator's
 * notification can arrive before this side's endpoint is usable (the
 * handshake ends here a few milliseconds after it ends there), and then
 * the answer is -ENOTCONN for that moment: retried, as reach_peer()
 * retries, where a lost answer left the initiator waiting for ever. Any
 * other error ends the responder.
 */
static int
reply(struct rn_daemon *d, struct bench *b, const char *name,
      const void *msg, uint32_t msg_len)
{
	uint64_t deadline = rn_bench_now_ns() + 60ull * 1000000000ull;
	int rc;

	while ((rc = send_all(d, b, name, msg, msg_len, 0, 0)) == -ENOTCONN &&
	       rn_bench_now_ns() < deadline && !rn_daemon_stopping(d))
		usleep(1000);
	if (rc != 0)
		fprintf(stderr, "rnotify-bench: answer \"%s\": %s\n", name,
			strerror(-rc));
	return rc;
}

static void
respond(struct rn_daemon *d, struct bench *b)
{
	struct rn_notification got[RN_NOTIFY_POLL_MAX];
	unsigned long bulk = 0;
	char count[32];
	bool quit = false;
	int rc = 0;

	while (!quit && !rn_daemon_stopping(d)) {
		unsigned int n = rn_notify_poll(d->notify, got, RN_NOTIFY_POLL_MAX);

		for (unsigned int i = 0; i < n && !quit; i++) {
			const char *name = (const char *)got[i].name;

			if (got[i].name_len == 4 && memcmp(name, "ping", 4) == 0) {
				rc = reply(d, b, "pong", got[i].msg,
					   got[i].msg_len);
			} else if (got[i].name_len == 4 &&
				   memcmp(name, "bulk", 4) == 0) {
				if (bulk == 0 && b->stall_ms != 0)
					usleep(b->stall_ms * 1000u);
				/* Only intact payloads count as received. */
				if (got[i].msg_len <= RN_NOTIFY_MAX_PAYLOAD &&
				    memcmp(got[i].msg, b->payload,
					   got[i].msg_len) == 0)
					bulk++;
			} else if (got[i].name_len == 4 &&
				   memcmp(name, "done", 4) == 0) {
				snprintf(count, sizeof(count), "%lu", bulk);
				rc = reply(d, b, "seen", count,
					   (uint32_t)strlen(count));
				bulk = 0;
			} else if (got[i].name_len == 4 &&
				   memcmp(name, "quit", 4) == 0) {
				quit = true;
			}
			quit |= rc != 0;
		}
		if (n == 0)
			usleep(20);   /* see wait_for() */
	}
	b->result = rc == 0 ? 0 : 1;
}

/* A transfer buffer: host memory, or GPU memory and its dma-buf. */
struct xbuf {
	uint8_t *p;              /* host memory, or the GPU's address */
	int fd;                  /* the dma-buf; -1: host memory */
	struct rn_transfer_region *region;
};

static int
buffer_fill(struct bench *b, struct xbuf *x, uint8_t byte)
{
	if (b->g != NULL)
		return rn_bench_gpu_fill(b->g, (uintptr_t)x->p, byte,
					 b->max_block);
	memset(x->p, byte, b->max_block);
	return 0;
}

/* Whether every byte of x is byte (GPU memory: copied to the host
 * first). 0, or -EILSEQ with the first that is not on stderr. */
static int
buffer_check(struct bench *b, struct xbuf *x, uint8_t byte, const char *what)
{
	uint8_t *host = x->p;
	int rc = 0;

	if (b->g != NULL) {
		host = malloc(b->max_block);
		if (host == NULL)
			return -ENOMEM;
		rc = rn_bench_gpu_read(b->g, host, (uintptr_t)x->p,
				       b->max_block);
	}
	for (uint64_t i = 0; rc == 0 && i < b->max_block; i++)
		if (host[i] != byte) {
			fprintf(stderr, "rnotify-bench: %s: byte %lu is 0x%02x, "
				"not 0x%02x\n", what, (unsigned long)i, host[i],
				byte);
			rc = -EILSEQ;
		}
	if (host != x->p)
		free(host);
	return rc;
}

/* A buffer of max_block bytes, each byte, registered with every worker. */
static int
transfer_buffer(struct rn_daemon *d, struct bench *b, uint8_t byte,
		struct xbuf *x)
{
	const uint32_t access = RN_TRANSFER_LOCAL_WRITE |
				RN_TRANSFER_REMOTE_WRITE |
				RN_TRANSFER_REMOTE_READ;
	char err[256];
	uint64_t addr;
	int rc;

	*x = (struct xbuf){ .fd = -1 };
	if (b->g == NULL) {
		x->p = aligned_alloc(4096, b->max_block);
		if (x->p == NULL)
			return -ENOMEM;
	} else if (rn_bench_gpu_alloc(b->g, b->max_block, &addr, &x->fd, err,
				      sizeof(err)) != 0) {
		fprintf(stderr, "rnotify-bench: %s\n", err);
		return -ENOMEM;
	} else {
		x->p = (uint8_t *)(uintptr_t)addr;
	}
	rc = buffer_fill(b, x, byte);
	if (rc == 0 && b->g == NULL)
		rc = rn_transfer_reg(d->transfer, x->p, b->max_block, access,
				     &x->region);
	else if (rc == 0)
		rc = rn_transfer_reg_dmabuf(d->transfer, x->fd, 0,
					    b->max_block, x->p, access,
					    &x->region);
	if (rc != 0)
		x->region = NULL;
	return rc;
}

static void
buffer_free(struct rn_daemon *d, struct bench *b, struct xbuf *x)
{
	if (x->region != NULL)
		rn_transfer_dereg(d->transfer, x->region);
	if (b->g != NULL)
		rn_bench_gpu_free(b->g, (uintptr_t)x->p, x->fd);
	else
		free(x->p);
	*x = (struct xbuf){ .fd = -1 };
}

/* The responder of --transfer: its descriptor on request, the transfers'
 * notifications taken (and so their slots given back), until "quit". */
static void
respond_transfer(struct rn_daemon *d, struct bench *b)
{
	struct rn_notification got[RN_NOTIFY_POLL_MAX];
	uint8_t desc[RN_TRANSFER_DESC_SIZE];
	struct xbuf x;
	bool quit = false;
	int rc = transfer_buffer(d, b, RESPONDER_BYTE, &x);

	if (rc == 0)
		rc = rn_transfer_export(d->transfer, x.region, desc,
					sizeof(desc)) < 0 ? -ENOSPC : 0;
	if (rc != 0) {
		fprintf(stderr, "rnotify-bench: transfer buffer: %s\n",
			strerror(-rc));
		b->result = 1;
		buffer_free(d, b, &x);
		return;
	}
	while (!quit && !rn_daemon_stopping(d)) {
		unsigned int n = rn_notify_poll(d->notify, got,
						RN_NOTIFY_POLL_MAX);

		for (unsigned int i = 0; i < n; i++) {
			if (got[i].name_len == 5 &&
			    memcmp(got[i].name, "desc?", 5) == 0)
				quit |= (rc = reply(d, b, "desc", desc,
						    sizeof(desc))) != 0;
			else if (got[i].name_len == 4 &&
				 memcmp(got[i].name, "quit", 4) == 0)
				quit = true;
		}
		if (n == 0)
			usleep(20);   /* see wait_for() */
	}
	buffer_free(d, b, &x);
	b->result = rc == 0 ? 0 : 1;
}

/* One batch of one block, submitted and polled to its final status. */
static int
one_transfer(struct rn_daemon *d, enum rn_transfer_kind kind,
	     const struct rn_transfer_entry *e, bool notify, uint64_t *ns)
{
	struct rn_transfer_batch *batch;
	uint64_t t0 = rn_bench_now_ns();
	int rc;

	do {
		rc = rn_transfer_submit(d->transfer, kind, e, 1, "xfer",
					notify ? 4 : 0, "", 0, &batch);
	} while (rc == -EAGAIN && !rn_daemon_stopping(d));
	if (rc != 0)
		return rc;
	while ((rc = rn_transfer_status(batch, NULL, NULL)) == -EINPROGRESS)
		sched_yield();   /* the control thread may share this CPU */
	*ns = rn_bench_now_ns() - t0;
	rn_transfer_release(d->transfer, batch);
	return rc;
}

static int
measure_transfer(struct rn_daemon *d, struct bench *b, FILE *csv,
		 enum rn_transfer_kind kind, bool notify,
		 struct rn_transfer_entry *e)
{
	uint64_t mib = 1u << 20;
	unsigned int n = e->length <= mib ? b->iterations :
			 (unsigned int)RTE_MAX(20ull, b->iterations * mib /
						      e->length);
	unsigned int warm = n < (unsigned int)WARM_UP ? n : (unsigned int)WARM_UP;
	uint64_t *lat = calloc(n, sizeof(*lat));
	uint64_t sum = 0;
	double avg;
	int rc = 0;

	if (lat == NULL)
		return -ENOMEM;
	for (unsigned int i = 0; i < warm + n && rc == 0; i++) {
		uint64_t ns = 0;

		rc = one_transfer(d, kind, e, notify, &ns);
		if (i >= warm)
			lat[i - warm] = ns;
	}
	if (rc == 0) {
		const char *op = kind == RN_TRANSFER_READ ? "READ" : "WRITE";

		for (unsigned int i = 0; i < n; i++)
			sum += lat[i];
		qsort(lat, n, sizeof(*lat), rn_bench_compare_u64);
		avg = (double)sum / n;
		printf("| %s | %lu | %s | %u | %.1f | %.1f | %.1f | %.6f |\n",
		       op, (unsigned long)e->length, notify ? "yes" : "no", n,
		       avg / 1e3, lat[n / 2] / 1e3, lat[n * 99 / 100] / 1e3,
		       e->length / avg);
		fflush(stdout);
		if (csv != NULL)
			fprintf(csv, "%s,%lu,%d,%u,%.3f,%.3f,%.3f,%.6f\n", op,
				(unsigned long)e->length, notify, n, avg / 1e3,
				lat[n / 2] / 1e3, lat[n * 99 / 100] / 1e3,
				e->length / avg);
	}
	free(lat);
	return rc;
}

/* One kind's rows: blocks of min_block doubling to max_block, each
 * without and with a notification. */
static int
sweep(struct rn_daemon *d, struct bench *b, FILE *csv,
      enum rn_transfer_kind kind, struct rn_transfer_entry e)
{
	int rc = 0;

	for (uint64_t size = b->min_block; size <= b->max_block && rc == 0;
	     size *= 2)
		for (int notify = 0; notify < 2 && rc == 0; notify++) {
			e.length = size;
			rc = measure_transfer(d, b, csv, kind, notify, &e);
		}
	return rc;
}

/*
 * The initiator of --transfer: the peer's descriptor, then the table.
 * Content is checked around the sweeps, over the whole buffer: after the
 * READs (the last one of all of it) it holds the responder's bytes; then
 * it WRITEs WRITE_BYTE, is cleared, and READs it back.
 */
static void
initiate_transfer(struct rn_daemon *d, struct bench *b)
{
	struct rn_transfer_remote *rem = NULL;
	char desc[RN_TRANSFER_DESC_SIZE + 1];
	struct rn_transfer_entry e = { 0 };
	struct xbuf x = { .fd = -1 };
	FILE *csv = NULL;
	uint64_t ns;
	bool native;
	int rc = reach_peer(d, b);

	if (rc == 0)
		rc = transfer_buffer(d, b, INITIATOR_BYTE, &x);
	if (rc == 0)
		rc = send_all(d, b, "desc?", "", 0, 0, 0);
	if (rc == 0 && wait_for(d, "desc", desc, sizeof(desc), &native) !=
		       RN_TRANSFER_DESC_SIZE)
		rc = -EPROTO;
	if (rc == 0)
		rc = rn_transfer_import(d->transfer, desc, RN_TRANSFER_DESC_SIZE,
					&rem);
	if (rc == 0 && b->csv != NULL) {
		csv = fopen(b->csv, "w");
		if (csv == NULL)
			rc = -errno;
		else
			fprintf(csv, "op,block,notify,iterations,avg_us,p50_us,"
				"p99_us,gb_s\n");
	}
	/* Above the table: the rows that callers append stay its own. */
	if (b->g != NULL)
		printf("Buffers in GPU memory (%s), registered by dma-buf.\n",
		       rn_bench_gpu_name(b->g));
	printf("Content is checked after the sweeps, all %lu bytes: after "
	       "the READs, and after the WRITEs (read back)%s; the run fails "
	       "otherwise.\n\n", (unsigned long)b->max_block,
	       b->g != NULL ? ", GPU memory copied to the host "
			      "(cuMemcpyDtoH)" : "");
	printf("| op | block (bytes) | notify | iterations | avg (us) | "
	       "p50 (us) | p99 (us) | GB/s |\n| --- | ---: | --- | ---: | "
	       "---: | ---: | ---: | ---: |\n");
	/* The peer's buffer: its own address. */
	e = (struct rn_transfer_entry){ .local = x.p, .rem = rem };
	memcpy(&e.remote, desc + 48, 8);
	if (rc == 0)
		rc = sweep(d, b, csv, RN_TRANSFER_READ, e);
	if (rc == 0)
		rc = buffer_check(b, &x, RESPONDER_BYTE, "READ");
	if (rc == 0)
		rc = buffer_fill(b, &x, WRITE_BYTE);
	if (rc == 0)
		rc = sweep(d, b, csv, RN_TRANSFER_WRITE, e);
	if (rc == 0)
		rc = buffer_fill(b, &x, 0);
	e.length = b->max_block;
	if (rc == 0)
		rc = one_transfer(d, RN_TRANSFER_READ, &e, false, &ns);
	if (rc == 0)
		rc = buffer_check(b, &x, WRITE_BYTE, "WRITE, read back");
	if (csv != NULL)
		fclose(csv);
	if (rc == 0)
		rc = send_quit(d, b);
	if (rc != 0)
		fprintf(stderr, "rnotify-bench: transfer: %s\n", strerror(-rc));
	if (rem != NULL)
		rn_transfer_forget(d->transfer, rem);
	buffer_free(d, b, &x);
	b->result = rc == 0 ? 0 : 1;
}

static void
run(struct rn_daemon *d, void *arg)
{
	struct bench *b = arg;

	if (b->transfer && b->respond)
		respond_transfer(d, b);
	else if (b->transfer)
		initiate_transfer(d, b);
	else if (b->respond)
		respond(d, b);
	else
		initiate(d, b);
	/* Let the last notification leave before the daemon closes. */
	usleep(100000);
	kill(getpid(), SIGTERM);
}

static int
parse_sizes(const char *text, struct bench *b)
{
	char *copy = strdup(text), *save = NULL;

	if (copy == NULL)
		return -ENOMEM;
	b->n_sizes = 0;
	for (char *s = strtok_r(copy, ",", &save); s != NULL;
	     s = strtok_r(NULL, ",", &save)) {
		long v = strtol(s, NULL, 10);

		if (b->n_sizes == MAX_SIZES || v < 8 || v > RN_NOTIFY_MAX_PAYLOAD) {
			free(copy);
			return -EINVAL;
		}
		b->sizes[b->n_sizes++] = (uint32_t)v;
	}
	free(copy);
	return b->n_sizes > 0 ? 0 : -EINVAL;
}

/* --gpu-check[=N]: whether --gpu=N would find its GPU; one line. */
static int
gpu_check(int ordinal)
{
	struct rn_bench_gpu *g;
	char err[256];

	if (rn_bench_gpu_open(ordinal, &g, err, sizeof(err)) != 0) {
		fprintf(stderr, "rnotify-bench: %s\n", err);
		return 1;
	}
	printf("rnotify-bench: %s, dma-buf export supported\n",
	       rn_bench_gpu_name(g));
	rn_bench_gpu_close(g);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "peer", required_argument, NULL, 'p' },
		{ "respond", no_argument, NULL, 'r' },
		{ "sizes", required_argument, NULL, 's' },
		{ "messages", required_argument, NULL, 'm' },
		{ "round-trips", required_argument, NULL, 't' },
		{ "label", required_argument, NULL, 'l' },
		{ "completions", required_argument, NULL, 'k' },
		{ "stall-ms", required_argument, NULL, 'w' },
		{ "burst", required_argument, NULL, 'b' },
		{ "transfer", no_argument, NULL, 'x' },
		{ "min-block", required_argument, NULL, 'N' },
		{ "max-block", required_argument, NULL, 'M' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "csv", required_argument, NULL, 'C' },
		{ "gpu", optional_argument, NULL, 'G' },
		{ NULL, 0, NULL, 0 },
	};
	static struct bench b = { .messages = 20000, .round_trips = 2000,
				  .burst = 1, .min_block = 4096,
				  .max_block = 64u << 20,
				  .iterations = 1000, .gpu = -1,
				  .label = "native", .n_sizes = 4,
				  .sizes = { 16, 256, 4096, 65528 } };
	struct rn_config_error err;
	const char *path = NULL;
	int opt, rc;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--clients") == 0 ||
		    strncmp(argv[i], "--clients=", 10) == 0)
			return rn_bench_clients(argc, argv);
		else if (strcmp(argv[i], "--gpu-check") == 0 ||
			 strncmp(argv[i], "--gpu-check=", 12) == 0)
			return gpu_check(argv[i][11] == '=' ?
					 atoi(argv[i] + 12) : 0);
	while ((opt = getopt_long(argc, argv, "c:", options, NULL)) != -1) {
		switch (opt) {
		case 'c': path = optarg; break;
		case 'p': b.peer = optarg; break;
		case 'r': b.respond = true; break;
		case 'm': b.messages = (unsigned int)atoi(optarg); break;
		case 't': b.round_trips = (unsigned int)atoi(optarg); break;
		case 'l': b.label = optarg; break;
		case 'k': b.completions = (unsigned int)atoi(optarg); break;
		case 'w': b.stall_ms = (unsigned int)atoi(optarg); break;
		case 'b': b.burst = (unsigned int)atoi(optarg); break;
		case 'x': b.transfer = true; break;
		case 'N': b.min_block = strtoull(optarg, NULL, 0); break;
		case 'M': b.max_block = strtoull(optarg, NULL, 0); break;
		case 'i': b.iterations = (unsigned int)atoi(optarg); break;
		case 'C': b.csv = optarg; break;
		case 'G': b.gpu = optarg != NULL ? atoi(optarg) : 0; break;
		case 's':
			if (parse_sizes(optarg, &b) != 0) {
				fprintf(stderr, "rnotify-bench: --sizes %s: allowed "
					"a comma list of 8..%u\n", optarg,
					RN_NOTIFY_MAX_PAYLOAD);
				return 2;
			}
			break;
		default:
			return 2;
		}
	}
	if (path == NULL || b.peer == NULL || b.messages == 0 ||
	    b.round_trips == 0 || b.burst == 0 || b.burst > MAX_BURST ||
	    b.min_block < 4096 || b.min_block > b.max_block ||
	    b.iterations == 0 ||
	    (b.gpu >= 0 && !b.transfer)) {
		fprintf(stderr, "usage: rnotify-bench -c FILE --peer NAME "
			"[--respond [--stall-ms N]] [--sizes LIST] "
			"[--messages N] [--round-trips N] [--label TEXT] "
			"[--completions K] [--burst 1..%u] | --transfer "
			"[--min-block BYTES] [--max-block BYTES] "
			"[--iterations N] [--csv FILE] "
			"[--gpu[=N]]\n       rnotify-bench --gpu-check[=N]\n",
			MAX_BURST);
		return 2;
	}
	if (rn_config_load(path, &daemon_state.cfg, &err) != 0) {
		fprintf(stderr, "rnotify-bench: %s\n", err.text);
		return 2;
	}
	if (b.gpu >= 0) {
		char err[256];

		/* Before the daemon starts: a host without a GPU says so in
		 * one line, at once. */
		if (rn_bench_gpu_open(b.gpu, &b.g, err, sizeof(err)) != 0) {
			fprintf(stderr, "rnotify-bench: %s\n", err);
			return 1;
		}
	}
	b.payload = malloc(RN_NOTIFY_MAX_PAYLOAD);
	if (b.payload == NULL)
		return 1;
	/* Binary, zeros included: nothing may treat it as a string. */
	for (uint32_t i = 0; i < RN_NOTIFY_MAX_PAYLOAD; i++)
		b.payload[i] = (uint8_t)(i * 31u);
	snprintf(daemon_state.config_path, sizeof(daemon_state.config_path),
		 "%s", path);
	daemon_state.app = run;
	daemon_state.app_arg = &b;
	b.result = 1;
	rc = rn_daemon_run(&daemon_state, argv[0]);
	free(b.payload);
	rn_bench_gpu_close(b.g);
	return rc != 0 ? rc : b.result;
}
