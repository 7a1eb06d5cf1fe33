/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two processes, each with its own sim device, exchange SEND/RECV, WRITE and
 * READ over the software wire, with every byte checked: sizes from 0 bytes
 * to 1 MiB gathers of 16 segments. Once over loopback, once between two
 * network namespaces joined by veth (root only; otherwise skipped).
 */
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
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
	CHECK(s.e.nic->ops->mr_reg(s.e.nic, s.buf, BUF_SIZE,
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_processes_loopback),
		cmocka_unit_test_teardown(test_two_network_namespaces,
					  remove_namespaces),
	};

	return cmocka_run_group_tests_name("sim_wire", tests, NULL, NULL);
}
