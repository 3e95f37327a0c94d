package reloader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reloader/reloader/coalesce"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// Explain (reloader explain) tells what the controller would do with one workload, and why,
// from the same caches, state and plan as the sync: a Controller built with DryRun and
// ListNamespace, started by Observe, runs no worker, sends no Event and writes nothing.

// Query names the workload Explain tells: Kind as the controller names it (Deployment, ...).
// Config, if set, limits the answer to that config, told even when the workload neither reads
// nor names it.
type Query struct {
	Kind, Namespace, Name string
	Config                *policy.ConfigRef
}

// Explanation is Explain's answer; `reloader explain -o json` prints it as it is.
type Explanation struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Watched: the workload's namespace is in the reloader's selection.
	Watched bool `json:"watched"`
	// Due: a reload is due for at least one config (held or not). Next is what the sync does:
	// up-to-date, reload, held-suspended, held-invalid or held-by-gate; or nothing, the
	// workload being out of its reach: not-watched or no-template.
	Due      bool     `json:"due"`
	Next     string   `json:"next"`
	Decision string   `json:"decision"`
	Problems []string `json:"problems,omitempty"` // its annotations' problems, as the Warning Events say them
	Gate     Gate     `json:"gate"`
	Configs  []Config `json:"configs"`
}

// Gate is the workload's gate now: each part with its time, empty when it has none.
type Gate struct {
	Window      string     `json:"window,omitempty"`
	WindowOpens *time.Time `json:"windowOpens,omitempty"` // when the window is closed now: when it opens
	MinInterval string     `json:"minInterval,omitempty"`
	LastReload  *time.Time `json:"lastReload,omitempty"`
	NextAllowed *time.Time `json:"nextAllowed,omitempty"` // under the minimum interval, when later than now
	PausePeriod string     `json:"pausePeriod,omitempty"`
	PausedAt    *time.Time `json:"pausedAt,omitempty"`
	PauseUntil  *time.Time `json:"pauseUntil,omitempty"`
	Problems    []string   `json:"problems,omitempty"` // schedule annotations that do not parse
}

// Config is one config the workload reads or names, as the rule judges it.
type Config struct {
	Kind   string             `json:"kind"`
	Name   string             `json:"name"`
	Exists bool               `json:"exists"`
	Read   []policy.Reference `json:"read,omitempty"` // where the pod spec reads it; empty: it does not
	// ReloadsOn: the workload's annotations make it reload on this config (named, a pattern, auto
	// or search); Keys, if set, on these keys only.
	ReloadsOn bool     `json:"reloadsOn"`
	Keys      []string `json:"keys,omitempty"`
	Hash      string   `json:"hash,omitempty"`    // short: the content the marker should hold
	Markers   []Marker `json:"markers,omitempty"` // the workload's markers of it, short
	State     string   `json:"state,omitempty"`   // the state's entry: a short hash, "deleted since ...", or ""
	Invalid   string   `json:"invalid,omitempty"` // why its content does not validate
	// HeldAfterRollback: a reload of its current content was rolled back; RolledBackAt is when
	// that reload was made, as the workload's history says.
	HeldAfterRollback bool       `json:"heldAfterRollback,omitempty"`
	RolledBackAt      *time.Time `json:"rolledBackAt,omitempty"`
	Reload            bool       `json:"reload"` // a reload is due for it
	Decision          string     `json:"decision"`
	// Why is the fact that decided, in policy.Judge's words; "" where the workload does not
	// reload on the config at all (Decision says why).
	Why string `json:"why,omitempty"`
}

// Marker is one copy of the workload's marker of a config: where it sits, and its short value.
type Marker struct {
	Place string `json:"place"`
	Value string `json:"value"`
}

// listNamespace is the one namespace the informers list: ListNamespace, else Namespace.
func (o Options) listNamespace() string { return cmp.Or(o.ListNamespace, o.Namespace) }

