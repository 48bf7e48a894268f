// Package mapfd is bpfkit's handle on BPF maps: create one, or open one that
// is pinned or known by id; look up, update, delete and iterate its elements,
// read it in batches, freeze it, pin it, close it.
//
// The byte-slice API works for every map type. Per-CPU maps hold one value
// per possible CPU, each rounded up to 8 bytes: ValueSize reports the whole
// buffer a lookup needs. Typed wraps a map whose keys and values are
// fixed-size Go types and, like the byte API, does not allocate per call.
// Element operations on hash, array, per-CPU and LRU maps, which never sleep
// in the kernel, skip the Go runtime's system call bookkeeping
// (sys.MapLookupElemNoSleep and its siblings).
//
// A missing key is ErrKeyNotExist, which also matches unix.ENOENT. Every
// other error keeps the errno of the bpf(2) call beneath it. Create checks
// a map's sizes against what the kernel requires of its type before
// asking: a ring buffer's size a power of two and a multiple of the page
// size, an array's key 4 bytes. A refusal names the map's type and the
// rule broken, or says what the errno means for that type.
package mapfd
