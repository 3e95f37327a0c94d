package policy

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// pf builds the facts of a table row.
type pf PairFacts

var judgeRef = ConfigRef{Kind: KindConfigMap, Name: "app"}

// on is a config that exists with content v, which the workload reloads on whole.
func on(v string) pf {
	return pf{Ref: judgeRef, Triggers: true, Exists: true, Want: Content{Value: v}, Whole: Content{Value: v}}
}

// gone is a deleted config the workload reloads on.
func gone() pf { return pf{Ref: judgeRef, Triggers: true} }

func (f pf) marker(m MarkerState) pf     { f.Marker = m; return f }
func (f pf) state(r Recorded) pf         { f.State = r; return f }
func (f pf) strip(m MarkerState) pf      { f.Strip = m; return f }
func (f pf) collaborne(m MarkerState) pf { f.Collaborne = m; return f }
func (f pf) runs(v string, keys ...string) pf {
	f.Runs = RestartRuns{Value: v, Keys: keys, Known: true}
	return f
}
func (f pf) set(mod func(*PairFacts)) pf { p := PairFacts(f); mod(&p); return pf(p) }

// keys makes the workload reload on keys, whose content is v.
func (f pf) keys(v string, keys ...string) pf {
	f.Keys, f.Want = keys, Content{Value: v, Whole: f.Whole.Value}
	return f
}

func live(h string) Recorded { return Recorded{Known: true, Hash: h} }
func tomb(h string) Recorded { return Recorded{Known: true, Deleted: true, Hash: h} }

