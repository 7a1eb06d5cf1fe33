/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transfer engine's instructions, for callgrind
 * (scripts/bench-transfer-instructions.sh): two lcores in this process,
 * each with a sim device, one endpoint of 4 data QPs and a native channel
 * between them, their loops turned by hand. BATCHES WRITE batches, then
 * as many READ batches, of ENTRIES chunks of CHUNK bytes each with a
 * notification, handed to the engine as rn_transfer_submit() does
 * (through the lcore's transfer ring), one at a time. Prints how many
 * WQEs and batches went, for the script to divide by.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_malloc.h>

#include "lcore_pvt.h"
#include "rn_cq.h"
#include "rn_lcore_xfer.h"

#define BATCHES 2000
#define ENTRIES 4
#define CHUNK 4096
#define SLOTS 64

struct side {
	struct rn_lcore *lc;
	struct rn_ep_request req;
	struct rte_ring *completions;
	uint8_t *buf;
	struct rn_mr mr;
};

static struct side A, B;
static struct rte_ring *events;

static void
turn(struct side *s)
{
	struct rn_lcore *lc = s->lc;
	struct rn_notify_delivery d;
	struct rn_lcore_event ev;

	rn_nic_progress(lc->nic);
	for (uint32_t c = 0; c < lc->n_cqs; c++) {
		struct rn_wc wc[RN_LCORE_BURST];
		unsigned int n = rn_cq_poll(&lc->cqs[c].cq, wc, RN_LCORE_BURST);

		for (unsigned int i = 0; i < n; i++)
			rn_lcore_ep_completion(lc, &wc[i]);
	}
	rn_lcore_notify_poll(lc);
	rn_lcore_xfer_poll(lc);
	/* The application: every notification read and given back. */
	while (rte_ring_sc_dequeue_elem(lc->notify_deliveries, &d,
					sizeof(d)) == 0)
		rte_ring_sp_enqueue_elem(lc->notify_releases, &d, sizeof(d));
	while (rte_ring_sc_dequeue_elem(events, &ev, sizeof(ev)) == 0)
		;
}

static void
turn_until(const int64_t *word, int64_t pending)
{
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == pending) {
		turn(&A);
		turn(&B);
	}
}

static int
command(struct side *s, uint32_t type)
{
	struct rn_lcore_cmd cmd = { .type = type, .cookie = (uintptr_t)&s->req };

	rn_lcore_ep_command(s->lc, &cmd);
	for (int i = 0; i < 1000; i++) {
		turn(&A);
		turn(&B);
	}
	return 0;
}

