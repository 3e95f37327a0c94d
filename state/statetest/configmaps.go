// Package statetest holds a state.ConfigMapClient that keeps the shards in memory, so a test can
// build a real state.Store without an API server.
package statetest

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reloader/reloader/state"
)

// ConfigMaps is a state.ConfigMapClient over ConfigMaps held in memory, for the store's own logic
// (placement, encoding, entry kinds, tombstones, redundancy, queries) and for the parts that keep
// entries in it. Every write gets a new resourceVersion; a merge patch or update naming another
// version is a conflict. It knows nothing of permissions, object sizes or timing: what depends on
// them is proven in state/integration.
type ConfigMaps struct {
	mu      sync.Mutex
	version int
	cms     map[string]*corev1.ConfigMap
}

var _ state.ConfigMapClient = (*ConfigMaps)(nil)

// NewConfigMaps returns an empty ConfigMaps.
func NewConfigMaps() *ConfigMaps { return &ConfigMaps{cms: map[string]*corev1.ConfigMap{}} }

var configMaps = schema.GroupResource{Resource: "configmaps"}

func (c *ConfigMaps) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.ConfigMap, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cm, ok := c.cms[name]
	if !ok {
		return nil, apierrors.NewNotFound(configMaps, name)
	}
	return cm.DeepCopy(), nil
}

func (c *ConfigMaps) Create(_ context.Context, cm *corev1.ConfigMap, _ metav1.CreateOptions) (*corev1.ConfigMap, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cms[cm.Name]; ok {
		return nil, apierrors.NewAlreadyExists(configMaps, cm.Name)
	}
	if cm.ResourceVersion != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	return c.store(cm.DeepCopy()), nil
}

// Patch applies a JSON merge patch: a null value removes its key.
func (c *ConfigMaps) Patch(_ context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions, sub ...string) (*corev1.ConfigMap, error) {
	if pt != types.MergePatchType || len(sub) > 0 {
		return nil, apierrors.NewBadRequest("statetest.ConfigMaps serves merge patches of the object only")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cm, ok := c.cms[name]
	if !ok {
		return nil, apierrors.NewNotFound(configMaps, name)
	}
	var precondition struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &precondition); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err := c.conflict(cm, precondition.Metadata.ResourceVersion); err != nil {
		return nil, err
	}
	current, err := json.Marshal(cm)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	patched, err := jsonpatch.MergePatch(current, data)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	var out corev1.ConfigMap
	if err := json.Unmarshal(patched, &out); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	out.Name = name
	return c.store(&out), nil
}

// Update replaces a ConfigMap, as someone else's edit does.
func (c *ConfigMaps) Update(_ context.Context, cm *corev1.ConfigMap, _ metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.cms[cm.Name]
	if !ok {
		return nil, apierrors.NewNotFound(configMaps, cm.Name)
	}
	if err := c.conflict(old, cm.ResourceVersion); err != nil {
		return nil, err
	}
	return c.store(cm.DeepCopy()), nil
}

// List returns every ConfigMap, by name.
func (c *ConfigMaps) List(_ context.Context, _ metav1.ListOptions) (*corev1.ConfigMapList, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &corev1.ConfigMapList{}
	for _, name := range slices.Sorted(maps.Keys(c.cms)) {
		out.Items = append(out.Items, *c.cms[name].DeepCopy())
	}
	return out, nil
}

// conflict is the error for a write that names a version other than cm's; "" names none.
func (c *ConfigMaps) conflict(cm *corev1.ConfigMap, version string) error {
	if version == "" || version == cm.ResourceVersion {
		return nil
	}
	return apierrors.NewConflict(configMaps, cm.Name, errors.New("the object has been modified"))
}

// store keeps cm at a new version and returns a copy of it. The caller holds c.mu.
func (c *ConfigMaps) store(cm *corev1.ConfigMap) *corev1.ConfigMap {
	c.version++
	cm.ResourceVersion = strconv.Itoa(c.version)
	c.cms[cm.Name] = cm
	return cm.DeepCopy()
}
