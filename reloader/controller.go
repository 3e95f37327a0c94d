// Package reloader is the controller: informers over ConfigMaps, Secrets and workloads feed one
// typed workqueue, and each key has one sync that reads top to bottom.
//
// The rule (package policy): every workload should carry, per config it reloads on, a marker of
// that config's current content. A config sync finds the dependents whose marker differs and
// opens a coalescing window for each; when a window closes, the workload sync patches every
// differing marker in one patch. A workload without a marker is judged by the reloader-state,
// which holds the content last fully rolled out per config; a config sync advances it once
// every dependent holds the current content. Data flows one way: config → window → workload
// patch; the workload's own update event then brings the config back for the state to advance.
package reloader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/reloader/reloader/alert"
	"github.com/reloader/reloader/coalesce"
	"github.com/reloader/reloader/internal/kube"
	"github.com/reloader/reloader/metrics"
	"github.com/reloader/reloader/policy"
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/internal/entrykeys"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/jobs"
	"github.com/reloader/reloader/reloader/runs"
	"github.com/reloader/reloader/reloader/safe"
	"github.com/reloader/reloader/reloader/workload"
	"github.com/reloader/reloader/state"
)

// Options configures a Controller.
type Options struct {
	// Namespace to watch; empty watches all namespaces.
	Namespace string
	// ListNamespace, when set, limits the informers to one namespace, the state's keys still
	// following Namespace (reloader explain: explain.go).
	ListNamespace string
	// NamespaceSelector and NamespacesToIgnore narrow all-namespaces mode.
	NamespaceSelector  labels.Selector
	NamespacesToIgnore []string
	// ResourceLabelSelector is pushed into the list/watch of ConfigMaps and Secrets.
	ResourceLabelSelector string
	// IgnoreConfigMaps / IgnoreSecrets turn one kind of config off (--resources-to-ignore).
	IgnoreConfigMaps, IgnoreSecrets bool
	// IgnoreSecretTypes are Secret types kept out of the list/watch (--ignore-secret-types).
	IgnoreSecretTypes []string
	// StateNamespace and StateName locate the state ConfigMaps.
	StateNamespace string
	StateName      string
	// Synced, if set, is called once the caches have synced, before the start-up pass: the
	// process hands back what only the lists needed (main.go).
	Synced func()
	// StartedUp, if set, is called once the initial sync has been processed: the process hands
	// back what only the start needed (main.go).
	StartedUp func()
	// StateWriter, set under leader election, names this replica in the state and makes every
	// state write conditional on the version it last saw (state.Store.Fence), so that a late
	// write of a leader that was frozen cannot land after its successor's start.
	StateWriter string
	// HashKey names the Secret, in StateNamespace, holding the key of Secret hashes; Run loads
	// it, or creates it, before anything is hashed (hashkey.go).
	HashKey HashKey
	// CoalescePeriod is the debounce window; zero acts at once. CoalesceMaxWait caps a window.
	CoalescePeriod  time.Duration
	CoalesceMaxWait time.Duration
	// ShutdownGrace bounds the flush of pending reloads when the context ends. Zero abandons
	// them, as a crash would; they are redone on the next start.
	ShutdownGrace time.Duration
	// Strategy is policy.StrategyEnvVars (default) or policy.StrategyAnnotations.
	Strategy string
	// ReloadOnCreate reloads dependents of a config that appears; ReloadOnDelete of one that goes.
	ReloadOnCreate, ReloadOnDelete bool
	// TombstoneRetention is how long a deleted config's entry outlives its last reference
	// (default 24h): a recreation within it is compared with the content before the deletion.
	TombstoneRetention time.Duration
	// StateCheckPeriod is how often the state's shards are checked, and what they lost written
	// back (state.Store.Keep); default DefaultStateCheckPeriod.
	StateCheckPeriod time.Duration
	// ArgoRollouts and OpenShift enable those workload kinds (through the dynamic client).
	ArgoRollouts, OpenShift bool
	// IgnoredWorkloadTypes turns kinds off: deployments, statefulsets, daemonsets, ...
	IgnoredWorkloadTypes []string
	Annotations          policy.Annotations
	Workers              int
	Clock                coalesce.Clock
	Log                  *slog.Logger
	Metrics              *metrics.Metrics

	// Follow is the default of the safe-reload annotations (--track-rollouts, --rollback,
	// --rollout-timeout): whether reloads are followed to the end of their rollouts, and undone
	// when those fail (safe/track.go).
	Follow policy.Follow
	// Gate holds the flag defaults of maintenance windows and the minimum interval (safe/gates.go).
	Gate policy.GateDefaults
	// Alerts, when set, gets a message after each reload (ALERT_ON_RELOAD); Run delivers them.
	Alerts *alert.Sender
	// Webhook, when its URL is set (--webhook-url), is called on each config change instead of
	// reloading: no workload is watched (webhook.go).
	Webhook alert.Webhook

	// DryRun judges and reports but writes nothing: no workload, Job, state, hash key Secret,
	// webhook call or alert; each due reload is a WouldReload Event instead (dryrun.go).
	DryRun bool

	// stateWriteWait replaces defaultStateWriteWait when set (tests: export_test.go).
	stateWriteWait time.Duration
	// stateBudget replaces state.ShardBudget when set (tests: export_test.go).
	stateBudget int
	// refusedRetryMax replaces refusedRetryMax when set (tests: export_test.go).
	refusedRetryMax time.Duration
}

