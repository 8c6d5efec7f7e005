// Package listeners finds the SIP listeners of a network namespace that
// the filter does not watch, so that cacctl can name them: a SIP server
// that also listens where no admission applies (UDP on a port missing
// from ports.sip, or SIP over TCP or SCTP, which the fast path does not
// read) is open to the storm the filter holds back everywhere else
// (docs/design.md, "SIP listeners").
//
// The sockets come from sock_diag (NETLINK_SOCK_DIAG, inet_diag), asked
// in the namespace of the attached interface: UDP sockets that are bound
// and not connected (state TCP_CLOSE), TCP and SCTP sockets in LISTEN,
// over IPv4 and IPv6. The requests go through the nl helpers of
// github.com/vishvananda/netlink rather than its SocketDiagTCP and
// SocketDiagUDP, which ask for sockets in every state (a busy SBC's TCP
// connections by the ten thousand, every refresh of the daemon) and know
// no SCTP; here the kernel filters by state, and SCTP is one more
// protocol number. SCTP is asked only when the kernel has the sctp
// module: asking inet_diag for it would load sctp_diag, and sctp with
// it, on a box that may have kept it out on purpose.
//
// The classification (Unwatched) is pure, for tests without root; the
// owner of a socket (Owners) is looked up in /proc/*/fd, best effort and
// only when a listener is to be named.
package listeners
