/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two processes, each with its own sim device, exchange SEND/RECV, WRITE and
 * READ over the software wire, with every byte checked: sizes from 0 bytes
 * to 1 MiB gathers of 16 segments. Once over loopback, once between two
 * network namespaces joined by veth (root only; otherwise skipped).
 *
 * Then strangers on the wire's listener, as any local process can be: a
 * huge frame, garbage first bytes, a HELLO without the endpoint's token,
 * no HELLO in time, and more idle
 * connections than the device keeps, while a real peer must still get
 * through. Their random choices print their seed (RNOTIFY_TEST_SEED).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nic_harness.h"

#define MIB (1u << 20)
#define BUF_SIZE (8 * MIB)
#define WAIT_MS 10000

static const uint32_t sizes[] = { 0, 1, 63, 64, 4096, 65536, MIB };
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

static void
pattern(uint8_t *buf, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
}

static bool
pattern_ok(const uint8_t *buf, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (buf[i] != (uint8_t)((i * 2654435761u + seed) >> 13))
			return false;
	return true;
}

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "# %s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
		exit(1); \
	} \
} while (0)

struct side {
	struct end e;
	struct end *ends[2];
	uint8_t *buf;
	struct rn_mr mr;
	struct end_info peer;
};

static struct rn_wc
wait_one(struct side *s)
{
	struct rn_wc wc;

	CHECK(rn_harness_wait(s->ends, &s->e, &wc, 1, WAIT_MS) == 1);
	if (wc.status != 0)
		fprintf(stderr, "# completion status 0x%x opcode %u\n",
			wc.status, wc.opcode);
	CHECK(wc.status == 0);
	return wc;
}

/* Split [addr, addr+len) into up to 16 segments: a gather list. */
static uint32_t
gather_list(struct side *s, uint64_t off, uint32_t len, struct rn_sge *sge)
{
	uint32_t n = len >= 16 * 1024 ? 16 : (len > 0 ? 1 : 0);

	for (uint32_t i = 0; i < n; i++) {
		uint32_t part = len / n + (i == n - 1 ? len % n : 0);

		sge[i] = (struct rn_sge){ (uintptr_t)s->buf + off, part,
					  s->mr.lkey };
		off += part;
	}
	return n;
}

static void
post_send(struct side *s, uint8_t opcode, uint64_t off, uint32_t len,
	  uint64_t raddr, uint32_t imm)
{
	struct rn_sge sge[16];
	struct rn_wr wr = { .opcode = opcode, .flags = RN_WR_SIGNALED,
			    .sg_list = sge, .raddr = raddr,
			    .rkey = s->peer.rkey, .imm = htobe32(imm) };

	wr.num_sge = gather_list(s, off, len, sge);
	CHECK(rn_harness_post(&s->e, &wr) == 0);
}

/* Requester side: SENDs, WRITEs, READs of every size. */
static void
run_requester(struct side *s)
{
	for (uint32_t i = 0; i < N_SIZES; i++) {
		pattern(s->buf, sizes[i], i);
		post_send(s, RN_WR_SEND, 0, sizes[i], 0, 0);
		CHECK(wait_one(s).opcode == RN_WC_SEND);
	}
	for (uint32_t i = 0; i < N_SIZES; i++) {
		pattern(s->buf, sizes[i], 100 + i);
		post_send(s, RN_WR_WRITE, 0, sizes[i], s->peer.buf_addr + i * MIB, 0);
		CHECK(wait_one(s).opcode == RN_WC_WRITE);
		/* RC order: the peer sees the data before this SEND_IMM. */
		post_send(s, RN_WR_SEND_IMM, 0, 0, 0, i);
		CHECK(wait_one(s).opcode == RN_WC_SEND);
	}
	for (uint32_t i = 0; i < N_SIZES; i++) {
		struct rn_wc wc;

		memset(s->buf, 0, sizes[i] + 1);
		post_send(s, RN_WR_READ, 0, sizes[i], s->peer.buf_addr + i * MIB, 0);
		wc = wait_one(s);
		CHECK(wc.opcode == RN_WC_READ && wc.byte_len == sizes[i]);
		CHECK(pattern_ok(s->buf, sizes[i], 200 + i));
		CHECK(s->buf[sizes[i]] == 0);   /* nothing past the end */
	}
	post_send(s, RN_WR_SEND_IMM, 0, 0, 0, 0xb7e);   /* done */
	CHECK(wait_one(s).opcode == RN_WC_SEND);
}

