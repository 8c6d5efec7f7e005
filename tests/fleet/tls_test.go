package fleet_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// pki is a CA of a test's own and what it signed, as PEM files in dir.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caKey, p.serial = key, 1
	p.write(t, "ca.crt", "CERTIFICATE", der)
	return p
}

func (p *pki) write(t *testing.T, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue signs a certificate for name (a server's IP, or a client's) and
// returns the paths of it and its key.
func (p *pki) issue(t *testing.T, name string, usage x509.ExtKeyUsage) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	if ip := net.ParseIP(name); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &k.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, name+".crt", "CERTIFICATE", der), p.write(t, name+".key", "EC PRIVATE KEY", kd)
}

// startTLSRedis starts a redis-server on loopback that speaks TLS only
// and asks every client for a certificate of p's (tls-auth-clients yes),
// and returns its address; it is killed when t ends.
func startTLSRedis(t *testing.T, p *pki) string {
	t.Helper()
	cert, key := p.issue(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	port := freePort(t)
	runRedisServer(t, "--port", "0", "--tls-port", port, "--bind", "127.0.0.1",
		"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", filepath.Join(p.dir, "ca.crt"),
		"--tls-auth-clients", "yes")
	addr := net.JoinHostPort("127.0.0.1", port)
	testenv.WaitFor(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr
}

// TestFleetTLS: a box reaches a Redis that asks for a client certificate
// (tls-auth-clients yes) with the one of tls.cert-file and tls.key-file,
// and verifies the server with tls.ca-file by the address's own host. A
// CA that did not sign the server keeps the box off the fleet, and show
// fleet says why; so does one without a client certificate.
func TestFleetTLS(t *testing.T) {
	testenv.RequireBPF(t)
	p := newPKI(t, "xdpcac test CA")
	addr := startTLSRedis(t, p)
	cert, key := p.issue(t, "box0", x509.ExtKeyUsageClientAuth)
	other := newPKI(t, "another CA")
	for _, c := range []struct {
		name, ca, cert, key string
		ok                  bool
		why                 string
	}{
		{"the CA that signed it", filepath.Join(p.dir, "ca.crt"), cert, key, true, ""},
		{"another CA", filepath.Join(other.dir, "ca.crt"), cert, key, false, "certificate signed by unknown authority"},
		{"no client certificate", filepath.Join(p.dir, "ca.crt"), "", "", false, ""},
	} {
		boxes := startBoxesWith(t, 1, func(iface string, i int) string {
			return tlsFleetConfig(iface, addr, i, c.ca, c.cert, c.key)
		})
		var f api.Fleet
		ok := testenv.Poll(3*time.Second, 50*time.Millisecond, func() bool {
			var err error
			f, err = api.Dial(boxes[0].tb.State).Fleet()
			return err == nil && f.State == "fleet" && len(f.MembersSeen) == 1
		})
		t.Logf("%s: state %s, members seen %d, last error %q", c.name, f.State, len(f.MembersSeen), f.LastError)
		if ok != c.ok {
			t.Errorf("%s: on the fleet %v, want %v: %+v", c.name, ok, c.ok, f)
		}
		if !c.ok && (f.LastError == "" || !strings.Contains(f.LastError, c.why)) {
			t.Errorf("%s: show fleet's last error %q, want one that says %q", c.name, f.LastError, c.why)
		}
		boxes[0].d.Stop()
	}
}

// tlsFleetConfig is fleetConfig on the TLS Redis at addr, with a client
// certificate unless cert is "".
func tlsFleetConfig(iface, addr string, i int, ca, cert, key string) string {
	tls := "{ca-file: " + ca + "}"
	if cert != "" {
		tls = fmt.Sprintf("{ca-file: %s, cert-file: %s, key-file: %s}", ca, cert, key)
	}
	return fleetConfigOn(iface, "tls", fmt.Sprintf("{addresses: [%s], tls: %s}", addr, tls), i, "closed", "")
}
