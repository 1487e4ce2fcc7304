package dledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// JoinMarker is a file in a node's data directory that tells Open not to
// bootstrap the group from its peers when the node has no raft state: the
// node was rebuilt (PrepareRejoin) and waits, empty, until the leader adds
// it back (as a non-voter first, promoted once caught up). Without it an
// emptied node would bootstrap itself as a voter of the configured peers;
// a voter that forgot entries it acknowledged can help a minority that
// lacks them look like a majority. Open removes the marker once the node
// holds raft state again.
const JoinMarker = "JOIN"

// ErrNodeRunning: the node whose data PrepareRejoin was to move is running
// (its store's lock is held).
var ErrNodeRunning = errors.New("dledger: the node is running")

// PrepareRejoin empties a stopped node's data directory for a rebuild: it
// renames dataDir to dataDir.replaced-<UTC time> (nothing is deleted; the
// operator removes it once the node has caught up) and creates an empty
// dataDir holding JoinMarker. It refuses, with ErrNodeRunning, while a
// process holds the node's store lock, and holds that lock itself while it
// renames, so a node starting meanwhile fails to lock and is retried
// rather than opening files being moved. It returns where the old data
// went.
func PrepareRejoin(dataDir string, now time.Time) (string, error) {
	dataDir = filepath.Clean(dataDir)
	if _, err := os.Stat(dataDir); err != nil {
		return "", fmt.Errorf("dledger: data directory: %w", err)
	}
	lock, err := vfs.Lock(filepath.Join(dataDir, "store"))
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return "", fmt.Errorf("%w: %s is locked by a running process: %w", ErrNodeRunning, dataDir, err)
		}
		return "", fmt.Errorf("dledger: lock %s: %w", dataDir, err)
	}
	defer lock.Release()
	aside := fmt.Sprintf("%s.replaced-%s", dataDir, now.UTC().Format("20060102T150405.000Z"))
	if err := os.Rename(dataDir, aside); err != nil {
		return "", fmt.Errorf("dledger: move %s aside: %w", dataDir, err)
	}
	if err := vfs.Default.MkdirAll(dataDir); err != nil {
		return aside, err
	}
	marker := fmt.Sprintf("rebuilt at %s; previous data in %s\n", now.UTC().Format(time.RFC3339), aside)
	if err := vfs.WriteFileAtomic(vfs.Default, filepath.Join(dataDir, JoinMarker), []byte(marker)); err != nil {
		return aside, err
	}
	return aside, nil
}

// waitsToJoin reports whether the node must not bootstrap (JoinMarker).
func waitsToJoin(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, JoinMarker))
	return err == nil
}

// StoreLocked reports whether a process holds the store lock of the node
// whose data directory is dataDir, i.e. whether the node is running.
func StoreLocked(dataDir string) (bool, error) {
	lock, err := vfs.Lock(filepath.Join(dataDir, "store"))
	if errors.Is(err, vfs.ErrLocked) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("dledger: lock %s: %w", dataDir, err)
	}
	return false, lock.Release()
}
