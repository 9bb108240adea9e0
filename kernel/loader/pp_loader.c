// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * pp_loader: load pathpool's BPF congestion controls and keep them registered while it runs.
 *
 *   pp_loader [--set d_us=N] [--set mu_pps=X] [--set loss_window=N]
 *             [--set balia_quantised=0|1] [--set counting=bytes|acks]
 *             [--set ewtcp_a=X] [--set semicoupled_a=X] [--check] [--die-with-parent] OBJ...
 *   pp_loader --probe OBJ...
 *   pp_loader --read MAP_ID OFFSET   print the u64 at OFFSET of array map MAP_ID's entry 0
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
 *   counter NAME VAR MAP_ID OFFSET  where a global counter of the object lives (its .bss map;
 *                          read with --read, as `pathpool kernel status` does)
 *   error NAME STAGE: MSG  on failure (the libbpf/verifier log follows on stderr)
 *   READY                  all registered; the loader now waits for SIGTERM/SIGINT/SIGHUP
 * With --check it unregisters and exits 0 right after READY. With --die-with-parent it gets
 * SIGTERM when the process that started it dies, however it dies (`pathpool kernel load
 * --foreground`: the registrations last exactly as long as that process).
 *
 * --probe registers nothing: it states what the objects need from the kernel and whether this
 * kernel has it (python/pathpool/kernel/loader.py `check()` turns the lines into reasons):
 *   kernel btf ok|missing            /sys/kernel/btf/vmlinux (CO-RE and struct_ops need it)
 *   kernel struct_ops ok|missing     struct_ops for tcp_congestion_ops (BTF of the kernel side)
 *   kernel struct_ops_link ok|missing  BPF_STRUCT_OPS links (registration that ends with the fd)
 *   helper OBJ NAME ok|missing       each BPF helper a program calls (by the kernel's bpf_func_id)
 *   kfunc OBJ NAME ok|missing        each kernel function an object declares __ksym
 *   verify OBJ ok                    (root only) loaded through the verifier, then closed again
 *   error OBJ STAGE: MSG             as when loading; the libbpf/verifier log on stderr
 *   DONE
 */
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
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

/* The object's global u64 counters (pp_ops.bpf.h: pp_ssthresh_repairs) and where they are. */
static void print_counters(const struct loaded *l)
{
	const struct btf *btf = bpf_object__btf(l->obj);
	struct bpf_map *map;

	if (!btf)
		return;
	bpf_object__for_each_map(map, l->obj) {
		const char *mn = bpf_map__name(map);
		const struct btf_var_secinfo *v;
		const struct btf_type *sec;
		struct bpf_map_info info;
		__u32 len = sizeof(info);
		int id;

		if (!strstr(mn, ".bss"))
			continue;
		id = btf__find_by_name_kind(btf, ".bss", BTF_KIND_DATASEC);
		if (id < 0)
			return;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_map__fd(map), &info, &len))
			return;
		sec = btf__type_by_id(btf, id);
		v = btf_var_secinfos(sec);
		for (int k = 0; k < btf_vlen(sec); k++, v++) {
			const char *vn = btf__name_by_offset(btf, btf__type_by_id(btf, v->type)->name_off);

			if (v->size == 8 && strstr(vn, "repairs"))
				printf("counter %s %s %u %u\n", l->name, vn, info.id, v->offset);
		}
	}
}

static int read_counter(const char *id_s, const char *off_s)
{
	unsigned long id = strtoul(id_s, NULL, 10), off = strtoul(off_s, NULL, 10);
	int fd = bpf_map_get_fd_by_id(id);
	struct bpf_map_info info;
	__u32 len = sizeof(info), key = 0;
	unsigned long long v;
	char *buf;

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || off + 8 > info.value_size) {
		printf("error - read: map %lu: %s\n", id, strerror(fd < 0 ? errno : EINVAL));
		return 1;
	}
	buf = calloc(1, info.value_size);
	if (!buf || bpf_map_lookup_elem(fd, &key, buf)) {
		printf("error - read: map %lu: %s\n", id, strerror(errno));
		return 1;
	}
	memcpy(&v, buf + off, sizeof(v));
	printf("%llu\n", v);
	free(buf);
	close(fd);
	return 0;
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
	print_counters(l);
	fflush(stdout);
	return 0;
}

/* The kernel's name of helper `id` (its enum bpf_func_id), or NULL when it has no such helper. */
static const char *helper_name(const struct btf *vm, int id)
{
	int t = btf__find_by_name_kind(vm, "bpf_func_id", BTF_KIND_ENUM);
	const struct btf_type *ty;
	const struct btf_enum *e;

	if (t < 0)
		return NULL;
	ty = btf__type_by_id(vm, t);
	e = btf_enum(ty);
	for (int i = 0; i < btf_vlen(ty); i++, e++)
		if (e->val == id)
			return btf__name_by_offset(vm, e->name_off);
	return NULL;
}

