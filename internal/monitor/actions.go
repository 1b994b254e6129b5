package monitor

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// What the HTTP layer (package monitor/web) reads of the service and asks
// of it, besides Snapshot and Interfaces: it reaches the service through
// these methods alone.

// maxOnDemand bounds the runs on demand queued at once.
const maxOnDemand = 10

// Config is the running configuration.
func (s *Service) Config() *core.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Via are the link directions of a path, either way: none where the
// topology does not know them (real hosts, a viewer).
func (s *Service) Via(src, dst string) []string {
	return append(slices.Clone(s.via[[2]string{src, dst}]), s.via[[2]string{dst, src}]...)
}

// Archive is the archive while it is reachable, else nil.
func (s *Service) Archive() *archive.Archive { return s.opts.Store.Archive() }

// Ack acknowledges the active alert of ref (a path's, an owd_step or an
// open incident), in the service's state and the archive; false if no
// alert of ref is active.
func (s *Service) Ack(ref, who, note string) bool {
	now := time.Now()
	s.mu.Lock()
	found := s.det.Ack(ref, who, note, now) || s.oneway.Ack(ref, who, note, now) || s.incidents.Ack(ref, who, note, now)
	s.mu.Unlock()
	if found {
		s.out.Put(record{At: now, Ack: &acked{Ref: ref, By: who, Note: note, At: now}})
	}
	return found
}

// RunNow queues one run of a throughput-class test of a pair now, through
// the scheduler (never beside another on the same host): of family, where
// the test runs once per family, or of each of its families if family is
// "". It is refused with core.ErrNotConfigured, core.ErrElsewhere, or the
// scheduler's error when the queue of runs on demand is full or holds
// this one.
func (s *Service) RunNow(test, family, src, dst, who string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.cfg.Tests, func(t core.Test) bool { return t.Name == test })
	var runs []core.Test
	if i >= 0 && s.cfg.Tests[i].Exclusive() {
		for _, k := range s.cfg.Keys(s.cfg.Tests[i]) {
			if k.Src == src && k.Dst == dst && (family == "" || k.Family == family) {
				run, _ := s.cfg.Run(k)
				runs = append(runs, run)
			}
		}
	}
	if len(runs) == 0 {
		of := ""
		if family != "" {
			of = " over " + family
		}
		return refusal{core.ErrNotConfigured, fmt.Sprintf("no throughput, transfer or disk test %q of %s->%s%s in the configuration", test, src, dst, of)}
	}
	if !s.shares.Owns(src, dst) {
		return refusal{core.ErrElsewhere, fmt.Sprintf("%s->%s is measured by another wanlab serve process sharing the archive: ask it", src, dst)}
	}
	// Each family's run: refused only if none could be queued (each
	// queued already, or the queue full).
	var errs []error
	for _, run := range runs {
		if err := s.run.Add(&run, src, dst, who, maxOnDemand); err != nil {
			errs = append(errs, err)
			continue
		}
		s.logf("on demand: %s, asked by %s", core.PathKey{Src: src, Dst: dst, Test: test, Family: run.Family}, who)
	}
	if len(errs) == len(runs) {
		return errors.Join(errs...)
	}
	return nil
}

// refusal is an error of a kind (errors.Is) in its own words.
type refusal struct {
	kind error
	why  string
}

func (r refusal) Error() string { return r.why }
func (r refusal) Unwrap() error { return r.kind }

// Audit records what a caller did: message is an event shown to
// identities only, and e, if not nil, goes to the archive's audit
// (buffered like results).
func (s *Service) Audit(message string, e *audit.Entry) {
	s.mu.Lock()
	s.auditf("%s", message)
	s.mu.Unlock()
	if e != nil {
		s.out.Put(record{At: e.Time, Audit: e})
	}
}

// Interfaces lists the monitored interfaces' latest rates and the devices
// that do not answer.
func (s *Service) Interfaces() ([]core.IfaceState, map[string]string) { return s.run.Interfaces() }
