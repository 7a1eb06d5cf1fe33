/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The diagnostic telemetry commands: each acts as an application thread
 * of the process would (send, take completion reports, poll), or injects a
 * fault (tests, sim device only), through rn_notify.h and
 * rn_notify_diag.h. The status commands are telemetry.c's.
 */
#include <errno.h>
#include <pthread.h>
#include <rte_common.h>
#include <rte_telemetry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_daemon.h"
#include "rn_notify.h"
#include "rn_notify_diag.h"
#include "rn_sim.h"
#include "telemetry_pvt.h"

static const struct rn_daemon *daemon_seen;

/* The engine exists from RUNNING until teardown begins (STOPPING). */
static bool
running(const struct rn_daemon *d)
{
	return __atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == RN_DAEMON_RUNNING &&
	       d->notify != NULL;
}

/*
 * The diagnostic commands act as an application thread, on the
 * notification engine that teardown stops and frees: they run counted, and
 * teardown (rn_telemetry_acting()) waits for the count to fall to zero
 * after it left RUNNING. Either a command sees the state change, or
 * teardown sees the command.
 */
static unsigned int acting;

static int
act(int (*fn)(const char *, struct rte_tel_data *), const char *params,
    struct rte_tel_data *out)
{
	int rc = -EBUSY;

	__atomic_fetch_add(&acting, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);   /* before reading the state */
	if (running(daemon_seen))
		rc = fn(params, out);
	__atomic_fetch_sub(&acting, 1, __ATOMIC_RELEASE);
	return rc;
}

unsigned int
rn_telemetry_acting(void)
{
	return __atomic_load_n(&acting, __ATOMIC_SEQ_CST);
}

/*
 * Copy params (under 1,024 bytes) into buf and cut it at its first n - 1
 * commas into fields[0..n), the last keeping any commas. Returns 0, or
 * -EINVAL with fewer fields.
 */
static int
split_params(const char *params, char (*buf)[1024], char **fields,
	     unsigned int n)
{
	if (params == NULL || strlen(params) >= sizeof(*buf))
		return -EINVAL;
	strcpy(*buf, params);
	fields[0] = *buf;
	for (unsigned int i = 1; i < n; i++) {
		char *comma = strchr(fields[i - 1], ',');

		if (comma == NULL)
			return -EINVAL;
		*comma = '\0';
		fields[i] = comma + 1;
	}
	return 0;
}

/* The answer of a send: {"result": 0, a count or -errno, "error": the
 * errno's text}. */
static void
send_result(struct rte_tel_data *out, int rc)
{
	rte_tel_data_start_dict(out);
	rte_tel_data_add_dict_int(out, "result", rc);
	rte_tel_data_add_dict_string(out, "error", rc >= 0 ? "" : strerror(-rc));
}

/* The one reply of a diagnostic command to a bad number. */
static void
number_error(struct rte_tel_data *out, const char *field, uint64_t min,
	     uint64_t max)
{
	char text[RTE_TEL_MAX_STRING_LEN];

	snprintf(text, sizeof(text), "%s: not a decimal number from %lu to "
		 "%lu (digits only)", field, (unsigned long)min,
		 (unsigned long)max);
	rte_tel_data_start_dict(out);
	rte_tel_data_add_dict_int(out, "result", -EINVAL);
	rte_tel_data_add_dict_string(out, "error", text);
}

/*
 * Diagnostics: send a notification, /rnotify/send,PEER,NAME,MSG (MSG may
 * hold commas), as an application would.
 */
static int
send_now(const char *params, struct rte_tel_data *out)
{
	char buf[1024];
	char *f[3];   /* peer, name, msg */

	if (split_params(params, &buf, f, 3) != 0)
		return -EINVAL;
	send_result(out, rn_notify_send(daemon_seen->notify, f[0], f[1],
					(uint32_t)strlen(f[1]), f[2],
					(uint32_t)strlen(f[2]), 0, 0));
	return 0;
}

/*
 * Diagnostics: the same, asking for the send's completion report,
 * /rnotify/send_report,PEER,COOKIE,NAME,MSG; /rnotify/completions takes
 * the reports.
 */
static int
send_report_now(const char *params, struct rte_tel_data *out)
{
	char buf[1024];
	char *f[4];   /* peer, cookie, name, msg */
	uint64_t cookie;

	if (split_params(params, &buf, f, 4) != 0)
		return -EINVAL;
	if (rn_telemetry_parse_u64(f[1], 0, UINT64_MAX, &cookie) != 0) {
		number_error(out, "COOKIE", 0, UINT64_MAX);
		return 0;
	}
	send_result(out, rn_notify_send(daemon_seen->notify, f[0], f[2],
					(uint32_t)strlen(f[2]), f[3],
					(uint32_t)strlen(f[3]), cookie,
					RN_NOTIFY_WANT_COMPLETION));
	return 0;
}

