/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control protocol codec: every frame round-trips, a frame cut short
 * asks for more, and every kind of malformed input is refused with its
 * reason, never read past its end.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rn_proto.h"

static struct rn_proto_hello
sample_hello(void)
{
	struct rn_proto_hello h = {
		.name = "node-a",
		.session_id = 0x0123456789abcdefull,
		.generation = 7,
		.caps = RN_CAP_NATIVE_NOTIFY | RN_CAP_TCP_FALLBACK,
		.lid = 18515,
		.mtu = 5,
		.n_qps = 3,
		.probe_addr = 0x7f0012345678ull,
		.probe_rkey = 0x1234,
	};

	h.gid[10] = h.gid[11] = 0xff;
	h.gid[12] = 127;
	h.gid[15] = 1;
	h.qps[0] = (struct rn_proto_qp){ .kind = RN_PROTO_QP_DATA, .qpn = 0x100,
					 .psn = 0xabcdef };
	h.qps[1] = (struct rn_proto_qp){ .kind = RN_PROTO_QP_DATA, .qpn = 0x101,
					 .psn = 1 };
	h.qps[2] = (struct rn_proto_qp){ .kind = RN_PROTO_QP_NOTIFY,
					 .qpn = 0xffffff, .psn = 2,
					 .recv_depth = 256, .slot_size = 65536,
					 .credits = 256 };
	return h;
}

static int
decode(const uint8_t *buf, size_t len, struct rn_proto_frame *f,
       size_t *used, char *why)
{
	return rn_proto_decode(buf, len, f, used, why, 128);
}

static void
test_hello_round_trip(void **state)
{
	struct rn_proto_hello h = sample_hello();
	struct rn_proto_frame f;
	uint8_t buf[1024];
	char why[128];
	size_t n, used = 0;

	(void)state;
	n = rn_proto_encode_hello(buf, sizeof(buf), RN_PROTO_ACCEPT, &h);
	assert_int_equal(n, RN_PROTO_HEADER_SIZE + 1 + 6 + 48 + 3 * 24);
	/* Header bytes as docs/protocol.md gives them. */
	assert_memory_equal(buf, "RNTP\x08\x02\x00\x00", 8);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(used, n);
	assert_int_equal(f.type, RN_PROTO_ACCEPT);
	assert_memory_equal(&f.hello, &h, sizeof(h));
}

/* Every prefix of a frame asks for more and never claims a frame. */
static void
test_every_prefix_needs_more(void **state)
{
	struct rn_proto_hello h = sample_hello();
	struct rn_proto_frame f;
	uint8_t buf[1024];
	char why[128];
	size_t n = rn_proto_encode_hello(buf, sizeof(buf), RN_PROTO_HELLO, &h);
	size_t used;

	(void)state;
	for (size_t len = 0; len < n; len++) {
		uint8_t *copy = malloc(len + 1);   /* exact size: ASan sees overreads */

		memcpy(copy, buf, len);
		assert_int_equal(decode(copy, len, &f, &used, why), 0);
		free(copy);
	}
}

static void
test_small_frames_round_trip(void **state)
{
	struct rn_proto_frame f;
	uint8_t buf[256];
	char why[128];
	size_t used, n;

	(void)state;
	n = rn_proto_encode_refuse(buf, sizeof(buf), RN_REFUSE_VERSION, "no");
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.type, RN_PROTO_REFUSE);
	assert_int_equal(f.refuse.code, RN_REFUSE_VERSION);
	assert_string_equal(f.refuse.text, "no");

	n = rn_proto_encode_ready(buf, sizeof(buf), 99);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.ready_generation, 99);

	n = rn_proto_encode_heartbeat(buf, sizeof(buf));
	assert_int_equal(n, RN_PROTO_HEADER_SIZE);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.type, RN_PROTO_HEARTBEAT);

	n = rn_proto_encode_close(buf, sizeof(buf), 3);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.close_reason, 3);

	n = rn_proto_encode_notify(buf, sizeof(buf), 0x80000001u, "a\0b", 3,
				   "", 0);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.notify.native_before, 0x80000001u);
	assert_int_equal(f.notify.name_len, 3);
	assert_memory_equal(f.notify.name, "a\0b", 3);
	assert_int_equal(f.notify.msg_len, 0);
}