// InScope says whether namespace ns is one this reloader may act in (the Jobs it recreates).
func (o Options) InScope(ns string) bool {
	if o.Namespace != "" {
		return ns == o.Namespace
	}
	return ns != "" && !slices.Contains(o.NamespacesToIgnore, ns)
}

// DefaultRolloutTimeout is how long a followed rollout may run before it counts as timed out,
// unless a flag or annotation says otherwise: longer than a Deployment's default progress
// deadline (10 minutes), so that for Deployments the deadline decides.
const DefaultRolloutTimeout = 15 * time.Minute

// Controller restarts workloads when the configs they depend on change.
type Controller struct {
	opts    Options
	clients *kube.Clients
	log     *slog.Logger
	metrics *metrics.Metrics

	// decisiveAnnotations are the workload annotations the reloader reads (policy.OnWorkload),
	// listed once: every workload update event checks them.
	decisiveAnnotations []string

	informers []cache.SharedIndexInformer
	caches    *caches // what the informers hold (caches.go)
	state     *state.Store
	names     entrykeys.Names // the state's key rule
	queue     workqueue.TypedRateLimitingInterface[workload.Key]
	refusals  workqueue.TypedRateLimiter[workload.Key] // spaces the retries of a refused patch
	backlog   *backlog                                 // the start-up's keys, fed to queue a window at a time (backlog.go)
	coalescer *coalesce.Coalescer[workload.Key]
	changes   *changeLog
	journal   *journal        // the events' deltas, folded by each sync before it judges (journal.go)
	entered   *enteredConfigs // configs whose namespace entered the selection (entered.go)
	events    record.EventBroadcaster
	reports   *report.Reporter

	// The parts, each with its own file.
	rule            *rule               // the facts of a workload and a config, and the decision (judge.go)
	records         *configs.Records    // what a config is: its record, content values and entries
	notes           *runs.Notes         // what pods run that no marker says, from events (reloader/runs)
	strips          *runs.Strips        // what workloads run without a marker (reloader/runs)
	restarts        *runs.Restarts      // what each workload's last restart may have given its pods unseen (reloader/runs)
	validation      *safe.Validation    // content that does not validate is not rolled out (safe/validate.go)
	gates           *safe.Gates         // reloads held by their gate (safe/gates.go)
	lag             *safe.Lag           // a config cache behind the workload cache (safe/lag.go)
	tracker         *safe.Tracker       // follows reloads to the end of their rollouts (safe/track.go)
	rollouts        rollouts            // the sync of a rollout key (rollouts.go)
	planner         *planner            // what is due of a workload, and what holds it (planner.go)
	explainer       *Explainer          // reloader explain: what the sync would do, and why (explain.go)
	jobs            *jobs.Runs          // a Job run again: deleted, created again (reloader/jobs)
	outcomes        *outcomes           // how each reload's patch ended, told (outcomes.go)
	tombstones      *configs.Tombstones // entries of configs that do not exist
	entries         *workloadEntries    // holds and strips of each workload in the state (workloadentries.go)
	annotationCheck *annotationCheck    // malformed or dangling reload annotations, said once (annotationcheck.go)
	webhook         *webhookSync        // with --webhook-url, the config sync (webhook.go)
	suspensions     *jobs.Suspensions   // no Job for a suspended CronJob until its resume (reloader/jobs)
	rehearsal       *rehearsal          // with --dry-run, what is reported instead of done (dryrun.go)

	ready atomic.Bool
	busy  atomic.Int32 // workers inside a sync
	// stakater: stakater's variables are still compared (stakater.go).
	stakater atomic.Bool
	// noted is closed once the start-up's note that stakater's variables were compared is done
	// (written, found written, or given up).
	noted chan struct{}
}