static pthread_mutex_t completions_lock = PTHREAD_MUTEX_INITIALIZER;

/* Diagnostics: take the completion reports of sends that asked for one,
 * as an application would: {"cookie": [...], "status": [0 or -errno]}. */
static int
completions_now(const char *params, struct rte_tel_data *out)
{
	struct rn_notify_completion got[64];
	struct rte_tel_data *cookies = rte_tel_data_alloc();
	struct rte_tel_data *statuses = rte_tel_data_alloc();
	unsigned int n;

	(void)params;
	if (cookies == NULL || statuses == NULL) {
		rte_tel_data_free(cookies);
		rte_tel_data_free(statuses);
		return -ENOMEM;
	}
	rte_tel_data_start_array(cookies, RTE_TEL_U64_VAL);
	rte_tel_data_start_array(statuses, RTE_TEL_INT_VAL);
	/* One thread at a time takes them (rn_notify_completions()). */
	pthread_mutex_lock(&completions_lock);
	n = rn_notify_completions(daemon_seen->notify, got, 64);
	pthread_mutex_unlock(&completions_lock);
	for (unsigned int i = 0; i < n; i++) {
		rte_tel_data_add_array_u64(cookies, got[i].cookie);
		rte_tel_data_add_array_int(statuses, got[i].status);
	}
	rte_tel_data_start_dict(out);
	rte_tel_data_add_dict_container(out, "cookie", cookies, 0);
	rte_tel_data_add_dict_container(out, "status", statuses, 0);
	return 0;
}

#define BURST_MAX 64
#define BURST_MSG_MAX 1024

/*
 * The msg lengths of /rnotify/send_burst: COUNT alike (len, each MSG), or
 * a list "L0;L1;..." of lengths (cut at its semicolons), each msg that
 * many of MSG's first byte. Returns how many, or 0 for bad text.
 */
static unsigned int
burst_lengths(char *text, uint32_t len, uint32_t *lengths, bool *listed)
{
	unsigned int n = 0;
	uint64_t v;

	*listed = strchr(text, ';') != NULL;
	if (!*listed) {
		if (rn_telemetry_parse_u64(text, 1, BURST_MAX, &v) != 0)
			return 0;
		for (n = 0; n < v; n++)
			lengths[n] = len;
		return n;
	}
	for (char *next; text != NULL; text = next) {
		next = strchr(text, ';');
		if (next != NULL)
			*next++ = '\0';
		if (n == BURST_MAX ||
		    rn_telemetry_parse_u64(text, 0, BURST_MSG_MAX, &v) != 0)
			return 0;
		lengths[n++] = (uint32_t)v;
	}
	return n;
}

/*
 * Diagnostics: /rnotify/send_burst,PEER,COUNT,NAME,MSG sends COUNT
 * (1..64) notifications in one rn_notify_send_burst(): NAME0, NAME1, ...,
 * each with MSG (which may hold commas). COUNT may be a list of msg
 * lengths instead, "L0;L1;..." (up to 1,024 each): then msg i is Li
 * times MSG's first byte. {"result": how many went, or -errno}.
 */
static int
send_burst_now(const char *params, struct rte_tel_data *out)
{
	struct rn_notify_out burst[BURST_MAX];
	char fill[BURST_MSG_MAX];
	uint32_t lengths[BURST_MAX];
	char names[BURST_MAX][48];
	char buf[1024];
	char *f[4];   /* peer, count, name, msg */
	char *count, *name, *msg;
	unsigned int n;
	bool listed;
	int rc;

	if (split_params(params, &buf, f, 4) != 0)
		return -EINVAL;
	count = f[1];
	name = f[2];
	msg = f[3];
	n = burst_lengths(count, (uint32_t)strlen(msg), lengths, &listed);
	if (n == 0) {
		number_error(out, listed ? "COUNT (a length)" : "COUNT",
			     listed ? 0 : 1, listed ? BURST_MSG_MAX : BURST_MAX);
		return 0;
	}
	if (strlen(name) + 3 > sizeof(names[0]) || (listed && *msg == '\0'))
		return -EINVAL;
	if (listed)
		memset(fill, *msg, sizeof(fill));
	for (unsigned int i = 0; i < n; i++) {
		int len = snprintf(names[i], sizeof(names[i]), "%s%u", name, i);

		burst[i] = (struct rn_notify_out){
			.name = names[i], .name_len = (uint32_t)len,
			.msg = listed ? fill : msg, .msg_len = lengths[i] };
	}
	rc = rn_notify_send_burst(daemon_seen->notify, f[0], burst, n, 0);
	send_result(out, rc);
	return 0;
}

