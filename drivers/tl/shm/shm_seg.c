/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm segments: memfd creation (hugetlb when allowed and free), the host identity a peer
 * compares (boot id and namespaces, never the hostname), and how a peer gets a segment's fd:
 * /proc/<pid>/fd/<fd> first, and when the kernel refuses that (another user) SCM_RIGHTS
 * over an abstract unix socket that a small thread of the owning iface serves.
 */

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "shm_priv.h"

#define HUGE_2M       (2u << 20)

static struct {
	bool done;
	uint8_t boot_id[16];
	uint64_t ns[4];
} host_id;

uint64_t
shm_random_id(void)
{
	uint64_t v = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = ((uint64_t)getpid() << 40) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30;
	}
	if (fd >= 0)
		close(fd);
	return v != 0 ? v : 1;
}

static uint64_t
ns_inode(const char *name)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void
read_host_id(void)
{
	char buf[64] = { 0 };
	unsigned int n = 0;
	FILE *f;

	if (host_id.done)
		return;
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f != NULL) {
		if (fgets(buf, sizeof(buf), f) == NULL)
			buf[0] = '\0';
		fclose(f);
	}
	for (const char *p = buf; *p != '\0' && n < 32; p++) {
		int v = hexval(*p);

		if (v < 0)
			continue;
		host_id.boot_id[n / 2] |= (uint8_t)(v << ((n & 1) ? 0 : 4));
		n++;
	}
	host_id.ns[0] = ns_inode("ipc");
	host_id.ns[1] = ns_inode("mnt");
	host_id.ns[2] = ns_inode("pid");
	host_id.ns[3] = ns_inode("net");
	host_id.done = true;
}

void
shm_local_addr(const struct shm_iface *si, struct shm_iface_addr *a)
{
	read_host_id();
	memset(a, 0, sizeof(*a));
	a->magic = SHM_ADDR_MAGIC;
	a->version = SHM_VERSION;
	a->pid = (uint32_t)getpid();
	a->seg_fd = (uint32_t)si->seg_fd;
	a->iface_id = si->iface_id;
	a->seg_size = si->seg_size;
	a->probe_addr = (uintptr_t)&si->iface_id;
	a->reg_table = (uintptr_t)si->regs;
	a->regs_fd = si->regs_fd >= 0 ? (uint32_t)si->regs_fd : UINT32_MAX;
	a->fd_key = si->fd_key;
	a->ns_ipc = host_id.ns[0];
	a->ns_mnt = host_id.ns[1];
	a->ns_pid = host_id.ns[2];
	a->ns_net = host_id.ns[3];
	memcpy(a->boot_id, host_id.boot_id, sizeof(a->boot_id));
}

bool
shm_addr_same_host(const struct shm_iface_addr *a)
{
	read_host_id();
	return a->magic == SHM_ADDR_MAGIC && a->version == SHM_VERSION &&
	       memcmp(a->boot_id, host_id.boot_id, sizeof(a->boot_id)) == 0 &&
	       a->ns_ipc == host_id.ns[0] && a->ns_mnt == host_id.ns[1] &&
	       a->ns_pid == host_id.ns[2] && a->ns_net == host_id.ns[3];
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14 */
#endif

/* hugetlb when allowed: 'yes' always tries, 'try' only when the segment takes at most an
 * eighth of the free 2 MiB pages (EAL and other processes need them too) */
static bool
want_hugetlb(size_t len, int mode)
{
	unsigned long free_pages = 0;
	FILE *f;

	if (mode == UNIO_HUGEPAGES_NO || len < HUGE_2M)
		return false;
	if (mode == UNIO_HUGEPAGES_YES)
		return true;
	f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "r");
	if (f == NULL)
		return false;
	if (fscanf(f, "%lu", &free_pages) != 1)
		free_pages = 0;
	fclose(f);
	return RTE_ALIGN_CEIL(len, HUGE_2M) / HUGE_2M * 8 <= free_pages;
}

