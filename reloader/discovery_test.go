package reloader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/reloader"
)

var auto = map[string]string{"reloader.stakater.com/auto": "true"}

func TestAutoDiscoversEveryReferencePath(t *testing.T) {
	t.Parallel()
	optional := true
	volume := func(v corev1.VolumeSource) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: v}}
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}
		}
	}
	scenarios := []scenario{
		{name: "configMap volume", spec: volume(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("a")}}), configs: []config{cmA}, change: "a"},
		{name: "secret volume", spec: volume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}), configs: []config{secretS}, change: "s"},
		{name: "projected configMap", spec: volume(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: cmRef("a")}}}}}), configs: []config{cmA}, change: "a"},
		{name: "projected secret", spec: volume(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: cmRef("s")}}}}}), configs: []config{secretS}, change: "s"},
		{name: "envFrom configMap", spec: envFromCM("a"), configs: []config{cmA}, change: "a"},
		{name: "envFrom secret", spec: envFromSecret("s"), configs: []config{secretS}, change: "s"},
		{name: "configMapKeyRef", spec: func(s *corev1.PodSpec) {
			s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "V", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("a"), Key: "v"}}})
		}, configs: []config{cmA}, change: "a"},
		{name: "secretKeyRef", spec: func(s *corev1.PodSpec) {
			s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "V", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("s"), Key: "v"}}})
		}, configs: []config{secretS}, change: "s"},
		{name: "init container envFrom", spec: func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "init", Image: "fake", EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("a"), Optional: &optional}}}}}
		}, configs: []config{cmA}, change: "a"},
	}
	for _, sc := range scenarios {
		sc.annotations, sc.reload = auto, true
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

// keyScenario: a config with keys x and y; the workload reads only x; one key changes.
func TestKeyLevelPrecision(t *testing.T) {
	t.Parallel()
	keyRef := func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("a"), Key: "x"}}})
	}
	items := func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: cmRef("a"), Items: []corev1.KeyToPath{{Key: "x", Path: "x.conf"}}}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}
	}
	tests := []struct {
		name   string
		spec   func(*corev1.PodSpec)
		change string
		reload bool
	}{
		{"configMapKeyRef: unused key changes", keyRef, "y", false},
		{"configMapKeyRef: used key changes", keyRef, "x", true},
		{"volume items: unused key changes", items, "y", false},
		{"volume items: used key changes", items, "x", true},
		{"whole and key references: any key reloads", both(keyRef, envFromCM("a")), "y", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := cluster.NewNamespace(t)
			createConfigMap(t, ns, "a", map[string]string{"x": "0", "y": "0"})
			createDeploymentFrom(t, ns, "web", func(d *appsv1.Deployment) { d.Annotations = auto; tt.spec(&d.Spec.Template.Spec) })
			r := startController(t, ns, controllerOpts{})
			waitFor(t, 10*time.Second, "the config recorded", func() (bool, error) {
				return stateEntry(t, ns, "v1.ConfigMap_a") != "", nil
			})
			before := getDeployment(t, ns, "web").Generation
			data := map[string]string{"x": "0", "y": "0"}
			data[tt.change] = "1"
			hash := updateConfigMap(t, ns, "a", data)
			waitRecorded(t, r, "v1.ConfigMap_a", hash)
			settle(t)
			got := getDeployment(t, ns, "web").Generation - before
			if want := map[bool]int64{true: 1, false: 0}[tt.reload]; got != want {
				t.Fatalf("%d reloads, want %d\n%s", got, want, r.log.String())
			}
		})
	}
}

