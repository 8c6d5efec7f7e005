package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/api"
)

// TestAuthorize: root may do everything, a member of the readers' group
// may read and not change, anyone else nothing.
func TestAuthorize(t *testing.T) {
	d := New(Config{})
	d.readGID, d.readName = 4242, "noc"
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	h := d.authorize(ok)
	for _, c := range []struct {
		who          *peer
		method, path string
		want         int
	}{
		{&peer{uid: 0}, http.MethodPost, api.PathApply, http.StatusOK},
		{&peer{uid: 0}, http.MethodGet, api.PathStatus, http.StatusOK},
		{&peer{uid: 1000, gid: 4242}, http.MethodGet, api.PathStatus, http.StatusOK},
		{&peer{uid: 1000, gid: 4242}, http.MethodPost, api.PathRead, http.StatusOK},
		{&peer{uid: 1000, gid: 4242}, http.MethodPost, api.PathApply, http.StatusForbidden},
		{&peer{uid: 1000, gid: 100}, http.MethodGet, api.PathStatus, http.StatusForbidden},
		{&peer{uid: 1000, gid: 100}, http.MethodPost, api.PathRead, http.StatusForbidden},
		{nil, http.MethodGet, api.PathStatus, http.StatusForbidden}, // no credentials: nobody
	} {
		r := httptest.NewRequest(c.method, c.path, strings.NewReader("{}"))
		if c.who != nil {
			r = r.WithContext(context.WithValue(r.Context(), peerKey{}, *c.who))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%+v %s %s: %d, want %d (%s)", c.who, c.method, c.path, w.Code, c.want, w.Body)
		}
	}
	d.readGID, d.readName = -1, ""
	r := httptest.NewRequest(http.MethodGet, api.PathStatus, nil)
	r = r.WithContext(context.WithValue(r.Context(), peerKey{}, peer{uid: 1000, gid: 4242}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "root only") {
		t.Errorf("without a readers' group: %d %s", w.Code, w.Body)
	}
}
