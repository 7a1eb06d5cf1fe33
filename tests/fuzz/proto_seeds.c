/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes the fuzz seed corpus: one file per valid frame kind, made by the
 * encoders themselves. Usage: proto_seeds DIR
 */
#include <stdio.h>
#include <string.h>

#include "rn_proto.h"

static int
save(const char *dir, const char *name, const uint8_t *buf, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, n, f) != n) {
		perror(path);
		return 1;
	}
	return fclose(f) != 0;
}

int
main(int argc, char **argv)
{
	static uint8_t buf[RN_PROTO_HEADER_SIZE + RN_PROTO_MAX_PAYLOAD];
	struct rn_proto_hello h = {
		.name = "seed", .session_id = 42, .generation = 1,
		.caps = RN_CAP_NATIVE_NOTIFY | RN_CAP_TCP_FALLBACK, .mtu = 5,
		.n_qps = 2, .probe_addr = 4096, .probe_rkey = 7,
		.qps = { { .kind = RN_PROTO_QP_DATA, .qpn = 0x100, .psn = 1 },
			 { .kind = RN_PROTO_QP_NOTIFY, .qpn = 0x101, .psn = 2,
			   .recv_depth = 256, .slot_size = 65536,
			   .credits = 128 } },
	};
	size_t n;
	int rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: proto_seeds DIR\n");
		return 2;
	}
	n = rn_proto_encode_hello(buf, sizeof(buf), RN_PROTO_HELLO, &h);
	rc |= save(argv[1], "hello", buf, n);
	n = rn_proto_encode_hello(buf, sizeof(buf), RN_PROTO_ACCEPT, &h);
	n += rn_proto_encode_ready(buf + n, sizeof(buf) - n, 1);
	n += rn_proto_encode_heartbeat(buf + n, sizeof(buf) - n);
	rc |= save(argv[1], "accept-ready-heartbeat", buf, n);
	n = rn_proto_encode_refuse(buf, sizeof(buf), RN_REFUSE_DUPLICATE,
				   "simultaneous connect");
	rc |= save(argv[1], "refuse", buf, n);
	n = rn_proto_encode_close(buf, sizeof(buf), 1);
	rc |= save(argv[1], "close", buf, n);
	n = rn_proto_encode_notify(buf, sizeof(buf), 3, "agent", 5, "kv ready",
				   8);
	rc |= save(argv[1], "notify", buf, n);
	n = rn_proto_encode_notify_qp(buf, sizeof(buf), 2, RN_NOTIFY_QP_OFFER, 0,
				      1, &(struct rn_proto_qp){
					.kind = RN_PROTO_QP_NOTIFY, .qpn = 9,
					.recv_depth = 256, .slot_size = 65536,
					.credits = 256 });
	rc |= save(argv[1], "notify-qp-offer", buf, n);
	/* The challenge exchange, as a caller and a callee send it. */
	struct rn_proto_auth a = { .name = "node-a", .session_id = 42 };

	memset(a.nonce, 0x5a, sizeof(a.nonce));
	memset(a.proof, 0xa5, sizeof(a.proof));
	n = rn_proto_encode_auth(buf, sizeof(buf), RN_PROTO_CHALLENGE, &a);
	rc |= save(argv[1], "challenge", buf, n);
	n = rn_proto_encode_auth(buf, sizeof(buf), RN_PROTO_ANSWER, &a);
	rc |= save(argv[1], "answer", buf, n);
	n = rn_proto_encode_auth(buf, sizeof(buf), RN_PROTO_PROOF, &a);
	n += rn_proto_encode_hello(buf + n, sizeof(buf) - n, RN_PROTO_HELLO, &h);
	rc |= save(argv[1], "proof-hello", buf, n);
	/* A descriptor request, its answer, and a refusal of one. */
	uint8_t blob[RN_PROTO_DESC_BLOB];

	memset(blob, 0x3c, sizeof(blob));
	n = rn_proto_encode_desc_request(buf, sizeof(buf), 7, "kv/layer0");
	n += rn_proto_encode_desc_answer(buf + n, sizeof(buf) - n, 7,
					 RN_DESC_OK, blob, sizeof(blob));
	n += rn_proto_encode_desc_answer(buf + n, sizeof(buf) - n, 8,
					 RN_DESC_UNKNOWN, NULL, 0);
	rc |= save(argv[1], "desc-request-answers", buf, n);
	return rc;
}
