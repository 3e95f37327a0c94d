package kube

import (
	"net/http"
	"testing"

	"k8s.io/client-go/rest"
)

func TestTheTransportGetsSmallReceiveBuffersBeforeAnyWrapperSeesIt(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	var seen *http.Transport
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		seen = httpTransport(rt)
		return rt
	})
	if _, err := rest.TransportFor(limitReceiveBuffers(cfg)); err != nil {
		t.Fatal(err)
	}
	if seen == nil || seen.HTTP2 == nil {
		t.Fatalf("the wrapper saw transport %v without HTTP/2 settings", seen)
	}
	if got := seen.HTTP2.MaxReceiveBufferPerStream; got != streamReceiveBuffer {
		t.Fatalf("stream receive buffer %d, want %d", got, streamReceiveBuffer)
	}
}
