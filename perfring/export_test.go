package perfring

// SetTuning turns the reader's runtime tunings on or off, for
// BenchmarkTuning; restore puts back what was set before.
func SetTuning(yield, hold, prefetch bool) (restore func()) {
	old := tuning
	tuning.yield, tuning.hold, tuning.prefetch = yield, hold, prefetch
	return func() { tuning = old }
}
