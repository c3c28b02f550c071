package membership

import "time"

// limbo holds frames whose sender this node has not admitted yet (or whose
// sender's boot it has not seen yet). gossip and messages race: a new
// member's first message can arrive before its join. Dropping the frame
// would leave a gap in the link's sequence numbers and stall the link for
// the reorder hold; holding it until the member is admitted keeps both the
// message and the order. Frames that wait longer than the hold are dropped
// with the reason they would have had. Bounded per sender and in total:
// the sender's name is only a claim.
type limbo struct {
	frames map[string][]heldFrame
	total  int
}

type heldFrame struct {
	b        []byte
	deadline time.Time
	reason   DropReason
}

const (
	limboPerSender = 32
	limboTotal     = 256
)

// hold keeps a frame for sender until deadline; it reports false when the
// limbo is full (the caller drops the frame).
func (l *limbo) hold(sender string, b []byte, deadline time.Time, reason DropReason) bool {
	if l.total >= limboTotal || len(l.frames[sender]) >= limboPerSender {
		return false
	}
	if l.frames == nil {
		l.frames = make(map[string][]heldFrame)
	}
	l.frames[sender] = append(l.frames[sender], heldFrame{b: b, deadline: deadline, reason: reason})
	l.total++
	return true
}

// take removes and returns sender's frames, oldest first.
func (l *limbo) take(sender string) []heldFrame {
	fs := l.frames[sender]
	delete(l.frames, sender)
	l.total -= len(fs)
	return fs
}

// expire removes the frames whose deadline has passed and calls drop with
// each one's reason.
func (l *limbo) expire(now time.Time, drop func(DropReason)) {
	for sender, fs := range l.frames {
		keep := fs[:0]
		for _, f := range fs {
			if now.Before(f.deadline) {
				keep = append(keep, f)
				continue
			}
			drop(f.reason)
			l.total--
		}
		if len(keep) == 0 {
			delete(l.frames, sender)
		} else {
			l.frames[sender] = keep
		}
	}
}

// next is the earliest deadline, or the zero time.
func (l *limbo) next() time.Time {
	var first time.Time
	for _, fs := range l.frames {
		for _, f := range fs {
			if first.IsZero() || f.deadline.Before(first) {
				first = f.deadline
			}
		}
	}
	return first
}
