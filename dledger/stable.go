package dledger

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// fileStable is raft's StableStore (its current term and vote) in one
// small file, replaced atomically on every change, for the one-log layout,
// where the CommitLog is the raft log and raft-wal's metadata database is
// not there to hold them. raft writes it at elections only.
//
// The file is JSON: {"<key>": "<base64 value>", ...}.
type fileStable struct {
	fs   vfs.FS
	path string
	mu   sync.Mutex
	kv   map[string][]byte
	// closed: writes after Close are dropped (see raftLog.closeMu).
	closed bool
}

var _ raft.StableStore = (*fileStable)(nil)

// openFileStable reads path, or starts empty when it does not exist.
func openFileStable(fs vfs.FS, path string) (*fileStable, error) {
	s := &fileStable{fs: vfs.Or(fs), path: path, kv: map[string][]byte{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("dledger: raft state: %w", err)
	}
	if err := json.Unmarshal(b, &s.kv); err != nil {
		return nil, fmt.Errorf("dledger: raft state %s: %w", path, err)
	}
	return s, nil
}

func (s *fileStable) Set(key, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	next := make(map[string][]byte, len(s.kv)+1)
	for k, v := range s.kv {
		next[k] = v
	}
	next[string(key)] = append([]byte(nil), val...)
	b, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("dledger: raft state: %w", err)
	}
	if err := vfs.WriteFileAtomic(s.fs, s.path, b); err != nil {
		return fmt.Errorf("dledger: raft state: %w", err)
	}
	s.kv = next
	return nil
}

// Get returns the value of key; a missing key is an empty value and the
// error "not found", as raft's stores answer.
func (s *fileStable) Get(key []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[string(key)]
	if !ok {
		return nil, errors.New("not found")
	}
	return append([]byte(nil), v...), nil
}

func (s *fileStable) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns 0 for a missing key (raft reads a new node's term so).
func (s *fileStable) GetUint64(key []byte) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[string(key)]
	if !ok {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("dledger: raft state %s: %q holds %d bytes", s.path, key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Close makes later writes no-ops.
func (s *fileStable) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}
