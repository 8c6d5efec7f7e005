// Package config reads cac.yaml strictly: every key is known, every value
// is checked, and every error names the file, the line and the key path
// (classes.sip-invite.cps). A file with any error yields no Config, so a
// bad file never changes what is running.
package config
