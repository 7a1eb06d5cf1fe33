/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire between sim device contexts: TCP, so it crosses processes and
 * network namespaces. One connection carries the frames of every QP between
 * two contexts; a connection opened by one side is used by both (the caller
 * says who it is in a HELLO frame). Everything is non-blocking and driven
 * from sim progress: the lcore never waits on a socket.
 *
 * Fault injection keys on the remote context's address: a cut drops every
 * frame to or from it and closes its connections; a delay holds frames back.
 *
 * Anyone can connect to the listener, so what an inbound connection may
 * cost is bounded before it is trusted (docs/nic.md, "Limits of the
 * wire"): its first frame must be a HELLO, sent within
 * RN_SIM_WIRE_HELLO_TIMEOUT_MS, that names a device and token one of our
 * connected QPs has (rn_sim.h): the control plane derived the token for
 * that endpoint in its authenticated handshake. No frame may announce more
 * than its type carries (a packet: RN_SIM_MTU), checked on the header
 * before room is made for it; and at most RN_SIM_WIRE_MAX_UNMATCHED
 * connections wait for a QP to take a frame from them, the oldest closed
 * to make room, so strangers cannot keep a real peer out. Each connection
 * has its own buffers: one that stops in the middle of a frame stalls
 * only itself.
 *
 * Wires are told apart by device and token (struct sim_addr): an
 * endpoint's QPs share theirs, and no other endpoint's frames travel on
 * it. Where we connect to is the QP's peer address, which the control
 * plane takes from the peer's control connection, not from what the peer
 * said.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/tcp.h>
#include <rte_log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sim_pvt.h"

#define RX_CHUNK 65536
/* Packets of a message one read places where they go, beyond the one it
 * completes (read_direct()): each a header and a payload iovec. */
#define RX_PREDICT 63
#define RX_PREDICT_BYTES (RX_PREDICT * SIM_FRAME_MAX)
/* Unparsed bytes a known connection may hold: frames are small (a packet),
 * but reads of many at once keep bulk transfers to few system calls. */
#define RX_MAX RTE_MAX(SIM_FRAME_MAX, (size_t)RX_CHUNK)
/* The buffer of a connection that reads packets to their place (only
 * one a connected QP takes them from): room for what the predicted ones
 * would be if they are not. */
#define RX_DIRECT_MAX (RX_PREDICT_BYTES + sizeof(struct sim_frame_hdr))
/* Payloads smaller than this are not read to their place. */
#define RX_PLACE_MIN 1024
#define EPOLL_BATCH 32
/* Payloads of at least this many bytes are not copied into the tx buffer
 * as they are queued: transmit sends them from where they lie (sendmsg
 * with iovecs), this turn or a later one: registered memory stays until
 * it is deregistered, which copies what is still queued of it
 * (rn_sim_wire_unlend()). */
#define TX_DIRECT_MIN 1024
/* Segments one sendmsg takes (UIO_MAXIOV): a header and a payload per
 * frame, so 512 frames, 2 MiB of packets. The socket takes what it has
 * room for in one call, where 64 took a tenth of it and made a two-process
 * transfer twice as slow (docs/performance.md). On the stack: 16 KiB. */
#define TX_IOV_MAX 1024
/* The tx buffer is compacted once past this and mostly sent. */
#define TX_COMPACT_MIN (1u << 20)
#define HELLO_TIMEOUT_NS (RN_SIM_WIRE_HELLO_TIMEOUT_MS * 1000000ull)
#define SWEEP_EVERY_NS (RN_SIM_WIRE_SWEEP_MS * 1000000ull)
#define STALE_GRACE_NS HELLO_TIMEOUT_NS
#define REFUSAL_LOG_EVERY_NS (1000000000ull / RN_SIM_WIRE_REFUSALS_LOGGED_PER_S)

RTE_LOG_REGISTER_SUFFIX(rn_sim_logtype, sim, INFO);

/*
 * An inbound connection is accepted (WAIT_HELLO), says who calls with its
 * HELLO (UNMATCHED), and is matched once a QP takes one of its frames as
 * its peer's. Only matched ones are kept without limit. A connection we
 * open is matched from the start.
 */
enum sim_wire_state {
	SIM_WIRE_WAIT_HELLO,
	SIM_WIRE_UNMATCHED,
	SIM_WIRE_MATCHED,
};

struct delayed_frame {
	uint64_t due_ns;
	size_t len;
	struct delayed_frame *next;
	uint8_t bytes[];
};

struct sim_wire {
	int fd;
	bool outbound;            /* we connected it */
	bool dead;                /* closed: freed at the end of progress */
	/* Its socket took less than it was offered: nothing is offered
	 * again until epoll says it has room (EPOLLOUT, asked for meanwhile
	 * only). */
	bool tx_full;
	enum sim_wire_state state;
	uint64_t accepted_ns;     /* inbound: HELLO deadline, eviction order */
	uint64_t stale_ns;        /* inbound: since when no connected QP has
				   * its token (0: one has) */
	struct sim_addr remote;   /* from the HELLO, or whom we called */
	uint8_t *rx;
	size_t rx_len, rx_cap;
	/* A frame whose payload is read straight to its place (rx empty
	 * meanwhile): its header, where it goes, and the bytes in. */
	bool direct;
	enum { SINK_NO, SINK_DELIVER, SINK_DROP } dsink;   /* see read_direct() */
	struct sim_frame_hdr dh;
	struct sim_place dp;
	uint32_t dhave;
	struct sim_frame_hdr phdr[RX_PREDICT];   /* predicted packets' */
	uint8_t *tx;
	size_t tx_off, tx_len, tx_cap;
	/* The unsent frames in order, when some payloads are sent from
	 * where they lie: tx buffer ranges (ext NULL, at off) and those
	 * payloads (ext). Empty: everything is in tx[tx_off..tx_len). */
	struct tx_seg {
		const uint8_t *ext;
		size_t off, len;
	} *seg;
	size_t seg_n, seg_cap;
	size_t seg_bytes;         /* what the segments hold */
	struct delayed_frame *delayed, *delayed_tail;
	struct sim_wire *next;
};

void
rn_sim_addr_from_nic(const struct rn_nic_addr *in, struct sim_addr *out)
{
	memcpy(&out->ip, &in->gid[12], sizeof(out->ip));
	out->port = in->lid;
	memcpy(out->token, in->token, sizeof(out->token));
}

/* The same device, whatever the token: faults are per device. */
static bool
same_device(const struct sim_addr *a, const struct sim_addr *b)
{
	return a->ip == b->ip && a->port == b->port;
}

/* Is a QP of ours connected to remote (device and token)? O(QPs). */
static bool
qp_connected_to(const struct sim_ctx *ctx, const struct sim_addr *remote)
{
	for (const struct sim_qp *q = ctx->live; q != NULL; q = q->next)
		if ((q->state == RN_QP_RTR || q->state == RN_QP_RTS) &&
		    rn_sim_addr_equal(&q->remote, remote))
			return true;
	return false;
}

/* One line about a refused inbound connection, at most
 * RN_SIM_WIRE_REFUSALS_LOGGED_PER_S a second: strangers choose how often. */
static void
log_refusal(struct sim_ctx *ctx, const struct sim_wire *w, const char *why)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	char host[INET_ADDRSTRLEN] = "?", more[48] = "";

	if (ctx->now_ns < ctx->refusal_log_ns) {
		ctx->refusals_unlogged++;
		return;
	}
	ctx->refusal_log_ns = ctx->now_ns + REFUSAL_LOG_EVERY_NS;
	if (ctx->refusals_unlogged != 0)
		snprintf(more, sizeof(more), " [and %" PRIu64 " more not "
			 "logged]", ctx->refusals_unlogged);
	ctx->refusals_unlogged = 0;
	if (getpeername(w->fd, (struct sockaddr *)&sa, &len) == 0 &&
	    sa.sin_family == AF_INET)
		inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	rte_log(RTE_LOG_NOTICE, rn_sim_logtype, "rnotify.sim: wire connection "
		"from %s port %u refused: %s%s\n", host,
		sa.sin_family == AF_INET ? ntohs(sa.sin_port) : 0, why, more);
}

