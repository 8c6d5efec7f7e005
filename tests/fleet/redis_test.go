package fleet_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/xdpcac/xdpcac/cac/fleet"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// startRedis starts a redis-server of t's own on a unix socket in a
// temporary directory, with nothing saved, and returns the socket's path.
// It is killed when t ends, whichever way.
func startRedis(t *testing.T) string { return newRedis(t).sock }

// redisServer is a redis-server of a test's own, which the test may stop
// and start again on the same socket.
type redisServer struct {
	t    *testing.T
	bin  string
	dir  string
	sock string
	cmd  *exec.Cmd
	logf *os.File
}

// newRedis starts a redis-server for t; it is killed when t ends.
func newRedis(t *testing.T) *redisServer {
	t.Helper()
	r := &redisServer{t: t, bin: testenv.RequireTool(t, "redis-server", "redis-server"), dir: t.TempDir()}
	r.sock = filepath.Join(r.dir, "redis.sock")
	logf, err := os.Create(filepath.Join(r.dir, "redis.log"))
	if err != nil {
		t.Fatal(err)
	}
	r.logf = logf
	t.Cleanup(func() {
		r.stop()
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("redis-server log:\n%s", b)
			}
		}
	})
	r.start()
	return r
}

// start starts the server and waits until it answers PING.
func (r *redisServer) start() {
	t := r.t
	t.Helper()
	cmd := exec.Command(r.bin, "--port", "0", "--unixsocket", r.sock, "--save", "", "--appendonly", "no", "--dir", r.dir)
	cmd.Stdout, cmd.Stderr = r.logf, r.logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	r.cmd = cmd
	raw := rawClient(t, r.sock)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := raw.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer PING in 10 s: %v", r.sock, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the server: what it kept is gone, as after a crash.
func (r *redisServer) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
	os.Remove(r.sock)
}

// rawClient is a plain go-redis client on sock, for what the tests look at
// behind cac/fleet's back.
func rawClient(t *testing.T, sock string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock})
	t.Cleanup(func() { c.Close() })
	return c
}

// newClient returns a cac/fleet Client of fleet on address, closed when t
// ends.
func newClient(t *testing.T, o fleet.Options) *fleet.Client {
	t.Helper()
	c, err := fleet.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

// info returns field of INFO section as an integer, or of a commandstats
// line (field "cmdstat_eval.calls").
func info(t *testing.T, raw *redis.Client, section, field string) int64 {
	t.Helper()
	s, err := raw.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	name, sub, _ := strings.Cut(field, ".")
	for line := range strings.SplitSeq(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || k != name {
			continue
		}
		if sub == "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s %s: %q: %v", section, field, v, err)
			}
			return n
		}
		for kv := range strings.SplitSeq(v, ",") {
			if sk, sv, _ := strings.Cut(kv, "="); sk == sub {
				n, err := strconv.ParseInt(sv, 10, 64)
				if err != nil {
					t.Fatalf("INFO %s %s: %q: %v", section, field, sv, err)
				}
				return n
			}
		}
	}
	return 0 // a command never called has no line
}

// tatOf reads the TAT key of limit in fleet as the script wrote it; 0 when
// it is absent.
func tatOf(t *testing.T, raw *redis.Client, fleetName, limit string) int64 {
	t.Helper()
	v, err := raw.Get(context.Background(), fmt.Sprintf("xdpcac:{%s}:tat:%s", fleetName, limit)).Result()
	if err == redis.Nil {
		return 0
	}
	if err != nil {
		t.Fatalf("GET TAT: %v", err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("TAT %q is not a whole number of µs: %v", v, err)
	}
	return n
}
