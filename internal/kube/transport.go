package kube

import (
	"net/http"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// The HTTP/2 receive buffers of the connection to the API server. Left to x/net's defaults, a
// stream may buffer 4 MiB and the connection 1 GiB of data the reloader has not read yet; every
// informer's start-up list arrives at once, and those buffers held 5.7 to 7.7 MB at the start-up
// peak (docs/lab/benchmarks-sessions.md). One namespace's watches (about ten) have stream
// windows that together stay under the connection's, so a slow reader cannot hold up the
// others; over several namespaces they may not, but an informer's reader hands events on
// without waiting.
const (
	streamReceiveBuffer = 256 << 10
	connReceiveBuffer   = 4 << 20
)

// limitReceiveBuffers returns cfg with its transport's HTTP/2 receive buffers set as above. The
// change is made on the transport client-go builds (and shares between equal TLS configs), before
// any wrapper of cfg sees it and before it opens a connection.
func limitReceiveBuffers(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	outer := c.WrapTransport
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if t := httpTransport(rt); t != nil && t.HTTP2 == nil {
			t.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerStream: streamReceiveBuffer, MaxReceiveBufferPerConnection: connReceiveBuffer}
		}
		if outer != nil {
			return outer(rt)
		}
		return rt
	}
	return c
}

// httpTransport is the *http.Transport under rt's wrappers (client-go's cache wraps it), or nil.
func httpTransport(rt http.RoundTripper) *http.Transport {
	for rt != nil {
		switch t := rt.(type) {
		case *http.Transport:
			return t
		case utilnet.RoundTripperWrapper:
			rt = t.WrappedRoundTripper()
		default:
			return nil
		}
	}
	return nil
}