const struct sim_addr *
rn_sim_wire_remote(const struct sim_wire *wire)
{
	return wire->state != SIM_WIRE_WAIT_HELLO ? &wire->remote : NULL;
}

static struct sim_fault *
fault_find(struct sim_ctx *ctx, const struct sim_addr *a)
{
	for (struct sim_fault *f = ctx->faults; f != NULL; f = f->next)
		if (same_device(&f->addr, a))
			return f;
	return NULL;
}

static void
wire_kill(struct sim_ctx *ctx, struct sim_wire *w)
{
	if (w->dead)
		return;
	epoll_ctl(ctx->epoll_fd, EPOLL_CTL_DEL, w->fd, NULL);
	close(w->fd);
	w->dead = true;
}

/*
 * Its socket is full (a send took less than it was offered): wait for
 * room, by epoll, which then wakes a sleeping lcore too. Until then a
 * turn offers it nothing: a send that the kernel refuses still copies
 * its 1,024 iovecs in first, every turn of a busy loop. Or it has room
 * again: EPOLLIN alone, so that a wire with room does not keep epoll
 * ready. Should epoll refuse, the wire is offered its bytes every turn,
 * as before.
 */
static void
wire_watch_room(struct sim_ctx *ctx, struct sim_wire *w, bool full)
{
	struct epoll_event ev = {
		.events = EPOLLIN | (full ? EPOLLOUT : 0),
		.data.ptr = w,
	};

	if (w->tx_full == full)
		return;
	if (epoll_ctl(ctx->epoll_fd, EPOLL_CTL_MOD, w->fd, &ev) != 0)
		return;
	w->tx_full = full;
	ctx->stats.tx_full += full;
}

static void
wire_free(struct sim_wire *w)
{
	while (w->delayed != NULL) {
		struct delayed_frame *f = w->delayed;

		w->delayed = f->next;
		free(f);
	}
	free(w->rx);
	free(w->tx);
	free(w->seg);
	free(w);
}

