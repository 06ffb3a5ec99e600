// Package httpguard holds the checks airlock's HTTP listeners share: the
// MCP transport and the review page tell a loopback address from any other
// the same way, so that neither can be reached by a name that only looks
// local (DNS rebinding).
//
// It must never resolve a name: a check reads the text it is given.
package httpguard

import (
	"net"
	"strings"
)

// IsLoopback reports whether hostport (a host, host:port, or [IPv6]:port,
// as in a Host header or a listener's address) names a loopback address or
// localhost. Any other name is not loopback, whatever it resolves to.
func IsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
