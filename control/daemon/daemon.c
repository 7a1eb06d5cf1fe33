/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bring-up and teardown of rnotifyd. Start-up order: name claimed, signals
 * blocked, the timestamped log stream, EAL, event ring and its eventfd,
 * control loop, workers, telemetry (last, so that what it reads is
 * complete); then the control loop runs. Teardown
 * undoes it in reverse; each unwind label is named after what it undoes.
 */
#include <errno.h>
#include <stddef.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "daemon_pvt.h"
#include "rn_daemon.h"
#include "rn_notify_engine.h"
#include "rn_transfer.h"
#include "rn_eal.h"
#include "rn_version.h"

RTE_LOG_REGISTER_SUFFIX(rn_daemon_logtype, daemon, INFO);
#define RN_DAEMON_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, rn_daemon_logtype, "rnotifyd: " fmt "\n", \
		##__VA_ARGS__)

struct rn_lcore rn_workers[RTE_MAX_LCORE];

static const char *const state_names[] = {
	[RN_DAEMON_STARTING] = "starting",
	[RN_DAEMON_RUNNING] = "running",
	[RN_DAEMON_STOPPING] = "stopping",
};

const char *
rn_daemon_state_name(enum rn_daemon_state state)
{
	return state_names[state];
}

double
rn_daemon_uptime(const struct rn_daemon *d)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - d->started.tv_sec) +
	       (double)(now.tv_nsec - d->started.tv_nsec) / 1e9;
}

static void
set_state(struct rn_daemon *d, enum rn_daemon_state state)
{
	__atomic_store_n(&d->state, state, __ATOMIC_RELEASE);
}

bool
rn_daemon_stopping(const struct rn_daemon *d)
{
	return __atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == RN_DAEMON_STOPPING;
}

static void *
app_main(void *arg)
{
	struct rn_daemon *d = arg;

	d->app(d, d->app_arg);
	return NULL;
}

static void
start_app(struct rn_daemon *d)
{
	if (d->app == NULL)
		return;
	if (pthread_create(&d->app_thread, NULL, app_main, d) != 0) {
		RN_DAEMON_LOG(ERR, "application thread: %s", strerror(errno));
		kill(getpid(), SIGTERM);
		return;
	}
	d->app_started = true;
}

static void
handle_event(struct rn_daemon *d, const struct rn_lcore_event *ev)
{
	switch ((enum rn_lcore_event_type)ev->type) {
	case RN_LCORE_EVENT_PONG:
		if (d->pongs_pending > 0 && --d->pongs_pending == 0) {
			set_state(d, RN_DAEMON_RUNNING);
			RN_DAEMON_LOG(NOTICE, "running: %u worker lcore(s), "
				      "control on lcore %u", d->n_workers,
				      rte_get_main_lcore());
			start_app(d);
		}
		break;
	case RN_LCORE_EVENT_CLIENT_ADDED:
	case RN_LCORE_EVENT_CLIENT_REMOVED:
	case RN_LCORE_EVENT_CLIENT_REGISTERED:
	case RN_LCORE_EVENT_CLIENT_DEREGISTERED:
		if (d->clients != NULL)
			rn_client_server_event(d->clients, ev);
		break;
	default:
		if (d->plane != NULL)
			rn_plane_event(d->plane, ev);
		break;
	}
}

/* The events eventfd fired: drain the ring. */
static void
on_events(struct rn_control *ctl, void *arg, uint32_t revents)
{
	struct rn_daemon *d = arg;
	struct rn_lcore_event ev;
	eventfd_t count;

	(void)ctl;
	(void)revents;
	eventfd_read(d->events_fd, &count);
	while (rte_ring_sc_dequeue_elem(d->events, &ev, sizeof(ev)) == 0) {
		handle_event(d, &ev);
		__atomic_store_n(&d->events_handled, d->events_handled + 1,
				 __ATOMIC_RELAXED);
	}
}

