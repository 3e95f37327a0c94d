package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/reloader/reloader/e2e/checker"
	"github.com/reloader/reloader/state"
)

// configEdits are the checker's writes of the ConfigMaps and Secrets the workloads read, and its
// reads of what the state ConfigMap holds for them.
type configEdits struct {
	*env
}

// configMeta is what config name is created with: its name, and for a config the sequence
// validates, the annotation that says key a is JSON.
func (c *configEdits) configMeta(name string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name}
	if slices.Contains(c.seq.Validated, name) {
		m.Annotations = map[string]string{"reloader/validate": "a=json"}
	}
	return m
}

// writeConfig creates (create) or replaces the data of config name, and records the write.
func (c *configEdits) writeConfig(name string, data checker.Content, create bool) error {
	ctx, core := c.ctx, c.cl.Client().CoreV1()
	var obj metav1.Object
	var err error
	if checker.IsSecret(name) {
		s := &corev1.Secret{ObjectMeta: c.configMeta(name), Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		if create {
			obj, err = core.Secrets(c.ns).Create(ctx, s, metav1.CreateOptions{})
		} else {
			var cur *corev1.Secret
			if cur, err = core.Secrets(c.ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
				cur.Data = s.Data
				obj, err = core.Secrets(c.ns).Update(ctx, cur, metav1.UpdateOptions{})
			}
		}
	} else {
		cm := &corev1.ConfigMap{ObjectMeta: c.configMeta(name), Data: map[string]string{}, BinaryData: map[string][]byte{}}
		for k, v := range data {
			if k == "bin" {
				cm.BinaryData[k] = []byte(v)
			} else {
				cm.Data[k] = v
			}
		}
		if create {
			obj, err = core.ConfigMaps(c.ns).Create(ctx, cm, metav1.CreateOptions{})
		} else {
			var cur *corev1.ConfigMap
			if cur, err = core.ConfigMaps(c.ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
				cur.Data, cur.BinaryData = cm.Data, cm.BinaryData
				obj, err = core.ConfigMaps(c.ns).Update(ctx, cur, metav1.UpdateOptions{})
			}
		}
	}
	if err == nil {
		c.rec.Configs.Written(name, checker.RVOf(obj), data)
	}
	return err
}

func (c *configEdits) deleteConfig(name string) error {
	core := c.cl.Client().CoreV1()
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	events := c.watchConfig(ctx, name)
	var err error
	if checker.IsSecret(name) {
		err = core.Secrets(c.ns).Delete(c.ctx, name, metav1.DeleteOptions{})
	} else {
		err = core.ConfigMaps(c.ns).Delete(c.ctx, name, metav1.DeleteOptions{})
	}
	if err == nil {
		c.rec.Configs.ConfigDeleted(name, c.deletionRV(events))
	}
	if events != nil {
		events.Stop()
	}
	return err
}

// watchConfig opens a watch of config name from the cluster's current resourceVersion, before
// the checker deletes it, so that deletionRV reads the deletion's own. A watch from the config's
// last version instead failed with "too old" after an API server restart (its watch cache starts
// at the restart), and the list taken then was later than a reload for the deletion, which looked
// older than it (soak seed 1795798155855983840@6). nil if a fault refuses it.
func (c *configEdits) watchConfig(ctx context.Context, name string) watch.Interface {
	core := c.cl.Client().CoreV1()
	list, err := core.ConfigMaps(c.ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil
	}
	opts := metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: list.ResourceVersion}
	var events watch.Interface
	if checker.IsSecret(name) {
		events, err = core.Secrets(c.ns).Watch(ctx, opts)
	} else {
		events, err = core.ConfigMaps(c.ns).Watch(ctx, opts)
	}
	if err != nil {
		return nil
	}
	return events
}

// deletionRV is the resourceVersion of a deletion, from the watch watchConfig opened before it:
// a DELETE returns none, and a list after it may return a later one, of writes the reloader made
// meanwhile, so a reload for the deletion looked older than it (soak seed
// 1795549728323936787@2). If the watch failed (a fault), a list's is taken: at or after the
// deletion.
func (c *configEdits) deletionRV(events watch.Interface) int64 {
	if events != nil {
		for ev := range events.ResultChan() {
			if m, ok := ev.Object.(metav1.Object); ok && ev.Type == watch.Deleted {
				return checker.RVOf(m)
			}
			if ev.Type == watch.Error {
				break
			}
		}
	}
	var rv int64
	if list, err := c.cl.Client().CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{Limit: 1}); err == nil {
		rv, _ = strconv.ParseInt(list.ResourceVersion, 10, 64)
	}
	return rv
}

func (c *configEdits) ignore(name, value string) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"reloader.stakater.com/ignore":%q}}}`, value))
	core := c.cl.Client().CoreV1()
	at := time.Now()
	var err error
	if checker.IsSecret(name) {
		_, err = core.Secrets(c.ns).Patch(c.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	} else {
		_, err = core.ConfigMaps(c.ns).Patch(c.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err == nil {
		c.rec.Configs.IgnoreSet(name, at, value)
	}
	return err
}

// noteUnknown records, before config name changes, whether the state ConfigMap holds content
// for it. If not, the change is one the state may not know about (see checker's forgotten), but
// only a loss the reloader did not cause itself can excuse it: the state ConfigMap gone (a
// state-delete fault, or never written because the leader that recorded it could not reach the
// API server before it had to exit), or a tombstone without a hash ("deleted@<unix>:": the
// config's deletion was rolled out, and a recreation made while no reloader leads is a first
// content). An entry the reloader dropped by itself counts as lost only after a state fault
// (state-delete, state-corrupt), which records its own loss.
func (c *configEdits) noteUnknown(name string) {
	e, err := c.stateEntry(name)
	hashless := strings.HasPrefix(e, "deleted@") && strings.HasSuffix(e, ":")
	gone := apierrors.IsNotFound(err) || hashless
	switch {
	case apierrors.IsNotFound(err):
		c.rec.StateGone(name)
	case hashless:
		c.rec.Forget(name)
	}
	c.rec.UnknownBefore(name, gone || err == nil && e == "")
}

// stateEntry reads config name's entry in the state ConfigMap.
func (c *configEdits) stateEntry(name string) (string, error) {
	kind := "ConfigMap"
	if checker.IsSecret(name) {
		kind = "Secret"
	}
	cm, err := c.cl.Client().CoreV1().ConfigMaps(c.ns).Get(c.ctx, "reloader-state", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	ns := "" // over all namespaces (a namespace selector), the entries name the namespace
	if c.seq.NsSelector {
		ns = c.ns
	}
	return cm.Data[state.Key(kind, ns, name)], nil
}

// waitRecorded waits up to timeout for the state ConfigMap to hold content for config name.
func (c *configEdits) waitRecorded(name string, timeout time.Duration) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if e, err := c.stateEntry(name); err == nil && e != "" && !strings.HasPrefix(e, "deleted@") {
			return true
		}
	}
	return false
}

// inWorld are the configs of the sequence's world: the fifth one only where it was made.
func (c *configEdits) inWorld() []string {
	if c.seq.Fold {
		return checker.JudgedConfigs
	}
	return checker.ConfigNames
}
