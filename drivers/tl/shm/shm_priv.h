/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SHM_PRIV_H
#define SHM_PRIV_H

/*
 * The shm driver's private structures.
 *
 * Each iface owns one memfd segment:
 *
 *   [seg header, 2 lines][slot ctl x max_peers, 2 lines each][pad to 4 KiB]
 *   [ring 0][ring 1] ... [ring max_peers-1]          (fifo_size bytes each)
 *
 * A sender claims one slot (and so one ring) at ep_create with a CAS on the slot's state word
 * and then owns the ring's head alone: an SPSC ring, no locked instruction per send.
 *
 * A ring is an array of 32-byte cells, two per cache line, so that a streaming receiver gets
 * two small messages (an 8-byte tagged message takes one cell) per cache line it pulls from
 * the sender's core.  A message starts on a cell with an 8-byte header word (length, AM id,
 * type) and occupies a whole number of cells; the header word is stored last with release
 * semantics and read with acquire.  Zero means "nothing here yet": the consumer
 * zeroes the first word of every cell it consumed, so stale bytes can never look like a
 * header.  A message never wraps: the sender writes a PAD header to skip the ring's end.
 * The consumer's tail lives on the slot's second line and is published every half ring (or
 * when a full ring walk finds the ring empty; not by the one-cell path of shm_deliver_one());
 * the sender keeps a cached copy.
 *
 * Wakeup (an application sleeping in epoll on the worker's fd): each iface has an eventfd,
 * whose number is in its segment header next to an "armed" word.  Arm sets the word, makes
 * every sender's earlier stores visible (membarrier(GLOBAL_EXPEDITED): the senders pay no
 * fence), then re-checks the rings and reports BUSY when a message came meanwhile.  A sender
 * loads the word after each message it publishes (one load of a line that stays shared while
 * nobody sleeps); finding it set, it clears it with an exchange and the winner writes the
 * eventfd, which it took at ep creation with pidfd_getfd() (SCM_RIGHTS for another user).
 * The iface's event fd is an epoll fd holding that eventfd and the pidfds of its senders and
 * of its eps' peers, so that a peer's death wakes a sleeping worker too.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <rte_common.h>

#include "unio_log.h"
#include "unio_rcache.h"
#include "unio_tl.h"

extern int shm_logtype;
#define SHM_LOG(lvl, fmt, ...) UNIO_LOG(lvl, shm_logtype, fmt, ##__VA_ARGS__)

#define SHM_CELL          32u                    /* ring unit: half a cache line */
#define SHM_SEG_MAGIC     0x4d48534f494e55ull   /* "UNIOSHM" */
#define SHM_ADDR_MAGIC    0x48534e55u           /* "UNSH" */
#define SHM_RKEY_MAGIC    0x59454b52u           /* "RKEY" */
#define SHM_VERSION       6u                     /* 3: keys in the owner's table; 4: 8224 B;
						    * 5: the fd server's key; 6: 8272 B */
/* most bytes of one message: 8 KiB + 80, 259 cells with the header word.  A tagged message
 * of up to 8248 bytes (UCX's posix am_bcopy) is one message; further fragments stay 8 KiB
 * (proto_lane.frag: frag_last 8248 rounded down to a cache line) */
#define SHM_MAX_DATA      8272u
#define SHM_MAX_SHORT     2048u                  /* most bytes of a short message's data */
#define SHM_ZCOPY_HDR     128u
#define SHM_RX_BURST      16u                    /* messages per ring per progress call */
#define SHM_CHECK_MS      2u                     /* peer liveness check period */
#define SHM_CHECK_CALLS   16u                    /* progress calls between clock reads */
#define SHM_MAX_ALLOCS    64u
#define SHM_MAX_REGS      4096u                  /* registrations (mem_reg, mem_alloc) */
/* the id of an iface's registration table memfd */
#define SHM_REGS_ID(iface_id) ((uint64_t)(iface_id) ^ UINT64_C(0x5245475352454753))

/* header word: [63:48] magic 0xa55a | [47:40] type | [39:32] AM id | [31:0] length */
#define SHM_HDR_MAGIC     0xa55aull
#define SHM_TYPE_MSG      1u
#define SHM_TYPE_PAD      2u