static void
on_tick(struct rn_control *ctl, void *arg)
{
	struct rn_daemon *d = arg;

	(void)ctl;
	if (d->plane != NULL)
		rn_plane_tick(d->plane);
	if (d->clients != NULL)
		rn_client_server_tick(d->clients);
}

/* What the plane answers a peer's descriptor request with: the region
 * the application published under that name (rn_transfer_publish()). */
static int
serve_descriptor(void *arg, const char *name, void *blob, size_t cap)
{
	return rn_transfer_published(arg, name, blob, cap);
}

/* Often enough for heartbeats and for declaring a peer dead on time. */
static uint32_t
tick_ms(const struct rn_config *cfg)
{
	return RTE_MAX(RTE_MIN(cfg->control.heartbeat_ms / 2,
			       (uint32_t)RN_DAEMON_TICK_MAX_MS), 5u);
}

static void
drain_events(struct rn_daemon *d)
{
	on_events(d->ctl, d, 0);
}

/*
 * Diagnostic telemetry commands that got in before STOPPING finish first:
 * a send may wait for a worker's or this thread's answer, so events are
 * still handled meanwhile.
 */
static void
wait_for_telemetry(struct rn_daemon *d)
{
	uint64_t deadline = rte_get_tsc_cycles() +
			    rte_get_tsc_hz() * RN_DAEMON_DRAIN_S;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);   /* pairs with act() */
	while (rn_telemetry_acting() != 0 && rte_get_tsc_cycles() < deadline) {
		drain_events(d);
		usleep(1000);
	}
}

/*
 * Detach every client (their sockets close, their regions say closed) and
 * wait, as long as endpoints get to drain, for the lcores to let go.
 */
static void
close_clients(struct rn_daemon *d)
{
	uint64_t deadline = rte_get_tsc_cycles() +
			    rte_get_tsc_hz() * RN_DAEMON_DRAIN_S;
	unsigned int held;

	if (d->clients == NULL)
		return;
	while ((held = rn_client_server_shutdown(d->clients)) != 0 &&
	       rte_get_tsc_cycles() < deadline) {
		drain_events(d);
		usleep(1000);
	}
	if (held != 0)
		RN_DAEMON_LOG(WARNING, "%u client(s) not let go by the lcores "
			      "in %d s", held, RN_DAEMON_DRAIN_S);
}

/* Close every endpoint and give the lcores time to drain their QPs. */
static void
close_endpoints(struct rn_daemon *d)
{
	uint64_t hz = rte_get_tsc_hz();
	uint64_t deadline = rte_get_tsc_cycles() + hz * RN_DAEMON_DRAIN_S;
	unsigned int dropped = 0;

	if (rn_plane_shutdown(d->plane) == 0)
		return;
	while (rn_plane_requests_out(d->plane) != 0 &&
	       rte_get_tsc_cycles() < deadline) {
		/* Nobody polls any more: slots held by deliveries would keep
		 * their endpoints open. */
		dropped += rn_notify_discard(d->notify);
		rn_plane_push_commands(d->plane);
		drain_events(d);
		usleep(1000);
	}
	if (dropped != 0)
		RN_DAEMON_LOG(WARNING, "%u notification(s) delivered but never "
			      "polled were dropped at shutdown", dropped);
	if (rn_plane_requests_out(d->plane) != 0)
		RN_DAEMON_LOG(WARNING, "%u endpoint(s) did not drain in %d s",
			      rn_plane_requests_out(d->plane), RN_DAEMON_DRAIN_S);
}

/*
 * A worker's NIC raised asynchronous events (a port down, a CQ overrun, a
 * fatal device error), which no CQE reports: each is logged and counted
 * (device_events). A fatal one stopped the worker's queues, and so does a
 * descriptor that cannot be read any more (the device is gone): the worker
 * is taken out of service (rn_plane_worker_failed()).
 */
