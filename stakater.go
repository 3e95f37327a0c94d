package main

// stakater Reloader's flag spellings and values, read with stakater's meaning so that its
// manifests and Helm chart arguments run this binary unchanged (docs/migrating.md,
// "stakater Reloader compared").

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
)

// Selector is a label selector given as stakater takes it: the flag may repeat and each value is
// a comma-separated list whose items may use stakater's legacy forms, "key:value" for key=value
// and "key:*" or "key=*" for "the key exists". stakater's chart wraps the value in double quotes
// (--namespace-selector="a=b"); they are dropped, as stakater's CSV reading drops them.
type Selector string

// Decode parses one occurrence of the flag for kong and appends it to earlier ones.
func (s *Selector) Decode(ctx *kong.DecodeContext) error {
	var v string
	if err := ctx.Scan.PopValueInto("selector", &v); err != nil {
		return err
	}
	items := splitSelector(strings.Trim(v, `"`))
	for i, item := range items {
		items[i] = stakaterSelectorItem(item)
	}
	if *s != "" {
		items = append([]string{string(*s)}, items...)
	}
	*s = Selector(strings.Join(items, ","))
	return nil
}

// splitSelector splits on the commas that separate requirements, not those inside a set
// ("env in (a,b)").
func splitSelector(v string) []string {
	var items []string
	depth, start := 0, 0
	for i, r := range v {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, strings.TrimSpace(v[start:i]))
				start = i + 1
			}
		}
	}
	return append(items, strings.TrimSpace(v[start:]))
}

// stakaterSelectorItem rewrites stakater's legacy forms into label selector syntax.
func stakaterSelectorItem(item string) string {
	if k, v, ok := strings.Cut(item, ":"); ok {
		if v == "*" {
			return k
		}
		return k + "=" + v
	}
	if k, v, ok := strings.Cut(item, "="); ok && v == "*" && !strings.HasSuffix(k, "!") {
		return k
	}
	return item
}

// parseLogLevel reads a --log-level: slog's names, and logrus's as stakater takes them (any case).
// trace is below debug; fatal and panic are above error, so nothing is logged through slog: the
// one line a fatal error prints on exit still is.
func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "trace":
		return slog.LevelDebug - 4, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	case "fatal", "panic":
		return slog.LevelError + 4, nil
	}
	return 0, fmt.Errorf("--log-level: %q is none of trace, debug, info, warn(ing), error, fatal, panic", s)
}

// errCSI is why --enable-csi-integration stops the reloader instead of being ignored: a user who
// asks for it expects restarts that would never come.
var errCSI = errors.New("--enable-csi-integration: not supported: the reloader does not watch the Secrets Store CSI driver's SecretProviderClassPodStatus objects; let the driver sync the secret into a Kubernetes Secret (secretObjects) and reload on that Secret")

// stakaterBool reads a flag stakater declares as a string holding a boolean (--is-Argo-Rollouts=true).
func stakaterBool(flag, v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("--%s: %q is neither true nor false", flag, v)
	}
	return b, nil
}

// scope is the set of namespaces to watch, by stakater's precedence with ours first: --namespaces,
// then --namespace, then $KUBERNETES_NAMESPACE; none of them watches all namespaces ("").
// stakaterScoped reports a scope set the stakater way (--namespaces or the variable): stakater
// then ignores --namespace-selector and --namespaces-to-ignore, which only apply to all
// namespaces. (With our --namespace, Validate refuses them instead.)
func (c *CLI) scope(getenv func(string) string) (namespaces []string, stakaterScoped bool) {
	switch {
	case len(c.Namespaces) > 0:
		return c.Namespaces, true
	case c.Namespace != "":
		return []string{c.Namespace}, false
	case getenv("KUBERNETES_NAMESPACE") != "":
		return []string{getenv("KUBERNETES_NAMESPACE")}, true
	}
	return []string{""}, false
}

// podNamespace is the reloader's own namespace: $POD_NAMESPACE (stakater's HA variable), else the
// ServiceAccount's.
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
