/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_TRANSFER_H
#define RN_TRANSFER_H

/*
 * Transfers: batches of RDMA WRITEs or READs between this process's
 * registered memory and a peer's, posted by the lcore that owns the
 * peer's endpoint, each with an optional notification that the lcore
 * sends once the batch's data is placed (WRITE) or here (READ).
 * docs/transfers.md has the contract, the errors and the ordering
 * argument.
 *
 * Registration, export, import and release are control-path calls (they
 * wait for the lcores, or take a lock); submit, status and cancel never
 * block on the network. Any thread may call any of them.
 */

#include <stddef.h>
#include <stdint.h>

/* Bytes of an exported region's descriptor (rn_transfer_export()). */
#define RN_TRANSFER_DESC_SIZE 192
/* Triples one batch takes at most. */
#define RN_TRANSFER_MAX_ENTRIES 65536
/* The largest chunk a transfer is cut into: the sim's largest message
 * (RN_SIM_MAX_MSG); ConnectX allows more, which gains nothing here. */
#define RN_TRANSFER_CHUNK_MAX (1u << 20)
#define RN_TRANSFER_CHUNK_DEFAULT RN_TRANSFER_CHUNK_MAX
/* Bytes of a published region's name, at most (rn_transfer_publish()). */
#define RN_TRANSFER_NAME_MAX 63
/* Worker lcores a node exports keys for, at most. */
#define RN_TRANSFER_MAX_WORKERS 16
/*
 * The name of the notification a target gets instead of the one a failed
 * batch carried; its msg is that notification's name. A name the
 * application's own notifications should not use.
 */
#define RN_TRANSFER_FAILED_NAME "rnotify.transfer.failed"

/* Access a registered region grants (as enum rn_access). */
#define RN_TRANSFER_LOCAL_WRITE 1u   /* READs land in it */
#define RN_TRANSFER_REMOTE_WRITE 2u  /* peers WRITE into it */
#define RN_TRANSFER_REMOTE_READ 4u   /* peers READ from it */

enum rn_transfer_kind {
	RN_TRANSFER_WRITE = 1,   /* local -> remote */
	RN_TRANSFER_READ = 2,    /* remote -> local */
};

struct rn_transfer;          /* the engine, one per process */
struct rn_transfer_region;   /* memory of this process, registered */
struct rn_transfer_remote;   /* a peer's region, imported */
struct rn_transfer_batch;    /* one submitted batch */

/*
 * Who this node is and how to find a peer's endpoint: the control plane
 * (rn_transfer_host_plane()), or a test's own.
 * lookup: 0 with the peer's endpoint index and the worker (index into
 * workers) that owns it, or -ENOENT (no such peer), -EAGAIN (connecting),
 * -ENOTCONN (failed, waiting to reconnect).
 * fetch (may be NULL: rn_transfer_fetch() is then -ENOTSUP): ask peer for
 * the descriptor it publishes as name, as rn_transfer_fetch() says.
 */
struct rn_transfer_host {
	void *ctx;
	char name[32];               /* this node's */
	uint64_t session_id;         /* this node's incarnation */
	int (*lookup)(void *ctx, const char *peer, uint32_t *ep_index,
		      uint32_t *worker);
	int (*fetch)(void *ctx, const char *peer, const char *name,
		     uint32_t timeout_ms, void *buf, size_t len);
};

struct rn_lcore;
struct rn_plane;

/* The host of the node whose control plane is plane, named name. */
void rn_transfer_host_plane(struct rn_plane *plane, const char *name,
			    struct rn_transfer_host *out);

/*
 * The engine over n_workers lcores (at most RN_TRANSFER_MAX_WORKERS),
 * cutting transfers into chunks of chunk_size bytes (0: the default;
 * 4096 .. RN_TRANSFER_CHUNK_MAX). Returns 0, -EINVAL, or -ENOMEM.
 */
int rn_transfer_create(const struct rn_transfer_host *host,
		       struct rn_lcore **workers, unsigned int n_workers,
		       uint32_t chunk_size, struct rn_transfer **out);
/* Every region must be deregistered and every batch released first. */
void rn_transfer_free(struct rn_transfer *t);

