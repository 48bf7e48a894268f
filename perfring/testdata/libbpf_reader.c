// libbpf_reader: the C reference reader for perfring's benchmark, so that
// bpfkit's readers are measured beside libbpf's in the same run. It is not
// part of bpfkit; the benchmark builds it with gcc when libbpf-dev exists.
//
//   libbpf_reader perf PINNED_MAP RING_BYTES WATERMARK
//   libbpf_reader ringbuf PINNED_MAP
//
// It reads until SIGUSR1, then consumes what is left and prints
// "received LOST lost CPU_NS cpu-ns" with getrusage(RUSAGE_SELF) over the
// reading. The perf reader uses perf_buffer__new_raw, libbpf's only way to
// set a watermark (WATERMARK 0: a wake-up per record), with a zero-copy
// callback; the ring buffer reader uses ring_buffer__new, default flags.
#include <errno.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static unsigned long long received, lost;

static void on_usr1(int sig) { (void)sig; stop = 1; }

struct lost_event { struct perf_event_header header; __u64 id, lost; };

static enum bpf_perf_event_ret on_perf(void *ctx, int cpu, struct perf_event_header *ev)
{
	(void)ctx; (void)cpu;
	if (ev->type == PERF_RECORD_SAMPLE)
		received++;
	else if (ev->type == PERF_RECORD_LOST)
		lost += ((struct lost_event *)ev)->lost;
	return LIBBPF_PERF_EVENT_CONT;
}

static int on_ring(void *ctx, void *data, size_t size)
{
	(void)ctx; (void)data; (void)size;
	received++;
	return 0;
}

static long long cpu_ns(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s perf|ringbuf PINNED_MAP [RING_BYTES WATERMARK]\n", argv[0]);
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	int fd = bpf_obj_get(argv[2]);
	if (fd < 0) {
		perror("bpf_obj_get");
		return 1;
	}
	struct perf_buffer *pb = NULL;
	struct ring_buffer *rb = NULL;
	if (strcmp(argv[1], "perf") == 0 && argc == 5) {
		long page = sysconf(_SC_PAGESIZE);
		size_t pages = atol(argv[3]) / page;
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_BPF_OUTPUT,
			.sample_type = PERF_SAMPLE_RAW,
			.sample_period = 1,
			.wakeup_events = 1,
		};
		if (atol(argv[4]) > 0) {
			attr.watermark = 1;
			attr.wakeup_watermark = atol(argv[4]);
		}
		pb = perf_buffer__new_raw(fd, pages, &attr, on_perf, NULL, NULL);
		if (!pb) {
			perror("perf_buffer__new_raw");
			return 1;
		}
	} else if (strcmp(argv[1], "ringbuf") == 0) {
		rb = ring_buffer__new(fd, on_ring, NULL, NULL);
		if (!rb) {
			perror("ring_buffer__new");
			return 1;
		}
	} else {
		fprintf(stderr, "bad arguments\n");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	long long start = cpu_ns();
	while (!stop) {
		int err = pb ? perf_buffer__poll(pb, 100) : ring_buffer__poll(rb, 100);
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "poll: %d\n", err);
			return 1;
		}
	}
	if (pb)
		perf_buffer__consume(pb);
	else
		ring_buffer__consume(rb);
	long long used = cpu_ns() - start;
	printf("%llu received %llu lost %lld cpu-ns\n", received, lost, used);
	return 0;
}
