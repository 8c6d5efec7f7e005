package maps

import (
	"testing"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/admission"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	"github.com/xdpcac/xdpcac/internal/model/l2tp"
)

// TestSharedNumbers holds every number the Go side keeps of its own to the
// enum of bpf/shared.h that bpf2go generated from the object: classes,
// reasons and the other enumerations by each value, sizes and bounds by
// the Go constant the code uses.
func TestSharedNumbers(t *testing.T) {
	for _, c := range []struct {
		name      string
		inGo, inC uint64
	}{
		{"pppoe-padi", uint64(cac.PPPoEPADI), uint64(bpf.XdpCacClassCAC_CLASS_PPPOE_PADI)},
		{"pppoe-padr", uint64(cac.PPPoEPADR), uint64(bpf.XdpCacClassCAC_CLASS_PPPOE_PADR)},
		{"l2tp-sccrq", uint64(cac.L2TPSCCRQ), uint64(bpf.XdpCacClassCAC_CLASS_L2TP_SCCRQ)},
		{"l2tp-icrq", uint64(cac.L2TPICRQ), uint64(bpf.XdpCacClassCAC_CLASS_L2TP_ICRQ)},
		{"sip-invite", uint64(cac.SIPInvite), uint64(bpf.XdpCacClassCAC_CLASS_SIP_INVITE)},
		{"sip-options", uint64(cac.SIPOptions), uint64(bpf.XdpCacClassCAC_CLASS_SIP_OPTIONS)},
		{"sip-register", uint64(cac.SIPRegister), uint64(bpf.XdpCacClassCAC_CLASS_SIP_REGISTER)},
		{"sip-other", uint64(cac.SIPOther), uint64(bpf.XdpCacClassCAC_CLASS_SIP_OTHER)},
		{"sip-indialog", uint64(cac.SIPInDialog), uint64(bpf.XdpCacClassCAC_CLASS_SIP_INDIALOG)},
		{"malformed", uint64(cac.ClassMalformed), uint64(bpf.XdpCacClassCAC_CLASS_MALFORMED)},
		{"classes", uint64(cac.NumClasses), uint64(bpf.XdpCacClassCAC_NUM_CLASSES)},

		{"stale", uint64(cac.ReasonStale), uint64(bpf.XdpCacReasonCAC_REASON_STALE)},
		{"cpu-limit", uint64(cac.ReasonCPULimit), uint64(bpf.XdpCacReasonCAC_REASON_CPU_LIMIT)},
		{"buffers", uint64(cac.ReasonBuffers), uint64(bpf.XdpCacReasonCAC_REASON_BUFFERS)},
		{"source", uint64(cac.ReasonSource), uint64(bpf.XdpCacReasonCAC_REASON_SOURCE)},
		{"account", uint64(cac.ReasonAccount), uint64(bpf.XdpCacReasonCAC_REASON_ACCOUNT)},
		{"customer", uint64(cac.ReasonCustomer), uint64(bpf.XdpCacReasonCAC_REASON_CUSTOMER)},
		{"agent", uint64(cac.ReasonAgent), uint64(bpf.XdpCacReasonCAC_REASON_AGENT)},
		{"class", uint64(cac.ReasonClass), uint64(bpf.XdpCacReasonCAC_REASON_CLASS)},
		{"environment", uint64(cac.ReasonEnvironment), uint64(bpf.XdpCacReasonCAC_REASON_ENVIRONMENT)},
		{"session-charges", uint64(cac.ReasonSessionCharges), uint64(bpf.XdpCacReasonCAC_REASON_SESSION_CHARGES)},
		{"total-charge", uint64(cac.ReasonTotalCharge), uint64(bpf.XdpCacReasonCAC_REASON_TOTAL_CHARGE)},
		{"reason malformed", uint64(cac.ReasonMalformed), uint64(bpf.XdpCacReasonCAC_REASON_MALFORMED)},
		{"capacity", uint64(cac.ReasonCapacity), uint64(bpf.XdpCacReasonCAC_REASON_CAPACITY)},
		{"reasons", uint64(cac.NumReasons), uint64(bpf.XdpCacReasonCAC_NUM_REASONS)},

		{"unwatched", uint64(cac.Unwatched), uint64(bpf.XdpCacVerdictKindCAC_KIND_UNWATCHED)},
		{"session", uint64(cac.Session), uint64(bpf.XdpCacVerdictKindCAC_KIND_CLASS)},
		{"other", uint64(cac.Other), uint64(bpf.XdpCacVerdictKindCAC_KIND_OTHER)},
		{"in dialog", uint64(cac.InDialog), uint64(bpf.XdpCacVerdictKindCAC_KIND_INDIALOG)},
		{"fragment", uint64(cac.Fragment), uint64(bpf.XdpCacVerdictKindCAC_KIND_FRAGMENT)},
		{"kind malformed", uint64(cac.Malformed), uint64(bpf.XdpCacVerdictKindCAC_KIND_MALFORMED)},

		{"port none", uint64(cac.PortNone), uint64(bpf.XdpCacPortKindCAC_PORT_NONE)},
		{"port l2tp", uint64(cac.PortL2TP), uint64(bpf.XdpCacPortKindCAC_PORT_L2TP)},
		{"port sip", uint64(cac.PortSIP), uint64(bpf.XdpCacPortKindCAC_PORT_SIP)},

		{"level environment", uint64(policy.LevelEnvironment), uint64(bpf.XdpCacLevelCAC_LEVEL_ENVIRONMENT)},
		{"levels", uint64(policy.NumLevels), uint64(bpf.XdpCacLevelCAC_NUM_LEVELS)},

		{"policy slot", uint64(policySlot), uint64(bpf.XdpCacPolicyPOLICY_SLOT)},
		{"policy agents", uint64(policyAgents), uint64(bpf.XdpCacPolicyPOLICY_AGENTS)},
		{"policy cli rules", uint64(policyCLIRules), uint64(bpf.XdpCacPolicyPOLICY_CLI_RULES)},
		{"policy called rules", uint64(policyCalledRules), uint64(bpf.XdpCacPolicyPOLICY_CALLED_RULES)},
		{"policy user rules", uint64(policyCLIRules | policyCalledRules), uint64(bpf.XdpCacPolicyPOLICY_USER_RULES)},

		{"rule source", uint64(policy.RuleSource), uint64(bpf.XdpCacUserRuleCAC_RULE_SOURCE)},
		{"rule cli", uint64(policy.RuleCLI), uint64(bpf.XdpCacUserRuleCAC_RULE_CLI)},
		{"rule called", uint64(policy.RuleCalled), uint64(bpf.XdpCacUserRuleCAC_RULE_CALLED)},
		{"user max", uint64(policy.UserMax), uint64(bpf.XdpCacUserRuleCAC_USER_MAX)},
		{"user max in classify", uint64(classify.UserMax), uint64(bpf.XdpCacUserRuleCAC_USER_MAX)},
		{"uri scan max", uint64(classify.URIScanMax), uint64(bpf.XdpCacUserRuleCAC_URI_SCAN_MAX)},

		{"source ip", uint64(policy.SourceIP), uint64(bpf.XdpCacSourceKeyCAC_SOURCE_IP)},
		{"source mac", uint64(policy.SourceMAC), uint64(bpf.XdpCacSourceKeyCAC_SOURCE_MAC)},
		{"source mac-vlan", uint64(policy.SourceMACVLAN), uint64(bpf.XdpCacSourceKeyCAC_SOURCE_MAC_VLAN)},
		{"source vlan", uint64(policy.SourceVLAN), uint64(bpf.XdpCacSourceKeyCAC_SOURCE_VLAN)},

		{"pppoe", uint64(cac.CallPPPoE), uint64(bpf.XdpCacCallTypeCAC_CALL_PPPOE)},
		{"vpdn", uint64(cac.CallVPDN), uint64(bpf.XdpCacCallTypeCAC_CALL_VPDN)},
		{"sip", uint64(cac.CallSIP), uint64(bpf.XdpCacCallTypeCAC_CALL_SIP)},
		{"call types", uint64(cac.NumCallTypes), uint64(bpf.XdpCacCallTypeCAC_NUM_CALL_TYPES)},

		{"tick", policy.TickNS, uint64(bpf.XdpCacChargeRingSizeCAC_TICK_NS)},
		{"ring", policy.RingTicks, uint64(bpf.XdpCacChargeRingSizeCAC_RING)},
		{"lifetime", policy.MaxLifetimeTicks, uint64(bpf.XdpCacChargeRingSizeCAC_MAX_LIFETIME_TICKS)},
		{"lifetime in seconds", config.MaxChargeLifetime * 1e9 / policy.TickNS, uint64(bpf.XdpCacChargeRingSizeCAC_MAX_LIFETIME_TICKS)},

		{"static", uint64(policy.StaleStatic), uint64(bpf.XdpCacOnStaleCAC_STALE_STATIC)},
		{"open", uint64(policy.StaleOpen), uint64(bpf.XdpCacOnStaleCAC_STALE_OPEN)},
		{"closed", uint64(policy.StaleClosed), uint64(bpf.XdpCacOnStaleCAC_STALE_CLOSED)},

		{"accounts", config.MaxAccounts, uint64(bpf.XdpCacCapacityCAC_MAX_ACCOUNTS)},
		{"customers", config.MaxCustomers, uint64(bpf.XdpCacCapacityCAC_MAX_CUSTOMERS)},
		{"agents", config.MaxAgents, uint64(bpf.XdpCacCapacityCAC_MAX_AGENTS)},
		{"agent addresses", uint64(MaxAgentAddrs), uint64(bpf.XdpCacCapacityCAC_MAX_AGENT_ADDRS)},

		{"vlans", uint64(len(bpf.XdpCacSource{}.Vlan)), uint64(bpf.XdpCacFrameBoundCAC_MAX_VLANS)},

		{"scan", classify.SIPScanMax, uint64(bpf.XdpCacSipBoundSIP_SCAN_MAX)},
		{"lines", classify.SIPMaxLines, uint64(bpf.XdpCacSipBoundSIP_MAX_LINES)},
		{"to", classify.SIPToMax, uint64(bpf.XdpCacSipBoundSIP_TO_MAX)},
		{"to steps", classify.SIPToSteps, uint64(bpf.XdpCacSipBoundSIP_TO_STEPS)},
		{"spaces", classify.SIPWSMax, uint64(bpf.XdpCacSipBoundSIP_WS_MAX)},
		{"lead", classify.SIPLeadMax, uint64(bpf.XdpCacSipBoundSIP_LEAD_MAX)},

		{"agent response", uint64(SIPAgentResponse), uint64(bpf.XdpCacSipEventKindCAC_SIP_AGENT_RESPONSE)},
		{"rejected", uint64(SIPRejected), uint64(bpf.XdpCacSipEventKindCAC_SIP_REJECTED)},
		{"egress refused", uint64(SIPEgressRefused), uint64(bpf.XdpCacSipEventKindCAC_SIP_EGRESS_REFUSED)},
		{"session", uint64(SIPSession), uint64(bpf.XdpCacSipEventKindCAC_SIP_SESSION)},
		{"session limits", SessionLimits, uint64(bpf.XdpCacCapacityCAC_MAX_SESSION_LIMITS)},
		{"leases", uint64(policy.MaxLeases), uint64(bpf.XdpCacCapacityCAC_MAX_LEASES)},
		{"call admission lease", uint64(policy.LeaseCallAdmission), uint64(bpf.XdpCacCapacityCAC_LEASE_CALL_ADMISSION)},
		{"connection", uint64(cac.EgressConnection), uint64(bpf.XdpCacEgressReasonCAC_EGRESS_CONNECTION)},
		{"agent down", uint64(cac.EgressAgentDown), uint64(bpf.XdpCacEgressReasonCAC_EGRESS_AGENT_DOWN)},
		{"egress reasons", uint64(cac.NumEgressReasons), uint64(bpf.XdpCacEgressReasonCAC_NUM_EGRESS_REASONS)},
		{"egress refused counters", uint64(len(EgressCounts{}.Refused)), uint64(len(bpf.XdpCacEgressCounts{}.Refused))},

		{"other sources", uint64(sourceOthers), uint64(bpf.XdpCacRejectRecordCAC_SOURCE_OTHERS)},

		{"timer b", admission.TimerBNS, uint64(bpf.XdpCacRetransmitCAC_TIMER_B_S) * 1e9},
		{"cancel", admission.CancelNS, uint64(bpf.XdpCacRetransmitCAC_CANCEL_S) * 1e9},
		{"retransmits", admission.RetransmitsMax, uint64(bpf.XdpCacRetransmitCAC_RETRANSMITS_MAX)},
		{"dialog cps", admission.DialogCPS, uint64(bpf.XdpCacDialogBucketCAC_DIALOG_CPS)},
		{"dialog burst", admission.DialogBurst, uint64(bpf.XdpCacDialogBucketCAC_DIALOG_BURST)},
		{"dialog idle", admission.DialogIdleNS, uint64(bpf.XdpCacDialogBucketCAC_DIALOG_IDLE_S) * 1e9},
		{"refused per second", admission.RefusedNewPerSecond, uint64(bpf.XdpCacRetransmitREFUSED_NEW_PER_SECOND)},

		{"to lns", l2tp.ToLNS, uint64(bpf.XdpCacL2tpDirCAC_L2TP_TO_LNS)},
		{"to lac", l2tp.ToLAC, uint64(bpf.XdpCacL2tpDirCAC_L2TP_TO_LAC)},
		{"idle", l2tp.IdleNS, uint64(bpf.XdpCacL2tpBoundCAC_L2TP_IDLE_S) * 1e9},
		{"close hold", l2tp.CloseHoldNS, uint64(bpf.XdpCacL2tpBoundCAC_L2TP_CLOSE_HOLD_S) * 1e9},
	} {
		if c.inGo != c.inC {
			t.Errorf("%s: %d in Go, %d in bpf/shared.h", c.name, c.inGo, c.inC)
		}
	}
	// The policy word's class bits lie between the slot and the agents.
	if policyLimited(cac.Class(0)) != uint32(bpf.XdpCacPolicyPOLICY_LIMITED_FIRST) ||
		policyLimited(cac.Class(cac.NumClasses-1)) >= policyAgents {
		t.Errorf("policy word: class bits from %#x to %#x, agents %#x",
			policyLimited(0), policyLimited(cac.Class(cac.NumClasses-1)), policyAgents)
	}
}
