package commitlog

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DeleteExpired deletes whole sealed segments, oldest first, and returns how
// many it deleted (MinOffset then gives the new oldest offset). The oldest sealed segment goes if
//
//   - force is true (an operator's "delete now"), or
//   - its last write (file mtime) is FileReservedTime or more before
//     Config.Clock(), or
//   - the disk holding Dir is fuller than DiskMaxUsedSpaceRatio (checked
//     again after every deletion),
//
// and deletion stops at the first segment that does not qualify, so the log
// stays contiguous. It never deletes the active (last) segment, nor one
// that ends after Config.KeepFrom, and it stops
// at a segment with outstanding Refs, a running Scan or a flush in progress
// (a later call deletes it once released). At most maxFiles are deleted per
// call; maxFiles <= 0 means no limit. Each removal is followed by a
// directory fsync. Safe concurrently with appends, readers and flushes.
func (l *Log) DeleteExpired(force bool, maxFiles int) (int, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	if !l.recovered.Load() {
		return 0, ErrNotRecovered
	}
	now := l.cfg.Clock()
	deleted := 0
	for maxFiles <= 0 || deleted < maxFiles {
		keep := int64(-1)
		if l.cfg.KeepFrom != nil {
			keep = l.cfg.KeepFrom()
		}
		reason := ""
		if force {
			reason = "forced"
		} else {
			ratio, err := l.diskUsage(l.cfg.Dir)
			if err != nil {
				return deleted, err
			}
			if ratio > l.cfg.DiskMaxUsedSpaceRatio {
				reason = fmt.Sprintf("disk %.1f%% used", ratio*100)
			}
		}
		l.segMu.Lock()
		if l.closed.Load() || len(l.segs) < 2 {
			l.segMu.Unlock()
			break
		}
		s := l.segs[0]
		if mt := s.modTime(); reason == "" && !mt.IsZero() && now.Sub(mt) >= l.cfg.FileReservedTime {
			reason = "expired"
		}
		if reason == "" || s.refs.Load() > 1 || (keep >= 0 && s.end() > keep) {
			l.segMu.Unlock()
			break
		}
		l.segs = append([]*segment(nil), l.segs[1:]...)
		l.minOff.Store(l.segs[0].start)
		l.segMu.Unlock()

		l.log.Info("deleting commit log segment", "path", s.path, "reason", reason)
		s.release()
		if err := l.cfg.FS.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return deleted, fmt.Errorf("commitlog: remove segment: %w", err)
		}
		if err := l.cfg.FS.SyncDir(l.cfg.Dir); err != nil {
			return deleted, fmt.Errorf("commitlog: %w", err)
		}
		deleted++
	}
	return deleted, nil
}

// DiskUsedRatio returns the used fraction of the file system holding Dir,
// counting the blocks reserved for root as used: (blocks - available) /
// blocks. Safe for concurrent use.
func (l *Log) DiskUsedRatio() (float64, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	return l.diskUsage(l.cfg.Dir)
}

func diskUsedRatio(dir string) (float64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("commitlog: statfs %s: %w", dir, err)
	}
	if st.Blocks == 0 {
		return 0, nil
	}
	return float64(st.Blocks-st.Bavail) / float64(st.Blocks), nil
}
