package cac

import (
	"fmt"
	"slices"
	"strings"
)

// Class is a kind of first packet of a session: enum cac_class.
type Class uint8

// The classes, in the order of enum cac_class.
const (
	PPPoEPADI Class = iota
	PPPoEPADR
	L2TPSCCRQ
	L2TPICRQ
	SIPInvite
	SIPOptions
	SIPRegister
	// SIPOther is every other SIP request method out of dialog.
	SIPOther
	// SIPInDialog and ClassMalformed open no session, but are held by
	// limits of their own all the same: an in-dialog request (a To tag
	// anyone can write), and a frame of a watched carrier that cannot be
	// classified to the end. Only their per-source and class buckets
	// apply.
	SIPInDialog
	ClassMalformed
	// SIPConnect is a TCP SYN without ACK to a SIP TCP or TLS port: the
	// connection a SIP server over TCP reads requests on. The messages
	// of the stream are the server's to judge.
	SIPConnect
	NumClasses int = iota
)

var classNames = [NumClasses]string{
	PPPoEPADI:      "pppoe-padi",
	PPPoEPADR:      "pppoe-padr",
	L2TPSCCRQ:      "l2tp-sccrq",
	L2TPICRQ:       "l2tp-icrq",
	SIPInvite:      "sip-invite",
	SIPOptions:     "sip-options",
	SIPRegister:    "sip-register",
	SIPOther:       "sip-other",
	SIPInDialog:    "sip-indialog",
	ClassMalformed: "malformed",
	SIPConnect:     "sip-connect",
}

// IsSIPRequest reports whether c is a SIP request's class: one an agent's
// bucket may hold.
func (c Class) IsSIPRequest() bool { return c >= SIPInvite && c <= SIPInDialog }

// Answerable reports whether a refused request of class c may be answered
// with a 503 (action: reject): the SIP requests out of dialog.
func (c Class) Answerable() bool { return c >= SIPInvite && c <= SIPOther }

// Sessionless reports whether c opens no session: its frames are held by
// their per-source and class buckets alone, never by an account, the
// environment or call admission.
func (c Class) Sessionless() bool { return c == SIPInDialog || c == ClassMalformed }

// Classes returns every class in order.
func Classes() []Class {
	cs := make([]Class, NumClasses)
	for i := range cs {
		cs[i] = Class(i)
	}
	return cs
}

