/* bpf_loop.c: keeps a BPF program running in the kernel for DURATION seconds: a socket
 * filter named "profile_hot" that counts down a bounded loop, run over and over through
 * BPF_PROG_TEST_RUN. Its kernel stacks hold the JIT'd program, which kallsyms names
 * bpf_prog_TAG_profile_hot [bpf]. Needs root. */
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>

#include "workload.h"

int main(int argc, char **argv)
{
	double end = end_of_run(argc, argv);
	/* r0 = 0; r1 = 20000; loop: r0 += 1; r1 -= 1; if r1 != 0 goto loop; exit */
	struct bpf_insn program[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 20000},
		{.code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_0, .imm = 1},
		{.code = BPF_ALU64 | BPF_SUB | BPF_K, .dst_reg = BPF_REG_1, .imm = 1},
		{.code = BPF_JMP | BPF_JNE | BPF_K, .dst_reg = BPF_REG_1, .off = -3, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "profile_hot", "GPL", program,
			       sizeof(program) / sizeof(program[0]), NULL);
	if (fd < 0) {
		fprintf(stderr, "bpf_loop: cannot load the program: %s\n", strerror(-fd));
		return 1;
	}
	char packet[64] = {0};
	while (now() < end) {
		LIBBPF_OPTS(bpf_test_run_opts, run, .data_in = packet, .data_size_in = sizeof(packet), .repeat = 100);
		if (bpf_prog_test_run_opts(fd, &run) != 0) {
			fprintf(stderr, "bpf_loop: cannot run the program\n");
			return 1;
		}
	}
	return 0;
}