func TestOptionalReferenceToAMissingConfig(t *testing.T) {
	t.Parallel()
	optional := true
	for _, reloadOnCreate := range []bool{false, true} {
		name := map[bool]string{false: "appearing config restarts nothing by default", true: "appearing config reloads with --reload-on-create"}[reloadOnCreate]
		t.Run(name, func(t *testing.T) {
			ns := cluster.NewNamespace(t)
			createDeploymentFrom(t, ns, "web", func(d *appsv1.Deployment) {
				d.Annotations = auto
				d.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("later"), Optional: &optional}}}
			})
			startController(t, ns, controllerOpts{tweak: func(o *reloader.Options) { o.ReloadOnCreate = reloadOnCreate }})
			settle(t) // the first start is over; "later" is created afterwards
			before := getDeployment(t, ns, "web").Generation
			createConfigMap(t, ns, "later", map[string]string{"v": "0"})
			waitFor(t, 10*time.Second, "the new config recorded", func() (bool, error) {
				return stateEntry(t, ns, "v1.ConfigMap_later") != "", nil
			})
			settle(t)
			want := before
			if reloadOnCreate {
				want++
			}
			if got := getDeployment(t, ns, "web").Generation; got != want {
				t.Fatalf("generation %d → %d, want %d", before, got, want)
			}
		})
	}
}

func TestMalformedAnnotationIsReportedOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "a", map[string]string{"v": "0"})
	createDeploymentFrom(t, ns, "broken", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{"reloader.stakater.com/auto": "yes please", "configmap.reloader.stakater.com/reload": "a,"}
	})
	createDeployment(t, ns, "fine", 0, named("configmap", "a"), nil)
	r := startController(t, ns, controllerOpts{})
	// Touch the broken workload: the same problems must not be reported again.
	updateDeployment(t, ns, "broken", func(d *appsv1.Deployment) { d.Labels = map[string]string{"touched": "yes"} })
	// The broken workload blocks nobody: the fine one still reloads.
	hash := updateConfigMap(t, ns, "a", map[string]string{"v": "1"})
	waitEnv(t, ns, "fine", "_RELOADER_-configmap-a", hash)
	var events []corev1.Event
	waitFor(t, 10*time.Second, "an InvalidAnnotation event", func() (bool, error) {
		list, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=InvalidAnnotation"})
		events = list.Items
		return err == nil && len(events) > 0, err
	})
	settle(t)
	list, _ := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=InvalidAnnotation"})
	if len(list.Items) != 1 || list.Items[0].Count > 1 || list.Items[0].InvolvedObject.Name != "broken" {
		t.Fatalf("want one InvalidAnnotation event, once, on broken; got %+v", list.Items)
	}
	msg := list.Items[0].Message
	if !strings.Contains(msg, `"yes please"`) || !strings.Contains(msg, "empty name") {
		t.Fatalf("event message does not name both problems: %s", msg)
	}
	if n := strings.Count(r.log.String(), "malformed reload annotation"); n != 1 {
		t.Fatalf("%d log lines about the malformed annotation, want 1", n)
	}
}

func TestMissingNamedConfigIsReported(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	createConfigMap(t, ns, "app-config", map[string]string{"v": "0"})
	createDeployment(t, ns, "typo", 0, named("configmap", "app-config,app-conifg"), nil)
	startController(t, ns, controllerOpts{})
	var messages []string
	waitFor(t, 10*time.Second, "a warning naming the missing ConfigMap", func() (bool, error) {
		list, err := cluster.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "reason=InvalidAnnotation,involvedObject.name=typo"})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		messages = messages[:0]
		for _, e := range list.Items {
			messages = append(messages, e.Message)
		}
		return true, nil
	})
	all := strings.Join(messages, "\n")
	if !strings.Contains(all, `ConfigMap "app-conifg" named in a reload annotation does not exist`) {
		t.Fatalf("the warning does not name the missing ConfigMap: %q", all)
	}
	if strings.Contains(all, `"app-config" named`) {
		t.Fatalf("an existing ConfigMap was reported missing: %q", all)
	}
	// The existing one still reloads the workload.
	hash := updateConfigMap(t, ns, "app-config", map[string]string{"v": "1"})
	waitEnv(t, ns, "typo", cmVar, hash)
}
