package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/ledgermq/ledgermq/commitlog"
	"github.com/ledgermq/ledgermq/internal/vfs"
)

// Names used by RestoreFrom inside the store directory.
const (
	commitLogDirName    = "commitlog"
	consumeQueueDirName = "consumequeue"
	indexDirName        = "index"
	// restoreDirName holds the new CommitLog while it is assembled; after
	// the swap it holds the old one until it is removed.
	restoreDirName = "commitlog.restore"
)

// SegmentInfo describes one CommitLog segment file (SegmentPaths).
type SegmentInfo = commitlog.SegmentInfo

// SegmentPaths lists the CommitLog's segment files, oldest first; the last
// one is the active segment. A raft snapshot pins the segments it covers by
// hard-linking these paths. The list is taken under the store's read lock,
// so it never mixes the files of a CommitLog that RestoreFrom replaced with
// those of its successor. Safe for concurrent use.
func (s *Store) SegmentPaths() []SegmentInfo {
	s.rw.RLock()
	defer s.rw.RUnlock()
	return s.cl.Segments()
}

// SegmentFileName is the name of the file of the segment that starts at
// offset start, in the CommitLog and in a directory staged for RestoreFrom.
func (*Store) SegmentFileName(start int64) string { return commitlog.SegmentName(start) }

// ParseSegmentFileName is SegmentFileName's inverse: the start offset a
// segment file's name gives, and false for a name that is not one.
func (*Store) ParseSegmentFileName(name string) (int64, bool) {
	return commitlog.ParseSegmentName(name)
}

// SegmentSize is the CommitLog segment size (the one the store was opened
// with, or the one Reconfigure set).
func (s *Store) SegmentSize() int64 { return s.segSize.Load() }

// RestoreFrom replaces the store's data with CommitLog segments staged in
// dir (by a raft snapshot install) and rebuilds the ConsumeQueues and the
// IndexFile from them through the one recovery path. seq is the sequence
// number of the last batch the staged segments hold; afterwards LastSeq
// equals it and Put accepts batches above it.
//
// dir must hold segment files named by their 20-digit start offset, each
// exactly SegmentSize bytes, contiguous, with zeros after the staged data;
// other files in dir are ignored. dir is left as it was: the segments are
// hard-linked (copied where a link is impossible) into the store.
//
// The steps, each durable before the next, so that a crash at any point
// leaves either the old or the new CommitLog (never a mix) and no
// checkpoint that could vouch for queues of the other one:
//
//  1. stop the checkpoint and retention loops; take the read-write lock in
//     write mode (readers wait) and fence writers;
//  2. link the staged segments into commitlog.restore/ and fsync it;
//  3. close the CommitLog, ConsumeQueues and IndexFile; remove the
//     checkpoint;
//  4. swap commitlog.restore/ and commitlog/ (an atomic exchange where the
//     file system has one, two renames otherwise); fsync the store dir;
//  5. remove the old CommitLog, consumequeue/ and index/;
//  6. reopen the parts and recover (no checkpoint: a full rebuild);
//     write a checkpoint; check LastSeq == seq; restart the loops.
//
// Readers (Get, MessageAt, QueryByKey, MinOffset, MaxOffset, OffsetByTime,
// ...) block for the duration and then see the new data, or get an error;
// GetResults taken before keep their bytes readable until released. The
// Store value stays the same. RestoreFrom must not run concurrently with
// Put (a racing Put fails with ErrWriteFailed and writes nothing), another
// RestoreFrom or Close. Errors wrap ErrRestore; if the parts could not be
// reopened the store refuses writes and reads return errors until a later
// RestoreFrom succeeds.
func (s *Store) RestoreFrom(dir string, seq uint64) error {
	if s.closed.Load() {
		return ErrClosed
	}
	staged, err := stagedSegments(s.cfg.FS, dir, s.cfg.SegmentSize)
	if err != nil {
		return err
	}
	s.stopLoops()
	defer s.startLoops()

	s.rw.Lock()
	defer s.rw.Unlock()
	if err := s.swapCommitLog(dir, staged); err != nil {
		return err
	}
	// recover and checkpoint take s.mu themselves; the fence set by
	// swapCommitLog keeps Put out meanwhile.
	if s.cfg.OneLog {
		// Every entry the staged segments hold was committed; raft reads
		// the log from the next one on.
		s.cfg.CommittedSeq, s.cfg.EntriesFrom = seq, 0
	}
	if err := s.recover(); err != nil {
		return s.restoreFailed(fmt.Errorf("%w: recover: %w", ErrRestore, err))
	}
	// The window file was this node's; it names a message of the
	// restored log when this node's log was a prefix of it, and is
	// refused otherwise (the window then starts empty).
	s.dupsWritten.Store(-1)
	s.mu.Lock()
	s.rebuildDuplicates(s.dispatchedEnd())
	s.mu.Unlock()
	if err := s.checkpoint(false); err != nil {
		return s.restoreFailed(fmt.Errorf("%w: checkpoint: %w", ErrRestore, err))
	}
	s.mu.Lock()
	s.writeErr = nil
	s.mu.Unlock()
	if got := s.lastSeq.Load(); got != seq {
		return fmt.Errorf("%w: restored data ends at sequence %d, want %d", ErrRestore, got, seq)
	}
	s.log.Info("store restored from staged segments", "dir", dir, "segments", len(staged),
		"seq", seq, "end", s.cl.MaxOffset())
	return nil
}

