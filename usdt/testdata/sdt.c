/*
 * sdt: a program with USDT probes (sys/sdt.h, systemtap-sdt-dev) whose
 * arguments take every form the compiler gives them: registers, memory at
 * a register plus an offset, constants, signed and unsigned, 1 to 8 bytes,
 * and a string. bpfkit's usdt tests build it and trace it.
 *
 * It reads commands from stdin, one a line, and answers on stdout:
 *   fire N   fires bpfkit:args N times, and bpfkit:str N times when its
 *            semaphore says a tracer is attached, from two call sites:
 *            ("call i", i) for even i, ("call i", 99) for odd i;
 *            answers "fired N"
 *   sem      answers "sem A S", the two semaphores' values
 *   global N fires bpfkit:global at each of its two sites, whose
 *            arguments are global variables (x86:
 *            "-4@bpfkit_global(%rip) -8@8+counter(%rip)"), N and -N;
 *            answers "global N"
 * It prints "ready" first and exits at the end of its input.
 *
 * Built with -DSDT_FREESTANDING (no libc: -nostdlib -ffreestanding) it is
 * only the probes, for parsing the notes of binaries for other machines
 * (gcc -m32, aarch64-linux-gnu-gcc) without their libc.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

unsigned short bpfkit_args_semaphore __attribute__((section(".probes")));
unsigned short bpfkit_str_semaphore __attribute__((section(".probes")));

struct rec {
	long x;                 /* arg 4: -7*i, set by the caller */
	int pad;
	short y;                /* arg 5: -300 */
	signed char z;          /* arg 6: -5 */
	unsigned long long big; /* arg 7: 0xfedcba9876543210 */
};

/* str_probe is inlined twice: bpfkit:str has two call sites. */
__attribute__((always_inline)) static inline void str_probe(const char *s, unsigned n)
{
	STAP_PROBE2(bpfkit, str, s, n);
}

/* fire fires the probes once with i: the arguments are, in order,
 * -i, 3*i, -42, 200, -7*i, -300, -5, 0xfedcba9876543210, 1000+i,
 * (short)-i, (signed char)i and the string s. */
__attribute__((noinline)) void fire(struct rec *r, long i, const char *s)
{
	volatile long onstack = 1000 + i;
	STAP_PROBE12(bpfkit, args, (int)-i, (unsigned long)i * 3, -42, (unsigned char)200,
		     r->x, r->y, r->z, r->big, onstack, (short)-i, (signed char)i, s);
	if (!*(volatile unsigned short *)&bpfkit_str_semaphore)
		return;
	if (i % 2 == 0)
		str_probe(s, i);
	else
		str_probe(s, 99);
}

#ifdef SDT_FREESTANDING
void _start(void)
{
	struct rec r = {0};
	char s[2] = "x"; /* on the stack: BPF reads no page not yet faulted in */
	fire(&r, 1, s);
	for (;;)
		;
}
#else
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned short bpfkit_global_semaphore __attribute__((section(".probes")));
int bpfkit_global;
static long counter[2];

/* Apart from where they are set, so that the probe reads the variables;
 * twice, so that bpfkit:global has two sites, whose arguments are at
 * different offsets from each. */
__attribute__((noinline)) void global_probe(void)
{
	STAP_PROBE2(bpfkit, global, bpfkit_global, counter[1]);
}

__attribute__((noinline)) void global_probe2(void)
{
	STAP_PROBE2(bpfkit, global, bpfkit_global, counter[1]);
}

int main(void)
{
	struct rec r = {0, 0, -300, -5, 0xfedcba9876543210ull};
	char line[64], s[32];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "fire ", 5) == 0) {
			long n = atol(line + 5);
			for (long i = 0; i < n; i++) {
				snprintf(s, sizeof s, "call %ld", i);
				r.x = -7 * i;
				fire(&r, i, s);
			}
			printf("fired %ld\n", n);
		} else if (strncmp(line, "global ", 7) == 0) {
			bpfkit_global = atoi(line + 7);
			counter[1] = -bpfkit_global;
			global_probe();
			global_probe2();
			printf("global %d\n", bpfkit_global);
		} else if (strncmp(line, "sem", 3) == 0) {
			printf("sem %u %u\n", *(volatile unsigned short *)&bpfkit_args_semaphore,
			       *(volatile unsigned short *)&bpfkit_str_semaphore);
		}
	}
	return 0;
}
#endif