/* Responder side: checks every SEND and WRITE; serves the READs. */
static void
run_responder(struct side *s)
{
	struct rn_wc wc;

	for (uint32_t i = 0; i < N_SIZES; i++)
		pattern(s->buf + i * MIB, sizes[i], 200 + i);  /* for READs */
	for (uint32_t i = 0; i < N_SIZES; i++) {
		CHECK(rn_harness_post_recv(&s->e, s->buf + 7 * MIB, MIB, s->mr.lkey, i) == 0);
		wc = wait_one(s);
		CHECK(wc.opcode == RN_WC_RECV && wc.wr_id == i);
		CHECK(wc.byte_len == sizes[i]);
		CHECK(pattern_ok(s->buf + 7 * MIB, sizes[i], i));
	}
	for (uint32_t i = 0; i < N_SIZES; i++) {
		uint8_t saved[MIB / 64];

		/* The READ test reads this area later: keep its pattern. */
		memcpy(saved, s->buf + i * MIB, sizeof(saved) < sizes[i] ?
		       sizeof(saved) : sizes[i]);
		CHECK(rn_harness_post_recv(&s->e, NULL, 0, s->mr.lkey, 50 + i) == 0);
		wc = wait_one(s);
		CHECK(wc.opcode == RN_WC_RECV_IMM && be32toh(wc.imm) == i);
		CHECK(pattern_ok(s->buf + i * MIB, sizes[i], 100 + i));
		pattern(s->buf + i * MIB, sizes[i], 200 + i);
	}
	CHECK(rn_harness_post_recv(&s->e, NULL, 0, s->mr.lkey, 99) == 0);
	wc = wait_one(s);   /* READs were served while waiting for this */
	CHECK(wc.opcode == RN_WC_RECV_IMM && be32toh(wc.imm) == 0xb7e);
	/* Let the last ACK leave before the process exits. */
	for (int i = 0; i < 1000; i++)
		rn_harness_progress(s->ends);
}

static int
enter_netns(const char *ns)
{
	char path[128];
	int fd, rc;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	return rc;
}

static void
side_main(int sock, bool requester, const char *ns, const char *ip)
{
	struct side s = { .ends = { &s.e, NULL } };
	struct end_info mine;
	struct rn_qp_connect conn;

	if (ns != NULL)
		CHECK(enter_netns(ns) == 0);
	CHECK(rn_harness_open(&s.e, ip, 256, NULL) == 0);
	s.buf = calloc(1, BUF_SIZE + 1);
	CHECK(s.buf != NULL);
	CHECK(rn_nic_mr_reg(s.e.nic, s.buf, BUF_SIZE,
			    RN_ACCESS_LOCAL_WRITE | RN_ACCESS_REMOTE_WRITE |
			    RN_ACCESS_REMOTE_READ, &s.mr) == 0);
	mine = (struct end_info){ .addr = s.e.addr, .qpn = s.e.qp.qpn,
				  .buf_addr = (uintptr_t)s.buf, .rkey = s.mr.rkey };
	CHECK(write(sock, &mine, sizeof(mine)) == sizeof(mine));
	CHECK(read(sock, &s.peer, sizeof(s.peer)) == sizeof(s.peer));
	conn = rn_harness_connect_params(&s.peer);
	CHECK(rn_harness_connect(&s.e, &conn) == 0);
	/* Both sides connected before the first SEND: no RNR on start. */
	CHECK(write(sock, "r", 1) == 1);
	CHECK(read(sock, &mine, 1) == 1);
	if (requester)
		run_requester(&s);
	else
		run_responder(&s);
	rn_harness_close(&s.e);
	free(s.buf);
	exit(0);
}

static void
run_pair(const char *ns_a, const char *ip_a, const char *ns_b,
	 const char *ip_b)
{
	int sv[2];
	pid_t a, b;
	int status_a, status_b;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	a = fork();
	if (a == 0) {
		close(sv[1]);
		side_main(sv[0], true, ns_a, ip_a);
	}
	b = fork();
	if (b == 0) {
		close(sv[0]);
		side_main(sv[1], false, ns_b, ip_b);
	}
	close(sv[0]);
	close(sv[1]);
	assert_int_equal(waitpid(a, &status_a, 0), a);
	assert_int_equal(waitpid(b, &status_b, 0), b);
	assert_true(WIFEXITED(status_a) && WEXITSTATUS(status_a) == 0);
	assert_true(WIFEXITED(status_b) && WEXITSTATUS(status_b) == 0);
}

static void
test_two_processes_loopback(void **state)
{
	(void)state;
	run_pair(NULL, "127.0.0.1", NULL, "127.0.0.1");
}

static char ns_a[32], ns_b[32];

static int
sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void
test_two_network_namespaces(void **state)
{
	(void)state;
	if (geteuid() != 0 || sh("command -v ip >/dev/null") != 0) {
		print_message("# skipped: network namespaces need root and iproute2\n");
		skip();
	}
	snprintf(ns_a, sizeof(ns_a), "rn-nic-a-%d", getpid());
	snprintf(ns_b, sizeof(ns_b), "rn-nic-b-%d", getpid());
	assert_int_equal(sh("ip netns add %s && ip netns add %s && "
			    "ip link add rnva%d type veth peer name rnvb%d && "
			    "ip link set rnva%d netns %s && ip link set rnvb%d netns %s && "
			    "ip -n %s addr add 10.99.0.1/24 dev rnva%d && "
			    "ip -n %s addr add 10.99.0.2/24 dev rnvb%d && "
			    "ip -n %s link set rnva%d up && ip -n %s link set rnvb%d up && "
			    "ip -n %s link set lo up && ip -n %s link set lo up",
			    ns_a, ns_b, getpid(), getpid(), getpid(), ns_a,
			    getpid(), ns_b, ns_a, getpid(), ns_b, getpid(), ns_a,
			    getpid(), ns_b, getpid(), ns_a, ns_b), 0);
	run_pair(ns_a, "10.99.0.1", ns_b, "10.99.0.2");
}