static void
test_full_size_notify(void **state)
{
	size_t cap = RN_PROTO_HEADER_SIZE + RN_PROTO_MAX_PAYLOAD;
	uint8_t *buf = malloc(cap);
	uint8_t *msg = malloc(65528);
	struct rn_proto_frame f;
	char why[128];
	size_t used, n;

	(void)state;
	memset(msg, 0xa5, 65528);
	n = rn_proto_encode_notify(buf, cap, 7, "", 0, msg, 65528);
	assert_int_equal(n, RN_PROTO_HEADER_SIZE + 4 + 8 + 65528);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.notify.msg_len, 65528);
	assert_memory_equal(f.notify.msg, msg, 65528);
	/* One byte more than a frame may carry: the encoder refuses. */
	assert_int_equal(rn_proto_encode_notify(buf, cap, 7, "x", 1, msg,
						RN_PROTO_MAX_PAYLOAD - 12), 0);
	free(buf);
	free(msg);
}

static void
test_two_frames_back_to_back(void **state)
{
	struct rn_proto_frame f;
	uint8_t buf[64];
	char why[128];
	size_t used, n;

	(void)state;
	n = rn_proto_encode_heartbeat(buf, sizeof(buf));
	n += rn_proto_encode_ready(buf + n, sizeof(buf) - n, 5);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.type, RN_PROTO_HEARTBEAT);
	assert_int_equal(decode(buf + used, n - used, &f, &used, why), 1);
	assert_int_equal(f.ready_generation, 5);
}

/* ---- malformed input: table of mutations of a valid HELLO ---- */

struct mutation {
	const char *name;
	size_t offset;          /* byte to overwrite */
	uint8_t value;
	int rc;
	const char *why;
};

#define HDR RN_PROTO_HEADER_SIZE
#define BODY (HDR + 1 + 6)      /* after "node-a" */
static const struct mutation mutations[] = {
	{ "wrong magic", 0, 'X', -EPROTO, "wrong magic 0x584e5450" },
	{ "other version", 4, 3, -EPROTONOSUPPORT,
	  "protocol version 3; this side speaks 8" },
	{ "unknown type", 5, 14, -EPROTO, "unknown frame type 14" },
	{ "flags set", 7, 1, -EPROTO, "unknown flags 0x0001" },
	{ "oversized length", 8, 0x7f, -EPROTO,
	  "frame of 2130706559 bytes; at most 65600" },
	{ "name with a space", HDR + 2, ' ', -EPROTO,
	  "hello: node name is not valid" },
	{ "zero name length", HDR, 0, -EPROTO, "hello: node name is not valid" },
	{ "name length past the end", HDR, 200, -EPROTO,
	  "hello: 127 bytes, too short" },
	{ "too many QPs", BODY + 35, 18, -EPROTO, "hello: 18 QPs; allowed 1..17" },
	{ "QP count not matching", BODY + 35, 2, -EPROTO,
	  "hello: length 127 does not match 2 QPs" },
	{ "bad MTU", BODY + 34, 9, -EPROTO, "hello: MTU code 9; allowed 1..5" },
	{ "QP reserved byte", BODY + 48 + 1, 1, -EPROTO,
	  "QP 0: reserved bytes set" },
	{ "QPN over 24 bits", BODY + 48 + 4, 1, -EPROTO,
	  "QP 0: QPN or PSN over 24 bits" },
	{ "unknown QP kind", BODY + 48, 7, -EPROTO, "QP 0: unknown kind 7" },
	{ "two notify QPs", BODY + 48, RN_PROTO_QP_NOTIFY, -EPROTO,
	  "QP 0: notify QP fields do not add up" },
	{ "notify QP without the capability", BODY + 15, RN_CAP_TCP_FALLBACK,
	  -EPROTO, "QP 2: notify QP fields do not add up" },
};

