package index

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// TruncateAfter removes every entry whose commitlog offset exceeds
// phyOffset, so that after an unclean shutdown the owner can drop what was
// indexed since its last flushed checkpoint and re-dispatch from
// MaxPhyOffset. Files that begin past phyOffset are removed whole; a mapped
// file that holds entries on both sides keeps the ones at or below it: its
// entry count is cut there and every hash slot that points at a removed
// entry is pointed back along its chain at the newest kept one (chain
// links only point backwards, so the kept entries' chains stay whole).
// That reads the slot table and the removed entries, not the kept ones nor
// the CommitLog. A slot that points past the file's entries (pages of the
// table that reached the disk before the entries did, in a power loss)
// cannot be followed; then the slots are rebuilt from every kept entry. A
// straddling file that is not mapped is removed whole. Entries are in
// commitlog order within a file (dispatch order), which the cut relies on.
// Safe for concurrent use.
func (s *Service) TruncateAfter(phyOffset int64) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	var cut []*indexFile
	for _, f := range s.files {
		if f.hdr.entries() > 0 && f.hdr.BeginPhyOffset <= phyOffset && f.hdr.EndPhyOffset > phyOffset && f.data != nil {
			cut = append(cut, f)
		}
	}
	var errs []error
	for _, f := range cut {
		if err := f.truncateAfter(s.g, phyOffset); err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.Unlock()
	if len(errs) > 0 {
		return fmt.Errorf("index: truncate after %d: %w", phyOffset, errs[0])
	}
	return s.remove(func(_ int, f *indexFile) bool {
		return f.hdr.entries() > 0 && f.hdr.EndPhyOffset > phyOffset
	}, false)
}

// truncateAfter cuts a mapped file's entries to those at or below
// phyOffset and points the slots that led to removed entries back at the
// newest kept entry of their chain (rebuildSlots when a slot cannot be
// followed). The header's end timestamp stays as it was: an upper bound,
// which only widens the time range a query looks at this file for. Called
// with the service's lock held for writing.
func (f *indexFile) truncateAfter(g geometry, phyOffset int64) error {
	n := f.limit(g) // entries [1, n)
	at := func(i int64) entry {
		off := g.entryOff(i)
		return decodeEntry(f.data[off : off+EntrySize])
	}
	keep := int64(1) + int64(sort.Search(int(n-1), func(i int) bool { return at(int64(i)+1).phyOffset > phyOffset }))
	slots := f.data[HeaderSize : HeaderSize+g.slotNum*SlotSize]
	if f.slots != nil {
		slots = f.slots
	}
	type move struct {
		so int64
		to int64
	}
	var moves []move
	for o := int64(0); o < int64(len(slots)); o += SlotSize {
		v := int64(binary.BigEndian.Uint32(slots[o : o+SlotSize]))
		if v < keep {
			continue
		}
		if v >= n {
			return f.rebuildSlots(g, keep)
		}
		j := v
		for j >= keep {
			prev := int64(at(j).prevIndex)
			if prev < 0 || prev >= j {
				return f.rebuildSlots(g, keep)
			}
			j = prev
		}
		moves = append(moves, move{o + HeaderSize, j})
	}
	h := f.hdr
	for _, m := range moves {
		if err := f.pointSlot(m.so, uint32(m.to)); err != nil {
			return err
		}
		if m.to == 0 && h.HashSlotCount > 0 {
			h.HashSlotCount--
		}
	}
	h.IndexCount = int32(keep)
	if keep == 1 {
		h = Header{}
	} else {
		h.EndPhyOffset = at(keep - 1).phyOffset
	}
	f.hdr = h
	EncodeHeader(f.data[:HeaderSize], h)
	f.dirty.Store(true)
	return nil
}

// pointSlot sets the slot at file offset so to idx: in the shadow when the
// file has one, else through the mapping.
func (f *indexFile) pointSlot(so int64, idx uint32) error {
	if f.slots != nil {
		f.setSlot(so, idx)
		return nil
	}
	if err := f.ensureBacked(so, SlotSize); err != nil {
		return err
	}
	binary.BigEndian.PutUint32(f.data[so:so+SlotSize], idx)
	return nil
}

// rebuildSlots cuts the file to its first keep entries and rebuilds its
// hash slots from all of them.
func (f *indexFile) rebuildSlots(g geometry, keep int64) error {
	at := func(i int64) entry {
		off := g.entryOff(i)
		return decodeEntry(f.data[off : off+EntrySize])
	}
	// Clear every slot that is set, then point each slot at the newest kept
	// entry of its key hash: in the shadow when the file has one (Flush
	// then writes it whole), else through the mapping.
	slots := f.data[HeaderSize : HeaderSize+g.slotNum*SlotSize]
	if f.slots != nil {
		slots = f.slots
		f.markAllSlots()
	}
	for so := int64(0); so < int64(len(slots)); so += SlotSize {
		if slots[so]|slots[so+1]|slots[so+2]|slots[so+3] != 0 {
			clear(slots[so : so+SlotSize])
		}
	}
	h := f.hdr
	h.IndexCount, h.HashSlotCount, h.EndTimestamp, h.EndPhyOffset = int32(keep), 0, h.BeginTimestamp, h.BeginPhyOffset
	for i := int64(1); i < keep; i++ {
		e := at(i)
		so := g.slotOff(g.slotOf(e.keyHash))
		if err := f.ensureBacked(so, SlotSize); err != nil {
			return err
		}
		o := so - HeaderSize
		if slots[o]|slots[o+1]|slots[o+2]|slots[o+3] == 0 {
			h.HashSlotCount++
		}
		binary.BigEndian.PutUint32(slots[o:o+SlotSize], uint32(i))
		_, hi := entryWindow(f.hdr, e.timeDiff)
		h.EndTimestamp = max(h.EndTimestamp, hi)
		h.EndPhyOffset = max(h.EndPhyOffset, e.phyOffset)
	}
	if keep == 1 {
		h = Header{}
	}
	f.hdr = h
	EncodeHeader(f.data[:HeaderSize], h)
	f.dirty.Store(true)
	return nil
}
