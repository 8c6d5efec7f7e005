package access

import "net/netip"

// Denied is a deny table entry, struct cac_denied.
type Denied struct {
	SinceNS, UntilNS, Frames uint64
	Refusals                 uint32
}

// count is a deny_counts entry, struct cac_deny_count.
type count struct {
	tick uint64
	slot [Slots]uint32
}

// Table is access control's state as the fast path keeps it: the static
// lists, the auto-deny settings, the deny table and the refusals counted
// toward it. The model never evicts (the fast path's tables are LRU).
type Table struct {
	Lists    Lists
	Settings Settings
	// AutoDeny is the policy's POLICY_AUTO_DENY bit.
	AutoDeny bool
	// Agents are the session agents' addresses, never counted.
	Agents map[netip.Addr]bool
	denied map[Key]*Denied
	counts map[Key]*count
	Added  uint64 // stats deny_added
}

// Check is access_check: Deny when the lists deny s, Auto when the deny
// table holds it until after now (its frames counted), None otherwise.
func (t *Table) Check(s Source, now uint64) Verdict {
	if !t.Lists.Empty() {
		switch t.Lists.Of(s) {
		case Deny:
			return Deny
		case Allow:
			return None
		}
	}
	if !t.AutoDeny {
		return None
	}
	d, ok := t.denied[t.Settings.KeyOf(s)]
	// Past its until, a source is released.
	if !ok || now >= d.UntilNS {
		return None
	}
	d.Frames++
	return Auto
}

// Judged reports whether Check would read anything: the policy holds a
// list or auto-deny (access_of).
func (t *Table) Judged() bool { return !t.Lists.Empty() || t.AutoDeny }

// Count is deny_count: a refusal of s at now, of the source's own doing,
// counted in the slot now falls in; once the window holds Refused of them
// s is denied for DenyForNS and its count forgotten. Agents and allowed
// sources are not counted.
func (t *Table) Count(s Source, now uint64) {
	st := t.Settings
	if st.SlotNS == 0 || st.Refused == 0 {
		return
	}
	if !t.Lists.Empty() && t.Lists.Of(s) == Allow {
		return
	}
	if s.Family != 0 && t.Agents[s.Mapped()] {
		return
	}
	k := st.KeyOf(s)
	tick := now / st.SlotNS
	sum := uint32(1)
	c, ok := t.counts[k]
	if !ok {
		if sum < st.Refused {
			n := &count{tick: tick}
			n.slot[tick%Slots] = 1
			if t.counts == nil {
				t.counts = map[Key]*count{}
			}
			t.counts[k] = n
			return
		}
	} else {
		// Slots the window left since the last refusal are emptied; a
		// refusal from before the newest counts in the newest.
		if tick > c.tick {
			for i := uint64(1); i <= Slots && i <= tick-c.tick; i++ {
				c.slot[(c.tick+i)%Slots] = 0
			}
			c.tick = tick
		} else {
			tick = c.tick
		}
		c.slot[tick%Slots]++
		sum = 0
		for _, n := range c.slot {
			sum += n
		}
		if sum < st.Refused {
			return
		}
		delete(t.counts, k)
	}
	if t.denied == nil {
		t.denied = map[Key]*Denied{}
	}
	t.denied[k] = &Denied{SinceNS: now, UntilNS: now + st.DenyForNS, Refusals: sum}
	t.Added++
}

// Denied returns the deny table's entry of key k.
func (t *Table) Denied(k Key) (Denied, bool) {
	d, ok := t.denied[k]
	if !ok {
		return Denied{}, false
	}
	return *d, true
}

// Len is how many sources the deny table holds.
func (t *Table) Len() int { return len(t.denied) }
