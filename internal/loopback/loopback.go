// Package loopback tells loopback hosts, for the rules that allow plain
// TCP or HTTP only there (config's checks, `agentgw init`, `agentgw mcp`).
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host is localhost or a loopback address.
func Host(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
