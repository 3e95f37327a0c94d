package alert

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestWebhookPostsStakatersBody(t *testing.T) {
	k := newSink(t, nil)
	if err := (Webhook{URL: k.srv.URL + "/token"}).Post(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(k.bodies) != 1 || k.bodies[0] != `{"webhook":"update successful"}` || k.types[0] != "application/json" {
		t.Fatalf("got %v (%v)", k.bodies, k.types)
	}
}

func TestWebhookFailuresNameNoURL(t *testing.T) {
	release := make(chan struct{})
	for name, handle := range map[string]func(http.ResponseWriter, *http.Request){
		"500":   func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", 500) },
		"hangs": func(http.ResponseWriter, *http.Request) { <-release },
	} {
		t.Run(name, func(t *testing.T) {
			k := newSink(t, handle)
			t.Cleanup(func() { // before the server closes, which waits for its handlers
				if name == "hangs" {
					close(release)
				}
			})
			began := time.Now()
			err := (Webhook{URL: k.srv.URL + "/SECRET-TOKEN", Timeout: 300 * time.Millisecond}).Post(context.Background())
			if err == nil || strings.Contains(err.Error(), "SECRET-TOKEN") {
				t.Fatalf("err %v: want an error without the URL", err)
			}
			if took := time.Since(began); took > 5*time.Second {
				t.Fatalf("took %s despite a 300ms timeout", took)
			}
		})
	}
}