static void
on_device_event(struct rn_control *ctl, void *arg, uint32_t revents)
{
	struct rn_device_watch *w = arg;
	struct rn_lcore *lc = w->d->worker_ptrs[w->worker];
	char text[128];
	bool fatal;
	int rc;

	(void)revents;
	while ((rc = lc->nic->ops->take_event(lc->nic, text, sizeof(text),
					      &fatal)) == 1) {
		/* Its only writer; telemetry reads it relaxed. */
		__atomic_store_n(&lc->stats.device_events,
				 lc->stats.device_events + 1,
				 __ATOMIC_RELAXED);
		if (!fatal) {
			RN_DAEMON_LOG(WARNING, "lcore %u: device event: %s",
				      lc->lcore_id, text);
			continue;
		}
		RN_DAEMON_LOG(ERR, "lcore %u: device event: %s: the worker's "
			      "queues stopped; its endpoints fail until "
			      "rnotifyd restarts", lc->lcore_id, text);
		rn_plane_worker_failed(w->d->plane, w->worker, text);
	}
	if (rc < 0) {
		/* Still readable, and unreadable: not watched any more, or
		 * the loop would spin on it. */
		snprintf(text, sizeof(text), "device events unreadable: %s",
			 strerror(-rc));
		RN_DAEMON_LOG(ERR, "lcore %u: %s: its endpoints fail until "
			      "rnotifyd restarts", lc->lcore_id, text);
		rn_control_unwatch(ctl, lc->nic->ops->event_fd(lc->nic));
		rn_plane_worker_failed(w->d->plane, w->worker, text);
	}
}

/* Hear worker i's NIC's asynchronous events, if it has any to tell. */
static int
watch_device(struct rn_daemon *d, unsigned int i)
{
	struct rn_lcore *lc = d->worker_ptrs[i];
	const struct rn_nic_ops *ops = lc->nic->ops;

	if (ops->event_fd == NULL || ops->take_event == NULL)
		return 0;
	d->device_watches[i] = (struct rn_device_watch){ .d = d, .worker = i };
	return rn_control_watch(d->ctl, ops->event_fd(lc->nic), EPOLLIN,
				on_device_event, &d->device_watches[i]);
}

static int
start_workers(struct rn_daemon *d)
{
	unsigned int id;
	int rc;

	RTE_LCORE_FOREACH_WORKER(id) {
		char why[RN_CONFIG_ERROR_MAX];

		rc = rn_lcore_init(&rn_workers[id], id, &d->cfg, d->events,
				   d->events_fd, why, sizeof(why));
		if (rc != 0) {
			RN_DAEMON_LOG(ERR, "lcore %u: %s", id, why);
			return rc;
		}
		d->worker_ptrs[d->n_workers] = &rn_workers[id];
		d->worker_ids[d->n_workers++] = id;
		if (d->clients != NULL)
			rn_client_server_set_lcore(d->clients,
						   d->n_workers - 1,
						   &rn_workers[id]);
		rc = watch_device(d, d->n_workers - 1);
		if (rc != 0) {
			RN_DAEMON_LOG(ERR, "lcore %u: device events: %s", id,
				      strerror(-rc));
			return rc;   /* stop_workers() finishes it too */
		}
	}
	for (unsigned int i = 0; i < d->n_workers; i++) {
		struct rn_lcore *lc = &rn_workers[d->worker_ids[i]];
		struct rn_lcore_cmd ping = { .type = RN_LCORE_CMD_PING };

		rc = rte_eal_remote_launch(rn_lcore_run, lc, lc->lcore_id);
		if (rc != 0) {
			RN_DAEMON_LOG(ERR, "lcore %u: launch failed: %s",
				      lc->lcore_id, strerror(-rc));
			return rc;
		}
		/* The first pong from every worker makes the daemon RUNNING. */
		d->pongs_pending++;
		rn_lcore_cmd_send(lc, ping);
	}
	return 0;
}

