/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_PROTO_H
#define RN_PROTO_H

/*
 * The control protocol between two rnotifyd: binary, versioned,
 * length-prefixed frames on one persistent TCP connection per peer pair.
 * docs/protocol.md describes every byte. All integers are big endian.
 *
 * The codec is pure (no I/O, no allocation): the decoder is what the fuzz
 * target (tests/fuzz/) exercises.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RN_PROTO_MAGIC 0x524e5450u        /* "RNTP" */
#define RN_PROTO_VERSION 8
#define RN_PROTO_HEADER_SIZE 12
#define RN_PROTO_MAX_PAYLOAD (65536 + 64) /* a whole notification fits */
#define RN_PROTO_NOTIFY_HEAD 4            /* native_before, then the frame */
#define RN_PROTO_NOTIFY_QP_FIXED 8        /* generation, step, reason, offer */
#define RN_PROTO_NAME_MAX 31
#define RN_PROTO_MAX_QPS 17               /* 16 data QPs + 1 notify QP */
#define RN_PROTO_QP_SIZE 24
#define RN_PROTO_REASON_MAX 200
#define RN_PROTO_NONCE_SIZE 32            /* fresh from RAND_bytes each time */
#define RN_PROTO_MAC_SIZE 32              /* HMAC-SHA256 */
#define RN_PROTO_SECRET_MAX 1024          /* longest shared secret */
#define RN_PROTO_TOKEN_SIZE 16            /* a sim wire token */
#define RN_PROTO_DESC_NAME_MAX 63         /* a published region's name */
#define RN_PROTO_DESC_BLOB 192            /* a descriptor (rn_transfer.h) */
/* DESC_REQUEST: request id, name length, name. */
#define RN_PROTO_DESC_REQUEST_FIXED 5
/* DESC_ANSWER: request id, status, blob length, blob. */
#define RN_PROTO_DESC_ANSWER_FIXED 8
/* The largest CHALLENGE/ANSWER payload. */
#define RN_PROTO_AUTH_MAX (1 + RN_PROTO_NAME_MAX + 8 + RN_PROTO_NONCE_SIZE + \
			   RN_PROTO_MAC_SIZE)
/* The largest HELLO/ACCEPT payload. */
#define RN_PROTO_HELLO_MAX (1 + RN_PROTO_NAME_MAX + 48 + \
			    RN_PROTO_MAX_QPS * RN_PROTO_QP_SIZE)

enum rn_proto_type {
	RN_PROTO_HELLO = 1,      /* caller: who I am, my QPs */
	RN_PROTO_ACCEPT = 2,     /* callee: the same, in answer */
	RN_PROTO_REFUSE = 3,     /* no endpoint: reason code and text */
	RN_PROTO_READY = 4,      /* caller's QPs are ready to send */
	RN_PROTO_HEARTBEAT = 5,  /* liveness; any frame counts */
	RN_PROTO_CLOSE = 6,      /* the endpoint is closed on purpose */
	RN_PROTO_NOTIFY = 7,     /* a notification over TCP (fallback) */
	RN_PROTO_NOTIFY_QP = 8,  /* a native channel added to a connected
				  * endpoint: offer, accept, refuse, ready */
	RN_PROTO_CHALLENGE = 9,  /* caller: who I am, my nonce */
	RN_PROTO_ANSWER = 10,    /* callee: who I am, my nonce, my proof */
	RN_PROTO_PROOF = 11,     /* caller: my proof */
	RN_PROTO_DESC_REQUEST = 12, /* the descriptor you publish as NAME */
	RN_PROTO_DESC_ANSWER = 13,  /* its blob, or why not */
};
#define RN_PROTO_TYPE_LAST RN_PROTO_DESC_ANSWER

/* DESC_ANSWER's status: OK carries the blob, the others none. */
enum rn_proto_desc_status {
	RN_DESC_OK = 0,
	RN_DESC_UNKNOWN = 1,       /* no region is published under that name */
	RN_DESC_UNAUTHENTICATED = 2, /* this node has no secret: it serves
				    * descriptors to no one */
	RN_DESC_UNAVAILABLE = 3,   /* this node serves no descriptors (no
				    * transfer engine), or could not export */
};

/* The steps of adding a native channel to a connected endpoint. */
enum rn_proto_notify_qp_step {
	RN_NOTIFY_QP_OFFER = 1,    /* here is my notify QP: add yours */
	RN_NOTIFY_QP_ACCEPT = 2,   /* here is mine, connected to yours */
	RN_NOTIFY_QP_REFUSE = 3,   /* none here (reason below) */
	RN_NOTIFY_QP_READY = 4,    /* mine is connected to yours: send */
	RN_NOTIFY_QP_CLOSED = 5,   /* mine failed locally: send no more to
				    * it, nor credits (data QPs go on) */
};