static int
memfd_sized(const char *name, unsigned int flags, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC | flags);

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)len) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int
shm_memfd(const char *prefix, uint64_t id, size_t *len, int hugepages)
{
	char name[64];
	size_t hlen = RTE_ALIGN_CEIL(*len, HUGE_2M);
	int fd = -1;

	snprintf(name, sizeof(name), "%s-%016" PRIx64, prefix, id);
	if (want_hugetlb(*len, hugepages)) {
		fd = memfd_sized(name, MFD_HUGETLB, hlen);
		if (fd >= 0) {
			/*
			 * reserve and fault in now: a hugetlb mapping fails here, not with
			 * SIGBUS later.  A hugetlb cgroup's limit (hugetlb.2MB.max) is charged
			 * per page faulted in, and MAP_POPULATE gives up on it silently: the
			 * first store past the limit raised SIGBUS (a 16 MiB mem_map in a
			 * 4-page cgroup).  MADV_POPULATE_WRITE reports it (EFAULT); EINVAL: a
			 * kernel before 5.14 without it, MAP_POPULATE alone as before.
			 */
			void *p = mmap(NULL, hlen, PROT_READ | PROT_WRITE, MAP_SHARED |
				       MAP_POPULATE, fd, 0);

			if (p != MAP_FAILED) {
				int pop = madvise(p, hlen, MADV_POPULATE_WRITE) == 0 ? 0 : errno;

				munmap(p, hlen);
				if (pop == 0 || pop == EINVAL) {
					*len = hlen;
					return fd;
				}
				SHM_LOG(WARNING, "%zu bytes of hugepages could not be faulted in "
					"(%s; a hugetlb cgroup's limit?): 4 KiB pages instead",
					hlen, strerror(pop));
			}
			close(fd);
		}
	}
	*len = RTE_ALIGN_CEIL(*len, (size_t)getpagesize());
	return memfd_sized(name, 0, *len);
}

int
shm_pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	RTE_SET_USED(pid);
	errno = ENOSYS;
	return -1;
#endif
}

/* a pidfd polls readable once the process exited (also while it is a zombie) */
bool
shm_pid_dead(pid_t pid, int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	if (pidfd >= 0)
		return poll(&p, 1, 0) > 0;
	return kill(pid, 0) != 0 && errno == ESRCH;
}

/* ---- fd passing ---- */

static void
sock_name(struct sockaddr_un *sa, socklen_t *len, pid_t pid, uint64_t iface_id)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "unio-shm-%d-%016" PRIx64,
		     (int)pid, iface_id);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int
lookup_fd(struct shm_iface *si, uint64_t want_id)
{
	int fd = -1;

	if (want_id == si->iface_id)
		return si->seg_fd;
	if (want_id == ~si->iface_id)
		return si->ev_fd;   /* shm_open_peer_efd */
	if (want_id == SHM_REGS_ID(si->iface_id))
		return si->regs_fd;   /* sealed: read-only for whoever maps it */
	pthread_mutex_lock(&si->lock);
	for (unsigned int i = 0; i < SHM_MAX_ALLOCS; i++)
		if (si->allocs[i].fd >= 0 && si->allocs[i].id == want_id)
			fd = si->allocs[i].fd;
	pthread_mutex_unlock(&si->lock);
	return fd;
}

/*
 * Whom the server answers: a requester of this process's uid (or root) could open
 * /proc/<pid>/fd itself, or write into this process with process_vm_writev; one of another
 * uid only with UNIO_SHM_OTHER_USERS=y, for it gets the whole segment, every sender's ring
 * in it (doc/guides/drivers/shm.md, "Who can reach the segment").
 */
static bool
requester_allowed(struct shm_iface *si, int c)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || len != sizeof(cr))
		return false;
	if (cr.uid == geteuid() || cr.uid == 0 || si->other_users)
		return true;
	__atomic_fetch_add(&si->fd_refused, 1, __ATOMIC_RELAXED);
	return false;
}

