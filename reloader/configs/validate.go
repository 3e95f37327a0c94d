package configs

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/reloader/reloader/policy"
)

// Change validation: a config whose reloader/validate annotation declares the format of some
// keys is checked in the informer transform, the one place its content is seen (the root's
// validate.go says what a content that does not validate does).

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
