// Package internal holds no code: its subdirectories are the module's
// internal packages, in two floors.
//
// The ground floor (internal/vfs, tlsconf, syncreport, canary,
// testwait, faultnet) are utilities any package may use; they import no
// package of this module.
//
// The top floor (internal/harness/bench, devcluster, procs) are
// harnesses over the whole product — the engine of `ledgermq bench`, the
// driver of `ledgermq dev` in tests, the one process supervisor of `dev`
// and `jepsen` — used by cmd/ledgermq, jepsen, the measuring tools under
// scripts/ and tests only, never by a package the broker is built from. cmd/ledgermq's TestInternalFloors keeps
// both rules.
package internal