static int
side_up(struct side *s, unsigned int id, int wake_fd)
{
	struct rn_config cfg;
	char why[256] = "";
	char name[32];
	struct rn_xfer_reg reg;

	rn_config_defaults(&cfg);
	cfg.nic.provider = RN_NIC_SIM;
	snprintf(cfg.control.listen, sizeof(cfg.control.listen), "127.0.0.1");
	cfg.notify.enabled = true;
	cfg.notify.slots = SLOTS;
	cfg.notify.slot_size = 256;
	cfg.notify.max_inline = 64;
	cfg.notify.endpoints_per_lcore = 1;
	s->lc = rte_zmalloc("bench", sizeof(*s->lc), RTE_CACHE_LINE_SIZE);
	if (s->lc == NULL || rn_lcore_init(s->lc, id, &cfg, events, wake_fd,
					   why, sizeof(why)) != 0) {
		fprintf(stderr, "bench: lcore: %s\n", why);
		return -1;
	}
	snprintf(name, sizeof(name), "bench_cmpl_%u", id);
	s->completions = rte_ring_create_elem(name,
		sizeof(struct rn_notify_event), 1024, SOCKET_ID_ANY,
		RING_F_SC_DEQ);
	s->lc->notify_completions = s->completions;
	s->req = (struct rn_ep_request){
		.ep_index = 3 + id, .n_data_qps = 4, .notify = true,
		.notify_depth = SLOTS, .notify_slot_size = 256,
		.qp_timeout = 18, .qp_retry_cnt = 7,
		.local = { .session_id = 100 + id, .generation = 1 },
	};
	snprintf(s->req.local.name, sizeof(s->req.local.name), "%s",
		 id == 0 ? "a" : "b");
	s->buf = aligned_alloc(4096, ENTRIES * CHUNK);
	reg = (struct rn_xfer_reg){ .op.type = RN_XFER_OP_REG, .addr = s->buf,
				    .length = ENTRIES * CHUNK,
				    .access = RN_ACCESS_ALL, .mr = &s->mr };
	if (s->buf == NULL || rn_lcore_xfer_submit(s->lc, &reg.op) != 0)
		return -1;
	rn_lcore_xfer_poll(s->lc);
	return reg.op.answer == 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
	char prefix[64];
	char *eal[] = { argv[0], "-l", "0", "--no-huge", "--no-shconf",
			"-m", "256", "--no-pci", "--no-telemetry",
			"--log-level=lib.eal:error", prefix, NULL };
	struct rn_xfer_remote rem = { .node = "b", .session_id = 101,
				      .n_keys = 1 };
	struct rn_xfer_entry e[ENTRIES];
	uint32_t users = 0;
	uint64_t wqes;
	int wake_fd;

	(void)argc;
	snprintf(prefix, sizeof(prefix), "--file-prefix=rn_bench_xfer_%d",
		 getpid());
	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0)
		return 1;
	events = rte_ring_create_elem("bench_events",
				      sizeof(struct rn_lcore_event), 4096,
				      SOCKET_ID_ANY, RING_F_SC_DEQ);
	wake_fd = eventfd(0, EFD_NONBLOCK);
	if (side_up(&A, 0, wake_fd) != 0 || side_up(&B, 1, wake_fd) != 0)
		return 1;
	command(&A, RN_LCORE_CMD_EP_OPEN);
	command(&B, RN_LCORE_CMD_EP_OPEN);
	A.req.remote = B.req.local;
	B.req.remote = A.req.local;
	command(&A, RN_LCORE_CMD_EP_CONNECT);
	command(&B, RN_LCORE_CMD_EP_CONNECT);
	if (A.lc->by_index[A.req.ep_index] == NULL) {
		fprintf(stderr, "bench: the endpoint did not connect\n");
		return 1;
	}
	rem.keys[0].rkey = B.mr.rkey;
	for (unsigned int i = 0; i < ENTRIES; i++)
		e[i] = (struct rn_xfer_entry){
			.laddr = (uintptr_t)A.buf + i * CHUNK,
			.raddr = (uintptr_t)B.buf + i * CHUNK,
			.length = CHUNK, .lkey = A.mr.lkey, .remote = &rem,
			.users = &users };
	for (int k = 0; k < 2 * BATCHES; k++) {
		struct rn_xfer_batch b = {
			.op.type = RN_XFER_OP_BATCH,
			.ep_index = A.req.ep_index,
			.kind = k < BATCHES ? RN_XFER_WRITE : RN_XFER_READ,
			.n_entries = ENTRIES, .entries = e,
			.note_name = (const uint8_t *)"done", .note_name_len = 4,
			.note_msg = (const uint8_t *)"", .chunk_size = CHUNK,
			.status = RN_XFER_PENDING };

		users += ENTRIES;
		if (rn_lcore_xfer_submit(A.lc, &b.op) != 0)
			return 1;
		turn_until(&b.op.answer, RN_XFER_PENDING);
		if (b.op.answer != 0) {
			fprintf(stderr, "bench: batch refused: %d\n",
				(int)b.op.answer);
			return 1;
		}
		turn_until(&b.status, RN_XFER_PENDING);
		if (b.status != 0 || b.notify_status != 0) {
			fprintf(stderr, "bench: batch failed: %d, notify %d\n",
				(int)b.status, b.notify_status);
			return 1;
		}
	}
	wqes = A.lc->stats.xfer_wqes;
	printf("wqes %lu\nbatches %d\nentries %d\n", (unsigned long)wqes,
	       2 * BATCHES, ENTRIES);
	return 0;
}
