/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Client processes' transfers (lcore_client_xfer.c) on two real lcores, A
 * and B, each a thread running rn_lcore_run() over its own sim device,
 * one endpoint between them with 4 data QPs and a native channel. The
 * test plays the control thread (commands, events) and both clients, by
 * writing their shared regions (rn_client_shm.h) as the library does:
 * alpha, attached at A, submits batches in its batch slots; beta,
 * attached at B, owns the memory they go to or come from and takes its
 * notifications from its deliver ring. Nothing in the engine is faked;
 * the sim NIC moves the bytes over TCP.
 */
#include <inttypes.h>

#include "rn_client_region.h"
#include "rn_lcore_client.h"
#include "rn_lcore_xfer.h"
#include "rn_sim.h"
#include "rn_test_seed.h"
#include "rn_xfer_desc.h"

#define SLOTS 16                  /* notification slots */
#define SLOT_SIZE 256
#include "two_lcores.h"

#define RING 64                   /* client rings */
#define XSLOTS 8                  /* batch slots */
#define XSLOT_SIZE 131072
#define MEM (64u << 20)           /* each client's memory: region 0 is
				   * its first half */
#define CHUNK (1u << 20)          /* RN_XFER_CLIENT_CHUNK */
/* The address both clients know their memory by: not where the test (the
 * daemon) has it, and the same for both, as two processes may. */
#define VA 0x500000000000ull

/* A client: its region, link, memory (at mem here, at VA in the client)
 * and that memory's registration. */
struct tclient {
	struct side *on;
	struct rn_client_link link;
	struct rn_client_region *r;
	uint8_t *mem;
	struct rn_client_reg_op reg[2];   /* 0: all of mem; 1: a test's */
	bool reg_live[2];
	bool added;
};

static struct tclient alpha, beta, gamma;

static void
fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

/* ---- clients, as the daemon and the library make them ---- */

/*
 * A region with one lcore's rings and XSLOTS batch slots after them, laid
 * out here as the daemon's [client] xfer_slots and xfer_slot_size make it
 * (the slots' area follows the region's other parts).
 */
static void
client_region(struct tclient *t, const char *agent)
{
	uint64_t base = rn_client_region_size(1, RING, SLOT_SIZE);
	uint64_t off = (base + 63) & ~(uint64_t)63;
	uint64_t size = off + (uint64_t)XSLOTS * XSLOT_SIZE;

	assert_true(base != 0);
	t->r = aligned_alloc(4096, (size + 4095) & ~(uint64_t)4095);
	assert_non_null(t->r);
	memset(t->r, 0, size);
	assert_int_equal(rn_client_region_init(t->r, 1, RING, SLOT_SIZE),
			 0);
	t->r->xfer_slots = XSLOTS;
	t->r->xfer_slot_size = XSLOT_SIZE;
	t->r->xfer_off[0] = off;
	/* Where client_region.c lays the slots out itself (the daemon's
	 * branch), the region's size counts them; until then it does not. */
	t->r->size = size;
	if (rn_client_region_check(t->r, size) != 0)
		t->r->size = base;
	assert_int_equal(rn_client_region_check(t->r, size), 0);
	t->link = (struct rn_client_link){
		.region = t->r, .region_size = size, .client_id = 1,
		.efd = eventfd(0, EFD_NONBLOCK),
		.agent_len = (uint8_t)strlen(agent),
	};
	assert_true(t->link.efd >= 0);
	memcpy(t->link.agent, agent, t->link.agent_len);
}

/* Register [off, off + len) of t's memory as its region id, on its lcore,
 * by op. */
static int
reg_op(struct tclient *t, struct rn_client_reg_op *op, unsigned int id,
       uint64_t off, uint64_t len, uint32_t access)
{
	*op = (struct rn_client_reg_op){
		.link = &t->link, .region = id, .access = access,
		.iova = VA + off, .length = len,
		.addr = t->mem + off, .dmabuf_fd = -1 };
	command_to(t->on, RN_LCORE_CMD_CLIENT_REG, op);
	return wait_event(RN_LCORE_EVENT_CLIENT_REGISTERED, op);
}

static int
client_reg(struct tclient *t, unsigned int id, uint64_t off, uint64_t len,
	   uint32_t access)
{
	int rc = reg_op(t, &t->reg[id], id, off, len, access);

	t->reg_live[id] = rc == 0;
	return rc;
}

static void
client_dereg(struct tclient *t, unsigned int id)
{
	command_to(t->on, RN_LCORE_CMD_CLIENT_DEREG, &t->reg[id]);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_DEREGISTERED,
				    &t->reg[id]), 0);
	t->reg_live[id] = false;
}

static void
client_up(struct tclient *t, struct side *on, const char *agent)
{
	t->on = on;
	client_region(t, agent);
	command_to(on, RN_LCORE_CMD_CLIENT_ADD, &t->link);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_ADDED, &t->link), 0);
	t->added = true;
	assert_int_equal(client_reg(t, 0, 0, MEM / 2, RN_ACCESS_ALL), 0);
}

static void
client_down(struct tclient *t)
{
	if (t->added) {
		command_to(t->on, RN_LCORE_CMD_CLIENT_REMOVE, &t->link);
		assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_REMOVED,
					    &t->link), 0);
	}
	t->added = false;
	close(t->link.efd);
	free(t->r);
	t->r = NULL;
}

/* t's region id as a descriptor of its node, with a key for each of its
 * lcore and of an lcore it does not have (the owner's is picked). */
static void
describe(const struct tclient *t, unsigned int id, void *desc)
{
	const struct rn_client_reg_op *op = &t->reg[id];
	struct rn_xfer_remote rem = {
		.session_id = t->on->session, .addr = op->iova,
		.length = op->length, .n_keys = 2,
		.keys = { { .lcore = 9, .rkey = op->rkey[0] ^ 0x100 },
			  { .lcore = t->on->lc->lcore_id, .rkey = op->rkey[0] } },
	};

	snprintf(rem.node, sizeof(rem.node), "%s", t->on->name);
	assert_int_equal(rn_xfer_desc_encode(&rem, desc, RN_XFER_DESC_SIZE),
			 RN_XFER_DESC_SIZE);
}

/* ---- a batch, as rn_client_transfer() writes it ---- */

struct tbatch {
	uint8_t kind;
	uint32_t n_remotes;
	uint8_t desc[2][RN_XFER_DESC_SIZE];
	uint32_t n;
	struct rn_client_xfer_triple t[4000];
	const char *agent, *name, *msg;
	uint16_t ep_index;
	uint32_t ep_tag;
	uint32_t claim_n;         /* not 0: n_entries says this many */
	uint32_t cancel;          /* the slot's cancel at submission */
};

static struct rn_client_xfer_slot *
xslot(const struct tclient *t, uint32_t slot)
{
	return rn_client_xfer_slot(t->r, 0, slot);
}

/* A batch of kind from alpha to beta's region 0, with a notification to
 * beta named name (NULL: none). */
static void
batch_init(struct tbatch *b, uint8_t kind, const char *name)
{
	memset(b, 0, sizeof(*b));
	b->kind = kind;
	b->n_remotes = 1;
	describe(&beta, 0, b->desc[0]);
	b->agent = name != NULL ? "beta" : NULL;
	b->name = name;
	b->msg = name != NULL ? "m" : NULL;
	b->ep_index = (uint16_t)A.req.ep_index;
	b->ep_tag = A.req.peer_tag;
}

/* A triple: alpha's byte at loff, beta's at roff. */
static void
batch_add(struct tbatch *b, uint64_t loff, uint64_t roff, uint64_t len)
{
	assert_true(b->n < RTE_DIM(b->t));
	b->t[b->n++] = (struct rn_client_xfer_triple){
		.local = VA + loff, .remote = VA + roff, .length = len };
}

