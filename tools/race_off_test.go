//go:build !race

package tools

// raceEnabled: the race detector's shadow memory inflates resident size.
const raceEnabled = false