static void
serve_one(struct shm_iface *si, int c)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct shm_fd_request req;
	uint8_t ok = 0;
	struct iovec iov = { &ok, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct timeval tv = { 1, 0 };
	int fd = -1;

	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (recv(c, &req, sizeof(req), MSG_WAITALL) == (ssize_t)sizeof(req) &&
	    req.magic == SHM_FD_REQ_MAGIC && req.iface_id == si->iface_id &&
	    req.key == si->fd_key && requester_allowed(si, c))
		fd = lookup_fd(si, req.want_id);
	if (fd >= 0) {
		struct cmsghdr *cm;

		ok = 1;
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	if (sendmsg(c, &mh, MSG_NOSIGNAL) < 0)
		SHM_LOG(DEBUG, "fd server: sendmsg: %s", strerror(errno));
}

static void *
server_main(void *arg)
{
	struct shm_iface *si = arg;

	for (;;) {
		int c = accept4(si->listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;   /* shut down by iface close */
		}
		serve_one(si, c);
		close(c);
	}
	return NULL;
}

static unio_status_t
server_start(struct shm_iface *si)
{
	struct sockaddr_un sa;
	socklen_t len;
	sigset_t all, old;
	int rc;

	si->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (si->listen_fd < 0)
		return UNIO_ERR_IO;
	sock_name(&sa, &len, getpid(), si->iface_id);
	if (bind(si->listen_fd, (struct sockaddr *)&sa, len) != 0 ||
	    listen(si->listen_fd, 64) != 0) {
		SHM_LOG(ERR, "fd server socket: %s", strerror(errno));
		close(si->listen_fd);
		si->listen_fd = -1;
		return UNIO_ERR_IO;
	}
	/* the thread takes no signals meant for the application */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&si->server, NULL, server_main, si);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		close(si->listen_fd);
		si->listen_fd = -1;
		return UNIO_ERR_NO_RESOURCE;
	}
	si->server_running = true;
	return UNIO_OK;
}

/*
 * Ask the fd server of process @p pid for its file @p want_id.  The server's abstract name
 * has no owner: any process of the network namespace may bind the name of a pid that has
 * none (a process that is not Unio, or one whose iface id it learnt).  So the listening
 * socket's creator (SO_PEERCRED: the pid that called listen()) must be @p pid, the process
 * the address names, whose memory CMA then reads and whose death its pidfd reports.
 */
static int
request_fd(pid_t pid, uint64_t iface_id, uint64_t key, uint64_t want_id)
{
	struct shm_fd_request req = { SHM_FD_REQ_MAGIC, iface_id, key, want_id };
	char cbuf[CMSG_SPACE(sizeof(int))];
	uint8_t ok = 0;
	struct iovec iov = { &ok, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct timeval tv = { 2, 0 };
	struct sockaddr_un sa;
	struct cmsghdr *cm;
	struct ucred cr;
	socklen_t len, crl = sizeof(cr);
	int s, fd = -1;

	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	sock_name(&sa, &len, pid, iface_id);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&sa, len) != 0)
		goto out;
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crl) != 0 || crl != sizeof(cr) ||
	    cr.pid != pid) {
		SHM_LOG(ERR, "the fd server named for pid %d is process %d's, not that pid's (a "
			"forged address, or another process bound its name): refused", (int)pid,
			crl == sizeof(cr) ? (int)cr.pid : -1);
		close(s);
		errno = ESRCH;   /* said: the caller adds no line of its own */
		return -1;
	}
	if (send(s, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req) ||
	    recvmsg(s, &mh, MSG_CMSG_CLOEXEC) != 1 || ok != 1)
		goto out;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm != NULL && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
out:
	close(s);
	return fd;
}

/*
 * The memfd's name carries its kind and id: check both, so that a reused fd number is not
 * mistaken, and a key naming the owner's ring segment (whose id is in its address) or any
 * other file it has open is not mapped as an allocation.
 */
