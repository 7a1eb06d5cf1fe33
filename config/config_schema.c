/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The schema tables. Defaults are written as the text a user would write, and
 * go through the same parser as the file, so they obey the same ranges.
 */
#include <string.h>

#include "config_schema_pvt.h"
#include "rn_config.h"

#define FIELD(type, member) offsetof(type, member)

static const char *const hugepages_names[] = {
	[RN_HUGEPAGES_AUTO] = "auto", [RN_HUGEPAGES_ON] = "on",
	[RN_HUGEPAGES_OFF] = "off", NULL,
};
static const char *const idle_names[] = {
	[RN_IDLE_BUSY] = "busy", [RN_IDLE_ADAPTIVE] = "adaptive", NULL,
};
static const char *const provider_names[] = {
	[RN_NIC_SIM] = "sim", [RN_NIC_MLX5] = "mlx5", NULL,
};
static const char *const connect_names[] = {
	[RN_PEER_ON_DEMAND] = "on_demand", [RN_PEER_EAGER] = "eager", NULL,
};

#define DP(m) FIELD(struct rn_dataplane_config, m)
static const struct rn_config_key dataplane_keys[] = {
	{ "name", RN_CFG_NAME, DP(name), 0, 0, NULL, "rnotify" },
	{ "lcores", RN_CFG_LCORES, DP(lcores), 0, 0, NULL, "0-1" },
	{ "cpus", RN_CFG_CPUS, DP(cpus), 0, 0, NULL, "" },
	{ "hugepages", RN_CFG_ENUM, DP(hugepages), 0, 0, hugepages_names,
	  "auto" },
	{ "memory_mb", RN_CFG_UINT, DP(memory_mb), 16, 65536, NULL, "256" },
	{ "idle", RN_CFG_ENUM, DP(idle), 0, 0, idle_names, "busy" },
	{ "idle_polls", RN_CFG_UINT, DP(idle_polls), 1, 100000000, NULL,
	  "1024" },
	{ "idle_sleep_us", RN_CFG_UINT, DP(idle_sleep_us), 1, 1000000, NULL,
	  "1000" },
};

#define NIC(m) FIELD(struct rn_nic_config, m)
static const struct rn_config_key nic_keys[] = {
	{ "provider", RN_CFG_ENUM, NIC(provider), 0, 0, provider_names, "sim" },
	{ "device", RN_CFG_TEXT, NIC(device), 0, 0, NULL, "auto" },
	{ "port", RN_CFG_UINT, NIC(port), 1, 255, NULL, "1" },
	{ "gid_index", RN_CFG_UINT, NIC(gid_index), 0, 255, NULL, "0" },
	{ "traffic_class", RN_CFG_UINT, NIC(traffic_class), 0, 255, NULL, "0" },
	{ "service_level", RN_CFG_UINT, NIC(service_level), 0, 15, NULL, "0" },
	{ "data_qps", RN_CFG_UINT, NIC(data_qps), 1, 16, NULL, "2" },
	{ "qp_timeout", RN_CFG_UINT, NIC(qp_timeout), 1, 31, NULL, "14" },
	{ "qp_retry_cnt", RN_CFG_UINT, NIC(qp_retry_cnt), 0, 7, NULL, "7" },
	{ "cq_size", RN_CFG_UINT, NIC(cq_size), 256, 262144, NULL, "8192" },
	{ "cqs_per_lcore", RN_CFG_UINT, NIC(cqs_per_lcore), 1, 16, NULL, "4" },
};

#define NOTIFY(m) FIELD(struct rn_notify_config, m)
static const struct rn_config_key notify_keys[] = {
	{ "enabled", RN_CFG_BOOL, NOTIFY(enabled), 0, 0, NULL, "true" },
	{ "oob_fallback", RN_CFG_BOOL, NOTIFY(oob_fallback), 0, 0, NULL,
	  "true" },
	{ "slots", RN_CFG_POW2, NOTIFY(slots), 1, 4096, NULL, "256" },
	{ "slot_size", RN_CFG_UINT, NOTIFY(slot_size), 64, 65536, NULL,
	  "65536" },
	{ "max_inline", RN_CFG_UINT, NOTIFY(max_inline), 0, 504, NULL, "64" },
	{ "endpoints_per_lcore", RN_CFG_UINT, NOTIFY(endpoints_per_lcore), 1,
	  64, NULL, "4" },
};

/* The chunk is at most the sim's largest message (RN_SIM_MAX_MSG), and
 * rn_transfer.h's RN_TRANSFER_CHUNK_MAX. */
#define XFER(m) FIELD(struct rn_transfer_config, m)
static const struct rn_config_key transfer_keys[] = {
	{ "chunk_size", RN_CFG_UINT, XFER(chunk_size), 4096, 1048576, NULL,
	  "1048576" },
};