static int
remove_namespaces(void **state)
{
	(void)state;
	if (ns_a[0] != '\0')
		sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null",
		   ns_a, ns_b);
	return 0;
}

/* Strangers ------------------------------------------------------------- */

/* The frame layout as a stranger writes it (sim_frame_pvt.h): a 40-byte
 * header whose first 4 bytes are the payload length and the fifth the type;
 * a HELLO (type 1) carries 8 bytes, the caller's IPv4 address and port.
 * The tests below that send a valid HELLO also check it is not refused, so
 * the layout here cannot drift from the device's unseen. */
#define HDR_SIZE 40
#define HELLO_TYPE 1
#define REQUEST_TYPE 2
#define HELLO_SIZE (HDR_SIZE + 24)   /* ip, port, pad, token */
#define TOKEN_SIZE 16
#define STRANGER_WAIT_MS 3000

static uint32_t run_seed;

static uint32_t
rng_next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* The test's own generator, from the run's seed and its name. */
static uint32_t
rng_for(const char *test)
{
	uint32_t x = run_seed ^ 0x9e3779b9u;

	for (const char *c = test; *c != '\0'; c++)
		x = x * 31 + (uint8_t)*c;
	print_message("# %s: random choices: RNOTIFY_TEST_SEED=%u replays them\n",
		      test, run_seed);
	return x != 0 ? x : 1;
}

static void
put_hdr(uint8_t *p, uint32_t length, uint8_t type)
{
	memset(p, 0, HDR_SIZE);
	memcpy(p, &length, 4);
	p[4] = type;
}

/* A HELLO from the device at 127.0.0.1 port, with token (NULL: the
 * harness's, all zeros). */
static void
put_hello_token(uint8_t *p, uint16_t port, const uint8_t *token)
{
	uint32_t ip = htonl(INADDR_LOOPBACK);

	put_hdr(p, HELLO_SIZE - HDR_SIZE, HELLO_TYPE);
	memcpy(p + HDR_SIZE, &ip, 4);
	memcpy(p + HDR_SIZE + 4, &port, 2);
	memset(p + HDR_SIZE + 6, 0, 2 + TOKEN_SIZE);
	if (token != NULL)
		memcpy(p + HDR_SIZE + 8, token, TOKEN_SIZE);
}

static void
put_hello(uint8_t *p, uint16_t port)
{
	put_hello_token(p, port, NULL);
}

/* A TCP connection to the device listening on port; blocking, bounded. */
static int
stranger_connect(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 2 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0);
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

static void
send_all(int fd, const void *buf, size_t len)
{
	CHECK(send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len);
}

/* Has the device closed fd's connection? */
static bool
closed_by_device(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Progress ends until the device closes fd or timeout_ms pass. */
static bool
wait_closed(struct end **ends, int fd, int timeout_ms)
{
	uint64_t deadline = rn_harness_now_ms() + (uint64_t)timeout_ms;

	while (rn_harness_now_ms() < deadline) {
		rn_harness_progress(ends);
		if (closed_by_device(fd))
			return true;
	}
	return false;
}

/* Two ends in this process, a real pair over the wire, with a buffer. */
struct local_pair {
	struct end a, b;
	struct end *ends[3];
	uint8_t buf[8192];
	struct rn_mr amr, bmr;
};

static void
local_pair_open(struct local_pair *p)
{
	memset(p, 0, sizeof(*p));
	assert_int_equal(rn_harness_open(&p->a, NULL, 256, NULL), 0);
	assert_int_equal(rn_harness_open(&p->b, NULL, 256, NULL), 0);
	assert_int_equal(rn_nic_mr_reg(p->a.nic, p->buf, 4096,
				       RN_ACCESS_LOCAL_WRITE, &p->amr), 0);
	assert_int_equal(rn_nic_mr_reg(p->b.nic, p->buf + 4096, 4096,
				       RN_ACCESS_LOCAL_WRITE, &p->bmr), 0);
	p->ends[0] = &p->a;
	p->ends[1] = &p->b;
	rn_harness_pair(&p->a, &p->b);
}

static void
local_pair_close(struct local_pair *p)
{
	p->a.nic->ops->mr_dereg(p->a.nic, &p->amr);
	p->b.nic->ops->mr_dereg(p->b.nic, &p->bmr);
	rn_harness_close(&p->a);
	rn_harness_close(&p->b);
}

/* a SENDs len bytes to b: both complete, the bytes arrive. */
static void
local_pair_send(struct local_pair *p, uint32_t len, uint64_t id)
{
	struct rn_sge sge = { (uintptr_t)p->buf, len, p->amr.lkey };
	struct rn_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
			    .opcode = RN_WR_SEND, .flags = RN_WR_SIGNALED };
	struct rn_wc wc;

	pattern(p->buf, len, (uint32_t)id);
	assert_int_equal(rn_harness_post_recv(&p->b, p->buf + 4096, 4096,
					      p->bmr.lkey, id), 0);
	assert_int_equal(rn_harness_post(&p->a, &wr), 0);
	assert_int_equal(rn_harness_wait(p->ends, &p->a, &wc, 1, WAIT_MS), 1);
	assert_int_equal(wc.status, 0);
	assert_int_equal(rn_harness_wait(p->ends, &p->b, &wc, 1, WAIT_MS), 1);
	assert_int_equal(wc.status, 0);
	assert_int_equal(wc.byte_len, len);
	assert_true(pattern_ok(p->buf + 4096, len, (uint32_t)id));
}