// Observe loads the state and the hash key, and syncs the caches, read only, then runs the
// start-up pass in memory, as a freshly started reloader would; the informers run until ctx
// ends. The Controller must be built with DryRun: no worker, Event or write follows.
func (c *Controller) Observe(ctx context.Context) error {
	if !c.opts.DryRun {
		return errors.New("observe: the controller must be built with DryRun, so that it writes nothing")
	}
	first, err := c.state.Load(ctx)
	if err != nil {
		return fmt.Errorf("read the state ConfigMap %s/%s: %w", c.opts.StateNamespace, c.opts.StateName, err)
	}
	if !c.opts.IgnoreSecrets {
		if err := c.opts.HashKey.read(ctx, readOnlySecrets{c.clients.Secrets(c.opts.StateNamespace)}, c.opts.StateNamespace); err != nil {
			return err
		}
	}
	c.stakater.Store(stakaterToCompare(c.state, first, c.opts.HashKey.inherited, c.log))
	c.informers = dropForbiddenKinds(ctx, c.caches.kinds, c.informers, c.log)
	if !c.runInformers(ctx, ctx) {
		return fmt.Errorf("list the configs and workloads of namespace %q: %w", c.opts.listNamespace(), cmp.Or(ctx.Err(), errors.New("not synced")))
	}
	c.startupPass() // in memory: the state is read only, and no worker takes the keys
	return nil
}

// Explainer tells what the sync would do with one workload, and why: reloader explain's part.
type Explainer struct {
	annotations     policy.Annotations
	namespace       string // Options.Namespace: the one namespace watched, if set
	clock           coalesce.Clock
	caches          *caches
	store           *state.Configs
	names           entrykeys.Names
	rule            *rule
	records         *configs.Records
	gates           *safe.Gates
	planner         *planner
	annotationCheck *annotationCheck
	fold            func() // the events' deltas, applied before anything is judged (journal.go)
}

// Explainer is the part that tells workloads; Observe first.
func (c *Controller) Explainer() *Explainer { return c.explainer }

// Explain tells what the sync of the workload q names would do now, and why, config by config.
func (x *Explainer) Explain(ctx context.Context, q Query) (Explanation, error) {
	if err := ctx.Err(); err != nil {
		return Explanation{}, err
	}
	kind := x.caches.kinds[q.Kind]
	if kind == nil {
		return Explanation{}, fmt.Errorf("the reloader does not reload %ss: %s", q.Kind, kindOffWhy(q.Kind))
	}
	x.fold()
	obj, exists, err := kind.Cached(q.Namespace + "/" + q.Name)
	if err != nil {
		return Explanation{}, fmt.Errorf("read %s %s/%s from the cache: %w", q.Kind, q.Namespace, q.Name, err)
	}
	if !exists {
		return Explanation{}, fmt.Errorf("%s %s/%s not found", q.Kind, q.Namespace, q.Name)
	}
	e := Explanation{Kind: q.Kind, Namespace: q.Namespace, Name: q.Name,
		Watched: x.caches.allowed(q.Namespace) && (x.namespace == "" || x.namespace == q.Namespace)}
	e.Problems = x.annotationCheck.problems(kind, obj) // as its Warning Events say them
	w, ok := x.rule.viewInAnyNamespace(kind, obj)
	if !ok {
		e.Decision, e.Next = "not reloaded: it has no pod template of its own", NextNoTemplate
		return e, nil
	}
	p := x.planner.plan(w)
	now := x.clock.Now()
	e.Gate = gateNow(x.gates.Of(w), now)
	seen := map[policy.ConfigRef]bool{}
	for _, pr := range p.pairs {
		seen[pr.ref] = true
		e.Configs = append(e.Configs, x.explainPair(w, p, pr))
	}
	for r := range w.Uses {
		if !seen[r] {
			e.Configs = append(e.Configs, x.explainPair(w, p, x.unjudged(w, r)))
		}
	}
	if q.Config != nil {
		e.Configs = slices.DeleteFunc(e.Configs, func(x Config) bool { return x.Kind != q.Config.Kind || x.Name != q.Config.Name })
		if len(e.Configs) == 0 {
			e.Configs = append(e.Configs, x.explainPair(w, p, x.unjudged(w, *q.Config)))
		}
	}
	slices.SortFunc(e.Configs, func(a, b Config) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name)) })
	e.Due, e.Next = len(p.changes) > 0, stepNames[p.next]
	if !e.Watched {
		e.Next = NextNotWatched
	}
	e.Decision = planWords(p, e.Watched, q.Namespace, now)
	return e, nil
}

// unjudged is config r of w as the sync does not judge it: w does not reload on it.
func (x *Explainer) unjudged(w workload.View, r policy.ConfigRef) pair {
	return pair{ref: r, watched: x.caches.Watched(r.Kind), rec: x.caches.lookup(workload.ConfigKey(r, w.Key.Namespace))}
}