static struct sim_wire *
wire_add(struct sim_ctx *ctx, int fd)
{
	struct sim_wire *w = calloc(1, sizeof(*w));
	struct epoll_event ev = { .events = EPOLLIN };
	int one = 1;

	if (w == NULL) {
		close(fd);
		return NULL;
	}
	w->fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ev.data.ptr = w;
	if (epoll_ctl(ctx->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		close(fd);
		free(w);
		return NULL;
	}
	w->next = ctx->wires;
	ctx->wires = w;
	return w;
}

static int
buf_reserve(uint8_t **buf, size_t *cap, size_t need)
{
	size_t n = *cap == 0 ? 4096 : *cap;
	uint8_t *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*buf, n);
	if (p == NULL)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

/* Room for n more segments. */
static int
seg_reserve(struct sim_wire *w, size_t n)
{
	struct tx_seg *p;
	size_t cap = w->seg_cap == 0 ? 64 : w->seg_cap;

	if (w->seg_n + n <= w->seg_cap)
		return 0;
	while (cap < w->seg_n + n)
		cap *= 2;
	p = realloc(w->seg, cap * sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	w->seg = p;
	w->seg_cap = cap;
	return 0;
}

/* The tx buffer's bytes from off to its end are a segment (the last one
 * grown when it ends there). Room reserved by the caller. */
static void
seg_tx(struct sim_wire *w, size_t off)
{
	struct tx_seg *last = w->seg_n > 0 ? &w->seg[w->seg_n - 1] : NULL;

	if (off == w->tx_len)
		return;
	w->seg_bytes += w->tx_len - off;
	if (last != NULL && last->ext == NULL && last->off + last->len == off)
		last->len += w->tx_len - off;
	else
		w->seg[w->seg_n++] = (struct tx_seg){ .off = off,
						      .len = w->tx_len - off };
}

/* Copy a frame (a, then b) into the tx buffer. Returns 0, or -ENOMEM:
 * the frame is lost, retries recover. */
static int
tx_append(struct sim_wire *w, const void *a, size_t alen, const void *b,
	  size_t blen)
{
	size_t off;

	if (w->seg_n == 0 && w->tx_off > 0 && w->tx_off == w->tx_len)
		w->tx_off = w->tx_len = 0;
	/* Sent bytes at the front, at least as many as remain: reuse their
	 * room rather than grow (a realloc copies everything). Not while
	 * segments name offsets. */
	if (w->seg_n == 0 && w->tx_off > 0 &&
	    w->tx_off >= w->tx_len - w->tx_off &&
	    w->tx_len + alen + blen > w->tx_cap) {
		memmove(w->tx, w->tx + w->tx_off, w->tx_len - w->tx_off);
		w->tx_len -= w->tx_off;
		w->tx_off = 0;
	}
	if (buf_reserve(&w->tx, &w->tx_cap, w->tx_len + alen + blen) != 0 ||
	    (w->seg_n > 0 && seg_reserve(w, 1) != 0))
		return -ENOMEM;
	off = w->tx_len;
	memcpy(w->tx + w->tx_len, a, alen);
	if (blen > 0)
		memcpy(w->tx + w->tx_len + alen, b, blen);
	w->tx_len += alen + blen;
	if (w->seg_n > 0)
		seg_tx(w, off);
	return 0;
}

/* A frame whose payload is sent from where it lies, this turn: its
 * header into the tx buffer, the payload a segment of its own. */
static void
tx_direct(struct sim_wire *w, const struct sim_frame_hdr *h,
	  const void *payload, size_t plen)
{
	size_t off;

	if (w->seg_n == 0 && w->tx_off == w->tx_len)
		w->tx_off = w->tx_len = 0;
	if (seg_reserve(w, 3) != 0 ||
	    buf_reserve(&w->tx, &w->tx_cap, w->tx_len + sizeof(*h)) != 0) {
		tx_append(w, h, sizeof(*h), payload, plen);
		return;
	}
	if (w->seg_n == 0)   /* what earlier turns left comes first */
		seg_tx(w, w->tx_off);
	off = w->tx_len;
	memcpy(w->tx + off, h, sizeof(*h));
	w->tx_len += sizeof(*h);
	seg_tx(w, off);
	w->seg[w->seg_n++] = (struct tx_seg){ .ext = payload, .len = plen };
	w->seg_bytes += plen;
}

/* Bytes queued on w and not yet taken by its socket (delayed frames
 * aside). */
static size_t
wire_unsent(const struct sim_wire *w)
{
	return w->seg_n > 0 ? w->seg_bytes : w->tx_len - w->tx_off;
}

static void
queue_frame(struct sim_ctx *ctx, struct sim_wire *w,
	    const struct sim_frame_hdr *h, const void *payload, bool lent)
{
	struct sim_fault *fault = fault_find(ctx, &w->remote);
	size_t plen = payload != NULL ? h->length : 0;
	struct delayed_frame *f;

	ctx->stats.frames_sent++;
	if (lent && (fault == NULL || fault->delay_ns == 0) &&
	    plen >= TX_DIRECT_MIN) {
		tx_direct(w, h, payload, plen);
		return;
	}
	if (fault == NULL || fault->delay_ns == 0) {
		tx_append(w, h, sizeof(*h), payload, plen);
		return;
	}
	f = malloc(sizeof(*f) + sizeof(*h) + plen);
	if (f == NULL)
		return;
	f->due_ns = ctx->now_ns + fault->delay_ns;
	f->len = sizeof(*h) + plen;
	f->next = NULL;
	memcpy(f->bytes, h, sizeof(*h));
	if (plen > 0)
		memcpy(f->bytes + sizeof(*h), payload, plen);
	if (w->delayed_tail != NULL)
		w->delayed_tail->next = f;
	else
		w->delayed = f;
	w->delayed_tail = f;
}

static struct sim_wire *
wire_connect(struct sim_ctx *ctx, const struct sim_addr *remote)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(remote->port),
		.sin_addr.s_addr = remote->ip,
	};
	struct sim_frame_hello hello = { .ip = ctx->self.ip,
					 .port = ctx->self.port };
	struct sim_frame_hdr h = { .length = sizeof(hello),
				   .type = SIM_FRAME_HELLO };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sim_wire *w;

	if (fd < 0)
		return NULL;
	memcpy(hello.token, remote->token, sizeof(hello.token));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		return NULL;
	}
	w = wire_add(ctx, fd);
	if (w == NULL)
		return NULL;
	w->state = SIM_WIRE_MATCHED;
	w->outbound = true;
	w->remote = *remote;
	tx_append(w, &h, sizeof(h), &hello, sizeof(hello));
	return w;
}

/* The wire frames to remote go on, or NULL. Our own connection first,
 * always the same one: frames of a QP must not switch wires and overtake
 * each other. Else one the remote opened, once matched: a HELLO alone
 * proves nothing. */
static struct sim_wire *
wire_find(struct sim_ctx *ctx, const struct sim_addr *remote)
{
	struct sim_wire *w, *any = NULL;

	for (w = ctx->wires; w != NULL; w = w->next) {
		if (w->dead || w->state != SIM_WIRE_MATCHED ||
		    !rn_sim_addr_equal(&w->remote, remote))
			continue;
		if (w->outbound)
			return w;
		if (any == NULL)
			any = w;
	}
	return any;
}

