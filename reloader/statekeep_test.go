package reloader_test

import (
	"context"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/confighash"
	"github.com/reloader/reloader/reloader"
	"github.com/reloader/reloader/state"
)

// switchedFromStakater makes app-config (keys a and b) and web, which reloads on it under auto,
// reads key a alone and carries stakater's variable at its current hash; it starts a reloader,
// waits for the first comparison's note, then changes key b: web is not reloaded, and stakater's
// variable now lags by a change of a key web does not read.
func switchedFromStakater(t *testing.T, ns string) (r *running, before int64) {
	t.Helper()
	createConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "1"})
	createDeployment(t, ns, "web", 0, map[string]string{"reloader.stakater.com/auto": "true"}, func(s *corev1.PodSpec) {
		current := confighash.StakaterConfigMap(&corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "1"}})
		s.Containers[0].Env = append(s.Containers[0].Env,
			corev1.EnvVar{Name: "STAKATER_APP_CONFIG_CONFIGMAP", Value: current},
			corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "a"}}})
	})
	before = getDeployment(t, ns, "web").Generation
	r = startController(t, ns, controllerOpts{grace: 5 * time.Second})
	settle(t)
	waitFor(t, 30*time.Second, "the first comparison noted", func() (bool, error) {
		return stateEntry(t, ns, "reloader.stakater-compared") != "", nil
	})
	updateConfigMap(t, ns, "app-config", map[string]string{"a": "1", "b": "2"})
	settle(t)
	wantReloads(t, ns, "web", before, 0)
	return r, before
}

func stateData(t *testing.T, ns string) map[string]string {
	t.Helper()
	cm, err := cluster.Client().CoreV1().ConfigMaps(ns).Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	delete(cm.Data, state.FlushedAtKey) // each write's stamp
	return cm.Data
}

// A state ConfigMap deleted or emptied under a running reloader, with nothing else changing, is
// back with the same entries within the check period (10 s), so a graceful restart restarts
// nothing: not web, whose stakater variable lags by a key it does not read (the comparison is
// not made again). The positive control: a change of api-config made while the reloader was down
// restarts api, which carries no marker and is judged by the state, exactly once.
func TestAStateLostUnderARunningReloaderIsWrittenBack(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		damage func(ns string) error
	}{
		{"deleted", func(ns string) error {
			return cluster.Client().CoreV1().ConfigMaps(ns).Delete(context.Background(), "reloader-state", metav1.DeleteOptions{})
		}},
		{"emptied", func(ns string) error {
			cms := cluster.Client().CoreV1().ConfigMaps(ns)
			cm, err := cms.Get(context.Background(), "reloader-state", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cm.Data = nil
			_, err = cms.Update(context.Background(), cm, metav1.UpdateOptions{})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := cluster.NewNamespace(t)
			createConfigMap(t, ns, "api-config", map[string]string{"v": "1"})
			api := createDeployment(t, ns, "api", 0, named("configmap", "api-config"), nil).Generation
			r, web := switchedFromStakater(t, ns)
			want := maps.Clone(stateData(t, ns))
			if want["v1.ConfigMap_api-config"] == "" || want["v1.ConfigMap_app-config"] == "" {
				t.Fatalf("the state holds %v: want both configs recorded for this test to mean anything", want)
			}
			if err := tt.damage(ns); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, "the state written back", func() (bool, error) {
				return maps.Equal(stateData(t, ns), want), nil
			})

			r.stop(t)
			hash := updateConfigMap(t, ns, "api-config", map[string]string{"v": "2"})
			startController(t, ns, controllerOpts{grace: 5 * time.Second})
			waitEnv(t, ns, "api", "_RELOADER_-configmap-api-config", hash)
			wantReloads(t, ns, "api", api, 1)
			wantReloads(t, ns, "web", web, 0)
		})
	}
}

// A state lost while the reloader was down, with the hash key Secret an earlier reloader made
// still there, does not make the next start compare stakater's variables again: web, whose
// variable lags by a key it does not read, is not restarted, and that start notes the comparison
// over, so the next one does not compare either. The positive control: with the key
// Secret gone too, nothing tells that start from a first one, and web is restarted once.
func TestAStateLostWhileDownDoesNotRepeatTheStakaterComparisonWhenTheHashKeyExisted(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	r, before := switchedFromStakater(t, ns)
	r.stop(t)
	cms := cluster.Client().CoreV1().ConfigMaps(ns)
	if err := cms.Delete(context.Background(), "reloader-state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r = startController(t, ns, controllerOpts{grace: 5 * time.Second})
	settle(t)
	waitFor(t, 30*time.Second, "the comparison noted over", func() (bool, error) {
		return stateEntry(t, ns, "reloader.stakater-compared") != "", nil
	})
	wantReloads(t, ns, "web", before, 0)
	r.stop(t)

	if err := cms.Delete(context.Background(), "reloader-state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Client().CoreV1().Secrets(ns).Delete(context.Background(), reloader.DefaultHashKeySecret, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	startController(t, ns, controllerOpts{grace: 5 * time.Second})
	waitFor(t, 30*time.Second, "web reloaded for the lag", func() (bool, error) {
		_, ok := env(getDeployment(t, ns, "web"), "app", cmVar)
		return ok, nil
	})
	wantReloads(t, ns, "web", before, 1)
}
