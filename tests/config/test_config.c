/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration loader: every valid form, and every class of bad input with
 * the exact line the user sees. Table-driven: each case is a file's content
 * and either the values it must produce or the error it must print.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rn_config.h"

static char dir[64];
static char path[128];

static void
write_bytes(const char *content, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(content, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void
write_file(const char *content)
{
	write_bytes(content, strlen(content));
}

/* Load content; on failure print the error so a failing case shows it. */
static int
load(const char *content, struct rn_config *cfg, struct rn_config_error *err)
{
	int rc;

	write_file(content);
	err->text[0] = '\0';
	rc = rn_config_load(path, cfg, err);
	if (rc != 0)
		print_message("# rn_config_load: %d: %s\n", rc, err->text);
	return rc;
}

/* ---- bad input: exact error text, "%s" stands for the file's path ---- */

struct bad_case {
	const char *name;
	const char *content;
	const char *error;
};

static const struct bad_case bad_cases[] = {
	{ "malformed line", "[nic]\nprovider sim\n",
	  "%s:2: malformed line; allowed '[section]', 'key = value' or a ';' "
	  "comment" },
	{ "unterminated section", "[nic\n",
	  "%s:1: section header without ']'" },
	{ "junk after section", "[nic] x\n",
	  "%s:1: text after the section header's ']'" },
	{ "key outside section", "port = 1\n[nic]\n",
	  "%s:1: key outside any section; put it under a [section] header" },
	{ "empty key", "[nic]\n = 1\n", "%s:2: '=' without a key before it" },
	{ "unknown section", "; comment\n[dataplan]\nname = a\n",
	  "%s:2: unknown section [dataplan]; allowed [dataplane], [nic], "
	  "[notify], [transfer], [control], [peer NAME], [telemetry], "
	  "[client]" },
	{ "client mode not octal", "[client]\nmode = 0680\n",
	  "%s:2: [client] mode = 0680: not a file mode; allowed an octal file "
	  "mode 0000..0777 such as 0660" },
	{ "client mode with setuid bit", "[client]\nmode = 4755\n",
	  "%s:2: [client] mode = 4755: out of range; allowed an octal file "
	  "mode 0000..0777 such as 0660" },
	{ "client group unknown", "[client]\ngroup = no-such-group-rn\n",
	  "%s:2: [client] group = no-such-group-rn: no such group; allowed a "
	  "group name or gid, or empty for none" },
	{ "client allow unknown user",
	  "[client]\nallow = root, no-such-user-rn\n",
	  "%s:2: [client] allow = root, no-such-user-rn: no such user "
	  "'no-such-user-rn'; allowed a comma list of user names or uids and "
	  "@group names or @gids, at most 32, or empty (the daemon's own user "
	  "only)" },
	{ "client allow unknown group", "[client]\nallow = @no-such-group-rn\n",
	  "%s:2: [client] allow = @no-such-group-rn: no such group "
	  "'no-such-group-rn'; allowed a comma list of user names or uids and "
	  "@group names or @gids, at most 32, or empty (the daemon's own user "
	  "only)" },
	{ "client allow empty item", "[client]\nallow = root,,1\n",
	  "%s:2: [client] allow = root,,1: empty item; allowed a comma list of "
	  "user names or uids and @group names or @gids, at most 32, or empty "
	  "(the daemon's own user only)" },
	{ "client allow bare @", "[client]\nallow = @\n",
	  "%s:2: [client] allow = @: empty item ''; allowed a comma list of "
	  "user names or uids and @group names or @gids, at most 32, or empty "
	  "(the daemon's own user only)" },
	{ "client ring_size not a power of two", "[client]\nring_size = 100\n",
	  "%s:2: [client] ring_size = 100: not a power of two; allowed 16, 32, "
	  "64, .., 16384" },
	{ "client max_clients 0", "[client]\nmax_clients = 0\n",
	  "%s:2: [client] max_clients = 0: out of range; allowed 1..1024" },
	{ "client socket relative", "[client]\nsocket = run/x.sock\n",
	  "%s: [client] socket = run/x.sock: not an absolute path; allowed an "
	  "absolute path of at most 107 characters, or empty for the default" },
	{ "client socket too long",
	  "[client]\nsocket = /" "0123456789012345678901234567890123456789"
	  "0123456789012345678901234567890123456789012345678901234567890"
	  "0123456789\n",
	  "%s: [client] socket = /" "0123456789012345678901234567890123456789"
	  "0123456789012345678901234567890123456789012345678901234567890"
	  "0123456789: too "
	  "long; allowed an absolute path of at most 107 characters, or empty "
	  "for the default" },
	{ "client with too many workers", "[dataplane]\nlcores = 0-17\n",
	  "%s: [client] enabled: 17 worker lcores; clients can talk to at most "
	  "16: give [dataplane] lcores fewer, or set [client] enabled = false" },
	{ "unknown key", "[nic]\nprovider = sim\ndevce = mlx5_0\n",
	  "%s:3: [nic] unknown key 'devce'; allowed provider, device, port, "
	  "gid_index, traffic_class, service_level, data_qps, qp_timeout, "
	  "qp_retry_cnt, cq_size, cqs_per_lcore" },
	{ "duplicate key", "[nic]\nport = 1\n\nport = 2\n",
	  "%s:4: [nic] duplicate key 'port' (first at line 2)" },
	{ "duplicate section", "[nic]\nport = 1\n[notify]\n[nic]\n",
	  "%s:4: duplicate section [nic] (first at line 1)" },
	{ "missing required address", "[peer b]\nport = 7000\n",
	  "%s:1: [peer b] missing required key 'address'" },
	{ "missing required port", "[peer b]\naddress = 10.0.0.2\n",
	  "%s:1: [peer b] missing required key 'port'" },
	{ "number out of range high", "[notify]\nslot_size = 65537\n",
	  "%s:2: [notify] slot_size = 65537: out of range; allowed 64..65536" },
	{ "transfer chunk over the largest message",
	  "[transfer]\nchunk_size = 1048577\n",
	  "%s:2: [transfer] chunk_size = 1048577: out of range; allowed "
	  "4096..1048576" },
	{ "number out of range low", "[notify]\nslot_size = 63\n",
	  "%s:2: [notify] slot_size = 63: out of range; allowed 64..65536" },
	{ "number overflowing uint64",
	  "[notify]\nslot_size = 99999999999999999999999\n",
	  "%s:2: [notify] slot_size = 99999999999999999999999: out of range; "
	  "allowed 64..65536" },
	{ "power of two out of range high", "[notify]\nslots = 8192\n",
	  "%s:2: [notify] slots = 8192: out of range; allowed 1, 2, 4, .., "
	  "4096" },
	{ "power of two out of range low", "[notify]\nslots = 0\n",
	  "%s:2: [notify] slots = 0: out of range; allowed 1, 2, 4, .., 4096" },
	{ "not a power of two", "[notify]\nslots = 96\n",
	  "%s:2: [notify] slots = 96: not a power of two; allowed 1, 2, 4, .., "
	  "4096" },
	{ "power of two with junk", "[notify]\nslots = 64k\n",
	  "%s:2: [notify] slots = 64k: not a decimal number; allowed 1, 2, 4, "
	  ".., 4096" },
	{ "number with trailing junk", "[notify]\nslot_size = 4096k\n",
	  "%s:2: [notify] slot_size = 4096k: not a decimal number; allowed "
	  "64..65536" },
	{ "negative number", "[nic]\nport = -1\n",
	  "%s:2: [nic] port = -1: not a decimal number; allowed 1..255" },
	{ "hex number", "[nic]\ngid_index = 0x3\n",
	  "%s:2: [nic] gid_index = 0x3: not a decimal number; allowed 0..255" },
	{ "empty number", "[nic]\nport =\n",
	  "%s:2: [nic] port = : not a decimal number; allowed 1..255" },
	{ "bad enum", "[nic]\nprovider = rxe\n",
	  "%s:2: [nic] provider = rxe: unknown value; allowed sim, mlx5" },
	{ "bad hugepages", "[dataplane]\nhugepages = yes\n",
	  "%s:2: [dataplane] hugepages = yes: unknown value; allowed auto, on, "
	  "off" },
	{ "bad bool", "[notify]\nenabled = yes\n",
	  "%s:2: [notify] enabled = yes: not a boolean; allowed 0, 1, true, "
	  "false, on, off" },
	{ "bad address", "[control]\nlisten = 127.0.0\n",
	  "%s:2: [control] listen = 127.0.0: not an IP address; allowed an IPv4 "
	  "or IPv6 literal such as 127.0.0.1 or ::1" },
	{ "hostname is not an address", "[peer b]\naddress = hostb\nport = 1\n",
	  "%s:2: [peer b] address = hostb: not an IP address; allowed an IPv4 "
	  "or IPv6 literal such as 127.0.0.1 or ::1" },
	{ "bad port", "[peer b]\naddress = ::1\nport = 65536\n",
	  "%s:3: [peer b] port = 65536: out of range; allowed 1..65535" },
	{ "peer port zero", "[peer b]\naddress = ::1\nport = 0\n",
	  "%s:3: [peer b] port = 0: out of range; allowed 1..65535" },
	{ "control port junk", "[control]\nport = 80 80\n",
	  "%s:2: [control] port = 80 80: not a decimal number; allowed "
	  "0..65535" },
	{ "duplicate peer",
	  "[peer b]\naddress = 10.0.0.2\nport = 1\n\n[peer b]\n",
	  "%s:5: duplicate peer [peer b] (first at line 1)" },
	{ "duplicate peer endpoint",
	  "[peer b]\naddress = 10.0.0.2\nport = 1\n"
	  "[peer c]\naddress = 10.0.0.2\nport = 1\n",
	  "%s:4: [peer c] duplicate peer: 10.0.0.2 port 1 is already [peer b]" },
	{ "duplicate peer endpoint, other spelling",
	  "[peer b]\naddress = ::1\nport = 1\n"
	  "[peer c]\naddress = 0:0::1\nport = 1\n",
	  "%s:4: [peer c] duplicate peer: 0:0::1 port 1 is already [peer b]" },
	{ "peer named like this node", "[dataplane]\nname = me\n\n"
	  "[peer me]\naddress = 10.0.0.2\nport = 1\n",
	  "%s:4: [peer me]: that is this node's own name ([dataplane] name); "
	  "notifications to itself need no [peer] section" },
	{ "peer without name", "[peer]\n",
	  "%s:1: [peer]: peer name '' is not valid; allowed [peer NAME] with "
	  "NAME of 1 to 31 characters of A-Z a-z 0-9 _ -" },
	{ "peer with bad name", "[peer a/b]\n",
	  "%s:1: [peer a/b]: peer name 'a/b' is not valid; allowed [peer NAME] "
	  "with NAME of 1 to 31 characters of A-Z a-z 0-9 _ -" },
	{ "bad name", "[dataplane]\nname = my node\n",
	  "%s:2: [dataplane] name = my node: not a valid name; allowed 1 to 31 "
	  "characters of A-Z a-z 0-9 _ -" },
	{ "lcores descending", "[dataplane]\nlcores = 1,0\n",
	  "%s:2: [dataplane] lcores = 1,0: not an lcore list; allowed ascending "
	  "lcore ids 0..127 as 'A', 'A-B' or a comma list of those, at least 2 "
	  "(the first runs the control thread)" },
	{ "lcores single", "[dataplane]\nlcores = 0\n",
	  "%s:2: [dataplane] lcores = 0: not an lcore list; allowed ascending "
	  "lcore ids 0..127 as 'A', 'A-B' or a comma list of those, at least 2 "
	  "(the first runs the control thread)" },
	{ "lcores too high", "[dataplane]\nlcores = 0-128\n",
	  "%s:2: [dataplane] lcores = 0-128: not an lcore list; allowed "
	  "ascending lcore ids 0..127 as 'A', 'A-B' or a comma list of those, "
	  "at least 2 (the first runs the control thread)" },
	{ "lcores empty item", "[dataplane]\nlcores = 0,,1\n",
	  "%s:2: [dataplane] lcores = 0,,1: not an lcore list; allowed "
	  "ascending lcore ids 0..127 as 'A', 'A-B' or a comma list of those, "
	  "at least 2 (the first runs the control thread)" },
	{ "cpus not a list", "[dataplane]\ncpus = 0,x\n",
	  "%s:2: [dataplane] cpus = 0,x: not a CPU list; allowed CPU ids "
	  "0..1023 as 'A', 'A-B' or a comma list of those, repeats allowed, "
	  "one per lcore in the order of lcores; or empty" },
	{ "cpus range backwards", "[dataplane]\ncpus = 1-0\n",
	  "%s:2: [dataplane] cpus = 1-0: not a CPU list; allowed CPU ids "
	  "0..1023 as 'A', 'A-B' or a comma list of those, repeats allowed, "
	  "one per lcore in the order of lcores; or empty" },
	{ "cpus too high", "[dataplane]\ncpus = 0,1024\n",
	  "%s:2: [dataplane] cpus = 0,1024: not a CPU list; allowed CPU ids "
	  "0..1023 as 'A', 'A-B' or a comma list of those, repeats allowed, "
	  "one per lcore in the order of lcores; or empty" },
	{ "cpus not one per lcore", "[dataplane]\nlcores = 0-2\ncpus = 0,1\n",
	  "%s: [dataplane] cpus: 2 CPU(s) for 3 lcores; give one CPU per "
	  "lcore, in the order of lcores" },
	{ "empty device", "[nic]\ndevice =\n",
	  "%s:2: [nic] device = : empty value; allowed 1 to 63 characters" },
	{ "dead_after too short", "[control]\nheartbeat_ms = 100\n"
	  "dead_after_ms = 150\n",
	  "%s: [control] dead_after_ms = 150: must be at least twice "
	  "heartbeat_ms (100)" },
	{ "reconnect bounds reversed", "[control]\nreconnect_min_ms = 500\n"
	  "reconnect_max_ms = 100\n",
	  "%s: [control] reconnect_min_ms = 500: must be at most "
	  "reconnect_max_ms (100)" },
	{ "bad peer connect", "[peer b]\naddress = ::1\nport = 1\n"
	  "connect = always\n",
	  "%s:4: [peer b] connect = always: unknown value; allowed on_demand, "
	  "eager" },
	{ "max_inline over 504", "[notify]\nmax_inline = 505\n",
	  "%s:2: [notify] max_inline = 505: out of range; allowed 0..504" },
	{ "max_inline over slot", "[notify]\nslot_size = 64\nmax_inline = 64\n",
	  "%s: [notify] max_inline = 64: must be at most slot_size - 8 (56)" },
	{ "key too long",
	  "[nic]\nkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
	  " = 1\n", "%s:2: key longer than 63 characters" },
	{ "byte order mark keeps line numbers",
	  "\xef\xbb\xbf[nic]\nprovider sim\n",
	  "%s:2: malformed line; allowed '[section]', 'key = value' or a ';' "
	  "comment" },
	{ "byte order mark inside the file", "[nic]\n\xef\xbb\xbf[notify]\n",
	  "%s:2: malformed line; allowed '[section]', 'key = value' or a ';' "
	  "comment" },
	{ "number with plus sign", "[nic]\nport = +1\n",
	  "%s:2: [nic] port = +1: not a decimal number; allowed 1..255" },
	{ "number with a fraction", "[dataplane]\nmemory_mb = 64.5\n",
	  "%s:2: [dataplane] memory_mb = 64.5: not a decimal number; allowed "
	  "16..65536" },
	{ "number with exponent", "[notify]\nslots = 1e3\n",
	  "%s:2: [notify] slots = 1e3: not a decimal number; allowed 1, 2, 4, "
	  ".., 4096" },
	{ "number with inner space", "[nic]\ncq_size = 10 24\n",
	  "%s:2: [nic] cq_size = 10 24: not a decimal number; allowed "
	  "256..262144" },
	{ "power of two overflowing uint32", "[notify]\nslots = 4294967296\n",
	  "%s:2: [notify] slots = 4294967296: out of range; allowed 1, 2, 4, "
	  ".., 4096" },
	{ "lcores with sign", "[dataplane]\nlcores = 0,+1\n",
	  "%s:2: [dataplane] lcores = 0,+1: not an lcore list; allowed "
	  "ascending lcore ids 0..127 as 'A', 'A-B' or a comma list of those, "
	  "at least 2 (the first runs the control thread)" },
	{ "lcores overflowing uint64",
	  "[dataplane]\nlcores = 0-18446744073709551617\n",
	  "%s:2: [dataplane] lcores = 0-18446744073709551617: not an lcore "
	  "list; allowed ascending lcore ids 0..127 as 'A', 'A-B' or a comma "
	  "list of those, at least 2 (the first runs the control thread)" },
	{ "lcores open range", "[dataplane]\nlcores = 0-\n",
	  "%s:2: [dataplane] lcores = 0-: not an lcore list; allowed "
	  "ascending lcore ids 0..127 as 'A', 'A-B' or a comma list of those, "
	  "at least 2 (the first runs the control thread)" },
	{ "cpus negative", "[dataplane]\ncpus = -1,0\n",
	  "%s:2: [dataplane] cpus = -1,0: not a CPU list; allowed CPU ids "
	  "0..1023 as 'A', 'A-B' or a comma list of those, repeats allowed, "
	  "one per lcore in the order of lcores; or empty" },
};

static void
run_bad_case(void **state)
{
	const struct bad_case *c = *state;
	struct rn_config cfg;
	struct rn_config_error err;
	char expected[RN_CONFIG_ERROR_MAX];

	snprintf(expected, sizeof(expected), c->error, path);
	assert_int_equal(load(c->content, &cfg, &err), -EINVAL);
	assert_string_equal(err.text, expected);
}

/* Content with NUL bytes in it, which C strings cannot carry. */
struct nul_case {
	const char *name;
	const char *content;
	size_t len;
	const char *error;
};

#define WITH_NUL(name, content, error) \
	{ name, content, sizeof(content) - 1, error }

static const struct nul_case nul_cases[] = {
	WITH_NUL("NUL in a value", "[dataplane]\nname = a\0b\n",
		 "%s:2: NUL byte in the line; allowed text without NUL bytes"),
	WITH_NUL("NUL in a comment", "[nic]\n; a\0\nport = 1\n",
		 "%s:2: NUL byte in the line; allowed text without NUL bytes"),
	WITH_NUL("NUL alone", "[nic]\nport = 1\n\0",
		 "%s:3: NUL byte in the line; allowed text without NUL bytes"),
};

static void
run_nul_case(void **state)
{
	const struct nul_case *c = *state;
	struct rn_config cfg;
	struct rn_config_error err;
	char expected[RN_CONFIG_ERROR_MAX];

	snprintf(expected, sizeof(expected), c->error, path);
	write_bytes(c->content, c->len);
	assert_int_equal(rn_config_load(path, &cfg, &err), -EINVAL);
	assert_string_equal(err.text, expected);
}

/* ---- valid forms ---- */

static void
test_defaults_from_empty_file(void **state)
{
	struct rn_config cfg, defaults;
	struct rn_config_error err;

	(void)state;
	assert_int_equal(load("", &cfg, &err), 0);
	rn_config_defaults(&defaults);
	assert_memory_equal(&cfg, &defaults, sizeof(cfg));
	assert_string_equal(cfg.dataplane.name, "rnotify");
	assert_int_equal(cfg.dataplane.lcores.count, 2);
	assert_int_equal(cfg.dataplane.hugepages, RN_HUGEPAGES_AUTO);
	assert_int_equal(cfg.dataplane.idle, RN_IDLE_BUSY);
	assert_int_equal(cfg.nic.provider, RN_NIC_SIM);
	assert_true(cfg.notify.enabled);
	assert_true(cfg.notify.oob_fallback);
	assert_int_equal(cfg.notify.slots, 256);
	assert_int_equal(cfg.notify.slot_size, 65536);
	assert_int_equal(cfg.notify.max_inline, 64);
	assert_string_equal(cfg.control.listen, "127.0.0.1");
	assert_int_equal(cfg.control.port, 18515);
	assert_int_equal(cfg.control.dead_after_ms, 1000);
	assert_true(cfg.telemetry.enabled);
	assert_true(cfg.client.enabled);
	assert_string_equal(cfg.client.socket, "");
	assert_int_equal(cfg.client.mode, 0660);
	assert_false(cfg.client.group.set);
	assert_int_equal(cfg.client.allow.count, 0);
	assert_int_equal(cfg.client.max_clients, 64);
	assert_int_equal(cfg.client.ring_size, 256);
	assert_int_equal(cfg.client.hold_max, 32);
	assert_true(cfg.client.peers_from_clients);
	assert_int_equal(cfg.n_peers, 0);
}

/* [client]: names resolved when loaded, numbers taken as they are; 17
 * workers allowed once clients are off. */
static void
test_client_keys(void **state)
{
	struct rn_config cfg;
	struct rn_config_error err;

	(void)state;
	assert_int_equal(load(
		"[dataplane]\nlcores = 0-17\n"
		"[client]\n"
		"enabled = false\n"
		"socket = /run/x/y.sock\n"
		"mode = 600\n"
		"group = root\n"
		"allow =  root , 1234,@root,  @4321 \n"
		"max_clients = 1024\n"
		"ring_size = 16\n"
		"peers_from_clients = off\n", &cfg, &err), 0);
	assert_false(cfg.client.enabled);
	assert_string_equal(cfg.client.socket, "/run/x/y.sock");
	assert_int_equal(cfg.client.mode, 0600);
	assert_true(cfg.client.group.set);
	assert_int_equal(cfg.client.group.gid, 0);
	assert_int_equal(cfg.client.allow.count, 4);
	assert_false(cfg.client.allow.entry[0].group);
	assert_int_equal(cfg.client.allow.entry[0].id, 0);
	assert_false(cfg.client.allow.entry[1].group);
	assert_int_equal(cfg.client.allow.entry[1].id, 1234);
	assert_true(cfg.client.allow.entry[2].group);
	assert_int_equal(cfg.client.allow.entry[2].id, 0);
	assert_true(cfg.client.allow.entry[3].group);
	assert_int_equal(cfg.client.allow.entry[3].id, 4321);
	assert_int_equal(cfg.client.max_clients, 1024);
	assert_int_equal(cfg.client.ring_size, 16);
	assert_false(cfg.client.peers_from_clients);
	assert_int_equal(load("[client]\ngroup = 77\n", &cfg, &err), 0);
	assert_int_equal(cfg.client.group.gid, 77);
}

static void
test_every_key(void **state)
{
	struct rn_config cfg;
	struct rn_config_error err;

	(void)state;
	assert_int_equal(load(
		"; a full file, with comments and odd spacing\n"
		"[ dataplane ]\n"
		"name=node-a_1\n"
		"  lcores   =  0,2-4 ; trailing comment\n"
		"hugepages = off\n"
		"memory_mb = 16\n"
		"idle = adaptive\n"
		"idle_polls = 100000000\n"
		"idle_sleep_us = 1\n"
		"[nic]\n"
		"provider = mlx5\n"
		"device = mlx5_bond_0\n"
		"port = 255\n"
		"gid_index = 3\n"
		"traffic_class = 106\n"
		"service_level = 15\n"
		"[notify]\n"
		"enabled = off\n"
		"oob_fallback = 0\n"
		"slots = 4096\n"
		"slot_size = 64\n"
		"max_inline = 0\n"
		"[control]\n"
		"listen = ::\n"
		"port = 0\n"
		"connect_timeout_ms = 60000\n"
		"heartbeat_ms = 10\n"
		"dead_after_ms = 20\n"
		"[telemetry]\n"
		"enabled = false\n"
		"[peer b]\n"
		"address = fe80::1\n"
		"port = 1\n"
		"connect = eager\n"
		"[peer  c-2]\n"
		"port = 65535\n"
		"address = 10.0.0.3\n", &cfg, &err), 0);
	assert_string_equal(cfg.dataplane.name, "node-a_1");
	assert_int_equal(cfg.dataplane.lcores.count, 4);
	assert_int_equal(cfg.dataplane.lcores.ids[0], 0);
	assert_int_equal(cfg.dataplane.lcores.ids[1], 2);
	assert_int_equal(cfg.dataplane.lcores.ids[3], 4);
	assert_int_equal(cfg.dataplane.hugepages, RN_HUGEPAGES_OFF);
	assert_int_equal(cfg.dataplane.memory_mb, 16);
	assert_int_equal(cfg.dataplane.idle, RN_IDLE_ADAPTIVE);
	assert_int_equal(cfg.dataplane.idle_polls, 100000000);
	assert_int_equal(cfg.dataplane.idle_sleep_us, 1);
	assert_int_equal(cfg.nic.provider, RN_NIC_MLX5);
	assert_string_equal(cfg.nic.device, "mlx5_bond_0");
	assert_int_equal(cfg.nic.port, 255);
	assert_int_equal(cfg.nic.gid_index, 3);
	assert_int_equal(cfg.nic.traffic_class, 106);
	assert_int_equal(cfg.nic.service_level, 15);
	assert_false(cfg.notify.enabled);
	assert_false(cfg.notify.oob_fallback);
	assert_int_equal(cfg.notify.slots, 4096);
	assert_int_equal(cfg.notify.slot_size, 64);
	assert_int_equal(cfg.notify.max_inline, 0);
	assert_string_equal(cfg.control.listen, "::");
	assert_int_equal(cfg.control.port, 0);
	assert_int_equal(cfg.control.connect_timeout_ms, 60000);
	assert_int_equal(cfg.control.heartbeat_ms, 10);
	assert_int_equal(cfg.control.dead_after_ms, 20);
	assert_false(cfg.telemetry.enabled);
	assert_int_equal(cfg.n_peers, 2);
	assert_string_equal(cfg.peers[0].name, "b");
	assert_string_equal(cfg.peers[0].address, "fe80::1");
	assert_int_equal(cfg.peers[0].port, 1);
	assert_int_equal(cfg.peers[0].connect, RN_PEER_EAGER);
	assert_string_equal(cfg.peers[1].name, "c-2");
	assert_int_equal(cfg.peers[1].connect, RN_PEER_ON_DEMAND);
	assert_string_equal(cfg.peers[1].address, "10.0.0.3");
	assert_int_equal(cfg.peers[1].port, 65535);
}

static void
test_every_bool_form(void **state)
{
	static const struct {
		const char *text;
		bool value;
	} forms[] = {
		{ "1", true }, { "true", true }, { "on", true },
		{ "0", false }, { "false", false }, { "off", false },
	};
	struct rn_config cfg;
	struct rn_config_error err;
	char content[64];

	(void)state;
	for (unsigned int i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		snprintf(content, sizeof(content), "[notify]\nenabled = %s\n",
			 forms[i].text);
		assert_int_equal(load(content, &cfg, &err), 0);
		assert_int_equal(cfg.notify.enabled, forms[i].value);
	}
}

static void
test_escaped_comment_character(void **state)
{
	struct rn_config cfg;
	struct rn_config_error err;

	(void)state;
	/* rte_cfgfile turns an escaped ';' into a plain one in the value. */
	assert_int_equal(load("[nic]\ndevice = a\\;b\n", &cfg, &err), 0);
	assert_string_equal(cfg.nic.device, "a;b");
}

/* Print, load the print back: the same configuration. */
static void
test_print_round_trip(void **state)
{
	struct rn_config cfg, again;
	struct rn_config_error err;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	(void)state;
	assert_int_equal(load("[dataplane]\nlcores = 0-1,3,5-7\nidle = adaptive\n"
			      "cpus = 0,1,1,0,7-8\n"
			      "[client]\nmode = 0640\ngroup = root\n"
			      "allow = 7, @root\n"
			      "[peer x]\naddress = 127.0.0.2\nport = 9\n"
			      "[peer y]\naddress = ::1\nport = 10\n",
			      &cfg, &err), 0);
	out = open_memstream(&text, &len);
	assert_non_null(out);
	assert_int_equal(rn_config_print(&cfg, out), 0);
	fclose(out);
	assert_non_null(strstr(text, "lcores = 0-1,3,5-7\n"));
	assert_non_null(strstr(text, "cpus = 0-1,1,0,7-8\n"));
	assert_non_null(strstr(text, "mode = 0640\ngroup = root\n"
				     "allow = 7, @root\n"));
	assert_int_equal(cfg.dataplane.cpus.count, 6);
	assert_int_equal(cfg.dataplane.cpus.ids[2], 1);
	assert_int_equal(cfg.dataplane.cpus.ids[5], 8);
	assert_non_null(strstr(text, "[peer y]\naddress = ::1\nport = 10\n"));
	assert_int_equal(load(text, &again, &err), 0);
	assert_memory_equal(&cfg, &again, sizeof(cfg));
	free(text);
}

static void
test_unreadable_file(void **state)
{
	struct rn_config cfg;
	struct rn_config_error err;
	char missing[160];
	char expected[RN_CONFIG_ERROR_MAX];

	(void)state;
	snprintf(missing, sizeof(missing), "%s/none.ini", dir);
	assert_int_equal(rn_config_load(missing, &cfg, &err), -ENOENT);
	snprintf(expected, sizeof(expected), "cannot read config file '%s': "
		 "No such file or directory", missing);
	assert_string_equal(err.text, expected);

	assert_int_equal(rn_config_load(dir, &cfg, &err), -EISDIR);
	snprintf(expected, sizeof(expected), "cannot read config file '%s': "
		 "Is a directory", dir);
	assert_string_equal(err.text, expected);
}

static void
test_line_too_long(void **state)
{
	struct rn_config cfg;
	struct rn_config_error err;
	char content[512] = "[nic]\ndevice = ";
	char expected[RN_CONFIG_ERROR_MAX];

	(void)state;
	memset(content + strlen(content), 'x', 400);
	strcat(content, "\n");
	assert_int_equal(load(content, &cfg, &err), -EINVAL);
	snprintf(expected, sizeof(expected),
		 "%s:2: line longer than 322 characters", path);
	assert_string_equal(err.text, expected);
}

/* A byte order mark at the start is skipped, not taken for text. */
static void
test_byte_order_mark_skipped(void **state)
{
	struct rn_config cfg;
	struct rn_config_error err;

	(void)state;
	assert_int_equal(load("\xef\xbb\xbf[nic]\nport = 2\n", &cfg, &err), 0);
	assert_int_equal(cfg.nic.port, 2);
	assert_int_equal(load("\xef\xbb\xbf", &cfg, &err), 0);
}

/* Only a regular file is read: a device never ends, a FIFO blocks. */
static void
test_not_a_regular_file(void **state)
{
	struct rn_config cfg;
	struct rn_config_error err;
	char fifo[160];

	(void)state;
	assert_int_equal(rn_config_load("/dev/zero", &cfg, &err), -EINVAL);
	assert_string_equal(err.text, "cannot read config file '/dev/zero': a "
			    "character device; allowed a regular file of at "
			    "most 1048576 bytes");

	snprintf(fifo, sizeof(fifo), "%s/fifo.ini", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(rn_config_load(fifo, &cfg, &err), -EINVAL);
	unlink(fifo);
	assert_true(strstr(err.text, "': a FIFO; allowed a regular file of at "
			   "most 1048576 bytes") != NULL);
}

/* A file of the limit loads; one byte more is refused, unread. */
static void
test_file_size_limit(void **state)
{
	enum { LIMIT = 1048576, LINE = 64 };
	struct rn_config cfg;
	struct rn_config_error err;
	char *content = malloc(LIMIT + 2);
	char expected[RN_CONFIG_ERROR_MAX];

	(void)state;
	assert_non_null(content);
	for (size_t at = 0; at < LIMIT; at += LINE) {
		memset(content + at, ' ', LINE - 1);
		content[at] = ';';
		content[at + LINE - 1] = '\n';
	}
	write_bytes(content, LIMIT);
	assert_int_equal(rn_config_load(path, &cfg, &err), 0);
	content[LIMIT] = '\n';
	write_bytes(content, LIMIT + 1);
	assert_int_equal(rn_config_load(path, &cfg, &err), -EFBIG);
	snprintf(expected, sizeof(expected), "cannot read config file '%s': "
		 "larger than 1048576 bytes; allowed a regular file of at most "
		 "1048576 bytes", path);
	assert_string_equal(err.text, expected);
	free(content);
}

/* ---- environment overrides ---- */

static void
test_env_overrides(void **state)
{
	struct rn_config cfg;
	struct rn_config_error err;

	(void)state;
	setenv(RN_ENV_NOTIFY_ENABLED, "0", 1);
	setenv(RN_ENV_NOTIFY_OOB_FALLBACK, "off", 1);
	assert_int_equal(load("[notify]\nenabled = true\noob_fallback = true\n",
			      &cfg, &err), 0);
	assert_false(cfg.notify.enabled);
	assert_false(cfg.notify.oob_fallback);

	setenv(RN_ENV_NOTIFY_ENABLED, "on", 1);
	setenv(RN_ENV_NOTIFY_OOB_FALLBACK, "TRUE", 1);
	assert_int_equal(load("[notify]\nenabled = false\n", &cfg, &err),
			 -EINVAL);
	assert_string_equal(err.text, "environment MC_RDMA_NOTIFY_OOB_FALLBACK="
			    "TRUE: not a boolean; allowed 0, 1, true, false, "
			    "on, off");

	setenv(RN_ENV_NOTIFY_OOB_FALLBACK, "1", 1);
	assert_int_equal(load("[notify]\nenabled = false\n", &cfg, &err), 0);
	assert_true(cfg.notify.enabled);
	assert_true(cfg.notify.oob_fallback);

	setenv(RN_ENV_NOTIFY_ENABLED, "", 1);
	assert_int_equal(load("", &cfg, &err), -EINVAL);
	assert_string_equal(err.text, "environment MC_RDMA_NOTIFY_ENABLED=: "
			    "not a boolean; allowed 0, 1, true, false, on, off");
	unsetenv(RN_ENV_NOTIFY_ENABLED);
	unsetenv(RN_ENV_NOTIFY_OOB_FALLBACK);
}

static void
test_too_many_peers(void **state)
{
	struct rn_config cfg;
	struct rn_config_error err;
	size_t cap = 64 * (RN_CONFIG_MAX_PEERS + 2);
	char *content = malloc(cap);
	char expected[RN_CONFIG_ERROR_MAX];
	size_t used = 0;

	(void)state;
	assert_non_null(content);
	for (int p = 0; p <= RN_CONFIG_MAX_PEERS; p++)
		used += (size_t)snprintf(content + used, cap - used,
					 "[peer p%d]\naddress = 10.0.%d.%d\n"
					 "port = 1\n", p, p / 256, p % 256);
	assert_int_equal(load(content, &cfg, &err), -EINVAL);
	snprintf(expected, sizeof(expected),
		 "%s:%d: too many peers; allowed at most %d", path,
		 RN_CONFIG_MAX_PEERS * 3 + 1, RN_CONFIG_MAX_PEERS);
	assert_string_equal(err.text, expected);
	free(content);
}

static int
make_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/rn-config-test-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/test.ini", dir);
	unsetenv(RN_ENV_NOTIFY_ENABLED);
	unsetenv(RN_ENV_NOTIFY_OOB_FALLBACK);
	return 0;
}

static int
remove_dir(void **state)
{
	(void)state;
	unlink(path);
	return rmdir(dir);
}

#define N_BAD (sizeof(bad_cases) / sizeof(bad_cases[0]))
#define N_NUL (sizeof(nul_cases) / sizeof(nul_cases[0]))

int
main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_defaults_from_empty_file),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_client_keys),
		cmocka_unit_test(test_every_bool_form),
		cmocka_unit_test(test_escaped_comment_character),
		cmocka_unit_test(test_print_round_trip),
		cmocka_unit_test(test_unreadable_file),
		cmocka_unit_test(test_line_too_long),
		cmocka_unit_test(test_byte_order_mark_skipped),
		cmocka_unit_test(test_not_a_regular_file),
		cmocka_unit_test(test_file_size_limit),
		cmocka_unit_test(test_env_overrides),
		cmocka_unit_test(test_too_many_peers),
	};
	const size_t n_fixed = sizeof(fixed) / sizeof(fixed[0]);
	struct CMUnitTest tests[sizeof(fixed) / sizeof(fixed[0]) + N_BAD +
			       N_NUL];

	memcpy(tests, fixed, sizeof(fixed));
	for (size_t i = 0; i < N_BAD; i++)
		tests[n_fixed + i] = (struct CMUnitTest){
			.name = bad_cases[i].name,
			.test_func = run_bad_case,
			.initial_state = (void *)&bad_cases[i],
		};
	for (size_t i = 0; i < N_NUL; i++)
		tests[n_fixed + N_BAD + i] = (struct CMUnitTest){
			.name = nul_cases[i].name,
			.test_func = run_nul_case,
			.initial_state = (void *)&nul_cases[i],
		};
	return _cmocka_run_group_tests("config", tests,
				       n_fixed + N_BAD + N_NUL, make_dir,
				       remove_dir);
}
