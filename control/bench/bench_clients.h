/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef BENCH_CLIENTS_H
#define BENCH_CLIENTS_H

/* rnotify-bench --clients (bench_clients.c): main's arguments; returns
 * the exit status. */
int rn_bench_clients(int argc, char **argv);

#endif /* BENCH_CLIENTS_H */