static void
wire_send(struct sim_ctx *ctx, const struct sim_addr *remote,
	  const struct sim_frame_hdr *h, const void *payload, bool lent)
{
	struct sim_fault *fault = fault_find(ctx, remote);
	struct sim_wire *w;

	if (fault != NULL && fault->cut)
		return;
	w = wire_find(ctx, remote);
	if (w == NULL)
		w = wire_connect(ctx, remote);
	if (w != NULL)
		queue_frame(ctx, w, h, payload, lent);
}

size_t
rn_sim_wire_backlog(struct sim_ctx *ctx, const struct sim_addr *remote)
{
	const struct sim_wire *w = wire_find(ctx, remote);

	return w != NULL ? wire_unsent(w) : 0;
}

size_t
rn_sim_wire_queued(const struct sim_wire *wire)
{
	return wire_unsent(wire);
}

bool
rn_sim_wire_live(struct sim_ctx *ctx, const struct sim_wire *wire)
{
	for (const struct sim_wire *w = ctx->wires; w != NULL; w = w->next)
		if (w == wire)
			return !w->dead;
	return false;
}

void
rn_sim_wire_send(struct sim_ctx *ctx, const struct sim_addr *remote,
		 const struct sim_frame_hdr *h, const void *payload)
{
	wire_send(ctx, remote, h, payload, false);
}

void
rn_sim_wire_send_lent(struct sim_ctx *ctx, const struct sim_addr *remote,
		      const struct sim_frame_hdr *h, const void *payload)
{
	wire_send(ctx, remote, h, payload, true);
}

void
rn_sim_wire_reply(struct sim_ctx *ctx, struct sim_wire *wire,
		  const struct sim_frame_hdr *h, const void *payload)
{
	struct sim_fault *fault = fault_find(ctx, &wire->remote);

	if (fault != NULL && fault->cut)
		return;
	if (!wire->dead)
		queue_frame(ctx, wire, h, payload, true);
	else
		wire_send(ctx, &wire->remote, h, payload, true);
}

/*
 * The one place a connection's first frame is believed: from here on the
 * connection is known by the device and token its HELLO names, and only
 * if a connected QP of ours has that peer and that token. The token is the
 * proof: the control plane derived it in a handshake whose proofs
 * checked, and nobody else knows it (docs/security.md). The framing was
 * checked already (frame_refused()). Returns 0, or a negative errno: the
 * connection closes.
 */
static int
wire_accept_hello(struct sim_ctx *ctx, struct sim_wire *w,
		  const uint8_t *payload)
{
	struct sim_frame_hello hello;
	struct sim_addr remote;
	struct sim_fault *fault;

	memcpy(&hello, payload, sizeof(hello));
	remote.ip = hello.ip;
	remote.port = hello.port;
	memcpy(remote.token, hello.token, sizeof(remote.token));
	fault = fault_find(ctx, &remote);
	if (fault != NULL && fault->cut)
		return -ECONNREFUSED;
	if (!qp_connected_to(ctx, &remote)) {
		ctx->stats.wires_bad_token++;
		log_refusal(ctx, w, "its HELLO names no endpoint of ours (a "
			    "wrong token, or a device we are not connected to)");
		return -EACCES;
	}
	w->remote = remote;
	w->state = SIM_WIRE_UNMATCHED;
	return 0;
}

static void
dispatch(struct sim_ctx *ctx, struct sim_wire *w, const struct sim_frame_hdr *h,
	 const uint8_t *payload, const struct sim_rx_ops *rx)
{
	ctx->stats.frames_received++;
	if (h->type == SIM_FRAME_HELLO) {
		if (wire_accept_hello(ctx, w, payload) != 0)
			wire_kill(ctx, w);
		return;
	}
	if (rx->deliver(ctx, w, h, payload))
		w->state = SIM_WIRE_MATCHED;
}

/* The most payload a frame of type may carry: a packet of the path MTU
 * for those that carry data, nothing for acknowledgements. */
static uint32_t
frame_payload_max(uint8_t type)
{
	switch (type) {
	case SIM_FRAME_HELLO:
		return sizeof(struct sim_frame_hello);
	case SIM_FRAME_REQUEST:
	case SIM_FRAME_READ_RESP:
		return RN_SIM_MTU;   /* a packet of the path MTU */
	default:
		return 0;
	}
}

/*
 * May w send the frame h heads? Decided on the header alone, before its
 * payload is read or room made for it: the first frame is a HELLO of its
 * exact size and only the first; none announces more than its type
 * carries (a packet of the path MTU at most).
 */
static bool
frame_refused(struct sim_ctx *ctx, const struct sim_wire *w,
	      const struct sim_frame_hdr *h)
{
	bool first = w->state == SIM_WIRE_WAIT_HELLO;

	if (first != (h->type == SIM_FRAME_HELLO) ||
	    (first && h->length != sizeof(struct sim_frame_hello))) {
		ctx->stats.wires_bad_hello++;
		if (!w->outbound)
			log_refusal(ctx, w, "its first frame is not a HELLO");
		return true;
	}
	if (h->type < SIM_FRAME_HELLO || h->type > SIM_FRAME_NAK ||
	    h->length > frame_payload_max(h->type)) {
		ctx->stats.wires_oversize++;
		if (!w->outbound)
			log_refusal(ctx, w, "a frame larger than its type "
				    "carries");
		return true;
	}
	return false;
}

/*
 * Dispatch every whole frame in w's buffer. Returns false when a header is
 * refused: the connection must close.
 */
