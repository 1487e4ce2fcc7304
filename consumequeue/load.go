package consumequeue

import (
	"errors"
	"fmt"
	"io/fs"
)

// tailScanUnits is how many units load reads at a time while looking for
// the last written unit.
const tailScanUnits = 64

// load reads the queue's state from its directory. The caller holds mu
// exclusively.
//
// MinOffset is the first file's first unit and MaxOffset the end of the
// last file's last written unit. The files must form one contiguous run,
// every file but the last full; otherwise load fails with ErrMissingFile.
// The tail of the last file is repaired as a crash leaves it: a partial
// trailing unit, and trailing units of size 0 (space the file system
// allocated but whose data never reached the disk), are cut off and the
// file truncated; a last file left with no unit is removed and the file
// before it repaired the same way. Names that are not queue file names are
// ignored with a warning.
func (q *Queue) load() error {
	dir := q.dir()
	ents, err := q.s.cfg.FS.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		q.setEmpty(0)
		return nil
	}
	if err != nil {
		return fmt.Errorf("consumequeue: load %s: %w", q, err)
	}
	type file struct {
		start int64
		ent   fs.DirEntry
	}
	files := make([]file, 0, len(ents))
	for _, e := range ents {
		start, ok := q.s.parseFileName(e.Name())
		if !ok || !e.Type().IsRegular() {
			q.s.log.Warn("ignoring unexpected entry in queue directory", "queue", q.String(), "name", e.Name())
			continue
		}
		files = append(files, file{start, e})
	}
	if len(files) == 0 {
		q.setEmpty(0)
		return nil
	}
	// os.ReadDir sorts by name and names have a fixed width, so files are
	// in queue offset order.
	q.first = files[0].start
	for i := 1; i < len(files); i++ {
		if want := q.fileEnd(files[i-1].start); files[i].start != want {
			return fmt.Errorf("%w: %s: expected file %s after %s, found %s",
				ErrMissingFile, q, fileName(want), fileName(files[i-1].start), fileName(files[i].start))
		}
	}
	for _, f := range files[:len(files)-1] {
		info, err := f.ent.Info()
		if err != nil {
			return fmt.Errorf("consumequeue: load %s: %w", q, err)
		}
		if want := (q.fileEnd(f.start) - f.start) * UnitSize; info.Size() != want {
			return fmt.Errorf("%w: %s: file %s holds %d bytes, want %d",
				ErrMissingFile, q, f.ent.Name(), info.Size(), want)
		}
	}

	removed := false
	last := len(files) - 1
	for {
		start := files[last].start
		units, err := q.repairTail(start)
		if err != nil {
			return err
		}
		if units == 0 && last > 0 {
			q.s.log.Warn("removing queue file with no unit", "queue", q.String(), "file", fileName(start))
			if err := q.removeFile(start); err != nil {
				return err
			}
			removed = true
			last--
			continue
		}
		q.min.Store(q.first)
		q.max.Store(start + units)
		break
	}
	if removed {
		if err := q.s.cfg.FS.SyncDir(dir); err != nil {
			return fmt.Errorf("consumequeue: load %s: %w", q, err)
		}
	}
	return nil
}

func (q *Queue) setEmpty(o int64) {
	q.first = o
	q.min.Store(o)
	q.max.Store(o)
}

// repairTail cuts what a crash left at the end of the file starting at
// queue offset start (see load) and returns how many units it keeps.
func (q *Queue) repairTail(start int64) (int64, error) {
	cf, err := q.s.cache.acquire(fileKey{q, start}, false)
	if err != nil {
		return 0, fmt.Errorf("load %s: %w", q, err)
	}
	wrote := false
	defer func() { q.s.cache.release(cf, wrote) }()
	info, err := cf.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("consumequeue: load %s: %w", q, err)
	}
	size := info.Size()
	keep := min(size, (q.fileEnd(start)-start)*UnitSize)
	keep -= keep % UnitSize

	var buf [tailScanUnits * UnitSize]byte
	for keep > 0 {
		c := min(keep, int64(len(buf)))
		b := buf[:c]
		if n, err := cf.f.ReadAt(b, keep-c); n < len(b) {
			return 0, fmt.Errorf("consumequeue: load %s: read %s: %w", q, fileName(start), err)
		}
		i := len(b)/UnitSize - 1
		for i >= 0 && rawUnit(b[i*UnitSize:]).Size == 0 {
			i--
		}
		if i >= 0 {
			keep -= c - int64(i+1)*UnitSize
			break
		}
		keep -= c
	}
	if keep != size {
		q.s.log.Warn("cutting the unwritten tail of a queue file", "queue", q.String(),
			"file", fileName(start), "size", size, "keep", keep)
		if err := cf.f.Truncate(keep); err != nil {
			return 0, fmt.Errorf("consumequeue: load %s: truncate %s: %w", q, fileName(start), err)
		}
		wrote = true
	}
	return keep / UnitSize, nil
}