/* A data frame's header as the peer writes it (sim_frame_pvt.h: length,
 * type, opcode, syndrome, rnr_timer, dst_qpn, src_qpn, psn, imm, raddr,
 * rkey, dma_len). */
static void
put_data_hdr(uint8_t *p, uint32_t length, uint8_t type, uint8_t opcode,
	     uint32_t dst_qpn, uint32_t src_qpn, uint32_t psn, uint64_t raddr,
	     uint32_t rkey, uint32_t dma_len)
{
	put_hdr(p, length, type);
	p[5] = opcode;
	memcpy(p + 8, &dst_qpn, 4);
	memcpy(p + 12, &src_qpn, 4);
	memcpy(p + 16, &psn, 4);
	memcpy(p + 24, &raddr, 8);
	memcpy(p + 32, &rkey, 4);
	memcpy(p + 36, &dma_len, 4);
}

#define ACK_TYPE 4

/* Connect to b as a, and send bytes (a HELLO, then a data frame) up to
 * cut bytes into the frame's payload; let b read them, so that the
 * payload goes to its place. Returns the connection. */
static int
send_to_mid_packet(struct local_pair *p, const uint8_t *bytes, size_t cut)
{
	uint64_t deadline = rn_harness_now_ms() + 50;
	int fd = stranger_connect(rn_sim_port(p->b.nic));

	print_message("# first read: %zu bytes of the first packet\n", cut);
	send_all(fd, bytes, HELLO_SIZE + HDR_SIZE + cut);
	while (rn_harness_now_ms() < deadline)
		rn_harness_progress(p->ends);
	return fd;
}

/*
 * The receive side reads a WRITE's packets straight to their place and
 * predicts the next ones of the message in the same read; a frame between
 * them (an ACK, as the peer's responder sends) is not the packet
 * predicted: it and what follows are parsed as before, and every byte of
 * the WRITE lands where it belongs. The frames come as the real peer's
 * (a's HELLO, the harness's token, a's QP and PSNs), written by hand so
 * that the interleaving is exact: half of the first packet first, then
 * the rest in one piece.
 */
static void
test_predicted_packets_and_a_frame_between(void **state)
{
	uint32_t rng = rng_for(__func__);
	const size_t frame = HDR_SIZE + 4096, cut = 1 + rng_next(&rng) % 4000;
	uint8_t *target = calloc(1, 3 * 4096), *payload = malloc(3 * 4096);
	uint8_t *bytes = malloc(HELLO_SIZE + 4 * frame);
	struct rn_sim_stats before, after;
	struct local_pair p;
	struct rn_mr mr;
	uint64_t deadline;
	size_t at;
	int fd;

	(void)state;
	CHECK(target != NULL && payload != NULL && bytes != NULL);
	for (size_t i = 0; i < 3 * 4096; i++)
		payload[i] = (uint8_t)rng_next(&rng);
	local_pair_open(&p);
	assert_int_equal(rn_nic_mr_reg(p.b.nic, target, 3 * 4096,
				       RN_ACCESS_LOCAL_WRITE |
				       RN_ACCESS_REMOTE_WRITE, &mr), 0);
	rn_sim_stats(p.b.nic, &before);
	put_hello(bytes, rn_sim_port(p.a.nic));
	at = HELLO_SIZE;
	for (uint32_t k = 0; k < 3; k++) {
		if (k == 2) {   /* the frame between */
			put_data_hdr(bytes + at, 0, ACK_TYPE, 0, p.b.qp.qpn,
				     p.a.qp.qpn, 0xff, 0, 0, 0);
			at += HDR_SIZE;
		}
		put_data_hdr(bytes + at, 4096, REQUEST_TYPE,
			     RN_WR_WRITE, p.b.qp.qpn, p.a.qp.qpn, 0x100 + k,
			     (uintptr_t)target, mr.rkey, 3 * 4096);
		memcpy(bytes + at + HDR_SIZE, payload + k * 4096, 4096);
		at += frame;
	}
	fd = send_to_mid_packet(&p, bytes, cut);
	send_all(fd, bytes + HELLO_SIZE + HDR_SIZE + cut,
		 at - HELLO_SIZE - HDR_SIZE - cut);
	deadline = rn_harness_now_ms() + WAIT_MS;
	do {
		rn_harness_progress(p.ends);
		rn_sim_stats(p.b.nic, &after);
	} while (after.frames_received - before.frames_received < 5 &&
		 rn_harness_now_ms() < deadline);
	print_message("# b: %lu frames, %lu read to their place, %lu "
		      "predictions missed\n",
		      (unsigned long)(after.frames_received -
				      before.frames_received),
		      (unsigned long)(after.rx_placed - before.rx_placed),
		      (unsigned long)(after.rx_mispredicted -
				      before.rx_mispredicted));
	assert_int_equal(after.frames_received - before.frames_received, 5);
	assert_memory_equal(target, payload, 3 * 4096);
	assert_int_equal(after.rx_placed - before.rx_placed, 2);
	assert_int_equal(after.rx_mispredicted - before.rx_mispredicted, 1);
	assert_int_equal(after.dropped_malformed + after.dropped_out_of_order,
			 before.dropped_malformed + before.dropped_out_of_order);
	close(fd);
	assert_int_equal(rn_nic_mr_dereg(p.b.nic, &mr), 0);
	local_pair_close(&p);
	free(target);
	free(payload);
	free(bytes);
}

