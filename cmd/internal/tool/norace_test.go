//go:build !race

package tool

// raceBuild says the tests run under the race detector.
const raceBuild = false
