// Package vfs is the file system as the write path sees it: the files it
// opens, writes, maps and syncs go through FS, so a test can make any of
// those operations fail (Faulty) without a global switch in production
// code and without a file system of its own (a full disk, a failing
// device).
//
// Default is the operating system's. Faulty wraps an FS and asks a
// function before every operation that changes the disk whether it is to
// fail, and how: disk full after so many bytes (FullAfter), an I/O error
// on syncing a file (FailSync), or anything a test writes. Reads are never
// failed: a read error is the kernel's to report, and the write path
// checks what it reads by its CRCs.
//
// Files are real files (mapped segments need descriptors), so Faulty is a
// layer over the real disk, not an in-memory file system.
//
// Beside the seam, the durable file operations every on-disk package
// shares: WriteFileAtomic (write a temporary file, fsync, rename over,
// fsync the directory) and RemoveFile over any FS; MkdirAll and SyncDir
// are the FS's; Lock takes a directory's advisory lock (flock, the
// operating system's whatever the FS, since it excludes other processes).
//
// It imports no package of this module (internal's ground floor).
package vfs
