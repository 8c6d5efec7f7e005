// Package show lays out what cacctl prints for people, where more than one
// command prints it: the IOS layout of call admission statistics, and the
// numbers and ages as they appear in it.
package show
