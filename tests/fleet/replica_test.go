package fleet_test

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/xdpcac/xdpcac/cac/fleet"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// runRedisServer starts redis-server with args, saving nothing, killed
// when t ends.
func runRedisServer(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return runRedis(t, append([]string{"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)...)
}

// runRedis starts redis-server with args as they are, killed when t
// ends; its log is shown when t fails.
func runRedis(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	bin := testenv.RequireTool(t, "redis-server", "redis-server")
	cmd := exec.Command(bin, args...)
	log := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("redis-server %v log:\n%s", args, log)
		}
	})
	return cmd
}

// freePort is a loopback TCP port free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startTCPRedis starts a redis-server on a loopback port with args, and
// returns its address and the process once it answers PING.
func startTCPRedis(t *testing.T, args ...string) (string, *exec.Cmd) {
	t.Helper()
	port := freePort(t)
	// A replica's first sync at once: by default a master waits 5 s for
	// more replicas before it streams its data set.
	cmd := runRedisServer(t, append([]string{"--port", port, "--bind", "127.0.0.1", "--repl-diskless-sync-delay", "0"}, args...)...)
	addr := "127.0.0.1:" + port
	raw := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { raw.Close() })
	testenv.WaitFor(t, func() bool { return raw.Ping(context.Background()).Err() == nil })
	return addr, cmd
}

// TestGrantWaitsForReplica: with wait-replicas 1, a grant counts once a
// replica has it: with the replica up the box is granted; with it gone,
// the grant is refused, its tokens are not spent, and the error says so.
// A failover to a replica that has every grant a box spent adds nothing to
// the fleet's bound.
func TestGrantWaitsForReplica(t *testing.T) {
	master, _ := startTCPRedis(t)
	host, port, _ := net.SplitHostPort(master)
	_, replica := startTCPRedis(t, "--replicaof", host, port)
	raw := redis.NewClient(&redis.Options{Addr: master})
	t.Cleanup(func() { raw.Close() })
	// "state=online" is not enough: after a diskless full sync the master
	// streams nothing to the replica, GETACK included, until the replica's
	// first REPLCONF ACK, which its once-a-second cron sends. A write that
	// WAIT sees on the replica is the replica ready for the test.
	testenv.WaitFor(t, func() bool {
		ctx := context.Background()
		if err := raw.Set(ctx, "xdpcac-test-probe", "1", 0).Err(); err != nil {
			return false
		}
		n, err := raw.Do(ctx, "WAIT", 1, 200).Int()
		return err == nil && n == 1
	})
	raw.Del(context.Background(), "xdpcac-test-probe")
	c := newClient(t, fleet.Options{Fleet: "east", Addresses: []string{master}, Timeout: time.Second, WaitReplicas: 1})
	lim := fleet.Limit{Name: "acme", CPS: 100, Burst: 100}
	g, err := c.Grant(context.Background(), "box1", lim, 10)
	if err != nil || g.Tokens != 10 {
		t.Fatalf("with the replica up: %+v, %v; want 10 tokens", g, err)
	}
	replica.Process.Kill()
	replica.Wait()
	g, err = c.Grant(context.Background(), "box1", lim, 10)
	t.Logf("with the replica gone: %+v, %v", g, err)
	if err == nil || g.Tokens != 0 || !strings.Contains(err.Error(), "0 of the 1 replicas asked for had the grant within 500ms") ||
		!errors.Is(err, fleet.ErrNotReplicated) {
		t.Errorf("with the replica gone: %+v, %v; want no tokens and an error that says the replica did not have them", g, err)
	}
	if g.Members != 1 {
		t.Errorf("the script ran and counted %d boxes, want the 1 (on-fleet-lost local divides by it)", g.Members)
	}
	// Without it, the same Redis grants at once.
	plain := newClient(t, fleet.Options{Fleet: "east", Addresses: []string{master}, Timeout: 200 * time.Millisecond})
	if g, err := plain.Grant(context.Background(), "box1", lim, 10); err != nil || g.Tokens == 0 {
		t.Errorf("without wait-replicas: %+v, %v", g, err)
	}
}
