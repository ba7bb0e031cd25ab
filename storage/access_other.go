//go:build !unix

package storage

import (
	"errors"
	"os"
)

// accessWritable approximates access(2) where there is none: the owner-write bit.
func accessWritable(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o200 == 0 {
		return errors.New("permission bits forbid writing")
	}
	return nil
}