// explainPair is one config of w as the plan judged it.
func (x *Explainer) explainPair(w workload.View, p plan, pr pair) Config {
	out := Config{Kind: pr.ref.Kind, Name: pr.ref.Name, Exists: pr.rec != nil, Read: policy.ReferencesTo(&w.Tmpl.Spec, pr.ref),
		ReloadsOn: pr.triggers, Keys: pr.j.Keys, Reload: pr.triggers && pr.j.Reload}
	if pr.rec != nil {
		out.Invalid = pr.rec.Invalid()
		want, _, ok := x.rule.wanted(w, pr.ref, pr.rec)
		if !ok {
			want = x.records.Content(pr.rec, nil)
		}
		out.Hash = workload.Short(want.Value)
	}
	for _, m := range policy.MarkerCopies(w.Meta.GetAnnotations(), w.Tmpl, pr.ref) {
		out.Markers = append(out.Markers, Marker{Place: m.Place, Value: shortMarker(m.Value)})
	}
	if st, known := x.store.Get(x.names.Config(workload.ConfigKey(pr.ref, w.Key.Namespace))); known {
		out.State = workload.Short(st.Hash)
		if st.Deleted {
			out.State = "deleted since " + st.Since.UTC().Format(time.RFC3339)
		}
	}
	if pr.triggers && pr.j.Held {
		out.HeldAfterRollback = true
		out.RolledBackAt = rolledBackAt(w.Meta.GetAnnotations()[policy.HistoryAnnotation], pr.ref)
	}
	out.Decision = pairWords(pr, p, x.explainWhyNot(w, pr), x.clock.Now())
	if pr.triggers {
		out.Why = pr.j.Reason.String()
	}
	return out
}

// shortMarker abbreviates a marker's value as short does a hash; the deletion's stays whole.
func shortMarker(v string) string {
	if v == policy.DeletedMarker || v == "" {
		return v
	}
	return workload.Short(v)
}

// rolledBackAt is when the newest rolled-back reload that applied r was made, from w's history.
func rolledBackAt(history string, r policy.ConfigRef) *time.Time {
	for _, e := range policy.ParseHistory(history) {
		if e.RolledBack && slices.ContainsFunc(e.Configs, func(s string) bool { return strings.HasPrefix(s, workload.RefName(r)+"@") }) {
			return &e.At
		}
	}
	return nil
}

// explainWhyNot says why w does not reload on config pr.ref at all, or "" when it does.
func (x *Explainer) explainWhyNot(w workload.View, pr pair) string {
	a := x.annotations
	candidate := slices.Contains(x.rule.ReloadsOn(w), pr.ref)
	switch {
	case pr.triggers:
		return ""
	case !candidate && len(policy.ReferencesTo(&w.Tmpl.Spec, pr.ref)) == 0:
		return fmt.Sprintf("%s %q is neither read by the pod spec nor named in a reload annotation", pr.ref.Kind, pr.ref.Name)
	case !pr.watched:
		return fmt.Sprintf("the reloader does not watch %ss (--resources-to-ignore)", pr.ref.Kind)
	case pr.rec != nil && a.Ignores(pr.rec.Annotations()):
		return fmt.Sprintf("the %s carries %s=\"true\"", pr.ref.Kind, a.Ignore)
	case candidate && pr.rec != nil && pr.rec.Invalid() != "":
		return "" // judged: held, not ignored (pairWords)
	case candidate:
		return fmt.Sprintf("search mode (%s) reloads only on configs that carry %s=\"true\"", a.Search, a.Match)
	}
	typed, named := a.ConfigMapAuto, a.ConfigMap
	if pr.ref.Kind == policy.KindSecret {
		typed, named = a.SecretAuto, a.Secret
	}
	return fmt.Sprintf("the pod spec reads it, but no reload annotation asks for it (%s or %s: \"true\", or name it in %s)", a.Auto, typed, named)
}

// pairWords is the decision for one config in plain words: the one place that words it.
func pairWords(pr pair, p plan, whyNot string, now time.Time) string {
	j := pr.j
	switch {
	case whyNot != "":
		return "not reloaded: " + whyNot
	case pr.rec != nil && pr.rec.Invalid() != "":
		return "held: its content does not validate (" + pr.rec.Invalid() + "); a restart would load it. The reload happens once it is fixed, reverted or deleted"
	case j.Held:
		return "held after a rollback of this content; a new content ends the hold"
	case j.Reload:
		return "due: " + stepWords(p, now)
	case pr.rec == nil && j.Untouched:
		return "not reloaded: it does not exist, and its deletion reloads nothing (--reload-on-delete is off, or the workload came after it)"
	case pr.rec == nil:
		return "up to date: the marker says it was deleted"
	case j.Stripped:
		return "up to date: the workload carries no marker of it (removed by helm upgrade or kubectl apply?); the reloader noted that its pods run the current content"
	case j.ByState:
		return "up to date: the workload carries no marker of it; the state says its pods run the current content"
	case j.Vouched:
		return "up to date: the pods of its last restart read the current content"
	}
	return "up to date: the marker holds the current content"
}