static void
run_mutation(void **state)
{
	const struct mutation *m = *state;
	struct rn_proto_hello h = sample_hello();
	struct rn_proto_frame f;
	uint8_t buf[1024];
	char why[128] = "";
	size_t used, n = rn_proto_encode_hello(buf, sizeof(buf), RN_PROTO_HELLO,
					       &h);

	buf[m->offset] = m->value;
	assert_int_equal(decode(buf, n, &f, &used, why), m->rc);
	assert_string_equal(why, m->why);
}

static void
test_small_frames_malformed(void **state)
{
	struct rn_proto_frame f;
	uint8_t buf[64];
	char why[128];
	size_t used, n;

	(void)state;
	n = rn_proto_encode_ready(buf, sizeof(buf), 1);
	buf[11] = 3;   /* READY of 3 bytes */
	assert_int_equal(decode(buf, n - 1, &f, &used, why), -EPROTO);
	assert_string_equal(why, "ready: length 3");

	n = rn_proto_encode_notify(buf, sizeof(buf), 0x01020304, "ab", 2, "cd",
				   2);
	/* The native count big endian, as every protocol integer; the
	 * frame's lengths little endian, as in a native notification. */
	assert_memory_equal(buf + HDR, "\x01\x02\x03\x04"
			    "\x02\x00\x00\x00" "ab" "\x02\x00\x00\x00" "cd", 16);
	buf[HDR + 4 + 4 + 2] = 5;   /* msg length 5 in a 12-byte frame */
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "notify: name and msg lengths do not add up "
			    "to 12");
	buf[HDR + 4 + 4 + 2] = 2;
	buf[HDR + 4] = 200;          /* name past the end */
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "notify: name and msg lengths do not add up "
			    "to 12");
	n = rn_proto_encode_notify(buf, sizeof(buf), 0, "", 0, "", 0);
	buf[11] = 3;                 /* NOTIFY shorter than its count */
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "notify: length 3");

	n = rn_proto_encode_refuse(buf, sizeof(buf), 1, "abc");
	buf[HDR + 2] = 5;   /* text length past the payload */
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "refuse: length 6");

	/* A peer's text goes into our log: no newlines, no escapes. */
	n = rn_proto_encode_refuse(buf, sizeof(buf), 1, "a\nrnotify: forged");
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "refuse: text byte 0x0a is not printable");
}

