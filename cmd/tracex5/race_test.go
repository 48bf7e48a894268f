//go:build race

package main

// raceBuild says the tests run under the race detector, whose sync.Pool
// drops some of what is put back: json.Encoder's state is then made anew.
const raceBuild = true