// Explanation.Next of a workload the sync does not reach.
const (
	NextNotWatched = "not-watched"
	NextNoTemplate = "no-template"
)

// stepNames name the steps in Explanation.Next.
var stepNames = map[step]string{stepUpToDate: "up-to-date", stepReload: "reload", stepSuspended: "held-suspended",
	stepInvalid: "held-invalid", stepGated: "held-by-gate"}

// stepWords says what the sync does with a due reload.
func stepWords(p plan, now time.Time) string {
	switch p.next {
	case stepSuspended:
		return "held while the CronJob is suspended (spec.suspend); one Job runs when it is resumed, if still due"
	case stepInvalid:
		return "held: the pods read " + strings.Join(p.invalid, ", ") + ", whose content does not validate; a restart would load it"
	case stepGated:
		return gateWords(p.gate, p.verdict, now)
	}
	return "reloads now (after --coalesce-period, once the change is seen)"
}

// gateWords says, with its time, what a closed gate holds a due reload for.
func gateWords(g policy.Gate, v policy.Verdict, now time.Time) string {
	at := v.Until.UTC().Format("2006-01-02 15:04:05 MST")
	switch {
	case v.Reason == policy.ReasonWindow:
		return fmt.Sprintf("reloads at %s, when window %q opens", at, g.WindowText)
	case v.Reason == policy.ReasonMinInterval:
		return fmt.Sprintf("reloads at %s, %s after the last reload (minimum interval)", at, g.MinInterval)
	case v.Action == policy.StartPause:
		return fmt.Sprintf("a pause period of %s starts now; it reloads at %s", g.PausePeriod, at)
	case v.Reason == policy.ReasonPause:
		return fmt.Sprintf("held by the pause period of %s until %s", g.PausePeriod, at)
	}
	return "held until the reload schedule parses: " + strings.Join(g.Problems, "; ")
}

// planWords is the workload's decision in plain words.
func planWords(p plan, watched bool, ns string, now time.Time) string {
	var what []string
	for _, ch := range p.changes {
		what = append(what, workload.RefName(ch.Ref))
	}
	switch {
	case !watched:
		return fmt.Sprintf("not reloaded: the reloader does not watch namespace %q (--namespace, --namespaces, --namespace-selector or --namespaces-to-ignore)", ns)
	case len(p.changes) == 0:
		return "up to date: nothing to reload"
	}
	return "due for " + strings.Join(what, ", ") + ": " + stepWords(p, now)
}

// gateNow is the workload's gate at now, each part with its time.
func gateNow(g policy.Gate, now time.Time) Gate {
	out := Gate{Window: g.WindowText, Problems: g.Problems}
	at := func(t time.Time) *time.Time {
		t = t.UTC()
		return &t
	}
	if g.Window != nil {
		if open := g.Window.NextOpen(now); open.After(now) {
			out.WindowOpens = at(open)
		}
	}
	if g.MinInterval > 0 {
		out.MinInterval = g.MinInterval.String()
		if !g.LastReload.IsZero() {
			out.LastReload = at(g.LastReload)
			if next := g.LastReload.Add(g.MinInterval); next.After(now) {
				out.NextAllowed = at(next)
			}
		}
	}
	if g.PausePeriod > 0 {
		out.PausePeriod = g.PausePeriod.String()
		if !g.PausedAt.IsZero() {
			out.PausedAt, out.PauseUntil = at(g.PausedAt), at(g.PausedAt.Add(g.PausePeriod))
		}
	}
	return out
}

// kindOffWhy names the flags that turn a workload kind off.
func kindOffWhy(kind string) string {
	switch kind {
	case "Rollout":
		return "--is-argo-rollouts is off, or --ignored-workload-types names rollouts"
	case "DeploymentConfig":
		return "--is-openshift is off, or --ignored-workload-types names deploymentconfigs"
	}
	return "--ignored-workload-types names them, or the reloader may not list them"
}
