package reloader

import (
	"github.com/reloader/reloader/reloader/configs"
	"github.com/reloader/reloader/reloader/internal/report"
	"github.com/reloader/reloader/reloader/workload"
)

// The shared vocabulary lives in reloader/workload and reloader/internal/report, a config's
// record in reloader/configs (issue 51). The root keeps its former names for them until the parts
// that use them move out too.
type (
	key            = workload.Key
	workloadKind   = workload.Kind
	workloadView   = workload.View
	packedWorkload = workload.Packed
	reporter       = report.Reporter
	configRecord   = configs.Record
)
