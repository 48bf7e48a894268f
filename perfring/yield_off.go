//go:build bpfkit_noyield

package perfring

// yielder does nothing in a build with the tag bpfkit_noyield, which makes
// the reader a plain epoll loop: see yield.go.
type yielder struct{}

// ifDue does nothing.
func (*yielder) ifDue() {}

// yieldOn stays false: there is nothing to turn on.
var yieldOn = false