/* Write b into t's slot and enqueue its XFER entry with cookie (t is at
 * A). */
static void
batch_submit_by(struct tclient *t, const struct tbatch *b, uint32_t slot,
		uint64_t cookie)
{
	struct rte_ring *r = rn_client_submit_ring(t->r, 0);
	struct rn_client_entry e = { .type = RN_CLIENT_ENTRY_XFER,
				     .ep_index = b->ep_index, .slot = slot,
				     .cookie = cookie };
	uint32_t al = b->agent != NULL ? (uint32_t)strlen(b->agent) : 0;
	uint32_t nl = b->name != NULL ? (uint32_t)strlen(b->name) : 0;
	uint32_t ml = b->msg != NULL ? (uint32_t)strlen(b->msg) : 0;

	if (slot < XSLOTS) {
		struct rn_client_xfer_slot *s = xslot(t, slot);
		uint8_t *p = (uint8_t *)(&s->req + 1);
		uint64_t need = sizeof(*s) + b->n_remotes * RN_XFER_DESC_SIZE +
				b->n * sizeof(b->t[0]) + al + nl + ml;

		assert_true(need <= XSLOT_SIZE);
		s->req = (struct rn_client_xfer_req){
			.ep_tag = b->ep_tag, .kind = b->kind,
			.n_remotes = (uint8_t)b->n_remotes,
			.note_agent_len = (uint8_t)al,
			.n_entries = b->claim_n != 0 ? b->claim_n : b->n,
			.note_name_len = nl, .note_msg_len = ml };
		memcpy(p, b->desc, b->n_remotes * RN_XFER_DESC_SIZE);
		p += b->n_remotes * RN_XFER_DESC_SIZE;
		memcpy(p, b->t, b->n * sizeof(b->t[0]));
		p += b->n * sizeof(b->t[0]);
		if (al != 0)
			memcpy(p, b->agent, al);
		if (nl != 0)
			memcpy(p + al, b->name, nl);
		if (ml != 0)
			memcpy(p + al + nl, b->msg, ml);
		s->cancel = b->cancel;
		__atomic_store_n(&s->status, RN_CLIENT_XFER_PENDING,
				 __ATOMIC_RELEASE);
	}
	for (uint64_t until = now_ms() + WAIT_MS;
	     rte_ring_enqueue_elem(r, &e, sizeof(e)) != 0;) {
		if (now_ms() > until)
			fail_msg("%s's submit ring stays full", t->link.agent);
		rn_lcore_wake(A.lc);
		nap_us(50);
	}
	rn_lcore_wake(A.lc);
}

static void
batch_submit(const struct tbatch *b, uint32_t slot, uint64_t cookie)
{
	batch_submit_by(&alpha, b, slot, cookie);
}

/* What a client took from its deliver ring. */
struct taken {
	uint16_t type;
	uint16_t ep_index;
	int32_t status;
	uint64_t cookie;
	char node[RN_CLIENT_NODE_MAX + 1];
	char agent[RN_CLIENT_AGENT_MAX + 1];
	char name[SLOT_SIZE], msg[SLOT_SIZE];
};

static bool
take(struct tclient *t, struct taken *k)
{
	struct rte_ring *r = rn_client_deliver_ring(t->r, 0);
	uint32_t pos = r->cons.tail;
	struct rn_client_entry e;

	if (rte_ring_dequeue_bulk_elem_start(r, &e, sizeof(e), 1, NULL) == 0)
		return false;
	memset(k, 0, sizeof(*k));
	k->type = e.type;
	k->ep_index = e.ep_index;
	k->status = e.status;
	k->cookie = e.cookie;
	if (e.type == RN_CLIENT_ENTRY_DELIVERY) {
		const uint8_t *buf = rn_client_recv_buf(t->r, 0, pos);
		struct rn_client_recv_hdr h;

		memcpy(&h, buf, sizeof(h));
		assert_true(h.name_len < sizeof(k->name) &&
			    h.msg_len < sizeof(k->msg));
		memcpy(k->node, h.node, sizeof(k->node));
		memcpy(k->name, buf + sizeof(h), h.name_len);
		memcpy(k->msg, buf + sizeof(h) + h.name_len, h.msg_len);
		memcpy(k->agent, buf + sizeof(h) + h.name_len + h.msg_len,
		       h.agent_len);
	}
	rte_ring_dequeue_elem_finish(r, 1);
	return true;
}

static void
wait_take(struct tclient *t, struct taken *k)
{
	uint64_t until = now_ms() + WAIT_MS;

	while (!take(t, k)) {
		if (now_ms() > until)
			fail_msg("%s took nothing within %u ms",
				 t->link.agent, WAIT_MS);
		nap_us(50);
	}
}

/* alpha's XFER_DONE for slot with cookie: its status; the slot's result
 * agrees. */
static int
wait_done(uint32_t slot, uint64_t cookie, uint64_t *bytes, int *notify)
{
	struct taken k;

	wait_take(&alpha, &k);
	if (k.type != RN_CLIENT_ENTRY_XFER_DONE || k.ep_index != slot ||
	    k.cookie != cookie)
		fail_msg("entry type %u slot %u cookie %" PRIu64 " status %d; "
			 "want XFER_DONE of slot %u cookie %" PRIu64, k.type,
			 k.ep_index, k.cookie, k.status, slot, cookie);
	if (slot < XSLOTS) {
		struct rn_client_xfer_slot *s = xslot(&alpha, slot);

		assert_int_equal(__atomic_load_n(&s->status, __ATOMIC_ACQUIRE),
				 k.status);
		if (bytes != NULL)
			*bytes = s->bytes_done;
		if (notify != NULL)
			*notify = s->notify_status;
	}
	return k.status;
}

/* beta's next delivery: from alpha at node a. */
static void
wait_note(struct taken *k)
{
	wait_take(&beta, k);
	assert_int_equal(k->type, RN_CLIENT_ENTRY_DELIVERY);
	assert_string_equal(k->node, "a");
	assert_string_equal(k->agent, "alpha");
}

/* Where the client address va of t is here. */
static uint8_t *
at(const struct tclient *t, uint64_t va)
{
	return t->mem + (va - VA);
}

static bool
landed(const struct tbatch *b)
{
	for (uint32_t i = 0; i < b->n; i++)
		if (memcmp(at(&alpha, b->t[i].local), at(&beta, b->t[i].remote),
			   b->t[i].length) != 0)
			return false;
	return true;
}

static uint64_t
total_of(const struct tbatch *b)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < b->n; i++)
		n += b->t[i].length;
	return n;
}

/* Random source bytes, the destination's another pattern. */
static void
prepare(const struct tbatch *b)
{
	for (uint32_t i = 0; i < b->n; i++) {
		bool read = b->kind == RN_CLIENT_READ;
		void *src = read ? at(&beta, b->t[i].remote) :
				   at(&alpha, b->t[i].local);
		void *dst = read ? at(&alpha, b->t[i].local) :
				   at(&beta, b->t[i].remote);

		fill(src, b->t[i].length);
		memset(dst, 0xa5, b->t[i].length);
	}
}

/* ---- set-up ---- */

static int
setup(void **state)
{
	(void)state;
	n_seen = 0;
	lcore_up(&A, 0);
	lcore_up(&B, 1);
	start(&A);
	start(&B);
	ep_up();
	client_up(&alpha, &A, "alpha");
	client_up(&beta, &B, "beta");
	return 0;
}

