package checker

import (
	"strings"
	"testing"
	"time"
)

// A restart for another config started the pods on c's held content B while c's marker said A;
// then the reloader was stopped, and c went back to A: the stated limit, excused. The excuse
// needs the stop, and c back at the marker's content, and ends with the next restart.
func TestALossLeftBehindByAStoppedReloaderIsTheStatedLimit(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := NewRecorder(Sequence{})
	r.configs["cm-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: Content{"a": "A"}},
		{rv: 15, at: at(15), exists: true, data: Content{"a": "B"}}, // held
		{rv: 25, at: at(25), exists: true, data: Content{"a": "A"}}, // back at the marker's
	}
	w := &WorkloadLife{name: "w-0", refs: []Ref{{Config: "cm-0"}, {Config: "cm-1"}}, modes: []modeEvent{{mode: ModeAuto}},
		restarts:  []int64{10, 20},
		touched:   []map[string]bool{{"cm-0": true}, {"cm-1": true}},
		restartAt: []time.Time{at(10), at(20)}}
	if r.Oracle.leftBehind(w, "cm-0") {
		t.Fatal("excused without a reloader stop")
	}
	r.starts = []time.Time{at(22)}
	if !r.Oracle.leftBehind(w, "cm-0") {
		t.Fatal("not excused: the pods of the restart at rv 20 read B, the marker says A, and a stop forgot it")
	}
	r.configs["cm-0"] = append(r.configs["cm-0"], configEvent{rv: 30, at: at(30), exists: true, data: Content{"a": "C"}})
	if r.Oracle.leftBehind(w, "cm-0") {
		t.Error("excused while c is at neither content: the marker is stale, and any reloader reloads")
	}
	r.configs["cm-0"] = r.configs["cm-0"][:3]
	w.restarts, w.touched, w.restartAt = append(w.restarts, 40), append(w.touched, map[string]bool{"cm-1": true}), append(w.restartAt, at(40))
	r.configs["cm-0"] = append(r.configs["cm-0"][:2], configEvent{rv: 45, at: at(45), exists: true, data: Content{"a": "A"}})
	if r.Oracle.leftBehind(w, "cm-0") {
		t.Error("excused after a restart made after the stop: its reloader knew what the pods read")
	}
}

// A lost pair's report carries what the oracle knew: each restart, whose it was, and the
// config's events, since a soak's violation is often not reproduced by a replay.
func TestALostPairsReportTellsItsRestartsAndTheConfigsEvents(t *testing.T) {
	t.Parallel()
	at := secondsFromNow()
	r := NewRecorder(Sequence{})
	r.configs["cm-0"] = []configEvent{
		{rv: 5, at: at(5), exists: true, data: Content{"a": "A"}},
		{rv: 15, at: at(15), exists: true, data: Content{"a": "B"}, by: "action 3 (update)", unknown: true},
	}
	r.own[12] = true
	w := &WorkloadLife{name: "w-0", createdRV: 3, refs: []Ref{{Config: "cm-0"}}, modes: []modeEvent{{mode: ModeAuto}},
		restarts: []int64{10, 12}, touched: []map[string]bool{{"cm-0": true}, {}}, restartAt: []time.Time{at(10), at(12)}}
	got := r.Oracle.story(w, "cm-0")
	for _, want := range []string{"created at rv 3", "rv 10 at", "for [cm-0]", "rv 12 at", "(the checker's)", `rv 15 at`, `"B" by action 3 (update) (state held none)`} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

// secondsFromNow returns the moment s seconds from now, for tables of events.
func secondsFromNow() func(s int) time.Time {
	t0 := time.Now()
	return func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
}

// The state holds an entry only for a config some living workload reloads on: the executor waits
// for one only then.
func TestTriggeredIsAConfigALivingWorkloadReloadsOn(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		w       *WorkloadLife
		c       string
		trigger bool
	}{
		{"auto, reading it", &WorkloadLife{refs: []Ref{{Config: "cm-0"}}, modes: []modeEvent{{mode: ModeAuto}}}, "cm-0", true},
		{"auto, reading another", &WorkloadLife{refs: []Ref{{Config: "cm-1"}}, modes: []modeEvent{{mode: ModeAuto}}}, "cm-0", false},
		{"none", &WorkloadLife{refs: []Ref{{Config: "cm-0"}}, modes: []modeEvent{{mode: modeNone}}}, "cm-0", false},
		{"excluded", &WorkloadLife{refs: []Ref{{Config: "cm-0"}, {Config: "cm-1"}}, modes: []modeEvent{{mode: modeExclude}}}, "cm-0", false},
		{"named", &WorkloadLife{refs: []Ref{{Config: "cm-0"}}, modes: []modeEvent{{mode: modeNamed}}}, "cm-0", true},
		{"deleted", &WorkloadLife{refs: []Ref{{Config: "cm-0"}}, modes: []modeEvent{{mode: ModeAuto}}, deletedAt: time.Now()}, "cm-0", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecorder(Sequence{})
			r.workloads["u"] = tt.w
			if got := r.Oracle.Triggered(tt.c); got != tt.trigger {
				t.Errorf("Triggered(%s) = %v, want %v", tt.c, got, tt.trigger)
			}
		})
	}
}
