/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef TCP_PRIV_H
#define TCP_PRIV_H

/*
 * Internals of the tcp driver, shared by tcp_iface.c (devices, addresses, connections,
 * memory) and tcp_data.c (framing, send and receive paths, put/get).
 *
 * Wire format: every frame is an 8-byte header [len u32 LE, type u8, am id u8, magic u16 LE]
 * followed by len bytes.  A connection starts with HELLO (the connecting iface's address);
 * the frames queued behind it follow at once, without waiting for an answer.
 *
 * Simultaneous connect: both sides opened a connection to each other.  The connection
 * opened by the side with the smaller address (memcmp of struct tcp_addr) carries both
 * directions in the end; the other side, once its own connection is idle, sends MOVE_END
 * on it and MOVE_START on the survivor, then sends there only.  The survivor's side holds
 * back what follows MOVE_START until it has read MOVE_END on the other connection, so
 * every direction keeps its order.  One socket per pair: acks ride on the data.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_byteorder.h>

#include "unio_log.h"
#include "unio_tl.h"
#include "unio_tl_tcp.h"

extern int unio_logtype_tcp;
#define TCP_LOG(lvl, fmt, ...) UNIO_LOG(lvl, unio_logtype_tcp, fmt, ##__VA_ARGS__)

#define TCP_MAGIC          0x5475u      /* "uT" */
#define TCP_ADDR_MAGIC     0x554e494fu  /* "UNIO" */
#define TCP_WIRE_VERSION   4            /* 2: MOVE_START / MOVE_END; 3: 1 MiB GET_RESP;
						 * 4: key secrets */

#define TCP_MAX_SHORT      (1024 - 8)          /* am_short payload beyond the 8-byte header */
#define TCP_MAX_BCOPY      (64 * 1024)
#define TCP_MAX_ZCOPY_HDR  128
#define TCP_MAX_ZCOPY      (256 * 1024)        /* am_zcopy header + payload */
#define TCP_MAX_RMA        (256 * 1024)        /* put bytes per frame */
#define TCP_MAX_GET        (1024 * 1024)       /* get per call: one GET_RESP frame, larger than
						* the rx buffer: read straight to the iovs */
#define TCP_MAX_PUT        (8 * 1024 * 1024)   /* put per call: up to 32 frames */
#define TCP_TXBUF_SIZE     (256 * 1024)        /* per connection: short + bcopy frames */
#define TCP_RXBUF_SIZE     (512 * 1024)        /* per connection: >= the largest frame */
#define TCP_ZQ_SIZE        64                  /* queued zero-copy sends per connection */
#define TCP_GETS_MAX       256                 /* outstanding gets + puts per connection */
#define TCP_REGS_MAX       1024                /* registered regions per process */
#define TCP_PENDING_MAX    64                  /* accepted sockets awaiting HELLO */
#define TCP_MIN_RCVBUF     (64 * 1024)         /* floor of UNIO_TCP_RCVBUF */
#define TCP_BUSY_EPOLL_EVERY 16                /* busy mode: epoll every N progress calls */
#define TCP_BUSY_EP_OFF 256                    /* busy mode: blind reads in a row before a
						* connection leaves the epoll set */
#define TCP_BUSY_COLD (1u << 16)               /* busy mode: empty reads before epoll's turn */
#define TCP_BUSY_COLD_FRESH 1024               /* the same for a connection that has carried
						* no data frame yet (a rendezvous rail) */
#define TCP_BURST_MIN      2                   /* sends after a progress call before
						* MSG_MORE: a burst */
#define TCP_DIRECT_MIN     (16 * 1024)         /* PUT / GET_RESP bytes still unread: read them
						* straight to their destination */
#define TCP_SPLICE_MIN     (64 * 1024)         /* PUT / GET_RESP payloads sent by splice */
#define TCP_PIPE_SIZE      (1024 * 1024)       /* F_SETPIPE_SZ of a connection's pipe */
#define TCP_RX_AHEAD       (64 * 1024)         /* bytes read past the current frame */
#define TCP_RX_AHEAD_BULK  (16 * 1024)         /* the same while bulk frames arrive */
#define TCP_BULK_FRAMES    64                  /* frames without a bulk one before reads
						* go TCP_RX_AHEAD past a frame again */
#define TCP_BULK_CALLS     (1u << 16)          /* busy mode: progress calls after a bulk
						* frame before its connection is read
						* blindly again */
#define TCP_RX_LOWAT       (64 * 1024)         /* SO_RCVLOWAT while a direct frame's rest
						* trickles in: its next read takes this much */