static int
teardown(void **state)
{
	struct taken k;

	(void)state;
	while (take(&alpha, &k) || take(&beta, &k))
		;
	if (gamma.added)
		client_down(&gamma);
	client_down(&alpha);
	client_down(&beta);
	ep_down();
	stop(&A);
	stop(&B);
	lcore_down(&A);
	lcore_down(&B);
	return 0;
}

/* ---- tests ---- */

/*
 * WRITE then READ batches of mixed sizes, each with its notification to
 * beta: when beta takes it, every byte is in place, byte-exact; alpha's
 * XFER_DONE and slot say 0 and every byte.
 */
static void
test_client_write_and_read_land(void **state)
{
	(void)state;
	rng = rn_test_seed("client transfer sizes", 1802);
	for (int k = 0; k < 2; k++) {
		uint8_t kind = k == 0 ? RN_CLIENT_WRITE : RN_CLIENT_READ;
		static struct tbatch b;
		struct taken note;
		uint64_t bytes = 0, at = 0;
		int notify = 1;

		batch_init(&b, kind, k == 0 ? "written" : "read");
		for (uint32_t len = 1; len <= (8u << 20); len *= 8) {
			uint64_t l = len + rnd() % 4099;

			batch_add(&b, at + 3, (16u << 20) + at + 5, l);
			at += l + rnd() % 8192;
		}
		prepare(&b);
		batch_submit(&b, (uint32_t)k, 10 + (uint64_t)k);
		wait_note(&note);
		if (!landed(&b))
			fail_msg("%s: notification before its data",
				 k == 0 ? "WRITE" : "READ");
		assert_string_equal(note.name, b.name);
		assert_string_equal(note.msg, "m");
		assert_int_equal(wait_done((uint32_t)k, 10 + (uint64_t)k, &bytes,
					   &notify), 0);
		assert_int_equal(bytes, total_of(&b));
		assert_int_equal(notify, 0);
	}
	/* Without a notification: nothing comes to beta. */
	{
		static struct tbatch b;
		struct taken k;

		batch_init(&b, RN_CLIENT_WRITE, NULL);
		batch_add(&b, 0, 0, 12345);
		prepare(&b);
		batch_submit(&b, 2, 12);
		assert_int_equal(wait_done(2, 12, NULL, NULL), 0);
		assert_true(landed(&b));
		nap_us(20000);
		assert_false(take(&beta, &k));
	}
}

/*
 * The ordering proof for clients: one data QP's packets held back. The
 * agent notification must wait for the held chunk: posted at acceptance,
 * or once the other QPs completed, it reaches beta with the held chunk's
 * bytes missing, and this fails.
 */
static void
test_client_notification_waits_for_a_held_qp(void **state)
{
	struct rn_qp *held = &A.req.ep->qps[1];
	static struct tbatch b;
	struct taken k;
	uint64_t until;

	(void)state;
	rng = rn_test_seed("client transfer hold-back", 1803);
	batch_init(&b, RN_CLIENT_WRITE, "held");
	for (uint32_t i = 0; i < DATA_QPS; i++)
		batch_add(&b, (uint64_t)i * CHUNK, (uint64_t)i * CHUNK, CHUNK);
	prepare(&b);
	on_lcore(&A, rn_sim_qp_hold, held);
	batch_submit(&b, 0, 20);
	until = now_ms() + 20000;
	while (now_ms() < until &&
	       !(memcmp(alpha.mem, beta.mem, CHUNK) == 0 &&
		 memcmp(alpha.mem + 2 * CHUNK, beta.mem + 2 * CHUNK,
			2 * CHUNK) == 0))
		nap_us(200);
	nap_us(20000);
	if (take(&beta, &k))
		fail_msg("notification '%s' while QP 1's chunk is held",
			 k.name);
	assert_true(memcmp(alpha.mem + CHUNK, beta.mem + CHUNK, CHUNK) != 0);
	assert_int_equal(__atomic_load_n(&xslot(&alpha, 0)->status,
					 __ATOMIC_ACQUIRE),
			 RN_CLIENT_XFER_PENDING);
	on_lcore(&A, rn_sim_qp_release, held);
	wait_note(&k);
	assert_true(landed(&b));
	assert_string_equal(k.name, "held");
	assert_int_equal(wait_done(0, 20, NULL, NULL), 0);
}

/* A batch refused: XFER_DONE with want, the slot's result the same, no
 * WQE posted, nothing at beta. */
static void
expect_refused(const struct tbatch *b, uint32_t slot, int want,
	       const char *what)
{
	uint64_t wqes = __atomic_load_n(&A.lc->stats.xfer_wqes,
					__ATOMIC_RELAXED);
	uint64_t bytes = 1;
	int notify = 1;
	int rc;

	if (slot < XSLOTS)
		xslot(&alpha, slot)->bytes_done = 99;
	batch_submit(b, slot, 1000 + slot);
	rc = wait_done(slot, 1000 + slot, &bytes, &notify);
	if (rc != want)
		fail_msg("%s: %d, want %d", what, rc, want);
	if (slot < XSLOTS) {
		assert_int_equal(bytes, 0);
		assert_int_equal(notify, b->agent != NULL ? want : 0);
	}
	assert_int_equal(__atomic_load_n(&A.lc->stats.xfer_wqes,
					 __ATOMIC_RELAXED), wqes);
}

/* Every check of the request, each failing its own way; then a good
 * batch still goes. */
