// Package api is the contract between `cacctl run` and the commands that
// talk to it: where a daemon of a state directory keeps its lock and its
// socket, the JSON each endpoint answers (snake_case keys), and the client
// the CLI and the tests use. The daemon package serves it; nothing here
// knows how.
package api