/*
 * A WRITE packet half read to its place when its region is deregistered:
 * the rest is not written there; the packet is delivered as it would
 * have been, and refused: the responder NAKs it (remote access error) and
 * its QP enters ERR at once, with no wait for the requester's retries.
 */
static void
test_region_gone_mid_packet(void **state)
{
	uint32_t rng = rng_for(__func__);
	const size_t cut = 1 + rng_next(&rng) % 4000;
	uint8_t *target = calloc(1, 4096);
	uint8_t bytes[HELLO_SIZE + HDR_SIZE + 4096];
	struct rn_sim_stats before, after;
	struct local_pair p;
	struct rn_mr mr;
	uint64_t deadline;
	int fd;

	(void)state;
	CHECK(target != NULL);
	local_pair_open(&p);
	assert_int_equal(rn_nic_mr_reg(p.b.nic, target, 4096,
				       RN_ACCESS_LOCAL_WRITE |
				       RN_ACCESS_REMOTE_WRITE, &mr), 0);
	rn_sim_stats(p.b.nic, &before);
	put_hello(bytes, rn_sim_port(p.a.nic));
	put_data_hdr(bytes + HELLO_SIZE, 4096, REQUEST_TYPE, RN_WR_WRITE,
		     p.b.qp.qpn, p.a.qp.qpn, 0x100, (uintptr_t)target, mr.rkey,
		     4096);
	memset(bytes + HELLO_SIZE + HDR_SIZE, 0xab, 4096);
	fd = send_to_mid_packet(&p, bytes, cut);
	assert_int_equal(rn_nic_mr_dereg(p.b.nic, &mr), 0);
	memset(target, 0, 4096);
	send_all(fd, bytes + HELLO_SIZE + HDR_SIZE + cut, 4096 - cut);
	deadline = rn_harness_now_ms() + WAIT_MS;
	while (rn_sim_qp_state(&p.b.qp) != RN_QP_ERR &&
	       rn_harness_now_ms() < deadline)
		rn_harness_progress(p.ends);
	rn_sim_stats(p.b.nic, &after);
	assert_int_equal(rn_sim_qp_state(&p.b.qp), RN_QP_ERR);
	assert_int_equal(after.frames_received - before.frames_received, 2);
	assert_int_equal(after.dropped_place_changed,
			 before.dropped_place_changed);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(target[i], 0);
	close(fd);
	local_pair_close(&p);
	free(target);
}

/* A HELLO as the real peer would send it (the token, a's address), then a
 * header announcing more than a message: closed at once, before any room
 * is made for it. The real pair is not disturbed. */
static void
test_huge_frame_closes_its_connection(void **state)
{
	uint32_t rng = rng_for(__func__);
	uint32_t huge = RN_SIM_MAX_MSG + 1 +
			rng_next(&rng) % ((1u << 30) - RN_SIM_MAX_MSG);
	struct local_pair p;
	struct rn_sim_stats st;
	uint8_t bytes[HELLO_SIZE + HDR_SIZE + 512];
	int fd;

	(void)state;
	local_pair_open(&p);
	local_pair_send(&p, 100, 1);
	fd = stranger_connect(rn_sim_port(p.b.nic));
	put_hello(bytes, rn_sim_port(p.a.nic));
	put_hdr(bytes + HELLO_SIZE, huge, REQUEST_TYPE);
	for (size_t i = HELLO_SIZE + HDR_SIZE; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)rng_next(&rng);
	send_all(fd, bytes, sizeof(bytes));
	print_message("# announced %u bytes\n", huge);
	assert_true(wait_closed(p.ends, fd, STRANGER_WAIT_MS));
	rn_sim_stats(p.b.nic, &st);
	assert_int_equal(st.wires_oversize, 1);
	assert_int_equal(st.wires_bad_hello + st.wires_bad_token, 0);
	local_pair_send(&p, 4096, 2);
	close(fd);
	local_pair_close(&p);
}

