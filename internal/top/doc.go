// Package top is `cacctl top`: a live view of a state directory's
// attachments on bubbletea, one view per key, sized to its terminal, and
// the plain frame of --once.
package top
