package workload

import "github.com/reloader/reloader/policy"

// Dependent is a workload that reloads on a config, with what the rule says of it.
type Dependent struct {
	Workload Key
	Judgement
}

// Judgement is what the rule says of one workload and one config (policy.Judgement): the value
// its marker should hold, the keys it reads (nil: all), whether it must be reloaded, and why.
type Judgement struct {
	Change    policy.Change
	Keys      []string
	Reload    bool
	Vouched   bool // the pods run the content though the marker may say another (reloader/runs/unseen.go)
	Behind    bool // the config exists and the marker does not say that the pods run its content
	Untouched bool // a deleted config the workload carries no marker of, and its deletion does not reload it
	ByState   bool // the config exists and the workload carries no marker of it: the state decides
	Stripped  bool // no marker, and what the workload was noted to run decides (reloader/runs/strips.go)
	StaleHold bool // a hold names another content: it has ended
	Held      bool // a hold names its content: its reload was rolled back (safe/track.go)
	Own       bool // policy.Judgement.OwnMarker
	Reason    policy.Reason
}

// OwnMarker reports whether the workload's own marker says what its pods run of the config
// (policy.Judgement.OwnMarker).
func (j Judgement) OwnMarker() bool { return j.Own }

// JudgementOf is pj as the syncs read it.
func JudgementOf(pj policy.Judgement) Judgement {
	return Judgement{Change: pj.Change, Keys: pj.Keys, Reload: pj.Reload, Vouched: pj.Vouched, Behind: pj.Behind,
		Untouched: pj.Untouched, ByState: pj.ByState, Stripped: pj.Stripped, StaleHold: pj.StaleHold, Held: pj.Held,
		Own: pj.OwnMarker(), Reason: pj.Reason}
}
