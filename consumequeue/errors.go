package consumequeue

import "errors"

// Sentinel errors. Every error returned by this package that stems from one
// of these conditions wraps the matching sentinel (with the topic, queue and
// offset involved), so callers branch with errors.Is rather than on text.
var (
	// ErrShortUnit reports fewer than UnitSize bytes where a unit was
	// expected: a buffer given to DecodeUnit, or a file that ends before a
	// unit that MaxOffset says exists.
	ErrShortUnit = errors.New("consumequeue: short unit")

	// ErrBadUnit reports a unit that cannot point at a record: Size ≤ 0 or a
	// negative CommitLog offset. Get wraps it with the queue offset of the
	// unit; Put refuses such a unit with it.
	ErrBadUnit = errors.New("consumequeue: bad unit")

	// ErrBadTopic reports a topic name that cannot be used as a directory
	// name (see ValidTopic).
	ErrBadTopic = errors.New("consumequeue: bad topic")

	// ErrBadQueueID reports a negative queue id.
	ErrBadQueueID = errors.New("consumequeue: bad queue id")

	// ErrGap reports a Put beyond MaxOffset of a queue that already holds
	// units: the slots in between would be left unwritten.
	ErrGap = errors.New("consumequeue: gap in queue")

	// ErrOffsetTooSmall reports an offset below MinOffset: the unit was
	// deleted by retention (or never existed).
	ErrOffsetTooSmall = errors.New("consumequeue: offset below min offset")

	// ErrOffsetTooLarge reports a GetUnit at or beyond MaxOffset, or a Put
	// at an offset too large for a file name to represent.
	ErrOffsetTooLarge = errors.New("consumequeue: offset beyond max offset")

	// ErrMissingFile reports a queue whose files do not form one contiguous
	// run: a file missing in the middle, a file name out of step, a middle
	// file of the wrong size, or a file gone while the queue was open. The
	// queue cannot be served; its owner deletes the topic and rebuilds the
	// queues from the CommitLog.
	ErrMissingFile = errors.New("consumequeue: missing file")

	// ErrBadConfig reports a Config that Open cannot use.
	ErrBadConfig = errors.New("consumequeue: bad config")

	// ErrClosed is returned by every method called after Store.Close, and
	// by the methods of a Queue whose topic was deleted.
	ErrClosed = errors.New("consumequeue: closed")
)
