package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones must resolve in a distroless image, which has no zoneinfo
)

// Windows is a set of maintenance windows: times at which a workload may be reloaded.
//
// Grammar (ParseWindows):
//
//	windows = window *( ";" window ) [ ";" ]
//	window  = [ days " " ] clock "-" clock [ " " zone ]
//	days    = span *( "," span )         ; span = day | day "-" day, e.g. Mon-Fri or Fri-Mon
//	day     = Mon | Tue | Wed | Thu | Fri | Sat | Sun   (any case)
//	clock   = HH:MM or HH:MM:SS, 00:00 to 24:00
//	zone    = an IANA time zone (Europe/Berlin), or UTC in any case; UTC when omitted
//
// Without days a window is open every day. A window whose end is not after its start
// (22:00-02:00) crosses midnight and belongs to the day it starts on; one whose end equals its
// start (10:00-10:00) lasts 24 hours. Examples:
// "Sat 02:00-04:00 Europe/Berlin", "Mon-Fri 22:00-06:00; Sat,Sun 00:00-24:00".
type Windows []Window

// Window is one recurring interval of wall-clock time in a zone.
type Window struct {
	days       [7]bool // by time.Weekday
	start, end time.Duration
	loc        *time.Location
}

var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// ParseWindows reads the grammar above. The error names the part that is wrong.
func ParseWindows(s string) (Windows, error) {
	var out Windows
	trimmed := strings.TrimSpace(s)
	if strings.HasSuffix(trimmed, ";") && strings.TrimSpace(strings.TrimSuffix(trimmed, ";")) != "" {
		s = strings.TrimSuffix(trimmed, ";") // a trailing separator ends the list
	}
	for i, part := range strings.Split(s, ";") {
		w, err := parseWindow(strings.Fields(part))
		if err != nil {
			return nil, fmt.Errorf("window %d %q: %w", i+1, strings.TrimSpace(part), err)
		}
		out = append(out, w)
	}
	return out, nil
}

func parseWindow(fields []string) (Window, error) {
	w := Window{loc: time.UTC}
	if len(fields) == 0 {
		return w, errors.New("empty; want [days] HH:MM-HH:MM [zone]")
	}
	// The clock range is the one field holding ':'; days come before it, a zone after.
	at := -1
	for i, f := range fields {
		if strings.Contains(f, ":") {
			at = i
			break
		}
	}
	if at < 0 || at > 1 || len(fields) > at+2 {
		return w, errors.New("want [days] HH:MM-HH:MM [zone]")
	}
	if at == 1 {
		if err := w.parseDays(fields[0]); err != nil {
			return w, err
		}
	} else {
		w.days = [7]bool{true, true, true, true, true, true, true}
	}
	if err := w.parseRange(fields[at]); err != nil {
		return w, err
	}
	if len(fields) == at+2 && strings.EqualFold(fields[at+1], "UTC") {
		return w, nil
	}
	if len(fields) == at+2 {
		loc, err := time.LoadLocation(fields[at+1])
		if err != nil || fields[at+1] == "Local" {
			return w, fmt.Errorf("unknown time zone %q", fields[at+1])
		}
		w.loc = loc
	}
	return w, nil
}

func (w *Window) parseDays(s string) error {
	for _, span := range strings.Split(s, ",") {
		from, to, isRange := strings.Cut(span, "-")
		if !isRange {
			to = from
		}
		a, okA := dayNames[strings.ToLower(from)]
		b, okB := dayNames[strings.ToLower(to)]
		if !okA || !okB {
			return fmt.Errorf("days %q: want Mon..Sun, ranges (Mon-Fri) and commas", s)
		}
		for d := a; ; d = (d + 1) % 7 {
			w.days[d] = true
			if d == b {
				break
			}
		}
	}
	return nil
}

func (w *Window) parseRange(s string) error {
	from, to, ok := strings.Cut(s, "-")
	if !ok {
		return fmt.Errorf("times %q: want HH:MM-HH:MM", s)
	}
	var err error
	if w.start, err = parseClock(from); err != nil || w.start == 24*time.Hour {
		return fmt.Errorf("start %q: want HH:MM or HH:MM:SS before 24:00", from)
	}
	if w.end, err = parseClock(to); err != nil {
		return fmt.Errorf("end %q: want HH:MM or HH:MM:SS up to 24:00", to)
	}
	return nil
}

// parseClock reads HH:MM or HH:MM:SS as a time of day; 24:00 is the end of the day.
func parseClock(s string) (time.Duration, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, errors.New("not a clock time")
	}
	limits := []int{24, 59, 59}
	var d time.Duration
	units := []time.Duration{time.Hour, time.Minute, time.Second}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || len(p) != 2 || n < 0 || n > limits[i] {
			return 0, errors.New("not a clock time")
		}
		d += time.Duration(n) * units[i]
	}
	if d > 24*time.Hour {
		return 0, errors.New("past 24:00")
	}
	return d, nil
}

// NextOpen returns the earliest instant at or after t inside one of the windows: t itself when
// a window is open at t. Every window opens at least once a week, so the search is bounded.
func (ws Windows) NextOpen(t time.Time) time.Time {
	var best time.Time
	for _, w := range ws {
		if at := w.nextOpen(t); best.IsZero() || at.Before(best) {
			best = at
		}
	}
	return best
}

// nextOpen looks at the occurrences starting from the day before t (one that crosses midnight
// may still be open) to a week after it, on the wall clock of the window's zone.
func (w Window) nextOpen(t time.Time) time.Time {
	local := t.In(w.loc)
	y, m, d := local.Date()
	var best time.Time
	for off := -1; off <= 7; off++ {
		day := time.Date(y, m, d+off, 0, 0, 0, 0, w.loc)
		if !w.days[day.Weekday()] {
			continue
		}
		start, end := w.occurrence(day)
		switch {
		case !t.Before(start) && t.Before(end):
			return t
		case start.After(t) && (best.IsZero() || start.Before(best)):
			best = start
		}
	}
	return best
}

// occurrence is the window on the given day, by wall-clock time, so that a DST change moves
// neither of its ends.
func (w Window) occurrence(day time.Time) (start, end time.Time) {
	y, m, d := day.Date()
	clock := func(extraDays int, at time.Duration) time.Time {
		h, mi, sec := int(at/time.Hour), int(at%time.Hour/time.Minute), int(at%time.Minute/time.Second)
		return time.Date(y, m, d+extraDays, h, mi, sec, 0, w.loc)
	}
	start = clock(0, w.start)
	if w.end > w.start {
		return start, clock(0, w.end)
	}
	return start, clock(1, w.end)
}
