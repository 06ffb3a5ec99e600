package httpguard

import "testing"

// TestIsLoopback_OnlyLoopbackAddressesAndLocalhost: loopback addresses of
// both families, with or without a port, and localhost in any case are
// loopback; a Host header that only looks local is not.
func TestIsLoopback_OnlyLoopbackAddressesAndLocalhost(t *testing.T) {
	for in, want := range map[string]bool{
		// IPv4
		"127.0.0.1":      true,
		"127.0.0.1:8765": true,
		"127.4.5.6:80":   true,
		"10.0.0.1":       false,
		"10.0.0.1:8765":  false,
		"0.0.0.0:8765":   false,
		// IPv6
		"::1":                  true,
		"[::1]":                true,
		"[::1]:8765":           true,
		"[::ffff:127.0.0.1]:1": true,
		"[fe80::1]:8765":       false,
		"[::]:8765":            false,
		"[2001:db8::1]:443":    false,
		// names
		"localhost":      true,
		"localhost:8765": true,
		"LocalHost:80":   true,
		"example.com":    false,
		"":               false,
		// Host headers that only look local
		"localhost.attacker.example":      false,
		"localhost.attacker.example:8765": false,
		"127.0.0.1.nip.io:8765":           false,
		"localhost.:8765":                 false,
		"127.1:8765":                      false,
		"0x7f.0.0.1":                      false,
		"[::1%lo0]:8765":                  false,
		"localhost@attacker.example":      false,
		"[::1]attacker":                   false,
	} {
		if got := IsLoopback(in); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", in, got, want)
		}
	}
}
