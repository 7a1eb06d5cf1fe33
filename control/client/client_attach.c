/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A client's life in the daemon: ATTACH makes its region (a sealed
 * memfd, on hugepages where the kernel gives them; with its transfer
 * batch slots) and its eventfd,
 * replies with the descriptors and hands the link to every worker lcore
 * (RN_LCORE_CMD_CLIENT_ADD). When its socket closes, however it closes,
 * the region is marked closed, its publications withdrawn and every
 * lcore is told CLIENT_REMOVE; only when each answered CLIENT_REMOVED are
 * its memory regions and the region unmapped, the eventfd closed and the
 * agent name free again. Commands that find an
 * lcore's ring full wait here, in order, and never stall this thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client_pvt.h"
#include "rn_client_region.h"

#define HUGEPAGE_DEFAULT (2u << 20)

/* ---- commands to the lcores ---- */

/* Onto worker's ring, oldest first, as many as fit. True when none wait. */
static bool
push(struct rn_client_server *s, unsigned int worker)
{
	struct rn_client_cmd_waiting *w;

	while ((w = s->backlog[worker].head) != NULL) {
		if (rn_lcore_cmd_send(s->workers[worker], w->cmd) != 0)
			return false;
		s->backlog[worker].head = w->next;
		if (w->next == NULL)
			s->backlog[worker].tail = NULL;
		free(w);
	}
	return true;
}

void
rn_client_cmd_send(struct rn_client_server *s, unsigned int worker,
		   struct rn_lcore_cmd cmd)
{
	struct rn_client_cmd_waiting *w;

	if (push(s, worker) && rn_lcore_cmd_send(s->workers[worker], cmd) == 0)
		return;
	w = malloc(sizeof(*w));
	if (w == NULL) {
		/* The last resort: without memory, wait for the ring. */
		while (!push(s, worker) ||
		       rn_lcore_cmd_send(s->workers[worker], cmd) != 0)
			;
		return;
	}
	if (s->backlog[worker].head == NULL)
		RN_CLIENT_LOG(WARNING, "lcore %u: command ring full; client "
			      "commands wait on the control thread",
			      s->workers[worker]->lcore_id);
	*w = (struct rn_client_cmd_waiting){ .cmd = cmd };
	if (s->backlog[worker].tail != NULL)
		s->backlog[worker].tail->next = w;
	else
		s->backlog[worker].head = w;
	s->backlog[worker].tail = w;
}

void
rn_client_cmd_push(struct rn_client_server *s)
{
	for (unsigned int i = 0; i < s->n_workers; i++)
		push(s, i);
}

void
rn_client_cmd_backlog_free(struct rn_client_server *s)
{
	for (unsigned int i = 0; i < s->n_workers; i++) {
		while (s->backlog[i].head != NULL) {
			struct rn_client_cmd_waiting *w = s->backlog[i].head;

			s->backlog[i].head = w->next;
			free(w);
		}
		s->backlog[i].tail = NULL;
	}
}

static void
to_every_lcore(struct rn_client_server *s, struct rn_client_conn *c,
	       uint32_t type)
{
	struct rn_lcore_cmd cmd = { .type = type,
				    .cookie = (uintptr_t)&c->link };

	for (unsigned int i = 0; i < s->n_workers; i++)
		rn_client_cmd_send(s, i, cmd);
}

/* ---- the region ---- */

/* The default huge page size, which MFD_HUGETLB uses. */
static size_t
hugepage_size(void)
{
	static size_t size;
	char line[128];
	FILE *f;

	if (size != 0)
		return size;
	size = HUGEPAGE_DEFAULT;
	f = fopen("/proc/meminfo", "re");
	if (f == NULL)
		return size;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long kb;

		if (sscanf(line, "Hugepagesize: %lu kB", &kb) == 1 && kb != 0) {
			size = (size_t)kb << 10;
			break;
		}
	}
	fclose(f);
	return size;
}

/* A memfd of at least size bytes, mapped; on hugepages when huge and the
 * kernel has them free. Returns the fd or -errno. */
static int
map_memfd(uint64_t size, bool huge, void **mem, uint64_t *mapped)
{
	size_t unit = huge ? hugepage_size() : (size_t)sysconf(_SC_PAGESIZE);
	uint64_t len = (size + unit - 1) / unit * unit;
	unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING |
			     (huge ? MFD_HUGETLB : 0);
	int fd = memfd_create("rnotify-client", flags);
	int rc;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) != 0)
		goto fail;
	/* Hugepages are reserved here: too few free fails now, not at the
	 * first touch. */
	*mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*mem == MAP_FAILED)
		goto fail;
	/* Neither side may change its size under the other's mapping (a
	 * shrunk memfd would SIGBUS whoever touches the lost part), nor add
	 * seals. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
	    != 0) {
		munmap(*mem, len);
		goto fail;
	}
	*mapped = len;
	return fd;

fail:
	rc = -errno;
	close(fd);
	return rc;
}

static int
make_region(struct rn_client_server *s, struct rn_client_conn *c)
{
	const struct rn_client_config *cc = &s->cfg->client;
	uint64_t size = rn_client_region_size_xfer(s->n_workers, cc->ring_size,
						   s->buf_size, cc->xfer_slots,
						   cc->xfer_slot_size);
	void *mem = NULL;
	uint64_t mapped = 0;
	bool huge = true;
	int fd, rc;

	if (size == 0)
		return -EINVAL;
	fd = map_memfd(size, true, &mem, &mapped);
	if (fd < 0) {
		huge = false;
		fd = map_memfd(size, false, &mem, &mapped);
	}
	if (fd < 0)
		return fd;
	rc = rn_client_region_init_xfer(mem, s->n_workers, cc->ring_size,
					s->buf_size, cc->xfer_slots,
					cc->xfer_slot_size);
	if (rc != 0) {
		munmap(mem, mapped);
		close(fd);
		return rc;
	}
	c->link.region = mem;
	c->link.region_size = mapped;
	/* Read before the client has the region: the shape just made. */
	rn_client_ring_end_init(&c->events_ring, rn_client_events_ring(mem),
				rn_client_events_ring(mem)->mask, true);
	pthread_mutex_lock(&s->lock);
	s->totals.hugepages = huge;
	pthread_mutex_unlock(&s->lock);
	return fd;
}

/* ---- attach ---- */

static bool
agent_taken(const struct rn_client_server *s, const char *agent,
	    uint32_t len)
{
	const struct rn_client_conn *c;

	/* A closing client's name is not free until the lcores let go. */
	TAILQ_FOREACH(c, &s->conns, next)
		if ((c->state == RN_CONN_ADDING ||
		     c->state == RN_CONN_ATTACHED ||
		     c->state == RN_CONN_CLOSING) &&
		    c->link.agent_len == len &&
		    memcmp(c->link.agent, agent, len) == 0)
			return true;
	return false;
}

static unsigned int
clients(const struct rn_client_server *s)
{
	const struct rn_client_conn *c;
	unsigned int n = 0;

	TAILQ_FOREACH(c, &s->conns, next)
		n += c->state == RN_CONN_ADDING ||
		     c->state == RN_CONN_ATTACHED ||
		     c->state == RN_CONN_CLOSING;
	return n;
}

static int
reply_attached(struct rn_client_server *s, struct rn_client_conn *c,
	       int region_fd)
{
	struct rn_client_attached a = {
		.region_size = c->link.region_size,
		.n_lcores = s->n_workers,
		.ring_size = s->cfg->client.ring_size,
		.buf_size = s->buf_size,
		.client_id = c->link.client_id,
	};
	int fds[3 + RN_CLIENT_MAX_LCORES];

	snprintf(a.node, sizeof(a.node), "%s", s->cfg->dataplane.name);
	fds[0] = region_fd;
	fds[1] = s->status_fd;
	fds[2] = c->link.efd;
	for (unsigned int i = 0; i < s->n_workers; i++)
		fds[3 + i] = s->workers[i]->wake_fd;
	return rn_client_server_reply(c, RN_CLIENT_MSG_ATTACH, 0, &a,
				      sizeof(a), fds, 3 + s->n_workers);
}

int
rn_client_server_attach(struct rn_client_server *s, struct rn_client_conn *c,
			const char *agent, uint32_t len)
{
	int region_fd, rc;

	if (len == 0 || len > RN_CLIENT_AGENT_MAX ||
	    memchr(agent, '\0', len) != NULL)
		return -EINVAL;
	if (agent_taken(s, agent, len))
		return -EADDRINUSE;
	if (clients(s) >= s->cfg->client.max_clients)
		return -EUSERS;
	c->link.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->link.efd < 0)
		return errno == EMFILE || errno == ENFILE ? -EMFILE : -ENOMEM;
	region_fd = make_region(s, c);
	if (region_fd < 0) {
		RN_CLIENT_LOG(WARNING, "client pid %d: region: %s",
			      (int)c->cred.pid, strerror(-region_fd));
		rc = region_fd == -EMFILE || region_fd == -ENFILE ? -EMFILE :
								    -ENOMEM;
		goto close_efd;
	}
	c->link.client_id = ++s->next_id;
	c->link.agent_len = (uint8_t)len;
	memcpy(c->link.agent, agent, len);
	c->region_fd = region_fd;
	c->add_status = 0;
	c->lcores_left = s->n_workers;
	/* From here the agent is taken and counted; conn_free gives it
	 * back, however the attach ends. */
	pthread_mutex_lock(&s->lock);
	c->state = RN_CONN_ADDING;
	c->info = (struct rn_client_info){
		.id = c->link.client_id,
		.pid = c->cred.pid,
		.uid = c->cred.uid,
		.gid = c->cred.gid,
	};
	memcpy(c->info.agent, agent, len);
	s->totals.attached++;
	pthread_mutex_unlock(&s->lock);
	s->unattached--;
	to_every_lcore(s, c, RN_LCORE_CMD_CLIENT_ADD);
	return 0;

close_efd:
	close(c->link.efd);
	c->link.efd = -1;
	return rc;
}

void
rn_client_server_added(struct rn_client_server *s, struct rn_client_conn *c,
		       int status)
{
	int rc;

	if (status != 0 && c->add_status == 0)
		c->add_status = status;
	if (c->lcores_left > 0 && --c->lcores_left > 0)
		return;
	/* Attached before the reply goes: a client that asks telemetry
	 * right after it must find itself listed. */
	pthread_mutex_lock(&s->lock);
	c->state = RN_CONN_ATTACHED;
	c->info.attached_unix_ms = rn_client_wall_ms();
	pthread_mutex_unlock(&s->lock);
	rc = c->add_status != 0 ? c->add_status :
				  reply_attached(s, c, c->region_fd);
	/* The client has its own descriptor now; the mapping stays ours. */
	close(c->region_fd);
	c->region_fd = -1;
	if (rc == 0) {
		pthread_mutex_lock(&s->lock);
		s->totals.attaches++;
		pthread_mutex_unlock(&s->lock);
	}
	if (rc != 0) {
		/* The lcores that took it let go, as after a close. */
		if (c->add_status != 0)
			rn_client_server_reply(c, RN_CLIENT_MSG_ATTACH, rc, NULL,
					       0, NULL, 0);
		RN_CLIENT_LOG(WARNING, "client %u not attached: %s",
			      c->link.client_id, strerror(-rc));
		rn_client_conn_close(s, c);
		return;
	}
	RN_CLIENT_LOG(INFO, "client %u attached: agent '%.*s', pid %d, uid %u",
		      c->link.client_id, (int)c->link.agent_len,
		      c->link.agent, (int)c->cred.pid,
		      (unsigned int)c->cred.uid);
}

/* ---- teardown ---- */

void
rn_client_conn_close(struct rn_client_server *s, struct rn_client_conn *c)
{
	if (c->fd >= 0) {
		rn_control_unwatch(s->ctl, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	if (c->region_fd >= 0) {
		close(c->region_fd);
		c->region_fd = -1;
	}
	if (c->state != RN_CONN_ATTACHED && c->state != RN_CONN_ADDING) {
		if (c->state == RN_CONN_CLOSING)
			return;
		s->unattached--;
		rn_client_conn_free(s, c);
		return;
	}
	/* Said first: a client still running (one that detached) learns it
	 * at its next call, and its wait ends. */
	__atomic_store_n(&c->link.region->closed, 1, __ATOMIC_RELEASE);
	rn_client_link_wake(&c->link);
	rn_client_xfer_closing(s, c);
	pthread_mutex_lock(&s->lock);
	c->state = RN_CONN_CLOSING;
	pthread_mutex_unlock(&s->lock);
	c->lcores_left = s->n_workers;
	to_every_lcore(s, c, RN_LCORE_CMD_CLIENT_REMOVE);
	RN_CLIENT_LOG(INFO, "client %u detached: agent '%.*s'",
		      c->link.client_id, (int)c->link.agent_len,
		      c->link.agent);
}

void
rn_client_conn_free(struct rn_client_server *s, struct rn_client_conn *c)
{
	pthread_mutex_lock(&s->lock);
	TAILQ_REMOVE(&s->conns, c, next);
	if (c->state == RN_CONN_ADDING || c->state == RN_CONN_ATTACHED ||
	    c->state == RN_CONN_CLOSING)
		s->totals.attached--;
	pthread_mutex_unlock(&s->lock);
	/* Its memory regions first: the lcores deregistered them before
	 * they answered CLIENT_REMOVED. */
	rn_client_xfer_free(c);
	if (c->link.region != NULL)
		munmap(c->link.region, c->link.region_size);
	if (c->link.efd >= 0)
		close(c->link.efd);
	free(c);
}
