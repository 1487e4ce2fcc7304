package index

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/ledgermq/ledgermq/internal/vfs"
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
	fd, err := f.fs.OpenFile(f.path, os.O_RDONLY, 0)
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

// writeShadow writes the changed pages of f's shadow into the file with
// pwrite, straight from the shadow (one copy, into the page cache), and
// clears their marks; pages whose write fails stay marked for the next
// Flush. It reports whether it wrote anything. The caller holds
// Service.mu for writing: puts wait for the writes, which take about as
// long as copying the pages out would.
func (f *indexFile) writeShadow() (bool, error) {
	if !f.slotsChanged() {
		return false, nil
	}
	fd, err := f.fs.OpenFile(f.path, os.O_WRONLY, 0)
	if err != nil {
		return false, fmt.Errorf("index: open %s: %w", f.path, err)
	}
	n := int64(len(f.slots))
	marked := func(p int64) bool { return f.slotDirty[p/64]&(1<<(p%64)) != 0 }
	pages := int64(len(f.slotDirty)) * 64
	wrote := false
	for p := int64(0); p < pages; {
		if f.slotDirty[p/64] == 0 {
			p += 64 - p%64
			continue
		}
		if !marked(p) {
			p++
			continue
		}
		q := p + 1
		for q < pages && marked(q) {
			q++
		}
		if lo, hi := p*shadowPage, min(q*shadowPage, n); lo < n {
			if _, err := fd.WriteAt(f.slots[lo:hi], HeaderSize+lo); err != nil {
				_ = fd.Close()
				return wrote, fmt.Errorf("index: write slots of %s at %d: %w", f.path, HeaderSize+lo, err)
			}
			wrote = true
		}
		for ; p < q; p++ {
			f.slotDirty[p/64] &^= 1 << (p % 64)
		}
	}
	if err := fd.Close(); err != nil {
		return wrote, fmt.Errorf("index: close %s: %w", f.path, err)
	}
	return wrote, nil
}

// syncShadows fdatasyncs files whose shadow pages were written without an
// msync to cover them, and unpins them. A file that fails has its whole
// shadow marked changed, to be written again. Called without s.mu.
func (s *Service) syncShadows(fs []*indexFile) []error {
	var errs []error
	for _, f := range fs {
		if err := syncFile(f.fs, f.path); err != nil {
			errs = append(errs, err)
			s.mu.Lock()
			if f.slots != nil {
				f.markAllSlots()
			}
			s.mu.Unlock()
		}
		f.pins.Done()
	}
	return errs
}

func syncFile(fs vfs.FS, path string) error {
	fd, err := fs.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("index: open %s: %w", path, err)
	}
	err = fd.Sync()
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("index: fsync %s: %w", path, err)
	}
	return nil
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