// Ready reports whether the caches have synced and the controller is processing changes.
func (c *Controller) Ready() bool { return c.ready.Load() }

// newStore is the state over client, with the entries the parts keep: holds, strips, rollback
// reads, pending reloads and pauses of ours.
func newStore(client state.ConfigMapClient, namespace, name string, log *slog.Logger) *state.Store {
	return state.New(client, namespace, name, log, entrykeys.ContentEntries(entrykeys.HoldPrefix),
		entrykeys.ContentEntries(entrykeys.StripPrefix), entrykeys.ContentEntries(entrykeys.RollbackReadPrefix),
		safe.PendingEntries(), safe.PauseEntries())
}

// New builds a Controller; Run starts it.
func New(clients *kube.Clients, opts Options) (*Controller, error) {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Clock == nil {
		opts.Clock = coalesce.RealClock{}
	}
	if opts.Strategy == "" {
		opts.Strategy = policy.StrategyEnvVars
	}
	if opts.Follow.Timeout <= 0 {
		opts.Follow.Timeout = DefaultRolloutTimeout
	}
	if opts.TombstoneRetention <= 0 {
		opts.TombstoneRetention = 24 * time.Hour
	}
	if opts.StateCheckPeriod <= 0 {
		opts.StateCheckPeriod = DefaultStateCheckPeriod
	}
	c := &Controller{
		noted:   make(chan struct{}),
		opts:    opts,
		clients: clients,
		log:     opts.Log,
		metrics: opts.Metrics,
		names:   entrykeys.Names{Single: opts.Namespace != ""},
		state:   newStore(stateClient(clients, opts), opts.StateNamespace, opts.StateName, opts.Log),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(retryLimiter(),
			workqueue.TypedRateLimitingQueueConfig[workload.Key]{Name: "reloader", MetricsProvider: opts.Metrics.WorkqueueProvider(),
				Clock: kube.QueueClock{WithTicker: clock.RealClock{}}}),
		refusals: workqueue.NewTypedItemExponentialFailureRateLimiter[workload.Key](refusedRetryMin, cmp.Or(opts.refusedRetryMax, refusedRetryMax)),
		changes:  newChangeLog(),
		journal:  &journal{},
		entered:  &enteredConfigs{},
		restarts: runs.NewRestarts(),

		decisiveAnnotations: append(opts.Annotations.OnWorkload(), opts.Annotations.GateAnnotations()...),
		events:              record.NewBroadcaster(),
		caches: &caches{annotations: opts.Annotations, selector: opts.NamespaceSelector, ignored: opts.NamespacesToIgnore,
			labelSelector: opts.ResourceLabelSelector, ignoredSecretTypes: opts.IgnoreSecretTypes},
	}
	c.opts.HashKey.runOnly, _ = HashKeyOf(newHashKeySecret(""))
	c.state.SignWrites(flushStamps{key: &c.opts.HashKey, namespace: opts.StateNamespace})
	c.strips = runs.NewStrips(c.state.Kind(entrykeys.StripPrefix), c.names)
	c.records = configs.NewRecords(opts.Annotations, &c.opts.HashKey, c.state.Configs(), c.names, c.strips)
	c.state.OnWrite = c.metrics.ObserveStateWrite
	if opts.stateBudget > 0 {
		state.SetBudget(c.state, opts.stateBudget)
	}
	if opts.StateWriter != "" {
		c.state.Fence(opts.StateWriter)
	}
	c.backlog = newBacklog(c.queue)
	c.reports = report.New(c.events.NewRecorder(clients.Scheme, corev1.EventSource{Component: "reloader"}), opts.Log)
	c.coalescer = coalesce.New(opts.CoalescePeriod, opts.CoalesceMaxWait, opts.Clock, c.queue.Add)
	c.gates = safe.NewGates(safe.GatesDeps{Annotations: opts.Annotations, Defaults: opts.Gate, Clock: opts.Clock,
		Store: c.state.Kind(entrykeys.PendingPrefix, entrykeys.PausePrefix), Names: c.names, Reports: c.reports, Log: c.log,
		Gauge: c.metrics.Deferred, Queue: c.queue, Deferrals: safe.NewDeferrals(opts.Clock, c.queue)})
	c.tracker = safe.NewTracker(safe.TrackerDeps{Defaults: opts.Follow, Clock: opts.Clock,
		Store: c.state.Kind(entrykeys.HoldPrefix, entrykeys.RollbackReadPrefix), Flusher: c.state, Names: c.names, Reports: c.reports,
		Log: c.log, Metrics: c.metrics, Runs: runs.Rollbacks{Restarts: c.restarts, Strips: c.strips}, Queue: c.queue, Pauses: c.gates,
		PausedAt: opts.Annotations.PausedAt})
	c.rule = &rule{annotations: opts.Annotations, strategy: opts.Strategy, reloadOnCreate: opts.ReloadOnCreate,
		reloadOnDelete: opts.ReloadOnDelete, caches: c.caches, records: c.records, store: c.state.Configs(), names: c.names,
		tracker: c.tracker, restarts: c.restarts, strips: c.strips, stakater: &c.stakater, unrecorded: &unrecorded{state: c.state}}
	c.rollouts = rollouts{rule: c.rule, tracker: c.tracker}
	c.notes = runs.NewNotes(c.rule, c.strips, c.restarts, c.records, c.records)
	c.outcomes = &outcomes{reports: c.reports, metrics: c.metrics, log: c.log, alerts: opts.Alerts, view: c.rule.View}
	c.annotationCheck = &annotationCheck{annotations: opts.Annotations, gate: opts.Gate, follow: opts.Follow, caches: c.caches, reports: c.reports, log: c.log, ready: c.ready.Load}
	c.entries = &workloadEntries{annotations: opts.Annotations, caches: c.caches,
		store: c.state.Kind(entrykeys.HoldPrefix, entrykeys.StripPrefix, entrykeys.RollbackReadPrefix), names: c.names}
	c.tombstones = configs.NewTombstones(configs.TombstoneDeps{Store: c.state.Configs(), Names: c.names, Clock: opts.Clock, Log: c.log,
		Retention: opts.TombstoneRetention, ReloadOnCreate: opts.ReloadOnCreate, ReloadOnDelete: opts.ReloadOnDelete,
		Namespace: opts.Namespace, Watched: c.caches, Queue: c.queue})
	c.suspensions = jobs.NewSuspensions(c.reports, c.log)
	c.rehearsal = newRehearsal(c.reports, c.metrics, c.log, opts.Clock.Now)
	if opts.DryRun {
		c.rule.rehearsed = c.rehearsal.view
	}
	c.lag = safe.NewLag(c.records, c.rule, safe.LiveClients{Clients: clients})
	c.validation = safe.NewValidation(safe.ValidationDeps{Records: c.records, Reports: c.reports, Log: c.log,
		Counter: c.metrics.InvalidChanges, Gates: c.gates, Queue: c.queue, Dependents: c.rule,
		Cache: c.rule, Watched: c.caches, Webhook: opts.Webhook.URL != ""})
	c.rehearsal.validation, c.rehearsal.gates = c.validation, c.gates
	c.planner = &planner{rule: c.rule, caches: c.caches, gates: c.gates, validation: c.validation, clock: opts.Clock}
	c.explainer = &Explainer{annotations: opts.Annotations, namespace: opts.Namespace, clock: opts.Clock, caches: c.caches,
		store: c.state.Configs(), names: c.names, rule: c.rule, records: c.records, gates: c.gates, planner: c.planner,
		annotationCheck: c.annotationCheck, fold: c.fold}
	if opts.Webhook.URL != "" {
		c.webhook = &webhookSync{webhook: opts.Webhook, annotations: opts.Annotations, reloadOnCreate: opts.ReloadOnCreate,
			reloadOnDelete: opts.ReloadOnDelete, caches: c.caches, changes: c.changes, store: c.state.Configs(), names: c.names,
			records: c.records, tombstones: c.tombstones, validation: c.validation, log: c.log}
	}
	if err := c.buildInformers(); err != nil {
		return nil, err
	}
	return c, nil
}