// flagsOf names the flags a judgement sets, in a fixed order.
func flagsOf(j Judgement) string {
	var out []string
	for _, f := range []struct {
		name string
		on   bool
	}{{"untriggered", !j.Triggers}, {"force", j.Change.Force}, {"vouched", j.Vouched}, {"behind", j.Behind},
		{"untouched", j.Untouched}, {"byState", j.ByState}, {"stripped", j.Stripped}, {"held", j.Held}, {"staleHold", j.StaleHold}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return strings.Join(out, " ")
}

// TestJudgeDecidesEachCaseOfTheRule holds one row per case of the rule: the control-plane tests
// and the checker seeds it mirrors are named in the row (fixed seeds: e2e/checker/seeds.go).
func TestJudgeDecidesEachCaseOfTheRule(t *testing.T) {
	const a, b, c = plainA, plainB, "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"
	t0 := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	tombAt := func(h string, at time.Time) Recorded { return Recorded{Known: true, Deleted: true, Hash: h, Since: at} }
	ignored := func(p *PairFacts) { p.Ignored = true }
	untriggered := func(p *PairFacts) { p.Triggers = false }
	invalid := func(p *PairFacts) { p.Invalid = true }
	unseen := func(p *PairFacts) { p.Unseen = true }
	rollbackRan := func(p *PairFacts) { p.RollbackRan = true }
	held := func(p *PairFacts) { p.Held = true }
	staleHold := func(p *PairFacts) { p.StaleHold = true }
	onDelete := func(p *PairFacts) { p.ReloadOnDelete = true }
	onCreate := func(p *PairFacts) { p.ReloadOnCreate = true }
	waitsRan := func(p *PairFacts) { p.Waits, p.RanSince = true, true }
	ranSince := func(p *PairFacts) { p.RanSince = true }
	awaiting := func(p *PairFacts) { p.Awaiting = true }
	startedWithout := func(p *PairFacts) { p.StartedWithout = true }
	noneOfKeys := func(p *PairFacts) { p.NoneOfKeys = true }
	lostKeyMarker := func(p *PairFacts) { p.MarkedUnderOtherKey = true }
	created := func(at time.Time) func(*PairFacts) { return func(p *PairFacts) { p.Created = at } }
	watermarkAt := func(at time.Time) func(*PairFacts) { return func(p *PairFacts) { p.Unrecorded.WatermarkAt = at } }
	unrecorded := func(watermark, rv string, configCreated, workloadCreated time.Time) func(*PairFacts) {
		return func(p *PairFacts) {
			p.Unrecorded = UnrecordedFacts{Watermark: watermark, RV: rv, Created: configCreated}
			p.Created = workloadCreated
		}
	}
	keyState := func(now, recorded string, known bool) func(*PairFacts) {
		return func(p *PairFacts) {
			p.KeyStates = func() []KeyRecord {
				return []KeyRecord{{Content: Content{Value: now}, State: Recorded{Known: known, Hash: recorded}}}
			}
		}
	}
	stakater := func(value, hash string, others ...string) func(*PairFacts) {
		return func(p *PairFacts) {
			p.Stakater = StakaterFacts{Comparing: true, Set: true, Value: value, Hash: hash, Others: func() []string { return others }}
		}
	}
	notComparing := func(p *PairFacts) { p.Stakater.Comparing = false }

	tests := []struct {
		name   string
		f      pf
		reload bool
		reason Reason
		flags  string
		ran    string
	}{
		// Whether the pair is judged at all.
		{"a workload that does not reload on the config is not judged", on(a).set(untriggered), false, NotTriggered, "untriggered", ""},
		{"an ignored config is not judged (TestRemovingIgnoreCatchesUpMarkedWorkloadsOnce, while ignored)", on(b).marker(Stale).set(ignored), false, Ignored, "untriggered", ""},
		{"invalid content reloads nothing and ends a hold on other content (TestRevertingInvalidContentReleasesTheHeldReloadOnce)",
			on(a).marker(Stale).set(invalid).set(staleHold), false, Invalid, "untriggered staleHold", ""},

		// The marker.
		{"a marker of this content restarts nothing, whatever the state says", on(a).marker(Current).state(live(b)), false, MarkerCurrent, "", ""},
		{"a marker of other content reloads though the state holds this content (TestRevertAfterPartialRolloutReturnsEveryWorkloadToTheCurrentContent)",
			on(a).marker(Stale).state(live(a)), true, MarkerStale, "behind", ""},
		{"a content changed while the config was ignored reloads a marked workload once the ignore goes (TestRemovingIgnoreCatchesUpMarkedWorkloadsOnce)",
			on(b).marker(Stale).state(live(b)), true, MarkerStale, "behind", ""},
		{"a recreation with other content reloads a marked workload (TestDeleteAndRecreateWithNewContentReloadsOnce)",
			on(b).marker(Stale).state(tomb(a)), true, MarkerStale, "behind", ""},
		{"a reappearance with other content reloads the pods a rollback put back (TestAConfigReappearingAfterARolledBackRestartWhileItWasAbsentReloadsTheRestoredPods, seed 1795664411625522854@4)",
			on(b).marker(Stale), true, MarkerStale, "behind", ""},

		// Holds after a rollback (reloader/safe/track.go).
		{"a rolled-back content is held (TestARevertEndsAHoldSoTheBrokenContentAppliedAgainReloads)", on(b).marker(Stale).set(held), false, Held, "behind held", ""},
		{"a revert to what the pods run reloads nothing and ends the hold (TestARevertEndsAHoldSoTheBrokenContentAppliedAgainReloads)",
			on(a).marker(Current).set(staleHold), false, MarkerCurrent, "staleHold", ""},
		{"a rolled-back deletion is held (TestARolledBackReloadForADeletionIsHeldUntilTheConfigChanges, seed 1795668697359437001@4)",
			gone().marker(Stale).set(onDelete).set(held), false, Held, "held", ""},
		{"a hold of another content does not keep the reload of this one", on(c).marker(Stale).set(staleHold), true, MarkerStale, "behind staleHold", ""},

		// The restart memory (reloader/runs/unseen.go): what the last restart's pods read.
		{"a restart whose pods read an unseen change reloads after its revert (TestARestartThatGaveThePodsAnUnseenChangeRestartsThemAgainAfterItsRevert, checker seed 4@3)",
			on(a).marker(Current).set(unseen), true, RestartReadOther, "force behind", ""},
		{"a Job recreated across an unseen change is recreated for its revert (TestAJobRecreatedAcrossAnUnseenChangeIsRecreatedForItsRevert, seed 1795691391691440061@4)",
			on(a).marker(Current).set(unseen), true, RestartReadOther, "force behind", ""},
		{"an unseen read of a config deleted since says nothing: the deletion is judged", gone().marker(Stale).set(unseen), false, DeletionIgnored, "", ""},
		{"a revert restarts the pods a rollback started on the broken content (TestARevertAfterARollbackRestartsThePodsTheRollbackStartedOnTheBrokenContent)",
			on(a).marker(Current).set(rollbackRan).set(staleHold), true, RolledBackPodsRan, "force behind staleHold", ""},
		{"a revert after a rollback that started no pod restarts nothing (TestARevertAfterARollbackThatStartedNoPodRestartsNothing)",
			on(a).marker(Current).set(staleHold), false, MarkerCurrent, "staleHold", ""},
		{"a reappearance the waiting pods took restarts nothing, though the marker names the content before (TestAConfigReappearingAfterARestartWhileAbsentRestartsNothingAndItsRevertRestartsOnce)",
			on(b).marker(Stale).runs(b), false, RestartRunsThis, "vouched", ""},
		{"the revert of that reappearance to the marker's content restarts once (TestAConfigReappearingAfterARestartWhileAbsentRestartsNothingAndItsRevertRestartsOnce)",
			on(a).marker(Current).runs(b), true, RestartRunsOther, "force behind", ""},
		{"a reappearance with the marker's content restarts nothing (TestAConfigReappearingWithItsMarkersContentAfterARestartWhileAbsentRestartsNothing)",
			on(a).marker(Current).runs(a), false, RestartRunsThis, "vouched", ""},
		{"a revert to the marker after a reappearance left unacted restarts the waiting pods (TestARevertToTheMarkerAfterAConfigReappearedUnactedRestartsThePodsThatWaitedForIt, seed 1795657828041649782@4)",
			on(a).marker(Current).runs(b), true, RestartRunsOther, "force behind", ""},
		{"a second deletion restarts pods that took the reappearance (TestASecondDeletionRestartsPodsThatStartedOnTheContentAConfigReappearedWith, seed 1795664411625522849@4)",
			gone().marker(Current).runs(a).set(onDelete), true, RestartRunsOther, "force", ""},
		{"the pods a rollback put back took the first content back: nothing (TestARollbackPutsBackARestartWhosePodsWaitedForAConfigWithTheContentItReappearedWith, seed 1795669739113515740@4)",
			on(b).marker(Stale).runs(b), false, RestartRunsThis, "vouched", ""},
		{"the next content restarts them once (TestARollbackPutsBackARestartWhosePodsWaitedForAConfigWithTheContentItReappearedWith, seed 1795669739113515740@4)",
			on(c).marker(Stale).runs(b), true, RestartRunsOther, "force behind", ""},
		{"pods another actor restarted on the held content are reloaded when the config returns (TestPodsAnotherActorRestartedWhileAReloadWasHeldAreReloadedWhenTheConfigReturns, seed 1795669739113515711@4)",
			on(a).marker(Current).runs(b).set(staleHold), true, RestartRunsOther, "force behind staleHold", ""},
		{"a rollback puts back what another actor's restart gave the pods (TestARolledBackReloadPutsBackWhatAnotherActorsRestartGaveThePods)",
			on(a).marker(Current).runs(b), true, RestartRunsOther, "force behind", ""},
		{"pods of our reload for another config run the held content (TestPodsOfOurReloadForAnotherConfigRunTheHeldContent)",
			on(a).marker(Current).runs(b), true, RestartRunsOther, "force behind", ""},
		{"a content noted for the whole config says nothing of a key reader: the marker decides (soak seed 1795737404676896416@4)",
			on(a).keys(c, "k").marker(Current).runs(b), false, MarkerCurrent, "", ""},
		{"pods without the config read none of the keys it lacks (TestWorkloadReadingAnAbsentKeyIsNotRestartedWhenItsConfigIsRecreatedWithoutIt, seed 1795669739113515719@4)",
			on(a).keys(c, "k").runs("", "k").set(noneOfKeys).state(live(b)), false, RestartRunsThis, "vouched", ""},
		{"pods without the config that holds a key they read now are reloaded (seed 1795669739113515719@4, control)",
			on(a).keys(c, "k").runs("", "k").state(live(b)), true, RestartRunsOther, "force behind", ""},
		{"pods run without a config read through optional refs: its reappearance reloads once (seed 1795721381820273670@4)",
			on(a).marker(Current).runs(""), true, RestartRunsOther, "force behind", ""},
		{"pods that stopped waiting for a deleted config run without it: no reload for the deletion again (TestAWorkloadThatStopsWaitingForADeletedConfigInAStripIsNotReloadedForTheDeletionAgain, seed 5@7)",
			gone().keys("", "k").runs("", "k").set(onDelete).state(live(a)), false, RestartRunsThis, "vouched", ""},

		// What the state notes of pods that took a reappearance (strips.Awaits, strips.RanSince).
		{"pods that took a reappearance are reloaded for the next deletion by a later process (TestPodsThatTookAReappearanceAreReloadedForTheNextDeletionByALaterProcess, seed 1795750246569125019@5)",
			gone().marker(Current).set(onDelete).set(waitsRan), true, TookBeforeDeletion, "force", ""},
		{"the note survives a spec change that restarts nothing (TestPodsThatTookAReappearanceKeepItsNoteThroughASpecChangeThatRestartsNothing, seed 1795773593018830783@5)",
			gone().marker(Current).set(onDelete).set(waitsRan), true, TookBeforeDeletion, "force", ""},
		{"pods without a marker noted in the state to have taken a reappearance are reloaded for the next deletion (seed 1795750246569125019@5)",
			gone().set(onDelete).set(waitsRan).state(tomb("")), true, TookBeforeDeletion, "force", ""},
		{"a workload without a marker is reloaded for the deletion of a reappeared config the state recorded (TestAWorkloadWithoutAMarkerIsReloadedForTheDeletionOfAReappearedConfig, seed 1795743600418900614@5)",
			gone().set(onDelete).state(tombAt(b, t0)).set(created(t0.Add(-time.Hour))), true, RanBeforeDeletion, "", b},
		{"pods that do not wait for the config did not take it: the deletion's marker decides", gone().marker(Current).set(onDelete).set(ranSince), false, MarkerDeleted, "", ""},
		{"without --reload-on-delete the note reloads nothing", gone().marker(Current).set(waitsRan), false, MarkerDeleted, "", ""},
		{"pods that wait for a config deleted before their rollout run nothing of it (TestAWorkloadRolledOutToReadAConfigDeletedBeforeIsNotReloadedForTheDeletion, seed 1795828528856311681@7)",
			gone().set(onDelete).set(awaiting).state(live(a)), false, Awaiting, "", ""},
		{"without the wait, the state's content rolled out reloads it (seed 1795828528856311681@7, control)",
			gone().set(onDelete).state(live(a)), true, RanBeforeDeletion, "", a},
		{"pods noted in the state to have started without a deleted config are not reloaded for the deletion by a later process (TestAWorkloadThatStopsWaitingForADeletedConfigIsNotReloadedForTheDeletionByTheNextProcess, seed 5@7)",
			gone().set(onDelete).set(startedWithout).state(tombAt(a, t0)).set(created(t0.Add(-time.Hour))), false, StartedWithout, "", ""},
		{"the config back, that note is another content: its return reloads them once (TestAWorkloadThatStopsWaitingForADeletedConfigIsNotReloadedForTheDeletionByTheNextProcess, control)",
			on(a).set(startedWithout).strip(Stale).state(tomb(a)), true, StripStale, "behind stripped", ""},
		{"pods noted in the state to have taken the reappearance still there restart nothing in a later process (TestPodsThatTookAReappearanceAreNotReloadedForItByALaterProcess, soak seed 1796182876957345445@10)",
			on(b).marker(Stale).set(waitsRan).strip(Current).state(live(b)), false, TookReappearance, "vouched", ""},
		{"a change since that reappearance reloads them once (TestPodsThatTookAReappearanceAreNotReloadedForItByALaterProcess, control)",
			on(c).marker(Stale).set(waitsRan).strip(Stale).state(live(b)), true, MarkerStale, "behind", ""},
		{"a note of pods that do not wait for the config says nothing against a stale marker",
			on(b).marker(Stale).set(ranSince).strip(Current).state(live(b)), true, MarkerStale, "behind", ""},

		// Collaborne's variable.
		{"Collaborne's variable of this content restarts nothing (TestSwitchingFromCollaborneRestartsNothingThatIsCurrent)",
			on(a).collaborne(Current).state(live(b)), false, CollaborneCurrent, "", ""},
		{"what Collaborne recorded but never rolled out reloads once (TestSwitchingFromCollaborneRestartsNothingThatIsCurrent)",
			on(a).collaborne(Stale).state(live(a)), true, CollaborneStale, "behind", ""},
		{"Collaborne's variable says nothing of a key reader: the state decides", on(a).keys(c, "k").collaborne(Stale).state(live(a)), false, StateSame, "behind byState", ""},
		{"Collaborne's state entry of this content is current (TestReloadTakesOverCollaborneStateEntries)",
			on(a).set(func(p *PairFacts) { p.Want.Collaborne, p.Whole.Collaborne = c, c }).state(live(c)), false, StateSame, "behind byState", ""},

		// Strips (reloader/runs/strips.go): what a workload without a marker was noted to run.
		{"a strip while the state is behind restarts nothing more (TestStripWhileTheStateIsBehindRestartsNothingMore, fixed seed 1795446428096566055)",
			on(b).strip(Current).state(live(a)), false, StripCurrent, "stripped", ""},
		{"the strip is remembered across a restart (TestStripWhileTheStateIsBehindIsRememberedAcrossARestart, checker seed 4)",
			on(b).strip(Current).state(live(a)), false, StripCurrent, "stripped", ""},
		{"a revert after the strip reloads the stripped workload (TestRevertAfterAStripWhileTheStateIsBehindReloadsTheStrippedWorkload)",
			on(a).strip(Stale).state(live(a)), true, StripStale, "behind stripped", ""},
		{"a strip survives a change of a key the workload does not read (TestStripWhileTheStateIsBehindSurvivesAChangeOfAnotherKey, checker seed 6)",
			on(c).keys(b, "k").strip(Current).state(live(a)), false, StripCurrent, "stripped", ""},
		{"a strip made under a lost hash key says nothing: the state, under that key too, restarts nothing (TestAStripMadeUnderALostKeyRestartsNothing, seed 1795705990417200457@4)",
			on(keyedA).state(live(otherKeyB)), false, StateSame, "behind byState", ""},
		{"a strip no reloader saw while the state is behind restarts once (TestStripWhileDownWhileTheStateIsBehindRestartsOnce, seed 1795547694293124233@2)",
			on(b).state(live(a)), true, StateDiffers, "behind byState", a},
		{"a workload another actor restarted while held is reloaded for the return to the state's content (TestAHeldWorkloadRestartedByAnotherActorIsReloadedForTheRevert, seed 1795727042036173470@4)",
			on(a).strip(Stale).state(live(a)), true, StripStale, "behind stripped", ""},
		{"a wait note left by an earlier process does not vouch for a change made while none ran (TestAWaitNoteLeftByAnEarlierProcessDoesNotVouchForAChangeMadeWhileNoneRan, checker seed 408@9)",
			on(b).strip(Stale).state(live(a)), true, StripStale, "behind stripped", ""},
		{"pods a rollback put back without a marker run the content before: the strip decides before the state (seed 1795681571291661041@4)",
			on(b).strip(Stale).state(live(b)), true, StripStale, "behind stripped", ""},
		{"a rollback at the resume of a paused deletion reload reloads the recreation (TestARollbackAtTheResumeOfAPausedDeletionReloadReloadsTheRecreation, seed 1795782049105262354@6)",
			on(b).strip(Stale).state(live(b)), true, StripStale, "behind stripped", ""},
		{"a rollback at the resume puts back pods that did not take a recreation (TestARollbackAtTheResumePutsBackPodsThatDidNotTakeARecreation, seed 1795782049105262354@6)",
			on(b).strip(Stale).state(live(b)), true, StripStale, "behind stripped", ""},
		{"a rollback of a deletion reload leaves the content that reappeared due (TestARollbackOfADeletionReloadLeavesTheContentThatReappearedDue)",
			on(b).strip(Stale).state(live(b)), true, StripStale, "behind stripped", ""},
		{"a rolled-back deletion reload's wait note is forgotten: the state judges the reappearance (seed 1795754412268271987@5)",
			on(b).state(live(a)), true, StateDiffers, "behind byState", a},
		{"a note of a config read before the workload reloaded on it vouches once it does (checker seed 1050@8)",
			on(a).strip(Current).state(live(b)), false, StripCurrent, "stripped", ""},
		{"a workload created while the state lagged is left alone once the entry caught up (TestRemovingIgnoreLeavesAWorkloadCreatedWhileTheStateLaggedAlone)",
			on(a).state(live(a)), false, StateSame, "behind byState", ""},

		// The state, for a workload without a marker.
		{"a config without a marker that the state holds is not due; a restart for another config sets its marker (fixed seed 1795463652687504867)",
			on(a).state(live(a)), false, StateSame, "behind byState", ""},
		{"a recreation with other content reloads an unmarked workload the deletion reached, across a restart (TestADeletionReachesAnUnmarkedWorkloadAndItsRecreationReloadsEveryOne, fixed seed 1795459093681678810)",
			on(b).state(tomb(a)), true, StateDiffers, "behind byState", ""},
		{"a recreation with the same content restarts nothing (TestATombstoneKeepsWhatARecreationIsJudgedAgainst)", on(a).state(tomb(a)), false, StateSame, "behind byState", ""},
		{"a tombstone of a content never recorded reloads a workload without a marker on any recreation (TestAConfigDeletedWhileItsNamespaceWasOutOfTheSelectionReloadsOnItsRecreationWhatWasCreatedMeanwhile, seed 4928@9)",
			on(a).state(tomb(UnrecordedContent)), true, UnrecordedTombstone, "behind byState", ""},
		{"... and one whose key entries still match", on(a).keys(c, "x").state(tomb(UnrecordedContent)).set(keyState(c, c, true)), true, UnrecordedTombstone, "behind byState", ""},
		{"... but not one whose marker holds the content", on(a).marker(Current).state(tomb(UnrecordedContent)), false, MarkerCurrent, "", ""},
		{"a tombstone without content makes a recreation a creation (TestATombstoneKeepsWhatARecreationIsJudgedAgainst)", on(a).state(tomb("")), false, Tombstone, "behind byState", ""},
		{"a creation reloads with --reload-on-create", on(a).state(tomb("")).set(onCreate), true, ReloadOnCreate, "behind byState", ""},
		{"a marker under a lost key against a tombstone without content restarts nothing", on(a).state(tomb("")).set(onCreate).set(lostKeyMarker), false, MarkedUnderLostKey, "behind byState", ""},
		{"a config never recorded restarts nothing (TestDeletedStateWhileRunningCausesNoMassRestart)", on(a), false, StateUnknown, "behind byState", ""},

		// A config without an entry (the state keeps entries only for read configs: issue 52).
		{"a config written while no reloader recorded it, created before the workload, reloads it once (TestAChangeWhileDownOfAConfigNothingReadReloadsItsNewReaderOnce)",
			on(a).set(unrecorded("100", "120", t0.Add(-time.Hour), t0)), true, UnrecordedWrite, "behind byState", ""},
		{"... created in the workload's second: first seen (TestAConfigCreatedWithItsReaderWhileDownRestartsNothing)",
			on(a).set(unrecorded("100", "120", t0.Add(500*time.Millisecond), t0)), false, StateUnknown, "behind byState", ""},
		{"... created after the workload: first seen",
			on(a).set(unrecorded("100", "120", t0.Add(time.Minute), t0)), false, StateUnknown, "behind byState", ""},
		{"... written at the watermark: first seen (TestAForeignWriteToTheStateWhileDownOnlyMakesTheStartDoLess)",
			on(a).set(unrecorded("120", "120", t0.Add(-time.Hour), t0)), false, StateUnknown, "behind byState", ""},
		{"... with no watermark (a first start, a lost state): first seen",
			on(a).set(unrecorded("", "120", t0.Add(-time.Hour), t0)), false, StateUnknown, "behind byState", ""},
		{"... a config that existed at the watermark's write, changed since, reloads a workload created before it (TestExplainSaysAConfigNeitherReadNorNamedReloadsNothing)",
			on(a).set(unrecorded("100", "120", t0.Add(time.Minute), t0)).set(watermarkAt(t0.Add(time.Minute))), true, UnrecordedWrite, "behind byState", ""},
		{"... one created after the watermark's write, in the workload's second, is first seen",
			on(a).set(unrecorded("100", "120", t0.Add(time.Minute), t0.Add(time.Minute))).set(watermarkAt(t0)), false, StateUnknown, "behind byState", ""},
		{"... not for a workload whose marker holds the content", on(a).marker(Current).set(unrecorded("100", "120", t0.Add(-time.Hour), t0)), false, MarkerCurrent, "", ""},
		{"... nor against an entry, which decides", on(a).state(live(a)).set(unrecorded("100", "120", t0.Add(-time.Hour), t0)), false, StateSame, "behind byState", ""},
		{"... nor against a tombstone", on(a).state(tomb("")).set(unrecorded("100", "120", t0.Add(-time.Hour), t0)), false, Tombstone, "behind byState", ""},
		{"the state's content is what a rollback puts back (TestARevertAfterAFirstReloadWasRolledBackRestartsNothing)", on(b).state(live(a)), true, StateDiffers, "behind byState", a},
		{"a change re-recorded under the new key reloads (TestAChangeUnderANewKeyRestartsAWorkloadWithoutAMarkerWhileAnotherDependentIsHeld, seed 1795691391691440064@4)",
			on(keyedA).state(live(keyedB)), true, StateDiffers, "behind byState", keyedB},
		{"a workload created between two leaders restarts for the next change (TestAWorkloadWithoutAMarkerRestartsForAChangeWhileALaggingStakaterDependentIsHeld, seed 1795657828041649806@4)",
			on(b).state(live(a)), true, StateDiffers, "behind byState", a},
		{"a key the workload reads unchanged restarts nothing (TestKeyLevelPrecision)",
			on(b).keys(c, "x").state(live(a)).set(keyState(c, c, true)), false, KeysUnchanged, "behind byState", ""},
		{"a key the workload reads changed reloads (TestKeyLevelPrecision)",
			on(b).keys(c, "x").state(live(a)).set(keyState(c, a, true)), true, StateDiffers, "behind byState", ""},
		{"a key never recorded counts as changed (TestRevertOfAKeyWhileDownAfterANamedReloadReloadsTheKeyReader)",
			on(b).keys(c, "x").state(live(a)).set(keyState(c, "", false)), true, StateDiffers, "behind byState", ""},
		{"a key reader whose whole content the state holds restarts nothing (TestRevertOfAKeyAfterANamedReloadAndAStripReloadsTheKeyReader)",
			on(b).keys(c, "x").state(live(b)).set(keyState(c, a, true)), false, StateSame, "behind byState", ""},

		// Stakater's variable, at the first start.
		{"stakater's variable of this content restarts nothing (TestSwitchingFromStakaterCausesNoRestartWave, fixed seed 2@1)",
			on(a).set(stakater("s1", "s1")), false, StateUnknown, "behind byState", ""},
		{"a change stakater missed reloads once (TestStakaterSecretHashIsNeverWritten, fixed seed 2@1)",
			on(a).set(stakater("s0", "s1")), true, StakaterMissed, "behind byState", ""},
		{"stakater's variable for a name with runs of symbols (TestStakaterChangeIsCaughtUpForNamesWithRunsOfSymbols)",
			on(a).set(stakater("s0", "s1")), true, StakaterMissed, "behind byState", ""},
		{"a folded variable vouches for the config whose hash it holds (TestAFoldedStakaterVariableVouchesForTheConfigWhoseHashItHolds)",
			on(a).set(stakater("s2", "s1", "s2")), false, StateUnknown, "behind byState", ""},
		{"a folded variable equal to no hash reloads (TestAFoldedStakaterVariableVouchesForTheConfigWhoseHashItHolds, control)",
			on(a).set(stakater("s0", "s1", "s2")), true, StakaterMissed, "behind byState", ""},
		{"stakater's variable is compared only at the first start (TestStakatersVariableIsComparedOnlyAtTheFirstStart, seed 1795725183900764066@4)",
			on(a).set(stakater("s0", "s1")).set(notComparing), false, StateUnknown, "behind byState", ""},
		{"a state lost while down does not repeat the comparison (TestAStateLostWhileDownDoesNotRepeatTheStakaterComparisonWhenTheHashKeyExisted)",
			on(a).set(stakater("s0", "s1")).set(notComparing), false, StateUnknown, "behind byState", ""},
		{"stakater's variable says nothing where the state knows the config", on(a).set(stakater("s0", "s1")).state(live(a)), false, StateSame, "behind byState", ""},

		// Deletions.
		{"without --reload-on-delete a deletion reloads nothing", gone().marker(Stale).state(live(a)), false, DeletionIgnored, "", ""},
		{"without --reload-on-delete an unmarked workload is untouched", gone().state(live(a)), false, DeletionIgnored, "untouched", ""},
		{"a deletion reloads a marked workload (TestReloadOnDeleteRestartsEveryWorkloadThatRanTheConfig)", gone().marker(Stale).set(onDelete).state(live(a)), true, Deleted, "", ""},
		{"a deletion reloads an unmarked workload that ran the content (TestReloadOnDeleteRestartsEveryWorkloadThatRanTheConfig)",
			gone().set(onDelete).state(tombAt(a, t0)).set(created(t0)), true, RanBeforeDeletion, "", a},
		{"a marker set to the deletion restarts nothing (TestReloadOnDeleteRestartsEveryWorkloadThatRanTheConfig)", gone().marker(Current).set(onDelete).state(tomb("")), false, MarkerDeleted, "", ""},
		{"a workload created after the deletion is not reloaded for it (TestAWorkloadCreatedAfterADeletionIsNotReloadedForIt)",
			gone().set(onDelete).state(tombAt(a, t0)).set(created(t0.Add(time.Second))), false, CreatedAfterDeletion, "untouched", a},
		{"a rolled-back deletion reload puts back the content before the deletion (TestARolledBackDeletionReloadOfAWorkloadWithoutAMarkerReloadsItsRecreation)",
			gone().set(onDelete).state(tombAt(a, t0)).set(created(t0.Add(-time.Hour))), true, RanBeforeDeletion, "", a},
		{"a deletion with no content rolled out reloads nothing", gone().set(onDelete).state(tomb("")), false, NothingRolledOut, "untouched", ""},
		{"a deletion never recorded reloads nothing", gone().set(onDelete), false, StateUnknown, "untouched", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := Judge(PairFacts(tt.f))
			if j.Reload != tt.reload || j.Reason != tt.reason || flagsOf(j) != tt.flags || j.Change.Ran != tt.ran {
				t.Fatalf("Judge = reload %v, %q, flags %q, ran %q; want reload %v, %q, flags %q, ran %q",
					j.Reload, j.Reason, flagsOf(j), j.Change.Ran, tt.reload, tt.reason, tt.flags, tt.ran)
			}
			if j.Triggers && j.Change.Value != tt.f.Want.Value {
				t.Fatalf("the change's value %q is not the content's %q", j.Change.Value, tt.f.Want.Value)
			}
		})
	}
}

