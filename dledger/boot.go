package dledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// The boot record: whether this node may have lost raft entries it
// acknowledged.
//
// Under ASYNC_FLUSH the one-log store does not fsync each append
// (store.Config.FlushMode): raft's StoreLogs returns once the entry is in
// the page cache, and a background flush makes it durable within
// FlushInterval. A kill -9 loses nothing (the page cache outlives the
// process); only a crash of the machine itself (power, kernel) can take
// away entries the node acknowledged, and some of them may have counted
// towards a commit. Such a node must not help elect a leader that lacks
// them, so it abstains (abstain.go) until its log holds everything the
// group's leader held when it came back.
//
// The record, raft/boot.json, is written (to a temporary file, fsynced,
// renamed) when the node starts and again when it stops cleanly:
//
//	field       meaning
//	----------  ------------------------------------------------------------
//	bootId      the machine's boot id when it was written
//	            (/proc/sys/kernel/random/boot_id; a power loss changes it)
//	unsynced    the log was appended to without an fsync per append
//	clean       the node stopped cleanly: its store flushed everything
//	recovering  the node abstains from votes until it has caught up
//
// A node starts abstaining when its last run may have lost acknowledged
// entries (unsynced, not clean, and another boot id since), or when it was
// still abstaining when it stopped (recovering). A missing record (a new
// node, or data from an older version, which fsynced every append) is
// nothing to recover from.
const bootRecordName = "boot.json"

type bootRecord struct {
	BootID     string `json:"bootId"`
	Unsynced   bool   `json:"unsynced,omitempty"`
	Clean      bool   `json:"clean,omitempty"`
	Recovering bool   `json:"recovering,omitempty"`
}

// powerCutBootID is the boot id MarkPowerLoss records: no machine has it.
const powerCutBootID = "power-cut"

// readBootRecord reads the record in raftDir; ok is false when there is
// none.
func readBootRecord(raftDir string) (rec bootRecord, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(raftDir, bootRecordName))
	if errors.Is(err, os.ErrNotExist) {
		return bootRecord{}, false, nil
	}
	if err != nil {
		return bootRecord{}, false, fmt.Errorf("dledger: boot record: %w", err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return bootRecord{}, false, fmt.Errorf("dledger: boot record %s: %w", filepath.Join(raftDir, bootRecordName), err)
	}
	return rec, true, nil
}

func writeBootRecord(fs vfs.FS, raftDir string, rec bootRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("dledger: boot record: %w", err)
	}
	if err := vfs.WriteFileAtomic(fs, filepath.Join(raftDir, bootRecordName), append(b, '\n')); err != nil {
		return fmt.Errorf("dledger: boot record: %w", err)
	}
	return nil
}

// mayHaveLost reports whether a node whose last record is prev (ok: there
// is one) may have lost entries it acknowledged, booting with bootID.
func mayHaveLost(prev bootRecord, ok bool, bootID string) bool {
	if !ok {
		return false
	}
	if prev.Recovering {
		return true
	}
	// An unknown boot id (not Linux) cannot tell a process crash from a
	// machine crash: it counts as a new boot.
	return prev.Unsynced && !prev.Clean && (bootID == "" || prev.BootID != bootID)
}

// machineBootID is the running kernel's boot id, or "" where there is none.
func machineBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// MarkPowerLoss records in a stopped node's data directory that its machine
// has booted since it stopped, as a power loss would: the chaos harness
// calls it after it has cut the node's files back to what was fsynced. A
// directory without a boot record is left alone.
func MarkPowerLoss(dataDir string) error {
	raftDir := filepath.Join(dataDir, "raft")
	rec, ok, err := readBootRecord(raftDir)
	if err != nil || !ok {
		return err
	}
	rec.BootID = powerCutBootID
	return writeBootRecord(vfs.Default, raftDir, rec)
}
