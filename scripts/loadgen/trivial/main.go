// Command trivial is the load generator's calibration target (issue 26): an
// XEP-0114 component that does no work. It answers every IQ get or set with
// one fixed payload (the endpoint's disco#info, captured by loadgen.js from
// the gateway, so the answers are the same size) and ignores everything
// else. It shares no code with agentgw: only the standard library, and a
// byte scanner instead of an XML decoder, so that what loadgen.js measures
// against it is the generator's own ceiling, not this process's.
//
//	go run ./scripts/loadgen/trivial -server 127.0.0.1:PORT -domain agents.example \
//		-secret-file secret -payload payload.xml
package main

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// readSize is how much one read asks for; the answers to everything one
// read holds leave in one write.
const readSize = 64 << 10

func main() {
	server := flag.String("server", "", "host:port of the server's component listener")
	domain := flag.String("domain", "", "the component's domain")
	secretFile := flag.String("secret-file", "", "the component secret, on its first line")
	payloadFile := flag.String("payload", "", "the children of every result (a file)")
	flag.Parse()
	if *server == "" || *domain == "" || *secretFile == "" || *payloadFile == "" {
		flag.Usage()
		os.Exit(2)
	}
	secret, err := os.ReadFile(*secretFile)
	if err != nil {
		fatal(err)
	}
	payload, err := os.ReadFile(*payloadFile)
	if err != nil {
		fatal(err)
	}
	line, _, _ := strings.Cut(string(secret), "\n")
	if err := run(*server, *domain, strings.TrimSuffix(line, "\r"), payload); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "trivial:", err)
	os.Exit(1)
}

