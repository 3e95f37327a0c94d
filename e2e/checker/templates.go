package checker

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/confighash"
)

// template is the pod template a chart would render for refs: what create-workload writes and
// what a helm upgrade restores, markers stripped.
func template(name string, refs []Ref) corev1.PodTemplateSpec {
	c := corev1.Container{Name: "app", Image: "fake"}
	for _, r := range refs {
		switch {
		case r.Whole && IsSecret(r.Config):
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: r.Config}}})
		case r.Whole:
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: r.Config}}})
		case IsSecret(r.Config):
			c.Env = append(c.Env, corev1.EnvVar{Name: "A_" + strings.ReplaceAll(r.Config, "-", "_"), ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: r.Config}, Key: "a", Optional: optional(r)}}})
		default:
			c.Env = append(c.Env, corev1.EnvVar{Name: "A_" + strings.ReplaceAll(r.Config, "-", "_"), ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: r.Config}, Key: "a", Optional: optional(r)}}})
		}
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

func optional(r Ref) *bool {
	if !r.Optional {
		return nil
	}
	return &r.Optional
}

var modeAnnotations = []string{"reloader.stakater.com/auto", "configmap.reloader.stakater.com/reload", "secret.reloader.stakater.com/reload",
	"configmaps.exclude.reloader.stakater.com/reload", "secrets.exclude.reloader.stakater.com/reload"}

// SetMode sets, in ann, the annotations of mode m for the configs refs reads.
func SetMode(ann map[string]string, refs []Ref, m string) {
	for _, k := range modeAnnotations {
		delete(ann, k)
	}
	var cms, secrets []string
	for _, r := range refs {
		if IsSecret(r.Config) {
			secrets = append(secrets, r.Config)
		} else {
			cms = append(cms, r.Config)
		}
	}
	switch m {
	case ModeAuto:
		ann[modeAnnotations[0]] = "true"
	case modeNamed:
		if len(cms) > 0 {
			ann[modeAnnotations[1]] = strings.Join(cms, ",")
		}
		if len(secrets) > 0 {
			ann[modeAnnotations[2]] = strings.Join(secrets, ",")
		}
	case modePattern:
		if len(cms) > 0 {
			ann[modeAnnotations[1]] = patternOf(cms)
		}
		if len(secrets) > 0 {
			ann[modeAnnotations[2]] = patternOf(secrets)
		}
	case modeExclude:
		ann[modeAnnotations[0]] = "true"
		first := refs[0].Config
		if IsSecret(first) {
			ann[modeAnnotations[4]] = first
		} else {
			ann[modeAnnotations[3]] = first
		}
	}
}

func SetGate(ann map[string]string, g GateSpec, now time.Time) {
	for _, k := range gateAnnotations {
		delete(ann, k)
	}
	if g.Kind != "" {
		ann[gateAnnotations[g.Kind]] = g.annotationValue(now)
	}
}

// RefsOf reads back the refs a workload was created with (kept in an annotation of the checker
// on its metadata).
func RefsOf(meta map[string]string) []Ref {
	var out []Ref
	for _, s := range strings.Split(meta["checker/refs"], " ") {
		// The inverse of ref.String: a strip re-renders the template from it, and an optional
		// key read as required would make the reloader's pods wait where the oracle's do not.
		name, key, _ := strings.Cut(s, ".")
		out = append(out, Ref{Config: name, Whole: key == "", Optional: key == "a?"})
	}
	return out
}

// RefsNote is the checker/refs annotation for refs, which refsOf reads back.
func RefsNote(refs []Ref) string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.String()
	}
	return strings.Join(names, " ")
}

// lagContent is what a workload switched from stakater Reloader runs of a config whose variable
// lags: stakater reloaded it for this content, and missed the change to the world's first one.
var lagContent = Content{"a": "s", "b": "s"}

// StakaterVars gives the pod template stakater Reloader's variables as a.Lag and a.Cur ask, and
// returns the configs whose variable lags.
func StakaterVars(tmpl *corev1.PodTemplateSpec, a Action) map[string]bool {
	lagged := map[string]bool{}
	set := func(c string, data Content) {
		tmpl.Spec.Containers[0].Env = append(tmpl.Spec.Containers[0].Env, corev1.EnvVar{Name: stakaterName(c), Value: stakaterHash(c, data)})
	}
	for _, c := range a.Lag {
		set(c, lagContent)
		lagged[c] = true
	}
	for _, c := range a.Cur {
		set(c, FirstContent(c))
	}
	return lagged
}

// stakaterName is the variable stakater Reloader keeps config c's hash in, written here from its
// convention rather than taken from the reloader's code, so that the checker judges that code:
// STAKATER_, the name in upper case with each run of characters other than letters and digits
// as one '_', then _CONFIGMAP or _SECRET.
func stakaterName(c string) string {
	kind := "_CONFIGMAP"
	if IsSecret(c) {
		kind = "_SECRET"
	}
	return "STAKATER_" + symbolRuns.ReplaceAllString(strings.ToUpper(c), "_") + kind
}

// symbolRuns are what stakater's variable names fold into one '_'.
var symbolRuns = regexp.MustCompile(`[^A-Z0-9]+`)

// stakaterHash is stakater Reloader's hash of config c with data (confighash's, which the
// confighash tests compare with stakater's).
func stakaterHash(c string, data Content) string {
	if IsSecret(c) {
		s := &corev1.Secret{Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return confighash.StakaterSecret(s)
	}
	return confighash.StakaterConfigMap(&corev1.ConfigMap{Data: data})
}

// Edited is what an edit of a workload set: an annotation mode, a gate, or what its template
// reads (a reref).
type Edited struct {
	Mode   string
	Gate   *GateSpec
	Refs   []Ref
	Paused *bool // an owner's pause or resume (gen 9)
}

// StripMarkers is a helm upgrade: the template goes back to the chart's, without the
// reloader's variables or annotations (the chart's own annotations stay).
func StripMarkers(o *Object, onTemplate bool) Edited {
	t := PodTemplate(o.kind, o.Obj.GetName(), RefsOf(o.Obj.GetAnnotations()))
	if onTemplate {
		t.Annotations = map[string]string{}
		for _, k := range slices.Concat(modeAnnotations, slices.Collect(maps.Values(gateAnnotations))) {
			if v, ok := o.Template.Annotations[k]; ok {
				t.Annotations[k] = v
			}
		}
	}
	keepBroken(&o.Template, &t)
	o.Template = t
	return Edited{}
}
