package fleet_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// chargesConfig is a box whose call admission limit of 100 with pppoe
// 10 1 is the fleet's (scope "fleet") or its own ("box").
func chargesConfig(iface, sock string, i int, scope string) string {
	return fmt.Sprintf(`interfaces: [{name: %s}]
call-admission: |
  call admission new-model
  call admission limit 100
  call admission pppoe 10 1
call-admission-scope: %s
fleet:
  name: %s
  member: box%d
  redis: {addresses: [%s]}
`, iface, scope, filepath.Base(filepath.Dir(sock)), i, sock)
}

// padi is the nth PADI of box i, from a subscriber of its own.
func padi(i int, n uint64) []byte {
	return Frame(Ether{Src: [6]byte{2, 0, 0x5e, byte(i), byte(n >> 8), byte(n)}, Broadcast: true}, PPPoE{Code: PADI})
}

// TestFleetCallAdmissionLimit: ten boxes whose `call admission limit
// 100` with `pppoe 10 1` is the fleet's admit together what one box
// admits under that limit, offered the same 200 PADIs a second for 20 s:
// at most 100 × (20 / 1 + 1) / 10 = 210, and nearly that.
func TestFleetCallAdmissionLimit(t *testing.T) {
	testenv.RequireBPF(t)
	sock := startRedis(t)
	const d = 20 * time.Second
	bound := 100 * (d.Seconds()/1 + 1) / 10
	one := startBoxesWith(t, 1, func(iface string, i int) string { return chargesConfig(iface, sock, 100+i, "box") })
	fleet := startBoxesWith(t, 10, func(iface string, i int) string { return chargesConfig(iface, sock, i, "fleet") })
	for _, b := range append(one, fleet...) {
		b.class, b.frame = cac.PPPoEPADI, padi
	}
	time.Sleep(3 * time.Second)
	alone := fleetRun(t, one, d, func(int, time.Duration) float64 { return 200 })
	time.Sleep(3 * time.Second)
	together := fleetRun(t, fleet, d, func(int, time.Duration) float64 { return 20 })
	t.Logf("200 PADIs a second for 20 s under call admission limit 100, pppoe 10 1: one box admitted %d, ten boxes sharing the limit %d, of a bound of %.0f",
		alone, together, bound)
	if float64(together) > bound {
		t.Errorf("the ten boxes admitted %d, over %.0f", together, bound)
	}
	if float64(together) < 0.9*float64(alone) {
		t.Errorf("the ten boxes admitted %d, under 90%% of the %d one box admitted", together, alone)
	}
}