// run connects, authenticates and answers until the stream ends.
func run(server, domain, secret string, payload []byte) error {
	conn, err := net.DialTimeout("tcp", server, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Fprintf(conn, `<?xml version='1.0'?><stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams' to='%s'>`, domain)
	s := &scanner{r: conn}
	authed := false
	var out bytes.Buffer
	for {
		n, err := s.fill()
		if n == 0 && err != nil {
			if authed && errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		for {
			ev, ok, err := s.next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			switch {
			case ev.kind == evHeader:
				id, _, _ := attr(ev.tag, "id")
				sum := sha1.Sum([]byte(string(id) + secret))
				fmt.Fprintf(conn, "<handshake>%s</handshake>", hex.EncodeToString(sum[:]))
			case ev.kind == evEnd:
				return nil
			case !authed:
				if name(ev.tag) != "handshake" {
					return fmt.Errorf("handshake answered with %.200s", ev.tag)
				}
				authed = true
				fmt.Fprintln(os.Stderr, "trivial: component", domain, "up")
			case name(ev.tag) == "iq":
				answer(&out, ev.tag, payload)
			}
		}
		if out.Len() > 0 {
			if _, err := conn.Write(out.Bytes()); err != nil {
				return err
			}
			out.Reset()
		}
	}
}

// answer writes the result of the IQ whose start tag is tag, if it is a get
// or a set: the same id, from and to swapped, the attribute values copied
// as they were written (escaped, with their quotes).
func answer(out *bytes.Buffer, tag, payload []byte) {
	typ, _, _ := attr(tag, "type")
	if string(typ) != "get" && string(typ) != "set" {
		return
	}
	out.WriteString("<iq type='result'")
	for _, a := range [][2]string{{"id", "id"}, {"to", "from"}, {"from", "to"}} {
		if v, q, ok := attr(tag, a[0]); ok {
			out.WriteString(" " + a[1] + "=")
			out.WriteByte(q)
			out.Write(v)
			out.WriteByte(q)
		}
	}
	out.WriteByte('>')
	out.Write(payload)
	out.WriteString("</iq>")
}

// name is a start tag's local name.
func name(tag []byte) string {
	end := bytes.IndexAny(tag[1:], " \t\r\n/>") + 1
	n := string(tag[1:end])
	return n[strings.LastIndexByte(n, ':')+1:]
}

// attr finds attribute key in a start tag: its raw value and its quote.
func attr(tag []byte, key string) (value []byte, quote byte, ok bool) {
	i := bytes.IndexAny(tag, " \t\r\n")
	for i >= 0 && i < len(tag) {
		for i < len(tag) && (tag[i] == ' ' || tag[i] == '\t' || tag[i] == '\r' || tag[i] == '\n') {
			i++
		}
		eq := bytes.IndexByte(tag[i:], '=')
		if eq < 0 {
			return nil, 0, false
		}
		k := bytes.TrimSpace(tag[i : i+eq])
		j := i + eq + 1
		for j < len(tag) && tag[j] != '\'' && tag[j] != '"' {
			j++
		}
		if j >= len(tag) {
			return nil, 0, false
		}
		q := tag[j]
		e := bytes.IndexByte(tag[j+1:], q)
		if e < 0 {
			return nil, 0, false
		}
		if string(k) == key {
			return tag[j+1 : j+1+e], q, true
		}
		i = j + 1 + e + 1
	}
	return nil, 0, false
}

// Event kinds.
const (
	evHeader  = iota // the stream's start tag
	evElement        // a top-level element, complete
	evEnd            // the stream's end tag
)

type event struct {
	kind int
	tag  []byte // the element's (or the header's) start tag
}

// scanner splits a stream into its header and top-level elements across
// reads: tags (quote-aware), the XML declaration, comments, CDATA, and text,
// which it skips.
type scanner struct {
	r     io.Reader
	buf   []byte
	pos   int // where scanning resumes
	depth int
	tag   []byte // the start tag of the top-level element in progress
}

// fill reads once, dropping what has been consumed.
func (s *scanner) fill() (int, error) {
	// Only what follows pos is needed: the start tag of an element in
	// progress is kept apart (s.tag).
	s.buf = append(s.buf[:0], s.buf[s.pos:]...)
	s.pos = 0
	if cap(s.buf)-len(s.buf) < readSize {
		s.buf = append(make([]byte, 0, len(s.buf)+readSize), s.buf...)
	}
	n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
	s.buf = s.buf[:len(s.buf)+n]
	return n, err
}

// next returns the next complete event, or ok false if more input is
// needed.
func (s *scanner) next() (ev event, ok bool, err error) {
	for {
		b := s.buf
		lt := bytes.IndexByte(b[s.pos:], '<')
		if lt < 0 {
			s.pos = len(b)
			return ev, false, nil
		}
		lt += s.pos
		if lt+1 >= len(b) {
			s.pos = lt
			return ev, false, nil
		}
		switch b[lt+1] {
		case '/':
			gt := bytes.IndexByte(b[lt:], '>')
			if gt < 0 {
				s.pos = lt
				return ev, false, nil
			}
			s.pos = lt + gt + 1
			s.depth--
			if s.depth == 1 {
				return event{kind: evElement, tag: s.tag}, true, nil
			}
			if s.depth <= 0 {
				return event{kind: evEnd}, true, nil
			}
		case '?':
			e := bytes.Index(b[lt:], []byte("?>"))
			if e < 0 {
				s.pos = lt
				return ev, false, nil
			}
			s.pos = lt + e + 2
		case '!':
			if len(b)-lt < 9 {
				s.pos = lt
				return ev, false, nil
			}
			var closer string
			switch {
			case bytes.HasPrefix(b[lt:], []byte("<!--")):
				closer = "-->"
			case bytes.HasPrefix(b[lt:], []byte("<![CDATA[")):
				closer = "]]>"
			default:
				return ev, false, errors.New("a DTD in the stream")
			}
			e := bytes.Index(b[lt:], []byte(closer))
			if e < 0 {
				s.pos = lt
				return ev, false, nil
			}
			s.pos = lt + e + len(closer)
		default:
			j, q := lt+1, byte(0)
			for ; j < len(b); j++ {
				c := b[j]
				if q != 0 {
					if c == q {
						q = 0
					}
				} else if c == '"' || c == '\'' {
					q = c
				} else if c == '>' {
					break
				}
			}
			if j >= len(b) {
				s.pos = lt
				return ev, false, nil
			}
			empty := b[j-1] == '/'
			tag := b[lt : j+1]
			s.pos = j + 1
			switch {
			case s.depth == 0:
				s.depth = 1
				return event{kind: evHeader, tag: clone(tag)}, true, nil
			case s.depth == 1 && empty:
				return event{kind: evElement, tag: clone(tag)}, true, nil
			case s.depth == 1:
				// The start tag is kept: the buffer moves on before the
				// element ends.
				s.tag = clone(tag)
				s.depth = 2
			case !empty:
				s.depth++
			}
		}
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
