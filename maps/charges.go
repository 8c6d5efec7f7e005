package maps

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
)

func admissionOf(ca policy.CallAdmission) bpf.XdpCacAdmission {
	v := bpf.XdpCacAdmission{
		LimitMilli:    ca.LimitMilli,
		StaleAfterNs:  ca.StaleAfterNS,
		CpuLimitMilli: ca.CPULimitMilli,
		OnStale:       uint8(ca.OnStale),
	}
	if ca.NewModel {
		v.NewModel = 1
	}
	if ca.Fleet {
		v.Fleet = 1
	}
	for t, c := range ca.Charges {
		v.Type[t].Charge = c.Charge
		v.Type[t].LifetimeTicks = c.LifetimeTicks
	}
	return v
}

// InputMaps are the maps the control plane writes its measurements to.
type InputMaps struct {
	Slot   *ebpf.Map // inputs_slot: the slot in force
	Inputs *ebpf.Map // two slots of struct cac_inputs
}

// InputMapsOf picks the input maps out of the program's maps.
func InputMapsOf(o *bpf.XdpMaps) InputMaps {
	return InputMaps{Slot: o.InputsSlot, Inputs: o.Inputs}
}

// WriteInputs puts measurements in force as WritePolicy puts limits: into
// the slot not in use, then a switch of one word, so that no check sees a
// heartbeat of one write with the load of another. Writes come at most
// every 100 ms, far longer than a program holds a slot, so the slot it
// fills is never still being read.
func WriteInputs(im InputMaps, in policy.Inputs) error {
	var active uint32
	if err := im.Slot.Lookup(uint32(0), &active); err != nil {
		return fmt.Errorf("read inputs slot: %w", err)
	}
	next := 1 - active&1
	v := bpf.XdpCacInputs{HeartbeatNs: in.HeartbeatNS, LoadMilli: in.LoadMilli, CpuMilli: in.CPUMilli, CpuAvgMilli: in.CPUAverageMilli}
	if in.BuffersFull {
		v.BuffersFull = 1
	}
	if err := im.Inputs.Update(next, &v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("write inputs: %w", err)
	}
	if err := im.Slot.Update(uint32(0), next, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("switch inputs slot: %w", err)
	}
	return nil
}

// ReadInputs returns the measurements in force.
func ReadInputs(im InputMaps) (policy.Inputs, error) {
	var slot uint32
	if err := im.Slot.Lookup(uint32(0), &slot); err != nil {
		return policy.Inputs{}, fmt.Errorf("read inputs slot: %w", err)
	}
	var v bpf.XdpCacInputs
	if err := im.Inputs.Lookup(slot&1, &v); err != nil {
		return policy.Inputs{}, fmt.Errorf("read inputs: %w", err)
	}
	return policy.Inputs{
		HeartbeatNS: v.HeartbeatNs, LoadMilli: v.LoadMilli, CPUMilli: v.CpuMilli,
		BuffersFull: v.BuffersFull != 0, CPUAverageMilli: v.CpuAvgMilli,
	}, nil
}

// ReadChargeRings returns the charge ring of every call type.
func ReadChargeRings(m *ebpf.Map) (*[cac.NumCallTypes]policy.ChargeRing, error) {
	var rings [cac.NumCallTypes]policy.ChargeRing
	for t := range rings {
		var v bpf.XdpCacChargeRing
		if err := m.Lookup(uint32(t), &v); err != nil {
			return nil, fmt.Errorf("read charge ring of %v: %w", cac.CallType(t), err)
		}
		rings[t] = policy.ChargeRing{Total: v.Total, Tick: v.Tick, Snap: v.Snap}
	}
	return &rings, nil
}

// ReadCallAdmission returns the call admission in force.
func ReadCallAdmission(pm PolicyMaps) (policy.CallAdmission, error) {
	v, err := readLimits(pm)
	if err != nil {
		return policy.CallAdmission{}, err
	}
	ca := policy.CallAdmission{
		LimitMilli:    v.Cac.LimitMilli,
		NewModel:      v.Cac.NewModel != 0,
		CPULimitMilli: v.Cac.CpuLimitMilli,
		OnStale:       policy.OnStale(v.Cac.OnStale),
		StaleAfterNS:  v.Cac.StaleAfterNs,
	}
	for t := range ca.Charges {
		ca.Charges[t] = policy.Charge{Charge: v.Cac.Type[t].Charge, LifetimeTicks: v.Cac.Type[t].LifetimeTicks}
	}
	return ca, nil
}