/* The sim device of the worker that owns peer's endpoint raises the event
 * of its port going down, or (fatal) of a CQ error: the event alone, the
 * wires and CQs stay up. */
static int
raise_device_event(const char *peer, bool fatal)
{
	enum rn_ep_state state;
	uint32_t ep_index, worker;
	struct rn_nic *nic;

	if (rn_plane_lookup(daemon_seen->plane, peer, &ep_index, &state,
			    &worker) != 0)
		return -ENOENT;
	nic = daemon_seen->worker_ptrs[worker]->nic;
	if (nic->provider != RN_NIC_SIM)
		return -ENOTSUP;
	rn_sim_raise_event(nic, fatal);
	return 0;
}

/* Tests, sim device only: FAULT,PEER with FAULT local_qp (PEER's notify
 * QP fails locally), bad_frame (PEER is sent a frame it must reject),
 * stall (the lcore that owns PEER's endpoint stops for a while),
 * port_event or cq_event (that lcore's device says its port went down, or
 * one of its CQs stopped: fatal), cq_overrun (PEER's CQ overruns: it
 * stops, its QPs fail, and the fatal event follows). */
static int
sim_fault_now(const char *params, struct rte_tel_data *out)
{
	const char *peer = params != NULL ? strchr(params, ',') : NULL;
	int rc;

	if (peer == NULL)
		return -EINVAL;
	peer++;
	if (strncmp(params, "local_qp,", 9) == 0)
		rc = rn_notify_diag_local_fault(daemon_seen->notify, peer);
	else if (strncmp(params, "bad_frame,", 10) == 0)
		rc = rn_notify_diag_bad_frame(daemon_seen->notify, peer);
	else if (strncmp(params, "stall,", 6) == 0)
		rc = rn_notify_diag_stall(daemon_seen->notify, peer);
	else if (strncmp(params, "port_event,", 11) == 0)
		rc = raise_device_event(peer, false);
	else if (strncmp(params, "cq_event,", 9) == 0)
		rc = raise_device_event(peer, true);
	else if (strncmp(params, "cq_overrun,", 11) == 0)
		rc = rn_notify_diag_cq_overrun(daemon_seen->notify, peer);
	else
		return -EINVAL;
	rte_tel_data_start_dict(out);
	rte_tel_data_add_dict_int(out, "result", rc);
	return 0;
}

static pthread_mutex_t poll_lock = PTHREAD_MUTEX_INITIALIZER;

/* The content that a text field of /rnotify/poll shows as it is. */
static bool
printable(const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return false;
	return true;
}

/* The longest content a base64 field shows: what encodes within a
 * telemetry string (whole groups of 3 bytes). */
#define POLL_B64_BYTES ((RTE_TEL_MAX_STRING_LEN - 1) / 4 * 3u)

/* p's first len (up to POLL_B64_BYTES) bytes in base64 (RFC 4648, padded)
 * into dst. */
static void
base64(const uint8_t *p, uint32_t len, char dst[RTE_TEL_MAX_STRING_LEN])
{
	static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "abcdefghijklmnopqrstuvwxyz0123456789+/";
	char *o = dst;

	len = RTE_MIN(len, POLL_B64_BYTES);
	for (uint32_t i = 0; i < len; i += 3) {
		uint32_t left = len - i;
		uint32_t v = (uint32_t)p[i] << 16 |
			     (left > 1 ? (uint32_t)p[i + 1] << 8 : 0) |
			     (left > 2 ? p[i + 2] : 0);

		*o++ = digits[v >> 18];
		*o++ = digits[(v >> 12) & 63];
		*o++ = left > 1 ? digits[(v >> 6) & 63] : '=';
		*o++ = left > 2 ? digits[v & 63] : '=';
	}
	*o = '\0';
}

/*
 * Content into its two fields of /rnotify/poll: text shows it as it is
 * when every byte is printable ASCII (cut as a telemetry string is), b64
 * otherwise; the other one is empty. Telemetry strings must be valid JSON
 * text, which other bytes are not.
 */
static void
add_content(struct rte_tel_data *text, struct rte_tel_data *b64,
	    const uint8_t *p, uint32_t len)
{
	char s[RTE_TEL_MAX_STRING_LEN];

	if (printable(p, len)) {
		snprintf(s, sizeof(s), "%.*s", (int)len, (const char *)p);
		rte_tel_data_add_array_string(text, s);
		rte_tel_data_add_array_string(b64, "");
	} else {
		base64(p, len, s);
		rte_tel_data_add_array_string(text, "");
		rte_tel_data_add_array_string(b64, s);
	}
}