static void
test_client_refusals(void **state)
{
	static struct tbatch b;
	struct rn_xfer_remote rem;
	struct taken k;
	char big[SLOT_SIZE];

	(void)state;
	rng = rn_test_seed("client transfer refusals", 1804);
	/* A region alpha registered for remote READs only: no LOCAL_WRITE. */
	assert_int_equal(client_reg(&alpha, 1, 32u << 20, 1u << 20,
				    RN_ACCESS_REMOTE_READ), 0);

#define FRESH(kind, note) do { \
		batch_init(&b, kind, note); \
		batch_add(&b, 0, 0, 4096); \
	} while (0)

	FRESH(RN_CLIENT_WRITE, "x");
	expect_refused(&b, XSLOTS, -EINVAL, "a slot out of range");
	FRESH(RN_CLIENT_WRITE, "x");
	b.ep_index = RN_MAX_ENDPOINTS;
	expect_refused(&b, 0, -ENOENT, "an index out of range");
	FRESH(RN_CLIENT_WRITE, "x");
	b.ep_index = 17;
	expect_refused(&b, 0, -ENOTCONN, "an index without endpoint");
	FRESH(RN_CLIENT_WRITE, "x");
	b.ep_tag ^= 1;
	expect_refused(&b, 1, -ENOENT, "another tag");
	FRESH(3, "x");
	expect_refused(&b, 1, -EINVAL, "an unknown kind");
	FRESH(RN_CLIENT_WRITE, "x");
	b.n_remotes = 0;
	expect_refused(&b, 1, -EINVAL, "no descriptor");
	FRESH(RN_CLIENT_WRITE, "x");
	b.n = 0;
	expect_refused(&b, 1, -EINVAL, "no triple");
	FRESH(RN_CLIENT_WRITE, "x");
	b.t[0].remote_index = 1;
	expect_refused(&b, 1, -EINVAL, "a descriptor index out of range");
	FRESH(RN_CLIENT_WRITE, "x");
	b.t[0].length = 0;
	expect_refused(&b, 1, -EINVAL, "a length 0");
	FRESH(RN_CLIENT_WRITE, "x");
	b.claim_n = XSLOT_SIZE / sizeof(b.t[0]);   /* over the slot */
	expect_refused(&b, 1, -EINVAL, "a request over its slot");
	/* Local ranges. */
	FRESH(RN_CLIENT_WRITE, "x");
	b.t[0].local = VA + MEM - 100;
	expect_refused(&b, 2, -EINVAL, "a local range past its region");
	FRESH(RN_CLIENT_WRITE, "x");
	b.t[0].local = VA - 4096;
	expect_refused(&b, 2, -EINVAL, "a local range before its region");
	FRESH(RN_CLIENT_WRITE, "x");
	b.t[0].local = (uintptr_t)alpha.mem;   /* the daemon's address */
	expect_refused(&b, 2, -EINVAL, "a local range at the daemon's "
		       "address");
	FRESH(RN_CLIENT_READ, "x");
	b.t[0].local = VA + (32u << 20);
	expect_refused(&b, 2, -EINVAL, "a READ into a region without "
		       "LOCAL_WRITE");
	FRESH(RN_CLIENT_WRITE, "x");
	b.t[0].local = VA + (32u << 20);
	batch_submit(&b, 2, 2000);   /* a WRITE from it goes */
	assert_int_equal(wait_done(2, 2000, NULL, NULL), 0);
	wait_note(&k);
	assert_string_equal(k.name, "x");
	/* Remote ranges and descriptors. */
	FRESH(RN_CLIENT_WRITE, "x");
	b.t[0].remote = VA + MEM / 2 - 4095;
	expect_refused(&b, 3, -EINVAL, "a remote range past its descriptor");
	FRESH(RN_CLIENT_WRITE, "x");
	b.t[0].remote = VA - 1;
	expect_refused(&b, 3, -EINVAL, "a remote range before its "
		       "descriptor");
	FRESH(RN_CLIENT_WRITE, "x");
	b.desc[0][0] ^= 0xff;
	expect_refused(&b, 3, -EBADMSG, "a descriptor of another magic");
	FRESH(RN_CLIENT_WRITE, "x");
	assert_int_equal(rn_xfer_desc_decode(b.desc[0], RN_XFER_DESC_SIZE,
					     &rem), 0);
	rem.session_id++;
	assert_int_equal(rn_xfer_desc_encode(&rem, b.desc[0],
					     RN_XFER_DESC_SIZE),
			 RN_XFER_DESC_SIZE);
	expect_refused(&b, 3, -ESTALE, "a descriptor of another incarnation");
	FRESH(RN_CLIENT_WRITE, "x");
	snprintf(rem.node, sizeof(rem.node), "c");
	rem.session_id--;
	assert_int_equal(rn_xfer_desc_encode(&rem, b.desc[0],
					     RN_XFER_DESC_SIZE),
			 RN_XFER_DESC_SIZE);
	expect_refused(&b, 3, -EINVAL, "a descriptor of another node");
	FRESH(RN_CLIENT_WRITE, "x");
	snprintf(rem.node, sizeof(rem.node), "b");
	rem.keys[0].lcore = 5;
	rem.keys[1].lcore = 6;
	assert_int_equal(rn_xfer_desc_encode(&rem, b.desc[0],
					     RN_XFER_DESC_SIZE),
			 RN_XFER_DESC_SIZE);
	expect_refused(&b, 3, -EINVAL, "no key of the owner's lcore");
	/* The notification. */
	FRESH(RN_CLIENT_WRITE, "x");
	memset(big, 'n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	b.msg = big;
	expect_refused(&b, 4, -EMSGSIZE, "a notification over the slots");
	FRESH(RN_CLIENT_WRITE, "x");
	/* 243 bytes for beta of the notification, 266 of its failure
	 * notice: over beta's buffers. */
	memset(big, 'n', 190);
	big[190] = '\0';
	b.msg = NULL;
	b.name = big;
	expect_refused(&b, 4, -EMSGSIZE, "a failure notice over the slots");
	FRESH(RN_CLIENT_WRITE, NULL);
	b.name = "x";   /* a name without an agent */
	expect_refused(&b, 4, -EINVAL, "a note without its agent");
	nap_us(20000);
	assert_false(take(&beta, &k));
	/* Nothing was held or leaked: a good batch in every slot used. */
	for (uint32_t s = 0; s < 5; s++) {
		FRESH(RN_CLIENT_WRITE, "ok");
		prepare(&b);
		batch_submit(&b, s, 3000 + s);
		assert_int_equal(wait_done(s, 3000 + s, NULL, NULL), 0);
		wait_note(&k);
		assert_string_equal(k.name, "ok");
		assert_true(landed(&b));
	}
#undef FRESH
}

/* A's chunks posted so far. */
static uint64_t
wqes(void)
{
	return __atomic_load_n(&A.lc->stats.xfer_wqes, __ATOMIC_RELAXED);
}

/* Until A posted n chunks more than before: a batch was taken. */
static void
wait_posted(uint64_t before, uint64_t n)
{
	uint64_t until = now_ms() + WAIT_MS;

	while (wqes() < before + n) {
		if (now_ms() > until)
			fail_msg("%" PRIu64 " chunks posted, want %" PRIu64,
				 wqes() - before, n);
		nap_us(100);
	}
}

/* Hold every data QP of A, or release them. */
static void
hold_all(bool hold)
{
	stop(&A);
	for (uint32_t q = 0; q < DATA_QPS; q++)
		assert_int_equal(hold ? rn_sim_qp_hold(&A.req.ep->qps[q]) :
				 rn_sim_qp_release(&A.req.ep->qps[q]), 0);
	start(&A);
}

/* More chunks than the queues take, all held: the batch waits with its
 * queues full. */
static void
big_batch(struct tbatch *b, const char *note)
{
	batch_init(b, RN_CLIENT_WRITE, note);
	for (uint32_t i = 0; i < 448; i++)
		batch_add(b, (uint64_t)i * 65536, (uint64_t)i * 65536, 65536);
	prepare(b);
}

/*
 * Cancel: before it is taken, nothing moves; in flight, what was posted
 * completes and no more. Either way -ECANCELED, and beta is told which
 * notification will not come.
 */
static void
test_client_cancel(void **state)
{
	static struct tbatch b;
	struct rn_client_xfer_slot *s = xslot(&alpha, 1);
	struct taken k;
	uint64_t before, bytes = 1;
	int notify = 1;

	(void)state;
	rng = rn_test_seed("client transfer cancel", 1805);
	big_batch(&b, "doomed");
	hold_all(true);
	before = wqes();
	batch_submit(&b, 1, 40);
	wait_posted(before, DATA_QPS);
	assert_int_equal(__atomic_load_n(&s->status, __ATOMIC_ACQUIRE),
			 RN_CLIENT_XFER_PENDING);
	__atomic_store_n(&s->cancel, 1, __ATOMIC_RELAXED);
	nap_us(20000);
	hold_all(false);
	assert_int_equal(wait_done(1, 40, &bytes, &notify), -ECANCELED);
	assert_true(bytes > 0 && bytes < total_of(&b));
	assert_int_equal(bytes % 65536, 0);
	assert_int_equal(notify, 0);
	/* What was posted landed, in order of the triples, and no more. */
	assert_memory_equal(alpha.mem, beta.mem, 65536);
	assert_true(memcmp(alpha.mem + total_of(&b) - 65536,
			   beta.mem + total_of(&b) - 65536, 65536) != 0);
	wait_note(&k);
	assert_string_equal(k.name, RN_CLIENT_XFER_FAILED_NAME);
	assert_string_equal(k.msg, "doomed");

	/* Cancelled before the lcore took it: no byte. */
	big_batch(&b, "never");
	b.cancel = 1;
	batch_submit(&b, 1, 41);
	assert_int_equal(wait_done(1, 41, &bytes, NULL), -ECANCELED);
	assert_int_equal(bytes, 0);
	wait_note(&k);
	assert_string_equal(k.name, RN_CLIENT_XFER_FAILED_NAME);
	assert_string_equal(k.msg, "never");
}

