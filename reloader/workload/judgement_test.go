package workload

import (
	"reflect"
	"testing"

	"github.com/reloader/reloader/policy"
)

// The syncs read a policy.Judgement through JudgementOf: every field of it that they read
// arrives, and Own is the policy's OwnMarker.
func TestAJudgementKeepsEveryFieldOfThePolicysJudgement(t *testing.T) {
	jt := reflect.TypeFor[Judgement]()
	for i := range jt.NumField() {
		name := jt.Field(i).Name
		if name == "Own" {
			continue
		}
		var pj policy.Judgement
		f := reflect.ValueOf(&pj).Elem().FieldByName(name)
		if !f.IsValid() {
			t.Errorf("policy.Judgement has no field %s", name)
			continue
		}
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"a"}))
		case reflect.Int:
			f.SetInt(1)
		case reflect.Struct:
			f.Set(reflect.ValueOf(policy.Change{Value: "v"}))
		default:
			t.Fatalf("field %s of kind %s", name, f.Kind())
		}
		got := reflect.ValueOf(JudgementOf(pj)).FieldByName(name)
		if !reflect.DeepEqual(got.Interface(), f.Interface()) {
			t.Errorf("%s: %v, want %v", name, got.Interface(), f.Interface())
		}
	}
	for _, pj := range []policy.Judgement{{}, {ByState: true}, {Keys: []string{"a"}}} {
		if j := JudgementOf(pj); j.OwnMarker() != pj.OwnMarker() {
			t.Errorf("OwnMarker of %+v: %v, want %v", pj, j.OwnMarker(), pj.OwnMarker())
		}
	}
}
