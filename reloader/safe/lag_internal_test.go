package safe

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// When a reload's change must be confirmed with a live read of its config, and what the read
// decides, in process: only a workload written after the cached config, with a marker that is
// neither the wanted content nor the one the state records, is read; a newer live config makes
// the patch wait for the cache.
func TestALiveReadConfirmsOnlyAMarkerTheCacheCannotExplain(t *testing.T) {
	var (
		a, b, c   = strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
		forbidden = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "app", errors.New("rbac"))
	)
	for _, tc := range []struct {
		name       string
		workloadRV string // the workload's resourceVersion; the cached config's is 10
		marker     string // the workload's marker of app ("": none)
		recorded   string // the state's entry for app ("": none)
		liveRV     string
		liveErr    error
		reads      int
		want       error
	}{
		{name: "a workload written before the cached config", workloadRV: "9", marker: b, liveRV: "11"},
		{name: "no marker: the state asked for the change", workloadRV: "12", liveRV: "11"},
		{name: "a marker of the content the state records", workloadRV: "12", marker: b, recorded: b, liveRV: "11"},
		{name: "the live config is the cached one", workloadRV: "12", marker: b, recorded: c, liveRV: "10", reads: 1},
		{name: "the live config is newer than the cache", workloadRV: "12", marker: b, recorded: c, liveRV: "11", reads: 1, want: workload.ErrStale},
		{name: "the live config is gone", workloadRV: "12", marker: b, liveRV: "", reads: 1, want: workload.ErrStale},
		{name: "no permission to read it: the cache decides", workloadRV: "12", marker: b, liveErr: forbidden, reads: 1},
		{name: "the read fails", workloadRV: "12", marker: b, liveErr: errors.New("connection refused"), reads: 1, want: errors.New("connection refused")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore()
			names := entrykeys.Names{Single: true}
			if tc.recorded != "" {
				store.Configs().Set(names.Config(workload.Key{Kind: policy.KindConfigMap, Namespace: "ns", Name: "app"}), tc.recorded)
			}
			reads := 0
			l := NewLag(stateEntries{store.Configs(), names},
				cacheFunc(func(workload.Key) *configs.Record {
					return configs.NewRecord(policy.KindConfigMap, &metav1.ObjectMeta{Name: "app", Namespace: "ns", ResourceVersion: "10"}, a)
				}),
				liveFunc(func(context.Context, policy.ConfigRef, string) (string, error) {
					reads++
					return tc.liveRV, tc.liveErr
				}))
			err := l.Confirm(context.Background(), markedView(tc.workloadRV, tc.marker), []policy.Change{{Ref: appRef, Value: a}})
			if reads != tc.reads {
				t.Fatalf("%d live reads, want %d", reads, tc.reads)
			}
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("confirm: %v, want nil", err)
			case tc.want != nil && (err == nil || !strings.Contains(err.Error(), tc.want.Error())):
				t.Fatalf("confirm: %v, want %v", err, tc.want)
			}
		})
	}
}

// stateEntries are the config entries of a state, as configs.Records reads them.
type stateEntries struct {
	store *state.Configs
	names entrykeys.Names
}

func (s stateEntries) EntryHash(k workload.Key) (string, bool) {
	e, known := s.store.Get(s.names.Config(k))
	return e.Hash, known
}

type liveFunc func(ctx context.Context, r policy.ConfigRef, namespace string) (string, error)

func (f liveFunc) LiveVersion(ctx context.Context, r policy.ConfigRef, namespace string) (string, error) {
	return f(ctx, r, namespace)
}

var appRef = policy.ConfigRef{Kind: policy.KindConfigMap, Name: "app"}

// markedView is Deployment ns/web at resourceVersion rv, carrying marker as its env-vars marker
// of ConfigMap app ("": none).
func markedView(rv, marker string) workload.View {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: rv}}
	c := corev1.Container{Name: "app"}
	if marker != "" {
		c.Env = []corev1.EnvVar{{Name: policy.EnvVarName(appRef), Value: marker}}
	}
	d.Spec.Template.Spec.Containers = []corev1.Container{c}
	return workload.View{Key: workload.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}, Kind: &workload.Kind{Name: "Deployment"}, Obj: d, Meta: d,
		Tmpl: &d.Spec.Template, Target: policy.Target{Strategy: policy.StrategyEnvVars}}
}