// retryLimiter spaces the retries of one key exponentially, but never more than 5 s apart, so a
// reload that failed during an API outage happens within seconds of its end.
func retryLimiter() workqueue.TypedRateLimiter[workload.Key] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[workload.Key](20*time.Millisecond, 5*time.Second),
		&workqueue.TypedBucketRateLimiter[workload.Key]{Limiter: newBucket(50, 300)},
	)
}

// Run loads the state, syncs the caches, tombstones the configs deleted while it was down, and
// processes the queue until ctx ends; then it flushes pending reloads within the shutdown grace.
func (c *Controller) Run(ctx context.Context) error {
	first, ok := c.loadState(ctx)
	if !ok {
		return nil // stopped before the API server answered
	}
	// A reloader that watches no Secrets needs no key.
	var secrets secretGetCreator = c.clients.Secrets(c.opts.StateNamespace)
	if c.opts.DryRun {
		secrets = readOnlySecrets{secrets}
	}
	if !c.opts.IgnoreSecrets && !c.opts.HashKey.load(ctx, secrets, c.opts.StateNamespace, c.log) {
		return nil // stopped before the hash key was read
	}
	if first {
		c.log.Info("no state found: recording the current hash of every config a workload reads; only workloads whose marker differs are reloaded")
	}
	c.stakater.Store(stakaterToCompare(c.state, first, c.opts.HashKey.inherited, c.log))
	if kube.ProbePermissions(ctx, c.clients, c.opts.Namespace, c.opts.StateNamespace, c.log) {
		c.events.StartRecordingToSink(kube.NewQuietSink(kube.EventSink{Client: c.clients.Events}, c.log))
	}
	defer c.events.Shutdown()
	// The informers outlive ctx until the shutdown flush is over: the workloads' update events
	// after the last patches are what lets the state advance.
	watchCtx, stopWatching := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatching()
	c.informers = dropForbiddenKinds(ctx, c.caches.kinds, c.informers, c.log)
	c.metrics.Zero(slices.Sorted(maps.Keys(c.caches.kinds)), slices.Sorted(maps.Keys(c.caches.configs)),
		[]string{policy.OutcomeSucceeded, policy.OutcomeFailed, policy.OutcomeTimedOut, policy.OutcomeSuperseded})
	if !c.runInformers(watchCtx, ctx) {
		c.log.Info("stopped before the caches synced")
		return nil
	}
	if c.opts.Synced != nil {
		c.opts.Synced()
	}
	// Once the config caches hold the content now: a Job is created with its markers.
	if c.caches.kinds["Job"] != nil && !c.opts.DryRun {
		c.jobs.Resume(ctx)
	}
	c.startupPass()
	c.gates.ForgetGone(c.caches.workloadKeys())
	c.entries.forgetGone()
	c.log.Info("caches synced; reloading", "namespace", c.opts.Namespace, "coalesce_period", c.opts.CoalescePeriod,
		"strategy", c.opts.Strategy, "kinds", len(c.caches.kinds))

	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	stateCtx, stopState := context.WithCancel(context.WithoutCancel(ctx))
	stateDone := make(chan struct{})
	if c.opts.DryRun {
		close(stateDone) // what the state learns stays in memory
	} else {
		go func() { defer close(stateDone); c.state.Run(stateCtx, 50*time.Millisecond) }()
		go c.state.Keep(stateCtx, c.opts.StateCheckPeriod)
	}
	var workers sync.WaitGroup
	for range c.opts.Workers {
		workers.Go(func() {
			for c.processNext(workCtx) {
			}
		})
	}
	full := false // reportGauges's goroutine alone uses it
	go reportGauges(workCtx, c.metrics, c.state, func() int { return c.coalescer.Pending() + c.queued() },
		func(unsaved, spare int) { full = c.warnStateFull(workCtx, full, unsaved, spare) })
	if c.opts.Alerts != nil && !c.opts.DryRun {
		go c.opts.Alerts.Run(workCtx)
	}
	go c.tombstones.Sweep(workCtx)
	noted := c.noted
	if c.opts.DryRun {
		go c.rehearsal.endStakaterComparison(workCtx, c.drained, &c.stakater)
		close(noted)
	} else if !stakaterCompared(c.state) {
		go func() {
			defer close(noted)
			noteStakaterCompared(workCtx, c.state, c.drained, &c.stakater, c.log)
		}()
	} else {
		close(noted)
	}
	go c.startedUp(workCtx, noted)
	c.ready.Store(true)
	c.annotationCheck.checkAll()

	<-ctx.Done()
	c.gates.Deferrals().StopAll()
	c.shutdown(&workers, stopWork)
	stopState()
	<-stateDone
	if c.opts.ShutdownGrace == 0 || c.opts.DryRun {
		return nil
	}
	flushCtx, cancel := context.WithTimeout(context.Background(), c.opts.ShutdownGrace)
	defer cancel()
	return c.state.Flush(flushCtx)
}

