package state_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reloader/reloader/state"
	"github.com/reloader/reloader/state/statetest"
)

// noteKind is an entry kind as an owner registers it: "note.<anything>", holding "note:<digits>".
var noteKind = state.EntryKind{
	Prefix: "note.",
	MaxLen: func(string) int { return 12 },
	Valid: func(_, v string) error {
		digits, ok := strings.CutPrefix(v, "note:")
		if !ok || digits == "" || len(v) > 12 || strings.Trim(digits, "0123456789") != "" {
			return errors.New("a note holds note:<digits>")
		}
		return nil
	},
}

func loadedWithNotes(t *testing.T, c *statetest.ConfigMaps, log *bytes.Buffer) *state.Store {
	t.Helper()
	var w io.Writer = io.Discard
	if log != nil {
		w = log
	}
	s := state.New(c, "default", "reloader-state", textLog(w), noteKind)
	if _, err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// An entry of a registered kind is the owner's: stored as given, loaded back, listed by prefix,
// never a config (no tombstone, no ParseKey), and a value its kind refuses is never written.
func TestAnEntryOfARegisteredKindIsStoredAsItsOwnerEncodesIt(t *testing.T) {
	c := statetest.NewConfigMaps()
	var log bytes.Buffer
	s := loadedWithNotes(t, c, &log)
	note, long := "note.web", "note."+strings.Repeat("w", 240)
	notes := s.Kind(noteKind.Prefix)
	notes.SetValue(note, "note:1")
	notes.SetValue(long, "note:22")
	notes.SetValue("note.bad", "note:x")                                      // refused by its kind
	refused(t, "other.web", func() { notes.SetValue("other.web", "note:1") }) // no registered kind
	s.Configs().Set("note.hash", hashOf("a"))                                 // refused: no config's key
	s.Configs().Set(state.Key("ConfigMap", "", "cfg"), hashOf("cfg"))
	if got := strings.Count(log.String(), "refusing"); got != 2 {
		t.Errorf("%d refusals logged, want 2; log: %s", got, log.String())
	}
	if n := s.Configs().TombstoneMissing(func(string) bool { return false }, time.Now()); n != 1 {
		t.Errorf("TombstoneMissing tombstoned %d entries, want only the config's", n)
	}
	if _, _, _, ok := state.ParseKey(note); ok {
		t.Error("ParseKey reads a note as a config entry")
	}
	flush(t, s)
	if got := stored(t, c)[note]; got != "note:1" {
		t.Fatalf("stored %q, want note:1 as given", got)
	}

	again := loadedWithNotes(t, c, nil)
	notes = again.Kind(noteKind.Prefix)
	if got := notes.Keys(); len(got) != 2 || got[0] != note && got[1] != note {
		t.Fatalf("notes after a restart: %v, want %s and the long one", got, note)
	}
	if v, ok := notes.Value(long); !ok || v != "note:22" {
		t.Fatalf("long note after a restart = %q, %v", v, ok)
	}
	cfg := state.Key("ConfigMap", "", "cfg")
	refused(t, cfg, func() { notes.Value(cfg) }) // a config entry never reads as a note
	notes.Delete(note)
	flush(t, again)
	if _, ok := stored(t, c)[note]; ok {
		t.Fatal("a deleted note is still stored")
	}
}

// A value its kind refuses, stored by hand, is corrupt and dropped at load, as is a note's value
// under a config key; a key of no registered kind is someone else's, and kept as it is.
func TestAStoredValueItsKindRefusesIsCorrupt(t *testing.T) {
	c := statetest.NewConfigMaps()
	cfg := state.Key("ConfigMap", "", "cfg")
	s := loadedWithNotes(t, c, nil)
	s.Configs().Set(cfg, hashOf("cfg"))
	s.Kind(noteKind.Prefix).SetValue("note.web", "note:1")
	flush(t, s)
	cm, err := c.Get(context.Background(), "reloader-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[cfg], cm.Data["note.web"], cm.Data["other.web"] = "note:1", hashOf("x"), "anything"
	if _, err := c.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	again := loadedWithNotes(t, c, &log)
	if _, ok := again.Configs().Get(cfg); ok {
		t.Error("a note's value under a config key was loaded")
	}
	if _, ok := again.Kind(noteKind.Prefix).Value("note.web"); ok {
		t.Error("a hash under a note's key was loaded")
	}
	if !bytes.Contains(log.Bytes(), []byte("corrupt")) {
		t.Errorf("no corruption logged: %s", log.String())
	}
	flush(t, again)
	if got := stored(t, c); got["other.web"] != "anything" || got[cfg] != "" || got["note.web"] != "" {
		t.Errorf("stored %v; want the corrupt entries removed and someone else's key kept", got)
	}
}

// A kind's view serves its owner's entries only: a key of another kind, registered or not, or a
// config's, panics in a read as in a write, and leaves the state as it was.
func TestAKindViewRefusesAnotherKindsKey(t *testing.T) {
	tagKind := noteKind
	tagKind.Prefix = "tag."
	s := state.New(statetest.NewConfigMaps(), "default", "reloader-state", textLog(io.Discard), noteKind, tagKind)
	if _, err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	notes, tags := s.Kind(noteKind.Prefix), s.Kind(tagKind.Prefix)
	tags.SetValue("tag.web", "note:1")
	cfg := state.Key("ConfigMap", "", "cfg")
	refused(t, "tag.web", func() { notes.SetValue("tag.web", "note:2") })
	refused(t, "tag.web", func() { notes.Delete("tag.web") })
	refused(t, "tag.web", func() { notes.Value("tag.web") })
	refused(t, cfg, func() { notes.SetValue(cfg, "note:2") })
	refused(t, "pause.web", func() { s.Kind("pause.") })
	if v, ok := tags.Value("tag.web"); !ok || v != "note:1" {
		t.Errorf("tag.web = %q, %v after the note view was refused it; want note:1", v, ok)
	}
	if got := notes.Keys(); len(got) != 0 {
		t.Errorf("the note view lists %v, want no tag", got)
	}
}

// refused fails t unless f panics: a view was handed what is not its own (key).
func refused(t *testing.T, key string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s was not refused", key)
		}
	}()
	f()
}