/* Listen for clients: on [client] socket, or <run-time dir>/<name>.sock. */
static int
start_clients(struct rn_daemon *d, char *why, size_t why_len)
{
	char dir[256], path[sizeof(dir) + RN_CONFIG_NAME_MAX + 8];

	if (d->cfg.client.socket[0] != '\0') {
		snprintf(path, sizeof(path), "%s", d->cfg.client.socket);
	} else {
		rn_daemon_runtime_dir(dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/%s.sock", dir,
			 d->cfg.dataplane.name);
	}
	return rn_client_server_start(d->clients, d->ctl, d->plane, path, why,
				      why_len);
}

static void
stop_workers(struct rn_daemon *d)
{
	for (unsigned int i = 0; i < d->n_workers; i++) {
		struct rn_lcore_cmd stop = { .type = RN_LCORE_CMD_STOP };

		/* A full ring would drop the stop: retry until it lands. */
		while (rn_lcore_cmd_send(&rn_workers[d->worker_ids[i]],
					 stop) != 0)
			usleep(1000);
	}
	rte_eal_mp_wait_lcore();
	for (unsigned int i = 0; i < d->n_workers; i++)
		rn_lcore_fini(&rn_workers[d->worker_ids[i]]);
}

/*
 * Every log line goes to the timestamped stream, EAL's own from its start
 * on. Only to stderr, not to EAL's default stream, which also sends each
 * line to syslog: on a full /dev/log (a journald behind) that send blocks
 * the thread that logs, a worker lcore included. Supervisors take stderr
 * into their journal anyway (a full pipe there can block a write too,
 * later: workers log little, and per frame at most once a second).
 */
static int
open_log(struct rn_daemon *d, struct rn_config_error *err)
{
	d->log = rn_daemon_log_open();
	if (d->log == NULL) {
		snprintf(err->text, sizeof(err->text), "log stream: %s",
			 strerror(errno));
		return -ENOMEM;
	}
	rte_openlog_stream(d->log);
	return 0;
}

static void
close_log(struct rn_daemon *d)
{
	if (d->log == NULL)
		return;
	rte_openlog_stream(NULL);
	fclose(d->log);
	d->log = NULL;
}