enum tcp_frame_type {
	TCP_F_AM = 1,
	TCP_F_PUT,
	TCP_F_GET_REQ,
	TCP_F_GET_RESP,
	TCP_F_HELLO,
	TCP_F_PUT_ACK,
	TCP_F_FLUSH,
	TCP_F_MOVE_END,    /* no more frames from the sender on this connection (empty) */
	TCP_F_MOVE_START,  /* the sender's frames continue here, after its MOVE_END (empty) */
	TCP_F_LAST,
};

struct tcp_hdr {
	uint32_t len;    /* bytes after this header, little-endian */
	uint8_t type;    /* enum tcp_frame_type */
	uint8_t id;      /* AM id (TCP_F_AM) */
	uint16_t magic;  /* TCP_MAGIC, little-endian */
} __rte_packed;  /* frames sit at any offset of the byte stream */

/* Put / get request and response header, after struct tcp_hdr. */
struct tcp_rma_hdr {
	uint64_t addr;     /* remote address (PUT, GET_REQ) */
	uint64_t length;   /* bytes asked (GET_REQ) or carried (GET_RESP) */
	uint32_t key_idx;  /* registration slot on the target */
	uint32_t key_gen;  /* its generation: a stale key is refused */
	uint32_t req_id;   /* PUT, PUT_ACK, GET_REQ, GET_RESP, FLUSH */
	int32_t status;    /* GET_RESP: UNIO_OK or the refusal */
	uint64_t secret;   /* PUT, GET_REQ: the registration's random secret, from the key */
};

/* The iface address: also what HELLO carries.  Compared with memcmp: no padding. */
struct tcp_addr {
	uint32_t magic;       /* TCP_ADDR_MAGIC */
	uint16_t version;     /* TCP_WIRE_VERSION */
	uint16_t port;        /* network order */
	uint32_t ipv4;        /* network order */
	uint32_t reserved;
	uint64_t netns_ino;   /* network namespace inode */
	uint8_t boot_id[16];  /* kernel boot id: same host */
};

/* The packed remote key. */
struct tcp_rkey {
	uint64_t base;
	uint64_t len;
	uint32_t key_idx;
	uint32_t key_gen;
	uint64_t secret;   /* random per registration: slot and generation alone are guessable */
};

enum tcp_item_kind { TCP_ITEM_LISTEN, TCP_ITEM_PENDING, TCP_ITEM_CONN };

/* What an epoll event points at. */
struct tcp_item {
	enum tcp_item_kind kind;
	int fd;
};

enum tcp_conn_state {
	TCP_CONN_CONNECTING,  /* outgoing: connect() in progress; frames queue behind HELLO */
	TCP_CONN_ESTABLISHED,
	TCP_CONN_FAILED,
};

/* A zero-copy send waiting for the kernel to take it. */
struct tcp_zc {
	size_t txpos;      /* the txbuf offset it follows */
	size_t sent;       /* bytes of it sent */
	size_t total;
	size_t hdr_len;
	unsigned int iovcnt;
	struct unio_tl_completion *comp;  /* NULL: internal (get response) */
	bool splice;       /* payload by vmsplice + splice (done only when the peer confirms) */
	size_t mapped;     /* splice: payload bytes put into the connection's pipe so far */
	uint8_t hdr[sizeof(struct tcp_hdr) + sizeof(struct tcp_rma_hdr) + TCP_MAX_ZCOPY_HDR];
	struct iovec iov[UNIO_TL_MAX_IOV];
};

/* An outstanding get, or a put or flush waiting for the target's PUT_ACK. */
struct tcp_get {
	bool used;
	bool put;
	uint32_t req_id;
	size_t length;
	unsigned int iovcnt;
	struct iovec iov[UNIO_TL_MAX_IOV];
	struct unio_tl_completion *comp;
};

struct tcp_ep;