static bool
wire_parse(struct sim_ctx *ctx, struct sim_wire *w, const struct sim_rx_ops *rx,
	   unsigned int *frames)
{
	bool ok = true;
	size_t off = 0;

	while (!w->dead && w->rx_len - off >= sizeof(struct sim_frame_hdr)) {
		struct sim_frame_hdr h;

		memcpy(&h, w->rx + off, sizeof(h));
		if (frame_refused(ctx, w, &h)) {
			ok = false;
			break;
		}
		if (w->rx_len - off < sizeof(h) + h.length)
			break;
		dispatch(ctx, w, &h, w->rx + off + sizeof(h), rx);
		off += sizeof(h) + h.length;
		(*frames)++;
	}
	memmove(w->rx, w->rx + off, w->rx_len - off);
	w->rx_len -= off;
	return ok;
}

/* Room to read into, up to what w may hold unparsed: a HELLO before it is
 * known, RX_MAX after. A whole frame always fits, so a full buffer starts
 * with one, and parsing it makes room. */
static int
rx_reserve(struct sim_wire *w)
{
	size_t limit = w->state == SIM_WIRE_WAIT_HELLO ? SIM_FRAME_HELLO_SIZE :
							  RX_MAX;
	size_t want = RTE_MIN(w->rx_len + RX_CHUNK, limit);
	uint8_t *p;
	size_t n;

	if (w->rx_cap >= want)
		return 0;
	n = RTE_MIN(RTE_MAX(2 * w->rx_cap, want), limit);
	p = realloc(w->rx, n);
	if (p == NULL)
		return -ENOMEM;
	w->rx = p;
	w->rx_cap = n;
	return 0;
}

/*
 * rx holds the start of a frame, its header whole: if it is a data frame
 * whose payload the device places in one piece, copy what came of it
 * there and read the rest straight to it (read_direct()).
 */
static void
try_direct(struct sim_ctx *ctx, struct sim_wire *w, const struct sim_rx_ops *rx)
{
	struct sim_frame_hdr h;

	if (w->rx_len < sizeof(h))
		return;
	memcpy(&h, w->rx, sizeof(h));
	if ((h.type != SIM_FRAME_REQUEST && h.type != SIM_FRAME_READ_RESP) ||
	    h.length < RX_PLACE_MIN || w->rx_len - sizeof(h) >= h.length ||
	    !rx->place(ctx, w, &h, &w->dp) || w->dp.span < h.length)
		return;
	if (w->rx_cap < RX_DIRECT_MAX) {
		uint8_t *p = realloc(w->rx, RX_DIRECT_MAX);

		if (p == NULL)
			return;
		w->rx = p;
		w->rx_cap = RX_DIRECT_MAX;
	}
	w->dhave = (uint32_t)(w->rx_len - sizeof(h));
	memcpy(w->dp.dst, w->rx + sizeof(h), w->dhave);
	w->dh = h;
	w->rx_len = 0;
	w->direct = true;
	w->dsink = SINK_NO;
}

/* Bytes of iov[from..to) that n received bytes, from iov[from] on,
 * filled, appended to rx in order (a prediction that failed: they are
 * frames to parse). */
static void
rx_append_iov(struct sim_wire *w, const struct iovec *iov, unsigned int from,
	      unsigned int to, size_t n)
{
	for (unsigned int i = from; i < to && n > 0; i++) {
		size_t take = RTE_MIN(n, iov[i].iov_len);

		memcpy(w->rx + w->rx_len, iov[i].iov_base, take);
		w->rx_len += take;
		n -= take;
	}
}

/*
 * Read the direct frame's payload to its place, and with it the packets
 * its message has next, predicted: header k (PSN + k, the same message)
 * into phdr, its payload to dst + k * mtu, within span, where its
 * delivery would place it; then the header that follows into rx. A
 * prediction that fails (another frame came between) moves that frame and
 * all after it into rx, and its payload bytes left in the message's
 * memory are written over when the real packet comes, as any unfinished
 * message's bytes are undefined until it completes.
 * Before each read the frame's place is asked again. Where it has none
 * any more (its region deregistered, its QP reset since), the rest is read
 * into rx and the frame delivered from there, to be refused as it would
 * have been: its bytes before went where it was, which no longer takes
 * them. Where it has another (not known to happen), it is dropped, for
 * the requester's retries. Returns the bytes read, 0 at end of stream,
 * -1 when the socket has nothing (or failed: errno); *asked, the bytes
 * it asked the socket for.
 */