/*
 * Register [addr, addr + length) with every worker's device for access
 * (RN_TRANSFER_* bits; REMOTE_WRITE needs LOCAL_WRITE). Its address is
 * the application's own: triples name its bytes by pointer. Returns 0,
 * -EINVAL (length 0, unknown bits, REMOTE_WRITE without LOCAL_WRITE),
 * -EEXIST (overlaps a region registered here), -ENOMEM, -ENOSPC (the
 * device's table is full), or another error of the device.
 */
int rn_transfer_reg(struct rn_transfer *t, void *addr, size_t length,
		    uint32_t access, struct rn_transfer_region **out);

/*
 * Register device memory (GPU) exported as a dma-buf: length bytes at
 * offset of the dma-buf fd (e.g. CUDA's cuMemGetHandleForAddressRange
 * with CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD), known by addr, the memory's
 * address in this process (the GPU virtual address): the devices take it
 * as the region's iova, so triples name its bytes by pointer as they do
 * host memory's, and its descriptor carries it. mlx5: ibv_reg_dmabuf_mr.
 * The fd is the caller's: the devices hold the dma-buf itself once this
 * returns, and the fd may be closed. Export, publish, submit and dereg as
 * for rn_transfer_reg(). Returns what rn_transfer_reg() returns (-EINVAL
 * also when offset + length wraps), and:
 *   -EBADF       fd is negative, or not a dma-buf the device takes
 *   -EOPNOTSUPP  the device has no dma-buf registration (the sim: no
 *                device memory behind a software NIC; a kernel without
 *                it); nothing is left registered
 */
int rn_transfer_reg_dmabuf(struct rn_transfer *t, int fd, uint64_t offset,
			   size_t length, void *addr, uint32_t access,
			   struct rn_transfer_region **out);

/*
 * Deregister region once no batch uses it: new batches on it are refused
 * at once (-EINVAL), and this waits for those submitted (a batch stops
 * using its regions when its status is final). rn_transfer_dereg_try()
 * does not wait: -EBUSY while a batch uses it (call again, or
 * rn_transfer_dereg()). Returns 0, -EBUSY (try only), or the device's
 * error (the region is gone all the same).
 */
int rn_transfer_dereg(struct rn_transfer *t, struct rn_transfer_region *r);
int rn_transfer_dereg_try(struct rn_transfer *t,
			  struct rn_transfer_region *r);

/*
 * Write region's descriptor (node, incarnation, address, length, a key
 * per worker) into buf, for the application to hand to its peer by its
 * own means. Returns RN_TRANSFER_DESC_SIZE, or -ENOSPC (len too small).
 */
int rn_transfer_export(struct rn_transfer *t,
		       const struct rn_transfer_region *r, void *buf,
		       size_t len);

/*
 * Publish region under name, so that peers may ask this node's daemon for
 * its descriptor over the control protocol (rn_transfer_fetch() on their
 * side). It answers peers that proved the shared secret only ([control]
 * secret_file; docs/protocol.md, "Descriptor requests"), never others. A
 * region has one name at most: a new one replaces it; name NULL or ""
 * withdraws it. Deregistration withdraws it too: from rn_transfer_dereg()
 * on, the name gives nothing. Returns 0, or:
 *   -EINVAL  name not 1..RN_TRANSFER_NAME_MAX bytes of letters, digits and
 *            "_-.:/", or the region is being deregistered
 *   -EEXIST  another region of this node has that name
 */
int rn_transfer_publish(struct rn_transfer *t, struct rn_transfer_region *r,
			const char *name);

/*
 * The descriptor of the region published as name into buf, as
 * rn_transfer_export() writes it: what the daemon answers a peer's
 * request with. Returns RN_TRANSFER_DESC_SIZE, -ENOENT (no live region
 * has that name) or -ENOSPC (len too small).
 */
int rn_transfer_published(struct rn_transfer *t, const char *name, void *buf,
			  size_t len);

/*
 * Ask peer's daemon for the descriptor of the region it published as name
 * (rn_transfer_publish() there), over the control protocol, connecting the
 * endpoint first if needed; blocks up to timeout_ms. Not from the control
 * thread. The descriptor goes into buf, ready for rn_transfer_import().
 * Returns RN_TRANSFER_DESC_SIZE, or:
 *   -EINVAL     name as rn_transfer_publish() refuses it, or a bad peer name
 *   -ENOSPC     len is under RN_TRANSFER_DESC_SIZE
 *   -ENOENT     no such peer
 *   -ENODATA    the peer publishes no region under that name
 *   -EACCES     the peer has no secret: it gives descriptors to no one
 *   -EOPNOTSUPP the peer serves no descriptors
 *   -ENOTCONN   the endpoint failed (waits to reconnect), or was lost
 *               before the answer
 *   -ETIMEDOUT  no answer within timeout_ms
 *   -EBADMSG    the answer is not a descriptor of that peer's
 *   -ENOTSUP    this engine has no control plane (its host has no fetch)
 *   -ESHUTDOWN, -ENOMEM
 */
