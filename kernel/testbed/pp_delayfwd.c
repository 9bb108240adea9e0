// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * pp_delayfwd: a fixed one-way delay for one direction of one test-bed path, for kernels
 * without netem (this project's CI kernel has none).
 *
 *   pp_delayfwd DEV DELAY_US [QUEUE_PKTS [JITTER_US]]
 *
 * Creates TUN device DEV (in the caller's network namespace), prints "ready" once it exists,
 * then reads every packet the kernel routes into DEV, holds it DELAY_US microseconds (from the
 * moment it was read, CLOCK_MONOTONIC) and writes it back into DEV, from where the kernel
 * routes it on (the router's policy rules send packets that arrive from DEV to the next hop).
 * A fixed delay keeps packets in order, so a FIFO ring is enough. The timer slack is set to
 * 1 ns and waits use ppoll with nanosecond timeouts, which keeps the added error in the tens
 * of microseconds (tests/kernel checks the measured one-way delay within 1 ms of the setting).
 * When the ring is full the packet is dropped (a tail drop, like a full netem queue).
 * JITTER_US > 0 holds each packet a further time drawn uniformly from [0, JITTER_US) (xorshift64,
 * seeded from the process id and the clock), never releasing it before the packet read ahead of
 * it: hosts' timing noise, which keeps flows that share a drop-tail queue from locking into
 * phase with one another (the simulator's send_jitter; pathpool.kernel.testbed.PathSpec).
 * Exits on SIGTERM/SIGINT, and when the process that started it dies (PR_SET_PDEATHSIG), so
 * a test-bed holder killed in any way leaves no forwarder behind; the TUN device disappears
 * with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define PKT_MAX 2048

struct slot {
	long long due_ns;
	int len;
	unsigned char data[PKT_MAX];
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct ifreq ifr;
	struct slot *ring;
	long long delay_ns;
	long long jitter_ns = 0, last_due = 0;
	unsigned long long rng;
	long qcap = 4096, head = 0, count = 0;
	int fd;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: %s DEV DELAY_US [QUEUE_PKTS [JITTER_US]]\n", argv[0]);
		return 2;
	}
	delay_ns = atoll(argv[2]) * 1000LL;
	if (argc >= 4)
		qcap = atol(argv[3]);
	if (argc == 5)
		jitter_ns = atoll(argv[4]) * 1000LL;
	if (delay_ns < 0 || qcap < 1 || jitter_ns < 0 || strlen(argv[1]) >= IFNAMSIZ) {
		fprintf(stderr, "pp_delayfwd: bad arguments\n");
		return 2;
	}
	ring = calloc((size_t)qcap, sizeof(*ring));
	if (!ring) {
		perror("pp_delayfwd: calloc");
		return 1;
	}
	/* Any nonzero state will do: the draws need not repeat between runs (the bed's do not). */
	rng = ((unsigned long long)getpid() << 32) ^ (unsigned long long)now_ns() ^ 0x9e3779b97f4a7c15ULL;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	/* The holder (pathpool's Testbed) may be killed without cleaning up: follow it. If it died
	 * before the prctl, the parent is already someone else: exit now. */
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (argc >= 3 && getenv("PP_PARENT_PID") && getppid() != (pid_t)atol(getenv("PP_PARENT_PID")))
		return 1;
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK);
	if (fd < 0) {
		perror("pp_delayfwd: /dev/net/tun");
		return 1;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	strncpy(ifr.ifr_name, argv[1], IFNAMSIZ - 1);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		perror("pp_delayfwd: TUNSETIFF");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);

	while (!stop) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct timespec to, *top = NULL;
		long long t = now_ns();

		/* Send everything that is due. */
		while (count && ring[head].due_ns <= t) {
			if (write(fd, ring[head].data, (size_t)ring[head].len) < 0 && errno != EAGAIN)
				perror("pp_delayfwd: write");
			head = (head + 1) % qcap;
			count--;
		}
		if (count) {
			long long wait = ring[head].due_ns - t;

			to.tv_sec = wait / 1000000000LL;
			to.tv_nsec = wait % 1000000000LL;
			top = &to;
		}
		if (ppoll(&p, 1, top, NULL) < 0) {
			if (errno == EINTR)
				continue;
			perror("pp_delayfwd: ppoll");
			break;
		}
		if (!(p.revents & POLLIN))
			continue;
		for (;;) {
			long tail = (head + count) % qcap;
			unsigned char drop[PKT_MAX];
			unsigned char *buf = count < qcap ? ring[tail].data : drop;
			ssize_t n = read(fd, buf, PKT_MAX);

			if (n <= 0)
				break;
			if (count < qcap) {
				long long due = now_ns() + delay_ns;

				if (jitter_ns) {
					rng ^= rng << 13;
					rng ^= rng >> 7;
					rng ^= rng << 17;
					due += (long long)(rng % (unsigned long long)jitter_ns);
					/* In order: never before the packet ahead of it. */
					if (due < last_due)
						due = last_due;
				}
				last_due = due;
				ring[tail].len = (int)n;
				ring[tail].due_ns = due;
				count++;
			}
		}
	}
	close(fd);
	free(ring);
	return 0;
}