enum rn_proto_notify_qp_refusal {
	RN_NOTIFY_QP_DISABLED = 1, /* [notify] enabled = false: never */
	RN_NOTIFY_QP_NO_ROOM = 2,  /* no bay or CQ room now: I offer later */
	RN_NOTIFY_QP_BUSY = 3,     /* mine was offered too and goes first */
};

enum rn_proto_caps {
	RN_CAP_NATIVE_NOTIFY = 1u << 0,  /* has a notification QP */
	RN_CAP_TCP_FALLBACK = 1u << 1,   /* accepts NOTIFY frames */
	RN_CAP_NOTIFY_ENABLED = 1u << 2, /* notifications on: a native
					  * channel may be added later */
};
#define RN_CAP_KNOWN (RN_CAP_NATIVE_NOTIFY | RN_CAP_TCP_FALLBACK | \
		      RN_CAP_NOTIFY_ENABLED)

enum rn_proto_refusal {
	RN_REFUSE_VERSION = 1,
	RN_REFUSE_CAPABILITY = 2,
	RN_REFUSE_DUPLICATE = 3,  /* simultaneous connect: the other one stays */
	RN_REFUSE_NAME = 4,       /* the caller uses the callee's own name */
	RN_REFUSE_RESOURCES = 5,
	RN_REFUSE_PROTOCOL = 6,
	RN_REFUSE_AUTH = 7,       /* no proof, a wrong one, or none expected */
};

/* Which side a proof is from: each side's proof has its own label, so a
 * proof cannot be sent back to the side that made it. */
enum rn_proto_role {
	RN_PROTO_ROLE_CALLER = 1,
	RN_PROTO_ROLE_CALLEE = 2,
	/* Not a proof: the key of the endpoint's sim wire connections
	 * (rn_proto_wire_token()). */
	RN_PROTO_ROLE_WIRE = 3,
};

enum rn_proto_qp_kind {
	RN_PROTO_QP_DATA = 1,
	RN_PROTO_QP_NOTIFY = 2,
};

struct rn_proto_qp {
	uint8_t kind;             /* enum rn_proto_qp_kind */
	uint32_t qpn;             /* 24 bits */
	uint32_t psn;             /* 24 bits */
	uint32_t recv_depth;      /* notify: receive WQEs posted */
	uint32_t slot_size;       /* notify: bytes per receive slot */
	uint32_t credits;         /* notify: sends the peer may start with */
};

/* HELLO and ACCEPT. */
struct rn_proto_hello {
	char name[RN_PROTO_NAME_MAX + 1];
	uint64_t session_id;      /* random, new at every process start */
	uint32_t generation;      /* of this endpoint on the sender's side */
	uint32_t caps;            /* enum rn_proto_caps */
	uint8_t gid[16];
	uint16_t lid;
	uint8_t mtu;              /* IBV_MTU_* of the sender's port */
	uint8_t n_qps;
	uint64_t probe_addr;      /* 64 bytes the peer may RDMA READ */
	uint32_t probe_rkey;
	struct rn_proto_qp qps[RN_PROTO_MAX_QPS];
};

/* CHALLENGE, ANSWER (all of it) and PROOF (the proof only). */
struct rn_proto_auth {
	char name[RN_PROTO_NAME_MAX + 1];
	uint64_t session_id;
	uint8_t nonce[RN_PROTO_NONCE_SIZE];
	uint8_t proof[RN_PROTO_MAC_SIZE];
};

/* What a proof covers: both names, sessions and nonces (docs/protocol.md,
 * "Authentication"). */
struct rn_proto_transcript {
	const char *caller, *callee;
	uint64_t caller_session, callee_session;
	const uint8_t *caller_nonce, *callee_nonce;  /* RN_PROTO_NONCE_SIZE */
};

struct rn_proto_frame {
	uint8_t type;             /* enum rn_proto_type */
	union {
		struct rn_proto_hello hello;
		struct rn_proto_auth auth;
		struct {
			uint16_t code;    /* enum rn_proto_refusal */
			char text[RN_PROTO_REASON_MAX + 1];
		} refuse;
		uint32_t ready_generation;
		uint16_t close_reason;
		struct {
			uint32_t generation;   /* of the sender's endpoint */
			uint8_t step;          /* rn_proto_notify_qp_step */
			uint8_t reason;        /* REFUSE: ..._refusal */
			uint16_t offer;        /* which offer; answers echo it */
			struct rn_proto_qp qp; /* OFFER, ACCEPT */
		} notify_qp;
		struct {
			uint32_t id;           /* the requester's; echoed */
			char name[RN_PROTO_DESC_NAME_MAX + 1];
		} desc_request;
		struct {
			uint32_t id;           /* the request's */
			uint16_t status;       /* enum rn_proto_desc_status */
			uint16_t blob_len;     /* RN_PROTO_DESC_BLOB when OK */
			const uint8_t *blob;   /* into the decoded buffer */
		} desc_answer;
		struct {
			uint32_t native_before; /* native ones sent before it */
			const uint8_t *name;   /* into the decoded buffer */
			uint32_t name_len;
			const uint8_t *msg;
			uint32_t msg_len;
		} notify;
	};
};

