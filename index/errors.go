package index

import "errors"

// Sentinel errors. Every error returned by this package that stems from one of
// these conditions wraps the matching sentinel, so callers branch with
// errors.Is rather than on message text.
var (
	// ErrBadHeader reports a 40-byte file header that fails validation: too
	// short, negative or out-of-range counts, or an inverted time/offset
	// range. A file with such a header is never served.
	ErrBadHeader = errors.New("index: bad header")

	// ErrBadKey reports a key that is empty or longer than MaxKeyLen bytes.
	ErrBadKey = errors.New("index: bad key")

	// ErrBadOffset reports a negative commitlog offset given to Put.
	ErrBadOffset = errors.New("index: bad commitlog offset")

	// ErrBadConfig reports a Config that Open cannot use.
	ErrBadConfig = errors.New("index: bad config")

	// ErrNoSpace is returned by Put when the file system cannot give the
	// index file the page the entry goes to (a full disk). Nothing was
	// written; the index is as it was.
	ErrNoSpace = errors.New("index: no space for the index file")

	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("index: closed")
)
