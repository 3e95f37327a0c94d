package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// The rule, in process: reload is a violation; a hold only where the oracle knows it holds.
func TestExplainsAnswerAtASettledPointIsJudgedByWhatTheOracleKnowsHolds(t *testing.T) {
	t.Parallel()
	report := func(next string, reload bool) ExplainReport {
		var r ExplainReport
		r.Next = next
		r.Configs = []reloader.Config{{Kind: "ConfigMap", Name: "cm-0", Reload: reload, Why: policy.MarkerStale.String()}, {Kind: "Secret", Name: "sec-0"}}
		return r
	}
	free := ExplainTarget{Kind: KindDeployment, Name: "w-1"}
	held := ExplainTarget{Kind: KindDeployment, Name: "w-1", gated: true, invalid: true}
	known := ExplainTarget{Kind: KindDeployment, Name: "w-1", remembered: map[string]bool{"cm-0": true}}
	other := report("reload", true)
	other.Configs[0].Why = policy.StateDiffers.String()
	forged := ExplainTarget{Kind: KindDeployment, Name: "w-1", forged: map[string]bool{"cm-0": true}}
	stripped := report("reload", true)
	stripped.Configs[0].Why = policy.StripStale.String()
	// With the hash key Secret deleted explain ignores Secrets, and so one that does not
	// validate, which holds the workload.
	secretHeld := ExplainTarget{Kind: KindDeployment, Name: "w-1", invalid: true, invalidSecret: true, withoutSecrets: true}
	secretSeen := ExplainTarget{Kind: KindDeployment, Name: "w-1", invalid: true, invalidSecret: true}
	configMapHeld := ExplainTarget{Kind: KindDeployment, Name: "w-1", invalid: true, withoutSecrets: true}
	for _, c := range []struct {
		name   string
		tg     ExplainTarget
		rep    ExplainReport
		out    bool
		want   string // a prefix of the violation; "" for none
		reason string
	}{
		{"up to date", free, report("up-to-date", false), false, "", "nothing to do"},
		{"reload", free, report("reload", true), false, "disagree: explain says w-1 reloads for [ConfigMap/cm-0] (why: the marker says the pods run another content), but the settled controller does not", "a fresh start would restart it"},
		{"reload, held where the oracle knows", held, report("reload", true), false, "disagree: explain says w-1 reloads", "the oracle's holds excuse no reload"},
		{"gated where the oracle knows", held, report("held-by-gate", true), false, "", "the final round opens it"},
		{"gated where the oracle knows no gate", free, report("held-by-gate", true), false, "disagree: explain says w-1 is held-by-gate for [ConfigMap/cm-0]", "a gate the checker never set"},
		{"invalid where the oracle knows", held, report("held-invalid", true), false, "", "the content does not validate"},
		{"invalid where the oracle knows none", free, report("held-invalid", true), false, "disagree: explain says w-1 is held-invalid", "a content the checker wrote valid"},
		{"suspended", held, report("held-suspended", true), false, "disagree: explain says w-1 is held-suspended", "the checker suspends no CronJob"},
		{"reload the running reloader knows its pods need not", known, report("reload", true), false, "", "its memory of the last restart"},
		{"reload it knows for another reason", known, other, false, "disagree: explain says w-1 reloads for [ConfigMap/cm-0] (why: there is no marker", "only a stale marker is excused"},
		{"reload for a forged strip no process loaded", forged, stripped, false, "", "the running reloader writes it away; a start restarts once"},
		{"reload for a strip, none forged", free, stripped, false, "disagree: explain says w-1 reloads for [ConfigMap/cm-0] (why: there is no marker, and the reloader's note", "only a forged strip is excused"},
		{"reload for a stale marker where a strip was forged", forged, report("reload", true), false, "disagree: explain says w-1 reloads for [ConfigMap/cm-0] (why: the marker says", "the strip decides only without a marker"},
		{"reload, held by a Secret explain ignored", secretHeld, report("reload", true), false, "", "the key Secret deleted: explain judges no Secret"},
		{"gated, held by a Secret explain ignored", secretHeld, report("held-by-gate", true), false, "", "the planner puts content that does not validate first"},
		{"reload, held by a Secret explain judged", secretSeen, report("reload", true), false, "disagree: explain says w-1 reloads", "explain saw it valid"},
		{"reload, held by a ConfigMap, Secrets ignored", configMapHeld, report("reload", true), false, "disagree: explain says w-1 reloads", "explain judges ConfigMaps"},
		{"not watched while out", free, report(reloader.NextNotWatched, false), true, "", "out of the selection"},
		{"not watched while in", free, report(reloader.NextNotWatched, false), false, "disagree: explain says the reloader does not watch w-1", "in the selection"},
	} {
		got := string(Disagreement(c.tg, c.rep, c.out))
		if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("%s (%s): got %q, want %q", c.name, c.reason, got, c.want)
		}
	}
}

