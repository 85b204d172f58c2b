package harness

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Ports are drawn from [portMin, portMax): below Linux's default ephemeral
// range (32768-60999), so outgoing connections never take them, and away from
// the servers' default ports.
const (
	portMin = 20000
	portMax = 32000
)

var (
	handedOutMu sync.Mutex
	handedOut   = map[string]bool{} // "ip:port/proto" given out by this process
)

// pickPort returns a random port on ip that is currently free for TCP (or
// UDP if udp is set). A listener on 0.0.0.0:P anywhere on the machine makes
// bind(ip:P) fail, so this check also catches those. Ports already handed out
// by this process are never returned twice.
func pickPort(ip string, udp bool) (int, error) {
	proto := "tcp"
	if udp {
		proto = "udp"
	}
	for range 200 {
		port := portMin + rand.IntN(portMax-portMin)
		addr := net.JoinHostPort(ip, strconv.Itoa(port))
		key := addr + "/" + proto
		handedOutMu.Lock()
		used := handedOut[key]
		handedOutMu.Unlock()
		if used || !portFree(proto, addr) {
			continue
		}
		handedOutMu.Lock()
		handedOut[key] = true
		handedOutMu.Unlock()
		return port, nil
	}
	return 0, fmt.Errorf("no free %s port on %s", proto, ip)
}

// portFree reports whether addr can be bound now with proto ("tcp" or "udp").
func portFree(proto, addr string) bool {
	if proto == "udp" {
		c, err := net.ListenPacket("udp4", addr)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// checkIP fails early with a clear message when ip cannot be bound at all
// (some systems only route 127.0.0.1).
func checkIP(ip string) error {
	l, err := net.Listen("tcp4", net.JoinHostPort(ip, "0"))
	if err != nil {
		return fmt.Errorf("cannot bind loopback address %s: %w", ip, err)
	}
	return l.Close()
}

// errNoProc means /proc cannot tell who listens on a port.
var errNoProc = errors.New("no /proc/net/tcp")

// listenerOwned reports whether a TCP listener on addr (an IPv4 host:port)
// belongs to a process in process group pgid. This tells "our server is up"
// apart from "a leftover server from an earlier run holds the port".
func listenerOwned(addr string, pgid int) (bool, error) {
	inodes, err := listenInodes(addr)
	if err != nil {
		return false, err
	}
	if len(inodes) == 0 {
		return false, nil
	}
	for _, pid := range groupMembers(pgid) {
		fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
			if err != nil {
				continue
			}
			if rest, ok := strings.CutPrefix(link, "socket:["); ok {
				if inodes[strings.TrimSuffix(rest, "]")] {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// listenInodes returns the socket inodes of TCP listeners on addr, read from
// /proc/net/tcp.
func listenInodes(addr string) (map[string]bool, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(host).To4()
	port, err := strconv.Atoi(portStr)
	if ip == nil || err != nil {
		return nil, fmt.Errorf("not an IPv4 address: %s", addr)
	}
	// The kernel prints the address as a native-endian 32-bit number.
	want := fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip), port)
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return nil, errNoProc
	}
	defer f.Close()
	inodes := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		// sl local rem st tx:rx tr:when retr uid timeout inode
		if len(fl) < 10 || fl[1] != want || fl[3] != "0A" { // 0A = LISTEN
			continue
		}
		inodes[fl[9]] = true
	}
	return inodes, sc.Err()
}

// waitListening waits until p listens on every addr, p exits, or ctx ends.
func waitListening(ctx context.Context, p *process, addrs ...string) error {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		pending := ""
		for _, a := range addrs {
			ok, err := listenerOwned(a, p.pid())
			if errors.Is(err, errNoProc) { // fall back to a plain connect
				var c net.Conn
				c, err = net.DialTimeout("tcp", a, 200*time.Millisecond)
				if err == nil {
					c.Close()
					ok = true
				}
			}
			if !ok {
				pending = a
				break
			}
		}
		if pending == "" {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before listening on %s: %v", p.name, pending, p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s not listening on %s: %w", p.name, pending, ctx.Err())
		case <-tick.C:
		}
	}
}

// How long a server may take to listen after it starts, and a command
// (prosodyctl, ejabberd's API) to answer. Generous: they bound a server
// that never comes up, and a loaded machine (two suites at once) takes
// tens of seconds to start ejabberd; waiting costs nothing when it is
// quick.
const (
	startWait   = 3 * time.Minute
	commandWait = time.Minute
)
