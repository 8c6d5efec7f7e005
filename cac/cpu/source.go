package cpu

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Kinds of Source.
const (
	KindSystem  = "system"
	KindProcess = "process"
	KindCgroup  = "cgroup"
)

// maxComm is TASK_COMM_LEN less its NUL: the kernel truncates longer names,
// so a longer NAME could never match and would read 0 % forever.
const maxComm = 15

// Source is where Pcpu comes from. Name is the process comm for
// KindProcess, the path below the cgroup2 mount for KindCgroup, and empty
// for KindSystem.
type Source struct {
	Kind string
	Name string
}

// String gives back the config form, which ParseSource accepts.
func (s Source) String() string {
	if s.Kind == KindSystem {
		return KindSystem
	}
	return s.Kind + ":" + s.Name
}

// ParseSource checks a source string ("system", "process:NAME",
// "cgroup:PATH") and says what is wrong in one line if it is bad.
func ParseSource(s string) (Source, error) {
	kind, name, hasColon := strings.Cut(s, ":")
	switch kind {
	case KindSystem:
		if hasColon {
			return Source{}, fmt.Errorf("cpu source %q: system takes no argument", s)
		}
		return Source{Kind: KindSystem}, nil
	case KindProcess:
		if err := checkComm(name); err != nil {
			return Source{}, fmt.Errorf("cpu source %q: %w", s, err)
		}
		return Source{Kind: KindProcess, Name: name}, nil
	case KindCgroup:
		p, err := cleanCgroup(name)
		if err != nil {
			return Source{}, fmt.Errorf("cpu source %q: %w", s, err)
		}
		return Source{Kind: KindCgroup, Name: p}, nil
	case "":
		return Source{}, errors.New(`cpu source is empty: want "system", "process:NAME" or "cgroup:PATH"`)
	}
	return Source{}, fmt.Errorf(`cpu source %q: unknown kind %q, want "system", "process:NAME" or "cgroup:PATH"`, s, kind)
}

func checkComm(name string) error {
	switch {
	case name == "":
		return errors.New("process needs a name, as in process:kamailio")
	case len(name) > maxComm:
		return fmt.Errorf("process name %q is longer than the %d bytes the kernel keeps of a comm", name, maxComm)
	case strings.ContainsAny(name, "\x00\n"):
		return errors.New("process name holds a NUL or newline, which no comm can")
	}
	return nil
}

// cleanCgroup refuses any ".." element outright rather than resolving it:
// a path that climbs, even back down again, is a config mistake, and the
// sampler must never read outside the cgroup root. A leading "/" is
// accepted because /proc/PID/cgroup prints paths that way.
func cleanCgroup(p string) (string, error) {
	if p == "" {
		return "", errors.New("cgroup needs a path below the cgroup2 mount, as in cgroup:system.slice/kamailio.service")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("cgroup path holds a NUL")
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return "", errors.New(`cgroup path may not contain "..": it must stay below the cgroup2 mount`)
		}
	}
	c := strings.TrimPrefix(path.Clean("/"+p), "/")
	if c == "" {
		return "", errors.New(`cgroup path is the root cgroup: use "system" for the whole machine`)
	}
	return c, nil
}
