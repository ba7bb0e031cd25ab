//go:build unix

package storage

import "syscall"

// accessWritable asks the kernel whether the process may create entries in dir:
// access(2) with W_OK|X_OK, which also reports a read-only file system.
func accessWritable(dir string) error {
	const wOK, xOK = 0x2, 0x1 // POSIX values, the same on every Unix
	return syscall.Access(dir, wOK|xOK)
}