int
rn_daemon_run(struct rn_daemon *d, const char *prog)
{
	struct rn_config_error err;
	char why[RN_CONFIG_ERROR_MAX];
	struct rn_transfer_host host;
	int rc, sig;

	clock_gettime(CLOCK_MONOTONIC, &d->started);
	d->name_fd = rn_daemon_lock_name(d->cfg.dataplane.name, err.text,
					  sizeof(err.text));
	rc = d->name_fd < 0 ? d->name_fd : rn_control_block_signals();
	if (rc != 0 && d->name_fd >= 0)
		snprintf(err.text, sizeof(err.text), "cannot block signals: %s",
			 strerror(-rc));
	if (rc == 0)
		rc = open_log(d, &err);
	if (rc == 0)
		rc = rn_eal_start(&d->cfg, prog, &d->hugepages, &err);
	if (rc != 0) {
		/* Nothing started: the command's one error line, untimed like
		 * a configuration error's. */
		fprintf(stderr, "rnotifyd: %s\n", err.text);
		close_log(d);
		rn_daemon_unlock_name(d->cfg.dataplane.name, d->name_fd);
		return 1;
	}
	RN_DAEMON_LOG(NOTICE, "%s starting: name %s, config %s, provider %s",
		      RN_VERSION, d->cfg.dataplane.name, d->config_path,
		      rn_nic_provider_name(d->cfg.nic.provider));
	d->events = rte_ring_create_elem("rn_events",
					 sizeof(struct rn_lcore_event),
					 RN_DAEMON_EVENT_RING_SIZE,
					 (int)rte_socket_id(),
					 RING_F_SC_DEQ | RING_F_EXACT_SZ);
	if (d->events == NULL) {
		RN_DAEMON_LOG(ERR, "event ring: %s", rte_strerror(rte_errno));
		rc = -ENOMEM;
		goto stop_eal;
	}
	d->events_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (d->events_fd < 0) {
		rc = -errno;
		RN_DAEMON_LOG(ERR, "eventfd: %s", strerror(errno));
		goto free_events;
	}
	rc = rn_control_create(tick_ms(&d->cfg), on_tick, d, &d->ctl);
	if (rc == 0)
		rc = rn_control_watch(d->ctl, d->events_fd, EPOLLIN, on_events,
				      d);
	if (rc != 0) {
		RN_DAEMON_LOG(ERR, "control loop: %s", strerror(-rc));
		goto destroy_control;
	}
	if (d->cfg.client.enabled) {
		rc = rn_client_server_create(&d->cfg,
					     d->cfg.dataplane.lcores.count - 1,
					     &d->clients, why, sizeof(why));
		if (rc != 0) {
			RN_DAEMON_LOG(ERR, "%s", why);
			goto destroy_control;
		}
	}
	set_state(d, RN_DAEMON_STARTING);
	rc = start_workers(d);
	if (rc != 0)
		goto stop_workers;
	rc = rn_plane_create(&d->cfg, d->ctl, d->worker_ptrs, d->n_workers,
			     &d->plane, why, sizeof(why));
	if (rc != 0) {
		RN_DAEMON_LOG(ERR, "%s", why);
		goto stop_workers;
	}
	rc = rn_notify_create(d->plane, d->worker_ptrs, d->n_workers,
			      &d->notify);
	if (rc != 0) {
		RN_DAEMON_LOG(ERR, "notification engine: %s", strerror(-rc));
		goto stop_workers;
	}
	rn_transfer_host_plane(d->plane, d->cfg.dataplane.name, &host);
	rc = rn_transfer_create(&host, d->worker_ptrs, d->n_workers,
				d->cfg.transfer.chunk_size, &d->transfer);
	if (rc != 0) {
		RN_DAEMON_LOG(ERR, "transfer engine: %s", strerror(-rc));
		goto stop_workers;
	}
	rn_plane_set_descriptors(d->plane, serve_descriptor, d->transfer);
	if (d->clients != NULL) {
		rc = start_clients(d, why, sizeof(why));
		if (rc != 0) {
			RN_DAEMON_LOG(ERR, "%s", why);
			goto stop_workers;
		}
	}
	if (d->cfg.telemetry.enabled && rn_telemetry_register(d) != 0)
		RN_DAEMON_LOG(WARNING, "telemetry commands not registered");

	sig = rn_control_run(d->ctl);
	if (sig != 0)
		RN_DAEMON_LOG(NOTICE, "SIG%s received: stopping",
			      sigabbrev_np(sig));
	set_state(d, RN_DAEMON_STOPPING);
	if (d->app_started)
		pthread_join(d->app_thread, NULL);
	wait_for_telemetry(d);
	close_clients(d);
	close_endpoints(d);
stop_workers:
	stop_workers(d);
	/* The lcores are gone: what clients they still held is freed. */
	rn_client_server_close(d->clients);
	rn_transfer_free(d->transfer);
	d->transfer = NULL;
	if (d->notify != NULL)
		rn_notify_free(d->notify);   /* its rings are EAL memory */
	d->notify = NULL;
	if (d->plane != NULL)
		rn_plane_close(d->plane);
destroy_control:
	if (d->ctl != NULL)
		rn_control_destroy(d->ctl);
	close(d->events_fd);
free_events:
	rte_ring_free(d->events);
stop_eal:
	rn_eal_stop();
	/* Freed after EAL: telemetry threads may read it until then. */
	if (d->plane != NULL)
		rn_plane_free(d->plane);
	d->plane = NULL;
	rn_client_server_free(d->clients);
	d->clients = NULL;
	rn_daemon_unlock_name(d->cfg.dataplane.name, d->name_fd);
	if (rc == 0)
		RN_DAEMON_LOG(NOTICE, "stopped cleanly");
	close_log(d);
	return rc == 0 ? 0 : 1;
}