// loadState reads the state, retrying until the API server answers, so that a reloader started
// while the API is unreachable (or before its Role is applied) waits, unready, instead of
// exiting. Each distinct error is logged once; retries back off up to 5 s.
func (c *Controller) loadState(ctx context.Context) (first, ok bool) {
	backoff, said := 200*time.Millisecond, ""
	for {
		first, err := c.state.Load(ctx)
		if err == nil {
			if said != "" {
				c.log.Info("state loaded; the API server answers again")
			}
			return first, true
		}
		if msg := err.Error(); msg != said {
			c.log.Error("cannot load the state; retrying until the API server answers (not ready meanwhile)", "err", err)
			said = msg
		}
		select {
		case <-ctx.Done():
			return false, false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// startedUp calls Options.StartedUp once the initial sync has been processed and the state
// has written what it recorded, the note of stakater's comparison (noted) included: the start's
// last garbage and code are those writes' (at 20,000 configs they came after the hook, their
// garbage stayed in the heap and their code in the resident pages through the quiet that
// followed). A state that cannot be written holds the hook back defaultStateWriteWait at most.
func (c *Controller) startedUp(ctx context.Context, noted <-chan struct{}) {
	for !c.drained(ctx, time.Second) {
		if ctx.Err() != nil {
			return
		}
	}
	done := func() bool {
		select {
		case <-noted:
			return c.stateClean()
		default:
			return false
		}
	}
	wait := cmp.Or(c.opts.stateWriteWait, defaultStateWriteWait)
	for deadline := time.Now().Add(wait); !done() && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	if c.opts.StartedUp != nil {
		c.opts.StartedUp()
	}
}

// defaultStateWriteWait bounds startedUp's wait for the state's first write.
const defaultStateWriteWait = 30 * time.Second

// DefaultStateCheckPeriod is the default StateCheckPeriod. Each check of an idle shard is a
// metadata GET, whose managedFields list every key: a minute keeps that below one request per
// hundred changes at a change a second (BENCHMARKS.md).
const DefaultStateCheckPeriod = time.Minute

// shutdown closes every coalescing window and lets the workers drain the queue for at most the
// grace period.
func (c *Controller) shutdown(workers *sync.WaitGroup, stopWork context.CancelFunc) {
	if c.opts.ShutdownGrace > 0 {
		c.coalescer.Flush()
		c.log.Info("shutting down: flushing pending reloads", "queued", c.queued(), "grace", c.opts.ShutdownGrace)
		if !c.drained(context.Background(), c.opts.ShutdownGrace) {
			c.log.Warn("shutdown grace elapsed; remaining reloads are redone on the next start", "queued", c.queued())
		}
	}
	c.queue.ShutDown()
	stopWork()
	workers.Wait()
	c.fold() // what arrived after the last sync (our own patch's event) reaches the state's last flush
}

// drained waits until the queue has been empty, with no worker busy and every write of ours
// shown by the cache, for 200 ms in a row: the update event of a last patch queues its configs,
// and may take longer than that to arrive on a loaded machine (TestShutdownFlushesPendingReloads
// failed so in make test). The workqueue's own ShutDownWithDrain waits only for items already
// being processed, not for queued ones.
func (c *Controller) drained(ctx context.Context, grace time.Duration) bool {
	deadline := time.Now().Add(grace)
	quietSince := time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if c.queued() != 0 || c.busy.Load() != 0 || c.journal.Pending() != 0 || c.restarts.WritesUnseen(c.caches.version) {
			quietSince = time.Now()
		} else if time.Since(quietSince) >= 200*time.Millisecond {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func (c *Controller) processNext(ctx context.Context) bool {
	k, quit := c.queue.Get()
	if quit {
		return false
	}
	c.busy.Add(1)
	defer c.busy.Add(-1)
	defer c.backlog.refill() // after Done: the key has left the queue
	defer c.queue.Done(k)
	start := time.Now()
	err := c.sync(ctx, k)
	c.metrics.Stakater.Reconciled(err != nil && !errors.Is(err, workload.ErrStale), time.Since(start))
	var later workload.RetryLater
	switch {
	case err == nil:
		c.queue.Forget(k)
		c.refusals.Forget(k)
	case errors.Is(err, workload.ErrStale):
		c.log.Debug("the cache is behind the workload; retrying", "key", k.String())
		c.queue.AddRateLimited(k)
	case errors.As(err, &later):
		c.metrics.Stakater.SyncFailed()
		after := c.refusals.When(k)
		c.log.Error("sync failed; will retry", "key", k.String(), "err", err, "retry_in", after.String())
		c.queue.Forget(k)
		c.queue.AddAfter(k, after)
	default:
		c.metrics.Stakater.SyncFailed()
		c.log.Error("sync failed; will retry", "key", k.String(), "err", err, "retries", c.queue.NumRequeues(k))
		c.queue.AddRateLimited(k)
	}
	return true
}

func (c *Controller) sync(ctx context.Context, k workload.Key) error {
	c.fold()
	if _, ok := c.caches.configs[k.Kind]; ok {
		defer c.metrics.Stakater.ConfigSynced(k.Kind)
		if c.webhook != nil {
			return c.webhook.sync(ctx, k)
		}
		return c.syncConfig(k)
	}
	if kind, ok := c.caches.kinds[k.Kind]; ok {
		return c.syncWorkload(ctx, kind, k)
	}
	if kind, ok := c.caches.kinds[strings.TrimPrefix(k.Kind, safe.RolloutPrefix)]; ok {
		if c.opts.DryRun {
			return nil // a dry run follows no rollout: it started none
		}
		return c.rollouts.sync(ctx, kind, k)
	}
	return fmt.Errorf("queue key %s: unknown kind", k)
}

// reportGauges refreshes, until ctx ends, the gauges that are cheaper to sample than to track:
// the state's size and its entries kept in memory only, which it passes to unsaved as well, and
// the reloads pending (in a window or queued).
func reportGauges(ctx context.Context, m *metrics.Metrics, store *state.Store, pending func() int,
	unsaved func(n, spare int)) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		for _, s := range store.Stats() {
			m.StateEntries.WithLabelValues(s.Name).Set(float64(s.Entries))
			m.StateBytes.WithLabelValues(s.Name).Set(float64(s.Bytes))
		}
		n, spare := store.Unsaved(), store.Configs().UnsavedSpare()
		m.StateMemoryOnly.WithLabelValues("true").Set(float64(spare))
		m.StateMemoryOnly.WithLabelValues("false").Set(float64(n - spare))
		unsaved(n, spare)
		m.Pending.Set(float64(pending()))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runInformers runs the informers until run ends, and waits, until wait ends, for them and the
// workloads' index, which their handlers keep and the start-up pass reads (workload.Dependents).
func (c *Controller) runInformers(run, wait context.Context) bool {
	for _, inf := range c.informers {
		go inf.RunWithContext(run)
	}
	synced := hasSynced(c.informers)
	for _, k := range c.caches.kinds {
		synced = append(synced, k.ByConfig.Synced)
	}
	return cache.WaitForCacheSync(wait.Done(), synced...)
}

// hasSynced lists the informers' HasSynced, to wait on.
func hasSynced(informers []cache.SharedIndexInformer) []cache.InformerSynced {
	out := make([]cache.InformerSynced, len(informers))
	for i, inf := range informers {
		out[i] = inf.HasSynced
	}
	return out
}

func newBucket(qps float64, burst int) *rate.Limiter { return rate.NewLimiter(rate.Limit(qps), burst) }

// Idle reports whether nothing is in flight: no open window, nothing queued or left to fold, no
// sync running and no state write pending. Tests and the benchmark wait on it instead of sleeping.
func (c *Controller) Idle() bool {
	return c.ready.Load() && c.coalescer.Pending() == 0 && c.queued() == 0 && c.journal.Pending() == 0 &&
		c.busy.Load() == 0 && c.stateClean()
}

// stateClean reports that the state has nothing left to write; a dry run writes nothing.
func (c *Controller) stateClean() bool { return c.opts.DryRun || c.state.Clean() }

// queued counts the keys waiting: in the work queue and behind it in the start-up backlog.
func (c *Controller) queued() int { return c.queue.Len() + c.backlog.len() }

// reasonStateFull is the Warning, on the first state ConfigMap, of a state with no room left.
const reasonStateFull = "StateFull"

// warnStateFull says, once each time the state turns full (was: it was full at the last
// sample), that entries are kept in memory only, as a Warning Event on the first state
// ConfigMap; the state logs it too. It reports whether the state is full.
func (c *Controller) warnStateFull(ctx context.Context, was bool, unsaved, spare int) bool {
	full := unsaved > 0
	if full && !was && !c.opts.DryRun {
		// The ConfigMap as read, with its UID, so that kubectl describe lists the Event.
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		shard, err := c.clients.StateConfigMaps(c.opts.StateNamespace).Get(ctx, c.opts.StateName, metav1.GetOptions{})
		if err != nil {
			shard = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.opts.StateNamespace, Name: c.opts.StateName}}
		}
		c.reports.Event(shard, corev1.EventTypeWarning, reasonStateFull, fmt.Sprintf(
			"The state is full: %d entries are kept in memory only and lost at a restart, %d of them of configs no workload reads; "+
				"a change made while the reloader is down to a config whose entry is lost is not caught up. "+
				"Exclude configs (--ignore-secret-types, --resource-label-selector, --namespaces-to-ignore)",
			unsaved, spare))
	}
	return full
}