/* Random first bytes (never a HELLO): that connection closes, another
 * stranger's and the real pair's do not. The length field stays within a
 * message, so only the first-frame check can refuse it. */
static void
test_garbage_first_bytes_close_only_that_connection(void **state)
{
	uint32_t rng = rng_for(__func__);
	uint8_t junk[HDR_SIZE + 256], hello[HELLO_SIZE];
	size_t len = HDR_SIZE + rng_next(&rng) % 256;
	uint32_t length;
	struct local_pair p;
	struct rn_sim_stats st;
	int bad, idle;

	(void)state;
	local_pair_open(&p);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rng_next(&rng);
	if (junk[4] == HELLO_TYPE)
		junk[4] = (uint8_t)(HELLO_TYPE + 1 + rng_next(&rng) % 200);
	memcpy(&length, junk, 4);
	length %= RN_SIM_MAX_MSG;
	memcpy(junk, &length, 4);
	print_message("# %zu bytes, type %u, length %u\n", len, junk[4], length);
	idle = stranger_connect(rn_sim_port(p.b.nic));
	put_hello(hello, rn_sim_port(p.a.nic));   /* a's token: kept */
	send_all(idle, hello, sizeof(hello));
	bad = stranger_connect(rn_sim_port(p.b.nic));
	send_all(bad, junk, len);
	assert_true(wait_closed(p.ends, bad, STRANGER_WAIT_MS));
	local_pair_send(&p, 1 + rng_next(&rng) % 4096, 3);
	assert_false(closed_by_device(idle));
	rn_sim_stats(p.b.nic, &st);
	assert_int_equal(st.wires_bad_hello, 1);
	assert_int_equal(st.wires_evicted + st.wires_oversize, 0);
	close(bad);
	close(idle);
	local_pair_close(&p);
}

/*
 * A HELLO whose token no connected QP has (random, or none), or that names
 * a device no QP is connected to: closed at once, counted, and the real
 * pair goes on. An ACK that carries bytes, or a REQUEST over the path
 * MTU, from a wire with the token, is closed too: acknowledgements carry
 * nothing, and no packet more than RN_SIM_MTU.
 */
static void
test_wrong_token_closes_at_once(void **state)
{
	uint32_t rng = rng_for(__func__);
	uint8_t hello[HELLO_SIZE + HDR_SIZE + 8], token[TOKEN_SIZE];
	uint16_t other = (uint16_t)(1 + rng_next(&rng) % 65535);
	struct local_pair p;
	struct rn_sim_stats st;
	int fd[3];

	(void)state;
	local_pair_open(&p);
	local_pair_send(&p, 64, 7);
	for (size_t i = 0; i < sizeof(token); i++)
		token[i] = (uint8_t)rng_next(&rng);
	token[0] |= 1;   /* never the pair's all-zero token */
	if (other == rn_sim_port(p.a.nic))
		other++;
	print_message("# token %02x%02x..., other port %u\n", token[0],
		      token[1], other);
	fd[0] = stranger_connect(rn_sim_port(p.b.nic));
	put_hello_token(hello, rn_sim_port(p.a.nic), token);
	send_all(fd[0], hello, HELLO_SIZE);
	fd[1] = stranger_connect(rn_sim_port(p.b.nic));
	put_hello(hello, other);
	send_all(fd[1], hello, HELLO_SIZE);
	for (int i = 0; i < 2; i++)
		assert_true(wait_closed(p.ends, fd[i], 500));
	rn_sim_stats(p.b.nic, &st);
	assert_int_equal(st.wires_bad_token, 2);
	fd[2] = stranger_connect(rn_sim_port(p.b.nic));
	put_hello(hello, rn_sim_port(p.a.nic));
	put_hdr(hello + HELLO_SIZE, 8, 4 /* ACK */);
	send_all(fd[2], hello, sizeof(hello));
	assert_true(wait_closed(p.ends, fd[2], 500));
	close(fd[2]);
	/* A packet one byte over the path MTU, from the token's holder. */
	fd[2] = stranger_connect(rn_sim_port(p.b.nic));
	put_hdr(hello + HELLO_SIZE, RN_SIM_MTU + 1, REQUEST_TYPE);
	send_all(fd[2], hello, sizeof(hello));
	assert_true(wait_closed(p.ends, fd[2], 500));
	rn_sim_stats(p.b.nic, &st);
	assert_int_equal(st.wires_oversize, 2);
	local_pair_send(&p, 4096, 8);
	for (int i = 0; i < 3; i++)
		close(fd[i]);
	local_pair_close(&p);
}