/* One connection to one peer iface; shared by every ep to that peer. */
struct tcp_conn {
	struct tcp_item item;
	struct tcp_iface *iface;
	enum tcp_conn_state state;
	unio_status_t err;            /* the failure, once FAILED */
	bool anon;                    /* second connection to a peer (or self): never looked up */
	bool accepted;                /* incoming: the peer opened it and said HELLO on it */
	bool dead;                    /* to be freed by the next progress */
	bool notify;                  /* failed: err_cb owed to its eps */
	bool eof;                     /* the peer closed cleanly (logged at info level) */
	bool out_armed;               /* EPOLLOUT requested */
	bool tx_blocked;              /* the kernel refused bytes last time */
	bool rx_stalled;              /* a received get waits for room in the tx queue */
	bool dirty;                   /* frames sent since the last flush */
	bool more_held;               /* the last send was MSG_MORE: the kernel may hold it */
	uint64_t tx_epoch;            /* the iface's epoch at the last send */
	unsigned int tx_epoch_sends;  /* sends in that epoch */
	unsigned int more_max;        /* frames up to this size may go with MSG_MORE: a
				       * quarter of the connection's MSS (0: not read yet) */
	bool dual;                    /* the peer sends on its own connection (sim. connect) */
	uint32_t rx_quiet;            /* busy mode: empty reads since data or a send */
	uint32_t cold_at;             /* rx_quiet from which it is not read blindly */
	bool ep_off;                  /* busy mode: taken off the epoll set while read
				       * blindly (conn_ep_on() puts it back) */
	uint32_t blind_calls;         /* busy mode: calls in a row that read it blindly */
	bool move_pending;            /* ours loses the simultaneous connect: move when idle */
	bool await_end;               /* ours survives: MOVE_START waits for the twin's END */
	bool end_seen;                /* MOVE_END read on this (incoming) connection */
	bool in_rx;                   /* inside tcp_conn_rx(): it does not nest, no move */
	struct tcp_conn *twin;        /* the other connection of a simultaneous connect */
	unio_tl_conn_id_t conn_id;    /* what frames on it tell the AM handler: its own, or
				       * (crossing connections, an iface's own two) the one
				       * of the connection this iface opened to that peer */
	uint64_t deadline_ns;         /* connect / wait-peer timeout */
	struct tcp_addr peer;
	struct tcp_ep *eps;           /* eps using this connection */
	/* tx: frames copied in [tx_head, tx_tail), zero-copy sends interleaved by txpos */
	uint8_t *txbuf;
	size_t tx_head, tx_tail;
	unsigned int zq_head, zq_tail;  /* free-running */
	struct tcp_zc *zq;
	int pipe[2];                  /* splice: pipe of the head entry's pages, -1 until used */
	size_t pipe_fill;             /* bytes in it, not yet spliced into the socket */
	/* rx */
	uint8_t *rxbuf;
	size_t rx_off, rx_len;        /* unparsed bytes: [rx_off, rx_len) */
	/* direct receive: the rest of one large PUT / GET_RESP read straight to its place */
	bool dr_active;
	bool dr_discard;              /* its destination went away (get canceled): drop it */
	bool ack_owed;                /* a directly received PUT's ack waits for tx room */
	unsigned int rx_bulk;         /* > 0: a bulk PUT / GET_RESP came in the last
				       * TCP_BULK_FRAMES frames: read less past a frame */
	unsigned int bulk;            /* > 0: a PUT / GET_RESP of TCP_DIRECT_MIN or more went
				       * either way in the last TCP_BULK_FRAMES frames
				       * received: busy mode reads it when epoll says */
	unsigned int bulk_calls;      /* busy progress calls since that frame */
	bool rx_wait;                 /* its direct frame's rest is awaited through epoll
				       * (SO_RCVLOWAT): busy mode does not read it blindly */
	int rx_lowat;                 /* SO_RCVLOWAT set on the socket, 0: the default */
	uint8_t dr_type;
	unsigned int dr_iovcnt;
	size_t dr_left;               /* payload bytes still to read */
	struct tcp_rma_hdr dr_rma;    /* the frame's rma header */
	struct iovec dr_iov[UNIO_TL_MAX_IOV];
	/* gets */
	uint32_t get_seq;
	unsigned int n_gets;
	struct tcp_get *gets;
	TAILQ_ENTRY(tcp_conn) next;
};
TAILQ_HEAD(tcp_conn_list, tcp_conn);

struct tcp_ep {
	struct unio_tl_ep super;
	struct tcp_conn *conn;
	struct tcp_ep *next;
};

/* An accepted socket that has not said HELLO yet. */
struct tcp_pending {
	struct tcp_item item;
	size_t got;
	uint64_t deadline_ns;
	uint8_t buf[sizeof(struct tcp_hdr) + sizeof(struct tcp_addr)];
};

struct tcp_region {
	bool used;
	uint32_t gen;
	uint64_t base;
	uint64_t len;
	uint64_t secret;
};

