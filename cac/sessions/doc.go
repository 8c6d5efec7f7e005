// Package sessions keeps the dialogs that hold sessions of a max-sessions
// limit (docs/design.md, "Capacity"): the fast path takes an account's
// and a customer's session when it admits an INVITE and enters the dialog
// in its table; this package reads the dialog's later messages and says
// when it ends, so that its sessions go back.
//
// A dialog ends with the 2xx to a BYE (the server's, or one from where the
// server sent its own BYE), with a final answer of 300 or more to its
// INVITE from the side that decides it (not a challenge), or by its
// expiry: 64 × T1 (Timer B) with no answer at all, three minutes (Timer
// C) after its last provisional answer, and the configured session
// expiry after the last message of a dialog that was answered 2xx. A
// lost BYE holds a session until that expiry.
package sessions