static inline uint64_t
shm_hdr_word(unsigned int type, uint8_t id, uint32_t len)
{
	return (SHM_HDR_MAGIC << 48) | ((uint64_t)type << 40) | ((uint64_t)id << 32) | len;
}

/*
 * The connection id (unio_tl_conn_id_t) of frames from the sender iface @p iface_id, which
 * that sender writes into its slot (sender_iface_id): the top bit set keeps it apart from
 * the ids of unio_tl_conn_id_new().  The receiver's eps to that iface carry the same.
 */
static inline unio_tl_conn_id_t
shm_conn_id(uint64_t iface_id)
{
	return iface_id | (UINT64_C(1) << 63);
}

/* slot state word: [39:8] sender pid | [7:0] state */
enum shm_slot_state {
	SHM_SLOT_FREE = 0,
	SHM_SLOT_CLAIMED = 1,
	SHM_SLOT_RELEASED = 2,
};

struct shm_seg_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t max_peers;
	uint64_t fifo_size;
	uint64_t iface_id;
	uint64_t owner_pid;
	uint64_t ring_off;
	uint64_t seg_size;
	uint64_t closed;                  /**< the owner closed the iface */
	uint64_t gen __rte_aligned(64);   /**< bumped when a slot is claimed or released */
	uint64_t armed;                   /**< the owner sleeps: a sender clears it, wakes it */
	uint64_t ev_fd;                   /**< the owner's eventfd, as numbered in the owner */
	uint64_t wake_fence;              /**< the owner has no membarrier: senders fence */
} __rte_aligned(64);

struct shm_slot_ctl {
	uint64_t state;                   /**< enum shm_slot_state | pid << 8 */
	uint64_t sender_iface_id;
	uint64_t tail __rte_aligned(64);  /**< consumer's published tail (cells) */
} __rte_aligned(64);

/** What a peer needs to reach an iface. */
struct shm_iface_addr {
	uint32_t magic;
	uint16_t version;
	uint16_t flags;
	uint32_t pid;
	uint32_t seg_fd;
	uint64_t iface_id;
	uint64_t seg_size;
	uint64_t probe_addr;              /**< a word holding iface_id, for the CMA probe */
	uint64_t reg_table;               /**< its registrations (struct shm_reg[]), CMA reads */
	uint32_t regs_fd;                 /**< the same, a sealed memfd peers map read-only;
					       UINT32_MAX: none (CMA reads only) */
	uint32_t pad;
	uint64_t ns_ipc, ns_mnt, ns_pid, ns_net;
	uint8_t boot_id[16];
	uint64_t fd_key;                  /**< random: what the fd server asks of a requester
					       (the iface id is in its socket's name, which
					       /proc/net/unix shows every user) */
};

/*
 * What a peer asks an iface's fd server (abstract unix socket "unio-shm-<pid>-<iface id
 * in hex>") for; the answer is one byte, 1 with the fd (SCM_RIGHTS) or 0.
 */
#define SHM_FD_REQ_MAGIC 0x5155524d48534e55ull   /* "UNSHMRUQ" */

struct shm_fd_request {
	uint64_t magic;
	uint64_t iface_id;
	uint64_t key;        /**< the iface's fd_key, from its address */
	uint64_t want_id;    /**< iface_id for the ring segment, or an alloc id */
};

#define SHM_RKEY_F_ALLOC (1u << 0)   /**< memory from mem_alloc: it can be mapped */

/*
 * A key names no process: its owner is the peer of the ep it is unpacked on.  It grants a
 * range its owner registered: the registration's slot and random secret are checked in the
 * owner's table (one CMA read) before a key is used through CMA; an allocation's key used
 * through its mapping is checked by the memfd it maps (fetched from the owner, named by id).
 */
struct shm_rkey_packed {
	uint32_t magic;
	uint32_t flags;
	uint32_t fd;                      /**< the memfd in the owner (ALLOC) */
	uint32_t slot;                    /**< the owner's registration (struct shm_reg) */
	uint64_t base;
	uint64_t len;
	uint64_t alloc_id;                /**< identity of the memfd (ALLOC) */
	uint64_t map_len;                 /**< size of the memfd (ALLOC) */
	uint64_t secret;                  /**< the registration's secret */
};

