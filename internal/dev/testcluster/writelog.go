package testcluster

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/reloader/reloader/internal/kube"
)

// Write is an object the admin clients wrote (created, updated, patched or deleted), as the API
// server answered.
type Write struct {
	Resource  string // plural, lower case: "configmaps", "deployments"
	Namespace string
	Name      string
	// ResourceVersion is the object's as written; for a delete, its last before the delete, or
	// "" when the answer was a Status.
	ResourceVersion string
	Deleted         bool
	At              time.Time
}

// WriteLog keeps the last write of each object the admin clients (Client, AdminConfig) made, so
// that a test can wait until a watcher has seen its own writes rather than for a fixed time.
type WriteLog struct {
	mu   sync.Mutex
	last map[string]map[string]Write // by namespace, then resource/name
}

// InNamespace returns the last write of each object in namespace ns ("" for every namespace).
// A test's waits ask for their own namespace: the writes of the others are not scanned.
func (l *WriteLog) InNamespace(ns string) []Write {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Write
	for n, ws := range l.last {
		if ns == "" || n == ns {
			out = slices.AppendSeq(out, maps.Values(ws))
		}
	}
	return out
}

func (l *WriteLog) add(w Write) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[string]map[string]Write{}
	}
	if l.last[w.Namespace] == nil {
		l.last[w.Namespace] = map[string]Write{}
	}
	l.last[w.Namespace][w.Resource+"/"+w.Name] = w
}

// wrap records each successful write made through rt.
func (l *WriteLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || req.Method == http.MethodGet || resp.StatusCode/100 != 2 {
			return resp, err
		}
		resource, ns, name, ok := objectPath(req.URL.Path)
		if !ok {
			return resp, nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return resp, err
		}
		w := Write{Resource: resource, Namespace: ns, Name: name, Deleted: req.Method == http.MethodDelete, At: time.Now()}
		if meta, ok := writtenMeta(resp.Header.Get("Content-Type"), body); ok {
			w.ResourceVersion = meta.ResourceVersion
			w.Name = cmp.Or(name, meta.Name)
		}
		if w.Name != "" && (w.Deleted || w.ResourceVersion != "") { // not a collection delete
			l.add(w)
		}
		return resp, nil
	})
}

// writtenMeta decodes the metadata of the object an answer carries, as JSON or as the API
// server's protobuf envelope (the clientset's default), whose objects all keep it in field 1.
func writtenMeta(contentType string, body []byte) (metav1.ObjectMeta, bool) {
	var obj metav1.PartialObjectMetadata
	if strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf") {
		var env runtime.Unknown
		if !bytes.HasPrefix(body, []byte(protobufMagic)) || env.Unmarshal(body[len(protobufMagic):]) != nil ||
			env.Kind == "Status" || strings.HasSuffix(env.Kind, "List") || obj.Unmarshal(env.Raw) != nil {
			return obj.ObjectMeta, false
		}
	} else if json.Unmarshal(body, &obj) != nil || obj.Kind == "Status" || strings.HasSuffix(obj.Kind, "List") {
		return obj.ObjectMeta, false
	}
	return obj.ObjectMeta, obj.ResourceVersion != ""
}

// protobufMagic opens every protobuf answer of the API server.
const protobufMagic = "k8s\x00"

// objectPath parses a namespaced object's path (kube.ParseAPIPath); a create has no name.
// Cluster-scoped objects are not what the tests wait on.
func objectPath(path string) (resource, ns, name string, ok bool) {
	p, ok := kube.ParseAPIPath(path)
	if !ok || p.Namespace == "" || p.Resource == "" {
		return "", "", "", false
	}
	return p.Resource, p.Namespace, p.Name, true
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
