package cli

// stakater Reloader's flag spellings and values, read with stakater's meaning so that its
// manifests and Helm chart arguments run this binary unchanged (docs/migrating.md,
// "stakater Reloader compared").

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
	"k8s.io/apimachinery/pkg/util/validation"
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

// CheckWebhookURL checks a --webhook-url: empty (off), or an absolute URL with a scheme and a
// host. It lives here, with the other value rules, so that docs/values.md's examples can be
// held to it; internal/app calls it when it sets the webhook up.
func CheckWebhookURL(s string) error {
	if s == "" {
		return nil
	}
	if u, err := url.Parse(s); err != nil || u.Scheme == "" || u.Host == "" {
		return errors.New("--webhook-url: not an absolute http(s) URL")
	}
	return nil
}

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

// validateStakater checks the flags and values that come from stakater Reloader.
func (c *Flags) validateStakater() error {
	if _, err := parseLogLevel(c.LogLevel); err != nil {
		return err
	}
	if f := c.LogFormat; f != "" && f != "text" && f != "json" {
		return fmt.Errorf("--log-format: must be text (or empty) or json, got %q", f)
	}
	if _, err := stakaterBool("is-Argo-Rollouts", c.IsArgoRolloutsStakater); err != nil {
		return err
	}
	if c.Namespace != "" && len(c.Namespaces) > 0 {
		return errors.New("--namespace and --namespaces: give one or the other")
	}
	for i, ns := range c.Namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		if slices.Contains(c.Namespaces[:i], ns) {
			// Two controllers on one namespace would each reload its workloads.
			return fmt.Errorf("--namespaces: %q is listed twice", ns)
		}
	}
	if len(c.Namespaces) > 1 && c.StateNamespace != "" {
		return errors.New("--state-namespace: not with several --namespaces: each namespace keeps its own state")
	}
	return nil
}

// dropAllNamespacesFlags does what stakater does when --namespaces or $KUBERNETES_NAMESPACE
// scope it: the flags that narrow all-namespaces mode are ignored, and that is said.
func (c *Flags) dropAllNamespacesFlags(log *slog.Logger) {
	if c.NamespaceSelector != "" || len(c.NamespacesToIgnore) > 0 {
		log.Warn("--namespace-selector and --namespaces-to-ignore only apply to all namespaces; --namespaces or $KUBERNETES_NAMESPACE scope the reloader, so they are ignored")
	}
	c.NamespaceSelector, c.NamespacesToIgnore = "", nil
}

// boolFlag reads a boolean flag's value as stakater's flag library does (strconv.ParseBool: t,
// F, TRUE, 0, ...), and as kong does (yes, no, in any case), so that a stakater command line
// keeps working. A flag given without a value is true.
type boolFlag struct{}

func (boolFlag) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	if ctx.Scan.Peek().Type != kong.FlagValueToken {
		target.SetBool(true)
		return nil
	}
	switch v := ctx.Scan.Pop().Value.(type) {
	case bool:
		target.SetBool(v)
		return nil
	case string:
		switch strings.ToLower(v) {
		case "yes":
			target.SetBool(true)
			return nil
		case "no":
			target.SetBool(false)
			return nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("must be true, false, 1, 0, t, f, yes or no, got %q", v)
		}
		target.SetBool(b)
		return nil
	default:
		return fmt.Errorf("expected a boolean, got %v", v)
	}
}

// IsBool lets the flag stand alone (--leader-elect).
func (boolFlag) IsBool() bool { return true }