// Every reason reads as words.
func TestEveryReasonSaysWhy(t *testing.T) {
	for r := NotTriggered; r <= Held; r++ {
		if s := r.String(); s == "" || s == "unknown" {
			t.Errorf("reason %d has no words", int(r))
		}
	}
}

func TestUndecidedOfLeavesToTheStateWhatAMarkerCannotSay(t *testing.T) {
	part := func() Content { return Content{Value: plainA, Legacy: plainB} }
	tests := []struct {
		name string
		keys []string
		u    Use
		st   Recorded
		want []string
	}{
		{"keys: the whole content the state records", []string{"k"}, Use{Whole: true}, live(plainB), []string{plainB}},
		{"keys: nothing recorded", []string{"k"}, Use{Whole: true}, Recorded{}, nil},
		{"keys: a tombstone", []string{"k"}, Use{Whole: true}, tomb(plainB), nil},
		{"keys: a tombstone without content", []string{"k"}, Use{Whole: true}, tomb(""), nil},
		{"whole, read whole", nil, Use{Whole: true}, live(plainB), nil},
		{"whole, read in part: those keys' values", nil, Use{Keys: []string{"k"}}, live(plainB), []string{plainA, plainB}},
		{"whole, read through nothing named", nil, Use{}, live(plainB), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UndecidedOf(tt.keys, tt.u, tt.st, part); !slices.Equal(got, tt.want) {
				t.Fatalf("UndecidedOf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadByOthersSaysWhatAnotherActorsRestartRead(t *testing.T) {
	tests := []struct {
		name string
		f    pf
		want OthersRead
	}{
		{"not reloaded on", on(plainA).marker(Current).set(func(p *PairFacts) { p.Triggers = false }), ReadNothing},
		{"absent, waited for", gone().set(func(p *PairFacts) { p.Waits = true }), ReadAbsent},
		{"absent, optional", gone(), ReadNone},
		{"a current marker", on(plainA).marker(Current), ReadCurrent},
		{"a stale marker: another content (TestPodsAnotherActorRestartedWhileAReloadWasHeldAreReloadedWhenTheConfigReturns)", on(plainA).marker(Stale), ReadOther},
		{"a stale marker the pods before ran past (seed 1795669739113515711@4)", on(plainA).marker(Stale).runs(plainA), ReadVouched},
		{"no marker: a strip notes it (seed 1795727042036173470@4)", on(plainA), ReadNothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReadByOthers(PairFacts(tt.f)); got != tt.want {
				t.Fatalf("ReadByOthers = %d, want %d", got, tt.want)
			}
		})
	}
}
