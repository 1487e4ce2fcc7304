package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
)

// The hash-slot table of the file that takes puts lives in anonymous memory
// (the file's shadow), and Flush writes the pages of it that changed into
// the file with pwrite. Slot writes land on random pages of the table
// (20 MB with the default geometry), and a page written through the shared
// mapping is write-protected again each time it is written back, so every
// Flush made the next put to each page take a write fault, which the file
// system serves slowly while the CommitLog keeps its journal busy; a pwrite
// of the changed pages costs a copy. Entries and the header are appended
// and rewritten in place, touching few pages, and stay in the mapping.
//
// The shadow is built when a file takes its first put after it was created
// (zeros, like the sparse file) or opened (read from the file), and dropped
// by the Flush that writes its last changed page once the file no longer
// takes puts. While it exists it is the authority for the file's slots:
// queries and TruncateAfter use it.

// shadowPage is the unit of change tracking and of writing the shadow back.
const shadowPage = 4096

// loadShadow builds f's shadow from the file: the slot region as the page
// cache holds it (writes TruncateAfter made through the mapping included).
// The caller holds Service.mu for writing.
func (f *indexFile) loadShadow(g geometry) error {
	slots := make([]byte, g.slotNum*SlotSize)
	fd, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("index: open %s: %w", f.path, err)
	}
	defer fd.Close()
	if _, err := fd.ReadAt(slots, HeaderSize); err != nil {
		return fmt.Errorf("index: read slots of %s: %w", f.path, err)
	}
	f.setShadow(slots)
	return nil
}

// setShadow installs slots as f's shadow with no page changed.
func (f *indexFile) setShadow(slots []byte) {
	f.slots = slots
	f.slotDirty = make([]uint64, (len(slots)/shadowPage+64)/64)
}

// setSlot points the slot at so (a file offset) at idx in the shadow and
// marks its page changed.
func (f *indexFile) setSlot(so int64, idx uint32) {
	o := so - HeaderSize
	binary.BigEndian.PutUint32(f.slots[o:o+SlotSize], idx)
	p := o / shadowPage
	f.slotDirty[p/64] |= 1 << (p % 64)
}

// markAllSlots marks every page of the shadow changed.
func (f *indexFile) markAllSlots() {
	for i := range f.slotDirty {
		f.slotDirty[i] = ^uint64(0)
	}
}

// slotsChanged reports whether a page of the shadow is not yet in the file.
func (f *indexFile) slotsChanged() bool {
	for _, w := range f.slotDirty {
		if w != 0 {
			return true
		}
	}
	return false
}

// slotWrite is the changed part of one file's shadow, copied out for Flush
// to write while puts go on.
type slotWrite struct {
	f     *indexFile
	runs  []slotRun
	pages []int64 // the pages taken, to mark again if the write fails
	sync  bool    // fdatasync after writing: no msync of this Flush covers the file
}

// slotRun is a contiguous range of changed shadow pages: its file offset
// and a copy of its bytes.
type slotRun struct {
	off int64
	b   []byte
}

// takeSlots copies the changed pages of f's shadow into buf (grown as
// needed), clears their marks and returns what to write, with buf. The
// caller holds Service.mu for writing.
func (f *indexFile) takeSlots(buf []byte) (slotWrite, []byte) {
	w := slotWrite{f: f}
	n := int64(len(f.slots))
	pages := 0
	for _, word := range f.slotDirty {
		pages += bits.OnesCount64(word)
	}
	if need := len(buf) + pages*shadowPage; cap(buf) < need {
		// Grown once: runs taken before point into the old array, whose
		// bytes stay as they were.
		buf = make([]byte, 0, need)
	}
	for wi, word := range f.slotDirty {
		for word != 0 {
			p := int64(wi*64 + bits.TrailingZeros64(word))
			word &= word - 1
			lo := p * shadowPage
			if lo >= n {
				continue
			}
			hi := min(lo+shadowPage, n)
			w.pages = append(w.pages, p)
			start := len(buf)
			buf = append(buf, f.slots[lo:hi]...)
			if k := len(w.runs) - 1; k >= 0 && w.runs[k].off+int64(len(w.runs[k].b)) == HeaderSize+lo {
				w.runs[k].b = buf[start-len(w.runs[k].b):]
			} else {
				w.runs = append(w.runs, slotRun{off: HeaderSize + lo, b: buf[start:]})
			}
		}
		f.slotDirty[wi] = 0
	}
	return w, buf
}

// remark marks the pages of a write that failed as changed again. The
// caller holds Service.mu for writing.
func (w slotWrite) remark() {
	if w.f.slots == nil {
		return
	}
	for _, p := range w.pages {
		w.f.slotDirty[p/64] |= 1 << (p % 64)
	}
}

// write writes the runs into the file, and fdatasyncs it when w.sync.
func (w slotWrite) write() error {
	if len(w.runs) == 0 {
		return nil
	}
	fd, err := os.OpenFile(w.f.path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("index: open %s: %w", w.f.path, err)
	}
	var errs []error
	for _, r := range w.runs {
		if _, err := fd.WriteAt(r.b, r.off); err != nil {
			errs = append(errs, fmt.Errorf("index: write slots of %s at %d: %w", w.f.path, r.off, err))
			break
		}
	}
	if len(errs) == 0 && w.sync {
		if err := fd.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("index: fsync %s: %w", w.f.path, err))
		}
	}
	if err := fd.Close(); err != nil {
		errs = append(errs, fmt.Errorf("index: close %s: %w", w.f.path, err))
	}
	return errors.Join(errs...)
}

// shadowSource reads a file whose shadow holds its slots: slot reads from
// the shadow, the rest from src.
type shadowSource struct {
	src   source
	slots []byte
}

func (s shadowSource) read(off int64, n int) ([]byte, error) {
	if o := off - HeaderSize; o >= 0 && o+int64(n) <= int64(len(s.slots)) {
		return s.slots[o : o+int64(n)], nil
	}
	return s.src.read(off, n)
}
