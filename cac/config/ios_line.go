package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// callKeywords are what IOS accepts after `call` in global configuration
// (broadband and voice images). An abbreviation is accepted only when it
// is unambiguous among them, as IOS has it: `call a` could be admission
// or application, `call adm` is admission.
var callKeywords = []string{"admission", "application", "fallback", "filter", "history", "rsvp-sync", "spike", "threshold", "treatment"}

// admissionKeywords follow `call admission`. pppoa is among them, though
// refused, so that `ppp` is as ambiguous here as on the router.
var admissionKeywords = []string{"new-model", "limit", "cpu-limit", "load", "pppoe", "pppoa", "vpdn", "sip"}

// expand is the keyword word stands for: itself, or the one keyword it
// begins. IOS takes an exact keyword over longer ones it begins.
func expand(word string, keywords []string) (string, error) {
	if slices.Contains(keywords, word) {
		return word, nil
	}
	var cands []string
	for _, k := range keywords {
		if strings.HasPrefix(k, word) {
			cands = append(cands, k)
		}
	}
	switch len(cands) {
	case 1:
		return cands[0], nil
	case 0:
		return "", fmt.Errorf("unknown keyword %q (want one of %s)", word, strings.Join(keywords, ", "))
	}
	return "", fmt.Errorf("%q is ambiguous: it could be %s; write more of it", word, strings.Join(cands, " or "))
}

// iosArg is one number of an IOS line, with the range IOS gives it.
type iosArg struct {
	what     string
	min, max uint64
}

// iosForm is what follows one keyword.
type iosForm struct {
	usage string
	args  []iosArg
}

var chargeForm = iosForm{"<charge 1-1000000> <lifetime 1-300>",
	[]iosArg{{"the charge", 1, 1e6}, {"the lifetime in seconds", 1, MaxChargeLifetime}}}

var iosForms = map[string]iosForm{
	"new-model": {},
	"limit":     {"<1-1000000000>", []iosArg{{"the limit", 1, 1e9}}},
	"cpu-limit": {"<1-100>", []iosArg{{"the CPU limit", 1, 100}}},
	"load":      {"<multiplier 1-1000000> <lifetime 1-3600>", []iosArg{{"the multiplier", 1, 1e6}, {"the lifetime in seconds", 1, 3600}}},
	"pppoa":     chargeForm,
	"pppoe":     chargeForm,
	"vpdn":      chargeForm,
	"sip":       chargeForm,
}

// iosLine reads one line, its comment cut off: `[no] call admission
// <keyword> <numbers>`, in any letter case and with keywords abbreviated.
func (d *decoder) iosLine(at *yaml.Node, path, text string, b *iosBlock) {
	words := strings.Fields(strings.ToLower(text))
	no := words[0] == "no"
	if no {
		words = words[1:]
	}
	if len(words) == 0 || words[0] != "call" {
		// `cal` would be ambiguous on the router too (call-home).
		d.errorf(at, path, "%q is not a `call admission` line", strings.TrimSpace(text))
		return
	}
	if len(words) < 3 {
		d.errorf(at, path, "%q: want `call admission <keyword>` (keywords: %s)", strings.TrimSpace(text), strings.Join(admissionKeywords, ", "))
		return
	}
	kw, err := expand(words[1], callKeywords)
	if err == nil && kw != "admission" {
		err = fmt.Errorf("`call %s` is not call admission; only call admission lines belong here", kw)
	}
	if err == nil {
		kw, err = expand(words[2], admissionKeywords)
	}
	if err != nil {
		d.errorf(at, path, "%q: %v", strings.TrimSpace(text), err)
		return
	}
	d.iosSetting(at, path, kw, words[3:], no, b)
}

// iosSetting puts one setting in force, or with no takes it away. A `no`
// line may repeat the numbers of the line it undoes, as the router
// accepts, and they are checked as that line's would be.
func (d *decoder) iosSetting(at *yaml.Node, path, kw string, args []string, no bool, b *iosBlock) {
	form := iosForms[kw]
	if kw == "pppoa" && !no {
		d.errorf(at, path, "call admission pppoa: PPPoA runs over ATM, not Ethernet; xdpcac cannot see it (use pppoe, vpdn or sip)")
		return
	}
	if no && len(args) == 0 {
		b.unset(kw)
		return
	}
	if len(args) != len(form.args) {
		neg := ""
		if no {
			neg = "no "
		}
		d.errorf(at, path, "want `%scall admission %s %s`", neg, kw, form.usage)
		return
	}
	v := make([]uint64, len(args))
	for i, a := range form.args {
		n, err := strconv.ParseUint(args[i], 10, 32)
		if err != nil || n < a.min || n > a.max {
			d.errorf(at, path, "call admission %s: %s must be from %d to %d, got %q", kw, a.what, a.min, a.max, args[i])
			return
		}
		v[i] = n
	}
	if no {
		b.unset(kw)
		return
	}
	b.put(kw, v)
	b.set(kw, at)
}

// put writes the numbers of a checked line into the setting it names.
func (b *iosBlock) put(kw string, v []uint64) {
	switch kw {
	case "new-model":
		b.ca.NewModel = true
	case "limit":
		l := uint32(v[0])
		b.ca.Limit = &l
	case "cpu-limit":
		p := uint8(v[0])
		b.ca.CPULimit = &p
	case "load":
		b.ca.Load = &Charge{Charge: uint32(v[0]), Lifetime: time.Duration(v[1]) * time.Second}
	default:
		b.ca.Charges[kw] = Charge{Charge: uint32(v[0]), Lifetime: time.Duration(v[1]) * time.Second}
	}
}