/* Adding a native channel: each step round-trips; bad ones are refused. */
static void
test_notify_qp_steps(void **state)
{
	const struct rn_proto_qp qp = { .kind = RN_PROTO_QP_NOTIFY,
					.qpn = 0x123456, .psn = 0x654321,
					.recv_depth = 256, .slot_size = 65536,
					.credits = 256 };
	struct rn_proto_frame f;
	uint8_t buf[128];
	char why[128];
	size_t used, n;

	(void)state;
	n = rn_proto_encode_notify_qp(buf, sizeof(buf), 7, RN_NOTIFY_QP_OFFER,
				      0, 0xbeef, &qp);
	assert_int_equal(n, HDR + 8 + 24);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.type, RN_PROTO_NOTIFY_QP);
	assert_int_equal(f.notify_qp.generation, 7);
	assert_int_equal(f.notify_qp.step, RN_NOTIFY_QP_OFFER);
	assert_int_equal(f.notify_qp.offer, 0xbeef);
	assert_int_equal(f.notify_qp.qp.kind, RN_PROTO_QP_NOTIFY);
	assert_int_equal(f.notify_qp.qp.qpn, qp.qpn);
	assert_int_equal(f.notify_qp.qp.psn, qp.psn);
	assert_int_equal(f.notify_qp.qp.recv_depth, qp.recv_depth);
	assert_int_equal(f.notify_qp.qp.slot_size, qp.slot_size);
	assert_int_equal(f.notify_qp.qp.credits, qp.credits);
	n = rn_proto_encode_notify_qp(buf, sizeof(buf), 8, RN_NOTIFY_QP_REFUSE,
				      RN_NOTIFY_QP_NO_ROOM, 3, NULL);
	assert_int_equal(n, HDR + 8);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.notify_qp.step, RN_NOTIFY_QP_REFUSE);
	assert_int_equal(f.notify_qp.reason, RN_NOTIFY_QP_NO_ROOM);
	n = rn_proto_encode_notify_qp(buf, sizeof(buf), 9, RN_NOTIFY_QP_READY,
				      0, 4, NULL);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.notify_qp.step, RN_NOTIFY_QP_READY);
	n = rn_proto_encode_notify_qp(buf, sizeof(buf), 10, RN_NOTIFY_QP_CLOSED,
				      0, 0, NULL);
	assert_int_equal(n, HDR + 8);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.notify_qp.generation, 10);
	assert_int_equal(f.notify_qp.step, RN_NOTIFY_QP_CLOSED);
	/* An ACCEPT needs its QP; there is no step 6. */
	assert_int_equal(rn_proto_encode_notify_qp(buf, sizeof(buf), 1,
						   RN_NOTIFY_QP_ACCEPT, 0, 1,
						   NULL), 0);
	assert_int_equal(rn_proto_encode_notify_qp(buf, sizeof(buf), 1, 6, 0,
						   1, NULL), 0);
	/* Malformed: a READY with a QP record, a REFUSE without a reason, a
	 * data QP offered, credits over the depth, a step 0. */
	n = rn_proto_encode_notify_qp(buf, sizeof(buf), 1, RN_NOTIFY_QP_OFFER,
				      0, 1, &qp);
	buf[HDR + 4] = RN_NOTIFY_QP_READY;
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "notify QP: length 32 for step 4");
	buf[HDR + 4] = RN_NOTIFY_QP_OFFER;
	buf[HDR + 8] = RN_PROTO_QP_DATA;
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "notify QP: fields do not add up");
	buf[HDR + 8] = RN_PROTO_QP_NOTIFY;
	buf[HDR + 8 + 23] = 0xff;   /* credits 511 > depth 256 */
	buf[HDR + 8 + 22] = 0x01;
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "notify QP: fields do not add up");
	n = rn_proto_encode_notify_qp(buf, sizeof(buf), 1, RN_NOTIFY_QP_REFUSE,
				      RN_NOTIFY_QP_DISABLED, 1, NULL);
	buf[HDR + 5] = 0;
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "notify QP: reason byte 0 for step 3");
	buf[HDR + 4] = 0;
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "notify QP: unknown step 0");
	buf[11] = 3;
	assert_int_equal(decode(buf, HDR + 3, &f, &used, why), -EPROTO);
	assert_string_equal(why, "notify QP: length 3");
}

/* ---- the challenge exchange ---- */

static struct rn_proto_auth
sample_auth(void)
{
	struct rn_proto_auth a = { .name = "node-b",
				   .session_id = 0xfedcba9876543210ull };

	for (unsigned int i = 0; i < RN_PROTO_NONCE_SIZE; i++)
		a.nonce[i] = (uint8_t)(32 + i);
	for (unsigned int i = 0; i < RN_PROTO_MAC_SIZE; i++)
		a.proof[i] = (uint8_t)(0xa0 + i);
	return a;
}

/* CHALLENGE, ANSWER and PROOF round-trip with the fields each carries. */
static void
test_auth_round_trip(void **state)
{
	static const struct {
		uint8_t type;
		size_t payload;
	} cases[] = {
		{ RN_PROTO_CHALLENGE, 1 + 6 + 8 + 32 },
		{ RN_PROTO_ANSWER, 1 + 6 + 8 + 32 + 32 },
		{ RN_PROTO_PROOF, 32 },
	};
	struct rn_proto_auth a = sample_auth();

	(void)state;
	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rn_proto_auth want = a;
		struct rn_proto_frame f;
		uint8_t buf[256];
		char why[128] = "";
		size_t used = 0;
		size_t n = rn_proto_encode_auth(buf, sizeof(buf), cases[i].type,
						&a);

		assert_int_equal(n, RN_PROTO_HEADER_SIZE + cases[i].payload);
		assert_int_equal(buf[5], cases[i].type);
		assert_int_equal(decode(buf, n, &f, &used, why), 1);
		assert_int_equal(used, n);
		assert_int_equal(f.type, cases[i].type);
		if (cases[i].type == RN_PROTO_CHALLENGE)
			memset(want.proof, 0, sizeof(want.proof));
		if (cases[i].type == RN_PROTO_PROOF) {
			memset(want.name, 0, sizeof(want.name));
			want.session_id = 0;
			memset(want.nonce, 0, sizeof(want.nonce));
		}
		assert_memory_equal(&f.auth, &want, sizeof(want));
		/* One byte short of its length is malformed, not more. */
		buf[11]--;
		assert_int_equal(decode(buf, n - 1, &f, &used, why), -EPROTO);
		assert_non_null(strstr(why, "length"));
	}
	/* The encoder refuses what it cannot write. */
	assert_int_equal(rn_proto_encode_auth((uint8_t[256]){ 0 }, 256,
					      RN_PROTO_HELLO, &a), 0);
	a.name[0] = '\0';
	assert_int_equal(rn_proto_encode_auth((uint8_t[256]){ 0 }, 256,
					      RN_PROTO_CHALLENGE, &a), 0);
}

