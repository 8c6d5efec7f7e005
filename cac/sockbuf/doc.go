// Package sockbuf is the buffer charge of Cisco broadband CAC for the
// daemons xdpcac protects on the same host: when the receive buffer of the
// UDP socket of xl2tpd or a SIP proxy, or of the AF_PACKET discovery socket
// of a PPPoE server, is (nearly) full, admitting another call only queues
// work the daemon is already failing to keep up with, so every new call is
// rejected until the queue drains.
//
// A watched socket is under pressure when its receive queue holds at least
// 90 % of its receive buffer (rmem_alloc ≥ 0.9 × rcvbuf) or its drop counter
// rose since the previous check: a burst may fill and drain the queue
// between two checks, but the drops it caused remain counted. The mark is
// below 100 % because the kernel refuses a datagram that would not fit, so
// a queue that is as full as it gets may still be short of rcvbuf by up to
// one datagram.
//
// The figures come from sock_diag over NETLINK_SOCK_DIAG (inet_diag with
// INET_DIAG_SKMEMINFO for UDP, packet_diag with PACKET_SHOW_MEMINFO for
// AF_PACKET), not from /proc: /proc/net/udp shows the queue but not the
// receive buffer it is to be compared with, and /proc/net/packet shows
// neither the buffer nor the drops. sock_diag hands over the kernel's
// sk_meminfo array, the same for both kinds, in one dump per family.
//
// github.com/vishvananda/netlink (v1.3.1) asks inet_diag only for
// INET_DIAG_MEMINFO, which has no rcvbuf and no drops, and has no
// packet_diag at all; hence the small client on golang.org/x/sys/unix here.
package sockbuf
