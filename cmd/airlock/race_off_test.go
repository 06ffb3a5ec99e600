//go:build !race

package main

// raceEnabled: the race detector's shadow memory inflates resident size.
const raceEnabled = false