static void
test_auth_bad_name(void **state)
{
	struct rn_proto_auth a = sample_auth();
	struct rn_proto_frame f;
	uint8_t buf[256];
	char why[128] = "";
	size_t used;
	size_t n = rn_proto_encode_auth(buf, sizeof(buf), RN_PROTO_ANSWER, &a);

	(void)state;
	buf[HDR + 1] = '/';
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "ANSWER: node name is not valid");
}

/*
 * Known answers, computed independently of this code with
 *   python3 -c 'import hmac, hashlib, struct; print(hmac.new(
 *     b"0123456789abcdef0123456789abcdef", b"RNTP\x08" + ROLE +
 *     b"\x06node-a\x06node-b" + struct.pack(">QQ", 0x0123456789abcdef,
 *     0xfedcba9876543210) + bytes(range(32)) + bytes(range(32, 64)),
 *     hashlib.sha256).hexdigest())'
 * with ROLE b"caller" and b"callee", and b"simwir" for the sim wire
 * token (its first 16 bytes) (`openssl dgst -sha256 -mac HMAC
 * -macopt key:0123456789abcdef0123456789abcdef` over the same bytes
 * agrees).
 */
static void
test_proof_known_answers(void **state)
{
	static const uint8_t key[] = "0123456789abcdef0123456789abcdef";
	static const uint8_t caller_mac[RN_PROTO_MAC_SIZE] =
		"\x16\x82\xda\xfe\xef\x2e\x38\xfc\x6a\xba\xa7\xbb\x21\xe8"
		"\x8f\xea\x0e\xaf\x3d\x2c\x9b\x55\x0d\x29\x3b\x08\xe1\x7f"
		"\x5a\x40\x7f\xf5";
	static const uint8_t callee_mac[RN_PROTO_MAC_SIZE] =
		"\x4f\x48\xc4\x2e\x5a\x49\x60\x8a\x0f\x06\x40\x93\x72\x7d"
		"\x59\xd0\x36\x4c\x64\x6e\x96\x82\x62\x29\xb4\x4e\x91\x12"
		"\x69\x49\xa6\xad";
	static const uint8_t wire_token[RN_PROTO_TOKEN_SIZE] =
		"\x36\xa8\x7e\xfc\x6a\x3d\x1d\xa7\xa5\x3b\xa9\x7c\x2e\x61"
		"\xe3\x20";
	uint8_t token[RN_PROTO_TOKEN_SIZE];
	uint8_t nc[RN_PROTO_NONCE_SIZE], ns[RN_PROTO_NONCE_SIZE];
	uint8_t mac[RN_PROTO_MAC_SIZE], other[RN_PROTO_MAC_SIZE];
	struct rn_proto_transcript t = {
		.caller = "node-a", .callee = "node-b",
		.caller_session = 0x0123456789abcdefull,
		.callee_session = 0xfedcba9876543210ull,
		.caller_nonce = nc, .callee_nonce = ns,
	};

	(void)state;
	for (unsigned int i = 0; i < RN_PROTO_NONCE_SIZE; i++) {
		nc[i] = (uint8_t)i;
		ns[i] = (uint8_t)(32 + i);
	}
	assert_int_equal(rn_proto_proof(key, 32, RN_PROTO_ROLE_CALLER, &t, mac),
			 0);
	assert_memory_equal(mac, caller_mac, sizeof(mac));
	assert_true(rn_proto_proof_equal(mac, caller_mac));
	assert_int_equal(rn_proto_proof(key, 32, RN_PROTO_ROLE_CALLEE, &t, mac),
			 0);
	assert_memory_equal(mac, callee_mac, sizeof(mac));
	assert_false(rn_proto_proof_equal(mac, caller_mac));
	assert_int_equal(rn_proto_wire_token(key, 32, &t, token), 0);
	assert_memory_equal(token, wire_token, sizeof(token));
	/* Every field counts: another nonce, session or name, another proof. */
	ns[31] ^= 1;
	assert_int_equal(rn_proto_proof(key, 32, RN_PROTO_ROLE_CALLEE, &t,
					other), 0);
	assert_false(rn_proto_proof_equal(other, callee_mac));
	ns[31] ^= 1;
	t.caller_session ^= 1;
	assert_int_equal(rn_proto_proof(key, 32, RN_PROTO_ROLE_CALLEE, &t,
					other), 0);
	assert_false(rn_proto_proof_equal(other, callee_mac));
	t.caller_session ^= 1;
	t.callee = "node-c";
	assert_int_equal(rn_proto_proof(key, 32, RN_PROTO_ROLE_CALLEE, &t,
					other), 0);
	assert_false(rn_proto_proof_equal(other, callee_mac));
	/* Out of range. */
	assert_int_equal(rn_proto_proof(key, 0, RN_PROTO_ROLE_CALLER, &t, mac),
			 -EINVAL);
	t.caller = "";
	assert_int_equal(rn_proto_proof(key, 32, RN_PROTO_ROLE_CALLER, &t, mac),
			 -EINVAL);
	/* Nonces are fresh. */
	assert_int_equal(rn_proto_nonce(nc), 0);
	assert_int_equal(rn_proto_nonce(ns), 0);
	assert_memory_not_equal(nc, ns, sizeof(nc));
}