// stagedSegment is one segment file offered to RestoreFrom.
type stagedSegment struct {
	start int64
	name  string
}

// stagedSegments lists and checks the segment files of dir.
func stagedSegments(fs vfs.FS, dir string, segSize int64) ([]stagedSegment, error) {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRestore, err)
	}
	var out []stagedSegment
	for _, e := range ents {
		start, ok := commitlog.ParseSegmentName(e.Name())
		if !ok {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRestore, err)
		}
		if !fi.Mode().IsRegular() || fi.Size() != segSize || start%segSize != 0 {
			return nil, fmt.Errorf("%w: %s: want a regular file of %d bytes at a multiple of it (size %d)",
				ErrRestore, e.Name(), segSize, fi.Size())
		}
		out = append(out, stagedSegment{start: start, name: e.Name()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	for i := 1; i < len(out); i++ {
		if out[i].start != out[i-1].start+segSize {
			return nil, fmt.Errorf("%w: segment %s does not follow %s", ErrRestore, out[i].name, out[i-1].name)
		}
	}
	return out, nil
}

// swapCommitLog does steps 2 to 6 up to the reopen. Called with rw held.
// On return without error the writers' fence is still set.
func (s *Store) swapCommitLog(src string, staged []stagedSegment) error {
	clDir := filepath.Join(s.cfg.Dir, commitLogDirName)
	next := filepath.Join(s.cfg.Dir, restoreDirName)
	fs := s.cfg.FS
	if err := fs.RemoveAll(next); err != nil {
		return fmt.Errorf("%w: %w", ErrRestore, err)
	}
	if err := fs.MkdirAll(next); err != nil {
		return fmt.Errorf("%w: %w", ErrRestore, err)
	}
	// The staging directory goes when a step before the swap fails; if
	// even that fails, the next restore removes it first.
	abandon := func(err error) error {
		if rerr := fs.RemoveAll(next); rerr != nil {
			s.log.Warn("removing an abandoned restore's directory", "dir", next, "error", rerr)
		}
		return fmt.Errorf("%w: %w", ErrRestore, err)
	}
	for _, seg := range staged {
		if err := linkOrCopy(fs, filepath.Join(src, seg.name), filepath.Join(next, seg.name)); err != nil {
			return abandon(err)
		}
	}
	if err := fs.SyncDir(next); err != nil {
		return abandon(err)
	}

	// Fence writers and wait for an in-flight Put to finish.
	s.mu.Lock()
	fence := s.writeErr
	s.writeErr = fmt.Errorf("%w: in progress", ErrRestore)
	s.mu.Unlock()
	if fence != nil && !errors.Is(fence, ErrRestore) {
		// A write failure before the restore stays sticky: the disk is
		// suspect, new files or not.
		s.mu.Lock()
		s.writeErr = fence
		s.mu.Unlock()
		return abandon(fmt.Errorf("store refuses writes: %w", fence))
	}

	oldCl, oldCq, oldIdx := s.cl, s.cq, s.idx
	if err := s.closeData(); err != nil {
		s.log.Warn("closing the store's files before a restore", "error", err)
	}
	fail := func(err error) error {
		s.cl, s.cq, s.idx = oldCl, oldCq, oldIdx
		return s.restoreFailed(fmt.Errorf("%w: %w", ErrRestore, err))
	}
	if err := vfs.RemoveFile(fs, filepath.Join(s.cfg.Dir, checkpointName)); err != nil {
		return fail(err)
	}
	if err := exchangeDirs(fs, next, clDir); err != nil {
		return fail(err)
	}
	if err := fs.SyncDir(s.cfg.Dir); err != nil {
		return fail(err)
	}
	for _, d := range []string{next, filepath.Join(s.cfg.Dir, consumeQueueDirName), filepath.Join(s.cfg.Dir, indexDirName)} {
		if err := fs.RemoveAll(d); err != nil {
			return fail(err)
		}
	}
	if err := fs.SyncDir(s.cfg.Dir); err != nil {
		return fail(err)
	}

	s.queues = map[queueKey]*queueState{}
	s.recorded = map[queueKey]QueueState{}
	s.lastHole = -1
	s.corruptMu.Lock()
	s.corrupt = nil
	s.seenBad = map[int64]bool{}
	s.corruptMu.Unlock()
	if err := s.openParts(); err != nil {
		// openParts assigns as it goes: close what it did open.
		if s.idx != nil && s.idx != oldIdx {
			s.idx.Close()
		}
		if s.cq != nil && s.cq != oldCq {
			s.cq.Close()
		}
		if s.cl != nil && s.cl != oldCl {
			s.cl.Close()
		}
		return fail(err)
	}
	return nil
}

// closeData closes the CommitLog, the ConsumeQueues and the IndexFile but
// keeps the store directory's lock. Outstanding GetResults keep their
// segments mapped until released (the CommitLog reports them).
func (s *Store) closeData() error {
	var errs []error
	errs = append(errs, s.idx.Close(), s.cq.Close())
	if err := s.cl.Close(); err != nil && !errors.Is(err, commitlog.ErrRefsOutstanding) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// restoreFailed records a failed restore as the store's sticky write error
// and returns err.
func (s *Store) restoreFailed(err error) error {
	s.mu.Lock()
	s.writeErr = err
	s.mu.Unlock()
	s.log.Error("restore failed; the store refuses writes", "error", err)
	return err
}

// exchangeDirs puts the directory next in place of cur and the old cur at
// next: atomically with FS.Exchange where supported, else by two renames
// (a crash between them leaves no cur, which opens as an empty store,
// behind the snapshot, so the restore is done again).
func exchangeDirs(fs vfs.FS, next, cur string) error {
	err := fs.Exchange(next, cur)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		if _, serr := fs.Stat(cur); !errors.Is(serr, os.ErrNotExist) {
			return fmt.Errorf("exchange %s and %s: %w", next, cur, err)
		}
		return fs.Rename(next, cur)
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		old := next + ".old"
		if err := fs.RemoveAll(old); err != nil {
			return err
		}
		if err := fs.Rename(cur, old); err != nil {
			return err
		}
		if err := fs.Rename(next, cur); err != nil {
			return err
		}
		return fs.Rename(old, next)
	}
	return fmt.Errorf("exchange %s and %s: %w", next, cur, err)
}

// linkOrCopy hard-links src to dst, or copies it when the file system
// cannot link it there, and makes dst durable.
func linkOrCopy(fs vfs.FS, src, dst string) error {
	if err := fs.Link(src, dst); err == nil {
		return syncFile(fs, dst)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fs.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = copyFile(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyFile writes in's bytes to out from its start, through out's WriteAt
// (the file system seam's File has no Write).
func copyFile(out vfs.File, in io.Reader) error {
	buf := make([]byte, 1<<20)
	var off int64
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if _, werr := out.WriteAt(buf[:n], off); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func syncFile(fs vfs.FS, path string) error {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// stopLoops stops the checkpoint and retention goroutines and waits for
// them; startLoops starts them again (the same loops Open starts).
func (s *Store) stopLoops() {
	s.cancel()
	s.wg.Wait()
}

func (s *Store) startLoops() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(2)
	go s.every(ctx, s.cfg.CheckpointInterval, "checkpoint", func() error { return s.checkpoint(false) })
	go s.every(ctx, s.cfg.CleanInterval, "retention", func() error { _, err := s.Clean(false); return err })
}
