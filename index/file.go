package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// stampLen is the length of a file name's time stamp, yyyyMMddHHmmssSSS.
const stampLen = 17

// tmpSuffix marks a file still being created; Open removes leftovers.
const tmpSuffix = ".tmp"

// maxStampMillis is the last instant a 17-digit stamp can express.
var maxStampMillis = time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC).UnixMilli()

// fileName is a parsed index file name: a UTC time stamp and a sequence
// number that is 0 for the plain name and n for "stamp_n".
type fileName struct {
	stamp string
	seq   int
}

func (n fileName) String() string {
	if n.seq == 0 {
		return n.stamp
	}
	return n.stamp + "_" + strconv.Itoa(n.seq)
}

// less orders names by creation: stamp first, then sequence number.
func (n fileName) less(o fileName) bool {
	if n.stamp != o.stamp {
		return n.stamp < o.stamp
	}
	return n.seq < o.seq
}

// stampOf formats a store time (ms) as yyyyMMddHHmmssSSS in UTC, clamped to
// the years 1970..9999 so that every stamp has exactly stampLen digits.
func stampOf(ms int64) string {
	ms = min(max(ms, 0), maxStampMillis)
	t := time.UnixMilli(ms).UTC()
	return fmt.Sprintf("%04d%02d%02d%02d%02d%02d%03d",
		t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond()/1_000_000)
}

// parseFileName accepts "stamp" and "stamp_n" with n a positive decimal
// number without leading zeros.
func parseFileName(s string) (fileName, bool) {
	if len(s) < stampLen {
		return fileName{}, false
	}
	for i := 0; i < stampLen; i++ {
		if s[i] < '0' || s[i] > '9' {
			return fileName{}, false
		}
	}
	n := fileName{stamp: s[:stampLen]}
	rest := s[stampLen:]
	if rest == "" {
		return n, true
	}
	if len(rest) < 2 || len(rest) > 10 || rest[0] != '_' || rest[1] == '0' {
		return fileName{}, false
	}
	seq, err := strconv.Atoi(rest[1:])
	if err != nil || seq < 1 || strconv.Itoa(seq) != rest[1:] {
		return fileName{}, false
	}
	n.seq = seq
	return n, true
}

// indexFile is one file of the index. Its hdr and data fields are guarded by
// Service.mu; dirty and pins are safe to use under a read lock.
type indexFile struct {
	fs   vfs.FS
	name fileName
	path string
	hdr  Header // in-memory copy of the header; the authority for queries

	// data is the MAP_SHARED read/write mapping of the whole file, or nil
	// when the file is cold (beyond Config.MaxFiles) and read with pread.
	data []byte

	dirty atomic.Bool    // data changed since the last msync
	pins  sync.WaitGroup // flushes using data outside Service.mu

	// backed has a bit set for every page of the file known to have
	// storage (see ensureBacked). Guarded by Service.mu for writing.
	backed []uint64

	// slots is the file's hash-slot table in anonymous memory while the
	// file takes puts, nil otherwise; slotDirty marks its pages changed
	// since Flush last wrote them (shadow.go). Guarded by Service.mu.
	slots     []byte
	slotDirty []uint64
}

// pageSize is the size of a page of a mapping.
var pageSize = int64(os.Getpagesize())

// ensureBacked makes sure the pages of [off, off+n) have storage before
// put writes them through the mapping. The file is sparse: the first
// write to a page makes the file system allocate it, and when it cannot
// (a full disk) a write through a mapping faults with SIGBUS, which
// would crash the process. The file system's Populate (madvise
// MADV_POPULATE_WRITE) allocates the pages ahead and returns that failure
// as an error instead (ErrNoSpace), so a full disk fails the put. Pages
// once backed stay backed, so each costs one call.
func (f *indexFile) ensureBacked(off, n int64) error {
	page := pageSize
	if f.backed == nil {
		f.backed = make([]uint64, (int64(len(f.data))/page+64)/64)
	}
	for p := off / page; p <= (off+n-1)/page; p++ {
		if f.backed[p/64]&(1<<(p%64)) != 0 {
			continue
		}
		lo, hi := p*page, min((p+1)*page, int64(len(f.data)))
		if err := f.fs.Populate(f.path, f.data[lo:hi]); err != nil {
			return fmt.Errorf("%w: %s page at %d: %w", ErrNoSpace, f.path, lo, err)
		}
		f.backed[p/64] |= 1 << (p % 64)
	}
	return nil
}

