package reloader_test

import (
	"strings"
	"testing"
	"time"
)

// --webhook-url honours reloader/validate as workload mode does: content that does not parse
// calls nothing and gets one InvalidConfig Warning, counted in
// reloader_invalid_config_changes_total, and the state keeps the content last notified. The
// next valid content calls the URL once (the positive control); a revert, through invalid
// content, to the content last notified calls nothing.
func TestWebhookURLIsNotCalledForContentThatDoesNotValidate(t *testing.T) {
	t.Parallel()
	ns := cluster.NewNamespace(t)
	sink := newWebhookSink(t, 0)
	validatedConfig(t, ns, `{"v":0}`)
	r := startController(t, ns, controllerOpts{tweak: withWebhook(sink.srv.URL)})
	settle(t)
	original := r.ctrl.Recorded("v1.ConfigMap_app-config")

	setJSON(t, ns, `{"v":`)
	msgs := invalidWarning(t, ns, 1)
	settle(t)
	if n := sink.calls(); n != 0 {
		t.Fatalf("content that does not validate called the webhook (%d calls)", n)
	}
	if !strings.Contains(msgs, "--webhook-url is not called for it") {
		t.Fatalf("the warning does not say that the webhook is not called:\n%s", msgs)
	}
	if got := value(t, r.metrics.InvalidChanges.WithLabelValues("ConfigMap")); got != 1 {
		t.Fatalf("reloader_invalid_config_changes_total = %v, want 1", got)
	}
	if got := r.ctrl.Recorded("v1.ConfigMap_app-config"); got != original {
		t.Fatalf("state moved to %s under content that does not validate, want %s", got, original)
	}

	valid := setJSON(t, ns, `{"v":1}`)
	waitFor(t, 10*time.Second, "the valid content notified", func() (bool, error) { return sink.calls() == 1, nil })
	waitRecorded(t, r, "v1.ConfigMap_app-config", valid)
	settle(t)
	if n := sink.calls(); n != 1 {
		t.Fatalf("%d webhook calls for one valid change, want 1", n)
	}

	setJSON(t, ns, `{"v":`) // the same invalid content again is said again
	invalidWarning(t, ns, 2)
	done := configSyncs(t, r)
	setJSON(t, ns, `{"v":1}`)
	judgedAfter(t, r, done, "the revert to the content last notified")
	if n := sink.calls(); n != 1 {
		t.Fatalf("a revert to the content last notified called the webhook (%d calls, want 1)", n)
	}
}
