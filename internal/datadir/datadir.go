// Package datadir keeps a process's files in one folder that it owns: the
// folder and every folder above it must be safe from other users (owned by
// root or this user, not writable by others unless sticky), files are named
// by the process from a safe alphabet, and every file is opened beneath the
// folder without following a link out of it or at its last component.
package datadir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"

	"golang.org/x/sys/unix"
)

// Dir is an open data folder.
type Dir struct {
	path string
	root *os.Root
}

// ErrUnsafe means a folder or one above it could be changed by another user.
var ErrUnsafe = errors.New("unsafe")

// ErrName means a name is not one a data folder holds.
var ErrName = errors.New("not a valid file name")

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// ValidName checks that name is a plain file name of the safe alphabet:
// letters, digits, '_', '.', '-', not starting with '.' or '-', at most 128
// bytes, and never "." or "..".
func ValidName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%q: %w (use letters, digits, '_', '.' and '-', starting with a letter or digit)", name, ErrName)
	}
	return nil
}

// Open creates the folder at path if needed (mode 0700), checks that it and
// every folder above it are safe, and opens it.
func Open(path string) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := MkdirSecure(abs); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("opening data folder %s: %w", abs, err)
	}
	return &Dir{path: abs, root: root}, nil
}

// MkdirSecure makes the folder at path (and missing parents) with mode
// 0700 whatever the umask, and checks that it is safe: a folder that
// another user could have made or can change is refused, never used.
func MkdirSecure(path string) error {
	path = filepath.Clean(path)
	var missing []string
	for p := path; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("making folder %s: %w", p, err)
		}
		if err := os.Chmod(p, 0o700); err != nil {
			return err
		}
	}
	return CheckSafe(path)
}

// CheckSafe checks that path is a folder, not a link, owned by root or this
// user and not writable by others, and that every folder above it is owned
// by root or this user and writable by others only if sticky (as /tmp is).
func CheckSafe(path string) error {
	path = filepath.Clean(path)
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("data folder %s is a symbolic link: %w", path, ErrUnsafe)
	}
	if err := safeFolder(path, fi, false); err != nil {
		return err
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir) // a link above (say /var/run) is fine if its target is safe
		if err != nil {
			return err
		}
		if err := safeFolder(dir, fi, true); err != nil {
			return err
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

func safeFolder(path string, fi fs.FileInfo, stickyOK bool) error {
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder: %w", path, ErrUnsafe)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("folder %s belongs to user %d, not to root or this user: %w (remove it, or choose another folder)", path, st.Uid, ErrUnsafe)
	}
	writable := fi.Mode().Perm()&0o022 != 0
	if writable && !(stickyOK && fi.Mode()&fs.ModeSticky != 0) {
		return fmt.Errorf("folder %s can be written by other users (mode %v): %w", path, fi.Mode().Perm(), ErrUnsafe)
	}
	return nil
}

// Path is the folder's absolute path, for messages.
func (d *Dir) Path() string { return d.path }

// Close closes the folder.
func (d *Dir) Close() error { return d.root.Close() }

// Root is the folder as an os.Root, for workloads that keep files in it.
func (d *Dir) Root() *os.Root { return d.root }

// Create makes a new file of that name (it must not exist), mode 0600.
func (d *Dir) Create(name string) (*os.File, error) {
	return d.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR)
}

// OpenFile opens a file of the folder with flag, creating it mode 0600, and
// never through a link: openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS where the kernel has it (Linux 5.6), else a check
// that the name is no link, beneath the folder.
func (d *Dir) OpenFile(name string, flag int) (*os.File, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	f, err := d.openNoLinks(name, flag)
	if err != nil {
		return nil, fmt.Errorf("%s in data folder %s: %w", name, d.path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s in data folder %s is not a regular file", name, d.path)
	}
	return f, nil
}

func (d *Dir) openNoLinks(name string, flag int) (*os.File, error) {
	dir, err := d.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	how := &unix.OpenHow{Flags: uint64(flag | unix.O_CLOEXEC | unix.O_NOFOLLOW), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	if flag&os.O_CREATE != 0 {
		how.Mode = 0o600 // the kernel refuses a mode without O_CREAT
	}
	fd, err := unix.Openat2(int(dir.Fd()), name, how)
	if err == nil {
		return os.NewFile(uintptr(fd), filepath.Join(d.path, name)), nil
	}
	if !errors.Is(err, unix.ENOSYS) {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("is a symbolic link: %w", ErrUnsafe)
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if fi, err := d.root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("is a symbolic link: %w", ErrUnsafe)
	}
	return d.root.OpenFile(name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
}

// Remove removes a file (or a folder and all it holds) of the folder.
func (d *Dir) Remove(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return d.root.RemoveAll(name)
}

// Sub makes (if needed) and opens a folder of the folder, mode 0700.
func (d *Dir) Sub(name string) (*Dir, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if err := d.root.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("making %s in data folder %s: %w", name, d.path, err)
	}
	fi, err := d.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s in data folder %s is not a folder: %w", name, d.path, ErrUnsafe)
	}
	root, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	return &Dir{path: filepath.Join(d.path, name), root: root}, nil
}

// NewName returns a fresh name with the prefix and 128 random bits, e.g.
// "received-3f9a0c...": a name that cannot be guessed.
func NewName(prefix string) string {
	b := make([]byte, 16)
	rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}
