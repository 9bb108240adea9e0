// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * pp_loader: load pathpool's BPF congestion controls and keep them registered while it runs.
 *
 *   pp_loader [--set d_us=N] [--set mu_pps=X] [--set loss_window=N]
 *             [--set balia_quantised=0|1] [--set counting=bytes|acks]
 *             [--set ewtcp_a=X] [--set semicoupled_a=X] [--check] OBJ...
 *
 * ewtcp_a and semicoupled_a (EWTCP's and Semicoupled's weight a) must lie in [1e-4, 2] (the
 * domain of pp_cc_math.h, PP_A_MIN_Q32/PP_A_MAX_Q32); without ewtcp_a, EWTCP takes 1/n^2 with n
 * the subflows its connection couples, and Semicoupled a = 1 (pathpool-cc's defaults).
 *
 * Every struct_ops map is registered through a BPF link (BPF_F_LINK + BPF_LINK_CREATE), not by
 * a plain map update: the kernel then unregisters the algorithm when the link's last file
 * descriptor closes, so nothing stays registered if this process exits, crashes or is killed
 * with SIGKILL. Either every object registers or none does: on the first failure the links
 * made so far are closed (which unregisters them) and the loader exits with status 1.
 *
 * Protocol on stdout (read by python/pathpool/kernel/loader.py), one line each:
 *   registered NAME        one per algorithm
 *   prog NAME SEC ID       its programs' ids (for bpf_stats: `pathpool kernel bench`)
 *   error NAME STAGE: MSG  on failure (the libbpf/verifier log follows on stderr)
 *   READY                  all registered; the loader now waits for SIGTERM/SIGINT/SIGHUP
 * With --check it unregisters and exits 0 right after READY.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "pp_tunables.h"

/* The weights' range (pp_cc_math.h's PP_A_MIN_Q32 = ceil(1e-4 * 2^32), PP_A_MAX_Q32 = 2^33). */
#define PP_A_MIN 1e-4
#define PP_A_MAX 2.0

#define MAX_OBJS 16
/* Not in Debian 12's uapi headers (both came with Linux 6.4). */
#define PP_BPF_F_LINK (1U << 13)
#define PP_BPF_STRUCT_OPS_ATTACH 44

static char logbuf[1 << 20];
static size_t loglen;
static volatile sig_atomic_t stop;

static int collect(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	if (loglen >= sizeof(logbuf) - 1)
		return 0;
	n = vsnprintf(logbuf + loglen, sizeof(logbuf) - loglen, fmt, ap);
	if (n > 0)
		loglen += (size_t)n < sizeof(logbuf) - loglen ? (size_t)n : sizeof(logbuf) - loglen - 1;
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct loaded {
	struct bpf_object *obj;
	int link_fd;
	char name[64];
};

static struct loaded objs[MAX_OBJS];
static int nobjs;

static void rollback(void)
{
	for (int i = nobjs - 1; i >= 0; i--) {
		if (objs[i].link_fd >= 0)
			close(objs[i].link_fd);   /* unregisters */
		bpf_object__close(objs[i].obj);
	}
	nobjs = 0;
}

static void fail(const char *name, const char *stage, int err)
{
	printf("error %s %s: %s\n", name, stage, strerror(err < 0 ? -err : err));
	fflush(stdout);
	if (loglen)
		fwrite(logbuf, 1, loglen, stderr);
	rollback();
	exit(1);
}

static int load_one(const char *path, const struct pp_tunables *tun)
{
	struct loaded *l = &objs[nobjs];
	struct bpf_map *map, *ops = NULL;
	size_t sz = 0;
	int err;

	memset(l, 0, sizeof(*l));
	l->link_fd = -1;
	snprintf(l->name, sizeof(l->name), "%s", path);
	loglen = 0;
	l->obj = bpf_object__open_file(path, NULL);
	if (!l->obj) {
		fail(l->name, "open", errno);
		return -1;
	}
	nobjs++;
	bpf_object__for_each_map(map, l->obj) {
		if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS) {
			ops = map;
			snprintf(l->name, sizeof(l->name), "%s", bpf_map__name(map));
			bpf_map__set_map_flags(map, bpf_map__map_flags(map) | PP_BPF_F_LINK);
		} else if (strstr(bpf_map__name(map), ".data")) {
			if (bpf_map__initial_value(map, &sz) && sz >= sizeof(*tun)) {
				err = bpf_map__set_initial_value(map, tun, sizeof(*tun));
				if (err)
					fail(l->name, "tunables", err);
			}
		}
	}
	if (!ops)
		fail(l->name, "open", ENOENT);
	err = bpf_object__load(l->obj);
	if (err)
		fail(l->name, "verifier", err);
	/* Stores the program fds in the map value; with BPF_F_LINK this does not register. */
	if (!bpf_map__attach_struct_ops(ops))
		fail(l->name, "attach", errno);
	l->link_fd = bpf_link_create(bpf_map__fd(ops), 0, PP_BPF_STRUCT_OPS_ATTACH, NULL);
	if (l->link_fd < 0) {
		err = errno;
		if (err == EEXIST)
			fprintf(stderr, "%s is already registered (another pp_loader, or bpftool "
				"struct_ops register: `bpftool struct_ops unregister name %s`)\n",
				l->name, l->name);
		fail(l->name, "register", err);
	}
	printf("registered %s\n", l->name);
	{
		struct bpf_program *prog;

		bpf_object__for_each_program(prog, l->obj) {
			struct bpf_prog_info info;
			__u32 len = sizeof(info);

			memset(&info, 0, sizeof(info));
			if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
				printf("prog %s %s %u\n", l->name, bpf_program__name(prog), info.id);
		}
	}
	fflush(stdout);
	return 0;
}

static int parse_set(const char *kv, struct pp_tunables *tun)
{
	const char *eq = strchr(kv, '=');
	char *end;
	double v;

	if (!eq)
		return -1;
	/* pathpool-cc's Counting: per acknowledged segment (default) or v0.95's per ACK. */
	if (!strcmp(kv, "counting=bytes") || !strcmp(kv, "counting=acks")) {
		tun->counting_acks = !strcmp(kv, "counting=acks");
		return 0;
	}
	v = strtod(eq + 1, &end);
	if (*end || v < 0)
		return -1;
	if (!strncmp(kv, "d_us=", 5) && v > 0)
		tun->rsf_d_us = (unsigned long long)v;
	else if (!strncmp(kv, "mu_pps=", 7) && v > 0)
		tun->rsf_mu_q16 = (unsigned long long)(v * 65536.0);
	else if (!strncmp(kv, "loss_window=", 12) && v >= 1)
		/* RSF-LB's EWMA keeps (1 - 1/loss_window) per packet, q32 (pp_cc_math.h). */
		tun->rsf_lb_keep_q32 = (unsigned long long)((1.0 - 1.0 / v) * 4294967296.0 + 0.5);
	else if (!strncmp(kv, "ewtcp_a=", 8) && v >= PP_A_MIN && v <= PP_A_MAX)
		tun->ewtcp_a_q32 = (unsigned long long)(v * 4294967296.0 + 0.5);
	else if (!strncmp(kv, "semicoupled_a=", 14) && v >= PP_A_MIN && v <= PP_A_MAX)
		tun->semicoupled_a_q32 = (unsigned long long)(v * 4294967296.0 + 0.5);
	else if (!strncmp(kv, "balia_quantised=", 16) && (v == 0 || v == 1))
		tun->balia_quantised = (unsigned long long)v;
	else
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct pp_tunables tun = PP_TUNABLES_DEFAULT;
	int check = 0;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	libbpf_set_print(collect);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--check")) {
			check = 1;
		} else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
			if (parse_set(argv[++i], &tun)) {
				printf("error - args: bad --set %s (d_us=N>0, mu_pps=X>0, loss_window=N>=1, "
				       "balia_quantised=0|1, counting=bytes|acks, ewtcp_a=X and "
				       "semicoupled_a=X with 1e-4 <= X <= 2)\n", argv[i]);
				return 2;
			}
		} else if (argv[i][0] == '-') {
			printf("error - args: unknown option %s\n", argv[i]);
			return 2;
		} else {
			if (nobjs >= MAX_OBJS) {
				printf("error - args: at most %d objects\n", MAX_OBJS);
				rollback();
				return 2;
			}
			load_one(argv[i], &tun);
		}
	}
	if (!nobjs) {
		printf("error - args: no object given\n");
		return 2;
	}
	printf("READY\n");
	fflush(stdout);
	while (!check && !stop)
		pause();
	rollback();
	return 0;
}
