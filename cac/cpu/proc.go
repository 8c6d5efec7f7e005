package cpu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// userHZ is the unit of /proc/stat and /proc/PID/stat. It is the kernel's
// USER_HZ, fixed at 100 in the user ABI of every architecture Go runs on
// whatever CONFIG_HZ is; sysconf(_SC_CLK_TCK) would say the same but needs
// cgo.
const userHZ = 100

// procStat is the aggregate line of /proc/stat in ticks, and the number of
// CPUs online (the kernel lists only those).
type procStat struct {
	busy, total uint64
	cpus        int
}

func readProcStat(procRoot string) (procStat, error) {
	p := filepath.Join(procRoot, "stat")
	b, err := os.ReadFile(p)
	if err != nil {
		return procStat{}, fmt.Errorf("read %s: %w", p, err)
	}
	st, err := parseProcStat(b)
	if err != nil {
		return procStat{}, fmt.Errorf("parse %s: %w", p, err)
	}
	return st, nil
}

func parseProcStat(b []byte) (procStat, error) {
	var st procStat
	seen := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	// The intr line lists every interrupt and outgrows the default 64 KiB
	// on big machines.
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "cpu") {
			continue
		}
		f := strings.Fields(line)
		if f[0] != "cpu" {
			if _, err := strconv.Atoi(f[0][3:]); err == nil {
				st.cpus++
			}
			continue
		}
		// user nice system idle iowait irq softirq steal; kernels before
		// 2.6.11 stop early and what is missing is 0.
		if len(f) < 5 {
			return procStat{}, fmt.Errorf("cpu line has %d fields, want at least 4 counters", len(f)-1)
		}
		var v [8]uint64
		for i := 0; i < len(v) && i+1 < len(f); i++ {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return procStat{}, fmt.Errorf("cpu line field %d: %w", i+1, err)
			}
			v[i] = n
		}
		st.busy = v[0] + v[1] + v[2]
		for _, n := range v {
			st.total += n
		}
		seen = true
	}
	if err := sc.Err(); err != nil {
		return procStat{}, err
	}
	if !seen {
		return procStat{}, errors.New("no aggregate cpu line")
	}
	if st.cpus == 0 {
		return procStat{}, errors.New("no cpuN lines")
	}
	return st, nil
}

// pidKey tells a process from a later one that reuses its PID: the start
// time (in ticks since boot) differs.
type pidKey struct {
	pid   int
	start uint64
}

// gone reports errors meaning the process exited while being read, which
// is normal for a process list and not a failure.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// scanProcs gives utime+stime in ticks of every process whose comm is name.
func scanProcs(procRoot, name string) (map[pidKey]uint64, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", procRoot, err)
	}
	out := make(map[pidKey]uint64)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(procRoot, e.Name())
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if gone(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, "comm"), err)
		}
		// Only the newline goes: a comm may end in spaces.
		if strings.TrimSuffix(string(comm), "\n") != name {
			continue
		}
		sp := filepath.Join(dir, "stat")
		b, err := os.ReadFile(sp)
		if gone(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", sp, err)
		}
		ticks, start, err := parsePidStat(b)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", sp, err)
		}
		out[pidKey{pid, start}] = ticks
	}
	return out, nil
}

// parsePidStat gives utime+stime (fields 14, 15) and starttime (field 22).
// Fields are counted after the last ')' since comm, field 2, may hold
// spaces and parentheses of its own.
func parsePidStat(b []byte) (ticks, start uint64, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("no ')' closing the comm")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state).
	const utime, stime, starttime = 14 - 3, 15 - 3, 22 - 3
	if len(f) <= starttime {
		return 0, 0, fmt.Errorf("%d fields after the comm, want at least %d", len(f), starttime+1)
	}
	var v [3]uint64
	for j, k := range []int{utime, stime, starttime} {
		if v[j], err = strconv.ParseUint(f[k], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("field %d: %w", k+3, err)
		}
	}
	return v[0] + v[1], v[2], nil
}

// readCgroupUsec gives user_usec+system_usec of dir/cpu.stat below root.
// The file is opened through os.OpenInRoot so that not even a symlink can
// lead outside the cgroup root.
func readCgroupUsec(root, dir string) (uint64, error) {
	rel := filepath.Join(dir, "cpu.stat")
	p := filepath.Join(root, rel)
	f, err := os.OpenInRoot(root, rel)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	var user, system uint64
	var haveUser, haveSystem bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || (k != "user_usec" && k != "system_usec") {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse %s: %s: %w", p, k, err)
		}
		if k == "user_usec" {
			user, haveUser = n, true
		} else {
			system, haveSystem = n, true
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	if !haveUser || !haveSystem {
		return 0, fmt.Errorf("parse %s: no user_usec and system_usec; is %s a cgroup v2 mount?", p, root)
	}
	return user + system, nil
}