/* Part of a HELLO, then silence: closed once the deadline passes. */
static void
test_no_hello_in_time_closes(void **state)
{
	uint32_t rng = rng_for(__func__);
	uint8_t hello[HELLO_SIZE];
	size_t part = rng_next(&rng) % HELLO_SIZE;
	struct local_pair p;
	struct rn_sim_stats st;
	uint64_t start, took;
	int fd;

	(void)state;
	local_pair_open(&p);
	put_hello(hello, 1);
	fd = stranger_connect(rn_sim_port(p.b.nic));
	start = rn_harness_now_ms();
	if (part > 0)
		send_all(fd, hello, part);
	print_message("# sent %zu of the HELLO's %d bytes\n", part, HELLO_SIZE);
	assert_true(wait_closed(p.ends, fd, RN_SIM_WIRE_HELLO_TIMEOUT_MS + 2000));
	took = rn_harness_now_ms() - start;
	print_message("# closed after %llu ms\n", (unsigned long long)took);
	assert_true(took + 50 >= RN_SIM_WIRE_HELLO_TIMEOUT_MS);
	rn_sim_stats(p.b.nic, &st);
	assert_int_equal(st.wires_hello_timeout, 1);
	local_pair_send(&p, 64, 4);
	close(fd);
	local_pair_close(&p);
}

/*
 * More idle strangers than the device keeps unmatched, each silent, part
 * of a HELLO, a HELLO alone, or a HELLO and half a frame, against a device
 * in a process with few descriptors to spare (as a daemon under a ulimit):
 * a real peer that calls after them is still accepted and served, and the
 * strangers beyond the cap are closed, oldest first.
 */
#define REAL_SENDS 8

struct victim_report {
	struct rn_sim_stats stats;
	uint32_t received;
};

static int
highest_fd(void)
{
	int top = 2;

	for (int fd = 0; fd < 4096; fd++)
		if (fcntl(fd, F_GETFD) != -1)
			top = fd;
	return top;
}

/* The device the strangers call: in its own process, under a descriptor
 * limit that leaves room for the cap and little more. */
static void
victim_main(int sock)
{
	struct side s = { .ends = { &s.e, NULL } };
	struct end_info mine, peer;
	struct victim_report rep = { .received = 0 };
	struct rlimit rl;
	uint64_t deadline = rn_harness_now_ms() + 30000;
	bool connected = false;

	/* Descriptors from the test runner would leave holes below the
	 * limit: only stdio and sock stay, dense from 0. */
	CHECK(dup2(sock, 3) == 3);
	sock = 3;
	for (int fd = 4; fd < 4096; fd++)
		close(fd);
	CHECK(rn_harness_open(&s.e, NULL, 256, NULL) == 0);
	s.buf = calloc(1, REAL_SENDS * 4096);
	CHECK(s.buf != NULL);
	CHECK(rn_nic_mr_reg(s.e.nic, s.buf, REAL_SENDS * 4096,
			    RN_ACCESS_LOCAL_WRITE, &s.mr) == 0);
	rl.rlim_cur = rl.rlim_max = (rlim_t)highest_fd() + 1 +
				    RN_SIM_WIRE_MAX_UNMATCHED + 3;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	mine = (struct end_info){ .addr = s.e.addr, .qpn = s.e.qp.qpn };
	CHECK(write(sock, &mine, sizeof(mine)) == sizeof(mine));
	while (rn_harness_now_ms() < deadline) {
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		struct rn_wc wc[4];
		unsigned int n;

		rn_harness_progress(s.ends);
		n = rn_cq_poll(&s.e.cq, wc, 4);
		for (unsigned int i = 0; i < n; i++)
			rep.received += wc[i].status == 0 &&
					wc[i].opcode == RN_WC_RECV;
		if (poll(&pfd, 1, 0) != 1)
			continue;
		if (!connected) {
			struct rn_qp_connect conn;

			CHECK(read(sock, &peer, sizeof(peer)) == sizeof(peer));
			conn = rn_harness_connect_params(&peer);
			CHECK(rn_harness_connect(&s.e, &conn) == 0);
			for (uint32_t i = 0; i < REAL_SENDS; i++)
				CHECK(rn_harness_post_recv(&s.e, s.buf + i * 4096,
							   4096, s.mr.lkey, i) == 0);
			connected = true;
			CHECK(write(sock, "r", 1) == 1);
			continue;
		}
		break;   /* the parent is done */
	}
	for (int i = 0; i < 1000; i++)   /* the last ACKs leave */
		rn_harness_progress(s.ends);
	rn_sim_stats(s.e.nic, &rep.stats);
	CHECK(write(sock, &rep, sizeof(rep)) == sizeof(rep));
	s.e.nic->ops->mr_dereg(s.e.nic, &s.mr);
	rn_harness_close(&s.e);
	free(s.buf);
	exit(0);
}