// full reports whether no entry can be added.
func (f *indexFile) full(g geometry) bool {
	return int64(f.hdr.IndexCount) >= g.maxEntries
}

// limit is the first entry index that is not valid for reading.
func (f *indexFile) limit(g geometry) int64 {
	return min(int64(max(f.hdr.IndexCount, 1)), g.maxEntries)
}

// createFile creates, sizes (sparse) and maps a new file named name in dir.
// The file is built under a temporary name and renamed into place, so a crash
// never leaves a short file under a real name.
func createFile(fs vfs.FS, dir string, name fileName, g geometry) (_ *indexFile, err error) {
	path := filepath.Join(dir, name.String())
	tmp := path + tmpSuffix
	fd, err := fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("index: create %s: %w", tmp, err)
	}
	var data []byte
	defer func() {
		if err != nil {
			if data != nil {
				_ = fs.Unmap(data)
			}
			_ = fs.Remove(tmp) // gone already, or Open removes it
		}
	}()
	if err = fd.Truncate(g.fileSize()); err == nil {
		err = fd.Sync()
	}
	if err == nil {
		data, err = fs.Map(fd, int(g.fileSize()))
		if err != nil {
			data = nil
		}
	}
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("index: size and map %s: %w", tmp, err)
	}
	if err = fs.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("index: rename %s: %w", tmp, err)
	}
	if err = fs.SyncDir(dir); err != nil {
		// The file is in place but its name may not survive a power
		// loss: it is removed (a put that cannot roll fails), and a name
		// that outlives the removal is an empty file Open accepts.
		_ = fs.Unmap(data)
		data = nil
		_ = fs.Remove(path)
		return nil, fmt.Errorf("index: %w", err)
	}
	f := &indexFile{fs: fs, name: name, path: path, data: data, hdr: Header{IndexCount: 1}}
	f.setShadow(make([]byte, g.slotNum*SlotSize))
	return f, nil
}

// readHeader reads and validates the header of an existing file, checking
// first that the file has the size g implies.
func readHeader(fs vfs.FS, path string, g geometry) (Header, error) {
	fd, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return Header{}, fmt.Errorf("index: open %s: %w", path, err)
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return Header{}, fmt.Errorf("index: stat %s: %w", path, err)
	}
	if fi.Size() != g.fileSize() {
		return Header{}, fmt.Errorf("%w: %s is %d bytes, want %d for %d slots and %d entries",
			ErrBadHeader, path, fi.Size(), g.fileSize(), g.slotNum, g.maxEntries)
	}
	var b [HeaderSize]byte
	if _, err := fd.ReadAt(b[:], 0); err != nil {
		return Header{}, fmt.Errorf("index: read header %s: %w", path, err)
	}
	h, err := DecodeHeader(b[:], int(g.slotNum), int(g.maxEntries))
	if err != nil {
		return Header{}, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// mapFile maps an existing file of g's size read/write.
func mapFile(fs vfs.FS, path string, g geometry) ([]byte, error) {
	fd, err := fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("index: open %s: %w", path, err)
	}
	defer fd.Close()
	data, err := fs.Map(fd, int(g.fileSize()))
	if err != nil {
		return nil, fmt.Errorf("index: mmap %s: %w", path, err)
	}
	return data, nil
}

// unmap msyncs the mapping if it is dirty and unmaps it. The caller has
// already detached data from every reader and waited for pins.
func unmap(fs vfs.FS, path string, data []byte, dirty bool) error {
	var err error
	if dirty {
		if e := fs.SyncMapped(path, data); e != nil {
			err = fmt.Errorf("index: msync %s: %w", path, e)
		}
	}
	if e := fs.Unmap(data); e != nil && err == nil {
		err = fmt.Errorf("index: munmap %s: %w", path, e)
	}
	return err
}

// beginPuts readies a mapped file that is not full to take entries: the
// page of its header has storage and its shadow is built. The caller holds
// Service.mu for writing, and calls endPuts once the file has taken its
// entries.
func (f *indexFile) beginPuts(g geometry) error {
	if err := f.ensureBacked(0, HeaderSize); err != nil {
		return err
	}
	if f.slots == nil {
		return f.loadShadow(g)
	}
	return nil
}

