package fleet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClusterNode is a Redis Cluster node of one slot range, itself, that
// takes every script and drops the connection before answering: a node
// that ran the script and lost the reply. scripts counts what reached it.
type fakeClusterNode struct {
	l       net.Listener
	scripts atomic.Int64
}

func newFakeClusterNode(t *testing.T) *fakeClusterNode {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeClusterNode{l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go n.serve(c)
		}
	}()
	return n
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("want an array, got %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		h, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(h[1:]))
		if err != nil {
			return nil, err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

// serveRESP answers the commands of c, a RESP2 server's way, with what
// answer writes for each, until answer says to drop the connection or c
// closes. HELLO is refused, as a RESP2 server does; a command answer
// does not know is answered +OK.
func serveRESP(c net.Conn, answer func(cmd string, w io.Writer) (known, drop bool)) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		cmd := strings.ToUpper(args[0])
		if cmd == "HELLO" {
			io.WriteString(c, "-ERR unknown command 'HELLO'\r\n")
			continue
		}
		known, drop := answer(cmd, c)
		if drop {
			return
		}
		if !known {
			io.WriteString(c, "+OK\r\n")
		}
	}
}

func (n *fakeClusterNode) serve(c net.Conn) {
	host, port, _ := net.SplitHostPort(n.l.Addr().String())
	serveRESP(c, func(cmd string, w io.Writer) (bool, bool) {
		switch cmd {
		case "CLUSTER":
			fmt.Fprintf(w, "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$%d\r\n%s\r\n:%s\r\n$4\r\nnode\r\n", len(host), host, port)
		case "EVALSHA", "EVAL":
			n.scripts.Add(1)
			return true, true // ran, and the reply is lost
		case "PING":
			io.WriteString(w, "+PONG\r\n")
		default:
			return false, false
		}
		return true, false
	})
}

// TestClusterScriptSentOnce: a Cluster node that drops the reply to the
// script receives it once. go-redis's ClusterClient retried it on the
// broken connection up to MaxRedirects (3) times whatever MaxRetries said:
// a script that ran gives back its tokens each time, and the fleet would
// admit more than its bound.
func TestClusterScriptSentOnce(t *testing.T) {
	node, other := newFakeClusterNode(t), newFakeClusterNode(t)
	c, err := New(Options{Fleet: "east", Addresses: []string{node.l.Addr().String(), other.l.Addr().String()}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.Renew(ctx, "a", Limit{Name: "acme", CPS: 10, Burst: 10}, 1, 3)
	if err == nil {
		t.Fatal("a node that dropped the reply granted")
	}
	if got := node.scripts.Load() + other.scripts.Load(); got != 1 {
		t.Errorf("the script reached the cluster %d times, want once (%v)", got, err)
	}
}
