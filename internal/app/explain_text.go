package app

import (
	"fmt"
	"strings"
	"time"

	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader"
)

// text is the report for a terminal: the workload's decision first, then each config's.
func text(rep Report) string {
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "%-10s %s\n", label+":", fmt.Sprintf(format, args...))
	}
	e, r := rep.Explanation, rep.Reloader
	fmt.Fprintf(&b, "%s %s/%s\n", e.Kind, e.Namespace, e.Name)
	leads := "no running reloader found"
	if r.Lease != "" {
		leads = fmt.Sprintf("%s holds Lease %s", r.Holder, r.Lease)
		if r.RenewTime != nil {
			leads += ", renewed " + stamp(*r.RenewTime)
		}
	} else if r.Pod != "" {
		leads = "pod " + r.Pod + " (no leader Lease)"
	}
	line("Reloader", "%s", leads)
	line("Flags", "%s", r.Flags)
	watched := "yes"
	if !e.Watched {
		watched = "NO"
	}
	line("Watches", "%s; this namespace: %s (state %s)", r.Scope, watched, r.State)
	for _, n := range r.Notes {
		line("Note", "%s", n)
	}
	line("Decision", "%s", e.Decision)
	if g := gateText(e.Gate); g != "" {
		line("Gate", "%s", g)
	}
	for _, p := range e.Problems {
		line("Problem", "%s", p)
	}
	for _, c := range e.Configs {
		fmt.Fprintf(&b, "\n%s/%s\n", c.Kind, c.Name)
		b.WriteString(configText(c))
	}
	return b.String()
}

func configText(c reloader.Config) string {
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "  %-9s %s\n", label+":", fmt.Sprintf(format, args...))
	}
	reads := "not read by the pod spec"
	if len(c.Read) > 0 {
		parts := make([]string, len(c.Read))
		for i, r := range c.Read {
			parts[i] = referenceText(r)
		}
		reads = strings.Join(parts, "; ")
	}
	line("read", "%s", reads)
	on := "no"
	if c.ReloadsOn {
		on = "yes"
		if len(c.Keys) > 0 {
			on += ", keys " + strings.Join(c.Keys, ", ") + " only"
		}
	}
	line("reloads", "%s", on)
	content := "does not exist"
	if c.Exists {
		content = "hash " + c.Hash
	}
	markers := "none"
	if len(c.Markers) > 0 {
		parts := make([]string, len(c.Markers))
		for i, m := range c.Markers {
			parts[i] = m.Value + " (" + m.Place + ")"
		}
		markers = strings.Join(parts, ", ")
	}
	line("content", "%s; marker %s; state %s", content, markers, orNone(c.State))
	if c.Invalid != "" {
		line("invalid", "%s", c.Invalid)
	}
	if c.HeldAfterRollback {
		since := ""
		if c.RolledBackAt != nil {
			since = ", the reload of " + stamp(*c.RolledBackAt)
		}
		line("held", "after a rollback%s", since)
	}
	line("decision", "%s", c.Decision)
	if c.Why != "" {
		line("why", "%s", c.Why)
	}
	return b.String()
}

func referenceText(r policy.Reference) string {
	s := r.How
	switch {
	case r.Env != "":
		s += " " + r.Env + " in container " + r.Container
	case r.Container != "":
		s += " in container " + r.Container
	case r.Volume != "":
		s += " " + r.Volume
	}
	if r.Init {
		s += " (init)"
	}
	if len(r.Keys) > 0 {
		s += ", keys " + strings.Join(r.Keys, ", ")
	}
	if r.Optional {
		s += ", optional"
	}
	return s
}

func gateText(g reloader.Gate) string {
	var parts []string
	if g.Window != "" {
		p := fmt.Sprintf("window %q", g.Window)
		if g.WindowOpens != nil {
			p += " (closed; opens " + stamp(*g.WindowOpens) + ")"
		} else {
			p += " (open)"
		}
		parts = append(parts, p)
	}
	if g.MinInterval != "" {
		p := "min-interval " + g.MinInterval
		if g.LastReload != nil {
			p += ", last reload " + stamp(*g.LastReload)
		}
		if g.NextAllowed != nil {
			p += ", next allowed " + stamp(*g.NextAllowed)
		}
		parts = append(parts, p)
	}
	if g.PausePeriod != "" {
		p := "pause-period " + g.PausePeriod
		if g.PausedAt != nil {
			p += ", paused " + stamp(*g.PausedAt) + " until " + stamp(*g.PauseUntil)
		}
		parts = append(parts, p)
	}
	for _, pr := range g.Problems {
		parts = append(parts, "does not parse: "+pr)
	}
	return strings.Join(parts, "; ")
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
