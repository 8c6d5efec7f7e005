package classify

// maxStack is CAC_MAX_STACK: the tags looked at for priority tags.
const maxStack = 16

// StripPriorityTags is strip_priority_tags of bpf/priority.h: a frame with
// more VLAN tags than the classifier walks loses as many of its leading
// priority tags (VID 0) as are too many, as Linux would take them out
// anyway; any other frame is returned as it is. The XDP program passes the
// frame on so changed.
func StripPriorityTags(frame []byte) []byte {
	if len(frame) < 14 || !isVLAN(be16(frame[12:])) {
		return frame
	}
	tags, lead, leading := 0, 0, true
	for i := 0; i < maxStack; i++ {
		off := 14 + 4*i
		if off+4 > len(frame) {
			break
		}
		tags++
		if leading && be16(frame[off:])&0x0fff == 0 {
			lead++
		} else {
			leading = false
		}
		if !isVLAN(be16(frame[off+2:])) {
			break
		}
	}
	if tags <= maxTags || lead == 0 {
		return frame
	}
	shift := 4 * min(tags-maxTags, lead)
	out := append([]byte(nil), frame[shift:]...)
	copy(out, frame[:12])
	return out
}