/*
 * DEREG of a region a batch uses waits for that batch: no answer while it
 * runs, new batches on it refused (-EINVAL) meanwhile; answered once the
 * batch is final.
 */
static void
test_client_dereg_waits_for_users(void **state)
{
	static struct tbatch b, c, late;
	struct taken k;
	uint64_t before;

	(void)state;
	rng = rn_test_seed("client transfer dereg", 1806);
	assert_int_equal(client_reg(&alpha, 1, 32u << 20, 4u << 20,
				    RN_ACCESS_ALL), 0);
	batch_init(&b, RN_CLIENT_WRITE, "using");
	batch_add(&b, 32u << 20, 0, CHUNK);
	batch_add(&b, (32u << 20) + CHUNK, CHUNK, CHUNK);
	prepare(&b);
	on_lcore(&A, rn_sim_qp_hold, &A.req.ep->qps[1]);
	before = wqes();
	batch_submit(&b, 0, 50);
	wait_posted(before, 2);
	command_to(&A, RN_LCORE_CMD_CLIENT_DEREG, &alpha.reg[1]);
	nap_us(50000);
	assert_false(got_event(RN_LCORE_EVENT_CLIENT_DEREGISTERED,
			       &alpha.reg[1], NULL));
	batch_init(&late, RN_CLIENT_WRITE, "late");
	batch_add(&late, (32u << 20) + 8192, 8192, 4096);
	expect_refused(&late, 1, -EINVAL, "a region being deregistered");
	/* Other regions are not held up (its chunk goes on QP 2). */
	batch_init(&c, RN_CLIENT_WRITE, NULL);
	batch_add(&c, 4096, 8u << 20, 4096);
	prepare(&c);
	batch_submit(&c, 1, 51);
	assert_int_equal(wait_done(1, 51, NULL, NULL), 0);
	assert_true(landed(&c));
	on_lcore(&A, rn_sim_qp_release, &A.req.ep->qps[1]);
	assert_int_equal(wait_done(0, 50, NULL, NULL), 0);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_DEREGISTERED,
				    &alpha.reg[1]), 0);
	alpha.reg_live[1] = false;
	wait_note(&k);
	assert_string_equal(k.name, "using");
	assert_true(landed(&b));
	expect_refused(&late, 2, -EINVAL, "a region deregistered");
	/* Deregistered at once when unused; twice is -ENOENT. */
	assert_int_equal(client_reg(&alpha, 1, 32u << 20, 4u << 20,
				    RN_ACCESS_ALL), 0);
	client_dereg(&alpha, 1);
	command_to(&A, RN_LCORE_CMD_CLIENT_DEREG, &alpha.reg[1]);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_DEREGISTERED,
				    &alpha.reg[1]), -ENOENT);
}

/* REG's own refusals: a region id in use or out of range, overlaps. */
static void
test_client_reg_refusals(void **state)
{
	struct rn_client_reg_op op;

	(void)state;
	assert_int_equal(client_reg(&alpha, 1, 0, 4096, RN_ACCESS_ALL),
			 -EEXIST);   /* inside region 0 */
	op = (struct rn_client_reg_op){ .link = &alpha.link, .region = 0,
					.access = RN_ACCESS_ALL,
					.iova = VA + MEM, .length = 4096,
					.addr = beta.mem };
	command_to(&A, RN_LCORE_CMD_CLIENT_REG, &op);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_REGISTERED, &op),
			 -EEXIST);   /* region 0 is live */
	op.region = RN_CLIENT_MAX_REGIONS;
	command_to(&A, RN_LCORE_CMD_CLIENT_REG, &op);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_REGISTERED, &op),
			 -EINVAL);
	/* Every lookup is per client: beta's region at alpha's addresses
	 * on alpha's lcore is beta's own. */
	op = (struct rn_client_reg_op){ .link = &beta.link, .region = 5,
					.access = RN_ACCESS_ALL,
					.iova = VA, .length = 4096,
					.addr = beta.mem + MEM / 2 };
	command_to(&A, RN_LCORE_CMD_CLIENT_REG, &op);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_REGISTERED, &op), 0);
	command_to(&A, RN_LCORE_CMD_CLIENT_DEREG, &op);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_DEREGISTERED, &op),
			 0);
	op.iova = VA;
	command_to(&B, RN_LCORE_CMD_CLIENT_REG, &op);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_REGISTERED, &op),
			 -EEXIST);   /* overlaps beta's region 0 */
	op.iova = VA + MEM / 2;
	command_to(&B, RN_LCORE_CMD_CLIENT_REG, &op);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_REGISTERED, &op), 0);
	command_to(&B, RN_LCORE_CMD_CLIENT_DEREG, &op);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_DEREGISTERED, &op),
			 0);
	/* One that wraps: refused. */
	op.iova = UINT64_MAX - 100;
	command_to(&B, RN_LCORE_CMD_CLIENT_REG, &op);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_REGISTERED, &op),
			 -EINVAL);
}

/*
 * CLIENT_REMOVE with a batch in flight: answered only once the batch is
 * final (its slot says so) and the client's regions are deregistered.
 */
static void
test_client_remove_with_batches_in_flight(void **state)
{
	static struct tbatch b;
	struct rn_client_xfer_slot *s = xslot(&alpha, 2);
	uint64_t before;
	int64_t st;

	(void)state;
	rng = rn_test_seed("client transfer remove", 1807);
	big_batch(&b, "gone");
	hold_all(true);
	before = wqes();
	batch_submit(&b, 2, 60);
	wait_posted(before, DATA_QPS);
	command_to(&A, RN_LCORE_CMD_CLIENT_REMOVE, &alpha.link);
	nap_us(50000);
	assert_false(got_event(RN_LCORE_EVENT_CLIENT_REMOVED, &alpha.link,
			       NULL));
	assert_int_equal(__atomic_load_n(&s->status, __ATOMIC_ACQUIRE),
			 RN_CLIENT_XFER_PENDING);
	hold_all(false);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_REMOVED,
				    &alpha.link), 0);
	alpha.added = false;
	st = __atomic_load_n(&s->status, __ATOMIC_ACQUIRE);
	assert_int_equal(st, -ECANCELED);
	assert_true(s->bytes_done < total_of(&b));
	/* Its regions are gone from A's device: beta's READ of alpha's
	 * memory with alpha's old key would now fail; instead, A's lcore
	 * takes the same client again from nothing. */
	command_to(&A, RN_LCORE_CMD_CLIENT_ADD, &alpha.link);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_ADDED, &alpha.link),
			 0);
	alpha.added = true;
	assert_int_equal(client_reg(&alpha, 0, 0, MEM / 2, RN_ACCESS_ALL), 0);
	batch_init(&b, RN_CLIENT_WRITE, NULL);
	batch_add(&b, 0, 0, 4096);
	prepare(&b);
	batch_submit(&b, 2, 61);
	assert_int_equal(wait_done(2, 61, NULL, NULL), 0);
	assert_true(landed(&b));
}

/* A batch the peer's NIC refuses: -EACCES, and beta gets the failure
 * notice naming the notification it will not get. */
