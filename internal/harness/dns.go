package harness

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
)

// DNS constants used by the responder.
const (
	dnsTypeA   = 1
	dnsTypeSRV = 33
	dnsClassIN = 1
	dnsTTL     = 5 // seconds; short so that a restarted environment is seen quickly

	rcodeOK       = 0
	rcodeFormErr  = 1
	rcodeNXDomain = 3
	rcodeNotImp   = 4
)

// srvTarget is the data of one SRV record.
type srvTarget struct {
	target string
	port   uint16
}

// dnsServer is a tiny authoritative DNS responder over UDP that knows only
// the test domains: A records and _xmpp-server/_xmpp-client SRV records. Names
// it knows get NOERROR with no answer for other types; anything else gets
// NXDOMAIN, so that servers give up quickly on names outside the test.
type dnsServer struct {
	conn *net.UDPConn
	wg   sync.WaitGroup

	mu  sync.RWMutex
	a   map[string]net.IP    // lower-case name without trailing dot
	srv map[string]srvTarget // lower-case name without trailing dot
}

// startDNS listens on addr (ip:port, UDP) and serves until close.
func startDNS(addr string) (*dnsServer, error) {
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, fmt.Errorf("dns address: %w", err)
	}
	c, err := net.ListenUDP("udp4", ua)
	if err != nil {
		return nil, fmt.Errorf("dns listen: %w", err)
	}
	d := &dnsServer{conn: c, a: map[string]net.IP{}, srv: map[string]srvTarget{}}
	d.wg.Add(1)
	go d.serve()
	return d, nil
}

// setHost publishes an XMPP domain: its A record, and SRV records for
// server-to-server (s2sPort) and, if c2sPort is not 0, client-to-server.
//
// The SRV targets are the IP address written as a name ("127.0.0.11."), with
// an A record for that name too. ejabberd (p1_xmpp's xmpp_stream_out) looks
// the SRV up with inet_res, which honours ERL_INETRC, but resolves the target
// with net:getaddrinfo, that is glibc with /etc/hosts and /etc/resolv.conf,
// which cannot know the test names; an IP literal needs no lookup there.
// Prosody accepts IP-literal targets too (or looks up the A record).
func (d *dnsServer) setHost(domain string, ip string, s2sPort, c2sPort int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	domain = strings.ToLower(domain)
	addr := net.ParseIP(ip).To4()
	d.a[domain] = addr
	d.a[addr.String()] = addr
	d.srv["_xmpp-server._tcp."+domain] = srvTarget{target: addr.String(), port: uint16(s2sPort)}
	if c2sPort != 0 {
		d.srv["_xmpp-client._tcp."+domain] = srvTarget{target: addr.String(), port: uint16(c2sPort)}
	}
}

// close stops the responder and waits for its goroutine.
func (d *dnsServer) close() error {
	err := d.conn.Close()
	d.wg.Wait()
	return err
}

func (d *dnsServer) serve() {
	defer d.wg.Done()
	buf := make([]byte, 4096)
	for {
		n, from, err := d.conn.ReadFromUDP(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if resp := d.answer(buf[:n]); resp != nil {
			_, _ = d.conn.WriteToUDP(resp, from)
		}
	}
}

// answer builds the response to one query message, or nil to drop it.
func (d *dnsServer) answer(q []byte) []byte {
	if len(q) < 12 {
		return nil
	}
	id := binary.BigEndian.Uint16(q[0:2])
	flags := binary.BigEndian.Uint16(q[2:4])
	if flags&0x8000 != 0 { // a response, not a query
		return nil
	}
	opcode := (flags >> 11) & 0xF
	rd := flags & 0x0100
	qdcount := binary.BigEndian.Uint16(q[4:6])

	header := func(rcode uint16, qd, an uint16) []byte {
		h := make([]byte, 12)
		binary.BigEndian.PutUint16(h[0:2], id)
		// QR, opcode, AA, RD as asked, RA, rcode
		binary.BigEndian.PutUint16(h[2:4], 0x8000|opcode<<11|0x0400|rd|0x0080|rcode)
		binary.BigEndian.PutUint16(h[4:6], qd)
		binary.BigEndian.PutUint16(h[6:8], an)
		return h
	}
	if opcode != 0 {
		return header(rcodeNotImp, 0, 0)
	}
	if qdcount != 1 {
		return header(rcodeFormErr, 0, 0)
	}
	name, end, ok := readName(q, 12)
	if !ok || end+4 > len(q) {
		return header(rcodeFormErr, 0, 0)
	}
	qtype := binary.BigEndian.Uint16(q[end : end+2])
	qclass := binary.BigEndian.Uint16(q[end+2 : end+4])
	question := q[12 : end+4] // echoed verbatim, case included

	key := strings.ToLower(strings.TrimSuffix(name, "."))
	d.mu.RLock()
	ip, hasA := d.a[key]
	srv, hasSRV := d.srv[key]
	d.mu.RUnlock()
	if !hasA && !hasSRV {
		return append(header(rcodeNXDomain, 1, 0), question...)
	}

	var rdata []byte
	rtype := qtype
	switch {
	case qclass != dnsClassIN:
	case qtype == dnsTypeA && hasA:
		rdata = append([]byte(nil), ip...)
	case qtype == dnsTypeSRV && hasSRV:
		rdata = make([]byte, 6)
		binary.BigEndian.PutUint16(rdata[0:2], 0) // priority
		binary.BigEndian.PutUint16(rdata[2:4], 0) // weight
		binary.BigEndian.PutUint16(rdata[4:6], srv.port)
		rdata = appendName(rdata, srv.target)
	}
	if rdata == nil { // known name, no data of this type
		return append(header(rcodeOK, 1, 0), question...)
	}
	msg := append(header(rcodeOK, 1, 1), question...)
	rr := make([]byte, 12)
	binary.BigEndian.PutUint16(rr[0:2], 0xC00C) // pointer to the question name
	binary.BigEndian.PutUint16(rr[2:4], rtype)
	binary.BigEndian.PutUint16(rr[4:6], dnsClassIN)
	binary.BigEndian.PutUint32(rr[6:10], dnsTTL)
	binary.BigEndian.PutUint16(rr[10:12], uint16(len(rdata)))
	msg = append(msg, rr...)
	return append(msg, rdata...)
}

// readName reads an uncompressed domain name at off and returns it with a
// trailing dot and the offset after it. Questions are never compressed.
func readName(b []byte, off int) (string, int, bool) {
	var labels []string
	for {
		if off >= len(b) {
			return "", 0, false
		}
		l := int(b[off])
		off++
		if l == 0 {
			break
		}
		if l&0xC0 != 0 || off+l > len(b) || len(labels) > 127 {
			return "", 0, false
		}
		labels = append(labels, string(b[off:off+l]))
		off += l
	}
	return strings.Join(labels, ".") + ".", off, true
}

// appendName appends name in wire format (uncompressed).
func appendName(b []byte, name string) []byte {
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return append(b, 0)
}
