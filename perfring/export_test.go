package perfring

// SetYield turns the reader's yielding to the scheduler (yield.go) on or
// off, for BenchmarkTuning; restore puts back what was set before.
func SetYield(on bool) (restore func()) {
	old := yieldOn
	yieldOn = on
	return func() { yieldOn = old }
}
