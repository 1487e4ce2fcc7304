// Package fsutil holds the small file-system helpers every on-disk package of
// ledgermq needs: fsync of a directory after a file is created, renamed or
// removed, an advisory lock so two processes cannot open one store, and an
// atomic "write temp, fsync, rename, fsync dir" for small metadata files.
//
// None of these is an API: they live under internal/ so that commitlog,
// consumequeue, index and store share one implementation.
package fsutil