/*
 * Decode the frame at the start of buf[0..len). Returns 1 and sets
 * *frame_len when a whole frame was decoded, 0 when more bytes are needed
 * (nothing is wrong yet), or a negative errno with why set:
 *   -EPROTONOSUPPORT  another protocol version (its number is in why)
 *   -EPROTO           anything else malformed: magic, type, flags, length,
 *                     fields that do not add up or are out of range
 * Garbage is refused as soon as the 12-byte header is in.
 */
int rn_proto_decode(const uint8_t *buf, size_t len, struct rn_proto_frame *f,
		    size_t *frame_len, char *why, size_t why_len);

/*
 * Encoders write one whole frame into buf and return its length, or 0 when
 * cap is too small or a field is out of range.
 */
size_t rn_proto_encode_hello(uint8_t *buf, size_t cap, uint8_t type,
			     const struct rn_proto_hello *h);
size_t rn_proto_encode_refuse(uint8_t *buf, size_t cap, uint16_t code,
			      const char *text);
size_t rn_proto_encode_ready(uint8_t *buf, size_t cap, uint32_t generation);
size_t rn_proto_encode_heartbeat(uint8_t *buf, size_t cap);
size_t rn_proto_encode_close(uint8_t *buf, size_t cap, uint16_t reason);
/* qp only for OFFER and ACCEPT, reason only for REFUSE. */
size_t rn_proto_encode_notify_qp(uint8_t *buf, size_t cap, uint32_t generation,
				 uint8_t step, uint8_t reason, uint16_t offer,
				 const struct rn_proto_qp *qp);
size_t rn_proto_encode_notify(uint8_t *buf, size_t cap, uint32_t native_before,
			      const void *name, uint32_t name_len,
			      const void *msg, uint32_t msg_len);

/*
 * DESC_REQUEST for the region published as name (1..RN_PROTO_DESC_NAME_MAX
 * bytes of rn_proto_desc_name_valid()), and DESC_ANSWER: blob of blob_len
 * bytes with RN_DESC_OK (blob_len RN_PROTO_DESC_BLOB), none otherwise.
 */
size_t rn_proto_encode_desc_request(uint8_t *buf, size_t cap, uint32_t id,
				    const char *name);
size_t rn_proto_encode_desc_answer(uint8_t *buf, size_t cap, uint32_t id,
				   uint16_t status, const void *blob,
				   uint16_t blob_len);
/* Whether name[0..len) may name a published region: 1..63 bytes of
 * letters, digits and "_-.:/". */
bool rn_proto_desc_name_valid(const char *name, size_t len);

/* CHALLENGE, ANSWER or PROOF (type), from the fields that type carries. */
size_t rn_proto_encode_auth(uint8_t *buf, size_t cap, uint8_t type,
			    const struct rn_proto_auth *a);

/*
 * The proof of role over t with key: HMAC-SHA256 of the byte string
 * docs/protocol.md gives, into mac. Returns 0, -EINVAL (a name not
 * 1..RN_PROTO_NAME_MAX bytes, a key not 1..RN_PROTO_SECRET_MAX) or -EIO
 * (libcrypto failed).
 */
int rn_proto_proof(const uint8_t *key, size_t key_len, enum rn_proto_role role,
		   const struct rn_proto_transcript *t,
		   uint8_t mac[RN_PROTO_MAC_SIZE]);
/* Whether two proofs are equal, in time that does not depend on where
 * they differ. */
bool rn_proto_proof_equal(const uint8_t *a, const uint8_t *b);
/*
 * The sim wire token of an authenticated exchange t: the first
 * RN_PROTO_TOKEN_SIZE bytes of the MAC of t with the label "simwir" in
 * place of the role, so both sides derive it and neither sends it on the
 * control connection. Returns as rn_proto_proof().
 */
int rn_proto_wire_token(const uint8_t *key, size_t key_len,
			const struct rn_proto_transcript *t,
			uint8_t token[RN_PROTO_TOKEN_SIZE]);
/* Fill nonce with RN_PROTO_NONCE_SIZE random bytes: 0 or -EIO. */
int rn_proto_nonce(uint8_t nonce[RN_PROTO_NONCE_SIZE]);

const char *rn_proto_type_name(uint8_t type);
const char *rn_proto_refusal_name(uint16_t code);

#endif /* RN_PROTO_H */
