package afxdp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// x/sys/unix has typed wrappers only for int-sized socket options; the
// AF_XDP structs go through these two.

func getsockopt(fd, level, name int, p unsafe.Pointer, size uintptr) (uintptr, error) {
	l := uint32(size)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name),
		uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, e
	}
	return uintptr(l), nil
}

func setsockopt(fd, level, name int, p unsafe.Pointer, size uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name),
		uintptr(p), size, 0)
	if e != 0 {
		return e
	}
	return nil
}

// isPow2 reports whether n is a power of two (and not zero).
func isPow2(n uint64) bool { return n != 0 && n&(n-1) == 0 }
