// Package tracefs reads and writes the kernel's tracing file system. It
// finds where it is mounted, mounting it if absent and we may. It reads
// tracepoint ids and formats (fields, offsets, sizes, __print_symbolic
// tables), and makes kprobe and uprobe events through kprobe_events and
// uprobe_events.
//
// Its events live in a group named after the process, bpfkit_<pid
// namespace>_<pid>_<start time>, so that Sweep can remove those of
// processes it can prove dead. Every symbol, path, name and offset is
// checked before a byte is written: a line of kprobe_events is a command,
// and a newline in a symbol would be a second. The writes, like the mount,
// go through sys, which journals them. The package knows files, not
// programs: prog attaches programs to the ids it returns.
package tracefs
