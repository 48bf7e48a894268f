// Package tracefs reads and writes the kernel's tracing file system: where
// it is mounted (mounting it when it is absent and we may), tracepoint ids
// and formats (fields by name, with offsets, sizes and __print_symbolic
// tables), and kprobe and uprobe events created through kprobe_events and
// uprobe_events.
//
// Every event this package creates lives in a group named after the process,
// bpfkit_<pid>_<start time>, so that Sweep can find and remove the events of
// processes that died without cleaning up. Every symbol, path and name is
// validated before a byte is written: one line written to kprobe_events is
// one command to the kernel, and a newline in a symbol would be a second.
//
// The package knows files, not programs: prog attaches programs to the ids
// it returns.
package tracefs
