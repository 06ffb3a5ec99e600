//go:build !race

package mcpserver

// raceEnabled: the race detector's shadow memory inflates resident size.
const raceEnabled = false
