package rawconn

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// Conn is a TCP connection whose reads and writes are made with raw
// system calls on its non-blocking socket (see the package comment).
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn

	// The read in progress (rmu: one at a time) and the function that
	// makes it, made once so that a read allocates nothing.
	rmu    sync.Mutex
	rbuf   []byte
	rn     int
	rerrno syscall.Errno
	readFn func(fd uintptr) bool

	// The write in progress (wmu: one at a time): the frames still to
	// write, what was written, how it failed, and the function that
	// writes; iov keeps its backing array for the next.
	wmu     sync.Mutex
	iov     []syscall.Iovec
	wiov    []syscall.Iovec
	written int
	werr    error
	writeFn func(fd uintptr) bool
}

// Wrap returns nc with raw reads and writes when it is a TCP connection,
// else nc as it is.
func Wrap(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	c := &Conn{TCPConn: tc, rc: rc}
	c.readFn, c.writeFn = c.read, c.writev
	return c
}

func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	c.rbuf = p
	err := c.rc.Read(c.readFn)
	n, errno := c.rn, c.rerrno
	c.rbuf, c.rn, c.rerrno = nil, 0, 0
	c.rmu.Unlock()
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// read is one read(2) into rbuf; false (EAGAIN) makes the poller wait for
// data.
func (c *Conn) read(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		if e == syscall.EINTR {
			continue
		}
		c.rn, c.rerrno = int(r), e
		return e != syscall.EAGAIN
	}
}

func (c *Conn) Write(p []byte) (int, error) {
	return c.WriteBuffers([]*[]byte{&p})
}

// WriteBuffers writes the frames in order, in as few writev calls as the
// socket takes them in, and returns how many bytes it wrote. The
// remoting connection's flusher writes its batches with it.
func (c *Conn) WriteBuffers(frames []*[]byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	iov := c.iov[:0]
	for _, fb := range frames {
		if b := *fb; len(b) > 0 {
			v := syscall.Iovec{Base: &b[0]}
			v.SetLen(len(b))
			iov = append(iov, v)
		}
	}
	c.iov, c.wiov, c.written, c.werr = iov, iov, 0, nil
	err := c.rc.Write(c.writeFn)
	written, werr := c.written, c.werr
	clear(iov) // keep no pointer to the frames
	c.wiov, c.werr = nil, nil
	switch {
	case err != nil:
		return written, c.opError("write", err)
	case werr != nil:
		return written, c.opError("write", werr)
	}
	return written, nil
}

// writev writes wiov with writev(2) until it is all written or fails;
// false (EAGAIN) makes the poller wait until the socket takes more.
func (c *Conn) writev(fd uintptr) bool {
	for len(c.wiov) > 0 {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&c.wiov[0])), uintptr(len(c.wiov)))
		switch e {
		case 0:
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			c.werr = os.NewSyscallError("writev", e)
			return true
		}
		c.written += int(r)
		c.wiov = advanceIovecs(c.wiov, int(r))
	}
	return true
}

// advanceIovecs drops the first n bytes written from iov.
func advanceIovecs(iov []syscall.Iovec, n int) []syscall.Iovec {
	for n > 0 && len(iov) > 0 {
		l := int(iov[0].Len)
		if n < l {
			iov[0].Base = (*byte)(unsafe.Add(unsafe.Pointer(iov[0].Base), n))
			iov[0].SetLen(l - n)
			return iov
		}
		n -= l
		iov = iov[1:]
	}
	return iov
}

// opError is err as the net package reports a failed op: an OpError with
// the connection's addresses (the poller's errors, a deadline or a closed
// connection, come as one already, named after the raw op).
func (c *Conn) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
