/* SPDX-License-Identifier: BSD-3-Clause */
/* The harness's port reservation (test_free_port()), across processes. */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unio_test.h"

#define N_OWN   24
#define N_CHILD 64

static int
listen_on(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 4) != 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * Ports handed to this process lie below the kernel's ephemeral range (no connect() or bind
 * to port 0 can take them), are distinct, and a listener binds each; a second process gets
 * none of them while this one lives (it used to get any port the kernel had free: two tests
 * could be handed the same one, or a connection's source port took it before the listen).
 */
UNIO_TEST(test_free_port_reserved, fast)
{
	int own[N_OWN], fds[N_OWN], pfd[2], st, got[N_CHILD], n = 0;
	unsigned int lo = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	pid_t pid;

	if (f != NULL) {
		TEST_ASSERT(fscanf(f, "%u %u", &lo, &hi) == 2, "port range");
		fclose(f);
	}
	for (int i = 0; i < N_OWN; i++) {
		own[i] = test_free_port();
		TEST_ASSERT(own[i] > 0 && (unsigned int)own[i] < lo,
			    "port %d inside the ephemeral range %u-%u", own[i], lo, hi);
		for (int j = 0; j < i; j++)
			TEST_ASSERT(own[i] != own[j], "port %d handed out twice", own[i]);
		fds[i] = listen_on(own[i]);
		TEST_ASSERT(fds[i] >= 0, "listen on %d", own[i]);
	}
	/* the listeners closed: the ports stay reserved to this process all the same */
	for (int i = 0; i < N_OWN; i++)
		close(fds[i]);
	TEST_ASSERT_EQ(pipe(pfd), 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		for (int i = 0; i < N_CHILD; i++) {
			int p = test_free_port();

			if (write(pfd[1], &p, sizeof(p)) != sizeof(p))
				_exit(2);
		}
		_exit(0);
	}
	TEST_ASSERT(pid > 0, "fork");
	close(pfd[1]);
	while (n < N_CHILD && read(pfd[0], &got[n], sizeof(got[n])) == sizeof(got[n]))
		n++;
	close(pfd[0]);
	TEST_ASSERT_EQ(waitpid(pid, &st, 0), pid);
	TEST_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	TEST_ASSERT_EQ(n, N_CHILD);
	for (int i = 0; i < N_CHILD; i++) {
		TEST_ASSERT(got[i] > 0 && (unsigned int)got[i] < lo, "child's port %d", got[i]);
		for (int j = 0; j < N_OWN; j++)
			TEST_ASSERT(got[i] != own[j], "port %d given to two processes", got[i]);
		for (int j = 0; j < i; j++)
			TEST_ASSERT(got[i] != got[j], "child got port %d twice", got[i]);
	}
	TEST_LOG("%d ports here, %d in a second process, all distinct, below %u", N_OWN,
		 N_CHILD, lo);
	return TEST_OK;
}