static void
test_client_failed_batch_tells_the_target(void **state)
{
	static struct tbatch b;
	struct rn_xfer_remote rem;
	struct taken k;
	int notify = 1;

	(void)state;
	batch_init(&b, RN_CLIENT_WRITE, "lost");
	assert_int_equal(rn_xfer_desc_decode(b.desc[0], RN_XFER_DESC_SIZE,
					     &rem), 0);
	rem.keys[1].rkey ^= 0x100;   /* another entry of B's table */
	assert_int_equal(rn_xfer_desc_encode(&rem, b.desc[0],
					     RN_XFER_DESC_SIZE),
			 RN_XFER_DESC_SIZE);
	batch_add(&b, 0, 0, 8192);
	batch_submit(&b, 3, 70);
	assert_int_equal(wait_done(3, 70, NULL, &notify), -EACCES);
	assert_int_equal(notify, 0);
	wait_note(&k);
	assert_string_equal(k.name, RN_CLIENT_XFER_FAILED_NAME);
	assert_string_equal(k.msg, "lost");
	assert_int_equal(wait_event(RN_LCORE_EVENT_EP_FAILED, &A.req),
			 MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	/* The endpoint back, as the plane reconnects it: batches go. */
	ep_down();
	ep_up();
	batch_init(&b, RN_CLIENT_WRITE, "again");
	batch_add(&b, 0, 0, 3u << 20);
	prepare(&b);
	batch_submit(&b, 3, 71);
	wait_note(&k);
	assert_string_equal(k.name, "again");
	assert_true(landed(&b));
	assert_int_equal(wait_done(3, 71, NULL, NULL), 0);
}

/* alpha's deliver ring full: XFER_DONE is dropped (and counted), the slot
 * holds the result all the same. */
static void
test_client_result_without_room_for_done(void **state)
{
	static struct tbatch b;
	uint64_t dropped = __atomic_load_n(&A.lc->stats.reports_dropped,
					   __ATOMIC_RELAXED);
	struct rn_client_xfer_slot *s = xslot(&alpha, 5);
	uint64_t until = now_ms() + WAIT_MS;
	struct taken k;
	struct rte_ring *r = rn_client_deliver_ring(alpha.r, 0);
	uint32_t full = rte_ring_get_capacity(r);
	uint64_t ev;

	(void)state;
	rng = rn_test_seed("client transfer ring full", 1808);
	/* Refusals of a slot out of range fill it. */
	batch_init(&b, RN_CLIENT_WRITE, NULL);
	batch_add(&b, 0, 0, 4096);
	for (uint32_t i = 0; i < full; i++)
		batch_submit(&b, XSLOTS + i, 500 + i);
	while (rte_ring_count(r) < full && now_ms() < until)
		nap_us(100);
	assert_int_equal(rte_ring_count(r), full);
	batch_init(&b, RN_CLIENT_WRITE, "full");
	batch_add(&b, 8192, 8192, 70000);
	prepare(&b);
	/* alpha waits for it, as rn_client_batch_wait() does: its eventfd
	 * drained, armed, asleep. No XFER_DONE can wake it: the final
	 * status must. */
	while (read(alpha.link.efd, &ev, sizeof(ev)) == sizeof(ev))
		;
	__atomic_store_n(&alpha.r->armed, 1, __ATOMIC_SEQ_CST);
	batch_submit(&b, 5, 600);
	while (__atomic_load_n(&s->status, __ATOMIC_ACQUIRE) ==
	       RN_CLIENT_XFER_PENDING && now_ms() < until)
		nap_us(100);
	assert_int_equal(__atomic_load_n(&s->status, __ATOMIC_ACQUIRE), 0);
	until = now_ms() + WAIT_MS;
	while (read(alpha.link.efd, &ev, sizeof(ev)) != sizeof(ev)) {
		if (now_ms() > until)
			fail_msg("a final status without room for XFER_DONE "
				 "did not wake its client");
		nap_us(100);
	}
	assert_int_equal(__atomic_load_n(&alpha.r->armed, __ATOMIC_ACQUIRE),
			 0);
	assert_int_equal(s->bytes_done, 70000);
	assert_true(landed(&b));
	wait_note(&k);
	assert_string_equal(k.name, "full");
	assert_int_equal(__atomic_load_n(&A.lc->stats.reports_dropped,
					 __ATOMIC_RELAXED), dropped + 1);
	for (uint32_t i = 0; i < full; i++)
		assert_int_equal(wait_done(XSLOTS + i, 500 + i, NULL, NULL),
				 -EINVAL);
	assert_false(take(&alpha, &k));
}

/* ---- many regions ---- */

#define NREG RN_CLIENT_MAX_REGIONS
#define RLEN (128u << 10)         /* ids 1.. of the many-regions test */

/* alpha's regions in test_client_many_regions: by id, where each lies in
 * alpha's memory; by_addr lists the ids in address order. */
static struct rn_client_reg_op many[NREG];
static uint64_t many_off[NREG], many_len[NREG];
static bool many_live[NREG];
static uint32_t by_addr[NREG];

/*
 * Region 0 is alpha's first half (client_up()). Ids 1..63, in a seeded
 * order, follow it in its second half, RLEN each: two of every three
 * right after the one before (adjacent edges, the first of them at
 * region 0's end), every third after a gap of 4 KiB. So address order is
 * not id order, and a lookup by id order, or one that takes the region
 * before or after the right one, resolves some triple wrongly.
 */
static void
many_regions_up(void)
{
	uint64_t off = MEM / 2;

	memset(many_live, 0, sizeof(many_live));
	many_len[0] = MEM / 2;
	many_live[0] = true;
	by_addr[0] = 0;
	for (uint32_t i = 1; i < NREG; i++)
		by_addr[i] = i;
	for (uint32_t i = NREG - 1; i > 1; i--) {
		uint32_t j = 1 + (uint32_t)(rnd() % i), x = by_addr[i];

		by_addr[i] = by_addr[j];
		by_addr[j] = x;
	}
	for (uint32_t k = 1; k < NREG; k++) {
		uint32_t id = by_addr[k];

		if (k % 3 == 0)
			off += 4096;
		assert_int_equal(reg_op(&alpha, &many[id], id, off, RLEN,
					RN_ACCESS_ALL), 0);
		many_off[id] = off;
		many_len[id] = RLEN;
		many_live[id] = true;
		off += RLEN;
	}
	assert_true(off <= MEM);
}

/* A triple of [off, off + len) of region id (offsets into it; len may
 * run past it), to beta at *roff, which moves on. */
static void
region_add(struct tbatch *b, uint32_t id, uint64_t off, uint64_t len,
	   uint64_t *roff)
{
	batch_add(b, many_off[id] + off, *roff, len);
	*roff += len;
	assert_true(*roff <= MEM / 2);
}

/* A live region, at random. */
static uint32_t
live_region(void)
{
	uint32_t id;

	do
		id = (uint32_t)(rnd() % NREG);
	while (!many_live[id]);
	return id;
}

/* A WRITE to beta over every live region: its first byte, its last,
 * from its start, to its end, in its middle; then triples at random
 * regions (each a new one, mostly) until n. */
static void
regions_batch(struct tbatch *b, uint32_t n, const char *note)
{
	uint64_t roff = 0;

	batch_init(b, RN_CLIENT_WRITE, note);
	for (uint32_t k = 0; k < NREG; k++) {
		uint32_t id = by_addr[k];
		uint64_t len = many_len[id], l = 1 + rnd() % 4096;

		if (!many_live[id])
			continue;
		region_add(b, id, 0, 1, &roff);
		region_add(b, id, len - 1, 1, &roff);
		region_add(b, id, 0, l, &roff);
		region_add(b, id, len - l, l, &roff);
		region_add(b, id, rnd() % (len - l), l, &roff);
	}
	while (b->n < n) {
		uint32_t id = live_region();
		uint64_t l = 1 + rnd() % 2048;

		region_add(b, id, rnd() % (many_len[id] - l + 1), l, &roff);
	}
}

/* A batch of good triples with one bad one, of [off, off + len) from
 * region id's start (off may be negative), at a random place: -EINVAL. */
static void
refuse_one(uint32_t id, int64_t off, uint64_t len, uint32_t slot,
	   const char *what)
{
	static struct tbatch b;
	uint32_t at;
	char msg[128];

	regions_batch(&b, 64 * 5 + 100, "x");
	at = (uint32_t)(rnd() % b.n);
	b.t[at].local = VA + many_off[id] + (uint64_t)off;
	b.t[at].length = len;
	snprintf(msg, sizeof(msg), "%s of region %u (triple %u of %u)", what,
		 id, at, b.n);
	expect_refused(&b, slot, -EINVAL, msg);
}

/* Submit b in slot 0; it lands, every byte, with its notification. */
static void
regions_land(struct tbatch *b, uint64_t cookie)
{
	struct taken k;
	uint64_t bytes = 0;
	int rc;

	prepare(b);
	batch_submit(b, 0, cookie);
	rc = wait_done(0, cookie, &bytes, NULL);
	if (rc != 0)
		fail_msg("a batch of %u triples over %u regions: %d", b->n,
			 NREG, rc);
	assert_int_equal(bytes, total_of(b));
	wait_note(&k);
	assert_string_equal(k.name, b->name);
	assert_true(landed(b));
}

/*
 * 64 regions of one client on one lcore, registered out of address order,
 * some adjacent, some with gaps: a batch whose triples hit all of them,
 * at their first and last bytes, and at random (mostly another region
 * than the triple before), resolves every triple to its own region (a
 * wrong one's lkey fails at the device, -EFAULT; none, -EINVAL). A triple
 * one byte past a region's end or before its start (into a gap, or over
 * the edge into its neighbour), or in no region, is refused. Regions
 * deregistered in the middle are no longer found; registered again under
 * other ids, they are. RN_CXFER_REGION_BATCHES sets how many batches of
 * 4,000 triples go first (1); callgrind counts the lookup with it
 * (docs/transfers.md).
 */
static void
test_client_many_regions(void **state)
{
	static struct tbatch b;
	const char *env = getenv("RN_CXFER_REGION_BATCHES");
	uint32_t rounds = env != NULL ? (uint32_t)atoi(env) : 1, gone[3];
	uint64_t offs[3];
	uint32_t last;

	(void)state;
	rng = rn_test_seed("client transfer many regions", 1810);
	many_regions_up();
	last = by_addr[NREG - 1];
	for (uint32_t i = 0; i < rounds; i++) {
		regions_batch(&b, RTE_DIM(b.t), "regions");
		regions_land(&b, 4000 + i);
	}
	printf("# %u batches of %u triples over %u regions\n", rounds,
	       (uint32_t)RTE_DIM(b.t), NREG);
	for (uint32_t k = 0; k < NREG; k++) {
		uint32_t id = by_addr[k];
		uint64_t l = 1 + rnd() % 4096;

		refuse_one(id, (int64_t)(many_len[id] - l + 1), l,
			   1 + k % (XSLOTS - 1), "one byte past the end");
		refuse_one(id, -1, l, 1 + k % (XSLOTS - 1),
			   "one byte before the start");
	}
	refuse_one(last, (int64_t)many_len[last], 1, 1, "after the last");
	refuse_one(by_addr[3], -4096, 4096, 2, "a gap");
	/* Three regions in the middle deregistered: not found. */
	for (uint32_t i = 0; i < 3; i++) {
		gone[i] = by_addr[10 + 20 * i];
		command_to(&A, RN_LCORE_CMD_CLIENT_DEREG, &many[gone[i]]);
		assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_DEREGISTERED,
					    &many[gone[i]]), 0);
		many_live[gone[i]] = false;
	}
	for (uint32_t i = 0; i < 3; i++)
		refuse_one(gone[i], (int64_t)(rnd() % RLEN), 1, 3,
			   "a deregistered region");
	regions_batch(&b, 2000, "without three");
	regions_land(&b, 5000);
	/* Registered again, each at the next one's id. */
	for (uint32_t i = 0; i < 3; i++)
		offs[i] = many_off[gone[i]];
	for (uint32_t i = 0; i < 3; i++) {
		uint32_t id = gone[(i + 1) % 3];

		assert_int_equal(reg_op(&alpha, &many[id], id, offs[i], RLEN,
					RN_ACCESS_ALL), 0);
		many_off[id] = offs[i];
		many_live[id] = true;
		by_addr[10 + 20 * i] = id;
	}
	regions_batch(&b, 3000, "again");
	regions_land(&b, 5001);
}

