package docs

import "fmt"

// reporter is what the checks report their failures to: a *testing.T, or
// a recorder when a test shows that a check catches a made-up entry.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// recorder keeps the failures a check reports.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