static ssize_t
read_direct(struct sim_ctx *ctx, struct sim_wire *w,
	    const struct sim_rx_ops *rx, unsigned int *frames, size_t *asked)
{
	struct iovec iov[2 + 2 * RX_PREDICT];
	struct msghdr msg = { .msg_iov = iov };
	const struct sim_frame_hdr h0 = w->dh;
	const struct sim_place p0 = w->dp;
	uint32_t need = h0.length - w->dhave, predicted = 0;
	struct sim_place now;
	bool keep;
	size_t left, tail;
	ssize_t n;

	keep = w->dsink == SINK_NO && rx->place(ctx, w, &h0, &now);
	if (w->dsink == SINK_NO && !keep)
		w->dsink = SINK_DELIVER;
	else if (keep && now.dst != p0.dst)
		w->dsink = SINK_DROP;
	if (w->dsink != SINK_NO) {
		/* rx holds a whole payload (RX_DIRECT_MAX); the part read
		 * before is not in it, which a refused frame does not need. */
		*asked = need;
		ctx->stats.rx_calls++;
		n = recv(w->fd, w->rx + w->dhave, need, MSG_DONTWAIT);
		if (n <= 0)
			return n;
		w->dhave += (uint32_t)n;
		if (w->dhave < h0.length)
			return n;
		w->direct = false;
		if (w->dsink == SINK_DELIVER) {
			dispatch(ctx, w, &h0, w->rx, rx);
			(*frames)++;
		} else {
			ctx->stats.dropped_place_changed++;
		}
		return n;
	}
	iov[msg.msg_iovlen++] = (struct iovec){ p0.dst + w->dhave, need };
	if (h0.length == p0.mtu) {
		for (uint32_t k = 1; k <= RX_PREDICT && (uint64_t)k * p0.mtu <
		     p0.span; k++) {
			uint32_t len = RTE_MIN(p0.mtu, p0.span - k * p0.mtu);

			iov[msg.msg_iovlen++] = (struct iovec){
				&w->phdr[k - 1], sizeof(h0) };
			iov[msg.msg_iovlen++] = (struct iovec){
				p0.dst + (size_t)k * p0.mtu, len };
			predicted++;
		}
	}
	/* Then the next frame's header alone: its payload too may go to
	 * its place (try_direct()). */
	tail = msg.msg_iovlen;
	iov[msg.msg_iovlen++] = (struct iovec){ w->rx,
						sizeof(struct sim_frame_hdr) };
	*asked = 0;
	for (size_t i = 0; i < msg.msg_iovlen; i++)
		*asked += iov[i].iov_len;
	ctx->stats.rx_calls++;
	n = recvmsg(w->fd, &msg, MSG_DONTWAIT);
	if (n <= 0)
		return n;
	left = (size_t)n;
	if (left < need) {
		w->dhave += (uint32_t)left;
		return n;
	}
	left -= need;
	w->direct = false;
	ctx->stats.rx_placed++;
	dispatch(ctx, w, &h0, p0.dst, rx);
	(*frames)++;
	for (uint32_t k = 1; k <= predicted && left > 0; k++) {
		struct sim_frame_hdr expect = h0;
		size_t got;

		expect.psn = (h0.psn + k) & 0xffffff;
		expect.length = RTE_MIN(p0.mtu, p0.span - k * p0.mtu);
		if (w->dead || left < sizeof(expect) ||
		    memcmp(&w->phdr[k - 1], &expect, sizeof(expect)) != 0) {
			/* Not the packet predicted: from its header on,
			 * everything is frames to parse. The tail's bytes
			 * go behind what comes before them. */
			size_t before = 0, tail_n;

			ctx->stats.rx_mispredicted++;
			for (unsigned int i = 2 * k - 1; i < tail; i++)
				before += iov[i].iov_len;
			tail_n = left > before ? left - before : 0;
			memmove(w->rx + left - tail_n, w->rx, tail_n);
			w->rx_len = 0;
			rx_append_iov(w, iov, 2 * k - 1, tail, left - tail_n);
			w->rx_len += tail_n;
			return n;
		}
		left -= sizeof(expect);
		got = RTE_MIN(left, (size_t)expect.length);
		left -= got;
		if (got < expect.length) {   /* the rest on the next read */
			w->dh = expect;
			w->dp = (struct sim_place){
				p0.dst + (size_t)k * p0.mtu,
				p0.span - k * p0.mtu, p0.mtu };
			w->dhave = (uint32_t)got;
			w->direct = true;
			return n;
		}
		ctx->stats.rx_placed++;
		dispatch(ctx, w, &expect, p0.dst + (size_t)k * p0.mtu, rx);
		(*frames)++;
	}
	w->rx_len = left;   /* what came after the predicted packets */
	return n;
}

/*
 * Read what the socket has and dispatch every whole frame. A read that
 * got less than it asked for emptied the socket: no further read (one
 * more system call, to be told EAGAIN) this turn; epoll, level-triggered,
 * reports what comes next.
 */
static unsigned int
wire_read(struct sim_ctx *ctx, struct sim_wire *w, const struct sim_rx_ops *rx)
{
	unsigned int frames = 0;
	bool closed = false, drained = false;

	while (!closed && !drained && !w->dead) {
		size_t asked = 0;
		ssize_t n;

		if (w->direct) {
			n = read_direct(ctx, w, rx, &frames, &asked);
		} else {
			/* Out of memory: epoll is level-triggered, read
			 * later. No more than RX_MAX unparsed, even in a
			 * buffer grown for direct reads. */
			size_t lim;

			if (rx_reserve(w) != 0)
				break;
			lim = RTE_MIN(w->rx_cap, RX_MAX);
			if (w->rx_len >= lim)
				break;
			asked = lim - w->rx_len;
			ctx->stats.rx_calls++;
			n = recv(w->fd, w->rx + w->rx_len, asked, MSG_DONTWAIT);
			if (n > 0)
				w->rx_len += (size_t)n;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n == 0 || n < 0)
			closed = true;
		drained = n > 0 && (size_t)n < asked;
		/* Frames that arrived before the peer closed still count. */
		if (!w->direct && !wire_parse(ctx, w, rx, &frames))
			closed = true;
		if (!closed && !w->direct && !w->dead &&
		    w->state != SIM_WIRE_WAIT_HELLO)
			try_direct(ctx, w, rx);
	}
	if (closed)
		wire_kill(ctx, w);
	return frames;
}

/* Close the oldest inbound connection no QP has taken a frame from, when
 * there are at least max of them (max 0: any). Returns whether it did. */
static bool
evict_unmatched(struct sim_ctx *ctx, unsigned int max)
{
	struct sim_wire *oldest = NULL;
	unsigned int n = 0;

	/* New wires go in front: on a tie in time, the later one is older. */
	for (struct sim_wire *w = ctx->wires; w != NULL; w = w->next) {
		if (w->dead || w->outbound || w->state == SIM_WIRE_MATCHED)
			continue;
		n++;
		if (oldest == NULL || w->accepted_ns <= oldest->accepted_ns)
			oldest = w;
	}
	if (oldest == NULL || n < max)
		return false;
	ctx->stats.wires_evicted++;
	wire_kill(ctx, oldest);
	return true;
}

