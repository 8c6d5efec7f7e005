package loader

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// Pins walks the pinned maps of every attachment of a state directory.
type Pins interface {
	// Each calls fn with each attachment's maps, as EachPinned does; the
	// maps are the walker's, and fn must not keep them.
	Each(fn func(*Pinned) error) error
}

// Fresh are the pins of stateDir opened anew at each walk: for a command
// that walks them once.
type Fresh string

// Each is EachPinned.
func (f Fresh) Each(fn func(*Pinned) error) error { return EachPinned(string(f), fn) }

// PinCache keeps each attachment's pinned maps open between walks, for a
// reader that walks them again and again (the daemon's metrics, at each
// scrape): an attachment is opened again only when its directory changed
// (made again, or a pin in it replaced or added, as an upgrade or a
// clear counters does), and closed once it is gone.
type PinCache struct {
	stateDir string

	mu     sync.Mutex
	open   map[string]*cachedPins
	closed bool
}

// cachedPins are an attachment's open maps, with the directory they were
// opened from as it was then.
type cachedPins struct {
	p     *Pinned
	stamp dirStamp
}

// dirStamp tells one state of a directory from another: its inode (made
// again) and a hash of the name and inode of every entry in it (a pin
// added, removed or replaced). Its change time would say as much, but it
// moves only a clock tick at a time, and a pin replaced within the tick
// of the last walk would go unseen.
type dirStamp struct {
	ino, entries uint64
}

func stampOf(dir string) (dirStamp, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return dirStamp{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return dirStamp{}, fmt.Errorf("%s: no inode", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return dirStamp{}, err
	}
	h := fnv.New64a()
	for _, e := range ents { // sorted by name
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing: the next walk sees it gone
		}
		if err != nil {
			return dirStamp{}, err
		}
		var ino uint64
		if est, ok := info.Sys().(*syscall.Stat_t); ok {
			ino = est.Ino
		}
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), ino)
	}
	return dirStamp{ino: st.Ino, entries: h.Sum64()}, nil
}

// errPinCacheClosed answers a walk after Close: a scrape still running
// when the server stopped opens nothing the cache would not close.
var errPinCacheClosed = errors.New("pins closed")

// NewPinCache keeps the pins of stateDir open; Close closes them.
func NewPinCache(stateDir string) *PinCache {
	return &PinCache{stateDir: stateDir, open: map[string]*cachedPins{}}
}

// Each calls fn with each attachment's maps, in List's order, opening
// only those new or changed since the last walk.
func (c *PinCache) Each(fn func(*Pinned) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errPinCacheClosed
	}
	atts, err := List(c.stateDir)
	if err != nil {
		return err
	}
	live := make(map[string]bool, len(atts))
	var walkErr error
	for _, a := range atts {
		key := a.Key()
		stamp, err := stampOf(a.Dir(c.stateDir))
		if errors.Is(err, fs.ErrNotExist) {
			continue // being detached
		}
		if err != nil {
			return err
		}
		cp := c.open[key]
		if cp != nil && cp.stamp != stamp {
			cp.p.Close()
			delete(c.open, key)
			cp = nil
		}
		if cp == nil {
			p, err := Open(c.stateDir, a)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			cp = &cachedPins{p: p, stamp: stamp}
			c.open[key] = cp
		}
		live[key] = true
		if err := fn(cp.p); err != nil {
			walkErr = fmt.Errorf("%s: %w", a, err)
			break
		}
	}
	for key, cp := range c.open {
		if !live[key] && walkErr == nil {
			cp.p.Close()
			delete(c.open, key)
		}
	}
	return walkErr
}

// Close closes every map the cache holds open.
func (c *PinCache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for key, cp := range c.open {
		cp.p.Close()
		delete(c.open, key)
	}
}
