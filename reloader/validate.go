package reloader

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/policy"
)

// Change validation: a config whose reloader/validate annotation declares the format of some
// keys is checked in the informer transform, the one place its content is seen. A record whose
// content does not parse reloads nothing: the config sync says why once, in a Warning Event on
// the config, and leaves the state at the last content fully rolled out, so the next valid
// change reloads and a revert to that content reloads nothing.

// validateConfigMap describes the first declared key of cm that does not parse, or "".
func validateConfigMap(cm *corev1.ConfigMap) string {
	return validate(cm.Annotations, func(k string) ([]byte, bool) {
		if v, ok := cm.Data[k]; ok {
			return []byte(v), true
		}
		v, ok := cm.BinaryData[k]
		return v, ok
	})
}

// validateSecret describes the first declared key of s that does not parse, or "". The
// description never holds the value.
func validateSecret(s *corev1.Secret) string {
	return validate(s.Annotations, func(k string) ([]byte, bool) {
		v, ok := s.Data[k]
		return v, ok
	})
}

// validate reads the annotation; one that does not parse is itself the problem, so that a typo
// in it holds changes back rather than letting unchecked content through.
func validate(annotations map[string]string, value func(string) ([]byte, bool)) string {
	spec, ok := annotations[policy.ValidateAnnotation]
	if !ok {
		return ""
	}
	formats, err := policy.ParseFormats(spec)
	if err != nil {
		return err.Error()
	}
	return policy.Validate(formats, value)
}

// invalid handles a config sync of a record that failed validation: one Warning per content,
// counted once; nothing reloads and the state stays. validContent clears it, so that the same
// invalid content arriving again is said again.
//
// A config the state has never seen is recorded as it is, invalid or not, as the first start
// records every config: that is the content its dependents are taken to run, so the next valid
// change differs from it and reloads.
func (c *Controller) invalid(k key, rec *configRecord, fresh bool) {
	if _, known := c.state.Get(c.stateKey(k)); !known {
		c.state.Set(c.stateKey(k), rec.Hash)
	}
	msg := "Content " + short(rec.Hash) + " not rolled out: " + rec.Invalid + "; the last valid content stays in effect"
	if c.reports.warn(rec, string(rec.UID), "InvalidConfig", msg) && fresh {
		c.metrics.InvalidChanges.WithLabelValues(k.kind).Inc()
		c.log.Warn("config change not rolled out: it does not validate", "kind", k.kind, "namespace", k.namespace,
			"name", k.name, "hash", short(rec.Hash), "problem", rec.Invalid)
	}
}

func (c *Controller) validContent(rec *configRecord) {
	if rec != nil {
		c.reports.clear(string(rec.UID), "InvalidConfig")
	}
}