int rn_transfer_fetch(struct rn_transfer *t, const char *peer,
		      const char *name, uint32_t timeout_ms, void *buf,
		      size_t len);

/*
 * A peer's region from its descriptor. Returns 0, -EBADMSG (not a
 * descriptor, or of another version), -ENOMEM.
 */
int rn_transfer_import(struct rn_transfer *t, const void *buf, size_t len,
		       struct rn_transfer_remote **out);
/* Forget an imported region: no batch may be using it. */
void rn_transfer_forget(struct rn_transfer *t, struct rn_transfer_remote *rem);

/* One triple: local is a pointer into a region of this process, remote
 * an address in rem (the peer's own address for it). */
struct rn_transfer_entry {
	void *local;
	uint64_t remote;
	uint64_t length;
	const struct rn_transfer_remote *rem;
};

/*
 * Submit entries[0..n) (one peer: every rem of the same node), of kind,
 * with the notification (name, msg) that the lcore sends the peer once
 * the data is there (name_len 0: none). The entries and the notification
 * are copied. Never blocks on the network.
 * Returns 0 with *out, or at submission:
 *   -EINVAL    n is 0 or over RN_TRANSFER_MAX_ENTRIES, a length is 0, a
 *              local range is in no region of this process (or one being
 *              deregistered) or lacks its access, a remote range is not
 *              inside its rem, two nodes, or an unknown kind
 *   -ESTALE    a rem was exported by another incarnation of the peer
 *              (it restarted): import its new descriptor
 *   -ENOENT    no such peer
 *   -EAGAIN    the endpoint is still connecting, or its probe did not
 *              tell which of the rem's keys is its yet: try again
 *   -ENOTCONN  the endpoint failed and waits to reconnect
 *   -ENOTSUP   a notification, and the peer has no native channel
 *   -EMSGSIZE  a notification larger than the peer's slot
 *   -EPIPE     a notification, and the native channel failed
 *   -ENOMEM, -ENOBUFS (the lcore's ring is full)
 */
int rn_transfer_submit(struct rn_transfer *t, enum rn_transfer_kind kind,
		       const struct rn_transfer_entry *entries, unsigned int n,
		       const void *name, uint32_t name_len, const void *msg,
		       uint32_t msg_len, struct rn_transfer_batch **out);

/*
 * A batch's status, non-blocking: -EINPROGRESS, or final: 0 (every byte
 * placed, and its notification posted after that), or the first error:
 *   -EACCES    remote access error: a bad rkey, out of the peer's region,
 *              a region the peer deregistered, or without the access
 *   -EFAULT    local protection error: local memory gone or not writable
 *   -ENOTCONN  the peer is unreachable (retries exhausted) or the
 *              endpoint failed or closed with the batch in flight
 *   -EPIPE     a QP failed with it in flight (flushed)
 *   -ECANCELED cancelled before all of it was posted
 * *bytes_done (may be NULL): bytes known placed, at the final status.
 * *notify_status (may be NULL): 0 (the notification, or after a failure
 * the RN_TRANSFER_FAILED_NAME one, was posted) or why not.
 */
int rn_transfer_status(const struct rn_transfer_batch *b, uint64_t *bytes_done,
		       int *notify_status);

/* Wait for the final status up to timeout_ms: it, or -ETIMEDOUT. */
int rn_transfer_wait(const struct rn_transfer_batch *b, uint32_t timeout_ms);

/*
 * Cancel, non-blocking: chunks not yet posted are not; the batch ends
 * -ECANCELED once those posted completed, or normally if all were.
 */
void rn_transfer_cancel(struct rn_transfer_batch *b);

/* Free a batch whose status is final. Returns 0 or -EBUSY. */
int rn_transfer_release(struct rn_transfer *t, struct rn_transfer_batch *b);

#endif /* RN_TRANSFER_H */
