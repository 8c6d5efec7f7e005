package version

import (
	"runtime"
	"runtime/debug"
)

// Info is the build of this binary, as `cacctl version -o json` prints it.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`      // "" when not built from a checkout
	CommitAt  string `json:"commit_time"` // RFC 3339, "" when unknown
	Modified  bool   `json:"modified"`    // built from a checkout with changes
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"` // GOOS/GOARCH
}

// Read is what the Go toolchain stamped into the binary.
func Read() Info {
	in := Info{Version: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.CommitAt = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	switch v := bi.Main.Version; {
	case v != "" && v != "(devel)":
		in.Version = v
	case len(in.Commit) >= 12:
		in.Version = "devel+" + in.Commit[:12]
		if in.Modified {
			in.Version += "-dirty"
		}
	default:
		in.Version = "devel"
	}
	return in
}

// String is the version alone: the module version when built from a
// tagged module, else the commit.
func String() string { return Read().Version }
