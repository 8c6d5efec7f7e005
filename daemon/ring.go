package daemon

import (
	"bytes"
	"encoding/json"

	"github.com/xdpcac/xdpcac/api"
)

// recordRing keeps the newest finished reject records for `show rejects`
// in a fixed array, each encoded once, as the rejects log has it: a
// storm's record replaces the oldest in place, so keeping one costs the
// same whether the ring is empty or full, and an answer copies bytes
// rather than encoding thousands of records again. It has no lock of its
// own: the journal's guards it.
type recordRing struct {
	buf  [][]byte // JSON of api.RejectLine, without a newline
	next int      // where the next record goes
	full bool
}

func newRecordRing(size int) *recordRing { return &recordRing{buf: make([][]byte, size)} }

// push keeps the encoded record b, forgetting the oldest when full.
func (r *recordRing) push(b []byte) {
	r.buf[r.next] = b
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

// snapshot appends the records to out, oldest first: what it copies
// are slice headers, and a record once encoded never changes, so the
// answer is written from them after the journal's lock is let go.
func (r *recordRing) snapshot(out [][]byte) [][]byte {
	if r.full {
		out = append(out, r.buf[r.next:]...)
	}
	return append(out, r.buf[:r.next]...)
}

// rejectsJSON is a JSON array of encoded records and then of lines, as
// GET /v1/rejects answers it.
type rejectsJSON struct {
	buf   bytes.Buffer
	first bool
}

func newRejectsJSON() *rejectsJSON {
	j := &rejectsJSON{first: true}
	j.buf.WriteByte('[')
	return j
}

func (j *rejectsJSON) raw(b []byte) {
	if !j.first {
		j.buf.WriteByte(',')
	}
	j.first = false
	j.buf.Write(b)
}

func (j *rejectsJSON) line(l api.RejectLine) {
	b, _ := json.Marshal(l)
	j.raw(b)
}

// bytes ends the array.
func (j *rejectsJSON) bytes() []byte {
	j.buf.WriteString("]\n")
	return j.buf.Bytes()
}