/* t's deliver ring filled with the XFER_DONEs of batches in slots out of
 * range, cookies from cookie on; returns how many it holds. */
static uint32_t
fill_deliver(struct tclient *t, uint64_t cookie)
{
	struct rte_ring *r = rn_client_deliver_ring(t->r, 0);
	uint32_t full = rte_ring_get_capacity(r);
	uint64_t until = now_ms() + WAIT_MS;
	static struct tbatch b;

	batch_init(&b, RN_CLIENT_WRITE, NULL);
	batch_add(&b, 0, 0, 4096);
	for (uint32_t i = 0; i < full; i++)
		batch_submit_by(t, &b, XSLOTS + i, cookie + i);
	while (rte_ring_count(r) < full && now_ms() < until)
		nap_us(100);
	assert_int_equal(rte_ring_count(r), full);
	return full;
}

/* t waits for a batch as rn_client_batch_wait() does: its eventfd
 * drained, armed, asleep. */
static void
sleep_armed(struct tclient *t)
{
	uint64_t ev;

	while (read(t->link.efd, &ev, sizeof(ev)) == sizeof(ev))
		;
	__atomic_store_n(&t->r->armed, 1, __ATOMIC_SEQ_CST);
}

/* t's slot says want (no byte done, notify_status note), and t, asleep,
 * was woken: without an XFER_DONE it learns of the batch all the same. */
static void
expect_told(struct tclient *t, uint32_t slot, int want, int note,
	    const char *what)
{
	struct rn_client_xfer_slot *s = xslot(t, slot);
	uint64_t until = now_ms() + WAIT_MS, ev;
	int64_t st;

	while ((st = __atomic_load_n(&s->status, __ATOMIC_ACQUIRE)) ==
	       RN_CLIENT_XFER_PENDING && now_ms() < until)
		nap_us(100);
	if (st != want)
		fail_msg("%s: the slot says %" PRId64 ", want %d", what, st,
			 want);
	assert_int_equal(s->bytes_done, 0);
	assert_int_equal(s->notify_status, note);
	while (read(t->link.efd, &ev, sizeof(ev)) != sizeof(ev)) {
		if (now_ms() > until)
			fail_msg("%s without room for XFER_DONE: its client "
				 "was not woken", what);
		nap_us(100);
	}
}

/* t's XFER_DONEs of fill_deliver(t, cookie), each with want; then
 * nothing. */
static void
drain_filled(struct tclient *t, uint32_t full, uint64_t cookie, int want)
{
	struct taken k;

	for (uint32_t i = 0; i < full; i++) {
		wait_take(t, &k);
		if (k.type != RN_CLIENT_ENTRY_XFER_DONE ||
		    k.ep_index != XSLOTS + i || k.cookie != cookie + i ||
		    k.status != want)
			fail_msg("entry type %u slot %u cookie %" PRIu64
				 " status %d; want XFER_DONE of slot %u cookie "
				 "%" PRIu64 " status %d", k.type, k.ep_index,
				 k.cookie, k.status, XSLOTS + i, cookie + i,
				 want);
	}
	assert_false(take(t, &k));
}