// putEntry appends key hash → phyOffset at store time ts to a file readied
// by beginPuts, links it at the head of its slot's chain and updates the
// in-memory header, which endPuts writes into the mapping. *backed is an
// offset below which the entry pages are known to have storage (0 at
// first); putEntry raises it as it checks pages, so a run of puts asks
// ensureBacked once a page. Nothing is written when it fails. The caller
// holds Service.mu for writing.
func (f *indexFile) putEntry(g geometry, hash int32, phyOffset, ts int64, backed *int64) error {
	h := &f.hdr
	idx := max(h.IndexCount, 1)
	eo := g.entryOff(int64(idx))
	if eo+EntrySize > *backed {
		if err := f.ensureBacked(eo, EntrySize); err != nil {
			return err
		}
		*backed = ((eo+EntrySize-1)/pageSize + 1) * pageSize
	}
	h.IndexCount = idx
	if idx == 1 {
		h.BeginTimestamp, h.EndTimestamp = ts, ts
		h.BeginPhyOffset, h.EndPhyOffset = phyOffset, phyOffset
	}
	// The slot goes to the shadow, which reaches the file by pwrite: a
	// page the disk has no room for fails that write (and the Flush), not
	// the process.
	so := g.slotOff(g.slotOf(hash)) - HeaderSize
	head := int32(binary.BigEndian.Uint32(f.slots[so : so+SlotSize]))
	if head <= 0 || head >= idx {
		// Empty, or a leftover of writes lost in a crash: start a new chain.
		head = 0
		if int64(h.HashSlotCount) < g.slotNum {
			h.HashSlotCount++
		}
	}
	encodeEntry(f.data[eo:eo+EntrySize], entry{
		keyHash:   hash,
		phyOffset: phyOffset,
		timeDiff:  timeDiff(h.BeginTimestamp, ts),
		prevIndex: head,
	})
	f.setSlot(so+HeaderSize, uint32(idx))
	h.IndexCount++
	h.EndTimestamp = max(h.EndTimestamp, ts)
	h.EndPhyOffset = max(h.EndPhyOffset, phyOffset)
	return nil
}

// endPuts writes the header of a file that took entries into its mapping
// and marks the mapping dirty. The caller holds Service.mu for writing.
func (f *indexFile) endPuts() {
	EncodeHeader(f.data[:HeaderSize], f.hdr)
	f.dirty.Store(true)
}

// source reads n ≤ EntrySize bytes at off from a mapped or a cold file.
type source interface {
	read(off int64, n int) ([]byte, error)
}

// memSource reads from a mapping without copying.
type memSource []byte

func (m memSource) read(off int64, n int) ([]byte, error) {
	if off < 0 || off > int64(len(m))-int64(n) {
		return nil, fmt.Errorf("index: read %d bytes at %d beyond %d-byte mapping", n, off, len(m))
	}
	return m[off : off+int64(n)], nil
}

// fileSource reads from an open file with pread.
type fileSource struct {
	f   vfs.File
	buf [EntrySize]byte
}

func (s *fileSource) read(off int64, n int) ([]byte, error) {
	if _, err := s.f.ReadAt(s.buf[:n], off); err != nil {
		return nil, fmt.Errorf("index: read %s at %d: %w", s.f.Name(), off, err)
	}
	return s.buf[:n], nil
}

// errStop is returned by an emit callback's caller to end a walk early.
var errStop = errors.New("index: stop walk")

// walk follows the chain of hash's slot in one file, newest entry first, and
// calls emit with the commitlog offset of every entry whose hash equals hash
// and whose store-time window overlaps [begin, end]. emit returns false to
// stop, which walk reports as errStop.
//
// Only entries below the header's IndexCount are read; a slot or a link
// pointing at or past it, or a link that does not point strictly backwards,
// ends the chain. Each step moves to a smaller index, so a walk takes at most
// MaxEntries steps whatever the file holds.
func walk(src source, g geometry, h Header, limit int64, hash int32, begin, end int64, emit func(int64) bool) error {
	b, err := src.read(g.slotOff(g.slotOf(hash)), SlotSize)
	if err != nil {
		return err
	}
	cur := int64(int32(binary.BigEndian.Uint32(b)))
	for cur > 0 && cur < limit {
		b, err := src.read(g.entryOff(cur), EntrySize)
		if err != nil {
			return err
		}
		e := decodeEntry(b)
		if e.keyHash == hash {
			if lo, hi := entryWindow(h, e.timeDiff); lo <= end && hi >= begin {
				if !emit(e.phyOffset) {
					return errStop
				}
			}
		}
		next := int64(e.prevIndex)
		if next >= cur {
			break
		}
		cur = next
	}
	return nil
}
