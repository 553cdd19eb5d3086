//go:build race

package mcp

// raceEnabled: built with -race, where each test costs several times
// the CPU it does otherwise.
const raceEnabled = true