static void
accept_all(struct sim_ctx *ctx, const struct sim_rx_ops *rx)
{
	for (;;) {
		int fd = accept4(ctx->listen_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct sim_wire *w;

		/* Out of descriptors: a stranger's makes room for this one. */
		if (fd < 0 && (errno == EMFILE || errno == ENFILE) &&
		    evict_unmatched(ctx, 0))
			continue;
		if (fd < 0)
			return;
		evict_unmatched(ctx, RN_SIM_WIRE_MAX_UNMATCHED);
		w = wire_add(ctx, fd);
		if (w == NULL)
			continue;
		w->accepted_ns = ctx->now_ns;
		/* A caller sends its HELLO with its first frame: often both
		 * are in already. */
		wire_read(ctx, w, rx);
	}
}

/*
 * Is w's endpoint gone: no QP of ours connected with its token? Ours are
 * closed at once (the other side sees the end of the stream and closes
 * its own); one the peer opened after STALE_GRACE_NS, time for the peer
 * to close it first and for a QP of ours to be connected again.
 */
static bool
wire_stale(struct sim_ctx *ctx, struct sim_wire *w)
{
	if (qp_connected_to(ctx, &w->remote)) {
		w->stale_ns = 0;
		return false;
	}
	if (w->outbound)
		return true;
	if (w->stale_ns == 0)
		w->stale_ns = ctx->now_ns;
	return ctx->now_ns - w->stale_ns >= STALE_GRACE_NS;
}

/* Close the connections that sent no HELLO in time, and those whose
 * endpoint has no connected QP left. O(wires x QPs): run at most every
 * SWEEP_EVERY_NS. */
static void
sweep_wires(struct sim_ctx *ctx)
{
	if (ctx->now_ns < ctx->wire_sweep_ns)
		return;
	ctx->wire_sweep_ns = ctx->now_ns + SWEEP_EVERY_NS;
	for (struct sim_wire *w = ctx->wires; w != NULL; w = w->next) {
		if (w->dead)
			continue;
		if (w->state != SIM_WIRE_WAIT_HELLO) {
			if (wire_stale(ctx, w)) {
				ctx->stats.wires_stale++;
				wire_kill(ctx, w);
			}
			continue;
		}
		if (ctx->now_ns - w->accepted_ns < HELLO_TIMEOUT_NS)
			continue;
		ctx->stats.wires_hello_timeout++;
		log_refusal(ctx, w, "no HELLO in time");
		wire_kill(ctx, w);
	}
}

unsigned int
rn_sim_wire_receive(struct sim_ctx *ctx, const struct sim_rx_ops *rx)
{
	struct epoll_event events[EPOLL_BATCH];
	unsigned int work = 0;
	int n = epoll_wait(ctx->epoll_fd, events, EPOLL_BATCH, 0);

	for (int i = 0; i < n; i++) {
		struct sim_wire *w = events[i].data.ptr;

		if (w == NULL) {
			accept_all(ctx, rx);
			continue;
		}
		if (!w->dead && (events[i].events & EPOLLOUT))
			wire_watch_room(ctx, w, false);
		if (!w->dead && (events[i].events & ~(uint32_t)EPOLLOUT))
			work += wire_read(ctx, w, rx);
	}
	sweep_wires(ctx);
	return work;
}

/*
 * The tx buffer's bytes before the first a segment still names are sent:
 * once they are most of it, move the rest down (segments name offsets).
 * A wire that stays busy for long would otherwise grow it without end.
 */
static void
tx_compact(struct sim_wire *w)
{
	size_t low = w->tx_len;

	if (w->tx_len < TX_COMPACT_MIN)
		return;
	for (size_t i = 0; i < w->seg_n; i++)
		if (w->seg[i].ext == NULL && w->seg[i].off < low)
			low = w->seg[i].off;
	if (low < w->tx_len / 2)
		return;
	memmove(w->tx, w->tx + low, w->tx_len - low);
	w->tx_len -= low;
	for (size_t i = 0; i < w->seg_n; i++)
		if (w->seg[i].ext == NULL)
			w->seg[i].off -= low;
}

/*
 * Send the segments with sendmsg, from where they lie, until the socket
 * takes no more; what it did not take stays queued, in order, for the
 * next turn. Returns false when the connection failed.
 */
static bool
write_segments(struct sim_ctx *ctx, struct sim_wire *w)
{
	size_t first = 0, skip = 0;
	bool ok = true;

	while (first < w->seg_n) {
		struct iovec iov[TX_IOV_MAX];
		struct msghdr msg = { .msg_iov = iov };
		size_t asked = 0;
		ssize_t n;

		for (size_t i = first; i < w->seg_n && msg.msg_iovlen < TX_IOV_MAX;
		     i++) {
			const struct tx_seg *g = &w->seg[i];
			const uint8_t *base = g->ext != NULL ? g->ext :
					      w->tx + g->off;
			size_t cut = i == first ? skip : 0;

			iov[msg.msg_iovlen].iov_base = (void *)(uintptr_t)(base + cut);
			iov[msg.msg_iovlen++].iov_len = g->len - cut;
			asked += g->len - cut;
		}
		ctx->stats.tx_calls++;
		n = sendmsg(w->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ok = errno == EAGAIN;
			if (ok)
				wire_watch_room(ctx, w, true);
			break;
		}
		w->seg_bytes -= (size_t)n;
		for (size_t sent = (size_t)n; sent > 0;) {
			size_t in = w->seg[first].len - skip;

			if (sent < in) {
				skip += sent;
				break;
			}
			sent -= in;
			first++;
			skip = 0;
		}
		if ((size_t)n < asked) {   /* the socket is full */
			wire_watch_room(ctx, w, true);
			break;
		}
	}
	if (first < w->seg_n && skip > 0) {
		struct tx_seg *g = &w->seg[first];

		if (g->ext != NULL)
			g->ext += skip;
		else
			g->off += skip;
		g->len -= skip;
	}
	memmove(w->seg, w->seg + first, (w->seg_n - first) * sizeof(*w->seg));
	w->seg_n -= first;
	if (w->seg_n == 0)
		w->tx_off = w->tx_len = w->seg_bytes = 0;
	else
		tx_compact(w);
	return ok;
}

/* Copy the payloads queued by pointer into [base, base + len) into w's
 * tx buffer: that memory is about to go. Returns false when there is no
 * room: the connection must close (bytes lost mid-stream). */
static bool
wire_unlend(struct sim_wire *w, const uint8_t *base, size_t len,
	    uint64_t *unlent)
{
	for (size_t i = 0; i < w->seg_n; i++) {
		struct tx_seg *g = &w->seg[i];

		if (g->ext == NULL || g->ext < base || g->ext >= base + len)
			continue;
		if (buf_reserve(&w->tx, &w->tx_cap, w->tx_len + g->len) != 0)
			return false;
		*unlent += g->len;
		memcpy(w->tx + w->tx_len, g->ext, g->len);
		g->ext = NULL;
		g->off = w->tx_len;
		w->tx_len += g->len;
	}
	return true;
}

void
rn_sim_wire_unlend(struct sim_ctx *ctx, const void *base, size_t len)
{
	for (struct sim_wire *w = ctx->wires; w != NULL; w = w->next)
		if (!w->dead && !wire_unlend(w, base, len,
					     &ctx->stats.tx_unlent))
			wire_kill(ctx, w);
}

static void
wire_write(struct sim_ctx *ctx, struct sim_wire *w)
{
	while (w->delayed != NULL && w->delayed->due_ns <= ctx->now_ns) {
		struct delayed_frame *f = w->delayed;

		tx_append(w, f->bytes, f->len, NULL, 0);
		w->delayed = f->next;
		if (w->delayed == NULL)
			w->delayed_tail = NULL;
		free(f);
	}
	if (w->tx_full)
		return;
	if (w->seg_n > 0) {
		if (!write_segments(ctx, w))
			wire_kill(ctx, w);
		return;
	}
	while (w->tx_off < w->tx_len) {
		size_t asked = w->tx_len - w->tx_off;
		ssize_t n;

		ctx->stats.tx_calls++;
		n = send(w->fd, w->tx + w->tx_off, asked,
			 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* EAGAIN also while a connection is being made:
			 * EPOLLOUT says when it is. */
			if (errno == EAGAIN)
				wire_watch_room(ctx, w, true);
			else
				wire_kill(ctx, w);
			return;
		}
		w->tx_off += (size_t)n;
		if ((size_t)n < asked) {
			wire_watch_room(ctx, w, true);
			return;
		}
	}
}

void
rn_sim_wire_transmit(struct sim_ctx *ctx)
{
	struct sim_wire **link = &ctx->wires;

	while (*link != NULL) {
		struct sim_wire *w = *link;

		if (!w->dead)
			wire_write(ctx, w);
		if (w->dead) {
			*link = w->next;
			wire_free(w);
		} else {
			link = &w->next;
		}
	}
}

int
rn_sim_wire_listen(struct sim_ctx *ctx, const char *address)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	socklen_t len = sizeof(sa);
	int fd;

	if (inet_pton(AF_INET, address, &sa.sin_addr) != 1)
		return -EAFNOSUPPORT;   /* the sim's GIDs are IPv4-mapped */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0 ||
	    epoll_ctl(ctx->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	ctx->listen_fd = fd;
	ctx->self.ip = sa.sin_addr.s_addr;
	ctx->self.port = ntohs(sa.sin_port);
	return 0;
}

void
rn_sim_wire_close_all(struct sim_ctx *ctx)
{
	for (struct sim_wire *w = ctx->wires; w != NULL; w = w->next)
		wire_kill(ctx, w);
	rn_sim_wire_transmit(ctx);
}

/* The fault entry for remote, made on first use. */
static struct sim_fault *
fault_get(struct sim_ctx *ctx, const struct rn_nic_addr *remote)
{
	struct sim_addr a;
	struct sim_fault *f;

	rn_sim_addr_from_nic(remote, &a);
	f = fault_find(ctx, &a);
	if (f == NULL) {
		f = calloc(1, sizeof(*f));
		if (f == NULL)
			return NULL;
		f->addr = a;
		f->next = ctx->faults;
		ctx->faults = f;
	}
	return f;
}

int
rn_sim_wire_cut(struct rn_nic *nic, const struct rn_nic_addr *remote)
{
	struct sim_ctx *ctx = rn_sim_ctx_of(nic);
	struct sim_fault *f = fault_get(ctx, remote);

	if (f == NULL)
		return -ENOMEM;
	f->cut = true;
	for (struct sim_wire *w = ctx->wires; w != NULL; w = w->next)
		if (w->state != SIM_WIRE_WAIT_HELLO &&
		    same_device(&w->remote, &f->addr))
			wire_kill(ctx, w);
	return 0;
}

int
rn_sim_wire_restore(struct rn_nic *nic, const struct rn_nic_addr *remote)
{
	struct sim_fault *f = fault_get(rn_sim_ctx_of(nic), remote);

	if (f == NULL)
		return -ENOMEM;
	f->cut = false;
	return 0;
}

int
rn_sim_wire_delay(struct rn_nic *nic, const struct rn_nic_addr *remote,
		  uint32_t delay_us)
{
	struct sim_fault *f = fault_get(rn_sim_ctx_of(nic), remote);

	if (f == NULL)
		return -ENOMEM;
	f->delay_ns = (uint64_t)delay_us * 1000;
	return 0;
}
