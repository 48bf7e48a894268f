//go:build race

package tool

// raceBuild says the tests run under the race detector, whose shadow
// memory makes the resident set no measure of the server's own.
const raceBuild = true
