package dledger

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
)

// snapshotReader produces a snapshot's stream from its directory: the
// header and manifest, one frame per segment read from the pinned or
// staged file (only the snapshot's bytes, never what was appended to a
// linked segment later), and the end frame with the CRC of everything
// before it. It also tells Restore where the files are (StagedDir), so a
// node restoring its own snapshot does not copy them. One goroutine reads
// it; Close releases the snapshot for reaping.
type snapshotReader struct {
	s     *snapshotStore
	id    string
	dir   string
	index uint64
	term  uint64
	parts []io.Reader
	files []*os.File
	crc   hash.Hash32
	ended bool // the end frame is queued; its CRC field is not summed
	done  bool
}

// openSnapshotReader opens every file the stream needs up front, so a
// snapshot reaped while it streams still streams whole.
func openSnapshotReader(s *snapshotStore, snap *snapshot) (*snapshotReader, error) {
	r := &snapshotReader{s: s, id: snap.meta.ID, dir: snap.dir, index: snap.meta.Index, term: snap.meta.Term, crc: crc32.New(castagnoli)}
	raw, err := readManifestFile(snap.manifest)
	if err != nil {
		return nil, fmt.Errorf("dledger: open snapshot %s: %w", snap.meta.ID, err)
	}
	if len(raw) != snap.manifestLen {
		return nil, fmt.Errorf("%w: %s: manifest changed size", ErrBadSnapshot, snap.meta.ID)
	}
	head := appendStreamHeader(make([]byte, 0, streamHeaderSize+len(raw)), snap.segSize, len(raw), len(snap.segs))
	r.parts = append(r.parts, bytes.NewReader(append(head, raw...)))
	for _, sg := range snap.segs {
		f, err := os.Open(sg.path)
		if err != nil {
			r.closeFiles()
			return nil, fmt.Errorf("dledger: open snapshot %s: %w", snap.meta.ID, err)
		}
		r.files = append(r.files, f)
		if fi, err := f.Stat(); err != nil || fi.Size() < sg.n {
			r.closeFiles()
			return nil, fmt.Errorf("%w: %s: segment %d is shorter than %d bytes", ErrBadSnapshot, snap.meta.ID, sg.start, sg.n)
		}
		r.parts = append(r.parts, bytes.NewReader(appendSegmentFrame(nil, sg.start, sg.n)), io.NewSectionReader(f, 0, sg.n))
	}
	return r, nil
}

func (r *snapshotReader) Read(p []byte) (int, error) {
	for {
		if len(r.parts) == 0 {
			if r.ended {
				return 0, io.EOF
			}
			r.ended = true
			r.crc.Write([]byte{frameKindEnd})
			r.parts = append(r.parts, bytes.NewReader(binary.BigEndian.AppendUint32([]byte{frameKindEnd}, r.crc.Sum32())))
		}
		n, err := r.parts[0].Read(p)
		if !r.ended {
			r.crc.Write(p[:n])
		}
		if err == io.EOF {
			r.parts, err = r.parts[1:], nil
		}
		if n > 0 || err != nil || len(p) == 0 {
			return n, err
		}
	}
}

// StagedDir is the snapshot's directory: manifest and segment files.
func (r *snapshotReader) StagedDir() string { return r.dir }

// SnapshotIndex is the raft index the snapshot was taken at.
func (r *snapshotReader) SnapshotIndex() uint64 { return r.index }

// SnapshotTerm is the term of the snapshot's last entry.
func (r *snapshotReader) SnapshotTerm() uint64 { return r.term }

func (r *snapshotReader) Close() error {
	if r.done {
		return nil
	}
	r.done = true
	err := r.closeFiles()
	r.s.release(r.id)
	return err
}

func (r *snapshotReader) closeFiles() error {
	var first error
	for _, f := range r.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.files = nil
	return first
}
