package cli

import (
	"errors"
	"log/slog"
	"os"
	"strings"
)

// scope is the set of namespaces to watch, by stakater's precedence with ours first: --namespaces,
// then --namespace, then $KUBERNETES_NAMESPACE; none of them watches all namespaces ("").
// stakaterScoped reports a scope set the stakater way (--namespaces or the variable): stakater
// then ignores --namespace-selector and --namespaces-to-ignore, which only apply to all
// namespaces. (With our --namespace, Validate refuses them instead.)
func (c *Flags) scope(getenv func(string) string) (namespaces []string, stakaterScoped bool) {
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

// Scope returns the namespaces to watch and, for each, the namespace of its state.
func (c *Flags) Scope(log *slog.Logger) (namespaces, stateNSs []string, err error) {
	namespaces, stakaterScoped := c.scope(os.Getenv)
	if stakaterScoped {
		c.dropAllNamespacesFlags(log)
	}
	stateNSs = make([]string, len(namespaces))
	for i, ns := range namespaces {
		if stateNSs[i], err = stateNamespace(*c, ns); err != nil {
			return nil, nil, err
		}
	}
	return namespaces, stateNSs, nil
}

const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func stateNamespace(cli Flags, ns string) (string, error) {
	if cli.StateNamespace != "" {
		return cli.StateNamespace, nil
	}
	if ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns, nil
	}
	return "", errors.New("--state-namespace: required when --namespace is empty and the reloader runs outside a cluster")
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
