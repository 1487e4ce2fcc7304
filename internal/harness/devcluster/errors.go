package devcluster

import "errors"

// Errors of this package.
var (
	// ErrNoFile: cluster.json does not exist (yet) or cannot be read.
	ErrNoFile = errors.New("devcluster: no cluster file")
	// ErrBadFile: cluster.json does not parse or is incomplete.
	ErrBadFile = errors.New("devcluster: bad cluster file")
	// ErrNamesrv: the name server answered a query with an error.
	ErrNamesrv = errors.New("devcluster: name server error")
)