/* Descriptor requests and answers round-trip; every bound is checked. */
static void
test_desc_frames(void **state)
{
	uint8_t blob[RN_PROTO_DESC_BLOB], buf[512];
	struct rn_proto_frame f;
	char why[128] = "", name[RN_PROTO_DESC_NAME_MAX + 2];
	size_t used, n;

	(void)state;
	for (unsigned int i = 0; i < sizeof(blob); i++)
		blob[i] = (uint8_t)(i * 7);
	n = rn_proto_encode_desc_request(buf, sizeof(buf), 0xa1b2c3d4,
					 "kv/layer.0:k");
	assert_int_equal(n, HDR + 5 + 12);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(used, n);
	assert_int_equal(f.type, RN_PROTO_DESC_REQUEST);
	assert_int_equal(f.desc_request.id, 0xa1b2c3d4);
	assert_string_equal(f.desc_request.name, "kv/layer.0:k");
	/* Names: 1..63 bytes of the allowed set, never more. */
	memset(name, 'n', sizeof(name));
	name[RN_PROTO_DESC_NAME_MAX] = '\0';
	assert_int_not_equal(rn_proto_encode_desc_request(buf, sizeof(buf), 1,
							  name), 0);
	name[RN_PROTO_DESC_NAME_MAX] = 'n';
	name[RN_PROTO_DESC_NAME_MAX + 1] = '\0';
	assert_int_equal(rn_proto_encode_desc_request(buf, sizeof(buf), 1,
						      name), 0);
	assert_int_equal(rn_proto_encode_desc_request(buf, sizeof(buf), 1, ""),
			 0);
	assert_int_equal(rn_proto_encode_desc_request(buf, sizeof(buf), 1,
						      "a b"), 0);
	/* A length byte past the payload, or short of it. */
	n = rn_proto_encode_desc_request(buf, sizeof(buf), 1, "abc");
	buf[HDR + 4] = 4;
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "descriptor request: length 8");
	buf[HDR + 4] = 3;
	buf[HDR + 6] = '\n';
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "descriptor request: the name is not valid");
	buf[HDR + 4] = 0;    /* no name at all */
	buf[11] = 5;
	assert_int_equal(decode(buf, HDR + 5, &f, &used, why), -EPROTO);
	assert_string_equal(why, "descriptor request: the name is not valid");
	buf[11] = 4;         /* not even the name's length */
	assert_int_equal(decode(buf, HDR + 4, &f, &used, why), -EPROTO);
	assert_string_equal(why, "descriptor request: length 4");

	n = rn_proto_encode_desc_answer(buf, sizeof(buf), 9, RN_DESC_OK, blob,
					sizeof(blob));
	assert_int_equal(n, HDR + 8 + sizeof(blob));
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.type, RN_PROTO_DESC_ANSWER);
	assert_int_equal(f.desc_answer.id, 9);
	assert_int_equal(f.desc_answer.status, RN_DESC_OK);
	assert_int_equal(f.desc_answer.blob_len, sizeof(blob));
	assert_memory_equal(f.desc_answer.blob, blob, sizeof(blob));
	/* A blob of another size with OK, or any blob without OK. */
	buf[HDR + 7] = 191;
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "descriptor answer: 191 blob bytes in 200 "
			    "for status 0");
	buf[HDR + 7] = 192;
	buf[HDR + 5] = RN_DESC_UNKNOWN;
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "descriptor answer: 192 blob bytes in 200 "
			    "for status 1");
	buf[HDR + 5] = 4;
	assert_int_equal(decode(buf, n, &f, &used, why), -EPROTO);
	assert_string_equal(why, "descriptor answer: unknown status 4");
	n = rn_proto_encode_desc_answer(buf, sizeof(buf), 9, RN_DESC_UNKNOWN,
					NULL, 0);
	assert_int_equal(n, HDR + 8);
	assert_int_equal(decode(buf, n, &f, &used, why), 1);
	assert_int_equal(f.desc_answer.status, RN_DESC_UNKNOWN);
	assert_int_equal(f.desc_answer.blob_len, 0);
	assert_null(f.desc_answer.blob);
	buf[11] = 7;
	assert_int_equal(decode(buf, HDR + 7, &f, &used, why), -EPROTO);
	assert_string_equal(why, "descriptor answer: length 7");
	/* The encoder refuses what the decoder would. */
	assert_int_equal(rn_proto_encode_desc_answer(buf, sizeof(buf), 1,
						     RN_DESC_OK, blob, 191), 0);
	assert_int_equal(rn_proto_encode_desc_answer(buf, sizeof(buf), 1,
						     RN_DESC_UNKNOWN, blob,
						     sizeof(blob)), 0);
	assert_int_equal(rn_proto_encode_desc_answer(buf, sizeof(buf), 1, 4,
						     NULL, 0), 0);
	assert_int_equal(rn_proto_encode_desc_answer(buf, 100, 1, RN_DESC_OK,
						     blob, sizeof(blob)), 0);
	assert_string_equal(rn_proto_type_name(RN_PROTO_DESC_ANSWER),
			    "DESC_ANSWER");
}

