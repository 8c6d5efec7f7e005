// Package deb tests the Debian package of make deb: it builds one (or
// takes the one XDPCAC_DEB names), installs it with dpkg into a fresh
// root of its own, never the machine's, and runs the installed cacctl.
package deb
