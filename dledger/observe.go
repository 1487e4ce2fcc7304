package dledger

import (
	"time"

	"github.com/hashicorp/raft"
)

// LogObserver hears every append to this node's raft log (Config.LogObserver):
// how many entries and bytes, and how long the write took, fsync
// included: the latency every commit waits for on the leader and on a
// majority of followers. It is called on raft's goroutines and must not
// block.
type LogObserver interface {
	LogStored(entries, bytes int, took time.Duration)
}

// StoreLogs is raft-wal's, timed for the LogObserver.
func (l *raftLog) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	err := l.WAL.StoreLogs(logs)
	if err != nil {
		return err
	}
	n := 0
	for _, e := range logs {
		n += len(e.Data)
	}
	if o := l.observer; o != nil {
		o.LogStored(len(logs), n, time.Since(start))
	}
	l.countForSnapshot(n)
	return nil
}

// StoreLog stores one entry through StoreLogs.
func (l *raftLog) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }
