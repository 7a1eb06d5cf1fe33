/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CONFIG_H
#define RN_CONFIG_H

/*
 * rnotifyd configuration: one INI file, parsed with DPDK's rte_cfgfile,
 * validated against the schema in config_schema.c, then overridden by the
 * only two environment variables the process reads (see rn_config_load()).
 * docs/configuration.md lists every key, its default and its range.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RN_CONFIG_NAME_MAX 32     /* names: [A-Za-z0-9_-], 1..31 bytes */
#define RN_CONFIG_TEXT_MAX 64     /* device names, addresses */
#define RN_CONFIG_PATH_MAX 256    /* file names */
#define RN_CONFIG_SECRET_MIN 16   /* bytes of a shared secret, at least */
#define RN_CONFIG_SECRET_MAX 1024 /* and at most */
#define RN_CONFIG_MAX_PEERS 256
#define RN_CONFIG_MAX_LCORES 128  /* RTE_MAX_LCORE of Debian's DPDK */
#define RN_CONFIG_MAX_CPU 1023    /* CPU_SETSIZE - 1 */
#define RN_CONFIG_ERROR_MAX 512
#define RN_CONFIG_ALLOW_MAX 32    /* [client] allow: users and groups */
/* Worker lcores a client can talk to (RN_CLIENT_MAX_LCORES): more are
 * refused while [client] is enabled. */
#define RN_CONFIG_CLIENT_MAX_WORKERS 16
/* sizeof(sun_path) of a Unix socket address, with its NUL. */
#define RN_CONFIG_SOCKET_PATH_MAX 108

enum rn_hugepages_mode {
	RN_HUGEPAGES_AUTO,  /* use them when the machine has enough free */
	RN_HUGEPAGES_ON,    /* required: start-up fails without them */
	RN_HUGEPAGES_OFF,   /* ordinary memory (EAL --no-huge) */
};

enum rn_idle_policy {
	RN_IDLE_BUSY,       /* poll forever: lowest latency, one core per lcore */
	RN_IDLE_ADAPTIVE,   /* after idle_polls empty polls, sleep until woken */
};

enum rn_nic_provider {
	RN_NIC_SIM,         /* the project's software mlx5 device */
	RN_NIC_MLX5,        /* a ConnectX NIC through rdma-core's mlx5 provider */
};

/* Ascending lcore ids; the first runs the control thread, the rest workers. */
struct rn_lcore_list {
	uint32_t count;
	uint16_t ids[RN_CONFIG_MAX_LCORES];
};

struct rn_dataplane_config {
	char name[RN_CONFIG_NAME_MAX];  /* EAL file prefix rnotify-<name> */
	struct rn_lcore_list lcores;
	struct rn_lcore_list cpus;      /* the CPU of each lcore, in order;
					 * none: lcore N runs on CPU N */
	enum rn_hugepages_mode hugepages;
	uint32_t memory_mb;
	enum rn_idle_policy idle;
	uint32_t idle_polls;
	uint32_t idle_sleep_us;         /* longest sleep, so timers still run */
};

struct rn_nic_config {
	enum rn_nic_provider provider;
	char device[RN_CONFIG_TEXT_MAX];
	uint32_t port;
	uint32_t gid_index;
	uint32_t traffic_class; /* RoCE v2: the IP header's DSCP << 2 | ECN */
	uint32_t service_level; /* the priority (VLAN PCP) where the port
				 * maps it from the SL */
	uint32_t data_qps;      /* RDMA READ/WRITE QPs per endpoint */
	uint32_t qp_timeout;    /* IB ACK timeout code: 4.096 us * 2^n */
	uint32_t qp_retry_cnt;  /* transport retries before a QP fails */
	uint32_t cq_size;       /* CQEs of each of a worker's CQs */
	uint32_t cqs_per_lcore; /* how far a worker's CQs may grow */
};

struct rn_notify_config {
	bool enabled;         /* false: no notification QPs, all over TCP */
	bool oob_fallback;    /* true: no native channel or too big -> TCP */
	uint32_t slots;       /* receive slots (and send slots) per endpoint */
	uint32_t slot_size;   /* bytes; name + msg <= slot_size - 8 */
	uint32_t max_inline;  /* notifications (name + msg) up to this size go
			       * inline; their frame is 8 bytes more */
	uint32_t endpoints_per_lcore; /* native channels one lcore can hold */
};

struct rn_transfer_config {
	uint32_t chunk_size;  /* bytes: the largest WQE a transfer is cut
			       * into (docs/transfers.md) */
};

struct rn_control_config {
	char listen[RN_CONFIG_TEXT_MAX]; /* IPv4 or IPv6 literal */
	uint32_t port;                   /* 0: any free port */
	uint32_t connect_timeout_ms;
	uint32_t heartbeat_ms;
	uint32_t dead_after_ms;          /* silence that declares a peer dead */
	uint32_t reconnect_min_ms;       /* first retry after a failure */
	uint32_t reconnect_max_ms;       /* backoff cap */
	/* The shared secret peers prove they know (docs/security.md): the
	 * files' names, "" for none, and their contents once loaded. */
	char secret_file[RN_CONFIG_PATH_MAX];
	char secret_file_next[RN_CONFIG_PATH_MAX];  /* rotation: also valid */
	bool accept_unknown;             /* with a secret: unconfigured names */
	uint8_t secret[2][RN_CONFIG_SECRET_MAX];    /* current, next */
	uint32_t secret_len[2];          /* 0: none */
};

enum rn_peer_connect {
	RN_PEER_ON_DEMAND,      /* at the first send or transfer */
	RN_PEER_EAGER,          /* at start-up, and kept up */
};

struct rn_peer_config {
	char name[RN_CONFIG_NAME_MAX];   /* the peer's [dataplane] name */
	char address[RN_CONFIG_TEXT_MAX];
	uint32_t port;
	enum rn_peer_connect connect;
};

struct rn_telemetry_config {
	bool enabled;
};

/* A group named in the file, resolved when it was loaded. */
struct rn_config_group {
	bool set;                        /* "": none */
	uint32_t gid;
	char text[RN_CONFIG_TEXT_MAX];   /* as written: a name or a gid */
};

/* Users and groups, resolved when the file was loaded. */
struct rn_config_allow {
	uint32_t count;
	struct {
		uint32_t id;                 /* a uid, or a gid when group */
		bool group;
	} entry[RN_CONFIG_ALLOW_MAX];
	char text[RN_CONFIG_PATH_MAX];   /* as written */
};

/* Client processes (control/client, docs/client.md). */
struct rn_client_config {
	bool enabled;
	char socket[RN_CONFIG_PATH_MAX]; /* "": <run-time dir>/<name>.sock */
	uint32_t mode;                   /* of the socket file */
	struct rn_config_group group;    /* of the socket file */
	struct rn_config_allow allow;    /* besides the daemon's own uid */
	uint32_t max_clients;
	uint32_t ring_size;              /* entries of each client ring */
	uint32_t hold_max;               /* frames an lcore keeps for one
					  * client whose deliver ring is full */
	bool peers_from_clients;         /* PEER_ADD / PEER_REMOVE allowed */
	uint32_t xfer_slots;             /* transfer batch slots per lcore in
					  * each client's region; 0: no
					  * transfers (REG: -ENOTSUP) */
	uint32_t xfer_slot_size;         /* bytes per slot, a multiple of 64 */
};

struct rn_config {
	struct rn_dataplane_config dataplane;
	struct rn_nic_config nic;
	struct rn_notify_config notify;
	struct rn_transfer_config transfer;
	struct rn_control_config control;
	struct rn_telemetry_config telemetry;
	struct rn_client_config client;
	uint32_t n_peers;
	struct rn_peer_config peers[RN_CONFIG_MAX_PEERS];
};

/* One line, "what failed: why", ready to print. */
struct rn_config_error {
	char text[RN_CONFIG_ERROR_MAX];
};

/* Environment variables that override [notify]; no others are read. */
#define RN_ENV_NOTIFY_ENABLED      "MC_RDMA_NOTIFY_ENABLED"
#define RN_ENV_NOTIFY_OOB_FALLBACK "MC_RDMA_NOTIFY_OOB_FALLBACK"

/*
 * Fill cfg with every key's default. Peers: none.
 */
void rn_config_defaults(struct rn_config *cfg);

/*
 * Load path over the defaults, then apply the environment overrides.
 * On failure cfg is unspecified and err holds one line naming the file, the
 * line or section, the key, the bad value and what is allowed.
 * Returns:
 *   0        success
 *   -ENOENT, -EACCES, -EISDIR, ...  the file cannot be read
 *   -EINVAL  the file or an override is invalid
 *   -ENOMEM  out of memory
 */
int rn_config_load(const char *path, struct rn_config *cfg,
		   struct rn_config_error *err);

/*
 * Whether cfg's control plane listens beyond this host ([control] listen
 * is not a loopback address) with no secret: anyone who reaches it can
 * pose as a peer, which start-up (and --check-config) should say loudly.
 */
bool rn_config_listen_unprotected(const struct rn_config *cfg);

/*
 * A peer added at run time (rn_plane_peer_add()), checked as a [peer NAME]
 * section is: the name, address and port by the same rules. Returns 0, or
 * -EINVAL with why ("[peer NAME] key = value: why; allowed ...").
 */
int rn_config_peer_check(const char *name, const char *address, uint32_t port,
			 char *why, size_t why_len);

/* Whether two address literals are one address ("::1" and "0::1"). */
bool rn_config_same_address(const char *a, const char *b);

/*
 * Write cfg to out as an INI file that rn_config_load() reads back to the
 * same configuration. Returns 0 or -EIO.
 */
int rn_config_print(const struct rn_config *cfg, FILE *out);

/* Names of enum values, as written in the file. */
const char *rn_hugepages_mode_name(enum rn_hugepages_mode mode);
const char *rn_idle_policy_name(enum rn_idle_policy policy);
const char *rn_nic_provider_name(enum rn_nic_provider provider);
const char *rn_peer_connect_name(enum rn_peer_connect connect);

#endif /* RN_CONFIG_H */
