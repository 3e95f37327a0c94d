package workload

import "github.com/reloader/reloader/policy"

// Key names a queued object: a config (ConfigMap, Secret) or a workload (Deployment, ...).
type Key struct{ Kind, Namespace, Name string }

func (k Key) String() string { return k.Kind + "/" + k.Namespace + "/" + k.Name }

// CacheKey is the key an informer caches the object under.
func (k Key) CacheKey() string { return k.Namespace + "/" + k.Name }

// ConfigKey is the key of the config r names in namespace ns.
func ConfigKey(r policy.ConfigRef, ns string) Key { return Key{r.Kind, ns, r.Name} }
