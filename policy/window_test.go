package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/reloader/reloader/policy"
)

func TestParseWindowsRejectsWhatItCannotRead(t *testing.T) {
	for _, tc := range []struct{ in, wantErr string }{
		{"", "empty"},
		{"Sat", "want [days]"},
		{"Sat 02:00", "want HH:MM-HH:MM"},
		{"Sat 02:00-04:00 Mars/Olympus", "unknown time zone"},
		{"Sat 02:00-04:00 Local", "unknown time zone"},
		{"Sab 02:00-04:00", "days"},
		{"Sat 2:00-04:00", "start"},
		{"Sat 02:00-24:01", "end"},
		{"Sat 24:00-02:00", "start"},
		{"Sat 02:00-04:00 UTC extra", "want [days]"},
		{"Sat 02:00-04:00;;", "window 2"},
		{";", "empty"},
		{"Sat 02:60-04:00", "start"},
	} {
		_, err := policy.ParseWindows(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseWindows(%q) = %v, want an error containing %q", tc.in, err, tc.wantErr)
		}
	}
}

func TestNextOpen(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	// Saturday 2026-11-21.
	at := func(day, clock string, loc *time.Location) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04:05", "2026-11-"+day+" "+clock, loc)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		name, spec string
		now, want  time.Time
	}{
		{"inside: now", "Sat 02:00-04:00", at("21", "03:00:00", time.UTC), at("21", "03:00:00", time.UTC)},
		{"start is inside", "Sat 02:00-04:00", at("21", "02:00:00", time.UTC), at("21", "02:00:00", time.UTC)},
		{"end is outside: next week", "Sat 02:00-04:00", at("21", "04:00:00", time.UTC), at("28", "02:00:00", time.UTC)},
		{"before: later today", "Sat 02:00-04:00", at("21", "01:59:59", time.UTC), at("21", "02:00:00", time.UTC)},
		{"other day", "Sat 02:00-04:00", at("23", "12:00:00", time.UTC), at("28", "02:00:00", time.UTC)},
		{"every day", "02:00-04:00", at("23", "12:00:00", time.UTC), at("24", "02:00:00", time.UTC)},
		{"seconds", "12:00:05-12:00:10", at("23", "12:00:00", time.UTC), at("23", "12:00:05", time.UTC)},
		{"zone", "Sat 02:00-04:00 Europe/Berlin", at("21", "00:30:00", time.UTC), at("21", "01:00:00", time.UTC)},
		{"zone, inside", "Sat 02:00-04:00 Europe/Berlin", at("21", "02:30:00", berlin), at("21", "02:30:00", berlin)},
		{"crosses midnight, after it", "Fri 22:00-02:00", at("21", "01:00:00", time.UTC), at("21", "01:00:00", time.UTC)},
		{"crosses midnight, belongs to its start day", "Sat 22:00-02:00", at("21", "01:00:00", time.UTC), at("21", "22:00:00", time.UTC)},
		{"range of days", "Mon-Fri 09:00-10:00", at("21", "12:00:00", time.UTC), at("23", "09:00:00", time.UTC)},
		{"range wrapping the week", "Fri-Mon 09:00-10:00", at("24", "12:00:00", time.UTC), at("27", "09:00:00", time.UTC)},
		{"list of days", "tue,THU 09:00-10:00", at("21", "12:00:00", time.UTC), at("24", "09:00:00", time.UTC)},
		{"several windows: the earliest", "Sun 01:00-02:00; Sat 23:00-24:00", at("21", "12:00:00", time.UTC), at("21", "23:00:00", time.UTC)},
		{"until midnight", "Sat 23:00-24:00", at("21", "23:59:59", time.UTC), at("21", "23:59:59", time.UTC)},
		{"end equal to the start: 24 hours, open", "Sat 10:00-10:00", at("22", "09:59:59", time.UTC), at("22", "09:59:59", time.UTC)},
		{"end equal to the start: 24 hours, then closed", "Sat 10:00-10:00", at("22", "10:00:00", time.UTC), at("28", "10:00:00", time.UTC)},
		{"zone utc in lower case", "Sat 02:00-04:00 utc", at("21", "01:00:00", time.UTC), at("21", "02:00:00", time.UTC)},
		{"a trailing separator", "Sat 02:00-04:00;", at("21", "01:00:00", time.UTC), at("21", "02:00:00", time.UTC)},
		{"a trailing separator and space", "Sat 02:00-04:00 ; ", at("21", "01:00:00", time.UTC), at("21", "02:00:00", time.UTC)},
	} {
		ws, err := policy.ParseWindows(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ws.NextOpen(tc.now); !got.Equal(tc.want) {
			t.Errorf("%s: NextOpen(%s) in %q = %s, want %s", tc.name, tc.now, tc.spec, got, tc.want)
		}
	}
}

// On the spring-forward day 02:00-03:00 does not exist in Berlin; the window is kept by the wall
// clock, so it is whatever time.Date makes of it, and never a week late.
func TestNextOpenAcrossADaylightSavingChange(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	ws, err := policy.ParseWindows("Sun 01:00-04:00 Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 28, 12, 0, 0, 0, berlin) // Saturday before the change
	got := ws.NextOpen(now)
	if want := time.Date(2026, 3, 29, 1, 0, 0, 0, berlin); !got.Equal(want) {
		t.Fatalf("NextOpen = %s, want %s", got, want)
	}
}