// The running reloader remembers what its last restart's pods read until a process starts.
func TestTheRunningReloaderRemembersWhatItsLastRestartsPodsRead(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	v := func(x string) Content { return Content{"a": x, "b": x} }
	r := NewRecorder(Sequence{})
	r.configs["cm-1"] = []configEvent{{rv: 1, at: at(0), exists: true, data: v("1")}, {rv: 5, at: at(10), exists: true, data: v("2")}}
	w := &WorkloadLife{name: "w-0", refs: []Ref{{Config: "cm-1", Whole: true}}, modes: []modeEvent{{at: at(0), mode: ModeAuto}},
		restarts: []int64{3, 6}, restartAt: []time.Time{at(5), at(11)}}
	r.starts, r.acting = []time.Time{at(1)}, []time.Time{at(1)}
	if !r.reads.remembered(w, "cm-1") {
		t.Error("a restart after the config's last write, by the process running since: not remembered")
	}
	r.own[6] = true
	if r.reads.remembered(w, "cm-1") {
		t.Error("the checker's own restart counted as the reloader's memory")
	}
	r.own[6] = false
	r.configs["cm-1"] = append(r.configs["cm-1"], configEvent{rv: 7, at: at(12), exists: true, data: v("3")})
	if r.reads.remembered(w, "cm-1") {
		t.Error("a write after the last restart counted as read by its pods")
	}
	r.configs["cm-1"][1] = configEvent{rv: 5, at: at(10)} // deleted before the restart: its pods wait for it
	if !r.reads.remembered(w, "cm-1") {
		t.Error("pods restarted while the config was absent, which started on its recreation: not remembered")
	}
	r.starts, r.acting = append(r.starts, at(13)), append(r.acting, at(13))
	if r.reads.remembered(w, "cm-1") {
		t.Error("a process started after the restart counted as remembering it")
	}
	r.acting[1] = at(10) // its start-up pass made the restart, before it was seen ready
	if !r.reads.remembered(w, "cm-1") {
		t.Error("a restart by a start-up pass, made before its process was seen ready: not remembered")
	}
}

// When a process began to act is the time of its log's line that says its caches synced.
func TestAProcessBeginsToActWhenItsLogSaysItsCachesSynced(t *testing.T) {
	t.Parallel()
	log := `time=2026-12-03T17:18:16.032Z level=INFO msg=starting version=dev namespaces=""
time=2026-12-03T17:18:16.179Z level=INFO msg="caches synced; reloading" namespace="" coalesce_period=1s strategy=env-vars kinds=5
time=2026-12-03T17:18:16.197Z level=INFO msg="reloaded workload" kind=StatefulSet name=w-2
time=2026-12-03T17:18:19.000Z level=INFO msg="caches synced; reloading" namespace=other coalesce_period=1s strategy=env-vars kinds=5
`
	want := time.Date(2026, 12, 3, 17, 18, 16, 179_000_000, time.UTC)
	if got := ActingFrom(log); !got.Equal(want) {
		t.Errorf("got %v, want the first line's %v", got, want)
	}
	if got := ActingFrom("time=2026-12-03T17:18:16.032Z level=INFO msg=starting\n"); !got.IsZero() {
		t.Errorf("a process that has not synced: got %v, want zero", got)
	}
}

// A strip the checker forged excuses explain's reload for it until a process starts after it, and
// only while the state still holds it as forged.
func TestAForgedStripExcusesExplainUntilAProcessLoadsIt(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := NewRecorder(Sequence{})
	w := &WorkloadLife{name: "w-4", createdAt: at(0)}
	r.forgeries = []Forgery{{Kind: ForgeStrip, Config: "cm-1", Workload: "w-4", At: at(5)},
		{Kind: ForgeHold, Config: "cm-0", Workload: "w-4", At: at(5)}, {Kind: ForgeEntry, Config: "cm-2", At: at(5)}}
	r.starts = []time.Time{at(1)}
	if !r.forgedStripUnread(w, "cm-1") {
		t.Error("a strip forged under the running reloader: not excused")
	}
	for _, c := range []string{"cm-0", "cm-2", "sec-0"} {
		if r.forgedStripUnread(w, c) {
			t.Errorf("%s: excused by a forgery that is not a strip of w-4 for it", c)
		}
	}
	if r.forgedStripUnread(&WorkloadLife{name: "w-4", createdAt: at(6)}, "cm-1") {
		t.Error("a workload of the same name created after the forgery: excused")
	}
	if r.forgedStripUnread(&WorkloadLife{name: "w-0", createdAt: at(0)}, "cm-1") {
		t.Error("another workload: excused")
	}
	r.starts = append(r.starts, at(7))
	if r.forgedStripUnread(w, "cm-1") {
		t.Error("a process started after the forgery, which loaded and acted on it: excused")
	}

	tg := ExplainTarget{Kind: KindDeployment, Name: "w-4", forged: map[string]bool{"cm-1": true, "cm-2": true}}
	tg.KeepStanding(func(kind, name, c string) bool { return kind == KindDeployment && name == "w-4" && c == "cm-1" })
	if !tg.forged["cm-1"] || tg.forged["cm-2"] {
		t.Errorf("kept %v, want only cm-1, which still stands", tg.forged)
	}
}

// A pause or minimum interval explain reports holding a due reload is waited out, a window not.
func TestThePauseOrIntervalThatHoldsADueReloadIsWaitedOut(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	pause, next := at(2), at(3)
	var r ExplainReport
	r.Next, r.Gate.PauseUntil, r.Gate.NextAllowed = "held-by-gate", &pause, &next
	if got := GateEnds(r); !got.Equal(next) {
		t.Errorf("a pause and an interval: waited until %v, want the later, %v", got, next)
	}
	opens := at(3600)
	r.Gate = reloader.Gate{WindowOpens: &opens}
	if got := GateEnds(r); !got.IsZero() {
		t.Errorf("a closed window: waited until %v, want not at all", got)
	}
	r.Next, r.Gate.PauseUntil = "up-to-date", &pause
	if got := GateEnds(r); !got.IsZero() {
		t.Errorf("nothing due: waited until %v, want not at all", got)
	}
}
