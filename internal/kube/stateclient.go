package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// typedConfigMaps is the Get of client-go's typed ConfigMap client.
type typedConfigMaps interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)
}

// StateClient is the state.ConfigMapClient a state.Store uses against the API server. A state
// write's response is the whole shard (up to 800 KB) and its managed fields, which the store
// never reads, so Patch and Create stream it away instead of reading it into memory: measured,
// buffering the patches' answers was four fifths of all the bytes the reloader allocated while
// configs changed, and the decoded answers to the shards' creation were 2 MB of the settled heap
// at 50,000 configs (docs/lab/benchmarks-sessions.md).
type StateClient struct {
	typedConfigMaps
	rest  rest.Interface
	codec runtime.ParameterCodec
	ns    string
}

// NewStateClient serves namespace ns: Get through typed, Patch and Create through core, the
// REST client of the core/v1 group.
func NewStateClient(typed typedConfigMaps, core rest.Interface, codec runtime.ParameterCodec, ns string) StateClient {
	return StateClient{typedConfigMaps: typed, rest: core, codec: codec, ns: ns}
}

// Patch applies the patch and returns a ConfigMap that holds only the resourceVersion of the
// answer, which the store's next write is made conditional on. An error answer is still decoded
// into an API status error.
func (c StateClient) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, _ ...string) (*corev1.ConfigMap, error) {
	return versionOnly(c.rest.Patch(pt).Namespace(c.ns).Resource("configmaps").Name(name).
		VersionedParams(&opts, c.codec).Body(data).Stream(ctx))
}

// Create creates the ConfigMap and returns one that holds only the resourceVersion of the
// answer, as Patch does.
func (c StateClient) Create(ctx context.Context, cm *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error) {
	return versionOnly(c.rest.Post().Namespace(c.ns).Resource("configmaps").
		VersionedParams(&opts, c.codec).Body(cm).Stream(ctx))
}

// versionOnly reads the resourceVersion of a write's answer and discards the rest.
func versionOnly(body io.ReadCloser, err error) (*corev1.ConfigMap, error) {
	if err != nil {
		return nil, err
	}
	defer body.Close()
	rv, err := resourceVersionOf(body)
	if err != nil {
		return nil, fmt.Errorf("read the answer to a state write: %w", err)
	}
	if _, err := io.Copy(io.Discard, body); err != nil {
		return nil, fmt.Errorf("read the answer to a state write: %w", err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}, nil
}

// resourceVersionOf reads a ConfigMap's JSON up to its metadata and returns its resourceVersion;
// the API server writes metadata before data, so the data is never decoded. "" if there is none.
func resourceVersionOf(r io.Reader) (string, error) {
	dec := json.NewDecoder(r)
	switch t, err := dec.Token(); {
	case err != nil:
		return "", err
	case t != json.Delim('{'):
		return "", errors.New("not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", err
		}
		if t != "metadata" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", err
			}
			continue
		}
		var meta struct {
			ResourceVersion string `json:"resourceVersion"`
		}
		err = dec.Decode(&meta)
		return meta.ResourceVersion, err
	}
	return "", nil
}

// ResourceVersion reads ConfigMap name's metadata only, as PartialObjectMetadata, and returns its
// resourceVersion: a shard's data is up to 800 KB.
func (c StateClient) ResourceVersion(ctx context.Context, name string) (string, error) {
	raw, err := c.rest.Get().Namespace(c.ns).Resource("configmaps").Name(name).
		SetHeader("Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	return resourceVersionOf(bytes.NewReader(raw))
}
