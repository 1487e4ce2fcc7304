//go:build unix

package jepsen

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Disk full (NemDiskFull): when the plan has a disk-full fault, every
// node's data directory is a tmpfs of its own (DiskSize bytes) that the
// harness mounts before the nodes start and unmounts when the run ends,
// whatever way it ends short of a SIGKILL of the harness (the nodes'
// files go with it; their logs are beside the directory). The fault
// fills the target's file system with a filler file until the write
// fails with ENOSPC, holds it full for the fault's duration, and the
// healing removes the filler. In such a run the harness is also the
// nodes' service manager (supervise.go): a node that stops itself
// because it cannot apply a committed entry on a full disk (docs/invariants.md
// I8) is started again once its disk has space. Mounting needs CAP_SYS_ADMIN: without it
// the run is refused with ErrDiskFullUnsupported, never run without the
// fault.

// DiskSize is each node's tmpfs size in a run with disk-full faults.
const DiskSize = 512 << 20

// FillerName is the filler file in a full node's data directory.
const FillerName = "DISK_FILLER"

// ErrDiskFullUnsupported is a plan with disk-full faults on a machine
// where the harness cannot mount its file systems.
var ErrDiskFullUnsupported = errors.New("jepsen: the disk-full nemesis needs a tmpfs per node, which could not be mounted")

func needsOwnDisks(p Plan) bool {
	for _, f := range p.Faults {
		if f.Kind == NemDiskFull {
			return true
		}
	}
	return false
}

// mountDisks mounts a tmpfs on every node's data directory and returns
// the unmount of all of them.
func mountDisks(c *Cluster) (func() error, error) {
	var mounted []string
	unmount := func() error {
		var errs []error
		for _, d := range mounted {
			errs = append(errs, unmountTmpfs(d))
		}
		mounted = nil
		return errors.Join(errs...)
	}
	for _, nd := range c.Nodes {
		if nd.Disk == "" {
			unmount()
			return nil, fmt.Errorf("%w: node %s was laid out without a disk of its own", ErrCluster, nd.ID)
		}
		if err := os.MkdirAll(nd.Disk, 0o755); err != nil {
			unmount()
			return nil, err
		}
		if err := mountTmpfs(nd.Disk, DiskSize); err != nil {
			unmount()
			return nil, fmt.Errorf("%w: %s: %w", ErrDiskFullUnsupported, nd.Disk, err)
		}
		mounted = append(mounted, nd.Disk)
		if err := os.MkdirAll(nd.Dir, 0o755); err != nil {
			unmount()
			return nil, err
		}
	}
	return unmount, nil
}

// fill writes the filler into target's data directory until the file
// system is full and returns how many bytes it took, and the heal.
func (n *nemesis) fill(target string) (func() error, error) {
	nd := n.c.node(target)
	if nd == nil {
		return func() error { return nil }, fmt.Errorf("%w: no node %q", ErrCluster, target)
	}
	path := filepath.Join(nd.Dir, FillerName)
	if n.sup != nil {
		n.sup.filled(target)
	}
	heal := func() error {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		// A node that stopped itself meanwhile is started again by the
		// supervisor (supervise.go).
		if n.sup != nil {
			n.sup.freed(target)
		}
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return heal, err
	}
	defer f.Close()
	var total int64
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = 0xA5
	}
	// Big writes first, then smaller ones until not a page is left.
	for chunk := len(buf); chunk >= 4096; {
		k, err := f.Write(buf[:chunk])
		total += int64(k)
		if err == nil {
			continue
		}
		if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, io.ErrShortWrite) {
			return heal, fmt.Errorf("jepsen: filling %s: %w", nd.Dir, err)
		}
		chunk /= 2
	}
	ev := stepEvent(NemDiskFull, n.c.eventGroup(target), []string{target}, fmt.Sprintf("filled %s with %d bytes until ENOSPC", target, total), nil)
	n.h.Add(ev)
	n.log("nemesis: %s", ev.Detail)
	return heal, nil
}
