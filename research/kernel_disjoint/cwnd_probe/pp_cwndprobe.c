// SPDX-License-Identifier: GPL-2.0
/*
 * Loader of the cwnd probe: pp_cwndprobe OBJ PORT_LO PORT_HI. Attaches the tracepoint
 * program, prints "ready", waits for SIGINT/SIGTERM (or stdin closing), then prints one JSON
 * line per socket counted and exits; the links close with the process.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sock_stats {
	unsigned long long sk;
	unsigned short sport, dport;
	unsigned int mptcp;
	unsigned int saddr, pad;
	unsigned long long calls, ss_calls, not_limited, not_limited_ss, not_limited_qempty,
		not_limited_qfull;
	unsigned long long acked, acked_not_limited, cwnd_sum, inflight_sum, qempty_calls;
	unsigned long long mss, srtt_sum, recoveries, losses, last_state;
	unsigned long long state_acks[5], state_acked[5];
	unsigned long long total_retrans, reordering, dsack_dups, reord_seen;
	unsigned long long last_ack_ns, close_acks, stretch_acks;
};

static volatile sig_atomic_t stop;
static void on_sig(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map, *rodata;
	unsigned short ports[2];
	int fd, n = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: %s OBJ PORT_LO PORT_HI\n", argv[0]);
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	ports[0] = (unsigned short)atoi(argv[2]);
	ports[1] = (unsigned short)atoi(argv[3]);
	rodata = bpf_object__find_map_by_name(obj, ".rodata");
	if (!rodata || bpf_map__set_initial_value(rodata, ports, sizeof(ports))) {
		fprintf(stderr, "rodata\n");
		return 1;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "load failed\n");
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__attach(prog)) {
			fprintf(stderr, "attach %s: %s\n", bpf_program__name(prog), strerror(errno));
			return 1;
		}
	}
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		struct pollfd p = { .fd = 0, .events = POLLIN };
		char buf[64];

		if (poll(&p, 1, 200) > 0 && read(0, buf, sizeof(buf)) <= 0)
			break;
	}
	map = bpf_object__find_map_by_name(obj, "stats");
	fd = bpf_map__fd(map);
	unsigned long long key, *prev = NULL;
	while (bpf_map_get_next_key(fd, prev, &key) == 0) {
		struct sock_stats s;

		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &s))
			continue;
		printf("{\"sk\":%llu,\"sport\":%u,\"dport\":%u,\"mptcp\":%u,\"saddr\":\"%u.%u.%u.%u\",\"mss\":%llu,"
		       "\"acks\":%llu,\"ss_acks\":%llu,\"not_limited\":%llu,"
		       "\"not_limited_ss\":%llu,\"not_limited_qempty\":%llu,"
		       "\"not_limited_qfull\":%llu,\"acked_bytes\":%llu,"
		       "\"acked_bytes_not_limited\":%llu,\"cwnd_sum\":%llu,\"inflight_sum\":%llu,"
		       "\"qempty_acks\":%llu,\"srtt_sum\":%llu,\"recoveries\":%llu,"
		       "\"losses\":%llu,\"state_acks\":[%llu,%llu,%llu,%llu,%llu],"
		       "\"state_acked\":[%llu,%llu,%llu,%llu,%llu],\"total_retrans\":%llu,"
		       "\"reordering\":%llu,\"dsack_dups\":%llu,\"reord_seen\":%llu,"
		       "\"close_acks\":%llu,\"stretch_acks\":%llu}\n",
		       s.sk, s.sport, s.dport, s.mptcp, s.saddr & 255, (s.saddr >> 8) & 255,
		       (s.saddr >> 16) & 255, s.saddr >> 24, s.mss, s.calls, s.ss_calls, s.not_limited,
		       s.not_limited_ss, s.not_limited_qempty, s.not_limited_qfull, s.acked,
		       s.acked_not_limited, s.cwnd_sum, s.inflight_sum, s.qempty_calls,
		       s.srtt_sum, s.recoveries, s.losses, s.state_acks[0], s.state_acks[1],
		       s.state_acks[2], s.state_acks[3], s.state_acks[4], s.state_acked[0],
		       s.state_acked[1], s.state_acked[2], s.state_acked[3], s.state_acked[4],
		       s.total_retrans, s.reordering, s.dsack_dups, s.reord_seen, s.close_acks,
		       s.stretch_acks);
		n++;
	}
	fprintf(stderr, "%d sockets\n", n);
	bpf_object__close(obj);
	return 0;
}