int
main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_hello_round_trip),
		cmocka_unit_test(test_every_prefix_needs_more),
		cmocka_unit_test(test_small_frames_round_trip),
		cmocka_unit_test(test_full_size_notify),
		cmocka_unit_test(test_two_frames_back_to_back),
		cmocka_unit_test(test_small_frames_malformed),
		cmocka_unit_test(test_notify_qp_steps),
		cmocka_unit_test(test_auth_round_trip),
		cmocka_unit_test(test_auth_bad_name),
		cmocka_unit_test(test_proof_known_answers),
		cmocka_unit_test(test_desc_frames),
	};
	const size_t n_fixed = sizeof(fixed) / sizeof(fixed[0]);
	const size_t n_mut = sizeof(mutations) / sizeof(mutations[0]);
	struct CMUnitTest tests[sizeof(fixed) / sizeof(fixed[0]) +
				sizeof(mutations) / sizeof(mutations[0])];

	memcpy(tests, fixed, sizeof(fixed));
	for (size_t i = 0; i < n_mut; i++)
		tests[n_fixed + i] = (struct CMUnitTest){
			.name = mutations[i].name,
			.test_func = run_mutation,
			.initial_state = (void *)&mutations[i],
		};
	return _cmocka_run_group_tests("protocol", tests, n_fixed + n_mut,
				       NULL, NULL);
}
