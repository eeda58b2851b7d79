package launcher

// The supervisor's part in a queue over several nodes: messages from the
// other nodes are events of its loop, and slots may wait for a task
// (thenWait). The rules are the mode's (nodes.go, feed.go); these methods
// carry out its answers.

// fromNode hands a message from another node to the mode, and carries
// out what it says.
func (s *supervisor) fromNode(m NodeMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.mode.fromNode(m)
	for _, n := range v.notes {
		s.log.Log(n.level, n.msg)
	}
	if v.record != nil && s.joblog != nil {
		if err := s.joblog.Record(*v.record); err != nil {
			s.log.Error("--joblog: " + err.Error())
		}
	}
	if v.stopAll != "" {
		s.stopAll(v.stopAll)
		s.armKill()
	}
	if v.wake {
		s.wakeWaiting()
	}
	s.publishCounts()
	s.flushNodes()
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
	for i := range s.slots {
		sl := &s.slots[i]
		if !sl.waiting {
			continue
		}
		j, then := s.mode.resume(i)
		if then == thenWait {
			continue
		}
		sl.waiting = false
		s.pending--
		if then == thenDone {
			s.final(i)
			continue
		}
		sl.job = j
		s.running++
		if err := s.startSlot(i); err != nil {
			s.running--
			s.log.Error(err.Error())
			s.final(i)
		}
	}
}

// flushNodes sends what the mode's rules queued for other nodes.
func (s *supervisor) flushNodes() {
	for _, m := range s.mode.outbox() {
		if s.link != nil {
			s.link.Send(m)
		}
	}
}

// idle0 is idle with mu held.
func (s *supervisor) idle0() bool {
	return s.running == 0 && s.pending == 0 && !s.mode.awaitsNodes()
}

// signalIdle wakes the loop to find the run idle.
func (s *supervisor) signalIdle() {
	select {
	case s.idleC <- struct{}{}:
	default:
	}
}