/* Every block of A's heap (the EAL's) taken, or given back. */
static void *hog[256];
static uint32_t n_hog;

static void
heap_exhaust(void)
{
	void *p;

	for (size_t size = 64u << 20; size >= 64; size /= 2)
		while (n_hog < RTE_DIM(hog) &&
		       (p = rte_malloc("test_hog", size, 0)) != NULL)
			hog[n_hog++] = p;
	p = rte_malloc("test_hog", 64, 0);
	if (p != NULL) {
		rte_free(p);
		skip();   /* a heap that grows: no "no memory" to be had */
	}
}

static void
heap_return(void)
{
	while (n_hog > 0)
		rte_free(hog[--n_hog]);
}

/*
 * Refusals with the client's deliver ring full, which drops their
 * XFER_DONE: the client must learn of them from the slot, and be woken,
 * or it waits for the batch for good. A refusal by the request's checks;
 * one before the lcore has any record of the client (no memory for it):
 * each writes the slot and wakes. A batch submitted again in a slot
 * whose batch still runs is refused by XFER_DONE alone: the slot is not
 * the client's, and its batch's result still comes there.
 */
static void
test_client_refusals_without_room_for_done(void **state)
{
	static struct tbatch b;
	uint64_t dropped = __atomic_load_n(&A.lc->stats.reports_dropped,
					   __ATOMIC_RELAXED);
	uint64_t before, bytes = 0;
	uint32_t full;
	struct taken k;

	(void)state;
	rng = rn_test_seed("client transfer refusals, ring full", 1811);
	/* A request refused by its checks (an unknown kind). */
	full = fill_deliver(&alpha, 700);
	batch_init(&b, 3, "x");
	batch_add(&b, 0, 0, 4096);
	sleep_armed(&alpha);
	batch_submit(&b, 1, 800);
	expect_told(&alpha, 1, -EINVAL, -EINVAL, "a refusal by a check");
	drain_filled(&alpha, full, 700, -EINVAL);

	/* No memory for the record of a client new to A: gamma, attached
	 * there, with no region yet. */
	client_region(&gamma, "gamma");
	gamma.on = &A;
	command_to(&A, RN_LCORE_CMD_CLIENT_ADD, &gamma.link);
	assert_int_equal(wait_event(RN_LCORE_EVENT_CLIENT_ADDED, &gamma.link),
			 0);
	gamma.added = true;
	heap_exhaust();
	full = fill_deliver(&gamma, 900);
	batch_init(&b, RN_CLIENT_WRITE, "y");
	batch_add(&b, 0, 0, 4096);
	sleep_armed(&gamma);
	batch_submit_by(&gamma, &b, 2, 1000);
	expect_told(&gamma, 2, -ENOMEM, -ENOMEM, "a refusal without memory");
	heap_return();
	drain_filled(&gamma, full, 900, -ENOMEM);
	/* With memory again, gamma's batches are looked at: it has no
	 * region, so its triple is in none. */
	batch_submit_by(&gamma, &b, 2, 1001);
	wait_take(&gamma, &k);
	assert_int_equal(k.type, RN_CLIENT_ENTRY_XFER_DONE);
	assert_int_equal(k.cookie, 1001);
	assert_int_equal(k.status, -EINVAL);
	assert_int_equal(__atomic_load_n(&A.lc->stats.reports_dropped,
					 __ATOMIC_RELAXED), dropped + 2);

	/* A slot whose batch runs: -EBUSY by XFER_DONE, the slot untouched;
	 * the batch's own result comes there later. */
	big_batch(&b, NULL);
	hold_all(true);
	before = wqes();
	batch_submit(&b, 4, 1100);
	wait_posted(before, DATA_QPS);
	batch_submit(&b, 4, 1101);
	wait_take(&alpha, &k);
	assert_int_equal(k.type, RN_CLIENT_ENTRY_XFER_DONE);
	assert_int_equal(k.cookie, 1101);
	assert_int_equal(k.status, -EBUSY);
	assert_int_equal(__atomic_load_n(&xslot(&alpha, 4)->status,
					 __ATOMIC_ACQUIRE),
			 RN_CLIENT_XFER_PENDING);
	hold_all(false);
	assert_int_equal(wait_done(4, 1100, &bytes, NULL), 0);
	assert_int_equal(bytes, total_of(&b));
	assert_true(landed(&b));
}

/*
 * Many small batches, every slot in use, each reused as its XFER_DONE
 * comes: each lands, each notification comes. RN_CXFER_BATCHES sets how many (400); callgrind counts the
 * instructions per batch with it (docs/transfers.md).
 */
static void
test_client_many_small_batches(void **state)
{
	static struct tbatch b[XSLOTS];
	const char *env = getenv("RN_CXFER_BATCHES");
	uint32_t total = env != NULL ? (uint32_t)atoi(env) : 400;
	uint32_t sent = 0, done = 0, notes = 0;
	uint64_t until = now_ms() + WAIT_MS;
	struct taken k;

	(void)state;
	rng = rn_test_seed("client transfer many", 1809);
	for (uint32_t i = 0; i < XSLOTS && sent < total; i++, sent++) {
		batch_init(&b[i], RN_CLIENT_WRITE, "n");
		for (uint32_t j = 0; j < DATA_QPS; j++)
			batch_add(&b[i], ((uint64_t)i * DATA_QPS + j) * 4096,
				  ((uint64_t)i * DATA_QPS + j) * 4096, 4096);
		prepare(&b[i]);
		batch_submit(&b[i], i, (uint64_t)sent * XSLOTS + i);
	}
	while (done < total || notes < total) {
		if (now_ms() > until)
			fail_msg("%u batches done, %u notifications, of %u",
				 done, notes, total);
		if (take(&beta, &k)) {
			assert_int_equal(k.type, RN_CLIENT_ENTRY_DELIVERY);
			assert_string_equal(k.name, "n");
			notes++;
		}
		if (!take(&alpha, &k)) {
			nap_us(20);
			continue;
		}
		if (k.type != RN_CLIENT_ENTRY_XFER_DONE || k.status != 0 ||
		    k.ep_index >= XSLOTS || k.cookie % XSLOTS != k.ep_index)
			fail_msg("entry type %u slot %u cookie %" PRIu64
				 " status %d", k.type, k.ep_index, k.cookie,
				 k.status);
		assert_true(landed(&b[k.ep_index]));
		done++;
		if (sent < total) {
			prepare(&b[k.ep_index]);
			batch_submit(&b[k.ep_index], k.ep_index,
				     (uint64_t)sent * XSLOTS + k.ep_index);
			sent++;
		}
	}
	printf("# %u batches of %u x 4 KiB, each with its notification\n",
	       total, DATA_QPS);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(test_client_write_and_read_land),
		T(test_client_notification_waits_for_a_held_qp),
		T(test_client_refusals),
		T(test_client_cancel),
		T(test_client_dereg_waits_for_users),
		T(test_client_reg_refusals),
		T(test_client_remove_with_batches_in_flight),
		T(test_client_failed_batch_tells_the_target),
		T(test_client_result_without_room_for_done),
		T(test_client_refusals_without_room_for_done),
		T(test_client_many_small_batches),
		T(test_client_many_regions),
	};
	int rc;

	(void)argc;
	rc = two_lcores_init(argv[0], "cxfer");
	if (rc != 0)
		return rc;
	alpha.mem = aligned_alloc(4096, MEM);
	beta.mem = aligned_alloc(4096, MEM);
	if (alpha.mem == NULL || beta.mem == NULL)
		return 1;
	return cmocka_run_group_tests_name("client transfers", tests, NULL,
					   NULL);
}