struct tcp_iface {
	struct unio_tl_iface super;
	struct tcp_item listen;
	int epfd;
	int poll_mode;                  /* enum unio_tcp_poll_mode */
	bool loopback;
	bool splice;                    /* UNIO_TCP_SPLICE, off once a pipe cannot be made */
	unsigned int tick;
	bool hellos_taken;              /* tcp_iface_take_hellos() ran: pending items may be gone */
	unsigned int n_slow;            /* connections not yet established */
	unsigned int n_pending;         /* accepted sockets awaiting HELLO (pending[]) */
	unsigned int n_move;            /* connections with move_pending */
	unsigned int n_more_held;       /* connections with more_held */
	uint64_t epoch;                 /* progress calls so far */
	bool rx_retry;                  /* a stalled connection may go on: parse it again */
	bool may_block;                 /* busy mode: a connection may be tx_blocked, rx_wait or
					 * bulk (set where those are, cleared by a progress call
					 * that finds none): else progress skips that walk */
	struct tcp_addr addr;
	const struct unio_config *config;
	struct tcp_conn_list conns;
	struct tcp_pending *pending[TCP_PENDING_MAX];
	struct unio_tl_tcp_stats stats;
};

/*
 * Registered regions of the process, shared by every tcp iface: a key packed by one iface
 * is honoured by all of them (the protocol layer may unpack a key on another lane's iface).
 * Written under a lock (control path); read on the rx path, validated by generation.
 */
extern struct tcp_region tcp_regs[TCP_REGS_MAX];

/* tcp_data.c */
unio_status_t tcp_ep_am_short(struct unio_tl_ep *ep, uint8_t id, uint64_t hdr,
			      const void *payload, size_t len);
ssize_t tcp_ep_am_bcopy(struct unio_tl_ep *ep, uint8_t id, unio_tl_pack_cb_t pack, void *arg,
			unsigned int flags);
unio_status_t tcp_ep_am_zcopy(struct unio_tl_ep *ep, uint8_t id, const void *hdr,
			      size_t hdr_len, const struct iovec *iov, size_t iovcnt,
			      unsigned int flags, struct unio_tl_completion *comp);
unio_status_t tcp_ep_put_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
			       uint64_t remote_addr, const struct unio_tl_rkey *rkey,
			       struct unio_tl_completion *comp);
unio_status_t tcp_ep_get_zcopy(struct unio_tl_ep *ep, const struct iovec *iov, size_t iovcnt,
			       uint64_t remote_addr, const struct unio_tl_rkey *rkey,
			       struct unio_tl_completion *comp);
unio_status_t tcp_ep_flush(struct unio_tl_ep *ep, struct unio_tl_completion *comp);
unsigned int tcp_conn_rx(struct tcp_conn *c);
int tcp_conn_tx(struct tcp_conn *c);
void tcp_conn_push(struct tcp_conn *c);
void tcp_conn_cancel_ops(struct tcp_conn *c, unio_status_t st);
bool tcp_conn_tx_idle(const struct tcp_conn *c);
void tcp_conn_send_move(struct tcp_conn *old, struct tcp_conn *next);

/* tcp_iface.c */
void tcp_conn_fail(struct tcp_conn *c, unio_status_t st);
void tcp_conn_malformed(struct tcp_conn *c, const char *what);
void tcp_conn_cut(struct tcp_conn *c);
void tcp_conn_set_out(struct tcp_conn *c, bool want);
void tcp_conn_check_connect(struct tcp_conn *c);
unio_status_t tcp_status_from_errno(int err);
bool tcp_conn_wait_expired(struct tcp_conn *c);
void tcp_iface_take_hellos(struct tcp_iface *ti);

static inline struct tcp_iface *
tcp_iface_of(struct unio_tl_iface *iface)
{
	return (struct tcp_iface *)iface;
}

static inline struct tcp_conn *
tcp_conn_of(struct unio_tl_ep *ep)
{
	return ((struct tcp_ep *)ep)->conn;
}

/*
 * A data frame went out or came in on @p c: from now on busy mode reads it blindly until
 * TCP_BUSY_COLD empty reads, where a connection that carried only HELLO and MOVE frames
 * (a rendezvous rail not used yet) stops after TCP_BUSY_COLD_FRESH.
 */
static inline void
tcp_conn_used(struct tcp_conn *c)
{
	c->cold_at = TCP_BUSY_COLD;
}

/*
 * recv / send of a non-blocking socket on the data path: the system call itself, without
 * glibc's recv()'s and send()'s cancellation-point bookkeeping (about 30 instructions of
 * each, tcp.md entry 18; no Unio thread is ever cancelled).  errno as theirs.
 */
static inline ssize_t
tcp_recv(int fd, void *buf, size_t len, int flags)
{
	return syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

static inline ssize_t
tcp_send(int fd, const void *buf, size_t len, int flags)
{
	return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

static inline void
tcp_hdr_set(struct tcp_hdr *h, uint32_t len, uint8_t type, uint8_t id)
{
	h->len = rte_cpu_to_le_32(len);
	h->type = type;
	h->id = id;
	h->magic = rte_cpu_to_le_16(TCP_MAGIC);
}

#endif /* TCP_PRIV_H */