/** One registration, in the owner's private memory; peers read it with CMA. */
struct shm_reg {
	uint64_t secret;                  /**< random, never 0; 0: the slot is free */
	uint64_t base;
	uint64_t len;
};

/** Segment geometry, kept in local memory: never re-read from the shared header. */
struct shm_geom {
	uint32_t max_peers;
	uint64_t fifo_size;
	uint64_t ring_off;
};

/** A receive ring in use, as its consumer sees it (local memory). */
struct shm_rx_ring {
	uint64_t *next;                   /**< header word at the tail: polled first */
	uint8_t *ring;
	uint64_t tail;
	uint64_t published;
	struct shm_slot_ctl *ctl;
	unio_tl_conn_id_t conn_id;        /**< shm_conn_id() of the slot's sender_iface_id */
	uint32_t slot;
	pid_t pid;
	int pidfd;
	bool broken;
};

/** A memory allocation from mem_alloc. */
struct shm_alloc {
	int fd;
	uint64_t id;
	size_t map_len;
	uint32_t reg;                     /**< its registration slot */
};

struct shm_ep;

struct shm_iface {
	struct unio_tl_iface super;
	/* receive side, hot */
	unsigned int n_active;
	struct shm_rx_ring *active;
	uint64_t *gen;
	uint64_t seen_gen;
	uint64_t next_check;              /**< tsc of the next liveness check */
	unsigned int check_countdown;     /**< progress calls until the clock is read */
	uint64_t check_cycles;
	uint64_t n_cells;
	uint64_t mask;
	size_t max_data;
	/* segment */
	struct shm_seg_hdr *hdr;
	uint8_t *seg;
	size_t seg_size;
	int seg_fd;
	uint64_t iface_id;
	uint32_t max_peers;
	size_t fifo_size;
	struct shm_geom geom;
	bool cma;
	int hugepages;
	/* send side */
	struct shm_ep *eps;               /**< list of this iface's eps */
	uint64_t tx_no_room;              /**< sends refused: no room in the peer's ring */
	uint64_t tx_waits;                /**< queued sends' retries skipped: no room freed */
	/* wakeup */
	int ev_fd;                        /**< eventfd that senders write when armed */
	int poll_fd;                      /**< the event fd: epoll of ev_fd and peers' pidfds */
	bool armed;                       /**< hdr->armed was set by arm, not yet cleared */
	bool membarrier;                  /**< arm orders senders with membarrier() */
	/* fd passing for peers of other users */
	uint64_t fd_key;                  /**< a request must carry it (shm_iface_addr) */
	bool other_users;                 /**< UNIO_SHM_OTHER_USERS: serve other uids */
	uint64_t fd_refused;              /**< requests of other uids refused (server thread) */
	int listen_fd;
	pthread_t server;
	bool server_running;
	pthread_mutex_t lock;             /**< allocs, read by the server thread; regs */
	struct shm_alloc allocs[SHM_MAX_ALLOCS];
	struct shm_reg *regs;             /**< SHM_MAX_REGS registrations (keys' grants) */
	int regs_fd;                      /**< their sealed memfd, -1 when on the heap */
	uint32_t *reg_free;               /**< free slots, a stack */
	unsigned int n_reg_free;
	uint64_t secrets[32];             /**< random secrets, taken from the end */
	unsigned int n_secrets;
	/* peers' allocations mapped here (direct-mapped rkeys): a registration cache */
	struct unio_rcache *map_cache;     /**< made at the first mapping */
	size_t map_cache_max;              /**< UNIO_SHM_MAP_CACHE: most bytes mapped */
};

