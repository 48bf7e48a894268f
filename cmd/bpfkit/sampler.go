package main

import (
	"fmt"
	"time"

	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// sampler samples every program's run statistics and who uses it, and
// makes of each sample and the one before a snapshot: what each program
// cost over the interval between them. The table, -json and -listen all
// show its snapshots.
type sampler struct {
	cost     prog.StatsCost // the statistics' own cost, measured before they went on
	cpus     int            // online CPUs: a program's share of the machine is of all of them
	prev     map[uint32]*prog.Info
	prevAt   time.Time     // when prev was read
	prevBoot time.Duration // and by CLOCK_BOOTTIME, the clock of Info.LoadTime
	// history is each program's share of one CPU in the last intervals,
	// oldest first, for the sparkline.
	history map[uint32][]float64
}

// historyLength is how many intervals of history a program keeps.
const historyLength = 64

// row is one program over one interval, as top shows it: a row of the
// table, an object of -json, the series of -listen.
type row struct {
	Time     string   `json:"time"`       // when the interval ended, RFC 3339
	Interval float64  `json:"interval_s"` // its length in seconds
	ID       uint32   `json:"id"`
	Type     string   `json:"type"`
	Name     string   `json:"name"`
	Tag      string   `json:"tag"`
	Attached []string `json:"attached"` // what it runs on
	Pids     []proc   `json:"pids"`     // the processes holding it, or a link or perf event of it
	// The kernel's counts since the program was loaded, while statistics
	// were on (by bpfkit top or anyone).
	RunCnt          uint64 `json:"run_cnt"`
	RunTimeNs       uint64 `json:"run_time_ns"`
	RecursionMisses uint64 `json:"recursion_misses"`
	// The interval's: runs, runs a second, run time per run (the
	// statistics' floor left out, and as the kernel counted it), share of
	// one CPU and of all online CPUs (the floor left out), recursion
	// misses.
	Events         uint64  `json:"events"`
	EventsPerSec   float64 `json:"events_per_sec"`
	AvgNs          float64 `json:"avg_ns"`
	AvgGrossNs     float64 `json:"avg_gross_ns"`
	CPUPercent     float64 `json:"cpu_percent"`
	MachinePercent float64 `json:"machine_percent"`
	Misses         uint64  `json:"misses"`

	history []float64 // CPUPercent of the last intervals, oldest first
	procs   []proc    // Pids, for the table
}

// snapshot is every program's row for one interval.
type snapshot struct {
	at       time.Time
	interval time.Duration
	rows     []*row
}

// newSampler makes a sampler that leaves the statistics' floor out of
// each program's time; cost is prog.MeasureStatsCost's, measured before
// the statistics went on.
func newSampler(cost prog.StatsCost) (*sampler, error) {
	cpus, err := sys.OnlineCPUs()
	if err != nil {
		return nil, err
	}
	return &sampler{cost: cost, cpus: len(cpus), history: map[uint32][]float64{}}, nil
}

// sample reads every program's statistics and users, and returns the
// snapshot of the interval since the last sample; the first sample is
// the baseline of the first interval and returns nil.
func (s *sampler) sample() (*snapshot, error) {
	var boot unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		return nil, fmt.Errorf("CLOCK_BOOTTIME: %w", err)
	}
	at := time.Now()
	infos := map[uint32]*prog.Info{}
	err := each(prog.NextID, nil, func(id uint32) error { // skips a program unloaded meanwhile
		info, err := prog.StatsByID(id)
		if err == nil {
			infos[id] = info
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	users, err := findUsers()
	if err != nil {
		return nil, err
	}
	var snap *snapshot
	if s.prev != nil {
		snap = &snapshot{at: at, interval: at.Sub(s.prevAt)}
		for id, info := range infos {
			snap.rows = append(snap.rows, s.row(snap, info, users[id]))
		}
	}
	for id := range s.history { // a program gone takes its history along
		if infos[id] == nil {
			delete(s.history, id)
		}
	}
	s.prev, s.prevAt, s.prevBoot = infos, at, time.Duration(boot.Nano())
	return snap, nil
}

// row computes a program's row for the snapshot's interval from its
// counts now and at the last sample.
func (s *sampler) row(snap *snapshot, info *prog.Info, u *progUsers) *row {
	r := &row{
		Time:            snap.at.Format(time.RFC3339Nano),
		Interval:        snap.interval.Seconds(),
		ID:              info.ID,
		Type:            info.Type.String(),
		Name:            info.Name,
		Tag:             info.Tag,
		Attached:        []string{},
		Pids:            []proc{},
		RunCnt:          info.RunCount,
		RunTimeNs:       uint64(info.RunTime),
		RecursionMisses: info.RecursionMisses,
	}
	if u != nil && u.attached != nil {
		r.Attached = u.attached
	}
	if u != nil && u.procs != nil {
		r.Pids, r.procs = u.procs, u.procs
	}
	before := s.before(info)
	r.Events = since(info.RunCount, before.RunCount)
	gross := float64(since(uint64(info.RunTime), uint64(before.RunTime)))
	net := max(0, gross-float64(s.cost.Floor)*float64(r.Events))
	r.Misses = since(info.RecursionMisses, before.RecursionMisses)
	r.EventsPerSec = float64(r.Events) / snap.interval.Seconds()
	if r.Events > 0 {
		r.AvgGrossNs, r.AvgNs = gross/float64(r.Events), net/float64(r.Events)
	}
	r.CPUPercent = 100 * net / float64(snap.interval.Nanoseconds())
	r.MachinePercent = r.CPUPercent / float64(s.cpus)
	h := append(s.history[info.ID], r.CPUPercent)
	s.history[info.ID] = h[max(0, len(h)-historyLength):]
	r.history = s.history[info.ID]
	return r
}

// before is the program's counts at the last sample: those read then; or
// none for a program loaded since, all of whose runs are new; or, for
// one the last sample missed though it was loaded, its counts now, so
// that its first interval shows nothing rather than its whole past.
func (s *sampler) before(info *prog.Info) prog.Info {
	prev := s.prev[info.ID]
	switch {
	case prev != nil && prev.Tag == info.Tag && prev.LoadTime == info.LoadTime:
		return *prev
	case info.LoadTime >= s.prevBoot:
		return prog.Info{}
	}
	return *info
}

// since is now - then, 0 if the count went back.
func since(now, then uint64) uint64 {
	if now < then {
		return 0
	}
	return now - then
}