func (c Class) String() string {
	if int(c) < NumClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// ParseClass returns the class of a name such as "sip-invite".
func ParseClass(name string) (Class, error) {
	for i, n := range classNames {
		if n == name {
			return Class(i), nil
		}
	}
	return 0, fmt.Errorf("unknown class %q (want one of %s)", name, strings.Join(classNames[:], ", "))
}

// Reason names the limit that rejected a call: enum cac_reason, in the
// order the admission pipeline checks them.
type Reason uint8

// The reasons, in the order of enum cac_reason.
const (
	ReasonStale Reason = iota
	ReasonCPULimit
	ReasonBuffers
	ReasonSource
	ReasonAccount
	ReasonCustomer
	ReasonAgent
	ReasonClass
	ReasonEnvironment
	ReasonSessionCharges
	ReasonTotalCharge
	// ReasonMalformed is either bucket of class malformed.
	ReasonMalformed
	// ReasonCapacity is an account or customer at its max-sessions:
	// judged before every other level, numbered after them.
	ReasonCapacity
	// ReasonDenied is a source on a deny list or auto-denied: judged
	// before any parse of the message, numbered last.
	ReasonDenied
	NumReasons int = iota
)

var reasonNames = [NumReasons]string{
	ReasonStale:          "stale",
	ReasonCPULimit:       "cpu-limit",
	ReasonBuffers:        "buffers",
	ReasonSource:         "source",
	ReasonAccount:        "account",
	ReasonCustomer:       "customer",
	ReasonAgent:          "agent",
	ReasonClass:          "class",
	ReasonEnvironment:    "environment",
	ReasonSessionCharges: "session-charges",
	ReasonTotalCharge:    "total-charge",
	ReasonMalformed:      "malformed",
	ReasonCapacity:       "capacity",
	ReasonDenied:         "denied",
}

// Reasons returns every reason in pipeline order.
func Reasons() []Reason {
	rs := make([]Reason, NumReasons)
	for i := range rs {
		rs[i] = Reason(i)
	}
	return rs
}

func (r Reason) String() string {
	if int(r) < NumReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// ParseReason returns the reason of a name such as "cpu-limit".
func ParseReason(name string) (Reason, error) {
	for i, n := range reasonNames {
		if n == name {
			return Reason(i), nil
		}
	}
	return 0, fmt.Errorf("unknown reason %q (want one of %s)", name, strings.Join(reasonNames[:], ", "))
}

// EgressReason names why the egress program refused an INVITE toward a
// session agent: enum cac_egress_reason. The reasons of reject records
// are the pipeline's and these.
type EgressReason uint8

const (
	// EgressConnection is the agent's connection limit (connection-cps).
	EgressConnection EgressReason = iota
	// EgressAgentDown is the agent out of service in every realm, with
	// on-out-of-service: fail-fast.
	EgressAgentDown
	// EgressCapacity is the agent at its max-sessions, the calls it may
	// have up at once.
	EgressCapacity
	NumEgressReasons int = iota
)

var egressReasonNames = [NumEgressReasons]string{EgressConnection: "connection", EgressAgentDown: "agent-down", EgressCapacity: "capacity"}

func (r EgressReason) String() string {
	if int(r) < NumEgressReasons {
		return egressReasonNames[r]
	}
	return fmt.Sprintf("egress-reason(%d)", uint8(r))
}

// Text says what an egress reason means, for the Warning of an answer.
func (r EgressReason) Text() string {
	switch r {
	case EgressConnection:
		return "over its connection limit"
	case EgressAgentDown:
		return "out of service"
	case EgressCapacity:
		return "at its max-sessions"
	}
	return r.String()
}

// EgressReasons returns every egress reason.
func EgressReasons() []EgressReason {
	rs := make([]EgressReason, NumEgressReasons)
	for i := range rs {
		rs[i] = EgressReason(i)
	}
	return rs
}

// Kind is what the classifier made of a frame: enum cac_verdict_kind.
type Kind uint8

// The kinds, in the order of enum cac_verdict_kind.
const (
	// Unwatched frames are on no watched carrier: passed, never counted.
	Unwatched Kind = iota
	// Session is the first packet of a session of a class.
	Session
	// Other is on a watched carrier but opens no session (PADO, SIP
	// responses, L2TP data, ...): passed and counted as passed_other.
	Other
	// InDialog is a SIP request that claims a dialog: admitted as class
	// SIPInDialog.
	InDialog
	// Fragment is a non-first fragment of a UDP datagram.
	Fragment
	// Malformed is a watched carrier, truncated or inconsistent inside:
	// admitted as class ClassMalformed.
	Malformed
)

var kindNames = [...]string{"unwatched", "session", "other", "sip-indialog", "fragment", "malformed"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// PortKind is what a UDP destination port carries: enum cac_port_kind.
type PortKind uint8

// The port kinds, in the order of enum cac_port_kind.
const (
	PortNone PortKind = iota
	PortL2TP
	PortSIP
)

// Verdict is what the fast path did with a frame: XDP_DROP, XDP_PASS, or
// XDP_TX for a refused ICRQ turned into its answer.
type Verdict uint32

// XDP actions (kernel ABI).
const (
	Drop Verdict = 1
	Pass Verdict = 2
	TX   Verdict = 3
)

func (v Verdict) String() string {
	switch v {
	case Drop:
		return "drop"
	case Pass:
		return "pass"
	case TX:
		return "tx"
	}
	return fmt.Sprintf("xdp-action(%d)", uint32(v))
}

// CallType is a Cisco call type of the charge budget: enum cac_call_type.
type CallType uint8

// The call types, in the order of enum cac_call_type.
const (
	CallPPPoE CallType = iota
	CallVPDN
	CallSIP
	NumCallTypes int = iota
)

var callTypeNames = [NumCallTypes]string{CallPPPoE: "pppoe", CallVPDN: "vpdn", CallSIP: "sip"}

func (t CallType) String() string {
	if int(t) < NumCallTypes {
		return callTypeNames[t]
	}
	return fmt.Sprintf("call-type(%d)", uint8(t))
}

// CallTypeNames are the call types as IOS spells them, in the order of
// their values.
func CallTypeNames() []string { return slices.Clone(callTypeNames[:]) }

// OnStaleNames are the on-stale policies as the configuration spells
// them, in the order of their values (policy.OnStale).
func OnStaleNames() []string { return []string{"static", "open", "closed"} }

// ParseCallType returns the call type of an IOS name such as "vpdn".
func ParseCallType(name string) (CallType, error) {
	for i, n := range callTypeNames {
		if n == name {
			return CallType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown call type %q (want one of %s)", name, strings.Join(callTypeNames[:], ", "))
}

// ClassOf is the class whose limits hold a frame the classifier made k of:
// an in-dialog request's or a malformed frame's; other kinds have none.
func ClassOf(k Kind) (Class, bool) {
	switch k {
	case InDialog:
		return SIPInDialog, true
	case Malformed:
		return ClassMalformed, true
	}
	return 0, false
}

// CallTypeOf is the call type a class is charged as. A call is its first
// sign of life only (docs/design.md "Admission"): PADI, ICRQ, INVITE. A
// PADR follows a PADI already admitted and an SCCRQ opens a tunnel, not a
// call, so neither meets the gates and charges again: their own buckets
// hold them.
func CallTypeOf(c Class) (CallType, bool) {
	switch c {
	case PPPoEPADI:
		return CallPPPoE, true
	case L2TPICRQ:
		return CallVPDN, true
	case SIPInvite:
		return CallSIP, true
	}
	return 0, false
}