struct shm_ep {
	struct unio_tl_ep super;
	/* fast path */
	uint8_t *ring;
	uint64_t head;
	uint64_t cached_tail;
	uint64_t credit_cells;            /**< n_cells; 0 once the peer is gone */
	uint64_t n_cells;
	uint64_t mask;
	uint64_t *tail;
	const uint64_t *armed;            /**< the peer's armed word (or shm_wake_always) */
	/* control */
	struct shm_seg_hdr *peer_hdr;
	struct shm_geom peer_geom;        /**< validated copy of the peer's geometry */
	struct shm_slot_ctl *slot;
	void *peer_seg;
	size_t peer_seg_size;
	pid_t peer_pid;
	uint64_t peer_iface_id;
	uint64_t peer_fd_key;             /**< the peer's fd server key (its address) */
	uint64_t peer_regs;               /**< the peer's registration table (its address) */
	uint32_t peer_regs_fd;            /**< ... its sealed memfd there, UINT32_MAX: none */
	const struct shm_reg *peer_regs_map;   /**< ... mapped read-only here, or NULL */
	bool peer_regs_tried;             /**< the mapping was attempted */
	int pidfd;
	int ev_fd;                        /**< the peer's eventfd here, -1 when not obtained */
	bool wake_fence;                  /**< fence before loading the peer's armed word */
	bool dead;
	bool dying;                       /**< gone or closed: failed once the rings are drained */
	bool refused;                     /**< a send found no room at refused_tail */
	uint64_t refused_tail;            /**< the consumer's tail when a send was refused */
	struct shm_ep *next;
} __rte_cache_aligned;

/* shm_md.c: the registration table (made with the segment, whose id names it) */
unio_status_t shm_regs_create(struct shm_iface *si);
void shm_regs_destroy(struct shm_iface *si);
void shm_ep_regs_unmap(struct shm_ep *ep);

/* shm_seg.c: segments, identity, fd passing */
unio_status_t shm_seg_create(struct shm_iface *si, const struct unio_config *cfg);
void shm_seg_destroy(struct shm_iface *si);
void shm_local_addr(const struct shm_iface *si, struct shm_iface_addr *a);
bool shm_addr_same_host(const struct shm_iface_addr *a);
/**
 * The memfd @p fd of @p pid, of kind @p kind and id @p want_id (/proc/<pid>/fd, or the fd
 * server of iface @p iface_id with key @p key); -1 with errno EACCES (the kernel and the
 * server refused, or no server answered) or ESRCH (the server is another process's: logged
 * at ERR already), or when it is not the file asked for.
 */
int shm_open_peer_fd(pid_t pid, int fd, uint64_t iface_id, uint64_t key, const char *kind,
		     uint64_t want_id);
/**
 * The eventfd @p fd of the peer iface @p iface_id (fd server key @p key) of @p pid
 * (pidfd_getfd, SCM_RIGHTS).
 */
int shm_open_peer_efd(pid_t pid, int pidfd, int fd, uint64_t iface_id, uint64_t key);
int shm_memfd(const char *prefix, uint64_t id, size_t *len, int hugepages);
int shm_pidfd_open(pid_t pid);
bool shm_pid_dead(pid_t pid, int pidfd);
uint64_t shm_random_id(void);

/* shm_md.c: memory domain and RMA */
extern const struct unio_tl_iface_ctl_ops shm_ctl_ops;
bool shm_ep_room_freed(struct unio_tl_ep *ep);
unio_status_t shm_mem_reg(struct unio_tl_iface *iface, void *addr, size_t len,
			  struct unio_tl_memh *memh);
void shm_mem_dereg(struct unio_tl_iface *iface, struct unio_tl_memh *memh);
unio_status_t shm_mem_alloc(struct unio_tl_iface *iface, size_t len, struct unio_tl_memh *memh);
void shm_mem_free(struct unio_tl_iface *iface, struct unio_tl_memh *memh);
unio_status_t shm_rkey_pack(struct unio_tl_iface *iface, const struct unio_tl_memh *memh,
			    void *buf);
unio_status_t shm_rkey_unpack(struct unio_tl_ep *ep, const void *buf, size_t len,
			      struct unio_tl_rkey *rkey);
void shm_rkey_release(struct unio_tl_ep *ep, struct unio_tl_rkey *rkey);
unio_status_t shm_put_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
			    uint64_t remote_addr, const struct unio_tl_rkey *rkey,
			    struct unio_tl_completion *comp);
unio_status_t shm_get_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
			    uint64_t remote_addr, const struct unio_tl_rkey *rkey,
			    struct unio_tl_completion *comp);
bool shm_cma_probe(pid_t pid, uint64_t addr, uint64_t want);
/** Unmap every peer allocation this iface mapped (iface close). */
void shm_maps_release_all(struct shm_iface *si);
/** Forget the allocations of @p pid this iface mapped (the peer died). */
void shm_maps_forget_pid(struct shm_iface *si, pid_t pid);

#endif /* SHM_PRIV_H */
