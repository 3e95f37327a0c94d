package policy

// Reason is the fact that decided a judgement (Judge), for a user to read.
type Reason int

// Reasons, by the fact that decides: the workload and its flags, what it carries, what the
// reloader remembers of its pods, then the state.
const (
	_ Reason = iota
	NotTriggered
	Ignored
	Invalid
	MarkerCurrent
	MarkerStale
	MarkerDeleted
	Deleted
	RestartReadOther
	RolledBackPodsRan
	RestartRunsThis
	RestartRunsOther
	TookBeforeDeletion
	Awaiting
	CollaborneCurrent
	CollaborneStale
	StripCurrent
	StripStale
	StateSame
	StateDiffers
	KeysUnchanged
	StateUnknown
	StakaterMissed
	Tombstone
	ReloadOnCreate
	MarkedUnderLostKey
	DeletionIgnored
	RanBeforeDeletion
	NothingRolledOut
	CreatedAfterDeletion
	Held
	UnrecordedTombstone
	TookReappearance
	StartedWithout
	UnrecordedWrite
)

var reasonWords = [...]string{
	NotTriggered:         "the workload does not reload on this config",
	Ignored:              "the config carries the ignore annotation",
	Invalid:              "the config's content does not validate: it reloads nothing",
	MarkerCurrent:        "the marker says the pods run this content",
	MarkerStale:          "the marker says the pods run another content",
	MarkerDeleted:        "the marker says the pods run without the config, which is deleted",
	Deleted:              "the config was deleted, and the marker says the pods run a content of it",
	RestartReadOther:     "the pods of the last restart read a content of the config the reloader had not seen yet",
	RolledBackPodsRan:    "the pods a rollback started read the content that was rolled back",
	RestartRunsThis:      "the pods of the last restart run the config as it is now, whatever the marker says",
	RestartRunsOther:     "the pods of the last restart run another content of the config than it has now",
	TookBeforeDeletion:   "the pods took the config's content without a marker of it, so its deletion is a change to them",
	Awaiting:             "the pods wait for the config, absent since their restart, and run nothing of it",
	CollaborneCurrent:    "Collaborne's reloader variable says the pods run this content",
	CollaborneStale:      "Collaborne's reloader variable says the pods run another content",
	StripCurrent:         "there is no marker, and the reloader's note of what the pods run without one says this content",
	StripStale:           "there is no marker, and the reloader's note of what the pods run without one says another content",
	StateSame:            "there is no marker, and the state says this content was rolled out",
	StateDiffers:         "there is no marker, and the state says another content was rolled out",
	KeysUnchanged:        "there is no marker, and the keys the workload reads hold the values the state recorded",
	StateUnknown:         "there is no marker, and the state has no record of the config to compare with",
	StakaterMissed:       "stakater Reloader's variable names another content: a change it missed",
	Tombstone:            "the state recorded the config absent, and its creation reloads nothing without --reload-on-create",
	ReloadOnCreate:       "the config was created where the state recorded it absent (--reload-on-create)",
	MarkedUnderLostKey:   "the marker was made under a lost hash key, so which content it says is unknown",
	DeletionIgnored:      "the config is deleted, and a deletion reloads nothing without --reload-on-delete",
	RanBeforeDeletion:    "there is no marker, and the state says the pods ran the config's content before its deletion",
	NothingRolledOut:     "there is no marker, and the state records no content rolled out before the deletion",
	CreatedAfterDeletion: "the workload was created after the config's deletion and never read it",
	Held:                 "this content's reload was rolled back: it is held until the content changes",
	UnrecordedTombstone:  "there is no marker, and the config may have had a content the state never recorded before its deletion",
	TookReappearance:     "the pods, restarted while the config was absent, started on this content when it reappeared, as the state notes",
	StartedWithout:       "there is no marker, and the state notes that the pods, restarted while the config was absent, started without it",
	UnrecordedWrite:      "there is no marker, and the config, created before the workload, was written while no reloader recorded it",
}

// String says the reason in plain words.
func (r Reason) String() string {
	if r <= 0 || int(r) >= len(reasonWords) {
		return "unknown"
	}
	return reasonWords[r]
}
