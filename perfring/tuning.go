package perfring

// tuning turns each of the reader's runtime tunings on or off, for
// BenchmarkTuning to measure what each buys over a plain epoll loop.
var tuning = struct{ yield, hold, prefetch bool }{true, true, true}
