package protocol

import "errors"

// ErrBadBody: a JSON body that is not the object its request code calls
// for (not JSON, not an object, a field of the wrong type, a number out of
// range, a value that breaks a bound of the Decode function).
//
// Header errors are not a separate sentinel: a missing required ext field
// wraps remoting.ErrMissingField and a malformed one remoting.ErrBadHeader,
// the errors remoting.ExtString and ExtInt return, so a server maps both to
// SYSTEM_ERROR as it already does.
var ErrBadBody = errors.New("protocol: malformed body")
