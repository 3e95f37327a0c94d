package runs

import (
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/workload"
)

// viewsOnly is the rule as setsMarkers asks it, without caches: a workload's view, and the
// configs it reloads on (its candidates: no config is cached for a pattern to match).
type viewsOnly struct{ annotations policy.Annotations }

func (v viewsOnly) View(kind *workload.Kind, obj any) (workload.View, bool) {
	return workload.Read(kind, obj, v.annotations)
}

func (viewsOnly) ReloadsOn(w workload.View) []policy.ConfigRef { return w.Policy.Candidates(w.Uses) }

func (viewsOnly) WantedExisting(workload.View, policy.ConfigRef) (*configs.Record, policy.Content, []string, bool) {
	return nil, policy.Content{}, nil, false
}

func (viewsOnly) ReadByOthers(workload.View, policy.ConfigRef) *Read { return nil }

func (viewsOnly) CachedVersion(string) func(policy.ConfigRef, *Read) (Version, bool) {
	return func(policy.ConfigRef, *Read) (Version, bool) { return Version{}, false }
}

func (viewsOnly) Lookup(workload.Key) *configs.Record { return nil }

// setsMarkers tells a reload or a rollback of ours (which note their own restart) from another
// actor's change (whose pods' reads podsRestarted notes). A strip is another actor's: taking it
// for ours loses what its pods read (soak seed 1795828528856311681@7).
func TestSetsMarkersTellsOurReloadsAndRollbacksFromOthersChangesAndStrips(t *testing.T) {
	const a, b = "aaaa", "bbbb"
	rolledBack := policy.FormatHistory([]policy.Entry{{At: time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC), Outcome: policy.OutcomeFailed, RolledBack: true, Generation: 3, Configs: []string{"ConfigMap/app@aaaa"}}})
	for _, c := range []struct {
		name     string
		old, new deploymentShape
		want     bool
	}{
		{"a reload sets the marker", deploymentShape{}, deploymentShape{env: map[string]string{"app": a}}, true},
		{"a reload changes the marker", deploymentShape{env: map[string]string{"app": a}}, deploymentShape{env: map[string]string{"app": b}}, true},
		{"a reload adds a second config's marker", deploymentShape{env: map[string]string{"app": a}}, deploymentShape{env: map[string]string{"app": a, "other": b}}, true},
		{"the annotations strategy sets its marker", deploymentShape{}, deploymentShape{applied: map[string]string{"app": a}}, true},
		{"a switch from env vars to annotations sets a marker", deploymentShape{env: map[string]string{"app": a}}, deploymentShape{applied: map[string]string{"app": a}}, true},
		{"another actor's change keeps the markers", deploymentShape{env: map[string]string{"app": a}, image: "v1"}, deploymentShape{env: map[string]string{"app": a}, image: "v2"}, false},
		{"a helm upgrade strips a marker", deploymentShape{env: map[string]string{"app": a, "other": b}}, deploymentShape{env: map[string]string{"other": b}}, false},
		{"a helm upgrade strips every marker", deploymentShape{env: map[string]string{"app": a}}, deploymentShape{}, false},
		{"a rollback of ours moves markers back", deploymentShape{env: map[string]string{"app": b}, restore: true}, deploymentShape{env: map[string]string{"app": a}, history: rolledBack}, true},
		{"a rollback of ours drops a marker the reload added", deploymentShape{env: map[string]string{"app": a, "other": b}, restore: true}, deploymentShape{env: map[string]string{"app": a}, history: rolledBack}, true},
		{"a strip that only ends a restore note is another actor's", deploymentShape{env: map[string]string{"app": a}, restore: true}, deploymentShape{env: map[string]string{"app": a}, history: rolledBack}, false},
		{"a strip without a rollback in the history is another actor's", deploymentShape{env: map[string]string{"app": a, "other": b}, restore: true}, deploymentShape{env: map[string]string{"app": a}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ru := viewsOnly{annotations: policy.DefaultAnnotations()}
			n := &Notes{rule: ru}
			kind := &workload.Kind{Name: "Deployment", Template: func(obj any) (metav1.Object, *corev1.PodTemplateSpec) {
				d := obj.(*appsv1.Deployment)
				return d, &d.Spec.Template
			}}
			ov, ok := ru.View(kind, c.old.deployment())
			nv, ok2 := ru.View(kind, c.new.deployment())
			if !ok || !ok2 {
				t.Fatal("no view of the Deployment")
			}
			if got := n.setsMarkers(ov, nv); got != c.want {
				t.Errorf("setsMarkers = %v, want %v", got, c.want)
			}
		})
	}
}

// deploymentShape is a Deployment that reads ConfigMaps app and other, with the markers given.
type deploymentShape struct {
	env     map[string]string // config name → marker in the container's env
	applied map[string]string // config name → marker in the workload's applied-hashes annotation
	image   string
	restore bool   // a rollback of ours is on its way (policy.RestoreAnnotation)
	history string // policy.HistoryAnnotation
}

func (s deploymentShape) deployment() *appsv1.Deployment {
	ann := map[string]string{"configmap.reloader.stakater.com/reload": "app,other"}
	if s.restore {
		ann[policy.RestoreAnnotation] = "{}"
	}
	if s.history != "" {
		ann[policy.HistoryAnnotation] = s.history
	}
	c := corev1.Container{Name: "app", Image: "img:" + s.image}
	for _, name := range []string{"app", "other"} {
		if v, ok := s.env[name]; ok {
			c.Env = append(c.Env, corev1.EnvVar{Name: policy.EnvVarName(policy.ConfigRef{Kind: policy.KindConfigMap, Name: name}), Value: v})
		}
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: ann}}
	d.Spec.Template.Spec.Containers = []corev1.Container{c}
	if len(s.applied) > 0 {
		applied := map[string]string{}
		for name, v := range s.applied {
			applied["configmap/"+name] = v
		}
		b, _ := json.Marshal(applied)
		d.Annotations["reloader/config-hashes"] = string(b) // the annotations strategy's marker
	}
	return d
}
