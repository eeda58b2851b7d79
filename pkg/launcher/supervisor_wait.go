//go:build linux

package launcher

import (
	"github.com/gpulaunch/gpulaunch/pkg/job"
	"github.com/gpulaunch/gpulaunch/pkg/taskqueue"
)

// The supervisor's part in waiting: messages from the other nodes of a
// queue over several are events of its loop, and slots may wait
// (job.Wait) for a task from another node, or for their group's restart.
// The rules are the mode's (taskqueue's nodes.go and feed.go, group.go);
// these methods carry out its answers.

// nodeBatch bounds how many messages from other nodes one turn of the
// loop takes in (fromNode).
const nodeBatch = 256

// fromNode hands a message from another node to the mode, and those
// already waiting behind it (up to nodeBatch), and carries out their
// verdicts, which concern no slot of this node. One turn for many
// messages: the lock taken once, the records they bring written to the
// joblog in one write before any answer goes out, the counts published
// once, and the tasks queued for a node sent together. One turn per
// message: 13,300 tasks/s at 1,000 nodes, 69 µs of the holder's CPU per
// task; one turn for many: 18,500 tasks/s, 39 µs (scripts/bench-holder.sh).
func (s *supervisor) fromNode(m taskqueue.NodeMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := 1; ; k++ {
		s.effects(-1, s.traits.fromNode(m))
		if k == nodeBatch || !s.nextFromNode(&m) {
			break
		}
	}
	if s.traits.joblog != nil {
		s.sayJoblogError(s.traits.joblog.Flush())
	}
	s.publishCounts()
	s.flushNodes()
	if s.idle0() {
		s.signalIdle()
	}
}

// nextFromNode takes the next message from another node into m, if one
// is waiting.
func (s *supervisor) nextFromNode(m *taskqueue.NodeMessage) bool {
	select {
	case *m = <-s.nodeC:
		return true
	default:
		return false
	}
}

// wake asks the waiting slots again once a verdict's WakeIn ran out (a
// group restart's backoff).
func (s *supervisor) wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wakeWaiting()
	if s.idle0() {
		s.signalIdle()
	}
}

// wait parks slot i until the mode has something for it.
func (s *supervisor) wait(i int) {
	sl := &s.slots[i]
	if !sl.waiting {
		sl.waiting = true
		s.pending++
	}
	s.publish(i)
}

// wakeWaiting asks the mode again for every waiting slot: it starts the
// task it gets, is done, or waits on.
func (s *supervisor) wakeWaiting() {
	var starting []int
	for i := range s.slots {
		sl := &s.slots[i]
		if !sl.waiting {
			continue
		}
		j, then := s.mode.resume(i)
		if then == job.Wait {
			continue
		}
		sl.waiting = false
		s.pending--
		if s.settle(i, then, j, 0) {
			starting = append(starting, i)
		}
	}
	// Every slot woken counts as running before the first starts, as in
	// startAll: startSlot lets go of mu while each forks, and an exit in
	// between must find the others counted (a group's restart waits for
	// them all, and ends those that start after it began: ending).
	s.running += len(starting)
	for _, i := range starting {
		s.startCounted(i)
	}
}

// flushNodes sends what the mode's rules queued for other nodes.
func (s *supervisor) flushNodes() {
	for _, m := range s.traits.outbox() {
		if s.link != nil {
			s.link.Send(m)
		}
	}
}

// idle0 is idle with mu held.
func (s *supervisor) idle0() bool {
	return s.running == 0 && s.pending == 0 && !s.traits.awaitsNodes()
}

// signalIdle wakes the loop to find the run idle.
func (s *supervisor) signalIdle() {
	select {
	case s.idleC <- struct{}{}:
	default:
	}
}