#define CTL(m) FIELD(struct rn_control_config, m)
static const struct rn_config_key control_keys[] = {
	{ "listen", RN_CFG_ADDRESS, CTL(listen), 0, 0, NULL, "127.0.0.1" },
	{ "port", RN_CFG_UINT, CTL(port), 0, 65535, NULL, "18515" },
	{ "connect_timeout_ms", RN_CFG_UINT, CTL(connect_timeout_ms), 1, 60000,
	  NULL, "1000" },
	{ "heartbeat_ms", RN_CFG_UINT, CTL(heartbeat_ms), 10, 10000, NULL,
	  "100" },
	{ "dead_after_ms", RN_CFG_UINT, CTL(dead_after_ms), 20, 60000, NULL,
	  "1000" },
	{ "reconnect_min_ms", RN_CFG_UINT, CTL(reconnect_min_ms), 1, 60000,
	  NULL, "50" },
	{ "reconnect_max_ms", RN_CFG_UINT, CTL(reconnect_max_ms), 1, 600000,
	  NULL, "2000" },
	{ "secret_file", RN_CFG_PATH, CTL(secret_file), 0, 0, NULL, "" },
	{ "secret_file_next", RN_CFG_PATH, CTL(secret_file_next), 0, 0, NULL,
	  "" },
	{ "accept_unknown", RN_CFG_BOOL, CTL(accept_unknown), 0, 0, NULL,
	  "false" },
};

#define PEER(m) FIELD(struct rn_peer_config, m)
static const struct rn_config_key peer_keys[] = {
	{ "address", RN_CFG_ADDRESS, PEER(address), 0, 0, NULL, NULL },
	{ "port", RN_CFG_UINT, PEER(port), 1, 65535, NULL, NULL },
	{ "connect", RN_CFG_ENUM, PEER(connect), 0, 0, connect_names,
	  "on_demand" },
};

#define TEL(m) FIELD(struct rn_telemetry_config, m)
static const struct rn_config_key telemetry_keys[] = {
	{ "enabled", RN_CFG_BOOL, TEL(enabled), 0, 0, NULL, "true" },
};

#define CLIENT(m) FIELD(struct rn_client_config, m)
static const struct rn_config_key client_keys[] = {
	{ "enabled", RN_CFG_BOOL, CLIENT(enabled), 0, 0, NULL, "true" },
	{ "socket", RN_CFG_PATH, CLIENT(socket), 0, 0, NULL, "" },
	{ "mode", RN_CFG_MODE, CLIENT(mode), 0, 0777, NULL, "0660" },
	{ "group", RN_CFG_GROUP, CLIENT(group), 0, 0, NULL, "" },
	{ "allow", RN_CFG_ALLOW, CLIENT(allow), 0, 0, NULL, "" },
	{ "max_clients", RN_CFG_UINT, CLIENT(max_clients), 1, 1024, NULL,
	  "64" },
	{ "ring_size", RN_CFG_POW2, CLIENT(ring_size), 16, 16384, NULL,
	  "256" },
	{ "hold_max", RN_CFG_UINT, CLIENT(hold_max), 1, 4096, NULL, "32" },
	{ "peers_from_clients", RN_CFG_BOOL, CLIENT(peers_from_clients), 0, 0,
	  NULL, "true" },
	/* RN_CLIENT_XFER_SLOTS_MAX and _SLOT_SIZE_MIN/MAX (rn_client_region.h);
	 * the size's multiple of 64 is checked across keys. */
	{ "xfer_slots", RN_CFG_UINT, CLIENT(xfer_slots), 0, 1024, NULL, "16" },
	{ "xfer_slot_size", RN_CFG_UINT, CLIENT(xfer_slot_size), 4096, 4194304,
	  NULL, "131072" },
};

#define SECTION(name, member, keys, per_peer) \
	{ name, offsetof(struct rn_config, member), keys, \
	  sizeof(keys) / sizeof(keys[0]), per_peer }

const struct rn_config_section rn_config_sections[] = {
	SECTION("dataplane", dataplane, dataplane_keys, false),
	SECTION("nic", nic, nic_keys, false),
	SECTION("notify", notify, notify_keys, false),
	SECTION("transfer", transfer, transfer_keys, false),
	SECTION("control", control, control_keys, false),
	SECTION("peer", peers, peer_keys, true),
	SECTION("telemetry", telemetry, telemetry_keys, false),
	SECTION("client", client, client_keys, false),
};
const unsigned int rn_config_n_sections =
	sizeof(rn_config_sections) / sizeof(rn_config_sections[0]);

const struct rn_config_section *
rn_config_section_find(const char *name)
{
	for (unsigned int i = 0; i < rn_config_n_sections; i++)
		if (strcmp(rn_config_sections[i].name, name) == 0)
			return &rn_config_sections[i];
	return NULL;
}

const struct rn_config_key *
rn_config_key_find(const struct rn_config_section *section, const char *name)
{
	for (unsigned int i = 0; i < section->n_keys; i++)
		if (strcmp(section->keys[i].name, name) == 0)
			return &section->keys[i];
	return NULL;
}

const char *
rn_hugepages_mode_name(enum rn_hugepages_mode mode)
{
	return hugepages_names[mode];
}

const char *
rn_idle_policy_name(enum rn_idle_policy policy)
{
	return idle_names[policy];
}

const char *
rn_nic_provider_name(enum rn_nic_provider provider)
{
	return provider_names[provider];
}

const char *
rn_peer_connect_name(enum rn_peer_connect connect)
{
	return connect_names[connect];
}