static bool
fd_has_id(int fd, const char *kind, uint64_t want_id)
{
	char path[64], target[128], want[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	snprintf(want, sizeof(want), "/memfd:%s-%016" PRIx64 " ", kind, want_id);
	return strncmp(target, want, strlen(want) - 1) == 0 &&
	       (target[strlen(want) - 1] == '\0' || target[strlen(want) - 1] == ' ');
}

int
shm_open_peer_fd(pid_t pid, int fd, uint64_t iface_id, uint64_t key, const char *kind,
		 uint64_t want_id)
{
	char path[64];
	int local;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	local = open(path, O_RDWR | O_CLOEXEC);
	if (local < 0 && (errno == EACCES || errno == EPERM)) {
		local = request_fd(pid, iface_id, key, want_id);
		if (local < 0 && errno != ESRCH)
			errno = EACCES;   /* what the kernel said, and the server too */
	}
	if (local >= 0 && !fd_has_id(local, kind, want_id)) {
		close(local);
		return -1;
	}
	return local;
}

static bool
fd_is_eventfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[eventfd]") == 0;
}

int
shm_open_peer_efd(pid_t pid, int pidfd, int fd, uint64_t iface_id, uint64_t key)
{
	int local = -1;

#ifdef SYS_pidfd_getfd
	if (pidfd >= 0)
		local = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
#else
	RTE_SET_USED(pidfd);
#endif
	if (local < 0)
		local = request_fd(pid, iface_id, key, ~iface_id);
	if (local >= 0 && !fd_is_eventfd(local)) {
		close(local);
		return -1;
	}
	return local;
}

/* ---- the iface's own segment ---- */

static void
seg_init(struct shm_iface *si)
{
	struct shm_seg_hdr *h = si->hdr;

	h->version = SHM_VERSION;
	h->max_peers = si->max_peers;
	h->fifo_size = si->fifo_size;
	h->iface_id = si->iface_id;
	h->owner_pid = (uint64_t)getpid();
	h->ring_off = RTE_ALIGN_CEIL(sizeof(*h) + si->max_peers * sizeof(struct shm_slot_ctl),
				     4096);
	h->seg_size = si->seg_size;
	si->geom = (struct shm_geom){ si->max_peers, si->fifo_size, h->ring_off };
	__atomic_store_n(&h->magic, SHM_SEG_MAGIC, __ATOMIC_RELEASE);
}

unio_status_t
shm_seg_create(struct shm_iface *si, const struct unio_config *cfg)
{
	size_t ring_off = RTE_ALIGN_CEIL(sizeof(struct shm_seg_hdr) +
					 si->max_peers * sizeof(struct shm_slot_ctl), 4096);
	size_t len = ring_off + (size_t)si->max_peers * si->fifo_size;
	unio_status_t st;

	si->map_cache_max = cfg->shm_map_cache;
	si->iface_id = shm_random_id();
	si->fd_key = shm_random_id();
	si->other_users = cfg->shm_other_users;
	st = shm_regs_create(si);
	if (st != UNIO_OK)
		return st;
	si->seg_fd = shm_memfd("unio-shm-ring", si->iface_id, &len, cfg->hugepages);
	if (si->seg_fd < 0) {
		SHM_LOG(ERR, "memfd of %zu bytes: %s", len, strerror(errno));
		return UNIO_ERR_NO_MEMORY;
	}
	si->seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, si->seg_fd, 0);
	if (si->seg == MAP_FAILED) {
		SHM_LOG(ERR, "mmap of %zu bytes: %s", len, strerror(errno));
		close(si->seg_fd);
		si->seg_fd = -1;
		return UNIO_ERR_NO_MEMORY;
	}
	si->seg_size = len;
	si->hdr = (struct shm_seg_hdr *)si->seg;
	seg_init(si);
	st = server_start(si);
	if (st != UNIO_OK)
		shm_seg_destroy(si);
	return st;
}

void
shm_seg_destroy(struct shm_iface *si)
{
	if (si->server_running) {
		shutdown(si->listen_fd, SHUT_RDWR);
		pthread_join(si->server, NULL);
		si->server_running = false;
	}
	if (si->listen_fd >= 0)
		close(si->listen_fd);
	si->listen_fd = -1;
	if (si->hdr != NULL) {
		__atomic_store_n(&si->hdr->closed, 1, __ATOMIC_RELEASE);
		munmap(si->seg, si->seg_size);
		si->hdr = NULL;
	}
	if (si->seg_fd >= 0)
		close(si->seg_fd);
	si->seg_fd = -1;
}
