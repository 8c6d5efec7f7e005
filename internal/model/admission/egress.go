package admission

import (
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
)

// EgressVerdict is what the egress program does with a frame going out:
// it goes on, or an INVITE toward a session agent is refused (dropped and
// handed up to be answered on the agent's behalf) for Reason.
type EgressVerdict struct {
	Refused bool
	Reason  cac.EgressReason
	Agent   int
	// ACK is set for the server's ACK of an answer given on the agent's
	// behalf: dropped, and handed up to nobody.
	ACK bool
}

// EgressCounts are an agent's egress counters, as struct
// cac_egress_counts has them.
type EgressCounts struct {
	Invites, Retransmits uint64
	Refused              [cac.NumEgressReasons]uint64
	Unanswered, ACKs     uint64
}

// SetAgentOut holds agent i out of service in every realm, or not, as the
// daemon writes the agent_state map.
func (m *Model) SetAgentOut(i int, out bool) { m.agentOut[i] = out }

// EgressCountsOf are agent i's egress counters.
func (m *Model) EgressCountsOf(i int) EgressCounts { return m.egressCounts[i] }

// Egress is the egress program bpf/tc_dialogs.c on a frame the SIP server
// behind the filter sends out.
//
// An INVITE out of dialog, over UDP to or from a SIP port, toward a
// session agent is judged (bpf/egress.h, docs/design.md "Egress
// admission"): a retransmission of one sent within Timer B goes on
// uncharged; else one toward an agent held out of service with fail-fast
// is refused for agent-down, and one over the agent's connection limit for
// connection; one that goes on takes a connection token and is
// remembered by its transaction. A refused INVITE takes nothing and opens
// no dialog. Every INVITE that goes on puts its Call-ID in the dialog
// table, so that the requests of that dialog coming back pass uncharged
// (docs/design.md, "Dialogs the server opens"); a dialog the table knows
// keeps its entry, as egress_learn inserts only what is not there.
//
// An L2TP control message the LNS sends goes to the tunnel table, and may
// have its Nr translated in frame (docs/design.md "Refusing an ICRQ").
//
// The server's ACK toward an agent of an INVITE refused there within
// Timer B is dropped too: the agent never had that transaction.
//
// The model hands up every refusal: the per-CPU budget of bpf/egress.h
// is beyond what a test sends.
func (m *Model) Egress(frame []byte, now uint64) EgressVerdict {
	if at, ok := classify.FindL2TP(frame, m.Ports, true); ok {
		m.table().FromLNS(frame, at, now)
		return EgressVerdict{}
	}
	r, msg := m.sip.ClassifySIPEgress(frame, m.Ports)
	if r.Kind == cac.InDialog {
		return m.egressACK(frame, msg, now)
	}
	if r.Kind == cac.Other {
		m.answer(msg, classify.ResponseCode(msg))
		return EgressVerdict{}
	}
	if r.Kind != cac.Session || r.Class != cac.SIPInvite {
		return EgressVerdict{}
	}
	if v := m.egressInvite(frame, msg, now); v.Refused {
		return v
	}
	family, addr := classify.DestOf(frame)
	m.learnDialog(m.sip.CallID(msg), now, classify.Source{Family: family, Addr: addr}.Peer())
	return EgressVerdict{}
}

// egressInvite is egress_invite.
func (m *Model) egressInvite(frame, msg []byte, now uint64) EgressVerdict {
	family, addr := classify.DestOf(frame)
	if family == 0 {
		return EgressVerdict{}
	}
	agent, ok := m.agentAddrs[addrOf(classify.Source{Family: family, Addr: addr})]
	if !ok || agent >= len(m.policy.Agents) {
		return EgressVerdict{}
	}
	c := &m.egressCounts[agent]
	callid, txn := m.sip.Txn(msg)
	if sent, ok := m.egressTxns[callid]; callid != 0 && ok && txn != 0 && sent.txn == txn && now-sent.ns < TimerBNS {
		c.Retransmits++
		return EgressVerdict{}
	}
	a := m.policy.Agents[agent]
	v := EgressVerdict{Refused: true, Agent: agent}
	var took, full bool
	if !(a.FailFast && m.agentOut[agent]) {
		took, full = m.connectionTake(callid, agent)
	}
	switch {
	case a.FailFast && m.agentOut[agent]:
		v.Reason = cac.EgressAgentDown
	case full:
		v.Reason = cac.EgressCapacity
	case !m.connections[agent].Take(a.Connection, now):
		if took { // handed up and answered: the session goes back
			m.GiveBack(connectionKey(callid, agent))
		}
		v.Reason = cac.EgressConnection
	default:
		c.Invites++
		if callid != 0 {
			if m.egressTxns == nil {
				m.egressTxns = map[uint64]egressSent{}
			}
			m.egressTxns[callid] = egressSent{ns: now, txn: txn, agent: agent}
			delete(m.egressRefused, callid)
		}
		return EgressVerdict{}
	}
	c.Refused[v.Reason]++
	if callid != 0 {
		if m.egressRefused == nil {
			m.egressRefused = map[uint64]uint64{}
		}
		m.egressRefused[callid] = now
	}
	return v
}

// egressACK is egress_ack: the server's ACK toward an agent of a Call-ID
// whose INVITE was refused within Timer B is dropped (Refused, with no
// reason to hand up: nothing answers an ACK).
func (m *Model) egressACK(frame, msg []byte, now uint64) EgressVerdict {
	if !classify.IsACK(msg) {
		return EgressVerdict{}
	}
	family, addr := classify.DestOf(frame)
	agent, ok := m.agentAddrs[addrOf(classify.Source{Family: family, Addr: addr})]
	if family == 0 || !ok || agent >= len(m.policy.Agents) {
		return EgressVerdict{}
	}
	callid := m.sip.CallID(msg)
	if at, ok := m.egressRefused[callid]; callid == 0 || !ok || now-at >= TimerBNS {
		return EgressVerdict{}
	}
	m.egressCounts[agent].ACKs++
	return EgressVerdict{Refused: true, Agent: agent, ACK: true}
}

// egressSent is struct cac_sent: an INVITE that went on toward an agent.
type egressSent struct {
	ns, txn uint64
	agent   int
}

// AnswersSent is answers_sent of bpf/verdict.h: whether a response of
// agent answers an INVITE the server sent toward that agent within Timer
// B, by its Call-ID.
func (m *Model) AnswersSent(msg []byte, agent int, now uint64) bool {
	callid := m.sip.CallID(msg)
	sent, ok := m.egressTxns[callid]
	return callid != 0 && ok && sent.agent == agent && now-sent.ns < TimerBNS
}