/*
 * Diagnostics: take delivered notifications, as an application would:
 * {"peer": [...], "name": [...], "msg": [...], "name_b64": [...],
 * "msg_b64": [...], "msg_len": [...]}, the i-th of each array one
 * notification (add_content(); docs/operations.md).
 */
static int
poll_now(const char *params, struct rte_tel_data *out)
{
	enum { PEER, NAME, MSG, NAME_B64, MSG_B64, MSG_LEN, N_KEYS };
	static const char *const keys[N_KEYS] = {
		"peer", "name", "msg", "name_b64", "msg_b64", "msg_len" };
	struct rn_notification got[RN_NOTIFY_POLL_MAX];
	struct rte_tel_data *arrays[N_KEYS] = { NULL };
	unsigned int n;

	(void)params;
	/* Allocated before polling, so that no failure loses a delivery. */
	for (int k = 0; k < N_KEYS; k++) {
		arrays[k] = rte_tel_data_alloc();
		if (arrays[k] == NULL) {
			for (int j = 0; j < k; j++)
				rte_tel_data_free(arrays[j]);
			return -ENOMEM;
		}
		rte_tel_data_start_array(arrays[k], k == MSG_LEN ?
					 RTE_TEL_U64_VAL : RTE_TEL_STRING_VAL);
	}
	/* Each client is its own thread, and one thread at a time may poll
	 * and read what the poll handed out. */
	pthread_mutex_lock(&poll_lock);
	n = rn_notify_poll(daemon_seen->notify, got, RN_NOTIFY_POLL_MAX);
	for (unsigned int i = 0; i < n; i++) {
		rte_tel_data_add_array_string(arrays[PEER], got[i].peer);
		add_content(arrays[NAME], arrays[NAME_B64], got[i].name,
			    got[i].name_len);
		add_content(arrays[MSG], arrays[MSG_B64], got[i].msg,
			    got[i].msg_len);
		rte_tel_data_add_array_u64(arrays[MSG_LEN], got[i].msg_len);
	}
	/* Copied out: the slots go back now, not at the next poll. */
	rn_notify_poll(daemon_seen->notify, NULL, 0);
	pthread_mutex_unlock(&poll_lock);
	rte_tel_data_start_dict(out);
	for (int k = 0; k < N_KEYS; k++)
		rte_tel_data_add_dict_container(out, keys[k], arrays[k], 0);
	return 0;
}

static int
handle_send(const char *cmd, const char *params, struct rte_tel_data *out)
{
	(void)cmd;
	return act(send_now, params, out);
}

static int
handle_send_report(const char *cmd, const char *params,
		   struct rte_tel_data *out)
{
	(void)cmd;
	return act(send_report_now, params, out);
}

static int
handle_completions(const char *cmd, const char *params,
		   struct rte_tel_data *out)
{
	(void)cmd;
	return act(completions_now, params, out);
}

static int
handle_send_burst(const char *cmd, const char *params, struct rte_tel_data *out)
{
	(void)cmd;
	return act(send_burst_now, params, out);
}

static int
handle_sim_fault(const char *cmd, const char *params, struct rte_tel_data *out)
{
	(void)cmd;
	return act(sim_fault_now, params, out);
}

static int
handle_poll(const char *cmd, const char *params, struct rte_tel_data *out)
{
	(void)cmd;
	return act(poll_now, params, out);
}

int
rn_telemetry_diag_register(const struct rn_daemon *d)
{
	daemon_seen = d;
	return rte_telemetry_register_cmd("/rnotify/send", handle_send,
		"Diagnostics: send a notification. Parameters: PEER,NAME,MSG") |
	       rte_telemetry_register_cmd("/rnotify/send_report",
		handle_send_report, "Diagnostics: send one, report its fate "
		"to /rnotify/completions. Parameters: PEER,COOKIE,NAME,MSG") |
	       rte_telemetry_register_cmd("/rnotify/completions",
		handle_completions, "Diagnostics: take the reports of sends "
		"that asked for one (cookie, status). No parameters") |
	       rte_telemetry_register_cmd("/rnotify/send_burst",
		handle_send_burst, "Diagnostics: send COUNT notifications "
		"NAME0.. in one burst. Parameters: PEER,COUNT,NAME,MSG") |
	       rte_telemetry_register_cmd("/rnotify/sim_fault", handle_sim_fault,
		"Tests, sim only. FAULT,PEER: local_qp, bad_frame, stall, "
		"port_event, cq_event, cq_overrun (operations.md)") |
	       rte_telemetry_register_cmd("/rnotify/poll", handle_poll,
		"Diagnostics: take delivered notifications (peer, name, msg, "
		"name_b64, msg_b64, msg_len). No parameters");
}