static void
test_strangers_cannot_keep_a_real_peer_out(void **state)
{
	uint32_t rng = rng_for(__func__);
	unsigned int n = RN_SIM_WIRE_MAX_UNMATCHED + 16 + rng_next(&rng) % 32;
	int *fds;
	unsigned int kinds[4] = { 0 }, closed = 0;
	struct side s = { .ends = { &s.e, NULL } };
	struct end_info vic, mine;
	struct victim_report rep;
	struct rn_qp_connect conn;
	uint8_t bytes[HELLO_SIZE + HDR_SIZE + 16];
	unsigned int done = 0;
	int sv[2], status;
	char c;
	pid_t pid;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		victim_main(sv[1]);
	}
	close(sv[1]);
	fds = calloc(n, sizeof(int));
	assert_non_null(fds);
	assert_int_equal(read(sv[0], &vic, sizeof(vic)), sizeof(vic));
	for (unsigned int i = 0; i < n; i++) {
		unsigned int kind = rng_next(&rng) % 4;

		fds[i] = stranger_connect(vic.addr.lid);
		put_hello(bytes, (uint16_t)(40000 + i));
		put_hdr(bytes + HELLO_SIZE, 1000, REQUEST_TYPE);
		if (kind == 1)
			send_all(fds[i], bytes, 1 + rng_next(&rng) % (HELLO_SIZE - 1));
		else if (kind == 2)
			send_all(fds[i], bytes, HELLO_SIZE);
		else if (kind == 3)
			send_all(fds[i], bytes, sizeof(bytes));
		kinds[kind]++;
	}
	print_message("# %u strangers: %u silent, %u part of a HELLO, %u a HELLO, "
		      "%u a HELLO and half a frame\n", n, kinds[0], kinds[1],
		      kinds[2], kinds[3]);

	/* Now the real peer. */
	assert_int_equal(rn_harness_open(&s.e, NULL, 256, NULL), 0);
	s.buf = calloc(1, 4096);
	assert_non_null(s.buf);
	assert_int_equal(rn_nic_mr_reg(s.e.nic, s.buf, 4096,
				       RN_ACCESS_LOCAL_WRITE, &s.mr), 0);
	mine = (struct end_info){ .addr = s.e.addr, .qpn = s.e.qp.qpn };
	conn = rn_harness_connect_params(&vic);
	assert_int_equal(rn_harness_connect(&s.e, &conn), 0);
	assert_int_equal(write(sv[0], &mine, sizeof(mine)), sizeof(mine));
	assert_int_equal(read(sv[0], &c, 1), 1);
	for (uint32_t i = 0; i < REAL_SENDS; i++) {
		struct rn_sge sge = { (uintptr_t)s.buf, 1 + rng_next(&rng) % 4096,
				      s.mr.lkey };
		struct rn_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
				    .opcode = RN_WR_SEND,
				    .flags = RN_WR_SIGNALED };

		assert_int_equal(rn_harness_post(&s.e, &wr), 0);
	}
	while (done < REAL_SENDS) {
		struct rn_wc wc;

		if (rn_harness_wait(s.ends, &s.e, &wc, 1, 5000) != 1 ||
		    wc.status != 0)
			break;
		done++;
	}
	/* Counted while the device still runs: its exit closes them all. */
	for (unsigned int i = 0; i < n; i++)
		closed += closed_by_device(fds[i]);
	assert_int_equal(write(sv[0], "q", 1), 1);
	assert_int_equal(read(sv[0], &rep, sizeof(rep)), sizeof(rep));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	s.e.nic->ops->mr_dereg(s.e.nic, &s.mr);
	rn_harness_close(&s.e);
	free(s.buf);
	print_message("# real peer: %u of %d SENDs completed, %u received; "
		      "strangers closed: %u (evicted %llu, timed out %llu)\n",
		      done, REAL_SENDS, rep.received, closed,
		      (unsigned long long)rep.stats.wires_evicted,
		      (unsigned long long)rep.stats.wires_hello_timeout);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(done, REAL_SENDS);
	assert_int_equal(rep.received, REAL_SENDS);
	assert_true(closed >= n - RN_SIM_WIRE_MAX_UNMATCHED);
	/* A HELLO alone names no endpoint of the victim's: closed at once. */
	assert_true(rep.stats.wires_evicted + rep.stats.wires_hello_timeout +
		    rep.stats.wires_bad_token >= n - RN_SIM_WIRE_MAX_UNMATCHED);
	assert_int_equal(rep.stats.wires_bad_hello + rep.stats.wires_oversize, 0);
}

int
main(void)
{
	const char *seed = getenv("RNOTIFY_TEST_SEED");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_processes_loopback),
		cmocka_unit_test_teardown(test_two_network_namespaces,
					  remove_namespaces),
		cmocka_unit_test(test_predicted_packets_and_a_frame_between),
		cmocka_unit_test(test_region_gone_mid_packet),
		cmocka_unit_test(test_huge_frame_closes_its_connection),
		cmocka_unit_test(test_garbage_first_bytes_close_only_that_connection),
		cmocka_unit_test(test_wrong_token_closes_at_once),
		cmocka_unit_test(test_no_hello_in_time_closes),
		cmocka_unit_test(test_strangers_cannot_keep_a_real_peer_out),
	};

	run_seed = seed != NULL ? (uint32_t)strtoul(seed, NULL, 0) :
				  (uint32_t)time(NULL);

	return cmocka_run_group_tests_name("sim_wire", tests, NULL, NULL);
}
