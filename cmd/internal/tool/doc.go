// Package tool is what bpfkit's command line tools share, so that they
// behave alike:
//
//   - one argument parser (New, Parse, ParseOrExit): flags before, between
//     or after the positional arguments, "--" to end them, -h with
//     examples, -version, -json (not for a Plain tool), bcc's positional
//     interval and count (Periodic), other positional arguments
//     (TakesArgs); a bad argument is a usage error of one line that quotes
//     what was typed (Usagef, Report, Exit);
//   - flags of their own kinds: -p PID checked against the kernel's range
//     (PIDFlag, PIDOrAllFlag), -listen ADDR checked when parsed
//     (ListenFlag);
//   - Prometheus: metric families read at each scrape (Metrics: Counter,
//     Gauge, Histogram of log2 slots and BucketHistogram of bounds of its
//     own, in base units) in the text exposition format 0.0.4, served at
//     /metrics by a small HTTP/1.1 server that holds against hostile
//     clients (ListenMetrics, MetricsServer);
//   - the privilege check before anything is loaded (NeedRoot), a clean
//     exit on Ctrl-C or SIGTERM that still prints the interval in
//     progress (Context, Every, Read), the reading of perf rings with
//     their losses reported (Read, Lost, LostIn; Flush for rings that
//     wake the reader past a watermark, Batch to print what all the rings
//     held in a tool's own order), detaching many links at once
//     (Detach);
//   - an event's time from its bpf_ktime_get_ns() stamp (EventTime);
//   - the renderers: bcc's histograms (Log2Hist, Hist, HistSlots) and
//     heatmaps (Heatmap).
//
// Exit status: 0 on success, on Ctrl-C, for -h and -version; 1 when the
// kernel or the system refuses (privilege, a missing tracepoint, an
// address in use); 2 for bad flags or arguments.
package tool
