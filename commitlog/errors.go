package commitlog

import (
	"errors"
	"fmt"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// Sentinel errors. Every error returned by this package wraps one of these (or
// an operating-system error) and is meant to be compared with errors.Is.
var (
	// ErrCorrupt reports an entry whose length, end-of-segment marker or
	// CRC trailer does not verify. Read wraps it with the offset.
	ErrCorrupt = errors.New("commitlog: corrupt record")
	// ErrTooLarge is returned by AppendBatch for a batch (payloads plus
	// trailers) larger than SegmentSize-8 bytes.
	ErrTooLarge = errors.New("commitlog: batch too large for a segment")
	// ErrInvalidEntry is returned by AppendBatch when a requested size is
	// below MinEntrySize, or when the bytes written by fill do not start with
	// their own length or use BlankMagic as their magic.
	ErrInvalidEntry = errors.New("commitlog: invalid entry")
	// ErrOutOfRange is returned for an offset or size that is not inside the
	// written data (below MinOffset or past MaxOffset).
	ErrOutOfRange = errors.New("commitlog: offset out of range")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("commitlog: log is closed")
	// ErrNotRecovered is returned by methods that need the write position
	// (AppendBatch, Truncate, DeleteExpired) before Recover has succeeded.
	ErrNotRecovered = errors.New("commitlog: log has not been recovered")
	// ErrRecovered is returned by a second successful call to Recover.
	ErrRecovered = errors.New("commitlog: log is already recovered")
	// ErrLocked is returned by Open when another process (or another Log in
	// this process) holds the directory. It wraps vfs.ErrLocked.
	ErrLocked = fmt.Errorf("commitlog: %w", vfs.ErrLocked)
	// ErrBadSegment is returned by Open for a segment file whose name, start
	// offset or size breaks the directory invariants.
	ErrBadSegment = errors.New("commitlog: bad segment file")
	// ErrRefsOutstanding is returned by Close when Refs were still held. The
	// log is closed anyway; the mappings of the segments those Refs point
	// into stay valid until the last of them is released.
	ErrRefsOutstanding = errors.New("commitlog: closed with outstanding refs")
	// ErrWrite is returned by AppendBatch when writing the batch to its
	// segment file failed (an I/O error); nothing was published.
	ErrWrite = errors.New("commitlog: write failed")
	// ErrFlush wraps the error of a failed msync. It is sticky: once a flush
	// has failed the log no longer claims durability for anything newer, and
	// every later Flush, WaitFlushed and FlushSync append returns it.
	ErrFlush = errors.New("commitlog: flush failed")
)

// Reasons an entry fails verification. They wrap ErrCorrupt and are shared
// values so that the resynchronisation search can classify millions of
// candidate positions without allocating.
var (
	errZeroLength    = fmt.Errorf("%w: zero length in the middle of data", ErrCorrupt)
	errShortLength   = fmt.Errorf("%w: length below the minimum entry size", ErrCorrupt)
	errLongLength    = fmt.Errorf("%w: length runs past the end of the segment", ErrCorrupt)
	errChecksum      = fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	errBadBlank      = fmt.Errorf("%w: end-of-segment marker with a wrong length", ErrCorrupt)
	errAfterBlank    = fmt.Errorf("%w: data after an end-of-segment marker", ErrCorrupt)
	errTruncatedHead = fmt.Errorf("%w: entry header cut by the end of written data", ErrCorrupt)
	errLengthPrefix  = fmt.Errorf("%w: length prefix does not match the requested size", ErrCorrupt)

	errPrefixMismatch = fmt.Errorf("%w: length prefix does not match the reserved size", ErrInvalidEntry)
	errBlankMagicUsed = fmt.Errorf("%w: magic is BlankMagic", ErrInvalidEntry)
	errEntryTooSmall  = fmt.Errorf("%w: size below MinEntrySize", ErrInvalidEntry)
)
