package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"agentgw/db"
)

// selfSigned returns a TLS certificate for 127.0.0.1 and its PEM.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test server"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestDirectTLS: with component.tls the stream runs inside TLS and the
// server certificate is verified against tls_ca_file.
func TestDirectTLS(t *testing.T) {
	cert, caPEM := selfSigned(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := newFakeServer(t)
	srv.ln = tls.NewListener(srv.ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	cfg := testConfig(t, srv.ln.Addr().String(), "")
	cfg.TLS, cfg.TLSCAFile = true, ca
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gw := newGateway(cfg, store)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go gw.Run(ctx)
	srv.accept()
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := gw.WaitConnected(wctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.conn.(*tls.Conn); !ok {
		t.Fatal("stream is not TLS")
	}
	el := srv.iq(alice, domain, "get", `<ping xmlns='urn:xmpp:ping'/>`)
	if typ, _ := el.AttrValue("type"); typ != "result" {
		t.Fatalf("ping over TLS: %s", marshal(t, el))
	}
}

// TestTLSUnverifiedRefused: without the CA, the handshake fails and the
// gateway never sends the secret handshake.
func TestTLSUnverifiedRefused(t *testing.T) {
	cert, _ := selfSigned(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	handshakes := make(chan error, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			handshakes <- c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	cfg := testConfig(t, ln.Addr().String(), "")
	cfg.TLS = true
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gw := newGateway(cfg, store)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go gw.Run(ctx)
	select {
	case err := <-handshakes:
		if err == nil {
			t.Fatal("TLS handshake with an untrusted certificate succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no connection attempt")
	}
	if up, _ := gw.Connected(); up {
		t.Fatal("connected through an unverified certificate")
	}
}