static int enum_has(const struct btf *vm, const char *type, const char *name)
{
	int t = btf__find_by_name_kind(vm, type, BTF_KIND_ENUM);
	const struct btf_type *ty;
	const struct btf_enum *e;

	if (t < 0)
		return 0;
	ty = btf__type_by_id(vm, t);
	e = btf_enum(ty);
	for (int i = 0; i < btf_vlen(ty); i++, e++)
		if (!strcmp(btf__name_by_offset(vm, e->name_off), name))
			return 1;
	return 0;
}

static int probe(int argc, char **argv, int first)
{
	struct btf *vm = btf__load_vmlinux_btf();
	int bad = 0;

	if (!vm) {
		printf("kernel btf missing\nDONE\n");
		return 1;
	}
	printf("kernel btf ok\n");
	/* libbpf finds the kernel side of a struct_ops type as bpf_struct_ops_<name>. */
	if (btf__find_by_name_kind(vm, "bpf_struct_ops_tcp_congestion_ops", BTF_KIND_STRUCT) < 0 ||
	    btf__find_by_name_kind(vm, "tcp_congestion_ops", BTF_KIND_STRUCT) < 0) {
		printf("kernel struct_ops missing\n");
		bad = 1;
	} else {
		printf("kernel struct_ops ok\n");
	}
	if (!enum_has(vm, "bpf_attach_type", "BPF_STRUCT_OPS")) {
		printf("kernel struct_ops_link missing\n");
		bad = 1;
	} else {
		printf("kernel struct_ops_link ok\n");
	}
	for (int i = first; i < argc; i++) {
		const char *path = argv[i];
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		struct bpf_object *obj = bpf_object__open_file(path, NULL);
		struct bpf_program *prog;
		struct bpf_map *map;
		struct btf *ob;
		int seen[256] = { 0 };

		if (!obj) {
			printf("error %s open: %s\n", base, strerror(errno));
			bad = 1;
			continue;
		}
		bpf_object__for_each_program(prog, obj) {
			const struct bpf_insn *in = bpf_program__insns(prog);
			size_t n = bpf_program__insn_cnt(prog);

			for (size_t k = 0; k < n; k++) {
				/* src_reg 0: a helper; bpf-to-bpf and kfunc calls carry other values. */
				if (in[k].code != (BPF_JMP | BPF_CALL) || in[k].src_reg != 0 ||
				    in[k].imm <= 0 || in[k].imm >= 256 || seen[in[k].imm]++)
					continue;
				const char *hn = helper_name(vm, in[k].imm);

				if (hn)
					printf("helper %s %s ok\n", base, hn);
				else
					printf("helper %s #%d missing\n", base, in[k].imm);
				bad |= !hn;
			}
		}
		/* The object's BTF as compiled: opening it rewrites the kfuncs' entries. */
		ob = btf__parse_elf(path, NULL);
		for (unsigned int t = 1; ob && t < btf__type_cnt(ob); t++) {
			const struct btf_type *ty = btf__type_by_id(ob, t);
			const struct btf_var_secinfo *v;

			/* The kfuncs: the FUNCs of the .ksyms section. */
			if (!btf_is_datasec(ty) || strcmp(btf__name_by_offset(ob, ty->name_off), ".ksyms"))
				continue;
			v = btf_var_secinfos(ty);
			for (int k = 0; k < btf_vlen(ty); k++, v++) {
				const struct btf_type *f = btf__type_by_id(ob, v->type);
				const char *fn = btf__name_by_offset(ob, f->name_off);

				if (!btf_is_func(f))
					continue;
				if (btf__find_by_name_kind(vm, fn, BTF_KIND_FUNC) < 0) {
					printf("kfunc %s %s missing\n", base, fn);
					bad = 1;
				} else {
					printf("kfunc %s %s ok\n", base, fn);
				}
			}
		}
		btf__free(ob);
		fflush(stdout);
		if (geteuid() == 0 && !bad) {
			/* Through the verifier and CO-RE relocation only: with BPF_F_LINK and no
			 * link, nothing is registered, and closing frees it all. */
			bpf_object__for_each_map(map, obj)
				if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS)
					bpf_map__set_map_flags(map, bpf_map__map_flags(map) | PP_BPF_F_LINK);
			loglen = 0;
			if (bpf_object__load(obj)) {
				printf("error %s verifier: %s\n", base, strerror(errno));
				fflush(stdout);
				fwrite(logbuf, 1, loglen, stderr);
				bad = 1;
			} else {
				printf("verify %s ok\n", base);
			}
		}
		bpf_object__close(obj);
	}
	btf__free(vm);
	printf("DONE\n");
	return bad;
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

	if (argc > 1 && !strcmp(argv[1], "--probe"))
		return probe(argc, argv, 2);
	if (argc == 4 && !strcmp(argv[1], "--read"))
		return read_counter(argv[2], argv[3]);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--check")) {
			check = 1;
		} else if (!strcmp(argv[i], "--die-with-parent")) {
			pid_t parent = getppid();

			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (getppid() != parent)   /* it died before the line above */
				return 1;
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
