package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/user"
	"slices"
	"strconv"

	"github.com/xdpcac/xdpcac/api"
	"golang.org/x/sys/unix"
)

// Who may use the API (docs/design.md, "Read-only access"): root may do
// everything; members of api.read-group may read (GET, and the read
// commands the daemon runs for them) and change nothing; anyone else is
// refused. The socket's mode keeps others out already; this holds even if
// the mode is changed.

type peerKey struct{}

// peer is the process at the other end of the socket, as the kernel
// says (SO_PEERCRED), when it connected.
type peer struct {
	uid, gid uint32
}

// peerCred reads the credentials of the process at the other end.
func peerCred(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cred == nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, peer{uid: cred.Uid, gid: cred.Gid})
}

// inGroup reports whether the peer's primary group is gid, or the user's
// groups in the group database hold it.
func (p peer) inGroup(gid int) bool {
	if gid < 0 {
		return false
	}
	if int(p.gid) == gid {
		return true
	}
	u, err := user.LookupId(strconv.Itoa(int(p.uid)))
	if err != nil {
		return false
	}
	groups, err := u.GroupIds()
	return err == nil && slices.Contains(groups, strconv.Itoa(gid))
}

// readOnly are the requests a reader may make.
func readOnly(r *http.Request) bool {
	return r.Method == http.MethodGet || r.Method == http.MethodPost && r.URL.Path == api.PathRead
}

// authorize lets root through, readers to what reads, and no one else.
func (d *Daemon) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := r.Context().Value(peerKey{}).(peer)
		gid, group := d.readGroup()
		switch {
		case ok && p.uid == 0:
		case ok && p.inGroup(gid) && readOnly(r):
		case ok && p.inGroup(gid):
			writeJSON(w, http.StatusForbidden, api.Error{Error: fmt.Sprintf("members of %s may read; changes are for root", group)})
			return
		case group != "":
			writeJSON(w, http.StatusForbidden, api.Error{Error: "the xdpcac API is for root and the members of " + group})
			return
		default:
			writeJSON(w, http.StatusForbidden, api.Error{Error: "the xdpcac API is for root only"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readGroup is the group of readers in force, -1 and "" for none.
func (d *Daemon) readGroup() (int, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.readGID, d.readName
}

// lookupReadGroup resolves api.read-group; "" is none (-1).
func lookupReadGroup(name string) (int, error) {
	if name == "" {
		return -1, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return -1, fmt.Errorf("api.read-group: %w", err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return -1, fmt.Errorf("api.read-group %s: gid %q", name, g.Gid)
	}
	return gid, nil
}

// setReadGroup puts a group of readers in force: the socket becomes
// theirs to connect to (root:GROUP 0660) in the daemon's own directory,
// which they may pass through (root:GROUP 0710) but not list; or both
// are root's alone again (0600 and 0700). api.RunDir, which every daemon
// shares, is 0711 whatever each does (makeRunDirs). The socket changes
// first: a failure leaves the directory as it was.
func (d *Daemon) setReadGroup(socket string, gid int, name string) error {
	mode, dirMode, group := os.FileMode(0o600), os.FileMode(0o700), 0
	if gid >= 0 {
		// The directory holds the lock and the statuses (0600 each): a
		// reader may reach the socket in it, not list or write it.
		mode, dirMode, group = 0o660, 0o710, gid
	}
	if err := os.Chown(socket, -1, group); err != nil {
		return fmt.Errorf("api.read-group: give the socket to the group (CAP_CHOWN): %w", err)
	}
	if err := os.Chmod(socket, mode); err != nil {
		return fmt.Errorf("api.read-group: %w", err)
	}
	dir := api.PathsOf(d.cfg.StateDir).Dir
	if err := os.Chown(dir, -1, group); err != nil {
		return fmt.Errorf("api.read-group: give %s to the group (CAP_CHOWN): %w", dir, err)
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		return fmt.Errorf("api.read-group: let readers reach %s: %w", dir, err)
	}
	d.mu.Lock()
	d.readGID, d.readName = gid, name
	d.mu.Unlock()
	return nil
}
