// Package tracefs reads and writes the kernel's tracing file system: where
// it is mounted (mounting it when it is absent and we may), tracepoint ids
// and formats (fields by name, with offsets, sizes and __print_symbolic
// tables), and kprobe and uprobe events created through kprobe_events and
// uprobe_events.
//
// Every event this package creates lives in a group named after the
// process, bpfkit_<pid namespace>_<pid>_<start time>, so that Sweep can
// find the events of processes that died without cleaning up, and remove
// those whose owner it can prove dead. Every symbol, path, name and offset
// is validated before a byte is written: one line written to kprobe_events
// is one command to the kernel, and a newline in a symbol would be a
// second. The writes, like the mount, go through sys, which journals them.
//
// The package knows files, not programs: prog attaches programs to the ids
// it returns, or opens the same probes through the perf PMUs after
// ProbeSpec.Check.
package tracefs
