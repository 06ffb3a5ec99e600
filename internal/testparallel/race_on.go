//go:build race

package testparallel

const raceEnabled = true
