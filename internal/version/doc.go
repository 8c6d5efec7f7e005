// Package version says which build of cacctl this is, for `status`, the
// metrics' build_info and the daemon's log.
package version
